// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of UD QPs on two MetaRoCE devices (which may live in two
 * network namespaces: one process can open both, each device sends from
 * its own netdev's namespace):
 *
 *   metaroce_ud_test --from DEV --to DEV --gid IDX [--gid6 IDX] [--iters N]
 *
 * DEV --from sends datagrams to a UD QP of --to through an AH on GID IDX
 * (IPv4-mapped) and, with --gid6, also on an IPv6 GID.  Checked:
 *   - receive completions as a RoCE device gives them (MR-COMPAT-010):
 *     byte_len = 40 + payload, IBV_WC_GRH, src_qp = the sender's QPN,
 *     pkey_index 0, the GRH area holding the IPv4 header in its last 20
 *     bytes (or the IPv6 header) with the two GIDs' addresses, the payload
 *     intact, immediate data with IBV_WC_WITH_IMM; sizes 1 .. path MTU;
 *   - a datagram with a wrong Q_Key is dropped (the next good one takes
 *     the posted receive; the caller checks the rx_bad_qkey counter);
 *     a Q_Key with the high bit set sends with the QP's own Q_Key;
 *   - a send longer than the path MTU fails with EMSGSIZE;
 *   - a datagram whose send completed arrives although the sender
 *     destroys its QP right after the completion (a send completion
 *     means the datagram left, as on rdma_rxe and hardware), --iters
 *     times on a fresh QP each.
 * Prints "FAIL: ..." lines and exits 1 on any failed check.
 *
 * covers: MR-COMPAT-010
 */
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include "check.h"
#include "open_device.h"
#include "verbs_util.h"

namespace {

int failures;

constexpr uint32_t qkey = 0x11110000;
constexpr size_t grh_len = 40;
constexpr int depth = 16;

struct side {
	ibv_context *ctx = nullptr;
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;
	uint32_t mtu = 0;
};

ibv_qp *ud_qp(side &s);

bool setup(side &s, const std::string &dev)
{
	ibv_port_attr port = {};

	s.ctx = open_by_name(dev);
	CHECK(s.ctx, "open %s: %s", dev.c_str(), std::strerror(errno));
	if (!s.ctx)
		return false;
	CHECK(ibv_query_port(s.ctx, 1, &port) == 0, "query_port");
	s.mtu = 128u << port.active_mtu;
	s.buf.assign(2 * depth * (grh_len + 4096), 0);
	s.pd = ibv_alloc_pd(s.ctx);
	s.cq = ibv_create_cq(s.ctx, 4 * depth, nullptr, nullptr, 0);
	CHECK(s.pd && s.cq, "pd/cq: %s", std::strerror(errno));
	if (!s.pd || !s.cq)
		return false;
	s.mr = ibv_reg_mr(s.pd, s.buf.data(), s.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE);
	CHECK(s.mr, "reg_mr: %s", std::strerror(errno));
	s.qp = s.mr ? ud_qp(s) : nullptr;
	return s.qp && failures == 0;
}

/* A UD QP of @s in RTS, or nullptr. */
ibv_qp *ud_qp(side &s)
{
	ibv_qp_init_attr init = {};
	init.send_cq = s.cq;
	init.recv_cq = s.cq;
	init.cap.max_send_wr = depth;
	init.cap.max_recv_wr = depth;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.qp_type = IBV_QPT_UD;
	init.sq_sig_all = 1;
	ibv_qp *qp = ibv_create_qp(s.pd, &init);
	CHECK(qp, "create_qp: %s", std::strerror(errno));
	if (!qp)
		return nullptr;

	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = qkey;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_QKEY) == 0, "INIT");
	a = {};
	a.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0, "RTR");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x123;
	CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "RTS");

	ibv_qp_attr q = {};
	ibv_qp_init_attr qi = {};
	CHECK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_QKEY, &qi) == 0 &&
		      q.qkey == qkey && q.qp_state == IBV_QPS_RTS &&
		      qi.qp_type == IBV_QPT_UD,
	      "query_qp: qkey %#x state %d type %d", q.qkey, q.qp_state,
	      qi.qp_type);
	return qp;
}

