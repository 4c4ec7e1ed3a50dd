// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MetaRoCE: device counters for "rdma statistic" (port counters).
 *
 * Three kinds: device counters (mdev->counters, counted as packets pass),
 * plane counters (plane->counters, likewise), and transport counters
 * (enum metaroce_xport_counter): retransmissions, SACKs, out-of-order
 * arrivals, duplicates, path failures and recoveries, which the transport
 * core already keeps per connection and per path (mrc_conn_stats,
 * mrc_path_stats).
 *
 * The transport counters are summed when asked: the live RC QPs of the
 * device, each read under its qp->lock, plus mdev->retired, into which a
 * connection's counts are folded when it is freed (QP reset or destroyed).
 * The other way, adding each run's deltas to device counters, would cost
 * every transport run a snapshot of the core's statistics and atomic
 * updates; summing at query time costs the data path nothing, and a query
 * (rare: a person or a monitoring tool) a walk over the QPs.
 * mdev->stats_mutex is held by the query across its walk and by whoever
 * frees a connection from before the QP leaves the walk (xa_erase, or
 * qp->conn = NULL at RESET) until its counts are retired, so every
 * connection is counted exactly once and the counters never go back.
 *
 * A path's counts go to the plane the path maps to (path i on plane
 * i % number of planes, metaroce_plane.c) at the time of the query, or of
 * the retirement: a live QP's history follows its paths when the set of
 * planes changes.  A plane's counters restart at zero when a plane takes
 * its id; a free id reads as the counts of the last plane that had it.
 * The device totals keep everything, so the planes add up to them as long
 * as no plane id was given to a new plane.
 *
 * Room: "rdma statistic show" reads the whole set, names and values, in
 * one netlink message into a 4 KiB buffer (iproute2's rdma,
 * MNL_SOCKET_BUFFER_SIZE).  These 93 take about 4 KB of it; a fifth
 * counter per plane (97) made the tool fail with "Message too long".  A
 * new count goes to the device totals unless a plane's share is worth
 * taking another one out.
 */

#include "metaroce.h"

/* The transport counters, for the device and as planeN_NAME. */
#define METAROCE_XPORT_STATS(pfx)					\
	{ .name = pfx "retransmits" },					\
	{ .name = pfx "sacks_sent" },					\
	{ .name = pfx "sacks_received" },				\
	{ .name = pfx "rx_out_of_order" },				\
	{ .name = pfx "rx_duplicates" },				\
	{ .name = pfx "path_failures" },				\
	{ .name = pfx "path_recoveries" },				\
	{ .name = pfx "lost" },						\
	{ .name = pfx "timeouts" },					\
	{ .name = pfx "spurious_retrans" }

