// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: device counters for "rdma statistic" (port counters).
 */

#include "metaroce.h"

/* planeN_NAME for the plane with id N, after the device counters. */
#define METAROCE_PLANE_STATS(n)						\
	{ .name = "plane" #n "_tx_packets" },				\
	{ .name = "plane" #n "_tx_errors" },				\
	{ .name = "plane" #n "_rx_packets" },				\
	{ .name = "plane" #n "_paths_down" },				\
	{ .name = "plane" #n "_paths_up" },				\
	{ .name = "plane" #n "_tx_link_down" }

static const struct rdma_stat_desc metaroce_stat_descs[] = {
	[METAROCE_CNT_TX_PACKETS] = { .name = "tx_packets" },
	[METAROCE_CNT_TX_ERRORS] = { .name = "tx_errors" },
	[METAROCE_CNT_RX_PACKETS] = { .name = "rx_packets" },
	[METAROCE_CNT_RX_NO_QP] = { .name = "rx_no_qp" },
	[METAROCE_CNT_RX_BAD_CRC] = { .name = "rx_bad_crc" },
	[METAROCE_CNT_RX_MALFORMED] = { .name = "rx_malformed" },
	[METAROCE_CNT_RX_OUT_OF_WINDOW] = { .name = "rx_out_of_window" },
	[METAROCE_CNT_RX_DROPPED] = { .name = "rx_dropped" },
	[METAROCE_CNT_REM_ACCESS_ERR] = { .name = "rem_access_err" },
	[METAROCE_CNT_RX_ECN_CE] = { .name = "rx_ecn_ce" },
	[METAROCE_CNT_RX_BAD_QKEY] = { .name = "rx_bad_qkey" },
	[METAROCE_CNT_RX_WRONG_TRANSPORT] = { .name = "rx_wrong_transport" },
	[METAROCE_CNT_TX_LINK_DOWN] = { .name = "tx_link_down" },
	METAROCE_PLANE_STATS(0),
	METAROCE_PLANE_STATS(1),
	METAROCE_PLANE_STATS(2),
	METAROCE_PLANE_STATS(3),
};
#define METAROCE_NUM_STATS						\
	(METAROCE_NUM_COUNTERS + METAROCE_MAX_PLANES * METAROCE_PLANE_NUM_COUNTERS)
static_assert(ARRAY_SIZE(metaroce_stat_descs) == METAROCE_NUM_STATS);
static_assert(METAROCE_PLANE_NUM_COUNTERS == 6 && METAROCE_MAX_PLANES == 4,
	      "metaroce_stat_descs names 6 counters of 4 planes");

static struct rdma_hw_stats *metaroce_alloc_hw_port_stats(struct ib_device *ib_dev,
							  u32 port_num)
{
	return rdma_alloc_hw_stats_struct(metaroce_stat_descs,
					  METAROCE_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/*
 * A plane's counters restart at zero when a plane takes its id; a free
 * id reads as the counts of the last plane that had it.
 */
static int metaroce_get_hw_stats(struct ib_device *ib_dev,
				 struct rdma_hw_stats *stats, u32 port_num,
				 int index)
{
	struct metaroce_dev *mdev = to_mdev(ib_dev);
	u64 *v = stats->value;
	int i, c;

	for (i = 0; i < METAROCE_NUM_COUNTERS; i++)
		*v++ = atomic64_read(&mdev->counters[i]);
	for (i = 0; i < METAROCE_MAX_PLANES; i++)
		for (c = 0; c < METAROCE_PLANE_NUM_COUNTERS; c++)
			*v++ = atomic64_read(&mdev->planes[i].counters[c]);
	return METAROCE_NUM_STATS;
}

const struct ib_device_ops metaroce_stats_ops = {
	.alloc_hw_port_stats = metaroce_alloc_hw_port_stats,
	.get_hw_stats = metaroce_get_hw_stats,
};
