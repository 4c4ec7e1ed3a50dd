// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Per-packet cost of the sans-IO transport core (Google Benchmark).
//
//   Transfer         lossless RDMA WRITEs between two connections: the whole
//                    per-packet work of both ends (build, CRC, parse, place,
//                    ACK) per data packet, by mode and number of paths.
//   Transmit         sender only: a window of new data packets built
//                    (payload read, headers, CRC, path choice), by path count.
//   ReceiveInOrder   receiver only: a window of data packets fed in PSN order.
//   ReceiveReversed  the same window fed last-first: every packet is out of
//                    order until the last, the receiver's worst case.
//   SackProcessing   sender only: the ACKs that answer a window of which
//                    every other packet of every path was lost, i.e. the
//                    largest SACK state, by window size and path count.
//   LossyTransfer    RDMA WRITEs over links with a delay and random loss:
//                    each end's core time per delivered data packet, by
//                    loss (per mille) and path count.  Loss must not make
//                    the core's own work per packet grow much: it runs on
//                    the CPU that also moves the packets.
//
// Time is a simulated clock advanced per packet; nothing here sleeps.
#include <benchmark/benchmark.h>

#include <metaroce/core.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace {

constexpr uint32_t kMtu = 1024;
constexpr uint32_t kRkey = 0x77;
constexpr size_t kPktCap = MRC_MAX_PKT_LEN(kMtu);

int read_payload(void *, uint64_t wr_id, uint32_t offset, void *dst,
		 uint32_t len)
{
	std::memset(dst, static_cast<int>((wr_id + offset) & 0xff), len);
	return 0;
}

int place_send(void *, uint64_t, uint32_t, const void *src, uint32_t len)
{
	benchmark::DoNotOptimize(src);
	benchmark::DoNotOptimize(len);
	return 0;
}

int place_write(void *, uint32_t rkey, uint64_t, const void *src,
		uint32_t len)
{
	benchmark::DoNotOptimize(src);
	benchmark::DoNotOptimize(len);
	return rkey == kRkey ? 0 : -13; // -EACCES for a foreign rkey
}

// No READ or atomic callbacks: optional, and not benchmarked (MR-OPS-006).
constexpr mrc_callbacks kCallbacks = {read_payload, place_send, place_write,
				      nullptr, nullptr, nullptr};

struct ConnDeleter {
	void operator()(mrc_conn *c) const { std::free(c); }
};
using ConnPtr = std::unique_ptr<mrc_conn, ConnDeleter>;

ConnPtr alloc_conn()
{
	size_t sz = (mrc_conn_size() + 63) & ~size_t(63);
	return ConnPtr(static_cast<mrc_conn *>(std::aligned_alloc(64, sz)));
}

mrc_config make_config(mrc_mode mode, uint32_t paths, uint32_t window,
		       bool a_side)
{
	mrc_config cfg;
	mrc_config_default(&cfg, mode);
	cfg.mtu = kMtu;
	cfg.num_paths = paths;
	cfg.window = window;
	cfg.local_qpn = a_side ? 0x11 : 0x22;
	cfg.remote_qpn = a_side ? 0x22 : 0x11;
	cfg.local_psn = a_side ? 100 : 200;
	cfg.remote_psn = a_side ? 200 : 100;
	return cfg;
}

// Two connections joined back to back; packets cross instantly.
struct Pair {
	ConnPtr a = alloc_conn(), b = alloc_conn();
	uint64_t now = 1'000'000;
	std::array<uint8_t, kPktCap> buf{};

	Pair(mrc_mode mode, uint32_t paths, uint32_t window, uint32_t cwnd = 0)
	{
		init(a.get(), mode, paths, window, true, cwnd);
		init(b.get(), mode, paths, window, false, cwnd);
	}

	// cwnd 0 and rto_ns 0: the core's defaults
	void init(mrc_conn *c, mrc_mode mode, uint32_t paths, uint32_t window,
		  bool a_side, uint32_t cwnd, uint64_t rto_ns = 0)
	{
		mrc_config cfg = make_config(mode, paths, window, a_side);
		if (cwnd) {	// each path starts with and keeps cwnd
			cfg.init_cwnd = cwnd * cfg.num_paths;
			cfg.max_cwnd = cwnd;
		}
		if (rto_ns)
			cfg.rto_ns = rto_ns;
		if (mrc_conn_init(c, &cfg, &kCallbacks, nullptr, now))
			std::abort();
	}

