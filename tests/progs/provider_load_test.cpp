// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host test of the provider's registration and device matching, without a
 * kernel: the provider is dlopen()ed the way libibverbs does it, and this
 * program stands in for libibverbs' verbs_register_driver_34 (exported from
 * the executable at version IBVERBS_PRIVATE_34, see provider_load_test.map,
 * so the dynamic linker binds the provider's reference to it).  match_device
 * is then run against fake sysfs directories, and the direct-verbs entry
 * points (metarocedv.h) against fake contexts: every check of inlen,
 * comp_mask and values that happens before a kernel command.
 *
 *   provider_load_test PATH/libmetaroce-rdmav34.so
 */
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

} // namespace

extern "C" __attribute__((visibility("default"))) void
verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	registrations++;
	registered = ops;
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
		ops->uninit_device(vdev);
	}

	dlclose(h);
	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
