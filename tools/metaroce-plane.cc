// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// metaroce-plane: list, add, remove and take out of service the planes
// (netdevs) of a MetaRoCE device, through the "metaroce" generic netlink
// family of rdma_metaroce.ko (include/uapi/rdma/metaroce-netlink.h).
// See metaroce-plane.8.

#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>

#include <uapi/rdma/metaroce-netlink.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;	// the kernel refused, or no module
constexpr int kExitUsage = 2;

void usage(FILE *out)
{
	std::fputs(
		"Usage: metaroce-plane [--json] show [DEV]\n"
		"       metaroce-plane add DEV NETDEV\n"
		"       metaroce-plane del DEV NETDEV\n"
		"       metaroce-plane set DEV NETDEV up|down\n"
		"Options:\n"
		"  -j, --json   show: print a JSON array\n"
		"  -h, --help   print this help\n",
		out);
}

struct Plane {
	std::string dev, ifname;
	uint32_t id = 0, ifindex = 0;
	bool admin_up = false, oper_up = false;
	uint64_t tx_packets = 0, tx_errors = 0, rx_packets = 0;
	uint64_t paths_down = 0, paths_up = 0, tx_link_down = 0;
};

struct SockDeleter {
	void operator()(nl_sock *sk) const { nl_socket_free(sk); }
};
struct MsgDeleter {
	void operator()(nl_msg *msg) const { nlmsg_free(msg); }
};
using Sock = std::unique_ptr<nl_sock, SockDeleter>;
using Msg = std::unique_ptr<nl_msg, MsgDeleter>;

// What the kernel answered: 0, or the errno of its NLMSG_ERROR.
struct Reply {
	int error = 0;
	std::vector<Plane> planes;
};

int on_error(sockaddr_nl *, nlmsgerr *err, void *arg)
{
	static_cast<Reply *>(arg)->error = -err->error;
	return NL_STOP;
}

int on_ack(nl_msg *, void *)
{
	return NL_STOP;
}

uint64_t get_u64(nlattr *a)
{
	return a ? nla_get_u64(a) : 0;
}

int on_plane(nl_msg *msg, void *arg)
{
	nlattr *tb[METAROCE_ATTR_MAX + 1];
	Plane p;

	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, METAROCE_ATTR_MAX, nullptr) < 0 ||
	    !tb[METAROCE_ATTR_DEV_NAME] || !tb[METAROCE_ATTR_IFNAME])
		return NL_SKIP;
	p.dev = nla_get_string(tb[METAROCE_ATTR_DEV_NAME]);
	p.ifname = nla_get_string(tb[METAROCE_ATTR_IFNAME]);
	if (tb[METAROCE_ATTR_PLANE_ID])
		p.id = nla_get_u32(tb[METAROCE_ATTR_PLANE_ID]);
	if (tb[METAROCE_ATTR_IFINDEX])
		p.ifindex = nla_get_u32(tb[METAROCE_ATTR_IFINDEX]);
	p.admin_up = tb[METAROCE_ATTR_ADMIN_UP] && nla_get_u8(tb[METAROCE_ATTR_ADMIN_UP]);
	p.oper_up = tb[METAROCE_ATTR_OPER_UP] && nla_get_u8(tb[METAROCE_ATTR_OPER_UP]);
	p.tx_packets = get_u64(tb[METAROCE_ATTR_TX_PACKETS]);
	p.tx_errors = get_u64(tb[METAROCE_ATTR_TX_ERRORS]);
	p.rx_packets = get_u64(tb[METAROCE_ATTR_RX_PACKETS]);
	p.paths_down = get_u64(tb[METAROCE_ATTR_PATHS_DOWN]);
	p.paths_up = get_u64(tb[METAROCE_ATTR_PATHS_UP]);
	p.tx_link_down = get_u64(tb[METAROCE_ATTR_TX_LINK_DOWN]);
	static_cast<Reply *>(arg)->planes.push_back(std::move(p));
	return NL_OK;
}

class Family {
public:
	// errno on failure; ENOENT: the module is not loaded.
	int open()
	{
		sk_.reset(nl_socket_alloc());
		if (!sk_)
			return ENOMEM;
		if (genl_connect(sk_.get()) < 0)
			return EIO;
		id_ = genl_ctrl_resolve(sk_.get(), METAROCE_GENL_NAME);
		return id_ < 0 ? ENOENT : 0;
	}

	// Send one request, collect what comes back; 0 or an errno.
	int request(uint8_t cmd, int flags, const std::vector<std::pair<int, std::string>> &strs,
		    std::optional<uint8_t> admin_up, Reply &reply)
	{
		Msg msg(nlmsg_alloc());
		if (!msg || !genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, id_, 0,
					 flags, cmd, METAROCE_GENL_VERSION))
			return ENOMEM;
		for (const auto &[attr, value] : strs)
			if (nla_put_string(msg.get(), attr, value.c_str()) < 0)
				return EMSGSIZE;
		if (admin_up && nla_put_u8(msg.get(), METAROCE_ATTR_ADMIN_UP, *admin_up) < 0)
			return EMSGSIZE;