	// Move every packet a has to send into b; returns how many moved.
	static uint64_t pump(mrc_conn *from, mrc_conn *to, uint8_t *buf,
			     uint64_t &now)
	{
		uint64_t n = 0;
		unsigned int path;
		int len;
		while ((len = mrc_next_packet(from, buf, kPktCap, &path, now)) > 0) {
			now += 100; // 100 ns per packet of simulated time
			mrc_recv_packet(to, buf, static_cast<size_t>(len), path, now);
			n++;
		}
		return n;
	}
};

void drain(mrc_conn *c)
{
	mrc_completion wc;
	while (mrc_poll_completion(c, &wc) > 0)
		benchmark::DoNotOptimize(wc);
}

// An RDMA WRITE of length bytes to the responder's only region.
mrc_send_wr write_wr(uint64_t wr_id, uint32_t length)
{
	mrc_send_wr wr{};
	wr.wr_id = wr_id;
	wr.opcode = MRC_OP_RDMA_WRITE;
	wr.length = length;
	wr.rkey = kRkey;
	wr.remote_addr = 0x10000;
	return wr;
}

// args: mode, paths
void BM_Transfer(benchmark::State &state)
{
	auto mode = static_cast<mrc_mode>(state.range(0));
	auto paths = static_cast<uint32_t>(state.range(1));
	Pair p(mode, paths, 256);
	constexpr uint32_t kMsg = 64 * 1024;
	uint64_t wr_id = 0, data_pkts = 0;

	for (auto _ : state) {
		mrc_send_wr wr = write_wr(++wr_id, kMsg);
		if (mrc_post_send(p.a.get(), &wr, p.now))
			state.SkipWithError("post_send failed");
		// Run until the message completes at the sender.
		for (int round = 0; round < 100000; round++) {
			data_pkts += Pair::pump(p.a.get(), p.b.get(), p.buf.data(), p.now);
			Pair::pump(p.b.get(), p.a.get(), p.buf.data(), p.now);
			mrc_completion wc;
			if (mrc_poll_completion(p.a.get(), &wc) > 0)
				break;
			uint64_t dl = mrc_next_deadline(p.b.get());
			if (dl != UINT64_MAX) {
				if (dl > p.now)
					p.now = dl;
				mrc_handle_timeout(p.b.get(), p.now);
			}
		}
		drain(p.b.get());
	}
	mrc_conn_stats st;
	mrc_get_stats(p.a.get(), &st);
	if (st.tx_retrans)
		state.SkipWithError("lossless transfer retransmitted");
	state.SetItemsProcessed(static_cast<int64_t>(data_pkts));
	state.SetBytesProcessed(static_cast<int64_t>(wr_id) * kMsg);
	state.counters["ns/pkt"] = benchmark::Counter(
		static_cast<double>(data_pkts),
		benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Post one RDMA WRITE of a whole window of packets at p's sender.
void post_window_write(Pair &p, uint32_t window)
{
	mrc_send_wr wr = write_wr(1, window * kMtu);
	if (mrc_post_send(p.a.get(), &wr, p.now))
		std::abort();
}

// One window of data packets as the sender first emits them.
std::vector<std::vector<uint8_t>> window_of_packets(Pair &p, uint32_t window,
						    std::vector<unsigned> &paths)
{
	post_window_write(p, window);
	std::vector<std::vector<uint8_t>> pkts;
	unsigned int path;
	int len;
	while ((len = mrc_next_packet(p.a.get(), p.buf.data(), kPktCap, &path,
				      p.now)) > 0) {
		pkts.emplace_back(p.buf.begin(), p.buf.begin() + len);
		paths.push_back(path);
	}
	return pkts;
}

// args: window, paths
void BM_Transmit(benchmark::State &state)
{
	auto window = static_cast<uint32_t>(state.range(0));
	auto paths = static_cast<uint32_t>(state.range(1));
	Pair p(MRC_MODE_METAROCE, paths, window, window);
	uint64_t pkts = 0;

	for (auto _ : state) {
		state.PauseTiming();
		p.init(p.a.get(), MRC_MODE_METAROCE, paths, window, true, window);
		post_window_write(p, window);
		state.ResumeTiming();
		unsigned int path;
		uint32_t n = 0;
		while (mrc_next_packet(p.a.get(), p.buf.data(), kPktCap, &path,
				       p.now) > 0)
			n++;
		if (n != window)
			state.SkipWithError("sender did not fill the window");
		pkts += n;
	}
	state.SetItemsProcessed(static_cast<int64_t>(pkts));
}

void receive_window(benchmark::State &state, bool reversed)
{
	auto window = static_cast<uint32_t>(state.range(0));
	Pair p(MRC_MODE_METAROCE, 1, window, window);
	std::vector<unsigned> paths;
	auto pkts = window_of_packets(p, window, paths);
	if (pkts.size() != window) {
		state.SkipWithError("sender did not fill the window");
		return;
	}
	for (auto _ : state) {
		state.PauseTiming();
		p.init(p.b.get(), MRC_MODE_METAROCE, 1, window, false, window);
		state.ResumeTiming();
		for (size_t i = 0; i < pkts.size(); i++) {
			size_t k = reversed ? pkts.size() - 1 - i : i;
			p.now += 100;
			if (mrc_recv_packet(p.b.get(), pkts[k].data(), pkts[k].size(),
					    paths[k], p.now) < 0)
				state.SkipWithError("data packet rejected");
		}
	}
	state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * window);
}

void BM_ReceiveInOrder(benchmark::State &state) { receive_window(state, false); }
void BM_ReceiveReversed(benchmark::State &state) { receive_window(state, true); }

// args: window, paths
void BM_SackProcessing(benchmark::State &state)
{
	auto window = static_cast<uint32_t>(state.range(0));
	auto npaths = static_cast<uint32_t>(state.range(1));
	uint64_t acks = 0;
	for (auto _ : state) {
		state.PauseTiming();
		Pair p(MRC_MODE_METAROCE, npaths, window, window);
		std::vector<unsigned> paths;
		auto pkts = window_of_packets(p, window, paths);
		// Packets are sprayed round-robin: every other one of each path
		// is lost, so every path has holes and acknowledged successors.
		for (size_t i = 0; i < pkts.size(); i++)
			if ((i / npaths) % 2 == 0)
				mrc_recv_packet(p.b.get(), pkts[i].data(),
						pkts[i].size(), paths[i], p.now);
		std::vector<std::vector<uint8_t>> ack_pkts;
		unsigned int path;
		int len;
		while ((len = mrc_next_packet(p.b.get(), p.buf.data(), kPktCap,
					      &path, p.now)) > 0)
			ack_pkts.emplace_back(p.buf.begin(), p.buf.begin() + len);
		p.now += 10'000;
		state.ResumeTiming();
		for (auto &ack : ack_pkts)
			mrc_recv_packet(p.a.get(), ack.data(), ack.size(), 0, p.now);
		acks += ack_pkts.size();
	}
	state.counters["acks/iter"] = benchmark::Counter(
		static_cast<double>(acks) / static_cast<double>(state.iterations()));
	state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * window);
}

