// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host test of the provider's registration and device matching, without a
 * kernel: the provider is dlopen()ed the way libibverbs does it, and this
 * program stands in for libibverbs' verbs_register_driver_34 (exported from
 * the executable at version IBVERBS_PRIVATE_34, see provider_load_test.map,
 * so the dynamic linker binds the provider's reference to it).  match_device
 * is then run against fake sysfs directories, and the direct-verbs entry
 * points (metarocedv.h) against fake contexts: every check of inlen,
 * comp_mask and values that happens before a kernel command.  With
 * stand-ins for libibverbs' context and QP commands, alloc_context()
 * gives a context whose create_qp_ex is checked for its send_ops_flags
 * validation, and whose ibv_wr_* batches are checked as they reach
 * POST_SEND.
 *
 *   provider_load_test PATH/libmetaroce-rdmav34.so
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <string>

#include <dlfcn.h>
#include <unistd.h>

#include <rdma/metaroce-abi.h>

#include "metarocedv.h"
#include "verbs_provider_abi.h"
#include "check.h"

namespace {

int failures;
int registrations;
const verbs_device_ops *registered;


bool write_file(const std::string &path, const char *content)
{
	FILE *f = std::fopen(path.c_str(), "w");

	if (!f)
		return false;
	std::fputs(content, f);
	return std::fclose(f) == 0;
}

/* match_device() on a fake <ibdev_path> whose attribute holds @content. */
bool match_with(const std::string &dir, const char *content)
{
	static verbs_sysfs_dev sysfs_dev; /* 992 bytes: keep off the stack */
	std::string attr = dir + "/" METAROCE_SYSFS_ABI_VERSION_ATTR;

	std::memset(&sysfs_dev, 0, sizeof(sysfs_dev));
	std::snprintf(sysfs_dev.ibdev_path, sizeof(sysfs_dev.ibdev_path), "%s",
		      dir.c_str());
	std::snprintf(sysfs_dev.ibdev_name, sizeof(sysfs_dev.ibdev_name), "fake0");
	unlink(attr.c_str());
	if (content && !write_file(attr, content)) {
		std::printf("FAIL: cannot write %s\n", attr.c_str());
		failures++;
		return false;
	}
	return registered->match_device(&sysfs_dev);
}

template <typename F> F *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		std::printf("FAIL: %s not exported: %s\n", name, dlerror());
		failures++;
	}
	return reinterpret_cast<F *>(p);
}

/* metarocedv_create_qp() failed with @err. */
bool create_fails(decltype(metarocedv_create_qp) *create, ibv_context *ctx,
		  ibv_qp_init_attr_ex *attr, void *dv, uint32_t inlen, int err)
{
	errno = 0;
	ibv_qp *qp = create(ctx, attr, static_cast<metarocedv_qp_init_attr *>(dv),
			    inlen);
	if (qp || errno != err)
		std::printf("  create_qp: %p errno %d (%s), expected NULL and %d\n",
			    static_cast<void *>(qp), errno, std::strerror(errno),
			    err);
	return !qp && errno == err;
}

/*
 * The direct verbs on fake devices.  A request that passes the library's
 * checks is told apart from one refused by them by an ibv attribute the
 * provider does not support (IBV_QP_INIT_ATTR_CREATE_FLAGS): it then
 * fails with EOPNOTSUPP just before the kernel would be asked.
 */