		nl_cb *cb = nl_cb_alloc(NL_CB_DEFAULT);
		if (!cb)
			return ENOMEM;
		nl_cb_err(cb, NL_CB_CUSTOM, on_error, &reply);
		nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &reply);
		nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_plane, &reply);
		int err = nl_send_auto(sk_.get(), msg.get());
		if (err >= 0)
			err = nl_recvmsgs(sk_.get(), cb);
		nl_cb_put(cb);
		if (reply.error)
			return reply.error;
		return err < 0 ? EIO : 0;
	}

private:
	Sock sk_;
	int id_ = -1;
};

void print_text(const std::vector<Plane> &planes)
{
	for (const Plane &p : planes)
		std::printf("%s plane %u %s ifindex %u admin %s oper %s tx_packets %llu "
			    "tx_errors %llu rx_packets %llu paths_down %llu paths_up %llu "
			    "tx_link_down %llu\n",
			    p.dev.c_str(), p.id, p.ifname.c_str(), p.ifindex,
			    p.admin_up ? "up" : "down", p.oper_up ? "up" : "down",
			    (unsigned long long)p.tx_packets, (unsigned long long)p.tx_errors,
			    (unsigned long long)p.rx_packets, (unsigned long long)p.paths_down,
			    (unsigned long long)p.paths_up, (unsigned long long)p.tx_link_down);
}

// Device and netdev names are kernel names: no quote, backslash or control
// character can be in them, so they go into JSON strings as they are.
void print_json(const std::vector<Plane> &planes)
{
	std::fputs("[", stdout);
	const char *sep = "";
	for (const Plane &p : planes) {
		std::printf("%s{\"dev\":\"%s\",\"plane\":%u,\"ifname\":\"%s\",\"ifindex\":%u,"
			    "\"admin\":\"%s\",\"oper\":\"%s\",\"tx_packets\":%llu,"
			    "\"tx_errors\":%llu,\"rx_packets\":%llu,\"paths_down\":%llu,"
			    "\"paths_up\":%llu,\"tx_link_down\":%llu}",
			    sep, p.dev.c_str(), p.id, p.ifname.c_str(), p.ifindex,
			    p.admin_up ? "up" : "down", p.oper_up ? "up" : "down",
			    (unsigned long long)p.tx_packets, (unsigned long long)p.tx_errors,
			    (unsigned long long)p.rx_packets, (unsigned long long)p.paths_down,
			    (unsigned long long)p.paths_up, (unsigned long long)p.tx_link_down);
		sep = ",";
	}
	std::puts("]");
}

int fail(int err, std::string_view what)
{
	if (err == ENOENT)
		std::fprintf(stderr, "metaroce-plane: no \"%s\" netlink family: is rdma_metaroce loaded?\n",
			     METAROCE_GENL_NAME);
	else
		std::fprintf(stderr, "metaroce-plane: %.*s: %s\n", (int)what.size(), what.data(),
			     std::strerror(err));
	return kExitFailed;
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string_view> args;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		std::string_view a = argv[i];
		if (a == "-h" || a == "--help") {
			usage(stdout);
			return kExitOk;
		}
		if (a == "-j" || a == "--json")
			json = true;
		else if (a.size() > 1 && a[0] == '-')
			return usage(stderr), kExitUsage;
		else
			args.push_back(a);
	}
	if (args.empty())
		args.push_back("show");

	const std::string_view cmd = args[0];
	uint8_t nlcmd;
	std::optional<uint8_t> admin_up;
	if (cmd == "show" && args.size() <= 2) {
		nlcmd = METAROCE_CMD_PLANE_GET;
	} else if (cmd == "add" && args.size() == 3) {
		nlcmd = METAROCE_CMD_PLANE_ADD;
	} else if (cmd == "del" && args.size() == 3) {
		nlcmd = METAROCE_CMD_PLANE_DEL;
	} else if (cmd == "set" && args.size() == 4 && (args[3] == "up" || args[3] == "down")) {
		nlcmd = METAROCE_CMD_PLANE_SET;
		admin_up = args[3] == "up";
	} else {
		usage(stderr);
		return kExitUsage;
	}

	Family family;
	if (int err = family.open())
		return fail(err, "netlink");

	Reply reply;
	if (nlcmd == METAROCE_CMD_PLANE_GET) {
		if (int err = family.request(nlcmd, NLM_F_DUMP, {}, std::nullopt, reply))
			return fail(err, "show");
		std::vector<Plane> shown;
		for (Plane &p : reply.planes)
			if (args.size() == 1 || p.dev == args[1])
				shown.push_back(std::move(p));
		if (args.size() == 2 && shown.empty()) {
			std::fprintf(stderr, "metaroce-plane: %.*s: no such MetaRoCE device\n",
				     (int)args[1].size(), args[1].data());
			return kExitFailed;
		}
		json ? print_json(shown) : print_text(shown);
		return kExitOk;
	}

	std::string what = std::string(cmd) + " " + std::string(args[1]) + " " + std::string(args[2]);
	if (int err = family.request(nlcmd, NLM_F_ACK,
				     {{METAROCE_ATTR_DEV_NAME, std::string(args[1])},
				      {METAROCE_ATTR_IFNAME, std::string(args[2])}},
				     admin_up, reply))
		return fail(err, what);
	return kExitOk;
}