// Core time of one call, added to acc.
template <typename F> auto timed(uint64_t &acc, F &&f)
{
	auto t0 = std::chrono::steady_clock::now();
	auto r = f();
	acc += static_cast<uint64_t>(
		std::chrono::duration_cast<std::chrono::nanoseconds>(
			std::chrono::steady_clock::now() - t0).count());
	return r;
}

// One direction of the lossy transfer: packets in order, each due
// delay_ns after it was sent.
struct Link {
	struct Pkt {
		uint64_t due;
		unsigned int path;
		std::vector<uint8_t> bytes;
	};
	std::deque<Pkt> q;
	uint64_t delay_ns;

	void send(const uint8_t *b, int len, unsigned int path, uint64_t now)
	{
		q.push_back({now + delay_ns, path, {b, b + len}});
	}

	// Hand every packet due by now to the receiving end, its core time
	// added to acc.
	void deliver(mrc_conn *to, uint64_t now, uint64_t &acc)
	{
		for (; !q.empty() && q.front().due <= now; q.pop_front()) {
			auto &k = q.front();
			timed(acc, [&] {
				return mrc_recv_packet(to, k.bytes.data(),
						       k.bytes.size(), k.path, now);
			});
		}
	}
};

// args: loss per mille, paths.  The sender may start one data packet per
// 100 us of simulated time (10 000 packets/s, the testbed's rate) over a
// 4 ms one-way delay, with the module's window (512) and perftest's ACK
// timeout, and keeps 8 WRITEs of 64 KiB posted; data packets are lost at
// random (a fixed seed), ACKs never.  Each iteration runs until 64 WRITEs
// completed.  The clock reads around each core call are counted in.
void BM_LossyTransfer(benchmark::State &state)
{
	auto loss = static_cast<uint32_t>(state.range(0));
	auto npaths = static_cast<uint32_t>(state.range(1));
	// perftest's local ACK timeout 14: 4.096 us << 14
	constexpr uint64_t kGap = 100'000, kDelay = 4'000'000,
			   kRto = 4096ull << 14;
	constexpr uint32_t kMsg = 64 * 1024, kPosted = 8, kMsgs = 64;
	constexpr uint64_t kPkts = uint64_t(kMsgs) * (kMsg / kMtu);
	Pair p(MRC_MODE_METAROCE, npaths, MRC_MAX_WINDOW);
	std::mt19937 rng(1);
	std::uniform_int_distribution<uint32_t> per_mille(0, 999);
	uint64_t a_ns = 0, b_ns = 0, delivered = 0;

	for (auto _ : state) {
		Link fwd{{}, kDelay}, rev{{}, kDelay};
		uint32_t posted = 0, done = 0;
		uint64_t wr_id = 0, steps = 0;

		p.init(p.a.get(), MRC_MODE_METAROCE, npaths, MRC_MAX_WINDOW,
		       true, 0, kRto);
		p.init(p.b.get(), MRC_MODE_METAROCE, npaths, MRC_MAX_WINDOW,
		       false, 0, kRto);
		while (done < kMsgs) {
			mrc_completion wc;
			unsigned int path;
			int len;

			// 100 simulated seconds: the transfer is stuck
			if (++steps > 1'000'000) {
				state.SkipWithError("transfer did not finish");
				return;
			}
			p.now += kGap;
			while (posted - done < kPosted && posted < kMsgs) {
				mrc_send_wr wr = write_wr(++wr_id, kMsg);
				if (timed(a_ns, [&] {
					    return mrc_post_send(p.a.get(), &wr, p.now);
				    }))
					state.SkipWithError("post_send failed");
				posted++;
			}
			for (mrc_conn *c : {p.a.get(), p.b.get()})
				if (mrc_next_deadline(c) <= p.now)
					timed(c == p.a.get() ? a_ns : b_ns, [&] {
						mrc_handle_timeout(c, p.now);
						return 0;
					});
			// the sender: one packet per gap
			len = timed(a_ns, [&] {
				return mrc_next_packet(p.a.get(), p.buf.data(),
						       kPktCap, &path, p.now);
			});
			if (len > 0 && per_mille(rng) >= loss)
				fwd.send(p.buf.data(), len, path, p.now);
			fwd.deliver(p.b.get(), p.now, b_ns);
			while ((len = timed(b_ns, [&] {
					return mrc_next_packet(p.b.get(), p.buf.data(),
							       kPktCap, &path, p.now);
				})) > 0)
				rev.send(p.buf.data(), len, path, p.now);
			rev.deliver(p.a.get(), p.now, a_ns);
			while (mrc_poll_completion(p.a.get(), &wc) > 0) {
				if (wc.status != MRC_WC_SUCCESS) {
					state.SkipWithError("WRITE failed");
					return;
				}
				done++;
			}
			drain(p.b.get());
		}
		delivered += kPkts;
	}
	mrc_conn_stats sa, sb;
	mrc_get_stats(p.a.get(), &sa);
	mrc_get_stats(p.b.get(), &sb);
	auto per_pkt = [&](uint64_t v) {
		return static_cast<double>(v) / static_cast<double>(delivered);
	};
	state.counters["sender_ns/pkt"] = per_pkt(a_ns);
	state.counters["receiver_ns/pkt"] = per_pkt(b_ns);
	// of the last iteration: one transfer of kMsgs WRITEs
	state.counters["acks/pkt"] = static_cast<double>(sb.tx_ctrl) / kPkts;
	state.counters["retrans/pkt"] = static_cast<double>(sa.tx_retrans) / kPkts;
	state.SetItemsProcessed(static_cast<int64_t>(delivered));
}

} // namespace

BENCHMARK(BM_Transfer)
	->ArgNames({"mode", "paths"})
	->Args({MRC_MODE_ROCEV2, 1})
	->Args({MRC_MODE_METAROCE, 1})
	->Args({MRC_MODE_METAROCE, 4})
	->Args({MRC_MODE_METAROCE, 8})
	->Args({MRC_MODE_METAROCE, 16});
BENCHMARK(BM_Transmit)
	->ArgNames({"window", "paths"})
	->ArgsProduct({{64, MRC_MAX_WINDOW}, {1, 4, 16}});
BENCHMARK(BM_ReceiveInOrder)->ArgName("window")->RangeMultiplier(2)->Range(32, MRC_MAX_WINDOW);
BENCHMARK(BM_ReceiveReversed)->ArgName("window")->RangeMultiplier(2)->Range(32, MRC_MAX_WINDOW);
BENCHMARK(BM_SackProcessing)
	->ArgNames({"window", "paths"})
	->ArgsProduct({benchmark::CreateRange(32, MRC_MAX_WINDOW, 2), {1, 4, 16}});

BENCHMARK(BM_LossyTransfer)
	->ArgNames({"loss_permille", "paths"})
	->ArgsProduct({{0, 10, 50}, {1, 4}})
	->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