void check_dv(void *h, verbs_device *ours)
{
	auto *is_supported = sym<decltype(metarocedv_is_supported)>(
		h, "metarocedv_is_supported");
	auto *query_device = sym<decltype(metarocedv_query_device)>(
		h, "metarocedv_query_device");
	auto *create = sym<decltype(metarocedv_create_qp)>(
		h, "metarocedv_create_qp");
	auto *query_stats = sym<decltype(metarocedv_query_qp_stats)>(
		h, "metarocedv_query_qp_stats");
	if (!is_supported || !query_device || !create || !query_stats)
		return;

	/* Another provider's device (as libibverbs lists rxe0 beside mr0). */
	static const verbs_device_ops rxe_ops = { .name = "rxe" };
	static verbs_device other;
	other.ops = &rxe_ops;
	ibv_context ctx = {}, other_ctx = {};
	ctx.device = &ours->device;
	other_ctx.device = &other.device;

	CHECK(is_supported(&ours->device) == 1, "metaroce device not supported");
	CHECK(is_supported(&other.device) == 0, "rxe device supported");
	CHECK(is_supported(nullptr) == 0, "NULL device supported");

	metarocedv_device_attr dattr;
	CHECK(query_device(&other_ctx, &dattr, sizeof(dattr)) == EOPNOTSUPP,
	      "query_device on another provider's device");
	CHECK(query_device(&ctx, nullptr, sizeof(dattr)) == EINVAL,
	      "query_device with NULL attr");
	CHECK(query_device(&ctx, &dattr, sizeof(dattr.comp_mask) - 1) == EINVAL,
	      "query_device with inlen short of comp_mask");

	ibv_pd pd = {};
	ibv_qp_init_attr_ex attr = {};
	attr.qp_type = IBV_QPT_RC;
	attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	attr.pd = &pd;
	metarocedv_qp_init_attr dv = {};
	const uint32_t full = sizeof(dv);

	/* Passes the library: stopped by the unsupported create flags. */
	CHECK(create_fails(create, &ctx, &attr, &dv, full, EOPNOTSUPP),
	      "empty dv attributes");
	dv.comp_mask = METAROCEDV_QP_INIT_ATTR_TRANSPORT |
		       METAROCEDV_QP_INIT_ATTR_NUM_PATHS |
		       METAROCEDV_QP_INIT_ATTR_CC_PROFILE;
	dv.transport = METAROCEDV_TRANSPORT_METAROCE;
	dv.num_paths = METAROCEDV_MAX_PATHS;
	dv.cc_profile = METAROCEDV_CC_NONE;
	CHECK(create_fails(create, &ctx, &attr, &dv, full, EOPNOTSUPP),
	      "every field valid");
	dv.num_paths = 1;
	CHECK(create_fails(create, &ctx, &attr, &dv, full, EOPNOTSUPP),
	      "one path");

	/* A caller's longer structure: zero tail accepted, other refused. */
	struct {
		metarocedv_qp_init_attr dv;
		uint64_t newer[2];
	} longer = {};
	longer.dv = dv;
	CHECK(create_fails(create, &ctx, &attr, &longer, sizeof(longer), EOPNOTSUPP),
	      "longer structure, zero tail");
	longer.newer[1] = 1;
	CHECK(create_fails(create, &ctx, &attr, &longer, sizeof(longer), EINVAL),
	      "longer structure, non-zero tail");

	/* An older, shorter structure: its fields only. */
	metarocedv_qp_init_attr shorter = {};
	shorter.comp_mask = METAROCEDV_QP_INIT_ATTR_TRANSPORT;
	shorter.transport = METAROCEDV_TRANSPORT_ROCEV2;
	shorter.reserved = 1; /* past inlen: not read */
	const uint32_t to_transport = offsetof(metarocedv_qp_init_attr, num_paths);
	CHECK(create_fails(create, &ctx, &attr, &shorter, to_transport, EOPNOTSUPP),
	      "transport only, inlen up to it");
	shorter.comp_mask |= METAROCEDV_QP_INIT_ATTR_NUM_PATHS;
	shorter.num_paths = 2;
	CHECK(create_fails(create, &ctx, &attr, &shorter, to_transport, EINVAL),
	      "comp_mask names a field past inlen");
	CHECK(create_fails(create, &ctx, &attr, &shorter, sizeof(uint64_t) - 1, EINVAL),
	      "inlen short of comp_mask");
	CHECK(create_fails(create, &ctx, &attr, nullptr, full, EINVAL),
	      "NULL dv attributes");

	/*
	 * Each bad value.  The create flags stay: a value the library let
	 * through fails with EOPNOTSUPP instead of reaching for a kernel.
	 */
	struct bad {
		const char *what;
		metarocedv_qp_init_attr dv;
	};
	const bad bads[] = {
		{ "unknown comp_mask bit", { .comp_mask = 1u << 3 } },
		{ "comp_mask bit 63", { .comp_mask = 1ull << 63 } },
		{ "non-zero reserved", { .reserved = 1 } },
		{ "num_paths 0",
		  { .comp_mask = METAROCEDV_QP_INIT_ATTR_NUM_PATHS, .num_paths = 0 } },
		{ "num_paths 17",
		  { .comp_mask = METAROCEDV_QP_INIT_ATTR_NUM_PATHS,
		    .num_paths = METAROCEDV_MAX_PATHS + 1 } },
		{ "transport 2",
		  { .comp_mask = METAROCEDV_QP_INIT_ATTR_TRANSPORT, .transport = 2 } },
		{ "cc_profile 4",
		  { .comp_mask = METAROCEDV_QP_INIT_ATTR_CC_PROFILE, .cc_profile = 4 } },
	};
	for (const bad &b : bads) {
		metarocedv_qp_init_attr copy = b.dv;
		CHECK(create_fails(create, &ctx, &attr, &copy, full, EINVAL), "%s",
		      b.what);
	}
	dv = {};
	attr.qp_type = IBV_QPT_UD;
	CHECK(create_fails(create, &ctx, &attr, &dv, full, EINVAL), "UD QP");
	attr.qp_type = IBV_QPT_RC;
	attr.comp_mask = IBV_QP_INIT_ATTR_CREATE_FLAGS;
	CHECK(create_fails(create, &ctx, &attr, &dv, full, EINVAL), "no PD");
	attr.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	CHECK(create_fails(create, &other_ctx, &attr, &dv, full, EOPNOTSUPP),
	      "another provider's device");

	/* Statistics: the QP's device and type first, then inlen. */
	metarocedv_qp_stats stats;
	ibv_qp qp = {};
	qp.context = &ctx;
	qp.qp_type = IBV_QPT_UD;
	CHECK(query_stats(&qp, &stats, sizeof(stats)) == EOPNOTSUPP, "UD QP stats");
	qp.context = &other_ctx;
	qp.qp_type = IBV_QPT_RC;
	CHECK(query_stats(&qp, &stats, sizeof(stats)) == EOPNOTSUPP,
	      "stats of another provider's QP");
	qp.context = &ctx;
	CHECK(query_stats(&qp, nullptr, sizeof(stats)) == EINVAL, "NULL stats");
	CHECK(query_stats(&qp, &stats, offsetof(metarocedv_qp_stats, num_paths)) ==
		      EINVAL,
	      "stats inlen short of num_paths");
}

