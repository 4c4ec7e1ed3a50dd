// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The udp harness: the DUT is a live implementation reached over UDP.  A
// DUT-side helper (a child process speaking the line protocol of
// README.md on its stdin/stdout) creates the QP and memory region, posts
// work, reports completions, memory and counters; the suite crafts and
// observes the packets itself on a UDP socket.
#include "compliance.hpp"
#include "dut_helper.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mrcomp {
namespace {

constexpr uint16_t metaroce_port = 4793, rocev2_port = 4791;
// Waits when the helper reports none (README.md).
constexpr uint64_t default_answer_ns = 50000000, default_timer_ns = 300000000;
// How long the suite may take to answer a DUT packet over a socket, the
// helper's rtt_ns: as long as it waits for the DUT's immediate answers.
constexpr uint64_t suite_rtt_ns = default_answer_ns;

uint64_t mono_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

class UdpDut final : public Dut {
public:
	~UdpDut() override
	{
		close();
		if (to_ >= 0)
			::close(to_);
		if (from_)
			fclose(from_);
		if (pid_ > 0)
			waitpid(pid_, nullptr, 0);
	}

	bool start(const std::string &addr, const std::string &local,
		   const std::string &cmd, std::string *err)
	{
		if (inet_pton(AF_INET, addr.c_str(), &dut_ip_) != 1 ||
		    inet_pton(AF_INET, local.c_str(), &local_ip_) != 1) {
			*err = "udp: ADDR and --local must be IPv4 addresses";
			return false;
		}
		local_ = local;
		int in[2], out[2];
		if (pipe(in) || pipe(out)) {
			*err = std::string("pipe: ") + strerror(errno);
			return false;
		}
		signal(SIGPIPE, SIG_IGN);
		pid_ = fork();
		if (pid_ < 0) {
			*err = std::string("fork: ") + strerror(errno);
			return false;
		}
		if (pid_ == 0) {
			dup2(in[0], 0);
			dup2(out[1], 1);
			::close(in[0]); ::close(in[1]);
			::close(out[0]); ::close(out[1]);
			execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
			_exit(127);
		}
		::close(in[0]);
		::close(out[1]);
		to_ = in[1];
		from_ = fdopen(out[0], "r");
		return from_ != nullptr;
	}

