// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Host test of the provider's registration and device matching, without a
 * kernel: the provider is dlopen()ed the way libibverbs does it, and this
 * program stands in for libibverbs' verbs_register_driver_34 (exported from
 * the executable at version IBVERBS_PRIVATE_34, see provider_load_test.map,
 * so the dynamic linker binds the provider's reference to it).  match_device
 * is then run against fake sysfs directories.
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
		ops->uninit_device(vdev);
	}

	dlclose(h);
	std::printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
