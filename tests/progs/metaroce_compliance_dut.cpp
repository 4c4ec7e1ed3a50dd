// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// DUT-side helper of metaroce-compliance (tools/compliance/README.md) for
// a verbs device, such as rdma_metaroce.ko's:
//
//   metaroce_compliance_dut DEVICE
//
// speaks the helper protocol on stdin/stdout: each "open" creates an RC
// QP and a 1 MiB MR on DEVICE, connected to the suite's QPN, PSN and IPv4
// address (RoCE v2 GID), in RTS.  The QP is made with
// metarocedv_create_qp() in the wire mode and, in MetaRoCE mode, with the
// number of paths the suite asks for, whatever the device's default.
// Counters are the device's hw_counters (rx_wrong_qpn is rx_no_qp).  The
// suite's rtt_ns becomes the device's initial_rtt_ns (sysfs) for the QP
// (at least the device's own value), so that the module's PTO and tail
// loss probe do not fire before the suite can answer.  The protocol's
// parser is the suite's (tools/compliance/dut_helper.hpp).
#include "dut_helper.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <infiniband/metarocedv.h>
#include <infiniband/verbs.h>
#include <string>
#include <vector>

using namespace mrcomp;

namespace {

constexpr uint32_t mr_len = 1 << 20;
constexpr uint32_t sq_psn = 0x000200;

struct Verbs final : HelperBackend {
	std::string dev_name;
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_mr *mr = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	std::vector<uint8_t> buf = std::vector<uint8_t>(mr_len);
	int gid_index = -1;
	uint64_t initial_rtt_ns = 0;	// the device's own; 0: no such attribute

	std::string sysfs(const std::string &rel)
	{
		std::ifstream f("/sys/class/infiniband/" + dev_name + "/" + rel);
		std::string s;
		std::getline(f, s);
		return s;
	}

	bool set_sysfs(const std::string &rel, const std::string &v)
	{
		std::ofstream f("/sys/class/infiniband/" + dev_name + "/" + rel);
		f << v << "\n";
		f.flush();
		return bool(f);
	}

	// The module sends the QP's last ACK once more on the way
	// (MR-LOSS-012); the CQ, MR and PD stay until close().
	std::string destroy_qp() override
	{
		if (!qp)
			return "no QP";
		if (int e = ibv_destroy_qp(qp))
			return std::string("ibv_destroy_qp: ") + strerror(e);
		qp = nullptr;
		return {};
	}

	void close() override
	{
		destroy_qp();
		if (cq)
			ibv_destroy_cq(cq);
		if (mr)
			ibv_dereg_mr(mr);
		if (pd)
			ibv_dealloc_pd(pd);
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

	std::string open(const HelperOpen &o, HelperQp *q) override
	{
		std::string r = open_qp(o, q);
		if (!r.empty())
			close();
		return r;
	}

	std::string open_qp(const HelperOpen &o, HelperQp *q)
	{
		bool rocev2 = o.mode == Mode::rocev2;
		// The QP's wire mode and number of paths are its own
		// (metarocedv_create_qp), whatever the device's default.
		unsigned paths = rocev2 ? 1 : std::max(o.paths, 1u);
		if (gid_index < 0 && !find_gid())
			return "no IPv4-mapped GID on " + dev_name;
		in_addr peer{};
		if (inet_pton(AF_INET, o.peer_addr.c_str(), &peer) != 1)
			return "bad peer_addr";
		// Read when the connection starts (INIT->RTR below).
		if (initial_rtt_ns &&
		    !set_sysfs("initial_rtt_ns",
			       std::to_string(std::max(initial_rtt_ns, o.rtt_ns))))
			return "cannot set initial_rtt_ns";
		pd = ibv_alloc_pd(ctx);
		memset(buf.data(), 0, buf.size());
		mr = pd ? ibv_reg_mr(pd, buf.data(), mr_len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ) : nullptr;
		cq = ibv_create_cq(ctx, 512, nullptr, nullptr, 0);
		if (!mr || !cq)
			return "PD/MR/CQ";
		ibv_qp_init_attr_ex ia{};
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 128;
		ia.cap.max_recv_wr = 128;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.comp_mask = IBV_QP_INIT_ATTR_PD;
		ia.pd = pd;
		metarocedv_qp_init_attr dv{};
		dv.comp_mask = METAROCEDV_QP_INIT_ATTR_TRANSPORT;
		dv.transport = rocev2 ? METAROCEDV_TRANSPORT_ROCEV2 : METAROCEDV_TRANSPORT_METAROCE;
		if (!rocev2) {
			dv.comp_mask |= METAROCEDV_QP_INIT_ATTR_NUM_PATHS;
			dv.num_paths = paths;
		}
		qp = metarocedv_create_qp(ctx, &ia, &dv, sizeof(dv));
		if (!qp)
			return std::string("metarocedv_create_qp: ") + strerror(errno);
		ibv_qp_attr a{};
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			return "INIT";
		a = {};
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = o.peer_qpn;
		a.rq_psn = o.peer_psn;
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
			return "RTR";
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
			return "RTS";
		DutInfo &i = q->info;
		i.qpn = qp->qp_num;
		i.psn = sq_psn;
		i.rkey = mr->rkey;
		i.addr = reinterpret_cast<uintptr_t>(buf.data());
		i.mr_len = mr_len;
		i.mtu = 1024;
		i.num_paths = paths;
		// MetaRoCE mode: the device's window (sysfs window, read when
		// the QP connected); RoCEv2 mode keeps the core's 128.
		i.window = 128;
		if (!rocev2) {
			metarocedv_device_attr da{};
			if (int e = metarocedv_query_device(ctx, &da, sizeof(da)))
				return std::string("metarocedv_query_device: ") + strerror(e);
			i.window = da.max_window;
		}
		i.retry_cnt = 7;
		// rdma_metaroce.ko: path p leaves from UDP source port base + p.
		if (!rocev2)
			q->sport_base = 0xc000 + ((qp->qp_num * 16) & 0x3fff);
		// RoCEv2 mode ends every packet in the IBTA ICRC.
		q->icrc = rocev2;
		return {};
	}

	std::string post_recv(uint64_t wr_id, uint32_t off, uint32_t len) override
	{
		ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[off]), len, mr->lkey};
		ibv_recv_wr wr{}, *bad;
		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		return ibv_post_recv(qp, &wr, &bad) ? "ibv_post_recv" : "";
	}

