// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// metaroce_rc_pingpong: ibv_rc_pingpong's ping-pong of SENDs over an RC QP
// created with metarocedv_create_qp(), so that the wire mode (--transport)
// and the number of paths (--paths) can be chosen; at the end it prints
// ibv_rc_pingpong's two result lines, the round-trip latency and the QP's
// per-path statistics (metarocedv_query_qp_stats()).  See
// metaroce_rc_pingpong.1.
//
// The out-of-band exchange over TCP is ibv_rc_pingpong's, byte for byte,
// so either side can be an unmodified ibv_rc_pingpong: the client sends
// "LID:QPN:PSN:GID" (%04x:%06x:%06x: and the GID's 16 bytes in hex, NUL
// padded to 52 bytes); the server brings its QP to RTS, answers with its
// own, and the client confirms with "done" (5 bytes, NUL included).
//
// Errors are returned and reported where they happen, with exit status
// 1; no exception leaves main().

#include <arpa/inet.h>
#include <getopt.h>
#include <netdb.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <infiniband/metarocedv.h>
#include <infiniband/verbs.h>

namespace {

constexpr const char *kProg = "metaroce_rc_pingpong";
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1; // bad arguments, set-up, completion or --chk

enum WrId : uint64_t {
	kRecvWrid = 1,
	kSendWrid = 2,
};

void usage(FILE *out)
{
	std::fprintf(out,
		"Usage:\n"
		"  %1$s [options]          start a server and wait for a connection\n"
		"  %1$s [options] <host>   connect to the server at <host>\n"
		"\n"
		"Options:\n"
		"  -p, --port=<port>        listen on/connect to TCP port <port> (default 18515)\n"
		"  -d, --ib-dev=<dev>       use RDMA device <dev> (default: the first one found)\n"
		"  -i, --ib-port=<port>     use port <port> of the device (default 1)\n"
		"  -s, --size=<size>        size of the messages exchanged (default 4096)\n"
		"  -m, --mtu=<size>         path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)\n"
		"  -r, --rx-depth=<dep>     number of receives to post at a time (default 500)\n"
		"  -n, --iters=<iters>      number of exchanges (default 1000)\n"
		"  -l, --sl=<sl>            service level, 0 to 15 (default 0)\n"
		"  -e, --events             sleep on completion events (default: poll)\n"
		"  -g, --gid-idx=<index>    local GID index (default: none)\n"
		"  -c, --chk                check every message received\n"
		"      --transport=<mode>   wire mode of the QP: metaroce or rocev2\n"
		"                           (default: $METAROCE_TRANSPORT, else the device's)\n"
		"      --paths=<n>          number of paths of the QP, 1 to %2$d\n"
		"                           (default: the device's; RoCEv2: 1)\n"
		"  -h, --help               print this help\n",
		kProg, METAROCEDV_MAX_PATHS);
}

// A bad argument: the reason, a pointer to --help, and exit status 1.
[[gnu::format(printf, 1, 2)]] int usage_error(const char *fmt, ...)
{
	va_list ap;

	std::fprintf(stderr, "%s: ", kProg);
	va_start(ap, fmt);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fprintf(stderr, "\nTry '%s --help' for more information.\n", kProg);
	return kExitFailed;
}

struct Options {
	std::string server; // empty: be the server
	unsigned port = 18515;
	std::string ib_dev;
	int ib_port = 1;
	uint32_t size = 4096;
	ibv_mtu mtu = IBV_MTU_1024;
	uint32_t rx_depth = 500;
	uint32_t iters = 1000;
	int sl = 0;
	bool events = false;
	int gid_idx = -1;
	bool chk = false;
	std::optional<uint32_t> transport; // enum metarocedv_transport
	std::optional<uint32_t> paths;
};

// ARG as a whole number from LO to HI (decimal, or 0x hex as strtoul's
// base 0 reads it); nullopt if it is anything else.
std::optional<uint64_t> parse_number(const char *arg, uint64_t lo, uint64_t hi)
{
	std::string_view s = arg;
	int base = 10;
	uint64_t v = 0;

	if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s.remove_prefix(2);
		base = 16;
	}
	auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
	if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < lo ||
	    v > hi)
		return std::nullopt;
	return v;
}

std::optional<ibv_mtu> parse_mtu(const char *arg)
{
	std::optional<uint64_t> v = parse_number(arg, 256, 4096);

	switch (v.value_or(0)) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return std::nullopt;
	}
}

const char *transport_name(uint32_t t)
{
	switch (t) {
	case METAROCEDV_TRANSPORT_METAROCE: return "metaroce";
	case METAROCEDV_TRANSPORT_ROCEV2: return "rocev2";
	default: return "unknown";
	}
}