/*
 * What the stand-ins for libibverbs' context and QP commands (below)
 * saw and answer.
 */
const verbs_context_ops *set_ops;
int create_calls;
int create_ret;		/* what ibv_cmd_create_qp_ex returns */
struct posted_cmd {
	uint32_t wrs;
	size_t bytes;	/* the POST_SEND command libibverbs would build */
};
posted_cmd posts[16];
int post_calls;
uint64_t posted_ids[2048];
uint32_t posted_total;
uint8_t posted_inline[64];	/* the first inline WR's bytes at post time */
int post_ret;		/* what ibv_cmd_post_send returns */

constexpr uint64_t rc_ops =
	IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
	IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
constexpr uint64_t ud_ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

ibv_qp *create_ex(ibv_context *ctx, ibv_qp_type type, uint32_t comp_mask,
		  uint64_t ops, uint32_t max_wr = 1024)
{
	ibv_pd pd = {};
	ibv_qp_init_attr_ex a = {};

	a.qp_type = type;
	a.comp_mask = IBV_QP_INIT_ATTR_PD | comp_mask;
	a.pd = &pd;
	a.send_ops_flags = ops;
	a.cap.max_send_wr = max_wr;
	a.cap.max_recv_wr = 1;
	a.cap.max_send_sge = 2;
	a.cap.max_inline_data = 64;
	errno = 0;
	return set_ops->create_qp_ex(ctx, &a);
}