/* planeN_NAME for the plane with id N, after the device counters. */
#define METAROCE_PLANE_STATS(n)						\
	{ .name = "plane" #n "_tx_packets" },				\
	{ .name = "plane" #n "_tx_errors" },				\
	{ .name = "plane" #n "_rx_packets" },				\
	{ .name = "plane" #n "_paths_down" },				\
	{ .name = "plane" #n "_paths_up" },				\
	{ .name = "plane" #n "_tx_link_down" },				\
	METAROCE_XPORT_STATS("plane" #n "_")

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
	METAROCE_XPORT_STATS(""),
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_TLP_PROBES] = { .name = "tlp_probes" },
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_RETRANS_UNCHARGED] = { .name = "retrans_uncharged" },
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_GIVE_UPS] = { .name = "give_ups" },
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_RETRY_EXHAUSTED] = { .name = "retry_exhausted" },
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_RSP_WAIT_GIVE_UPS] = { .name = "rsp_wait_give_ups" },
	[METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +
	 METAROCE_CCNT_PATH_SILENCES] = { .name = "path_silences" },
	METAROCE_PLANE_STATS(0),
	METAROCE_PLANE_STATS(1),
	METAROCE_PLANE_STATS(2),
	METAROCE_PLANE_STATS(3),
};
#define METAROCE_PLANE_NUM_STATS					\
	(METAROCE_PLANE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS)
#define METAROCE_NUM_STATS						\
	(METAROCE_NUM_COUNTERS + METAROCE_XPORT_NUM_COUNTERS +		\
	 METAROCE_CONN_NUM_COUNTERS +					\
	 METAROCE_MAX_PLANES * METAROCE_PLANE_NUM_STATS)
static_assert(ARRAY_SIZE(metaroce_stat_descs) == METAROCE_NUM_STATS);
static_assert(METAROCE_PLANE_NUM_COUNTERS == 6 && METAROCE_MAX_PLANES == 4 &&
	      METAROCE_XPORT_NUM_COUNTERS == 10 &&
	      METAROCE_CONN_NUM_COUNTERS == 6,
	      "metaroce_stat_descs names 6 + 4 x (6 + 10) counters");

/* Plane ids of the paths of a connection, path i at plane[i % num]. */
struct metaroce_path_planes {
	unsigned int num;
	u8 id[METAROCE_MAX_PLANES];
};

static void metaroce_path_planes(struct metaroce_dev *mdev,
				 struct metaroce_path_planes *pp)
{
	struct metaroce_plane_map *map;
	unsigned int i;

	rcu_read_lock();
	map = rcu_dereference(mdev->plane_map);
	pp->num = map ? map->num : 0;
	for (i = 0; i < pp->num; i++)
		pp->id[i] = map->plane[i] - mdev->planes;
	rcu_read_unlock();
	if (!pp->num) {		/* the device is going away: plane 0 */
		pp->num = 1;
		pp->id[0] = 0;
	}
}

/* Add the counts of @qp's connection to @xc.  qp->lock held, qp->conn set. */
static void metaroce_xport_add(struct metaroce_qp *qp,
			       const struct metaroce_path_planes *pp,
			       struct metaroce_xport_counts *xc)
{
	struct mrc_conn_stats cs;
	struct mrc_path_stats ps;
	unsigned int i;

	lockdep_assert_held(&qp->lock);
	mrc_get_stats(qp->conn, &cs);
	xc->dev[METAROCE_XCNT_RETRANSMITS] += cs.tx_retrans;
	xc->dev[METAROCE_XCNT_SACKS_SENT] += cs.sacks_sent;
	xc->dev[METAROCE_XCNT_SACKS_RECEIVED] += cs.sacks_received;
	xc->dev[METAROCE_XCNT_RX_OUT_OF_ORDER] += cs.rx_out_of_order;
	xc->dev[METAROCE_XCNT_RX_DUPLICATES] += cs.rx_dup;
	xc->dev[METAROCE_XCNT_PATH_FAILURES] += cs.path_failures;
	xc->dev[METAROCE_XCNT_PATH_RECOVERIES] += cs.path_recoveries;
	xc->conn[METAROCE_CCNT_TLP_PROBES] += cs.tlp_probes;
	xc->conn[METAROCE_CCNT_RETRANS_UNCHARGED] += cs.retrans_uncharged;
	xc->conn[METAROCE_CCNT_GIVE_UPS] += cs.give_ups;
	xc->conn[METAROCE_CCNT_RETRY_EXHAUSTED] += cs.retry_exhausted;
	xc->conn[METAROCE_CCNT_RSP_WAIT_GIVE_UPS] += cs.rsp_wait_give_ups;
	for (i = 0; i < qp->num_paths; i++) {
		u64 *p;

		if (mrc_get_path_stats(qp->conn, i, &ps))
			break;
		p = xc->plane[pp->id[i % pp->num]];
		p[METAROCE_XCNT_RETRANSMITS] += ps.tx_retrans;
		p[METAROCE_XCNT_SACKS_SENT] += ps.sacks_sent;
		p[METAROCE_XCNT_SACKS_RECEIVED] += ps.sacks_received;
		p[METAROCE_XCNT_RX_OUT_OF_ORDER] += ps.rx_out_of_order;
		p[METAROCE_XCNT_RX_DUPLICATES] += ps.rx_dup;
		p[METAROCE_XCNT_PATH_FAILURES] += ps.failures;
		p[METAROCE_XCNT_PATH_RECOVERIES] += ps.recoveries;
		p[METAROCE_XCNT_LOST] += ps.lost;
		p[METAROCE_XCNT_TIMEOUTS] += ps.ptos;
		p[METAROCE_XCNT_SPURIOUS_RETRANS] += ps.spurious_retrans;
		xc->dev[METAROCE_XCNT_LOST] += ps.lost;
		xc->dev[METAROCE_XCNT_TIMEOUTS] += ps.ptos;
		xc->dev[METAROCE_XCNT_SPURIOUS_RETRANS] += ps.spurious_retrans;
		xc->conn[METAROCE_CCNT_PATH_SILENCES] += ps.silences;
	}
}

/*
 * @qp's connection is about to be freed: keep its counts.  The caller
 * holds mdev->stats_mutex since before the QP left the statistics walk
 * (see the top of the file) and qp->lock, with which it makes the
 * connection unreachable.
 */
void metaroce_stats_retire(struct metaroce_qp *qp)
{
	struct metaroce_path_planes pp;

	lockdep_assert_held(&qp->mdev->stats_mutex);
	lockdep_assert_held(&qp->lock);
	if (!qp->conn)
		return;
	metaroce_path_planes(qp->mdev, &pp);
	metaroce_xport_add(qp, &pp, &qp->mdev->retired);
}

/* A new plane takes id @id: its retired counts restart (RTNL held). */
void metaroce_stats_plane_reset(struct metaroce_dev *mdev, unsigned int id)
{
	mutex_lock(&mdev->stats_mutex);
	memset(mdev->retired.plane[id], 0, sizeof(mdev->retired.plane[id]));
	mutex_unlock(&mdev->stats_mutex);
}

/* The transport counts of @mdev now.  Process context. */
static void metaroce_xport_counts(struct metaroce_dev *mdev,
				  struct metaroce_xport_counts *xc)
{
	struct metaroce_path_planes pp;
	unsigned long qpn = 0;
	struct metaroce_qp *qp;

	metaroce_path_planes(mdev, &pp);
	mutex_lock(&mdev->stats_mutex);
	*xc = mdev->retired;
	while ((qp = metaroce_qp_get_next(&qpn))) {
		if (qp->mdev == mdev && !metaroce_qp_is_ud(qp)) {
			spin_lock_bh(&qp->lock);
			if (qp->conn)
				metaroce_xport_add(qp, &pp, xc);
			spin_unlock_bh(&qp->lock);
		}
		metaroce_qp_put(qp);
		qpn++;
	}
	mutex_unlock(&mdev->stats_mutex);
}

static struct rdma_hw_stats *metaroce_alloc_hw_port_stats(struct ib_device *ib_dev,
							  u32 port_num)
{
	return rdma_alloc_hw_stats_struct(metaroce_stat_descs,
					  METAROCE_NUM_STATS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int metaroce_get_hw_stats(struct ib_device *ib_dev,
				 struct rdma_hw_stats *stats, u32 port_num,
				 int index)
{
	struct metaroce_dev *mdev = to_mdev(ib_dev);
	struct metaroce_xport_counts xcs, *xc = &xcs;
	u64 *v = stats->value;
	int i, c;

	metaroce_xport_counts(mdev, xc);
	for (i = 0; i < METAROCE_NUM_COUNTERS; i++)
		*v++ = atomic64_read(&mdev->counters[i]);
	for (c = 0; c < METAROCE_XPORT_NUM_COUNTERS; c++)
		*v++ = xc->dev[c];
	for (c = 0; c < METAROCE_CONN_NUM_COUNTERS; c++)
		*v++ = xc->conn[c];
	for (i = 0; i < METAROCE_MAX_PLANES; i++) {
		for (c = 0; c < METAROCE_PLANE_NUM_COUNTERS; c++)
			*v++ = atomic64_read(&mdev->planes[i].counters[c]);
		for (c = 0; c < METAROCE_XPORT_NUM_COUNTERS; c++)
			*v++ = xc->plane[i][c];
	}
	return METAROCE_NUM_STATS;
}

const struct ib_device_ops metaroce_stats_ops = {
	.alloc_hw_port_stats = metaroce_alloc_hw_port_stats,
	.get_hw_stats = metaroce_get_hw_stats,
};