// Parses argv into OPT.  Returns nullopt to go on, or the exit status
// (0 after --help, 1 after a message on stderr).
std::optional<int> parse_args(int argc, char **argv, Options &opt)
{
	enum { kOptTransport = 256, kOptPaths };
	static const option longopts[] = {
		{"port", required_argument, nullptr, 'p'},
		{"ib-dev", required_argument, nullptr, 'd'},
		{"ib-port", required_argument, nullptr, 'i'},
		{"size", required_argument, nullptr, 's'},
		{"mtu", required_argument, nullptr, 'm'},
		{"rx-depth", required_argument, nullptr, 'r'},
		{"iters", required_argument, nullptr, 'n'},
		{"sl", required_argument, nullptr, 'l'},
		{"events", no_argument, nullptr, 'e'},
		{"gid-idx", required_argument, nullptr, 'g'},
		{"chk", no_argument, nullptr, 'c'},
		{"transport", required_argument, nullptr, kOptTransport},
		{"paths", required_argument, nullptr, kOptPaths},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	std::optional<uint64_t> v;
	int c;

	// Unknown options and missing arguments are reported here, not by
	// getopt (opterr 0; ':' first: a missing argument is ':', not '?').
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:d:i:s:m:r:n:l:eg:ch", longopts, nullptr)) != -1) {
		// The option getopt stopped at: a long one by its name, a
		// short one by its letter (argv may hold several, "-ex").
		const char *arg = argv[optind - 1];
		const bool is_long = !std::strncmp(arg, "--", 2);
		std::string at = is_long ? std::string(arg, std::strcspn(arg, "="))
					 : std::string{'-', char(optopt)};
		switch (c) {
		case 'p':
			if (!(v = parse_number(optarg, 1, 65535)))
				return usage_error("--port: '%s' is not a TCP port (1 to 65535)", optarg);
			opt.port = unsigned(*v);
			break;
		case 'd':
			if (!*optarg)
				return usage_error("--ib-dev: empty device name");
			opt.ib_dev = optarg;
			break;
		case 'i':
			if (!(v = parse_number(optarg, 1, 255)))
				return usage_error("--ib-port: '%s' is not a port number (1 to 255)", optarg);
			opt.ib_port = int(*v);
			break;
		case 's':
			if (!(v = parse_number(optarg, 1, INT32_MAX)))
				return usage_error("--size: '%s' is not a message size (1 to %d bytes)",
						   optarg, INT32_MAX);
			opt.size = uint32_t(*v);
			break;
		case 'm': {
			std::optional<ibv_mtu> mtu = parse_mtu(optarg);
			if (!mtu)
				return usage_error("--mtu: '%s' is not 256, 512, 1024, 2048 or 4096", optarg);
			opt.mtu = *mtu;
			break;
		}
		case 'r':
			if (!(v = parse_number(optarg, 1, 65535)))
				return usage_error("--rx-depth: '%s' is not a number from 1 to 65535", optarg);
			opt.rx_depth = uint32_t(*v);
			break;
		case 'n':
			if (!(v = parse_number(optarg, 1, INT32_MAX)))
				return usage_error("--iters: '%s' is not a number from 1 to %d", optarg,
						   INT32_MAX);
			opt.iters = uint32_t(*v);
			break;
		case 'l':
			if (!(v = parse_number(optarg, 0, 15)))
				return usage_error("--sl: '%s' is not a service level (0 to 15)", optarg);
			opt.sl = int(*v);
			break;
		case 'e':
			opt.events = true;
			break;
		case 'g':
			if (!(v = parse_number(optarg, 0, 255)))
				return usage_error("--gid-idx: '%s' is not a GID index (0 to 255)", optarg);
			opt.gid_idx = int(*v);
			break;
		case 'c':
			opt.chk = true;
			break;
		case kOptTransport:
			if (std::string_view(optarg) == "metaroce")
				opt.transport = METAROCEDV_TRANSPORT_METAROCE;
			else if (std::string_view(optarg) == "rocev2")
				opt.transport = METAROCEDV_TRANSPORT_ROCEV2;
			else
				return usage_error("--transport: '%s' is not metaroce or rocev2", optarg);
			break;
		case kOptPaths:
			if (!(v = parse_number(optarg, 1, METAROCEDV_MAX_PATHS)))
				return usage_error("--paths: '%s' is not a number of paths (1 to %d)",
						   optarg, METAROCEDV_MAX_PATHS);
			opt.paths = uint32_t(*v);
			break;
		case 'h':
			usage(stdout);
			return kExitOk;
		case ':':
			return usage_error("option '%s' needs an argument", at.c_str());
		default:
			if (is_long && optopt)
				return usage_error("option '%s' takes no argument", at.c_str());
			return usage_error("unknown option '%s'", at.c_str());
		}
	}
	if (optind + 1 < argc)
		return usage_error("one server name expected, got '%s' and '%s'", argv[optind],
				   argv[optind + 1]);
	if (optind < argc)
		opt.server = argv[optind];
	if (opt.transport == METAROCEDV_TRANSPORT_ROCEV2 && opt.paths.value_or(1) != 1)
		return usage_error("--paths %u: a RoCEv2 QP has one path", *opt.paths);
	return std::nullopt;
}