void teardown(side &s)
{
	if (s.qp)
		CHECK(ibv_destroy_qp(s.qp) == 0, "destroy_qp");
	if (s.mr)
		CHECK(ibv_dereg_mr(s.mr) == 0, "dereg_mr");
	if (s.cq)
		CHECK(ibv_destroy_cq(s.cq) == 0, "destroy_cq");
	if (s.pd)
		CHECK(ibv_dealloc_pd(s.pd) == 0, "dealloc_pd");
	if (s.ctx)
		ibv_close_device(s.ctx);
}

/* Receive slot i: grh_len + 4096 bytes. */
uint8_t *slot(side &s, int i)
{
	return s.buf.data() + i * (grh_len + 4096);
}

void post_recv(side &s, int i)
{
	ibv_sge sge = {(uintptr_t)slot(s, i), uint32_t(grh_len + 4096),
		       s.mr->lkey};
	ibv_recv_wr wr = {}, *bad;

	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	CHECK(ibv_post_recv(s.qp, &wr, &bad) == 0, "post_recv");
}

/* Post a send of @len bytes from the sender's second half; errno result. */
int post_send(side &s, ibv_ah *ah, uint32_t rqpn, uint32_t rqkey,
	      uint32_t len, uint8_t seed, bool imm)
{
	uint8_t *p = s.buf.data() + s.buf.size() / 2;
	ibv_sge sge = {(uintptr_t)p, len, s.mr->lkey};
	ibv_send_wr wr = {}, *bad;

	for (uint32_t i = 0; i < len; i++)
		p[i] = uint8_t(seed + i * 7);
	wr.wr_id = 1000 + seed;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.imm_data = htonl(0x12345600u | seed);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = rqkey;
	return ibv_post_send(s.qp, &wr, &bad);
}

/* Send and receive one datagram and check everything the WC says. */
void roundtrip(side &tx, side &rx, ibv_ah *ah, const ibv_gid &sgid,
	       const ibv_gid &dgid, bool v6, uint32_t len, uint8_t seed,
	       bool imm, uint32_t rqkey = qkey)
{
	ibv_wc wc = {};

	post_recv(rx, 0);
	CHECK(post_send(tx, ah, rx.qp->qp_num, rqkey, len, seed, imm) == 0,
	      "post_send %u B", len);
	CHECK(vu::poll_one(tx.cq, wc) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_SEND && wc.wr_id == 1000u + seed,
	      "send completion: status %d opcode %d", wc.status, wc.opcode);
	wc = {};
	if (vu::poll_one(rx.cq, wc) != 1) {
		CHECK(false, "no receive completion for %u B", len);
		return;
	}
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		      wc.wr_id == 0,
	      "recv: status %d opcode %d", wc.status, wc.opcode);
	CHECK(wc.byte_len == grh_len + len, "byte_len %u for %u B", wc.byte_len,
	      len);
	CHECK(wc.wc_flags & IBV_WC_GRH, "no IBV_WC_GRH: %#x", wc.wc_flags);
	CHECK(wc.src_qp == tx.qp->qp_num, "src_qp %#x, sender %#x", wc.src_qp,
	      tx.qp->qp_num);
	CHECK(wc.pkey_index == 0 && wc.slid == 0 && wc.sl == 0,
	      "pkey_index %u slid %u sl %u", wc.pkey_index, wc.slid, wc.sl);
	CHECK(!!(wc.wc_flags & IBV_WC_WITH_IMM) == imm &&
		      (!imm || wc.imm_data == htonl(0x12345600u | seed)),
	      "immediate: flags %#x imm %#x", wc.wc_flags, ntohl(wc.imm_data));

	const uint8_t *g = slot(rx, 0);
	if (v6) {
		CHECK(g[0] >> 4 == 6, "GRH area: version %u, expected 6",
		      g[0] >> 4);
		CHECK(!std::memcmp(g + 8, sgid.raw, 16) &&
			      !std::memcmp(g + 24, dgid.raw, 16),
		      "GRH area: IPv6 addresses are not the GIDs'");
	} else {
		static const uint8_t zero[20] = {};

		CHECK(!std::memcmp(g, zero, 20) && g[20] >> 4 == 4,
		      "GRH area: not 20 zero bytes and an IPv4 header");
		CHECK(!std::memcmp(g + 32, sgid.raw + 12, 4) &&
			      !std::memcmp(g + 36, dgid.raw + 12, 4),
		      "GRH area: IPv4 addresses are not the GIDs'");
	}
	uint32_t bad = 0;
	for (uint32_t i = 0; i < len; i++)
		bad += g[grh_len + i] != uint8_t(seed + i * 7);
	CHECK(bad == 0, "%u of %u payload bytes differ", bad, len);
}

