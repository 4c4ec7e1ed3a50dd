// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE direct verbs (metarocedv.h): the public entry points of
 * libmetaroce.so.1, exported at version METAROCE_1.0 (metaroce.map).
 *
 * Extensibility, as in rdma-core's efadv/mlx5dv: every structure starts
 * with a comp_mask and the caller passes its sizeof() as inlen.  Input
 * structures (metarocedv_qp_init_attr): a field past inlen is absent, and
 * naming it in comp_mask is EINVAL; bytes past the library's structure
 * must be zero.  Output structures: the first min(inlen, ours) bytes are
 * filled and the caller's bytes past ours are zeroed.
 *
 * Every function returns its failure (an errno, or NULL with errno set);
 * none throws (-fno-exceptions) or aborts.
 */
#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/ioctl.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "metaroce.h"
#include "metarocedv.h"

#define METAROCE_EXPORT extern "C" __attribute__((visibility("default")))

namespace metaroce {
namespace {

/* The public enums are the ABI's, number for number. */
constexpr bool same(int a, int b)
{
	return a == b;
}
static_assert(same(METAROCEDV_TRANSPORT_METAROCE, METAROCE_TRANSPORT_METAROCE) &&
	      same(METAROCEDV_TRANSPORT_ROCEV2, METAROCE_TRANSPORT_ROCEV2));
static_assert(same(METAROCEDV_CC_DEFAULT, METAROCE_CC_DEFAULT) &&
	      same(METAROCEDV_CC_ECN, METAROCE_CC_ECN) &&
	      same(METAROCEDV_CC_DELAY, METAROCE_CC_DELAY) &&
	      same(METAROCEDV_CC_NONE, METAROCE_CC_NONE));
static_assert(same(METAROCEDV_DEVICE_CAP_METAROCE, METAROCE_DEVICE_CAP_METAROCE) &&
	      same(METAROCEDV_DEVICE_CAP_ROCEV2, METAROCE_DEVICE_CAP_ROCEV2) &&
	      same(METAROCEDV_DEVICE_CAP_QP_STATS, METAROCE_DEVICE_CAP_QP_STATS));
static_assert(METAROCEDV_MAX_PATHS == METAROCE_MAX_QP_PATHS);
static_assert(same(METAROCEDV_PATH_ACTIVE, METAROCE_PATH_ACTIVE) &&
	      same(METAROCEDV_PATH_FAILED, METAROCE_PATH_FAILED) &&
	      same(METAROCEDV_PATH_ADMIN_DOWN, METAROCE_PATH_ADMIN_DOWN));

/*
 * The kernel's statistics are the public structure, byte for byte: the
 * library hands them on as they come.
 */
#define SAME_MEMBER(ours, theirs, m)                                           \
	(offsetof(ours, m) == offsetof(theirs, m) &&                           \
	 sizeof(((ours *)nullptr)->m) == sizeof(((theirs *)nullptr)->m))
#define SAME_PATH(m) SAME_MEMBER(metarocedv_path_stats, metaroce_path_stats, m)
#define SAME_QP(m) SAME_MEMBER(metarocedv_qp_stats, metaroce_qp_stats, m)
static_assert(sizeof(metarocedv_path_stats) == sizeof(metaroce_path_stats) &&
	      SAME_PATH(tx_packets) && SAME_PATH(retransmits) &&
	      SAME_PATH(rx_packets) && SAME_PATH(lost) && SAME_PATH(timeouts) &&
	      SAME_PATH(ecn_marks) && SAME_PATH(srtt_ns) && SAME_PATH(rttvar_ns) &&
	      SAME_PATH(min_rtt_ns) && SAME_PATH(cwnd) && SAME_PATH(in_flight) &&
	      SAME_PATH(state) && SAME_PATH(plane));
static_assert(sizeof(metarocedv_qp_stats) == sizeof(metaroce_qp_stats) &&
	      SAME_QP(comp_mask) && SAME_QP(transport) && SAME_QP(num_paths) &&
	      SAME_QP(tx_packets) && SAME_QP(retransmits) && SAME_QP(rx_packets) &&
	      SAME_QP(rx_duplicates) && SAME_QP(rx_out_of_order) &&
	      SAME_QP(sacks_sent) && SAME_QP(sacks_received) &&
	      SAME_QP(path_failures) && SAME_QP(path_recoveries) && SAME_QP(path));
#undef SAME_PATH
#undef SAME_QP

/*
 * METAROCE_METHOD_QP_QUERY_STATS (include/uapi/rdma/metaroce-abi.h) on
 * the context's command fd: the uverbs ioctl header and its two
 * attributes, laid out as the kernel reads them.  0 or an errno.
 */
int ioctl_qp_stats(struct ibv_qp *ibqp, struct metaroce_qp_stats *st) noexcept
{
	constexpr size_t len = sizeof(struct ib_uverbs_ioctl_hdr) +
			       2 * sizeof(struct ib_uverbs_attr);
	alignas(8) unsigned char buf[len] = {};
	auto *hdr = reinterpret_cast<struct ib_uverbs_ioctl_hdr *>(buf);
	auto *attr = reinterpret_cast<struct ib_uverbs_attr *>(hdr + 1);

	static_assert(sizeof(*st) <= UINT16_MAX);
	hdr->length = len;
	hdr->object_id = UVERBS_OBJECT_QP;
	hdr->method_id = METAROCE_METHOD_QP_QUERY_STATS;
	hdr->num_attrs = 2;
	hdr->driver_id = RDMA_DRIVER_UNKNOWN;
	attr[0].attr_id = METAROCE_ATTR_QP_QUERY_STATS_HANDLE;
	attr[0].flags = UVERBS_ATTR_F_MANDATORY;
	attr[0].data = ibqp->handle; /* an IDR: len 0 */
	attr[1].attr_id = METAROCE_ATTR_QP_QUERY_STATS_RESP;
	attr[1].len = sizeof(*st);
	attr[1].flags = UVERBS_ATTR_F_MANDATORY;
	attr[1].data = reinterpret_cast<uintptr_t>(st);
	if (ioctl(ibqp->context->cmd_fd, RDMA_VERBS_IOCTL, hdr) == 0)
		return 0;
	/* No such method (an older module), or no ioctl at all. */
	if (errno == EPROTONOSUPPORT || errno == ENOTTY)
		return EOPNOTSUPP;
	return errno;
}

/* Whether the caller's structure of @inlen bytes holds all of @member. */
#define FIELD_AVAIL(type, member, inlen)                                       \
	(offsetof(type, member) + sizeof(((type *)nullptr)->member) <= (inlen))

constexpr uint64_t qp_init_attr_known = METAROCEDV_QP_INIT_ATTR_TRANSPORT |
					METAROCEDV_QP_INIT_ATTR_NUM_PATHS |
					METAROCEDV_QP_INIT_ATTR_CC_PROFILE;

bool all_zero(const void *p, size_t len) noexcept
{
	const auto *b = static_cast<const unsigned char *>(p);

	return std::all_of(b, b + len, [](unsigned char c) { return c == 0; });
}

/*
 * Copy an output structure @ours to the caller's @out of @inlen bytes:
 * the common prefix, and zeros past the end of ours.
 */
void copy_out(void *out, uint32_t inlen, const void *ours, size_t size) noexcept
{
	std::memcpy(out, ours, std::min<size_t>(inlen, size));
	if (inlen > size)
		std::memset(static_cast<char *>(out) + size, 0, inlen - size);
}

/*
 * The CREATE_QP driver request of metarocedv_create_qp()'s attributes,
 * or an errno.  The values are checked here too, so that a mistake is
 * EINVAL before any kernel call; the kernel checks them again (its
 * max_paths, and num_paths/cc_profile against the wire mode it chose).
 */
int dv_create_qp_request(const struct metarocedv_qp_init_attr *dv,
			 uint32_t inlen, struct metaroce_create_qp_req *req) noexcept
{
	using attr = struct metarocedv_qp_init_attr;

	*req = {};
	if (!dv || !FIELD_AVAIL(attr, comp_mask, inlen))
		return EINVAL;
	if (dv->comp_mask & ~qp_init_attr_known)
		return EINVAL;
	if (inlen > sizeof(attr) &&
	    !all_zero(reinterpret_cast<const char *>(dv) + sizeof(attr),
		      inlen - sizeof(attr)))
		return EINVAL;
	if (FIELD_AVAIL(attr, reserved, inlen) && dv->reserved)
		return EINVAL;
	if (dv->comp_mask & METAROCEDV_QP_INIT_ATTR_TRANSPORT) {
		if (!FIELD_AVAIL(attr, transport, inlen) ||
		    (dv->transport != METAROCEDV_TRANSPORT_METAROCE &&
		     dv->transport != METAROCEDV_TRANSPORT_ROCEV2))
			return EINVAL;
		req->comp_mask |= METAROCE_CREATE_QP_REQ_TRANSPORT;
		req->transport = dv->transport;
	}
	if (dv->comp_mask & METAROCEDV_QP_INIT_ATTR_NUM_PATHS) {
		if (!FIELD_AVAIL(attr, num_paths, inlen) || !dv->num_paths ||
		    dv->num_paths > METAROCEDV_MAX_PATHS)
			return EINVAL;
		req->comp_mask |= METAROCE_CREATE_QP_REQ_NUM_PATHS;
		req->num_paths = dv->num_paths;
	}
	if (dv->comp_mask & METAROCEDV_QP_INIT_ATTR_CC_PROFILE) {
		if (!FIELD_AVAIL(attr, cc_profile, inlen) ||
		    dv->cc_profile > METAROCEDV_CC_NONE)
			return EINVAL;
		req->comp_mask |= METAROCE_CREATE_QP_REQ_CC_PROFILE;
		req->cc_profile = dv->cc_profile;
	}
	return 0;
}

} // namespace
} // namespace metaroce

