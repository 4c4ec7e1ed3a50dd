// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: device counters for "rdma statistic" (port counters).
 */

#include "metaroce.h"

static const struct rdma_stat_desc metaroce_stat_descs[] = {
	[METAROCE_CNT_TX_PACKETS].name = "tx_packets",
	[METAROCE_CNT_TX_ERRORS].name = "tx_errors",
	[METAROCE_CNT_RX_PACKETS].name = "rx_packets",
	[METAROCE_CNT_RX_NO_QP].name = "rx_no_qp",
	[METAROCE_CNT_RX_BAD_CRC].name = "rx_bad_crc",
	[METAROCE_CNT_RX_MALFORMED].name = "rx_malformed",
	[METAROCE_CNT_RX_OUT_OF_WINDOW].name = "rx_out_of_window",
	[METAROCE_CNT_RX_DROPPED].name = "rx_dropped",
	[METAROCE_CNT_REM_ACCESS_ERR].name = "rem_access_err",
	[METAROCE_CNT_RX_ECN_CE].name = "rx_ecn_ce",
	[METAROCE_CNT_RX_BAD_QKEY].name = "rx_bad_qkey",
	[METAROCE_CNT_RX_WRONG_TRANSPORT].name = "rx_wrong_transport",
};
static_assert(ARRAY_SIZE(metaroce_stat_descs) == METAROCE_NUM_COUNTERS);

static struct rdma_hw_stats *metaroce_alloc_hw_port_stats(struct ib_device *ib_dev,
							  u32 port_num)
{
	return rdma_alloc_hw_stats_struct(metaroce_stat_descs,
					  METAROCE_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int metaroce_get_hw_stats(struct ib_device *ib_dev,
				 struct rdma_hw_stats *stats, u32 port_num,
				 int index)
{
	struct metaroce_dev *mdev = to_mdev(ib_dev);
	int i;

	for (i = 0; i < METAROCE_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&mdev->counters[i]);
	return METAROCE_NUM_COUNTERS;
}

const struct ib_device_ops metaroce_stats_ops = {
	.alloc_hw_port_stats = metaroce_alloc_hw_port_stats,
	.get_hw_stats = metaroce_get_hw_stats,
};