// ---------------------------------------------------------------- exchange

struct Dest {
	uint32_t lid = 0, qpn = 0, psn = 0;
	ibv_gid gid = {};
};

// ibv_rc_pingpong's message: "%04x:%06x:%06x:" and 32 hex digits, NUL
// padded to the size of that text with its terminator.
constexpr size_t kMsgSize = sizeof "0000:000000:000000:00000000000000000000000000000000";
constexpr char kDone[] = "done";

using Msg = std::array<char, kMsgSize>;

Msg format_dest(const Dest &d)
{
	Msg m = {};
	int n = std::snprintf(m.data(), m.size(), "%04x:%06x:%06x:", d.lid, d.qpn, d.psn);

	// The GID's bytes in order: what gid_to_wire_gid() makes of them.
	for (size_t i = 0; i < sizeof d.gid.raw && n + 2 < int(m.size()); i++, n += 2)
		std::snprintf(m.data() + n, 3, "%02x", d.gid.raw[i]);
	return m;
}

// The peer's message, strictly in the format above.
std::optional<Dest> parse_dest(const Msg &m)
{
	std::string_view s(m.data(), strnlen(m.data(), m.size()));
	Dest d;
	auto field = [&s](size_t digits, uint32_t &out, bool colon) {
		if (s.size() < digits + colon)
			return false;
		auto [end, ec] = std::from_chars(s.data(), s.data() + digits, out, 16);
		if (ec != std::errc() || end != s.data() + digits || (colon && s[digits] != ':'))
			return false;
		s.remove_prefix(digits + colon);
		return true;
	};

	if (!field(4, d.lid, true) || !field(6, d.qpn, true) || !field(6, d.psn, true))
		return std::nullopt;
	for (uint8_t &byte : d.gid.raw) {
		uint32_t b;
		if (!field(2, b, false))
			return std::nullopt;
		byte = uint8_t(b);
	}
	if (!s.empty())
		return std::nullopt;
	return d;
}

class Fd {
public:
	explicit Fd(int fd = -1) : fd_(fd) {}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	int get() const { return fd_; }

private:
	int fd_;
};

bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = static_cast<const char *>(buf);

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= size_t(n);
	}
	return true;
}

// Exactly LEN bytes, or false (error, or the peer closed early).
bool read_all(int fd, void *buf, size_t len)
{
	char *p = static_cast<char *>(buf);

	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= size_t(n);
	}
	return true;
}