	bool open(const DutSetup &s, DutInfo *info, std::string *err) override
	{
		close();
		uint16_t port = s.mode == Mode::rocev2 ? rocev2_port : metaroce_port;
		sock_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		sockaddr_in sa{};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(port);
		sa.sin_addr = local_ip_;
		int one = 1, pmtu = IP_PMTUDISC_DO;
		setsockopt(sock_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		// DF on an unconnected socket: Linux sends IP ID 0, so the
		// ICRC of what the suite sends is known before it is sent.
		setsockopt(sock_, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		if (sock_ < 0 || bind(sock_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa))) {
			*err = "bind UDP " + std::to_string(port) + ": " + strerror(errno);
			close();
			return false;
		}
		HelperOpen o;
		o.mode = s.mode;
		o.paths = s.num_paths;
		o.peer_qpn = s.peer_qpn;
		o.peer_psn = s.peer_psn;
		o.peer_addr = local_;
		o.rtt_ns = suite_rtt_ns;
		HelperQp q;
		std::string reply;
		if (!call(format_open(o), &reply) || !parse_qp(reply, &q)) {
			*err = reply;
			close();
			return false;
		}
		*info = q.info;
		if (!info->answer_ns)
			info->answer_ns = default_answer_ns;
		if (!info->timer_ns)
			info->timer_ns = default_timer_ns;
		sport_base_ = q.sport_base;
		num_paths_ = info->num_paths;
		rocev2_ = s.mode == Mode::rocev2;
		icrc_ = rocev2_ && q.icrc;
		dut_.sin_family = AF_INET;
		dut_.sin_port = htons(port);
		dut_.sin_addr = dut_ip_;
		is_open_ = true;
		return true;
	}

	// The helper destroys the QP and keeps the MR until "close"; the
	// socket stays open, so collect() sees what the DUT sends on the way.
	bool destroy_qp() override
	{
		std::string r;
		return is_open_ && call("destroy", &r);
	}

	void close() override
	{
		if (is_open_) {
			std::string r;
			call("close", &r);
			is_open_ = false;
		}
		if (sock_ >= 0)
			::close(sock_);
		sock_ = -1;
	}

	bool post_recv(uint64_t wr_id, uint32_t off, uint32_t len) override
	{
		std::string r;
		return call(fmt("recv ", wr_id, " ", off, " ", len), &r);
	}

	bool post_send(uint64_t wr_id, uint32_t op, uint32_t off, uint32_t len,
		       uint32_t rkey, uint64_t raddr) override
	{
		std::string r;
		return call(fmt("send ", wr_id, " ", op, " ", off, " ", len, " ",
				rkey, " ", raddr), &r);
	}

	void inject(const Bytes &pkt, unsigned) override
	{
		if (sock_ < 0)
			return;
		if (icrc_ && pkt.size() >= 16) {
			Bytes b = to_icrc(pkt);
			sendto(sock_, b.data(), b.size(), 0,
			       reinterpret_cast<const sockaddr *>(&dut_), sizeof(dut_));
			return;
		}
		sendto(sock_, pkt.data(), pkt.size(), 0,
		       reinterpret_cast<const sockaddr *>(&dut_), sizeof(dut_));
	}

	std::vector<RxPkt> collect(uint64_t wait_ns) override
	{
		std::vector<RxPkt> out;
		uint64_t end = mono_ns() + wait_ns;
		uint8_t buf[9000];
		for (;;) {
			uint64_t t = mono_ns();
			int ms = t >= end ? 0 : static_cast<int>((end - t + 999999) / 1000000);
			pollfd p{sock_, POLLIN, 0};
			if (::poll(&p, 1, ms) <= 0)
				break;
			sockaddr_in from{};
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(sock_, buf, sizeof(buf), 0,
					     reinterpret_cast<sockaddr *>(&from), &fl);
			if (n < 0 || from.sin_addr.s_addr != dut_ip_.s_addr)
				continue;
			RxPkt r{Bytes(buf, buf + n), 0, mono_ns()};
			// The DUT's ICRC covers an IP header (its identification)
			// that a UDP socket does not show: not checked here (the
			// rdma_rxe guest test has a second implementation check
			// it); the cases see the core's CRC32C stand-in instead.
			if (icrc_ && n >= 16)
				reseal(r.bytes);
			unsigned sport = ntohs(from.sin_port);
			if (sport_base_ && sport >= sport_base_ &&
			    sport < sport_base_ + num_paths_)
				r.path = sport - sport_base_;
			else if (n >= 4 && !rocev2_)
				r.path = buf[3];	// MetaRoCE header path field
			out.push_back(std::move(r));
		}
		return out;
	}

	std::vector<Completion> poll() override
	{
		std::vector<Completion> out;
		std::string line;
		if (!send_line("poll"))
			return out;
		Completion c;
		while (read_line(&line) && parse_wc(line, &c))
			out.push_back(c);	// until "ok" or "err"
		return out;
	}

	std::optional<Bytes> read_mem(uint32_t off, uint32_t len) override
	{
		std::string r;
		if (!call(fmt("mem ", off, " ", len), &r) || r.size() != 2 * len)
			return std::nullopt;
		Bytes b(len);
		for (uint32_t i = 0; i < len; i++)
			b[i] = static_cast<uint8_t>(std::stoul(r.substr(2 * i, 2), nullptr, 16));
		return b;
	}

	std::optional<uint64_t> counter(const std::string &name) override
	{
		std::string r;
		if (!call("counter " + name, &r))
			return std::nullopt;
		return std::stoull(r, nullptr, 0);
	}

	uint64_t now() override { return mono_ns(); }

private:
	template <typename... T> static std::string fmt(const T &...v)
	{
		std::ostringstream o;
		(o << ... << v);
		return o.str();
	}

	bool send_line(const std::string &l)
	{
		std::string s = l + "\n";
		return to_ >= 0 && write(to_, s.data(), s.size()) == ssize_t(s.size());
	}

	bool read_line(std::string *l)
	{
		char buf[1 << 16];
		if (!from_ || !fgets(buf, sizeof(buf), from_))
			return false;
		*l = buf;
		while (!l->empty() && (l->back() == '\n' || l->back() == '\r'))
			l->pop_back();
		return true;
	}

	// "ok [REST]" -> true, *rest = REST; anything else false.
	bool call(const std::string &cmd, std::string *rest)
	{
		std::string l;
		if (!send_line(cmd) || !read_line(&l)) {
			*rest = "DUT helper gone";
			return false;
		}
		if (l == "ok" || l.rfind("ok ", 0) == 0) {
			*rest = l.size() > 3 ? l.substr(3) : "";
			return true;
		}
		*rest = l.rfind("err", 0) == 0 && l.size() > 4 ? l.substr(4) : l;
		return false;
	}

	// The cases build RoCEv2 packets with the CRC32C stand-in in the ICRC
	// slot: put the ICRC of the datagram the suite's kernel will send
	// there (IPv4 without options, DF, ID 0, from local_ip_:4791 to the
	// DUT's 4791), or a wrong one where the case's CRC32C was wrong.
	Bytes to_icrc(const Bytes &pkt) const
	{
		Bytes b = pkt;
		uint8_t ip[20] = {0x45};
		Bytes udp(8);
		size_t n = b.size();
		put_be16(ip + 2, static_cast<uint16_t>(20 + 8 + n));
		put_be16(ip + 6, 0x4000);		// DF, ID 0
		ip[9] = IPPROTO_UDP;
		std::memcpy(ip + 12, &local_ip_, 4);
		std::memcpy(ip + 16, &dut_ip_, 4);
		put_be16(&udp[0], rocev2_port);
		put_be16(&udp[2], rocev2_port);
		put_be16(&udp[4], static_cast<uint16_t>(8 + n));
		udp.insert(udp.end(), b.begin(), b.end());
		uint32_t c = icrc_ipv4(ip, udp.data(), udp.size());
		if (!crc_ok(pkt))
			c = ~c;
		for (int i = 0; i < 4; i++)
			b[n - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
		return b;
	}

	pid_t pid_ = -1;
	int to_ = -1;
	FILE *from_ = nullptr;
	int sock_ = -1;
	bool is_open_ = false;
	bool rocev2_ = false;
	bool icrc_ = false;	// RoCEv2 DUT with the IBTA ICRC (helper's icrc=1)
	in_addr dut_ip_{}, local_ip_{};
	std::string local_;
	sockaddr_in dut_{};
	unsigned sport_base_ = 0, num_paths_ = 1;
};

}  // namespace

std::unique_ptr<Dut> make_udp_dut(const std::string &addr,
				  const std::string &local,
				  const std::string &helper_cmd, std::string *err)
{
	auto d = std::make_unique<UdpDut>();
	if (!d->start(addr, local, helper_cmd, err))
		return nullptr;
	return d;
}

}  // namespace mrcomp
