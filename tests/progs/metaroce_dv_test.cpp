// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of the direct verbs (metarocedv.h, libmetaroce.so.1) on real
 * MetaRoCE devices, run by tests/vm/t-kernel-transport.sh:
 *
 *   metaroce_dv_test query DEV --planes N --default MODE --window W --paths P
 *		      [--rocev2]
 *	metarocedv_query_device() against what the caller read from sysfs
 *	(default_transport, window, paths) and metaroce-plane (the planes): caps,
 *	planes, paths, window; inlen shorter and longer than the structure; a
 *	non-metaroce device (if one is listed) gives EOPNOTSUPP.
 *
 *   metaroce_dv_test create DEV --expect MODE
 *	metarocedv_create_qp() with each transport, num_paths 1/4/16 and
 *	each congestion profile; the refusals (num_paths 0 and 17, unknown
 *	comp_mask bit, non-zero reserved, UD qp_type, paths or a profile on
 *	a RoCEv2 QP) give NULL and EINVAL; MODE is the wire mode a QP gets
 *	without an explicit transport (from METAROCE_TRANSPORT or the
 *	device default), which checks the precedence: explicit transport >
 *	environment > device default; metarocedv_query_qp_stats() of the
 *	new QPs names the transport and number of paths they got.
 *
 *   metaroce_dv_test transfer DEV_A DEV_B --gid IDX --paths N
 *		      [--transport MODE] [--lossy] [--kib K]
 *	an RC QP of N paths on each device (one process: each device sends
 *	from its netdev's namespace), K KiB (a multiple of 64, default 1024)
 *	of RDMA WRITEs from A to B,
 *	checked on arrival; then metarocedv_query_qp_stats() on both:
 *	packets were sent and received on exactly the QP's paths (1 for
 *	RoCEv2), the paths add up to the connection's totals, and with
 *	--lossy (the caller put netem loss on the link) A retransmitted and,
 *	in MetaRoCE mode, SACKs went from B to A.  Also: the inlen rules and
 *	EOPNOTSUPP for a UD QP.  Prints both QPNs and the first PSN, and the
 *	statistics (the ground truth of tests/vm/t-kernel-dissector.sh).
 *
 * MODE is metaroce or rocev2.  Prints "FAIL: ..." lines and exits 1 on any
 * failed check, "PASS: ..." and 0 otherwise.
 */
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <infiniband/metarocedv.h>
#include <infiniband/verbs.h>

#include "check.h"
#include "open_device.h"

namespace {

int failures;

/* A device that is not MetaRoCE, opened, or nullptr (none listed). */
ibv_context *open_other()
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_context *ctx = nullptr;