/* create_qp_ex refused @ops on @type with EOPNOTSUPP before any command. */
bool refused(ibv_context *ctx, ibv_qp_type type, uint32_t comp_mask,
	     uint64_t ops)
{
	int calls = create_calls;
	ibv_qp *qp = create_ex(ctx, type, comp_mask, ops);
	bool ok = !qp && errno == EOPNOTSUPP && create_calls == calls;

	if (!ok)
		std::printf("  type %d send_ops %#llx: %p errno %d, %d commands\n",
			    type, (unsigned long long)ops,
			    static_cast<void *>(qp), errno,
			    create_calls - calls);
	if (qp)
		set_ops->destroy_qp(qp);
	return ok;
}

bool all_slots_set(const ibv_qp_ex *x)
{
	return x->wr_atomic_cmp_swp && x->wr_atomic_fetch_add && x->wr_bind_mw &&
	       x->wr_local_inv && x->wr_rdma_read && x->wr_rdma_write &&
	       x->wr_rdma_write_imm && x->wr_send && x->wr_send_imm &&
	       x->wr_send_inv && x->wr_send_tso && x->wr_set_ud_addr &&
	       x->wr_set_xrc_srqn && x->wr_set_inline_data &&
	       x->wr_set_inline_data_list && x->wr_set_sge &&
	       x->wr_set_sge_list && x->wr_start && x->wr_complete &&
	       x->wr_abort && x->wr_atomic_write;
}

/*
 * The ibv_wr_* API on a context made by alloc_context() through the
 * stand-ins: create-time validation of send_ops_flags (nothing reaches
 * the kernel command for a refused request), the qp_ex a QP gets, and
 * how wr_complete() splits a batch into POST_SEND commands.
 */
