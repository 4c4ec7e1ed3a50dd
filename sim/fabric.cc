// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "fabric.h"

#include <sstream>

#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

using namespace ns3;

namespace metaroce_sim {

static Ipv4Address link_address(uint32_t plane, uint32_t host, uint32_t end)
{
	return Ipv4Address((10u << 24) | (plane << 16) | (host << 8) | end);
}

Ipv4Address Fabric::address(uint32_t host, uint32_t plane) const
{
	return link_address(plane, host, 1);
}

static std::string rate_string(double gbps)
{
	std::ostringstream s;
	s << static_cast<uint64_t>(gbps * 1e9) << "bps";
	return s.str();
}

Fabric::Fabric(const FabricConfig &cfg) : cfg_(cfg)
{
	NS_ABORT_MSG_IF(cfg.hosts < 2 || cfg.hosts > 255, "hosts must be 2..255");
	NS_ABORT_MSG_IF(cfg.planes < 1 || cfg.planes > 64, "planes must be 1..64");

	hosts_.Create(cfg.hosts);
	switches_.Create(cfg.planes);
	InternetStackHelper stack;
	stack.Install(hosts_);
	stack.Install(switches_);

	/*
	 * The host NIC queue is bounded by the sender's own transmit pump
	 * (HostApp); a plain FIFO there keeps ns-3 from adding AQM of its own.
	 */
	TrafficControlHelper host_tc;
	host_tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
				 QueueSizeValue(QueueSize("4096p")));
	TrafficControlHelper switch_tc;
	/* The same buffer with or without ECN: only the marking differs. */
	QueueSizeValue switch_queue(
		QueueSize(QueueSizeUnit::PACKETS, cfg.switch_queue_pkts));
	if (cfg.ecn)
		switch_tc.SetRootQueueDisc(
			"ns3::RedQueueDisc", "UseEcn", BooleanValue(true),
			"UseHardDrop", BooleanValue(false),
			"Gentle", BooleanValue(false),
			/* Instantaneous queue, DCTCP-style step marking. */
			"QW", DoubleValue(1.0), "LInterm", DoubleValue(1.0),
			"MinTh", DoubleValue(cfg.ecn_min_th),
			"MaxTh", DoubleValue(cfg.ecn_max_th),
			"MeanPktSize", UintegerValue(cfg.mtu),
			"LinkBandwidth",
			DataRateValue(DataRate(rate_string(cfg.link_gbps))),
			"MaxSize", switch_queue);
	else
		switch_tc.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
					   switch_queue);

	Ptr<UniformRandomVariable> loss_rv = CreateObject<UniformRandomVariable>();
	Ptr<UniformRandomVariable> burst_rv = CreateObject<UniformRandomVariable>();
	Ptr<UniformRandomVariable> burst_len_rv =
		CreateObject<UniformRandomVariable>();
	/* Fixed streams: the run is a function of the seed alone. */
	loss_rv->SetStream(1);
	burst_rv->SetStream(2);
	burst_len_rv->SetStream(3);
	burst_len_rv->SetAttribute("Min", DoubleValue(1));
	burst_len_rv->SetAttribute("Max", DoubleValue(2.0 * cfg.burst_len));
	/*
	 * A burst starts at a good packet with probability b and drops L
	 * packets on average: loss = bL / (1 + bL), so b = loss / (L (1-loss)).
	 */
	double burst_start = cfg.burst_loss > 0 ?
		cfg.burst_loss / (cfg.burst_len * (1.0 - cfg.burst_loss)) : 0.0;

	Ipv4StaticRoutingHelper routing;
	switch_ifaces_.resize(cfg.planes);
	for (uint32_t p = 0; p < cfg.planes; p++) {
		PointToPointHelper link;
		link.SetDeviceAttribute("DataRate",
					StringValue(rate_string(cfg.link_gbps)));
		link.SetDeviceAttribute("Mtu", UintegerValue(cfg.mtu));
		link.SetChannelAttribute(
			"Delay", TimeValue(MicroSeconds(cfg.link_delay_us +
							p * cfg.plane_skew_us)));
		/* Keep the device queue short so the queue disc above it rules. */
		link.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
			      QueueSizeValue(QueueSize("2p")));
		for (uint32_t h = 0; h < cfg.hosts; h++) {
			NetDeviceContainer devs =
				link.Install(hosts_.Get(h), switches_.Get(p));
			Ptr<PointToPointNetDevice> host_dev =
				DynamicCast<PointToPointNetDevice>(devs.Get(0));
			Ptr<PointToPointNetDevice> sw_dev =
				DynamicCast<PointToPointNetDevice>(devs.Get(1));
			if (cfg.loss > 0) {
				Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
				em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
				em->SetRate(cfg.loss);
				em->SetRandomVariable(loss_rv);
				host_dev->SetReceiveErrorModel(em);
			}
			if (burst_start > 0) {
				Ptr<BurstErrorModel> em = CreateObject<BurstErrorModel>();
				em->SetBurstRate(burst_start);
				em->SetRandomVariable(burst_rv);
				em->SetRandomBurstSize(burst_len_rv);
				sw_dev->SetReceiveErrorModel(em);
			}
			host_dev->TraceConnectWithoutContext(
				"PhyRxDrop", MakeCallback(&Fabric::count_error_drop, this));
			sw_dev->TraceConnectWithoutContext(
				"PhyRxDrop", MakeCallback(&Fabric::count_error_drop, this));

			host_tc.Install(devs.Get(0));
			QueueDiscContainer q = switch_tc.Install(devs.Get(1));
			switch_qdiscs_.push_back(q.Get(0));

			Ipv4AddressHelper addr;
			addr.SetBase(link_address(p, h, 0), "255.255.255.0");
			Ipv4InterfaceContainer ifs = addr.Assign(devs);
			switch_ifaces_[p].push_back(ifs.Get(1).second);

			Ptr<Ipv4> ip = hosts_.Get(h)->GetObject<Ipv4>();
			uint32_t hif = ifs.Get(0).second;
			ip->SetForwarding(hif, false);
			routing.GetStaticRouting(ip)->AddNetworkRouteTo(
				link_address(p, 0, 0), Ipv4Mask("255.255.0.0"),
				link_address(p, h, 2), hif);
		}
	}

	if (cfg.fail_plane >= 0) {
		NS_ABORT_MSG_IF(static_cast<uint32_t>(cfg.fail_plane) >= cfg.planes,
				"fail-plane out of range");
		Simulator::Schedule(MilliSeconds(cfg.fail_at_ms),
				    &Fabric::set_plane_up, this, cfg.fail_plane,
				    false);
		if (cfg.fail_for_ms > 0)
			Simulator::Schedule(
				MilliSeconds(cfg.fail_at_ms + cfg.fail_for_ms),
				&Fabric::set_plane_up, this, cfg.fail_plane, true);
	}
}

/*
 * A failed plane drops everything: its switch's interfaces go down, so
 * arriving packets are discarded and nothing is forwarded. The hosts are not
 * told; detecting the dead paths is the transport's job.
 */
void Fabric::set_plane_up(uint32_t plane, bool up)
{
	Ptr<Ipv4> ip = switches_.Get(plane)->GetObject<Ipv4>();
	for (uint32_t iface : switch_ifaces_[plane]) {
		if (up)
			ip->SetUp(iface);
		else
			ip->SetDown(iface);
	}
	if (cfg_.fail_notify && plane_listener_)
		plane_listener_(plane, up);
}

uint64_t Fabric::queue_drops() const
{
	uint64_t n = 0;
	for (const auto &q : switch_qdiscs_)
		n += q->GetStats().nTotalDroppedPackets;
	return n;
}

uint64_t Fabric::ecn_marks() const
{
	uint64_t n = 0;
	for (const auto &q : switch_qdiscs_)
		n += q->GetStats().nTotalMarkedPackets;
	return n;
}

} // namespace metaroce_sim