	if (!list)
		return nullptr;
	for (int i = 0; i < num && !ctx; i++)
		if (!metarocedv_is_supported(list[i]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

uint32_t parse_mode(std::string_view s)
{
	if (s == "metaroce")
		return METAROCEDV_TRANSPORT_METAROCE;
	if (s == "rocev2")
		return METAROCEDV_TRANSPORT_ROCEV2;
	std::fprintf(stderr, "not a wire mode: %.*s\n", int(s.size()), s.data());
	std::exit(2);
}

const char *mode_name(uint32_t m)
{
	return m == METAROCEDV_TRANSPORT_METAROCE ? "metaroce" :
	       m == METAROCEDV_TRANSPORT_ROCEV2	  ? "rocev2" :
						    "?";
}

int query(ibv_context *ctx, uint32_t planes, uint32_t def, uint32_t window,
	  uint32_t paths, bool rocev2)
{
	metarocedv_device_attr a;

	std::memset(&a, 0xa5, sizeof(a));
	CHECK(metarocedv_query_device(ctx, &a, sizeof(a)) == 0, "query_device");
	std::printf("query_device: caps %#x default %s planes %u/%u paths %u (default %u) window %u\n",
		    a.caps, mode_name(a.default_transport), a.num_planes,
		    a.max_planes, a.max_paths, a.default_paths, a.max_window);
	CHECK(a.comp_mask == 0, "comp_mask %#llx", (unsigned long long)a.comp_mask);
	CHECK(a.caps & METAROCEDV_DEVICE_CAP_METAROCE, "no METAROCE cap");
	CHECK(!!(a.caps & METAROCEDV_DEVICE_CAP_ROCEV2) == rocev2,
	      "ROCEV2 cap %d, expected %d", !!(a.caps & METAROCEDV_DEVICE_CAP_ROCEV2),
	      rocev2);
	CHECK(!(a.caps & ~uint32_t(METAROCEDV_DEVICE_CAP_METAROCE |
				   METAROCEDV_DEVICE_CAP_ROCEV2 |
				   METAROCEDV_DEVICE_CAP_QP_STATS)),
	      "unknown caps %#x", a.caps);
	CHECK(a.default_transport == def, "default_transport %s, sysfs says %s",
	      mode_name(a.default_transport), mode_name(def));
	CHECK(a.num_planes == planes, "num_planes %u, metaroce-plane lists %u",
	      a.num_planes, planes);
	CHECK(a.max_planes == 4 && a.num_planes <= a.max_planes, "max_planes %u",
	      a.max_planes);
	CHECK(a.max_paths == METAROCEDV_MAX_PATHS, "max_paths %u", a.max_paths);
	CHECK(a.default_paths == paths, "default_paths %u, sysfs says %u",
	      a.default_paths, paths);
	CHECK(a.max_window == window, "max_window %u, sysfs says %u", a.max_window, window);
	CHECK(a.reserved == 0, "reserved %u", a.reserved);

	/* An older caller's structure: only its bytes are written. */
	metarocedv_device_attr shorter;
	const uint32_t to_default = offsetof(metarocedv_device_attr, max_planes);
	std::memset(&shorter, 0xa5, sizeof(shorter));
	CHECK(metarocedv_query_device(ctx, &shorter, to_default) == 0,
	      "query_device, inlen %u", to_default);
	CHECK(shorter.caps == a.caps && shorter.default_transport == def &&
		      shorter.max_planes == 0xa5a5a5a5u &&
		      shorter.reserved == 0xa5a5a5a5u,
	      "short inlen: wrote past it or not up to it");
	/* A newer caller's: the bytes past ours are zeroed. */
	struct {
		metarocedv_device_attr a;
		uint64_t newer[3];
	} longer;
	std::memset(&longer, 0xa5, sizeof(longer));
	CHECK(metarocedv_query_device(ctx, &longer.a, sizeof(longer)) == 0,
	      "query_device, long inlen");
	CHECK(longer.a.max_paths == a.max_paths && !longer.newer[0] &&
		      !longer.newer[1] && !longer.newer[2],
	      "long inlen: tail not zeroed");
	CHECK(metarocedv_query_device(ctx, &a, 4) == EINVAL, "inlen 4");
	CHECK(metarocedv_query_device(ctx, nullptr, sizeof(a)) == EINVAL, "NULL");

	if (ibv_context *other = open_other()) {
		std::printf("non-metaroce device: %s\n",
			    ibv_get_device_name(other->device));
		CHECK(metarocedv_query_device(other, &a, sizeof(a)) == EOPNOTSUPP,
		      "query_device on %s", ibv_get_device_name(other->device));
		ibv_close_device(other);
	}
	return failures;
}

struct res {
	ibv_pd *pd = nullptr;
	ibv_cq *cq = nullptr;
};

ibv_qp_init_attr_ex rc_attr(const res &r)
{
	ibv_qp_init_attr_ex attr = {};

	attr.send_cq = r.cq;
	attr.recv_cq = r.cq;
	attr.cap.max_send_wr = 16;
	attr.cap.max_recv_wr = 16;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD;
	attr.pd = r.pd;
	return attr;
}

/* The statistics of @qp, or all-ones with a failure counted. */
metarocedv_qp_stats stats_of(ibv_qp *qp)
{
	metarocedv_qp_stats st;
	int e;

	std::memset(&st, 0xff, sizeof(st));
	e = metarocedv_query_qp_stats(qp, &st, sizeof(st));
	CHECK(e == 0, "query_qp_stats of QP %#x: %s", qp->qp_num, std::strerror(e));
	return st;
}

/*
 * metarocedv_create_qp() with @dv; checks the transport and number of
 * paths its statistics report (@want_mode, @want_paths; ~0u: unchecked)
 * and destroys it.  0 or the errno of the create.
 */
int try_create(ibv_context *ctx, const res &r, metarocedv_qp_init_attr dv,
	       ibv_qp_type type = IBV_QPT_RC, uint32_t want_mode = ~0u,
	       uint32_t want_paths = ~0u)
{
	ibv_qp_init_attr_ex attr = rc_attr(r);

	attr.qp_type = type;
	errno = 0;
	ibv_qp *qp = metarocedv_create_qp(ctx, &attr, &dv, sizeof(dv));
	if (!qp)
		return errno ? errno : -1;
	metarocedv_qp_stats st = stats_of(qp);
	if (dv.comp_mask & METAROCEDV_QP_INIT_ATTR_TRANSPORT)
		want_mode = dv.transport;
	if (dv.comp_mask & METAROCEDV_QP_INIT_ATTR_NUM_PATHS)
		want_paths = dv.num_paths;
	CHECK(want_mode == ~0u || st.transport == want_mode,
	      "QP created as %s reports %s", mode_name(want_mode),
	      mode_name(st.transport));
	CHECK(want_paths == ~0u || st.num_paths == want_paths,
	      "QP created with %u paths reports %u", want_paths, st.num_paths);
	CHECK(st.comp_mask == 0 && st.tx_packets == 0 && st.rx_packets == 0 &&
		      st.path[0].tx_packets == 0,
	      "a new QP has counts");
	if (ibv_destroy_qp(qp)) {
		std::printf("FAIL: destroy_qp: %s\n", std::strerror(errno));
		failures++;
	}
	return 0;
}

metarocedv_qp_init_attr dv_attr(uint64_t mask, uint32_t transport,
				uint32_t paths, uint32_t cc = 0)
{
	metarocedv_qp_init_attr dv = {};

	dv.comp_mask = mask;
	dv.transport = transport;
	dv.num_paths = paths;
	dv.cc_profile = cc;
	return dv;
}

constexpr uint64_t T = METAROCEDV_QP_INIT_ATTR_TRANSPORT;
constexpr uint64_t P = METAROCEDV_QP_INIT_ATTR_NUM_PATHS;
constexpr uint64_t C = METAROCEDV_QP_INIT_ATTR_CC_PROFILE;
constexpr uint32_t MR = METAROCEDV_TRANSPORT_METAROCE;
constexpr uint32_t R2 = METAROCEDV_TRANSPORT_ROCEV2;

int create(ibv_context *ctx, uint32_t expect)
{
	metarocedv_device_attr dattr = {};
	res r;
	int e;

	CHECK(metarocedv_query_device(ctx, &dattr, sizeof(dattr)) == 0 &&
		      (dattr.caps & METAROCEDV_DEVICE_CAP_QP_STATS),
	      "no QP_STATS cap (caps %#x)", dattr.caps);

	r.pd = ibv_alloc_pd(ctx);
	r.cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
	CHECK(r.pd && r.cq, "pd/cq: %s", std::strerror(errno));
	if (!r.pd || !r.cq)
		return failures;

	/* Each transport with 1, 4 and 16 paths: only MetaRoCE has paths. */
	for (uint32_t paths : { 1u, 4u, 16u }) {
		e = try_create(ctx, r, dv_attr(T | P, MR, paths));
		CHECK(e == 0, "metaroce, %u paths: %s", paths, std::strerror(e));
		e = try_create(ctx, r, dv_attr(T | P, R2, paths));
		CHECK(paths == 1 ? e == 0 : e == EINVAL,
		      "rocev2, %u paths: %s", paths, std::strerror(e));
	}
	for (uint32_t cc : { METAROCEDV_CC_DEFAULT, METAROCEDV_CC_ECN,
			     METAROCEDV_CC_DELAY, METAROCEDV_CC_NONE }) {
		e = try_create(ctx, r, dv_attr(T | C, MR, 0, cc));
		CHECK(e == 0, "metaroce, cc_profile %u: %s", cc, std::strerror(e));
		e = try_create(ctx, r, dv_attr(T | C, R2, 0, cc));
		CHECK(cc == METAROCEDV_CC_DEFAULT ? e == 0 : e == EINVAL,
		      "rocev2, cc_profile %u: %s", cc, std::strerror(e));
	}
	e = try_create(ctx, r, dv_attr(0, 0, 0), IBV_QPT_RC, expect,
		       expect == MR ? dattr.default_paths : 1);
	CHECK(e == 0, "no dv attribute: %s", std::strerror(e));

	/* The refusals. */
	struct bad {
		const char *what;
		metarocedv_qp_init_attr dv;
		ibv_qp_type type;
	};
	metarocedv_qp_init_attr reserved = dv_attr(T, MR, 0);
	reserved.reserved = 1;
	const bad bads[] = {
		{ "num_paths 0", dv_attr(T | P, MR, 0), IBV_QPT_RC },
		{ "num_paths 17", dv_attr(T | P, MR, METAROCEDV_MAX_PATHS + 1),
		  IBV_QPT_RC },
		{ "unknown comp_mask bit", dv_attr(T | (C << 1), MR, 0), IBV_QPT_RC },
		{ "non-zero reserved", reserved, IBV_QPT_RC },
		{ "transport 2", dv_attr(T, 2, 0), IBV_QPT_RC },
		{ "cc_profile 4", dv_attr(C, 0, 0, 4), IBV_QPT_RC },
		{ "UD qp_type", dv_attr(0, 0, 0), IBV_QPT_UD },
		{ "UD qp_type with paths", dv_attr(P, 0, 2), IBV_QPT_UD },
	};
	for (const bad &b : bads) {
		e = try_create(ctx, r, b.dv, b.type);
		CHECK(e == EINVAL, "%s: %s, expected EINVAL", b.what,
		      e ? std::strerror(e) : "created");
	}

	/*
	 * Precedence, seen through the mode's rules: without an explicit
	 * transport the QP gets @expect (environment, else device default),
	 * so 4 paths are refused exactly when that is RoCEv2; an explicit
	 * transport wins over both.
	 */
	e = try_create(ctx, r, dv_attr(P, 0, 4), IBV_QPT_RC, expect);
	CHECK(expect == R2 ? e == EINVAL : e == 0,
	      "4 paths without a transport (expected mode %s): %s",
	      mode_name(expect), e ? std::strerror(e) : "created");
	e = try_create(ctx, r, dv_attr(T | P, MR, 4));
	CHECK(e == 0, "explicit metaroce, 4 paths (over %s): %s",
	      mode_name(expect), std::strerror(e));
	e = try_create(ctx, r, dv_attr(T | P, R2, 1));
	CHECK(e == 0, "explicit rocev2, 1 path (over %s): %s",
	      mode_name(expect), std::strerror(e));

	/* Statistics: RC only. */
	ibv_qp_init_attr_ex ud = rc_attr(r);
	ud.qp_type = IBV_QPT_UD;
	if (ibv_qp *qp = ibv_create_qp_ex(ctx, &ud)) {
		metarocedv_qp_stats st;
		CHECK(metarocedv_query_qp_stats(qp, &st, sizeof(st)) == EOPNOTSUPP,
		      "stats of a UD QP");
		CHECK(ibv_destroy_qp(qp) == 0, "destroy UD QP");
	} else {
		CHECK(false, "create UD QP: %s", std::strerror(errno));
	}

	CHECK(ibv_destroy_cq(r.cq) == 0, "destroy_cq");
	CHECK(ibv_dealloc_pd(r.pd) == 0, "dealloc_pd");
	return failures;
}

/* One end of the transfer. */
struct side {
	ibv_context *ctx = nullptr;
	res r;
	ibv_qp *qp = nullptr;
	ibv_mr *mr = nullptr;
	std::vector<uint8_t> buf;
	ibv_gid gid = {};
	ibv_mtu mtu = IBV_MTU_1024;
};

constexpr size_t msg_bytes = 64 << 10;
size_t xfer_bytes = 1 << 20;	/* --kib */

bool setup(side &s, const std::string &dev, int gid_idx, uint32_t mode,
	   uint32_t paths)
{
	ibv_port_attr port = {};

	s.ctx = open_by_name(dev);
	CHECK(s.ctx, "open %s: %s", dev.c_str(), std::strerror(errno));
	if (!s.ctx)
		return false;
	CHECK(ibv_query_port(s.ctx, 1, &port) == 0, "query_port");
	CHECK(ibv_query_gid(s.ctx, 1, gid_idx, &s.gid) == 0, "query_gid");
	s.mtu = port.active_mtu;
	s.buf.assign(xfer_bytes, 0);
	s.r.pd = ibv_alloc_pd(s.ctx);
	s.r.cq = ibv_create_cq(s.ctx, 64, nullptr, nullptr, 0);
	CHECK(s.r.pd && s.r.cq, "pd/cq: %s", std::strerror(errno));
	if (!s.r.pd || !s.r.cq)
		return false;
	s.mr = ibv_reg_mr(s.r.pd, s.buf.data(), s.buf.size(),
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(s.mr, "reg_mr: %s", std::strerror(errno));
	ibv_qp_init_attr_ex attr = rc_attr(s.r);
	attr.sq_sig_all = 1;
	metarocedv_qp_init_attr dv = dv_attr(T | P, mode, paths);
	s.qp = metarocedv_create_qp(s.ctx, &attr, &dv, sizeof(dv));
	CHECK(s.qp, "metarocedv_create_qp(%s, %u paths): %s", mode_name(mode),
	      paths, std::strerror(errno));
	if (!s.qp || !s.mr)
		return false;
	ibv_qp_attr a = {};
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
	      "INIT: %s", std::strerror(errno));
	return true;
}

/* The first PSN of both directions of the transfer. */
constexpr uint32_t start_psn = 0x200;

void connect(side &s, const side &peer, int gid_idx)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = s.mtu < peer.mtu ? s.mtu : peer.mtu;
	a.dest_qp_num = peer.qp->qp_num;
	a.rq_psn = start_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer.gid;
	a.ah_attr.grh.sgid_index = gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	CHECK(ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_MIN_RNR_TIMER) == 0,
	      "RTR: %s", std::strerror(errno));
	a = {};
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = start_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	CHECK(ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					      IBV_QP_RNR_RETRY |
					      IBV_QP_MAX_QP_RD_ATOMIC) == 0,
	      "RTS: %s", std::strerror(errno));
}