void check_wr(verbs_device *ours)
{
	const verbs_device_ops *ops = registered;
	verbs_context *vctx = ops->alloc_context(&ours->device, -1, nullptr);

	CHECK(vctx && set_ops, "alloc_context through the stand-ins");
	if (!vctx || !set_ops)
		return;
	ibv_context *ctx = &vctx->context;

	/* Opcodes the device lacks, on any type; RDMA and atomics on UD. */
	const uint64_t rc_refused[] = {
		IBV_QP_EX_WITH_LOCAL_INV, IBV_QP_EX_WITH_BIND_MW,
		IBV_QP_EX_WITH_SEND_WITH_INV, IBV_QP_EX_WITH_TSO,
		IBV_QP_EX_WITH_ATOMIC_WRITE, 1ull << 11, 1ull << 13, 1ull << 63,
	};
	for (uint64_t bit : rc_refused) {
		CHECK(refused(ctx, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			      rc_ops | bit),
		      "RC send_ops %#llx accepted", (unsigned long long)bit);
		CHECK(refused(ctx, IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			      ud_ops | bit),
		      "UD send_ops %#llx accepted", (unsigned long long)bit);
	}
	for (uint64_t bit : { IBV_QP_EX_WITH_RDMA_WRITE,
			      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
			      IBV_QP_EX_WITH_RDMA_READ,
			      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
			      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD })
		CHECK(refused(ctx, IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			      ud_ops | bit),
		      "UD with %#llx accepted", (unsigned long long)bit);
	for (ibv_qp_type t : { IBV_QPT_UC, IBV_QPT_XRC_SEND, IBV_QPT_RAW_PACKET,
			       IBV_QPT_DRIVER })
		CHECK(refused(ctx, t, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			      IBV_QP_EX_WITH_SEND),
		      "send_ops on QP type %d accepted", t);
	CHECK(refused(ctx, IBV_QPT_RC,
		      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			      IBV_QP_INIT_ATTR_CREATE_FLAGS,
		      IBV_QP_EX_WITH_SEND),
	      "create flags beside send_ops accepted");

	/* Accepted: each QP gets a full qp_ex, and only with the flag. */
	struct {
		ibv_qp_type type;
		uint32_t comp_mask;
		uint64_t ops;
		bool qp_ex;
	} const accepted[] = {
		{ IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, rc_ops, true },
		{ IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0, true },
		{ IBV_QPT_UD, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ud_ops, true },
		{ IBV_QPT_RC, 0, rc_ops, false }, /* no flag: ops ignored */
	};
	for (const auto &a : accepted) {
		int calls = create_calls;
		ibv_qp *qp = create_ex(ctx, a.type, a.comp_mask, a.ops);
		auto *vqp = reinterpret_cast<verbs_qp *>(qp);

		CHECK(qp && create_calls == calls + 1,
		      "type %d ops %#llx refused: errno %d", a.type,
		      (unsigned long long)a.ops, errno);
		if (!qp)
			continue;
		CHECK(bool(vqp->comp_mask & VERBS_QP_EX) == a.qp_ex,
		      "type %d comp_mask %#x: VERBS_QP_EX %#x", a.type,
		      a.comp_mask, vqp->comp_mask);
		if (a.qp_ex)
			CHECK(all_slots_set(&vqp->qp_ex),
			      "type %d: a NULL op in qp_ex", a.type);
		CHECK(set_ops->destroy_qp(qp) == 0, "destroy_qp");
	}
	/* The kernel's refusal comes back as errno. */
	create_ret = EINVAL;
	CHECK(!create_ex(ctx, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, rc_ops) &&
		      errno == EINVAL,
	      "kernel refusal: errno %d", errno);
	create_ret = 0;

	/*
	 * A batch of 1024 WRITEs of one SGE (72 bytes each in POST_SEND)
	 * does not fit one command of libibverbs (64 KiB - 1): several,
	 * each within it, all WRs in order.
	 */
	ibv_qp *qp = create_ex(ctx, IBV_QPT_RC, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			       rc_ops);
	CHECK(qp, "RC QP for the batch");
	if (!qp)
		return;
	ibv_qp_ex *x = &reinterpret_cast<verbs_qp *>(qp)->qp_ex;
	uint8_t data[64];
	x->wr_start(x);
	for (uint32_t i = 0; i < 1024; i++) {
		x->wr_id = i;
		x->wr_flags = IBV_SEND_SIGNALED;
		x->wr_rdma_write(x, 1, 0x1000 + i);
		x->wr_set_sge(x, 2, uintptr_t(data), sizeof(data));
	}
	post_calls = 0;
	posted_total = 0;
	CHECK(x->wr_complete(x) == 0, "batch of 1024");
	bool fits = post_calls >= 2;
	for (int i = 0; i < post_calls && i < 16; i++)
		fits = fits && posts[i].bytes <= UINT16_MAX;
	bool in_order = posted_total == 1024;
	for (uint32_t i = 0; in_order && i < 1024; i++)
		in_order = posted_ids[i] == i;
	CHECK(fits && in_order, "batch: %d commands (first %zu bytes), %u WRs %s",
	      post_calls, posts[0].bytes, posted_total,
	      in_order ? "in order" : "out of order");

	/* Abort and a latched error post nothing; a command's errno returns. */
	post_calls = 0;
	x->wr_start(x);
	x->wr_send(x);
	x->wr_abort(x);
	x->wr_start(x);
	x->wr_send(x);
	x->wr_set_sge_list(x, 3, nullptr); /* max_send_sge is 2 */
	CHECK(x->wr_complete(x) == EINVAL && post_calls == 0,
	      "abort/latched error: %d commands", post_calls);
	/* Inline data is the setter's copy. */
	std::memset(data, 0x5a, sizeof(data));
	x->wr_start(x);
	x->wr_send(x);
	x->wr_set_inline_data(x, data, sizeof(data));
	std::memset(data, 0, sizeof(data));
	CHECK(x->wr_complete(x) == 0 && post_calls == 1 &&
		      posted_inline[0] == 0x5a && posted_inline[63] == 0x5a,
	      "inline data not copied by the setter");
	post_ret = EAGAIN;
	x->wr_start(x);
	x->wr_send(x);
	CHECK(x->wr_complete(x) == EAGAIN, "POST_SEND's errno not returned");
	post_ret = 0;
	CHECK(set_ops->destroy_qp(qp) == 0, "destroy_qp");
	set_ops->free_context(ctx);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	registrations++;
	registered = ops;
}