ibv_ah *make_ah(side &tx, int gid_index, const ibv_gid &dgid)
{
	ibv_ah_attr a = {};

	a.is_global = 1;
	a.grh.dgid = dgid;
	a.grh.sgid_index = gid_index;
	a.grh.hop_limit = 64;
	a.port_num = 1;
	ibv_ah *ah = ibv_create_ah(tx.pd, &a);
	CHECK(ah, "create_ah (gid %d): %s", gid_index, std::strerror(errno));
	return ah;
}

void run_family(side &tx, side &rx, int gid_index, bool v6, int iters)
{
	ibv_gid sgid = {}, dgid = {};

	CHECK(ibv_query_gid(tx.ctx, 1, gid_index, &sgid) == 0 &&
		      ibv_query_gid(rx.ctx, 1, gid_index, &dgid) == 0,
	      "query_gid %d", gid_index);
	ibv_ah *ah = make_ah(tx, gid_index, dgid);
	if (!ah)
		return;
	std::printf("%s: datagrams %s -> %s\n", v6 ? "IPv6" : "IPv4",
		    ibv_get_device_name(tx.ctx->device),
		    ibv_get_device_name(rx.ctx->device));

	const uint32_t sizes[] = {0, 1, 3, 100, 1024, tx.mtu - 1, tx.mtu};
	uint8_t seed = 1;
	for (uint32_t len : sizes)
		roundtrip(tx, rx, ah, sgid, dgid, v6, len, seed++, false);
	roundtrip(tx, rx, ah, sgid, dgid, v6, 64, seed++, true);
	/* IBTA: a Q_Key with the high bit set means the sender QP's own. */
	roundtrip(tx, rx, ah, sgid, dgid, v6, 64, seed++, false, 0x80000000u);
	for (int i = 0; i < iters; i++)
		roundtrip(tx, rx, ah, sgid, dgid, v6,
			  1 + uint32_t(std::rand()) % tx.mtu, seed++, i & 1);

	if (!v6) {
		/*
		 * A wrong Q_Key: the datagram is dropped, so the good one
		 * after it (same path, in order) takes the posted receive.
		 */
		ibv_wc wc = {};

		CHECK(post_send(tx, ah, rx.qp->qp_num, qkey ^ 1, 32, 200,
				false) == 0, "post_send bad qkey");
		CHECK(vu::poll_one(tx.cq, wc) == 1 && wc.status == IBV_WC_SUCCESS,
		      "bad-qkey send completion");
		roundtrip(tx, rx, ah, sgid, dgid, v6, 48, 201, false);
		CHECK(ibv_poll_cq(rx.cq, 1, &wc) == 0,
		      "a second receive completion: the bad Q_Key arrived");
		std::printf("sent 1 datagram with a wrong Q_Key\n");

		/* Longer than the path MTU: refused at posting. */
		int err = post_send(tx, ah, rx.qp->qp_num, qkey, tx.mtu + 1,
				    202, false);
		CHECK(err == EMSGSIZE, "send of MTU+1 = %u B: %d (%s), expected EMSGSIZE",
		      tx.mtu + 1, err, std::strerror(err));
		CHECK(ibv_poll_cq(tx.cq, 1, &wc) == 0,
		      "a completion for the refused send");
	}
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
}