/* xfer_bytes of RDMA WRITEs from @a to @b, every completion checked. */
void write_all(side &a, side &b)
{
	for (size_t i = 0; i < xfer_bytes; i++)
		a.buf[i] = uint8_t(i * 7 + (i >> 12));
	const size_t n = xfer_bytes / msg_bytes;
	size_t posted = 0, done = 0;
	/* Only bounds a hung transfer (the caller's timeout is the backstop). */
	for (long spins = 0; done < n && spins < 200000000L; spins++) {
		while (posted < n && posted - done < 8) {
			ibv_sge sge = {};
			sge.addr = uintptr_t(a.buf.data() + posted * msg_bytes);
			sge.length = msg_bytes;
			sge.lkey = a.mr->lkey;
			ibv_send_wr wr = {}, *bad = nullptr;
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_RDMA_WRITE;
			wr.wr.rdma.remote_addr = uintptr_t(b.buf.data() + posted * msg_bytes);
			wr.wr.rdma.rkey = b.mr->rkey;
			int e = ibv_post_send(a.qp, &wr, &bad);
			CHECK(e == 0, "post_send: %s", std::strerror(e));
			if (e)
				return;
			posted++;
		}
		ibv_wc wc;
		int got = ibv_poll_cq(a.r.cq, 1, &wc);
		if (got < 0 || (got == 1 && wc.status != IBV_WC_SUCCESS)) {
			CHECK(false, "completion: %s",
			      got < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
			return;
		}
		done += got;
	}
	CHECK(done == n, "%zu of %zu WRITEs completed", done, n);
	CHECK(std::memcmp(a.buf.data(), b.buf.data(), xfer_bytes) == 0,
	      "data arrived corrupted");
}

void print_stats(const char *who, const metarocedv_qp_stats &st)
{
	std::printf("%s: %s, %u paths: tx %llu (retransmits %llu) rx %llu dup %llu ooo %llu sacks sent %llu received %llu path failures %llu recoveries %llu\n",
		    who, mode_name(st.transport), st.num_paths,
		    (unsigned long long)st.tx_packets,
		    (unsigned long long)st.retransmits,
		    (unsigned long long)st.rx_packets,
		    (unsigned long long)st.rx_duplicates,
		    (unsigned long long)st.rx_out_of_order,
		    (unsigned long long)st.sacks_sent,
		    (unsigned long long)st.sacks_received,
		    (unsigned long long)st.path_failures,
		    (unsigned long long)st.path_recoveries);
	for (uint32_t i = 0; i < st.num_paths && i < METAROCEDV_MAX_PATHS; i++) {
		const metarocedv_path_stats &p = st.path[i];
		std::printf("  path %2u plane %u state %u: tx %llu (retransmits %llu) rx %llu lost %llu timeouts %llu srtt %llu ns cwnd %u\n",
			    i, p.plane, p.state, (unsigned long long)p.tx_packets,
			    (unsigned long long)p.retransmits,
			    (unsigned long long)p.rx_packets,
			    (unsigned long long)p.lost,
			    (unsigned long long)p.timeouts,
			    (unsigned long long)p.srtt_ns, p.cwnd);
	}
}

/*
 * Packets on exactly the first @paths paths.  A path's rx counts the data
 * packets that arrived on it at the target, and at the writer the ACKs that
 * echoed it.  An ACK echoes the path of the packet that triggered it, one
 * ACK covers several packets, so a writer's path can go unechoed (one of 16
 * in a lossy run did): the writer must have ACKs on some path, not on each.
 */
void check_paths(const char *who, const metarocedv_qp_stats &st,
		 uint32_t paths, bool sender)
{
	uint64_t tx = 0, retrans = 0, rx = 0;

	CHECK(st.num_paths == paths, "%s: %u paths, expected %u", who,
	      st.num_paths, paths);
	for (uint32_t i = 0; i < METAROCEDV_MAX_PATHS; i++) {
		const metarocedv_path_stats &p = st.path[i];
		tx += p.tx_packets;
		retrans += p.retransmits;
		rx += p.rx_packets;
		if (i < paths) {
			CHECK(sender || p.rx_packets > 0,
			      "%s: path %u received nothing", who, i);
			CHECK(!sender || p.tx_packets > 0, "%s: path %u sent nothing",
			      who, i);
		} else {
			CHECK(!p.tx_packets && !p.rx_packets && !p.retransmits &&
				      !p.cwnd && !p.srtt_ns,
			      "%s: path %u past num_paths has counts", who, i);
		}
	}
	CHECK(rx > 0, "%s: no path received anything", who);
	CHECK(tx == st.tx_packets && retrans == st.retransmits,
	      "%s: paths add up to tx %llu / retransmits %llu, the QP says %llu / %llu",
	      who, (unsigned long long)tx, (unsigned long long)retrans,
	      (unsigned long long)st.tx_packets,
	      (unsigned long long)st.retransmits);
}

int transfer(const std::string &dev_a, const std::string &dev_b, int gid_idx,
	     uint32_t mode, uint32_t paths, bool lossy)
{
	side a, b;
	const uint32_t want_paths = mode == R2 ? 1 : paths;

	if (!setup(a, dev_a, gid_idx, mode, paths) ||
	    !setup(b, dev_b, gid_idx, mode, paths))
		return failures;
	connect(a, b, gid_idx);
	connect(b, a, gid_idx);
	write_all(a, b);
	/* What a capture of the transfer must show (t-kernel-dissector.sh). */
	std::printf("A (writer): qpn %#x psn %#x; B (target): qpn %#x psn %#x\n",
		    a.qp->qp_num, start_psn, b.qp->qp_num, start_psn);

	metarocedv_qp_stats sa = stats_of(a.qp), sb = stats_of(b.qp);
	print_stats("A (writer)", sa);
	print_stats("B (target)", sb);
	CHECK(sa.transport == mode && sb.transport == mode, "transport %s/%s",
	      mode_name(sa.transport), mode_name(sb.transport));
	const uint64_t pkts = xfer_bytes / (128u << a.mtu); /* IBV_MTU_256 = 1 */
	CHECK(sa.tx_packets >= pkts, "A sent %llu data packets, the data needs %llu",
	      (unsigned long long)sa.tx_packets, (unsigned long long)pkts);
	CHECK(sb.rx_packets == pkts, "B accepted %llu data packets, expected %llu",
	      (unsigned long long)sb.rx_packets, (unsigned long long)pkts);
	check_paths("A", sa, want_paths, true);
	check_paths("B", sb, want_paths, false);
	if (lossy) {
		CHECK(sa.retransmits > 0, "A retransmitted nothing over a lossy link");
		if (mode == MR)
			CHECK(sb.sacks_sent > 0 && sa.sacks_received > 0,
			      "no SACKs over a lossy link (sent %llu, received %llu)",
			      (unsigned long long)sb.sacks_sent,
			      (unsigned long long)sa.sacks_received);
	} else {
		CHECK(sa.retransmits == 0, "retransmits over a lossless link");
	}

	/* inlen: an older, shorter structure; a newer, longer one. */
	metarocedv_qp_stats shorter;
	const uint32_t to_paths = offsetof(metarocedv_qp_stats, path);
	std::memset(&shorter, 0xa5, sizeof(shorter));
	CHECK(metarocedv_query_qp_stats(a.qp, &shorter, to_paths) == 0,
	      "stats, inlen %u", to_paths);
	CHECK(shorter.num_paths == want_paths &&
		      shorter.path[0].tx_packets == 0xa5a5a5a5a5a5a5a5ull,
	      "short inlen: wrote past it or not up to it");
	struct {
		metarocedv_qp_stats st;
		uint64_t newer[2];
	} longer;
	std::memset(&longer, 0xa5, sizeof(longer));
	CHECK(metarocedv_query_qp_stats(a.qp, &longer.st, sizeof(longer)) == 0,
	      "stats, long inlen");
	CHECK(longer.st.num_paths == want_paths && !longer.newer[0] &&
		      !longer.newer[1],
	      "long inlen: tail not zeroed");
	CHECK(metarocedv_query_qp_stats(a.qp, &shorter,
					offsetof(metarocedv_qp_stats, num_paths)) ==
		      EINVAL,
	      "stats, inlen short of num_paths");

	for (side *s : { &a, &b }) {
		CHECK(ibv_destroy_qp(s->qp) == 0, "destroy_qp");
		CHECK(ibv_dereg_mr(s->mr) == 0, "dereg_mr");
		CHECK(ibv_destroy_cq(s->r.cq) == 0, "destroy_cq");
		CHECK(ibv_dealloc_pd(s->r.pd) == 0, "dealloc_pd");
		ibv_close_device(s->ctx);
	}
	return failures;
}

[[noreturn]] void usage()
{
	std::fprintf(stderr,
		     "usage: metaroce_dv_test query DEV --planes N --default MODE --window W --paths P [--rocev2]\n"
		     "       metaroce_dv_test create DEV --expect MODE\n"
		     "       metaroce_dv_test transfer DEV_A DEV_B --gid IDX --paths N [--transport MODE] [--lossy] [--kib K]\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const std::string cmd = argv[1], dev = argv[2];
	std::string dev_b;
	uint32_t planes = 0, mode = MR, paths = 0, window = 0;
	int gid = -1;
	bool rocev2 = false, have_mode = false, lossy = false;
	int i = 3;

	if (cmd == "transfer") {
		if (argc < 4)
			usage();
		dev_b = argv[i++];
	}
	for (; i < argc; i++) {
		const std::string_view a = argv[i];
		if (a == "--rocev2") {
			rocev2 = true;
		} else if (a == "--lossy") {
			lossy = true;
		} else if (i + 1 < argc && a == "--window") {
			window = std::strtoul(argv[++i], nullptr, 0);
		} else if (i + 1 < argc && a == "--planes") {
			planes = std::strtoul(argv[++i], nullptr, 0);
		} else if (i + 1 < argc && a == "--paths") {
			paths = std::strtoul(argv[++i], nullptr, 0);
		} else if (i + 1 < argc && a == "--kib") {
			xfer_bytes = std::strtoul(argv[++i], nullptr, 0) << 10;
			if (!xfer_bytes || xfer_bytes % msg_bytes)
				usage();
		} else if (i + 1 < argc && a == "--gid") {
			gid = std::atoi(argv[++i]);
		} else if (i + 1 < argc &&
			   (a == "--default" || a == "--expect" || a == "--transport")) {
			mode = parse_mode(argv[++i]);
			have_mode = true;
		} else {
			usage();
		}
	}
	if (cmd == "transfer") {
		if (gid < 0 || !paths)
			usage();
		transfer(dev, dev_b, gid, mode, paths, lossy);
		std::printf("%s: metaroce_dv_test transfer %s, %u paths%s: %d failure(s)\n",
			    failures ? "FAIL" : "PASS", mode_name(mode), paths,
			    lossy ? ", lossy" : "", failures);
		return failures ? 1 : 0;
	}
	if (!have_mode || (cmd == "query" && (!window || !paths)))
		usage();
	ibv_context *ctx = open_by_name(dev);
	if (!ctx) {
		std::printf("FAIL: open %s: %s\n", dev.c_str(), std::strerror(errno));
		return 1;
	}
	CHECK(metarocedv_is_supported(ctx->device) == 1, "%s not supported",
	      dev.c_str());
	if (cmd == "query")
		query(ctx, planes, mode, window, paths, rocev2);
	else if (cmd == "create")
		create(ctx, mode);
	else
		usage();
	ibv_close_device(ctx);
	std::printf("%s: metaroce_dv_test %s %s: %d failure(s)\n",
		    failures ? "FAIL" : "PASS", cmd.c_str(), dev.c_str(), failures);
	return failures ? 1 : 0;
}