/*
 * Stand-ins for the parts of libibverbs' private ABI that check_wr()
 * reaches (exported at IBVERBS_PRIVATE_34 like the one above).
 */
extern "C" __attribute__((visibility("default"))) void *
_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
			      size_t alloc_size,
			      struct verbs_context *context_offset, uint32_t)
{
	auto *p = static_cast<char *>(std::calloc(1, alloc_size));
	auto *v = reinterpret_cast<verbs_context *>(
		p + reinterpret_cast<uintptr_t>(context_offset));

	v->context.device = device;
	v->context.cmd_fd = cmd_fd;
	return p;
}

extern "C" __attribute__((visibility("default"))) int
ibv_cmd_get_context(struct verbs_context *, struct verbs_cmd_get_context *,
		    size_t, struct verbs_resp_get_context *resp, size_t resp_size)
{
	metaroce_alloc_ucontext_resp drv = {};

	drv.abi_version = METAROCE_UVERBS_ABI_VERSION;
	if (resp_size < sizeof(*resp) + sizeof(drv))
		return EINVAL;
	std::memcpy(resp + 1, &drv, sizeof(drv));
	return 0;
}

extern "C" __attribute__((visibility("default"))) void
verbs_set_ops(struct verbs_context *, const struct verbs_context_ops *ops)
{
	set_ops = ops;
}

extern "C" __attribute__((visibility("default"))) void
verbs_uninit_context(struct verbs_context *)
{
}

/* As libibverbs: comp_mask reset, the caps granted as asked. */
extern "C" __attribute__((visibility("default"))) int
ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
		     struct ibv_qp_init_attr_ex *attr,
		     struct verbs_cmd_create_qp *, size_t,
		     struct ib_uverbs_create_qp_resp *, size_t)
{
	create_calls++;
	if (create_ret)
		return create_ret;
	qp->comp_mask = 0;
	qp->qp.context = context;
	qp->qp.qp_type = attr->qp_type;
	return 0;
}

extern "C" __attribute__((visibility("default"))) int
ibv_cmd_destroy_qp(struct ibv_qp *)
{
	return 0;
}

