/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * One simulated host: an ns-3 Application that drives one MetaRoCE core
 * connection (struct mrc_conn) per peer it talks to.
 *
 * Wire mapping. Core path i of a connection is plane (i + rotation) % P with
 * entropy i / P, where rotation = (a + b) % P for the host pair {a, b}: both
 * ends agree on it, and a single-path (RoCEv2) connection lands on a plane
 * chosen per host pair, as ECMP would. The entropy is the UDP source port,
 * ENTROPY_PORT_BASE + entropy; the destination port is always 4791.
 *
 * The NIC. Each plane interface transmits at link rate; the host pulls a
 * packet from the core only while the plane it went to has at most a couple
 * of packets queued, so the core, not a host queue, holds the backlog.
 */
#ifndef METAROCE_SIM_HOST_APP_H
#define METAROCE_SIM_HOST_APP_H

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"

#include "metaroce/core.h"

#include "fabric.h"
#include "metrics.h"

namespace metaroce_sim {

constexpr uint16_t ROCE_UDP_PORT = 4791;
constexpr uint16_t ENTROPY_PORT_BASE = 49152;

struct TransportConfig {
	enum mrc_mode mode = MRC_MODE_METAROCE;
	uint32_t entropies = 2;		/* UDP source ports per plane */
	uint32_t mtu = 4096;		/* core payload bytes per packet */
	uint32_t window = 0;		/* 0: core default */
	/* MetaRoCE mode: a loss shrinks by its share (MR-CC-002) */
	bool cc_loss_share = false;
	/* MetaRoCE mode: the loss gate's delay target (MR-CC-007); 0: off */
	uint64_t cc_loss_gate_ns = 0;
	/*
	 * Timer knobs; 0 keeps the core default. The core's defaults suit a
	 * kernel on a millisecond-scale testbed; a 100G fabric has RTTs of
	 * microseconds, so metaroce-sim passes fabric-scale values.
	 */
	uint64_t initial_rtt_ns = 0;
	uint64_t max_ack_delay_ns = 0;
	uint64_t granularity_ns = 0;
	uint64_t rto_ns = 0;		/* RoCEv2 retransmission timeout */
};

class HostApp;

/* One end of a reliable connection between two hosts. */
struct Conn {
	HostApp *host;
	uint32_t peer;
	uint32_t rotation;
	std::unique_ptr<uint64_t[]> mem;	/* struct mrc_conn storage */
	ns3::EventId timer;
	uint64_t timer_at = UINT64_MAX;
	bool timeout_ran = false;
	uint64_t timeout_ran_ns = 0;	/* last mrc_handle_timeout() */
	bool active = false;		/* may have a packet to send */
	/* Flow ids of messages to this peer: all, and not yet posted. */
	std::vector<uint32_t> sends;
	std::deque<uint32_t> send_backlog;
	uint32_t sends_posted = 0;
	/* Flow ids of messages expected from this peer, in order. */
	std::vector<uint32_t> recvs;
	uint32_t recvs_posted = 0;

	struct mrc_conn *core() { return reinterpret_cast<struct mrc_conn *>(mem.get()); }
};

class HostApp : public ns3::Application {
public:
	HostApp(Fabric &fabric, uint32_t index, const TransportConfig &tcfg,
		Metrics &metrics);

	/* Workload setup, before the simulation runs. */
	Conn &conn_to(uint32_t peer);
	void expect(uint32_t flow_id);	/* this host is the flow's receiver */
	/* Post the flow's message now (this host is its sender). */
	void start_flow(uint32_t flow_id);
	/* The host's link to a plane went down or came back. */
	void set_plane_state(uint32_t plane, bool up);

	uint32_t index() const { return index_; }
	void add_stats(struct mrc_conn_stats &sum) const;
	/*
	 * A path counter (struct mrc_path_stats) summed over all paths of
	 * all connections, e.g. &mrc_path_stats::ptos.
	 */
	uint64_t path_stat_sum(uint64_t mrc_path_stats::*counter) const;
	uint64_t host_tx_packets() const { return tx_packets_; }

	/* Core callbacks (static trampolines in host_app.cc). */
	int read_payload(Conn &c, uint64_t wr_id, uint32_t offset, void *dst,
			 uint32_t len);
	int place_send(Conn &c, uint64_t wr_id, uint32_t offset,
		       const void *src, uint32_t len);

private:
	void StartApplication() override;
	void StopApplication() override;

	uint32_t num_paths() const;
	void path_to_wire(const Conn &c, unsigned int path, uint32_t &plane,
			  uint32_t &entropy) const;
	unsigned int wire_to_path(const Conn &c, uint32_t plane,
				  uint32_t entropy) const;
	uint64_t now_ns() const;

	void receive(uint32_t plane, ns3::Ptr<ns3::Socket> sock);
	void post_pending(Conn &c);
	void rearm_timer(Conn &c);
	void after_core_call(Conn &c);
	void drain_completions(Conn &c);
	void on_timer(Conn *c);
	void pump();

	Fabric &fabric_;
	uint32_t index_;
	TransportConfig tcfg_;
	Metrics &metrics_;
	std::map<uint32_t, Conn> conns_;	/* by peer */
	std::deque<Conn *> active_;
	std::vector<ns3::Ptr<ns3::Socket>> rx_socks_;	/* by plane */
	/* tx_socks_[plane * entropies + entropy] */
	std::vector<ns3::Ptr<ns3::Socket>> tx_socks_;
	std::vector<uint64_t> plane_busy_until_;
	ns3::EventId pump_event_;
	std::vector<uint8_t> buf_;
	uint64_t tx_packets_ = 0;
	bool started_ = false;
	bool pumping_ = false;
};

} // namespace metaroce_sim

#endif