struct AddrInfoDeleter {
	void operator()(addrinfo *ai) const { freeaddrinfo(ai); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

std::optional<Dest> client_exchange(const Options &opt, const Dest &mine)
{
	addrinfo hints = {};
	addrinfo *res = nullptr;
	std::string service = std::to_string(opt.port);
	int fd = -1;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (int e = getaddrinfo(opt.server.c_str(), service.c_str(), &hints, &res)) {
		std::fprintf(stderr, "%s: %s for %s:%u\n", kProg, gai_strerror(e),
			     opt.server.c_str(), opt.port);
		return std::nullopt;
	}
	AddrInfo list(res);
	for (addrinfo *t = res; t && fd < 0; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (fd >= 0 && connect(fd, t->ai_addr, t->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	Fd sock(fd);
	if (fd < 0) {
		std::fprintf(stderr, "%s: couldn't connect to %s:%u\n", kProg, opt.server.c_str(),
			     opt.port);
		return std::nullopt;
	}
	Msg msg = format_dest(mine);
	if (!write_all(fd, msg.data(), msg.size())) {
		std::fprintf(stderr, "%s: couldn't send the local address: %s\n", kProg,
			     std::strerror(errno));
		return std::nullopt;
	}
	if (!read_all(fd, msg.data(), msg.size()) || !write_all(fd, kDone, sizeof kDone)) {
		std::fprintf(stderr, "%s: couldn't read the remote address\n", kProg);
		return std::nullopt;
	}
	std::optional<Dest> peer = parse_dest(msg);
	if (!peer)
		std::fprintf(stderr, "%s: malformed address from the server: '%.*s'\n", kProg,
			     int(strnlen(msg.data(), msg.size())), msg.data());
	return peer;
}

// The server's side: accept one client, read its address, CONNECT (which
// brings the QP to RTS, so that it is ready before the client can send),
// answer with ours and wait for "done".
template <class Connect>
std::optional<Dest> server_exchange(const Options &opt, const Dest &mine, Connect connect_qp)
{
	addrinfo hints = {};
	addrinfo *res = nullptr;
	std::string service = std::to_string(opt.port);
	int fd = -1, one = 1;

	hints.ai_flags = AI_PASSIVE;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (int e = getaddrinfo(nullptr, service.c_str(), &hints, &res)) {
		std::fprintf(stderr, "%s: %s for port %u\n", kProg, gai_strerror(e), opt.port);
		return std::nullopt;
	}
	AddrInfo list(res);
	for (addrinfo *t = res; t && fd < 0; t = t->ai_next) {
		fd = socket(t->ai_family, t->ai_socktype, t->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, t->ai_addr, t->ai_addrlen)) {
			close(fd);
			fd = -1;
		}
	}
	Fd listener(fd);
	if (fd < 0 || listen(fd, 1)) {
		std::fprintf(stderr, "%s: couldn't listen to port %u: %s\n", kProg, opt.port,
			     std::strerror(errno));
		return std::nullopt;
	}
	Fd conn(accept(fd, nullptr, nullptr));
	if (conn.get() < 0) {
		std::fprintf(stderr, "%s: accept: %s\n", kProg, std::strerror(errno));
		return std::nullopt;
	}
	Msg msg;
	if (!read_all(conn.get(), msg.data(), msg.size())) {
		std::fprintf(stderr, "%s: couldn't read the remote address\n", kProg);
		return std::nullopt;
	}
	std::optional<Dest> peer = parse_dest(msg);
	if (!peer) {
		std::fprintf(stderr, "%s: malformed address from the client: '%.*s'\n", kProg,
			     int(strnlen(msg.data(), msg.size())), msg.data());
		return std::nullopt;
	}
	if (!connect_qp(*peer))
		return std::nullopt;
	msg = format_dest(mine);
	char done[sizeof kDone];
	if (!write_all(conn.get(), msg.data(), msg.size()) ||
	    !read_all(conn.get(), done, sizeof done) || std::memcmp(done, kDone, sizeof done)) {
		std::fprintf(stderr, "%s: couldn't send the local address or read \"done\"\n", kProg);
		return std::nullopt;
	}
	return peer;
}

// ---------------------------------------------------------------- verbs

template <auto Fn> struct Deleter {
	template <class T> void operator()(T *p) const { Fn(p); }
};
template <class T, auto Fn> using Handle = std::unique_ptr<T, Deleter<Fn>>;

void free_buf(void *p)
{
	std::free(p);
}

// The verbs objects of one run, released in the reverse order of their
// creation (the members' order).
struct Resources {
	Handle<ibv_device *, ibv_free_device_list> dev_list;
	Handle<ibv_context, ibv_close_device> ctx;
	Handle<ibv_comp_channel, ibv_destroy_comp_channel> channel;
	Handle<ibv_pd, ibv_dealloc_pd> pd;
	Handle<void, free_buf> buf;
	Handle<ibv_mr, ibv_dereg_mr> mr;
	Handle<ibv_cq, ibv_destroy_cq> cq;
	Handle<ibv_qp, ibv_destroy_qp> qp;
	char *send_buf = nullptr, *recv_buf = nullptr;
	uint32_t send_flags = IBV_SEND_SIGNALED;
};

// A failure: the reason on stderr; false, for "return fail(...)".
[[gnu::format(printf, 1, 2)]] bool fail(const char *fmt, ...)
{
	va_list ap;

	std::fprintf(stderr, "%s: ", kProg);
	va_start(ap, fmt);
	std::vfprintf(stderr, fmt, ap);
	va_end(ap);
	std::fputc('\n', stderr);
	return false;
}

ibv_device *find_device(ibv_device **list, const std::string &name)
{
	for (ibv_device **d = list; *d; d++)
		if (name.empty() || name == ibv_get_device_name(*d))
			return *d;
	return nullptr;
}

// metarocedv_create_qp() with what the options ask for; without
// --transport the library applies METAROCE_TRANSPORT and the device's
// default (metarocedv_create_qp(3)).
bool create_qp(const Options &opt, Resources &r)
{
	ibv_qp_init_attr_ex attr = {};
	metarocedv_qp_init_attr dv = {};

	attr.send_cq = r.cq.get();
	attr.recv_cq = r.cq.get();
	attr.cap.max_send_wr = 1;
	attr.cap.max_recv_wr = opt.rx_depth;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = r.pd.get();
	if (opt.transport) {
		dv.comp_mask |= METAROCEDV_QP_INIT_ATTR_TRANSPORT;
		dv.transport = *opt.transport;
	}
	if (opt.paths) {
		dv.comp_mask |= METAROCEDV_QP_INIT_ATTR_NUM_PATHS;
		dv.num_paths = *opt.paths;
	}
	errno = 0;
	r.qp.reset(metarocedv_create_qp(r.ctx.get(), &attr, &dv, sizeof dv));
	if (!r.qp) {
		int e = errno ? errno : EIO;
		const char *why = "";

		if (e == EOPNOTSUPP && !metarocedv_is_supported(r.ctx->device))
			why = " (not a MetaRoCE device)";
		else if (e == EINVAL && opt.paths.value_or(1) != 1 && !opt.transport)
			why = " (--paths above 1 needs MetaRoCE mode: is METAROCE_TRANSPORT or the"
			      " device's default rocev2?)";
		else if (e == EADDRINUSE)
			why = " (RoCEv2 mode, but another module holds UDP port 4791 in the"
			      " device's network namespace)";
		return fail("couldn't create the QP on %s: metarocedv_create_qp: %s%s",
			    ibv_get_device_name(r.ctx->device), std::strerror(e), why);
	}
	ibv_qp_attr qattr;
	ibv_qp_init_attr init;
	if (!ibv_query_qp(r.qp.get(), &qattr, IBV_QP_CAP, &init) &&
	    init.cap.max_inline_data >= opt.size)
		r.send_flags |= IBV_SEND_INLINE;
	return true;
}

bool setup(const Options &opt, Resources &r)
{
	r.dev_list.reset(ibv_get_device_list(nullptr));
	if (!r.dev_list)
		return fail("no RDMA device list: %s", std::strerror(errno));
	ibv_device *dev = find_device(r.dev_list.get(), opt.ib_dev);
	if (!dev)
		return opt.ib_dev.empty() ? fail("no RDMA devices found")
					  : fail("RDMA device %s not found", opt.ib_dev.c_str());
	r.ctx.reset(ibv_open_device(dev));
	if (!r.ctx)
		return fail("couldn't open %s: %s", ibv_get_device_name(dev), std::strerror(errno));
	if (opt.events) {
		r.channel.reset(ibv_create_comp_channel(r.ctx.get()));
		if (!r.channel)
			return fail("couldn't create a completion channel: %s", std::strerror(errno));
	}
	r.pd.reset(ibv_alloc_pd(r.ctx.get()));
	if (!r.pd)
		return fail("couldn't allocate a PD: %s", std::strerror(errno));

	// One page-aligned allocation: the send buffer, then the receive
	// buffer, each rounded up to whole pages; one MR over both.
	const size_t page = size_t(sysconf(_SC_PAGESIZE));
	const size_t half = (size_t(opt.size) + page - 1) / page * page;
	r.buf.reset(std::aligned_alloc(page, 2 * half));
	if (!r.buf)
		return fail("couldn't allocate %zu bytes of buffers", 2 * half);
	r.send_buf = static_cast<char *>(r.buf.get());
	r.recv_buf = r.send_buf + half;
	std::memset(r.send_buf, 0x7b, 2 * half);
	r.mr.reset(ibv_reg_mr(r.pd.get(), r.buf.get(), 2 * half, IBV_ACCESS_LOCAL_WRITE));
	if (!r.mr)
		return fail("couldn't register the buffers: %s", std::strerror(errno));
	r.cq.reset(ibv_create_cq(r.ctx.get(), int(opt.rx_depth + 1), nullptr, r.channel.get(), 0));
	if (!r.cq)
		return fail("couldn't create a CQ: %s", std::strerror(errno));
	if (!create_qp(opt, r))
		return false;

	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = uint8_t(opt.ib_port);
	if (int e = ibv_modify_qp(r.qp.get(), &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return fail("couldn't move the QP to INIT: %s", std::strerror(e));
	return true;
}

// RTR towards DEST, then RTS: the attributes of ibv_rc_pingpong (IB local
// ACK timeout 14, retry_cnt 7), so that failures take the same time.
bool connect_qp(const Options &opt, Resources &r, uint32_t my_psn, const Dest &dest)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = opt.mtu;
	a.dest_qp_num = dest.qpn;
	a.rq_psn = dest.psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.dlid = uint16_t(dest.lid);
	a.ah_attr.sl = uint8_t(opt.sl);
	a.ah_attr.port_num = uint8_t(opt.ib_port);
	if (dest.gid.global.interface_id) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.grh.dgid = dest.gid;
		a.ah_attr.grh.sgid_index = uint8_t(std::max(opt.gid_idx, 0));
	}
	if (int e = ibv_modify_qp(r.qp.get(), &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					  IBV_QP_MIN_RNR_TIMER))
		return fail("couldn't move the QP to RTR: %s", std::strerror(e));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	if (int e = ibv_modify_qp(r.qp.get(), &a,
				  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		return fail("couldn't move the QP to RTS: %s", std::strerror(e));
	return true;
}

// ---------------------------------------------------------------- --chk

// What a metaroce_rc_pingpong client sends as message K: a byte stream
// that depends on K and on the offset (so a stale, misplaced or reordered
// segment shows), its first byte never 0.
void fill_pattern(char *buf, uint32_t size, uint32_t k)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t(k) + 1);

	for (uint32_t i = 0; i < size; i += 8) {
		// splitmix64
		uint64_t z = (x += 0x9e3779b97f4a7c15ull);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		std::memcpy(buf + i, &z, std::min<uint32_t>(8, size - i));
	}
	buf[0] |= 1;
}

// What an ibv_rc_pingpong client sends with --chk, every time: 0x7b, but
// 0 in the first byte of each page.
void fill_upstream(char *buf, uint32_t size)
{
	const size_t page = size_t(sysconf(_SC_PAGESIZE));

	std::memset(buf, 0x7b, size);
	for (size_t i = 0; i < size; i += page)
		buf[i] = 0;
}

// The receiver's check of each message.  A client expects its message K
// back (the server echoes it).  A server learns from the first byte of the
// first message whose client it serves (0: ibv_rc_pingpong's) and expects
// that client's message K.
class Checker {
public:
	Checker(uint32_t size, bool server) : size_(size), server_(server) {}

	// Whether message K (LEN bytes at BUF) is the expected one; the
	// first difference is remembered for the report.
	bool check(const char *buf, uint32_t len, uint32_t k)
	{
		if (server_ && k == 0)
			upstream_ = len > 0 && buf[0] == 0;
		if (len != size_)
			return note(k, "is %u bytes long, not %u", len, size_);
		if (expected_.empty() && !alloc())
			return note(k, "cannot be checked: out of memory");
		if (upstream_ && !filled_)
			fill_upstream(expected_.data(), size_);
		else if (!upstream_)
			fill_pattern(expected_.data(), size_, k);
		filled_ = true;
		if (!std::memcmp(buf, expected_.data(), size_))
			return true;
		uint32_t i = 0, differ = 0;
		for (uint32_t j = 0; j < size_; j++)
			differ += buf[j] != expected_[j];
		while (buf[i] == expected_[i])
			i++;
		return note(k, "differs from %s in %u of %u bytes, the first at offset %u (0x%02x, "
			       "expected 0x%02x)",
			    upstream_ ? "what ibv_rc_pingpong --chk sends" : "what metaroce_rc_pingpong sends", differ,
			    size_, i, uint8_t(buf[i]), uint8_t(expected_[i]));
	}

	uint32_t bad_messages() const { return bad_; }
	const std::string &first_bad() const { return first_; }

private:
	bool alloc()
	{
		try {
			expected_.resize(size_);
		} catch (const std::bad_alloc &) {
			return false;
		}
		return true;
	}

	[[gnu::format(printf, 3, 4)]] bool note(uint32_t k, const char *fmt, ...)
	{
		if (!bad_++) {
			char text[256];
			va_list ap;
			int n = std::snprintf(text, sizeof text, "message %u ", k);
			va_start(ap, fmt);
			std::vsnprintf(text + n, sizeof text - size_t(n), fmt, ap);
			va_end(ap);
			first_ = text;
		}
		return false;
	}

	uint32_t size_;
	bool server_;
	bool upstream_ = false, filled_ = false;
	std::vector<char> expected_;
	uint32_t bad_ = 0;
	std::string first_;
};

// ---------------------------------------------------------------- the run

using Clock = std::chrono::steady_clock;

struct Run {
	const Options &opt;
	Resources &r;
	Checker checker;
	uint32_t scnt = 0, rcnt = 0, routs = 0;
	uint64_t pending = 0;
	// Round trips: from posting a send to the completion of the receive
	// that answers it (a client's reply K, a server's message K + 1).
	std::vector<uint64_t> rtt_ns;
	Clock::time_point sent_at;
	bool awaiting = false;

	Run(const Options &o, Resources &res)
		: opt(o), r(res), checker(o.size, o.server.empty())
	{
	}

	bool is_server() const { return opt.server.empty(); }

	// Receives posted: N more, as far as the QP takes them.
	uint32_t post_recv(uint32_t n)
	{
		ibv_sge sge = {uintptr_t(r.recv_buf), opt.size, r.mr->lkey};
		ibv_recv_wr wr = {}, *bad;
		uint32_t i;

		wr.wr_id = kRecvWrid;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		for (i = 0; i < n; i++)
			if (ibv_post_recv(r.qp.get(), &wr, &bad))
				break;
		return i;
	}

	// Send number SCNT: with --chk, a client's message SCNT or a server's
	// echo of what it received (the receive buffer is then poisoned, so
	// that a message that does not arrive cannot pass for the last one).
	bool post_send()
	{
		if (opt.chk && is_server()) {
			std::memcpy(r.send_buf, r.recv_buf, opt.size);
			std::memset(r.recv_buf, 0xa5, opt.size);
		} else if (opt.chk) {
			fill_pattern(r.send_buf, opt.size, scnt);
		}
		ibv_sge sge = {uintptr_t(r.send_buf), opt.size, r.mr->lkey};
		ibv_send_wr wr = {}, *bad;
		wr.wr_id = kSendWrid;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = r.send_flags;
		sent_at = Clock::now();
		awaiting = true;
		if (int e = ibv_post_send(r.qp.get(), &wr, &bad))
			return fail("couldn't post a send: %s", std::strerror(e));
		pending |= kSendWrid;
		return true;
	}

	bool handle(const ibv_wc &wc)
	{
		if (wc.status != IBV_WC_SUCCESS)
			return fail("failed status %s (%d) for wr_id %d", ibv_wc_status_str(wc.status),
				    wc.status, int(wc.wr_id));
		switch (wc.wr_id) {
		case kSendWrid:
			scnt++;
			break;
		case kRecvWrid:
			if (awaiting) {
				rtt_ns.push_back(uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
								  Clock::now() - sent_at)
								  .count()));
				awaiting = false;
			}
			if (--routs <= 1) {
				routs += post_recv(opt.rx_depth - routs);
				if (routs < opt.rx_depth)
					return fail("couldn't post receives (%u of %u)", routs,
						    opt.rx_depth);
			}
			if (opt.chk) {
				checker.check(r.recv_buf, wc.byte_len, rcnt);
				if (!is_server())
					std::memset(r.recv_buf, 0xa5, opt.size);
			}
			rcnt++;
			break;
		default:
			return fail("completion for unknown wr_id %" PRIu64, wc.wr_id);
		}
		pending &= ~wc.wr_id;
		if (scnt < opt.iters && !pending) {
			if (!post_send())
				return false;
			pending |= kRecvWrid;
		}
		return true;
	}

	// Up to two completions at a time (one send, one receive are
	// outstanding); with --events, sleeps on the channel first.
	bool step()
	{
		ibv_wc wc[2];
		int n;

		if (opt.events) {
			ibv_cq *ev_cq;
			void *ev_ctx;
			if (ibv_get_cq_event(r.channel.get(), &ev_cq, &ev_ctx))
				return fail("couldn't get a CQ event: %s", std::strerror(errno));
			ibv_ack_cq_events(ev_cq, 1);
			if (ev_cq != r.cq.get())
				return fail("CQ event for an unknown CQ %p", static_cast<void *>(ev_cq));
			if (int e = ibv_req_notify_cq(r.cq.get(), 0))
				return fail("couldn't request CQ notification: %s", std::strerror(e));
		}
		do {
			n = ibv_poll_cq(r.cq.get(), 2, wc);
			if (n < 0)
				return fail("couldn't poll the CQ (%d)", n);
			for (int i = 0; i < n; i++)
				if (!handle(wc[i]))
					return false;
		} while (opt.events ? n > 0 : false);
		return true;
	}

	bool loop()
	{
		while (rcnt < opt.iters || scnt < opt.iters)
			if (!step())
				return false;
		return true;
	}
};

double percentile_us(std::vector<uint64_t> v, double q)
{
	if (v.empty())
		return 0;
	// Nearest rank: the smallest sample with at least q of them at or below.
	size_t rank = size_t(q * double(v.size()) + 0.999999);
	size_t idx = std::clamp<size_t>(rank, 1, v.size()) - 1;
	std::nth_element(v.begin(), v.begin() + ptrdiff_t(idx), v.end());
	return double(v[idx]) / 1000.0;
}

const char *path_state_name(uint32_t s)
{
	switch (s) {
	case METAROCEDV_PATH_ACTIVE: return "active";
	case METAROCEDV_PATH_FAILED: return "failed";
	case METAROCEDV_PATH_ADMIN_DOWN: return "admin-down";
	default: return "unknown";
	}
}

// The QP's statistics: the transport it got, the connection's counters
// and one line per path.
bool print_stats(ibv_qp *qp)
{
	metarocedv_qp_stats st;

	if (int e = metarocedv_query_qp_stats(qp, &st, sizeof st))
		return fail("metarocedv_query_qp_stats: %s", std::strerror(e));
	std::printf("transport: %s, %u path%s\n", transport_name(st.transport), st.num_paths,
		    st.num_paths == 1 ? "" : "s");
	std::printf("connection: tx_packets %" PRIu64 " retransmits %" PRIu64 " rx_packets %" PRIu64
		    " rx_duplicates %" PRIu64 " rx_out_of_order %" PRIu64 " sacks_sent %" PRIu64
		    " sacks_received %" PRIu64 " path_failures %" PRIu64 " path_recoveries %" PRIu64
		    "\n",
		    st.tx_packets, st.retransmits, st.rx_packets, st.rx_duplicates,
		    st.rx_out_of_order, st.sacks_sent, st.sacks_received, st.path_failures,
		    st.path_recoveries);
	for (uint32_t i = 0; i < std::min<uint32_t>(st.num_paths, METAROCEDV_MAX_PATHS); i++) {
		const metarocedv_path_stats &p = st.path[i];
		std::printf("path %u: plane %u state %s tx_packets %" PRIu64 " retransmits %" PRIu64
			    " rx_packets %" PRIu64 " lost %" PRIu64 " timeouts %" PRIu64
			    " ecn_marks %" PRIu64 " srtt_us %.1f rttvar_us %.1f min_rtt_us %.1f"
			    " cwnd %u in_flight %u\n",
			    i, p.plane, path_state_name(p.state), p.tx_packets, p.retransmits,
			    p.rx_packets, p.lost, p.timeouts, p.ecn_marks, double(p.srtt_ns) / 1000.0,
			    double(p.rttvar_ns) / 1000.0, double(p.min_rtt_ns) / 1000.0, p.cwnd,
			    p.in_flight);
	}
	return true;
}

void print_addr(const char *what, const Dest &d)
{
	char gid[INET6_ADDRSTRLEN];

	inet_ntop(AF_INET6, d.gid.raw, gid, sizeof gid);
	std::printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", what, d.lid, d.qpn, d.psn,
		    gid);
}

uint32_t random_psn()
{
	uint32_t v;

	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = uint32_t(getpid()) * 2654435761u ^ uint32_t(time(nullptr));
	return v & 0xffffff;
}

int run(const Options &opt)
{
	Resources r;

	if (!setup(opt, r))
		return kExitFailed;

	Run run(opt, r);
	try {
		run.rtt_ns.reserve(opt.iters);
	} catch (const std::exception &) {
		fail("couldn't allocate %u latency samples", opt.iters);
		return kExitFailed;
	}
	run.routs = run.post_recv(opt.rx_depth);
	if (run.routs < opt.rx_depth) {
		fail("couldn't post receives (%u of %u)", run.routs, opt.rx_depth);
		return kExitFailed;
	}
	if (opt.events)
		if (int e = ibv_req_notify_cq(r.cq.get(), 0)) {
			fail("couldn't request CQ notification: %s", std::strerror(e));
			return kExitFailed;
		}

	ibv_port_attr port;
	if (int e = ibv_query_port(r.ctx.get(), uint8_t(opt.ib_port), &port)) {
		fail("couldn't query port %d: %s", opt.ib_port, std::strerror(e));
		return kExitFailed;
	}
	Dest mine;
	mine.lid = port.lid;
	if (port.link_layer != IBV_LINK_LAYER_ETHERNET && !mine.lid) {
		fail("couldn't get the local LID");
		return kExitFailed;
	}
	if (opt.gid_idx >= 0 && ibv_query_gid(r.ctx.get(), uint8_t(opt.ib_port), opt.gid_idx, &mine.gid)) {
		fail("can't read the GID of index %d", opt.gid_idx);
		return kExitFailed;
	}
	mine.qpn = r.qp->qp_num;
	mine.psn = random_psn();
	print_addr("local address: ", mine);

	std::optional<Dest> peer;
	if (opt.server.empty())
		peer = server_exchange(opt, mine, [&](const Dest &d) {
			return connect_qp(opt, r, mine.psn, d);
		});
	else
		peer = client_exchange(opt, mine);
	if (!peer)
		return kExitFailed;
	print_addr("remote address:", *peer);
	if (!opt.server.empty() && !connect_qp(opt, r, mine.psn, *peer))
		return kExitFailed;
	std::fflush(stdout);

	run.pending = kRecvWrid;
	Clock::time_point start = Clock::now();
	if (!opt.server.empty() && !run.post_send())
		return kExitFailed;
	bool ok = run.loop();
	Clock::time_point end = Clock::now();

	if (ok) {
		double usec = double(std::chrono::duration_cast<std::chrono::nanoseconds>(end - start)
					     .count()) /
			      1000.0;
		long long bytes = (long long)opt.size * opt.iters * 2;
		std::printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec / 1e6,
			    double(bytes) * 8. / usec);
		std::printf("%u iters in %.2f seconds = %.2f usec/iter\n", opt.iters, usec / 1e6,
			    usec / opt.iters);
		std::printf("latency: median %.2f usec, p99 %.2f usec per round trip (%zu samples)\n",
			    percentile_us(run.rtt_ns, 0.5), percentile_us(run.rtt_ns, 0.99),
			    run.rtt_ns.size());
	}
	// Also after a failed completion: the counters say what went wrong.
	if (!print_stats(r.qp.get()))
		ok = false;
	if (opt.chk && run.checker.bad_messages()) {
		fail("--chk: %u of %u messages received were wrong; %s", run.checker.bad_messages(),
		     run.rcnt, run.checker.first_bad().c_str());
		ok = false;
	}
	return ok ? kExitOk : kExitFailed;
}

} // namespace

// Nothing here throws but the standard library's allocations (strings,
// the --chk buffer); should one fail, the program says so and exits 1.
int main(int argc, char **argv) try {
	Options opt;

	if (std::optional<int> status = parse_args(argc, argv, opt))
		return *status;
	return run(opt);
} catch (const std::exception &e) {
	std::fprintf(stderr, "%s: %s\n", kProg, e.what());
	return kExitFailed;
}