extern "C" __attribute__((visibility("default"))) int
ibv_cmd_post_send(struct ibv_qp *, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad)
{
	posted_cmd c = { 0, sizeof(ib_uverbs_post_send) };

	if (post_ret) {
		*bad = wr;
		return post_ret;
	}
	for (; wr; wr = wr->next) {
		c.wrs++;
		c.bytes += sizeof(ib_uverbs_send_wr) +
			   size_t(wr->num_sge) * sizeof(ib_uverbs_sge);
		if (posted_total < 2048)
			posted_ids[posted_total++] = wr->wr_id;
		if ((wr->send_flags & IBV_SEND_INLINE) && wr->num_sge == 1)
			std::memcpy(posted_inline,
				    reinterpret_cast<void *>(wr->sg_list[0].addr),
				    std::min<size_t>(wr->sg_list[0].length,
						     sizeof(posted_inline)));
	}
	if (post_calls < 16)
		posts[post_calls] = c;
	post_calls++;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: %s PROVIDER.so\n", argv[0]);
		return 2;
	}

	/* libibverbs' load_driver() uses RTLD_NOW: every symbol must resolve. */
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		std::printf("FAIL: dlopen: %s\n", dlerror());
		return 1;
	}
	CHECK(registrations == 1, "constructor registered %d times", registrations);
	if (!registered)
		return 1;

	const verbs_device_ops *ops = registered;
	CHECK(ops->name && std::strcmp(ops->name, "metaroce") == 0, "name %s",
	      ops->name ? ops->name : "(null)");
	CHECK(ops->match_min_abi_version == METAROCE_UVERBS_ABI_VERSION &&
		      ops->match_max_abi_version == METAROCE_UVERBS_ABI_VERSION,
	      "uverbs ABI range %u..%u", ops->match_min_abi_version,
	      ops->match_max_abi_version);
	/*
	 * Empty (the driver id is RDMA_DRIVER_UNKNOWN) but present: libibverbs
	 * v44 walks it without a NULL check once any device has a driver id.
	 */
	CHECK(ops->match_table && ops->match_table[0].kind == VERBS_MATCH_SENTINEL,
	      "match table must be an empty, sentinel-terminated table");
	CHECK(ops->match_device && ops->alloc_context && ops->alloc_device &&
		      ops->uninit_device,
	      "missing device op");
	CHECK(!ops->import_context, "import_context is not implemented");
	if (failures)
		return 1;

	char tmpl[] = "/tmp/metaroce-sysfs.XXXXXX";
	if (!mkdtemp(tmpl)) {
		std::printf("FAIL: mkdtemp: %s\n", std::strerror(errno));
		return 1;
	}
	std::string dir = tmpl;
	char good[16];
	char newer[16];
	std::snprintf(good, sizeof(good), "%u\n", METAROCE_UVERBS_ABI_VERSION);
	std::snprintf(newer, sizeof(newer), "%u\n", METAROCE_UVERBS_ABI_VERSION + 1);

	CHECK(match_with(dir, good), "own ABI version not matched");
	good[std::strlen(good) - 1] = '\0';
	CHECK(match_with(dir, good), "version without newline not matched");
	CHECK(!match_with(dir, nullptr), "device without the attribute matched");
	CHECK(!match_with(dir, newer), "other ABI version %s matched", newer);
	CHECK(!match_with(dir, ""), "empty attribute matched");
	CHECK(!match_with(dir, "\n"), "blank attribute matched");
	CHECK(!match_with(dir, "abc\n"), "non-number matched");
	CHECK(!match_with(dir, "1x\n"), "trailing garbage matched");
	CHECK(!match_with(dir, "-1\n"), "negative number matched");
	CHECK(!match_with(dir, "4294967297\n"), "u32 overflow matched");
	CHECK(!match_with(dir, "99999999999999999999\n"), "overlong attribute matched");
	unlink((dir + "/" METAROCE_SYSFS_ABI_VERSION_ATTR).c_str());
	rmdir(dir.c_str());

	/* alloc_device/uninit_device are a pair; libibverbs fills in the rest. */
	static verbs_sysfs_dev sysfs_dev;
	verbs_device *vdev = ops->alloc_device(&sysfs_dev);
	CHECK(vdev, "alloc_device failed");
	if (vdev) {
		CHECK(!vdev->ops && !vdev->sysfs, "alloc_device must zero the device");
		/* What libibverbs' try_driver() does next. */
		vdev->ops = ops;
		check_dv(h, vdev);
		check_wr(vdev);
		ops->uninit_device(vdev);
	}

	dlclose(h);
	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
