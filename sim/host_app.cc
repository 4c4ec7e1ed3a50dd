// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "host_app.h"

#include <algorithm>

#include "metaroce/wire.h"

using namespace ns3;

namespace metaroce_sim {

/* UDP + IPv4 + PPP framing around the core's datagram, for link timing. */
constexpr uint32_t WIRE_OVERHEAD = 8 + 20 + 2;
/* Packets a plane interface may have queued before the pump waits. */
constexpr uint32_t NIC_QUEUE_PKTS = 2;

static uint32_t qpn_of(uint32_t host, uint32_t peer)
{
	return 0x10000u | (host << 8) | peer;
}

static uint32_t first_psn_of(uint32_t host, uint32_t peer)
{
	return (host * 2654435761u + peer * 40503u) & 0xffffff;
}

static int cb_read_payload(void *user, uint64_t wr_id, uint32_t offset,
			   void *dst, uint32_t len)
{
	Conn *c = static_cast<Conn *>(user);
	return c->host->read_payload(*c, wr_id, offset, dst, len);
}

static int cb_place_send(void *user, uint64_t recv_wr_id, uint32_t offset,
			 const void *src, uint32_t len)
{
	Conn *c = static_cast<Conn *>(user);
	return c->host->place_send(*c, recv_wr_id, offset, src, len);
}

/* The workloads only SEND; a WRITE arriving here is a core bug. */
static int cb_place_write(void *, uint32_t, uint64_t, const void *, uint32_t)
{
	return -EACCES;
}

static const struct mrc_callbacks core_callbacks = {
	cb_read_payload,
	cb_place_send,
	cb_place_write,
	nullptr,	/* the workloads post no READ or atomic (MR-OPS-006) */
	nullptr,
	nullptr,
};

HostApp::HostApp(Fabric &fabric, uint32_t index, const TransportConfig &tcfg,
		 Metrics &metrics)
	: fabric_(fabric), index_(index), tcfg_(tcfg), metrics_(metrics),
	  plane_busy_until_(fabric.config().planes, 0),
	  buf_(MRC_MAX_PKT_LEN(tcfg.mtu))
{
}

uint32_t HostApp::num_paths() const
{
	if (tcfg_.mode == MRC_MODE_ROCEV2)
		return 1;
	return std::min<uint32_t>(fabric_.config().planes * tcfg_.entropies,
				  MRC_MAX_PATHS);
}

void HostApp::path_to_wire(const Conn &c, unsigned int path, uint32_t &plane,
			   uint32_t &entropy) const
{
	uint32_t planes = fabric_.config().planes;

	plane = (path + c.rotation) % planes;
	entropy = path / planes;
}

unsigned int HostApp::wire_to_path(const Conn &c, uint32_t plane,
				   uint32_t entropy) const
{
	uint32_t planes = fabric_.config().planes;

	return entropy * planes + (plane + planes - c.rotation) % planes;
}

uint64_t HostApp::now_ns() const
{
	return Simulator::Now().GetNanoSeconds();
}

Conn &HostApp::conn_to(uint32_t peer)
{
	auto it = conns_.find(peer);
	if (it != conns_.end())
		return it->second;

	Conn &c = conns_[peer];
	c.host = this;
	c.peer = peer;
	c.rotation = (index_ + peer) % fabric_.config().planes;
	size_t words = (mrc_conn_size() + 7) / 8;
	c.mem.reset(new uint64_t[words]);

	struct mrc_config cfg;
	mrc_config_default(&cfg, tcfg_.mode);
	cfg.local_qpn = qpn_of(index_, peer);
	cfg.remote_qpn = qpn_of(peer, index_);
	cfg.local_psn = first_psn_of(index_, peer);
	cfg.remote_psn = first_psn_of(peer, index_);
	cfg.mtu = tcfg_.mtu;
	cfg.num_paths = num_paths();
	if (tcfg_.window)
		cfg.window = tcfg_.window;
	if (tcfg_.cc_loss_share)
		cfg.cc_flags |= MRC_CC_LOSS_SHARE;
	if (tcfg_.cc_loss_gate_ns) {
		cfg.cc_flags |= MRC_CC_LOSS_GATE;
		cfg.target_delay_ns = tcfg_.cc_loss_gate_ns;
	}
	if (tcfg_.initial_rtt_ns)
		cfg.initial_rtt_ns = tcfg_.initial_rtt_ns;
	if (tcfg_.max_ack_delay_ns)
		cfg.max_ack_delay_ns = tcfg_.max_ack_delay_ns;
	if (tcfg_.granularity_ns)
		cfg.granularity_ns = tcfg_.granularity_ns;
	if (tcfg_.rto_ns)
		cfg.rto_ns = tcfg_.rto_ns;
	int ret = mrc_conn_init(c.core(), &cfg, &core_callbacks, &c, now_ns());
	NS_ABORT_MSG_IF(ret, "mrc_conn_init failed: " << ret);
	return c;
}

void HostApp::expect(uint32_t flow_id)
{
	Conn &c = conn_to(metrics_.flows[flow_id].src);

	c.recvs.push_back(flow_id);
	post_pending(c);
}

void HostApp::start_flow(uint32_t flow_id)
{
	Flow &f = metrics_.flows[flow_id];
	Conn &c = conn_to(f.dst);

	f.start_ns = now_ns();
	c.send_backlog.push_back(flow_id);
	post_pending(c);
	after_core_call(c);
}

void HostApp::set_plane_state(uint32_t plane, bool up)
{
	for (auto &kv : conns_) {
		Conn &c = kv.second;
		for (unsigned int path = 0; path < num_paths(); path++) {
			uint32_t p, entropy;
			path_to_wire(c, path, p, entropy);
			if (p == plane)
				mrc_path_set_state(c.core(), path, up, now_ns());
		}
		after_core_call(c);
	}
}

/* Keep the core's send and receive queues as full as it accepts. */
void HostApp::post_pending(Conn &c)
{
	while (c.recvs_posted < c.recvs.size()) {
		const Flow &f = metrics_.flows[c.recvs[c.recvs_posted]];
		if (mrc_post_recv(c.core(), c.recvs_posted, f.bytes) < 0)
			break;
		c.recvs_posted++;
	}
	while (!c.send_backlog.empty()) {
		uint32_t id = c.send_backlog.front();
		struct mrc_send_wr wr = {};
		wr.wr_id = c.sends.size();
		wr.opcode = MRC_OP_SEND;
		wr.length = metrics_.flows[id].bytes;
		if (mrc_post_send(c.core(), &wr, now_ns()) < 0)
			break;
		c.sends.push_back(id);
		c.send_backlog.pop_front();
	}
}

int HostApp::read_payload(Conn &c, uint64_t wr_id, uint32_t offset, void *dst,
			  uint32_t len)
{
	if (wr_id >= c.sends.size())
		return -EINVAL;
	pattern_fill(index_, c.peer, wr_id, offset, static_cast<uint8_t *>(dst),
		     len);
	return 0;
}

int HostApp::place_send(Conn &c, uint64_t wr_id, uint32_t offset,
			const void *src, uint32_t len)
{
	if (wr_id >= c.recvs_posted ||
	    offset + static_cast<uint64_t>(len) >
		    metrics_.flows[c.recvs[wr_id]].bytes) {
		metrics_.placements_out_of_range++;
		return -EINVAL;
	}
	metrics_.bytes_corrupted +=
		pattern_mismatches(c.peer, index_, wr_id, offset,
				   static_cast<const uint8_t *>(src), len);
	metrics_.count_placed(now_ns(), len);
	return 0;
}

void HostApp::drain_completions(Conn &c)
{
	struct mrc_completion wc;

	while (mrc_poll_completion(c.core(), &wc) == 1) {
		bool recv = wc.opcode == MRC_OP_RECV;
		if (wc.wr_id >= (recv ? c.recvs_posted : c.sends.size())) {
			/* A completion for a WR never posted: a core bug. */
			metrics_.completion_errors++;
			continue;
		}
		uint32_t id = recv ? c.recvs[wc.wr_id] : c.sends[wc.wr_id];
		Flow &f = metrics_.flows[id];
		if (wc.status != MRC_WC_SUCCESS) {
			metrics_.completion_errors++;
			if (!f.status && f.done_ns == NOT_YET) {
				f.status = wc.status;
				metrics_.flows_failed++;
				if (metrics_.flow_finished)
					metrics_.flow_finished(id);
			}
			continue;
		}
		if (!recv) {
			f.sent_ns = now_ns();
			continue;
		}
		f.done_ns = now_ns();
		metrics_.bytes_delivered += wc.byte_len;
		metrics_.flows_done++;
		if (metrics_.flow_finished)
			metrics_.flow_finished(id);
	}
	post_pending(c);
}

/*
 * A deadline at or before the last mrc_handle_timeout() means the core is
 * waiting to transmit (an ACK due while the NIC is busy, say): the pump
 * will ask for the packet; re-firing the timer at the same instant would
 * spin. Check back after TIMER_RETRY_NS in case nothing else wakes it.
 */
constexpr uint64_t TIMER_RETRY_NS = 1000;

void HostApp::rearm_timer(Conn &c)
{
	uint64_t deadline = mrc_next_deadline(c.core());
	uint64_t at = deadline;

	if (deadline != UINT64_MAX) {
		at = std::max(deadline, now_ns());
		if (c.timeout_ran && at <= c.timeout_ran_ns)
			at = c.timeout_ran_ns + TIMER_RETRY_NS;
	}
	if (at == c.timer_at)
		return;
	c.timer.Cancel();
	c.timer_at = at;
	if (at != UINT64_MAX)
		c.timer = Simulator::Schedule(NanoSeconds(at - now_ns()),
					      &HostApp::on_timer, this, &c);
}

/* Collect completions, re-arm the connection's timer and let it transmit. */
void HostApp::after_core_call(Conn &c)
{
	drain_completions(c);
	rearm_timer(c);
	if (!c.active) {
		c.active = true;
		active_.push_back(&c);
	}
	if (started_)
		pump();
}

void HostApp::on_timer(Conn *c)
{
	c->timer_at = UINT64_MAX;
	c->timeout_ran = true;
	c->timeout_ran_ns = now_ns();
	mrc_handle_timeout(c->core(), c->timeout_ran_ns);
	after_core_call(*c);
}

void HostApp::StartApplication()
{
	uint32_t planes = fabric_.config().planes;
	uint16_t dport = tcfg_.mode == MRC_MODE_ROCEV2 ? ROCE_UDP_PORT
						      : MR_UDP_PORT;
	TypeId udp = UdpSocketFactory::GetTypeId();

	for (uint32_t p = 0; p < planes; p++) {
		Ipv4Address a = fabric_.address(index_, p);
		Ptr<Socket> rx = Socket::CreateSocket(GetNode(), udp);
		NS_ABORT_MSG_IF(rx->Bind(InetSocketAddress(a, dport)),
				"bind failed");
		/* The IP TOS byte of each datagram: its ECN field (MR-CC-005). */
		rx->SetIpRecvTos(true);
		rx->SetRecvCallback(MakeCallback(&HostApp::receive, this, p));
		rx_socks_.push_back(rx);
		for (uint32_t e = 0; e < tcfg_.entropies; e++) {
			Ptr<Socket> tx = Socket::CreateSocket(GetNode(), udp);
			NS_ABORT_MSG_IF(
				tx->Bind(InetSocketAddress(a, ENTROPY_PORT_BASE + e)),
				"bind failed");
			tx_socks_.push_back(tx);
		}
	}
	started_ = true;
	pump();
}

void HostApp::StopApplication()
{
	started_ = false;
	pump_event_.Cancel();
	for (auto &kv : conns_)
		kv.second.timer.Cancel();
	for (auto &s : rx_socks_)
		s->Close();
	for (auto &s : tx_socks_)
		s->Close();
}

void HostApp::receive(uint32_t plane, Ptr<Socket> sock)
{
	Address from;
	Ptr<Packet> pkt;

	while ((pkt = sock->RecvFrom(from))) {
		InetSocketAddress src = InetSocketAddress::ConvertFrom(from);
		uint32_t peer = (src.GetIpv4().Get() >> 8) & 0xff;
		uint32_t entropy = src.GetPort() - ENTROPY_PORT_BASE;
		auto it = conns_.find(peer);
		uint32_t len = pkt->GetSize();
		if (it == conns_.end() || entropy >= tcfg_.entropies ||
		    len > buf_.size()) {
			metrics_.rx_unmatched++;
			continue;
		}
		Conn &c = it->second;
		pkt->CopyData(buf_.data(), len);
		unsigned int path = wire_to_path(c, plane, entropy);
		if (path >= num_paths()) {
			metrics_.rx_unmatched++;
			continue;
		}
		/* A switch that marked it set ECN to CE (11). */
		SocketIpTosTag tos;
		unsigned int rx_flags = 0;
		if (pkt->RemovePacketTag(tos) && (tos.GetTos() & 0x3) == 0x3)
			rx_flags |= MRC_RX_CE;
		mrc_recv_packet_ex(c.core(), buf_.data(), len, path, rx_flags,
				   now_ns());
		after_core_call(c);
	}
}

/*
 * Transmit for active connections in turn, one packet each, until they have
 * nothing more or the plane just used has NIC_QUEUE_PKTS queued; then wait
 * until that plane drains.
 */
void HostApp::pump()
{
	/*
	 * Waiting for a plane to drain: transmitting now would overfill it.
	 * Completions drained below may start flows and call back in here;
	 * the loop already running picks those up.
	 */
	if (pump_event_.IsRunning() || pumping_)
		return;
	pumping_ = true;

	uint64_t now = now_ns();
	double ns_per_byte = 1e9 / fabric_.link_bytes_per_sec();
	uint64_t slack = NIC_QUEUE_PKTS *
		static_cast<uint64_t>((tcfg_.mtu + MRC_MAX_HDR_LEN + WIRE_OVERHEAD) *
				      ns_per_byte);

	while (!active_.empty()) {
		Conn *c = active_.front();
		unsigned int path = 0;
		int n = mrc_next_packet(c->core(), buf_.data(), buf_.size(),
					&path, now);
		active_.pop_front();
		/* Building a packet can complete or fail work requests. */
		drain_completions(*c);
		rearm_timer(*c);
		if (n <= 0 || path >= num_paths()) {
			if (n < 0 || path >= num_paths())
				metrics_.core_tx_errors++;
			c->active = false;
			continue;
		}
		active_.push_back(c);

		uint32_t plane, entropy;
		path_to_wire(*c, path, plane, entropy);
		uint16_t dport = tcfg_.mode == MRC_MODE_ROCEV2 ? ROCE_UDP_PORT
							      : MR_UDP_PORT;
		Ptr<Packet> pkt = Create<Packet>(buf_.data(), n);
		/* ECT(0), so RED marks instead of dropping early. */
		SocketIpTosTag tos;
		tos.SetTos(0x02);
		pkt->AddPacketTag(tos);
		tx_socks_[plane * tcfg_.entropies + entropy]->SendTo(pkt, 0,
			InetSocketAddress(fabric_.address(c->peer, plane), dport));
		tx_packets_++;

		uint64_t &busy = plane_busy_until_[plane];
		busy = std::max(busy, now) +
		       static_cast<uint64_t>((n + WIRE_OVERHEAD) * ns_per_byte);
		if (busy > now + slack) {
			pump_event_ = Simulator::Schedule(
				NanoSeconds(busy - now - slack), &HostApp::pump, this);
			break;
		}
	}
	pumping_ = false;
}

void HostApp::add_stats(struct mrc_conn_stats &sum) const
{
	for (const auto &kv : conns_) {
		struct mrc_conn_stats s;
		mrc_get_stats(const_cast<Conn &>(kv.second).core(), &s);
		sum.tx_data += s.tx_data;
		sum.tx_retrans += s.tx_retrans;
		sum.tx_ctrl += s.tx_ctrl;
		sum.rx_data += s.rx_data;
		sum.rx_dup += s.rx_dup;
		sum.rx_ctrl += s.rx_ctrl;
		sum.rx_bad_crc += s.rx_bad_crc;
		sum.rx_malformed += s.rx_malformed;
		sum.rx_out_of_window += s.rx_out_of_window;
		sum.rx_no_recv_wr += s.rx_no_recv_wr;
		sum.in_error += s.in_error;
		sum.spurious_retrans += s.spurious_retrans;
		sum.tlp_probes += s.tlp_probes;
	}
}

uint64_t HostApp::path_stat_sum(uint64_t mrc_path_stats::*counter) const
{
	uint64_t n = 0;

	for (const auto &kv : conns_) {
		struct mrc_conn *core = const_cast<Conn &>(kv.second).core();
		for (unsigned int path = 0; path < num_paths(); path++) {
			struct mrc_path_stats ps;
			if (!mrc_get_path_stats(core, path, &ps))
				n += ps.*counter;
		}
	}
	return n;
}

} // namespace metaroce_sim
