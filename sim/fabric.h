/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The simulated fabric: K hosts, P planes, one switch per plane.
 *
 * Every host has one point-to-point link to every plane switch. A plane is
 * its own IPv4 network (10.<plane>.0.0/16; host h sits on 10.<plane>.<h>.1,
 * the switch port facing it on 10.<plane>.<h>.2), so the interface a packet
 * leaves a host on chooses its plane, and a plane can fail on its own.
 * Switches forward with static routes (all ports are directly connected
 * networks); switch egress ports run a RED queue disc that marks ECN.
 */
#ifndef METAROCE_SIM_FABRIC_H
#define METAROCE_SIM_FABRIC_H

#include <cstdint>
#include <functional>
#include <vector>

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/queue-disc.h"

namespace metaroce_sim {

struct FabricConfig {
	uint32_t hosts = 64;
	uint32_t planes = 8;
	double link_gbps = 100.0;
	double link_delay_us = 1.0;
	/* Extra one-way delay added per plane index, to reorder across planes. */
	double plane_skew_us = 0.0;
	uint32_t mtu = 9000;
	/* Independent (Bernoulli) packet loss applied at every host ingress. */
	double loss = 0.0;
	/*
	 * Bursty loss applied at every switch ingress: bursts start with a
	 * probability chosen so that the long-run loss rate is burst_loss, and
	 * last uniformly 1..2*burst_len-1 packets (mean burst_len).
	 */
	double burst_loss = 0.0;
	uint32_t burst_len = 4;
	/*
	 * RED/ECN on switch egress, in packets; without ECN a drop-tail FIFO
	 * of the same size, so that a loss is the only congestion signal.
	 */
	bool ecn = true;
	uint32_t ecn_min_th = 20;
	uint32_t ecn_max_th = 60;
	uint32_t switch_queue_pkts = 256;
	/* Plane failure: the plane's switch goes dark at fail_at_ms ... */
	int fail_plane = -1;
	double fail_at_ms = 0.0;
	/* ... and comes back after fail_for_ms (0: never; a link flap if > 0). */
	double fail_for_ms = 0.0;
	/*
	 * Whether hosts learn of it (as a NIC sees carrier loss on its link to
	 * a dead switch); if not, the transport has to detect it.
	 */
	bool fail_notify = false;
};

class Fabric {
public:
	explicit Fabric(const FabricConfig &cfg);

	const FabricConfig &config() const { return cfg_; }
	ns3::Ptr<ns3::Node> host(uint32_t h) const { return hosts_.Get(h); }
	/* The host's IPv4 address on a plane. */
	ns3::Ipv4Address address(uint32_t host, uint32_t plane) const;
	/* Bytes per second of one host link. */
	double link_bytes_per_sec() const { return cfg_.link_gbps * 1e9 / 8.0; }
	/* Packets dropped by the error models and by switch queues. */
	uint64_t error_drops() const { return error_drops_; }
	uint64_t queue_drops() const;
	uint64_t ecn_marks() const;
	/* Told of plane state changes when config().fail_notify is set. */
	void set_plane_listener(std::function<void(uint32_t plane, bool up)> f)
	{
		plane_listener_ = std::move(f);
	}

private:
	void set_plane_up(uint32_t plane, bool up);
	void count_error_drop(ns3::Ptr<const ns3::Packet>) { error_drops_++; }

	FabricConfig cfg_;
	ns3::NodeContainer hosts_;
	ns3::NodeContainer switches_;
	/* switch_ifaces_[plane] are the switch's IPv4 interface indices. */
	std::vector<std::vector<uint32_t>> switch_ifaces_;
	std::vector<ns3::Ptr<ns3::QueueDisc>> switch_qdiscs_;
	uint64_t error_drops_ = 0;
	std::function<void(uint32_t, bool)> plane_listener_;
};

} // namespace metaroce_sim

#endif