/*
 * @iters times: a fresh UD QP of @tx sends one datagram, and is destroyed
 * as soon as its send completes; the datagram must arrive all the same.
 */
void send_then_destroy(side &tx, side &rx, int gid_index, int iters)
{
	ibv_gid dgid = {};
	int lost = 0;

	CHECK(ibv_query_gid(rx.ctx, 1, gid_index, &dgid) == 0, "query_gid");
	ibv_ah *ah = make_ah(tx, gid_index, dgid);
	if (!ah)
		return;
	for (int i = 0; i < iters && !failures; i++) {
		ibv_qp *qp = ud_qp(tx);
		ibv_qp *keep = tx.qp;
		ibv_wc wc = {};

		if (!qp)
			break;
		post_recv(rx, 0);
		tx.qp = qp;
		CHECK(post_send(tx, ah, rx.qp->qp_num, qkey, 256, uint8_t(i),
				false) == 0, "post_send");
		tx.qp = keep;
		CHECK(vu::poll_one(tx.cq, wc) == 1 && wc.status == IBV_WC_SUCCESS,
		      "send completion: status %d", wc.status);
		uint32_t sender = qp->qp_num;
		CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
		wc = {};
		if (vu::poll_one(rx.cq, wc) != 1) {
			/* One is enough, and each costs the poll's bound. */
			lost++;
			std::printf("datagram %d of %d lost\n", i + 1, iters);
			break;
		}
		CHECK(wc.status == IBV_WC_SUCCESS && wc.src_qp == sender &&
			      wc.byte_len == grh_len + 256,
		      "recv: status %d src_qp %#x (sender %#x) byte_len %u",
		      wc.status, wc.src_qp, sender, wc.byte_len);
	}
	CHECK(lost == 0, "a datagram whose send completed never arrived: "
	      "the sender destroyed its QP after the completion");
	if (!lost)
		std::printf("sent %d datagrams from QPs destroyed at their "
			    "send completion, none lost\n", iters);
	CHECK(ibv_destroy_ah(ah) == 0, "destroy_ah");
}

} // namespace

int main(int argc, char **argv)
{
	std::string from, to;
	int gid = -1, gid6 = -1, iters = 100;

	for (int i = 1; i + 1 < argc; i += 2) {
		std::string a = argv[i];

		if (a == "--from")
			from = argv[i + 1];
		else if (a == "--to")
			to = argv[i + 1];
		else if (a == "--gid")
			gid = std::atoi(argv[i + 1]);
		else if (a == "--gid6")
			gid6 = std::atoi(argv[i + 1]);
		else if (a == "--iters")
			iters = std::atoi(argv[i + 1]);
	}
	if (from.empty() || to.empty() || gid < 0) {
		std::fprintf(stderr, "usage: %s --from DEV --to DEV --gid IDX "
				     "[--gid6 IDX] [--iters N]\n", argv[0]);
		return 2;
	}
	side tx, rx;
	if (setup(tx, from) && setup(rx, to)) {
		CHECK(tx.mtu == rx.mtu, "path MTUs differ: %u %u", tx.mtu, rx.mtu);
		run_family(tx, rx, gid, false, iters);
		if (gid6 >= 0)
			run_family(tx, rx, gid6, true, iters);
		send_then_destroy(tx, rx, gid, iters);
	}
	teardown(tx);
	teardown(rx);
	if (failures) {
		std::printf("FAIL: %d checks failed\n", failures);
		return 1;
	}
	std::printf("PASS\n");
	return 0;
}