	std::string post_send(uint64_t wr_id, uint32_t op, uint32_t off,
			      uint32_t len, uint32_t rkey, uint64_t raddr) override
	{
		ibv_sge sge{reinterpret_cast<uintptr_t>(&buf[off]), len, mr->lkey};
		ibv_send_wr wr{}, *bad;
		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op == 0 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.rkey = rkey;
		wr.wr.rdma.remote_addr = raddr;
		return ibv_post_send(qp, &wr, &bad) ? "ibv_post_send" : "";
	}

	std::vector<Completion> poll() override
	{
		std::vector<Completion> out;
		ibv_wc wc[16];
		int n;
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
			for (int i = 0; i < n; i++) {
				uint8_t op = wc[i].status != IBV_WC_SUCCESS ? 0 :
					     wc[i].opcode == IBV_WC_RDMA_WRITE ? 1 :
					     wc[i].opcode & IBV_WC_RECV ? 2 : 0;
				if (wc[i].status != IBV_WC_SUCCESS && wc[i].wr_id >= 100)
					op = 2;	// the suite's receive WR ids
				out.push_back({wc[i].wr_id, wc[i].byte_len, op,
					       static_cast<uint8_t>(wc[i].status)});
			}
		return out;
	}

	std::optional<Bytes> read_mem(uint32_t off, uint32_t len) override
	{
		return Bytes(buf.begin() + off, buf.begin() + off + len);
	}

	std::optional<uint64_t> counter(const std::string &name) override
	{
		std::string v = sysfs("ports/1/hw_counters/" +
				      (name == "rx_wrong_qpn" ? std::string("rx_no_qp") : name));
		if (v.empty())
			return std::nullopt;
		return strtoull(v.c_str(), nullptr, 10);
	}
};

}  // namespace

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: metaroce_compliance_dut DEVICE\n");
		return 2;
	}
	Verbs b;
	b.dev_name = argv[1];
	int n = 0;
	ibv_device **list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++)
		if (b.dev_name == ibv_get_device_name(list[i]))
			b.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!b.ctx) {
		fprintf(stderr, "metaroce_compliance_dut: cannot open %s\n", argv[1]);
		return 1;
	}
	std::string rtt = b.sysfs("initial_rtt_ns");
	b.initial_rtt_ns = strtoull(rtt.c_str(), nullptr, 10);
	{
		HelperServer server(b);
		server.run(stdin, stdout);
	}
	if (b.initial_rtt_ns)
		b.set_sysfs("initial_rtt_ns", rtt);
	ibv_close_device(b.ctx);
	return 0;
}
