// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE libibverbs provider: device matching, device and context
 * lifetime, registration with libibverbs.
 *
 * Every function here is called from C code in libibverbs; all are noexcept
 * and the library is built with -fno-exceptions, so no exception can unwind
 * into C frames.
 */
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "metaroce.h"

namespace metaroce {
namespace {

/*
 * Parse the content of <ibdev>/metaroce_abi_version: a decimal number and a
 * newline (see include/uapi/rdma/metaroce-abi.h).  Anything else is not a
 * device of ours.
 */
bool parse_abi_version(std::string_view text, uint32_t *version) noexcept
{
	if (!text.empty() && text.back() == '\n')
		text.remove_suffix(1);
	if (text.empty())
		return false;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
					 *version);
	return ec == std::errc() && end == text.data() + text.size();
}

/*
 * METAROCE_NO_RINGS set to anything but "" or "0": the process keeps the
 * syscall data path even where the kernel offers mapped rings.
 */
bool no_rings() noexcept
{
	const char *v = std::getenv("METAROCE_NO_RINGS");

	return v && *v && std::strcmp(v, "0") != 0;
}

bool match_device(struct verbs_sysfs_dev *sysfs_dev) noexcept
{
	char buf[16];
	uint32_t version;
	int len;

	/*
	 * The kernel module has no driver id of its own (RDMA_DRIVER_UNKNOWN),
	 * so a match table cannot tell our devices apart; the sysfs attribute
	 * only exists on MetaRoCE devices.
	 */
	len = ibv_read_ibdev_sysfs_file(buf, sizeof(buf), sysfs_dev, "%s",
					METAROCE_SYSFS_ABI_VERSION_ATTR);
	if (len <= 0)
		return false;
	/*
	 * ibv_read_sysfs_file() has NUL-terminated buf and dropped one
	 * trailing newline, or failed if the content did not fit.
	 */
	if (!parse_abi_version(std::string_view(buf, len), &version)) {
		std::fprintf(stderr,
			     "metaroce: %s: unparsable %s '%s', ignoring device\n",
			     sysfs_dev->ibdev_name,
			     METAROCE_SYSFS_ABI_VERSION_ATTR, buf);
		return false;
	}
	if (version != METAROCE_UVERBS_ABI_VERSION) {
		std::fprintf(stderr,
			     "metaroce: %s: kernel ABI %u, provider supports %u, ignoring device\n",
			     sysfs_dev->ibdev_name, version,
			     METAROCE_UVERBS_ABI_VERSION);
		return false;
	}
	return true;
}

struct verbs_device *alloc_device(struct verbs_sysfs_dev *) noexcept
{
	auto *dev = static_cast<device *>(std::calloc(1, sizeof(device)));

	return dev ? &dev->vdev : nullptr;
}

void uninit_device(struct verbs_device *vdev) noexcept
{
	std::free(reinterpret_cast<device *>(vdev));
}

struct verbs_context *alloc_context(struct ibv_device *ibdev, int cmd_fd,
				    void *) noexcept
{
	get_context_cmd cmd = {};
	get_context_resp resp = {};
	context *ctx;
	int ret;

	/* Takes ownership of cmd_fd: closes it on failure. */
	ctx = static_cast<context *>(_verbs_init_and_alloc_context(
		ibdev, cmd_fd, sizeof(*ctx),
		reinterpret_cast<struct verbs_context *>(offsetof(context, ibvctx)),
		RDMA_DRIVER_UNKNOWN));
	if (!ctx)
		return nullptr;

	ret = ibv_cmd_get_context(&ctx->ibvctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		std::fprintf(stderr, "metaroce: %s: GET_CONTEXT failed: %s\n",
			     ibdev->name, std::strerror(ret));
		goto err_free;
	}
	/*
	 * The device matched on the sysfs ABI version; a kernel answering
	 * with another one would be a kernel bug, refuse rather than guess.
	 */
	if (resp.drv.abi_version != METAROCE_UVERBS_ABI_VERSION) {
		std::fprintf(stderr,
			     "metaroce: %s: context ABI %u, expected %u\n",
			     ibdev->name, resp.drv.abi_version,
			     METAROCE_UVERBS_ABI_VERSION);
		ret = EPROTO;
		goto err_free;
	}
	ctx->kernel_abi_version = resp.drv.abi_version;
	ctx->caps = resp.drv.caps;
	ctx->use_caps = ctx->caps;
	if (no_rings())
		ctx->use_caps &= ~uint32_t(METAROCE_UCTX_CAP_CQ_RING |
					  METAROCE_UCTX_CAP_QP_RING);

	verbs_set_ops(&ctx->ibvctx, &context_ops);
	return &ctx->ibvctx;

err_free:
	verbs_uninit_context(&ctx->ibvctx);
	std::free(ctx);
	errno = ret;
	return nullptr;
}

/*
 * Nothing to match by table, but the table must exist: when any device in
 * the system has a driver id (rxe, mlx5, ...), v44's try_drivers() runs
 * match_driver_id() on every provider, and that walks match_table up to its
 * sentinel without a NULL check.
 */
const struct verbs_match_ent match_table[] = {
	{}, /* VERBS_MATCH_SENTINEL */
};

const struct verbs_device_ops device_ops = {
	.name = "metaroce",
	.match_min_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_max_abi_version = METAROCE_UVERBS_ABI_VERSION,
	.match_table = match_table,
	.static_providers = nullptr,
	.match_device = match_device,
	.alloc_context = alloc_context,
	.import_context = nullptr,
	.alloc_device = alloc_device,
	.uninit_device = uninit_device,
};

} // namespace

bool is_metaroce_device(struct ibv_device *ibdev) noexcept
{
	/* Every device libibverbs lists is a verbs_device (device first). */
	const auto *vdev = reinterpret_cast<const struct verbs_device *>(ibdev);

	return ibdev && vdev->ops && vdev->ops->name &&
	       std::strcmp(vdev->ops->name, device_ops.name) == 0;
}

namespace {

/*
 * What PROVIDER_DRIVER() does for in-tree providers when loaded by dlopen():
 * hand the ops to libibverbs before dlopen() returns.
 */
__attribute__((constructor)) void register_driver() noexcept
{
	verbs_register_driver_34(&device_ops);
}

} // namespace
} // namespace metaroce