using namespace metaroce;

METAROCE_EXPORT int metarocedv_is_supported(struct ibv_device *device)
{
	return is_metaroce_device(device);
}

METAROCE_EXPORT int metarocedv_query_device(struct ibv_context *ibctx,
					    struct metarocedv_device_attr *attr,
					    uint32_t inlen)
{
	using out = struct metarocedv_device_attr;
	struct ibv_device_attr_ex ex;
	query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	out ours = {};
	int ret;

	if (!ibctx || !is_metaroce_device(ibctx->device))
		return EOPNOTSUPP;
	if (!attr || !FIELD_AVAIL(out, comp_mask, inlen))
		return EINVAL;
	/*
	 * The extended QUERY_DEVICE carries the driver response; the device
	 * attributes it also fills are the ones ibv_query_device_ex() gives.
	 */
	ret = ibv_cmd_query_device_any(ibctx, nullptr, &ex, sizeof(ex),
				       &resp.ibv_resp, &resp_size);
	if (ret)
		return ret;
	ours.comp_mask = 0;
	ours.caps = resp.drv.caps;
	ours.default_transport = resp.drv.default_transport;
	ours.max_planes = resp.drv.max_planes;
	ours.num_planes = resp.drv.num_planes;
	ours.max_paths = resp.drv.max_paths;
	ours.default_paths = resp.drv.default_paths;
	ours.max_window = resp.drv.max_window;
	copy_out(attr, inlen, &ours, sizeof(ours));
	return 0;
}

