// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// DUT-side helper of metaroce-compliance (tools/compliance/README.md) for
// a verbs device, such as rdma_metaroce.ko's:
//
//   metaroce_compliance_dut DEVICE
//
// speaks the helper protocol on stdin/stdout: each "open" creates an
// ordinary RC QP and a 1 MiB MR on DEVICE, connected to the suite's QPN,
// PSN and IPv4 address (RoCE v2 GID), in RTS.  The device's wire mode is
// the module's (default_transport): an open for the other mode fails.
// Counters are the device's hw_counters (rx_wrong_qpn is rx_no_qp).
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <infiniband/verbs.h>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr uint32_t mr_len = 1 << 20;
constexpr uint32_t sq_psn = 0x000200;

struct Helper {
	std::string dev_name;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_mr *mr = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	std::vector<uint8_t> buf = std::vector<uint8_t>(mr_len);
	int gid_index = -1;

	static void reply(const std::string &s)
	{
		printf("%s\n", s.c_str());
		fflush(stdout);
	}

	std::string sysfs(const std::string &rel)
	{
		std::ifstream f("/sys/class/infiniband/" + dev_name + "/" + rel);
		std::string s;
		std::getline(f, s);
		return s;
	}

	void teardown()
	{
		if (qp)
			ibv_destroy_qp(qp);
		if (cq)
			ibv_destroy_cq(cq);
		if (mr)
			ibv_dereg_mr(mr);
		if (pd)
			ibv_dealloc_pd(pd);
		qp = nullptr;
		cq = nullptr;
		mr = nullptr;
		pd = nullptr;
	}

	bool find_gid()
	{
		for (int i = 0; i < 16; i++) {
			std::string g = sysfs("ports/1/gids/" + std::to_string(i));
			if (g.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0) {
				gid_index = i;
				return true;
			}
		}
		return false;
	}

	std::string open_qp(std::map<std::string, std::string> &kv)
	{
		std::ifstream pf("/sys/module/rdma_metaroce/parameters/default_transport");
		std::string module_mode;
		std::getline(pf, module_mode);
		if (!module_mode.empty() && kv["mode"] != module_mode)
			return "err the module runs default_transport=" + module_mode;
		if (gid_index < 0 && !find_gid())
			return "err no IPv4-mapped GID on " + dev_name;
		in_addr peer{};
		if (inet_pton(AF_INET, kv["peer_addr"].c_str(), &peer) != 1)
			return "err bad peer_addr";
		pd = ibv_alloc_pd(ctx);
		memset(buf.data(), 0, buf.size());
		mr = pd ? ibv_reg_mr(pd, buf.data(), mr_len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ) : nullptr;
		cq = ibv_create_cq(ctx, 512, nullptr, nullptr, 0);
		if (!mr || !cq)
			return "err PD/MR/CQ";
		ibv_qp_init_attr ia{};
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 128;
		ia.cap.max_recv_wr = 128;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		qp = ibv_create_qp(pd, &ia);
		if (!qp)
			return "err ibv_create_qp";
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			return "err INIT";
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = std::stoul(kv["peer_qpn"], nullptr, 0);
		a.rq_psn = std::stoul(kv["peer_psn"], nullptr, 0);
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.sgid_index = gid_index;
		a.ah_attr.grh.dgid.raw[10] = 0xff;
		a.ah_attr.grh.dgid.raw[11] = 0xff;
		memcpy(&a.ah_attr.grh.dgid.raw[12], &peer, 4);
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
			return "err RTR";
		a = {};
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = sq_psn;
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC))
			return "err RTS";
		bool rocev2 = kv["mode"] == "rocev2";
		std::ostringstream o;
		o << "ok qpn=" << qp->qp_num << " psn=" << sq_psn << " rkey=" << mr->rkey
		  << " addr=" << reinterpret_cast<uintptr_t>(buf.data())
		  << " mr_len=" << mr_len << " mtu=1024 paths=" << (rocev2 ? 1 : 4)
		  << " window=128 retry_cnt=7";
		// rdma_metaroce.ko: path p leaves from UDP source port base + p.
		if (!rocev2)
			o << " sport_base=" << (0xc000 + ((qp->qp_num * 16) & 0x3fff));
		return o.str();
	}

	void command(const std::string &line)
	{
		std::istringstream in(line);
		std::string cmd;
		in >> cmd;
		unsigned long long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
		if (cmd == "open") {
			std::map<std::string, std::string> kv;
			std::string tok;
			while (in >> tok)
				if (auto eq = tok.find('='); eq != std::string::npos)
					kv[tok.substr(0, eq)] = tok.substr(eq + 1);
			teardown();
			std::string r = open_qp(kv);
			if (r.rfind("ok", 0) != 0)
				teardown();
			reply(r);
		} else if (cmd == "close") {
			teardown();
			reply("ok");
		} else if (!qp) {
			reply("err no QP");
		} else if (cmd == "recv" && (in >> a >> b >> c) && b + c <= mr_len) {
			ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[b]), uint32_t(c), mr->lkey};
			ibv_recv_wr wr{}, *bad;
			wr.wr_id = a;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			reply(ibv_post_recv(qp, &wr, &bad) ? "err ibv_post_recv" : "ok");
		} else if (cmd == "send" && (in >> a >> b >> c >> d >> e >> f) &&
			   c + d <= mr_len && b <= 1) {
			ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[c]), uint32_t(d), mr->lkey};
			ibv_send_wr wr{}, *bad;
			wr.wr_id = a;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = b == 0 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.rkey = e;
			wr.wr.rdma.remote_addr = f;
			reply(ibv_post_send(qp, &wr, &bad) ? "err ibv_post_send" : "ok");
		} else if (cmd == "poll") {
			ibv_wc wc[16];
			int n;
			while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
				for (int i = 0; i < n; i++) {
					unsigned op = wc[i].status != IBV_WC_SUCCESS ? 0 :
						      wc[i].opcode == IBV_WC_RDMA_WRITE ? 1 :
						      wc[i].opcode & IBV_WC_RECV ? 2 : 0;
					if (wc[i].status != IBV_WC_SUCCESS && wc[i].wr_id >= 100)
						op = 2;	// the suite's receive WR ids
					printf("wc %llu %u %u %u\n", (unsigned long long)wc[i].wr_id,
					       wc[i].status, op, wc[i].byte_len);
				}
			reply("ok");
		} else if (cmd == "mem" && (in >> a >> b) && a + b <= mr_len) {
			std::string hex;
			char x[3];
			for (uint64_t i = a; i < a + b; i++) {
				snprintf(x, sizeof(x), "%02x", buf[i]);
				hex += x;
			}
			reply("ok " + hex);
		} else if (cmd == "counter" && (in >> cmd)) {
			if (cmd == "rx_wrong_qpn")
				cmd = "rx_no_qp";
			std::string v = sysfs("ports/1/hw_counters/" + cmd);
			reply(v.empty() ? "err no such counter" : "ok " + v);
		} else {
			reply("err bad command");
		}
	}
};

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: metaroce_compliance_dut DEVICE\n");
		return 2;
	}
	Helper h;
	h.dev_name = argv[1];
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (h.dev_name == ibv_get_device_name(list[i]))
			h.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!h.ctx) {
		fprintf(stderr, "metaroce_compliance_dut: cannot open %s\n", argv[1]);
		return 1;
	}
	char line[4096];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		h.command(line);
	}
	h.teardown();
	ibv_close_device(h.ctx);
	return 0;
}
