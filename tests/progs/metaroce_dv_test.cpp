// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Guest test of the direct verbs (metarocedv.h, libmetaroce.so.1) on real
 * MetaRoCE devices, run by tests/vm/t-kernel-transport.sh:
 *
 *   metaroce_dv_test query DEV --planes N --default MODE [--rocev2]
 *	metarocedv_query_device() against what the caller read from sysfs
 *	(default_transport) and metaroce-plane (the planes): caps, planes,
 *	paths, window; inlen shorter and longer than the structure; a
 *	non-metaroce device (if one is listed) gives EOPNOTSUPP.
 *
 *   metaroce_dv_test create DEV --expect MODE
 *	metarocedv_create_qp() with each transport, num_paths 1/4/16 and
 *	each congestion profile; the refusals (num_paths 0 and 17, unknown
 *	comp_mask bit, non-zero reserved, UD qp_type, paths or a profile on
 *	a RoCEv2 QP) give NULL and EINVAL; MODE is the wire mode a QP gets
 *	without an explicit transport (from METAROCE_TRANSPORT or the
 *	device default), which checks the precedence: explicit transport >
 *	environment > device default.
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

namespace {

int failures;

ibv_context *open_by_name(const std::string &name)
{
	int num = 0;
	ibv_device **list = ibv_get_device_list(&num);
	ibv_context *ctx = nullptr;

	if (!list)
		return nullptr;
	for (int i = 0; i < num; i++)
		if (name == ibv_get_device_name(list[i]))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

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

int query(ibv_context *ctx, uint32_t planes, uint32_t def, bool rocev2)
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
	CHECK(a.default_paths >= 1 && a.default_paths <= a.max_paths,
	      "default_paths %u", a.default_paths);
	CHECK(a.max_window >= 1, "max_window %u", a.max_window);
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

/* metarocedv_create_qp() with @dv; destroys the QP it got.  0 or errno. */
int try_create(ibv_context *ctx, const res &r, metarocedv_qp_init_attr dv,
	       ibv_qp_type type = IBV_QPT_RC)
{
	ibv_qp_init_attr_ex attr = rc_attr(r);

	attr.qp_type = type;
	errno = 0;
	ibv_qp *qp = metarocedv_create_qp(ctx, &attr, &dv, sizeof(dv));
	if (!qp)
		return errno ? errno : -1;
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
	res r;
	int e;

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
	e = try_create(ctx, r, dv_attr(0, 0, 0));
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
	e = try_create(ctx, r, dv_attr(P, 0, 4));
	CHECK(expect == R2 ? e == EINVAL : e == 0,
	      "4 paths without a transport (expected mode %s): %s",
	      mode_name(expect), e ? std::strerror(e) : "created");
	e = try_create(ctx, r, dv_attr(T | P, MR, 4));
	CHECK(e == 0, "explicit metaroce, 4 paths (over %s): %s",
	      mode_name(expect), std::strerror(e));
	e = try_create(ctx, r, dv_attr(T | P, R2, 1));
	CHECK(e == 0, "explicit rocev2, 1 path (over %s): %s",
	      mode_name(expect), std::strerror(e));

	CHECK(ibv_destroy_cq(r.cq) == 0, "destroy_cq");
	CHECK(ibv_dealloc_pd(r.pd) == 0, "dealloc_pd");
	return failures;
}

[[noreturn]] void usage()
{
	std::fprintf(stderr,
		     "usage: metaroce_dv_test query DEV --planes N --default MODE [--rocev2]\n"
		     "       metaroce_dv_test create DEV --expect MODE\n");
	std::exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3)
		usage();
	const std::string cmd = argv[1], dev = argv[2];
	uint32_t planes = 0, mode = 0;
	bool rocev2 = false, have_mode = false;

	for (int i = 3; i < argc; i++) {
		const std::string_view a = argv[i];
		if (a == "--rocev2") {
			rocev2 = true;
		} else if (i + 1 < argc && a == "--planes") {
			planes = std::strtoul(argv[++i], nullptr, 0);
		} else if (i + 1 < argc && (a == "--default" || a == "--expect")) {
			mode = parse_mode(argv[++i]);
			have_mode = true;
		} else {
			usage();
		}
	}
	if (!have_mode)
		usage();
	ibv_context *ctx = open_by_name(dev);
	if (!ctx) {
		std::printf("FAIL: open %s: %s\n", dev.c_str(), std::strerror(errno));
		return 1;
	}
	CHECK(metarocedv_is_supported(ctx->device) == 1, "%s not supported",
	      dev.c_str());
	if (cmd == "query")
		query(ctx, planes, mode, rocev2);
	else if (cmd == "create")
		create(ctx, mode);
	else
		usage();
	ibv_close_device(ctx);
	std::printf("%s: metaroce_dv_test %s %s: %d failure(s)\n",
		    failures ? "FAIL" : "PASS", cmd.c_str(), dev.c_str(), failures);
	return failures ? 1 : 0;
}
