/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What a run measures: one record per message (flow), payload integrity, and
 * delivered bytes over simulated time.
 */
#ifndef METAROCE_SIM_METRICS_H
#define METAROCE_SIM_METRICS_H

#include <cstdint>
#include <functional>
#include <vector>

namespace metaroce_sim {

constexpr uint64_t NOT_YET = UINT64_MAX;

struct Flow {
	uint32_t src;
	uint32_t dst;
	uint64_t bytes;
	uint64_t start_ns = NOT_YET;	/* posted at the sender */
	uint64_t sent_ns = NOT_YET;	/* send completion at the sender */
	uint64_t done_ns = NOT_YET;	/* receive completion at the receiver */
	int status = 0;			/* first non-success completion status */
	/* Flows to start when this one has been received (allreduce). */
	std::vector<uint32_t> then_start;
};

struct Metrics {
	std::vector<Flow> flows;
	uint64_t bytes_delivered = 0;	/* payload of completed receive WRs */
	uint64_t bytes_placed = 0;	/* payload placed, first copies */
	uint64_t bytes_corrupted = 0;	/* placed bytes not matching the pattern */
	uint64_t placements_out_of_range = 0;
	uint64_t completion_errors = 0;
	uint64_t flows_done = 0;	/* received */
	uint64_t flows_failed = 0;	/* completed in error at either end */
	uint64_t rx_unmatched = 0;	/* datagrams no connection claims */
	uint64_t core_tx_errors = 0;	/* mrc_next_packet() failures */
	/* Called once a flow is received or has failed. */
	std::function<void(uint32_t)> flow_finished;
	/* bytes_placed per bin of bin_ns, for recovery after a failure. */
	uint64_t bin_ns = 1000000;
	std::vector<uint64_t> placed_per_bin;

	void count_placed(uint64_t now_ns, uint64_t len)
	{
		bytes_placed += len;
		uint64_t bin = now_ns / bin_ns;
		if (bin >= placed_per_bin.size())
			placed_per_bin.resize(bin + 1, 0);
		placed_per_bin[bin] += len;
	}
};

/*
 * The payload of message msg from src to dst: byte pos is byte pos % 8 of
 * pattern_word(..., pos / 8). Senders produce it, receivers check it: any
 * corruption, misplacement or mixing of messages shows up as a mismatch.
 */
static inline uint64_t pattern_word(uint32_t src, uint32_t dst, uint64_t msg,
				    uint64_t word)
{
	uint64_t x = (static_cast<uint64_t>(src) << 40) ^
		     (static_cast<uint64_t>(dst) << 20) ^ msg;
	x = (x + word) * 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static inline void pattern_fill(uint32_t src, uint32_t dst, uint64_t msg,
				uint64_t pos, uint8_t *out, uint32_t len)
{
	uint64_t end = pos + len;

	while (pos < end) {
		uint64_t w = pattern_word(src, dst, msg, pos >> 3);
		for (uint32_t b = pos & 7; b < 8 && pos < end; b++, pos++)
			*out++ = static_cast<uint8_t>(w >> (b * 8));
	}
}

/* Bytes of in[0..len) that differ from the pattern at pos. */
static inline uint64_t pattern_mismatches(uint32_t src, uint32_t dst,
					  uint64_t msg, uint64_t pos,
					  const uint8_t *in, uint32_t len)
{
	uint64_t end = pos + len, bad = 0;

	while (pos < end) {
		uint64_t w = pattern_word(src, dst, msg, pos >> 3);
		for (uint32_t b = pos & 7; b < 8 && pos < end; b++, pos++)
			bad += *in++ != static_cast<uint8_t>(w >> (b * 8));
	}
	return bad;
}

} // namespace metaroce_sim

#endif