METAROCE_EXPORT struct ibv_qp *
metarocedv_create_qp(struct ibv_context *ibctx, struct ibv_qp_init_attr_ex *attr,
		     struct metarocedv_qp_init_attr *dv_attr, uint32_t inlen)
{
	struct metaroce_create_qp_req req;
	int ret;

	if (!ibctx || !is_metaroce_device(ibctx->device)) {
		errno = EOPNOTSUPP;
		return nullptr;
	}
	/* The MetaRoCE attributes are those of a reliable connection. */
	if (!attr || attr->qp_type != IBV_QPT_RC ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return nullptr;
	}
	ret = dv_create_qp_request(dv_attr, inlen, &req);
	if (ret) {
		errno = ret;
		return nullptr;
	}
	return create_qp_req(ibctx, attr, &req);
}

METAROCE_EXPORT int metarocedv_query_qp_stats(struct ibv_qp *ibqp,
					      struct metarocedv_qp_stats *stats,
					      uint32_t inlen)
{
	using out = struct metarocedv_qp_stats;

	if (!ibqp || !ibqp->context || !is_metaroce_device(ibqp->context->device) ||
	    ibqp->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	struct metaroce_qp_stats st = {};
	int ret;

	if (!stats || !FIELD_AVAIL(out, num_paths, inlen))
		return EINVAL;
	/* Ask for all of ours; hand on what the caller's structure holds. */
	ret = ioctl_qp_stats(ibqp, &st);
	if (ret)
		return ret;
	copy_out(stats, inlen, &st, sizeof(st));
	return 0;
}
