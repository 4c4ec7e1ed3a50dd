// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// The core harness: the DUT is the userspace build of core/ driven
// in-process; packets pass as bytes and time is a simulated clock that
// collect() advances, running the core's timers on the way.
#include "compliance.hpp"

#include <cstring>
#include <utility>

extern "C" {
#include <metaroce/core.h>
}

namespace mrcomp {
namespace {

constexpr uint32_t core_rkey = 0x00abcd01;
constexpr uint64_t core_addr = 0x7f0000100000ull;
constexpr uint32_t core_mr_len = 1024 * 1024;
constexpr uint32_t core_qpn = 0x000321;
constexpr uint32_t core_psn = 0x000200;
constexpr uint64_t core_t0 = 1000000000ull;	// nonzero start time

struct Recv {
	uint64_t wr_id;
	uint32_t mr_off, len;
};

class CoreDut final : public Dut {
public:
	bool open(const DutSetup &s, DutInfo *info, std::string *) override
	{
		close();
		mrc_config_default(&cfg_, s.mode == Mode::rocev2 ?
						  MRC_MODE_ROCEV2 : MRC_MODE_METAROCE);
		cfg_.local_qpn = core_qpn;
		cfg_.remote_qpn = s.peer_qpn;
		cfg_.local_psn = core_psn;
		cfg_.remote_psn = s.peer_psn;
		cfg_.mtu = 1024;
		cfg_.num_paths = s.mode == Mode::rocev2 ? 1 : s.num_paths;
		mem_.assign(core_mr_len, 0);
		recvs_.clear();
		storage_.assign((mrc_conn_size() + 7) / 8, 0);
		conn_ = reinterpret_cast<mrc_conn *>(storage_.data());
		now_ = core_t0;
		if (mrc_conn_init(conn_, &cfg_, &callbacks, this, now_)) {
			conn_ = nullptr;
			return false;
		}
		*info = DutInfo{};
		info->qpn = core_qpn;
		info->psn = core_psn;
		info->rkey = core_rkey;
		info->addr = core_addr;
		info->mr_len = core_mr_len;
		info->mtu = cfg_.mtu;
		info->num_paths = cfg_.num_paths;
		info->window = cfg_.window;
		info->retry_cnt = cfg_.retry_cnt;
		info->virtual_time = true;
		info->answer_ns = 0;
		info->timer_ns = 5000000;	// 5 ms: 500 x max_ack_delay
		return true;
	}

	// What the owner of a QP runs when it destroys it: the core's last
	// word (MR-LOSS-012) is built now and left for the next collect().
	bool destroy_qp() override
	{
		if (!conn_)
			return false;
		mrc_conn_close(conn_);
		drain(&parting_);
		conn_ = nullptr;
		return true;
	}

	void close() override
	{
		destroy_qp();
		parting_.clear();
	}

	bool post_recv(uint64_t wr_id, uint32_t mr_off, uint32_t len) override
	{
		if (!conn_ || mr_off > mem_.size() || len > mem_.size() - mr_off)
			return false;
		recvs_.push_back({wr_id, mr_off, len});
		// The core's wr_id is our index: place_send() finds the buffer.
		return mrc_post_recv(conn_, recvs_.size() - 1, len) == 0;
	}

	bool post_send(uint64_t wr_id, uint32_t opcode, uint32_t mr_off,
		       uint32_t len, uint32_t rkey, uint64_t raddr) override
	{
		if (!conn_ || mr_off > mem_.size() || len > mem_.size() - mr_off)
			return false;
		sends_.push_back({wr_id, mr_off, len});
		mrc_send_wr wr{};
		wr.wr_id = sends_.size() - 1;
		wr.opcode = opcode;
		wr.length = len;
		wr.rkey = rkey;
		wr.remote_addr = raddr;
		return mrc_post_send(conn_, &wr, now_) == 0;
	}

	void inject(const Bytes &pkt, unsigned path) override
	{
		if (conn_)
			mrc_recv_packet(conn_, pkt.data(), pkt.size(), path, now_);
	}

	std::vector<RxPkt> collect(uint64_t wait_ns) override
	{
		std::vector<RxPkt> out = std::move(parting_);
		parting_.clear();
		uint64_t end = now_ + wait_ns;
		if (!conn_) {
			now_ = end;
			return out;
		}
		for (unsigned guard = 0; guard < 100000; guard++) {
			drain(&out);
			uint64_t d = mrc_next_deadline(conn_);
			if (d > end)
				break;
			if (d > now_)
				now_ = d;
			size_t before = out.size();
			mrc_handle_timeout(conn_, now_);
			drain(&out);
			// MR-CONN-007: a deadline still due after handling
			// with nothing sent means no timer work is left now.
			if (out.size() == before && mrc_next_deadline(conn_) <= now_) {
				if (now_ >= end)
					break;
				now_++;
			}
		}
		if (now_ < end)
			now_ = end;
		return out;
	}

	std::vector<Completion> poll() override
	{
		std::vector<Completion> out;
		mrc_completion c;
		while (conn_ && mrc_poll_completion(conn_, &c) == 1) {
			bool recv = c.opcode == MRC_OP_RECV ||
				    c.opcode == MRC_OP_RECV_RDMA_WITH_IMM;
			const auto &v = recv ? recvs_ : sends_;
			uint64_t id = c.wr_id < v.size() ? v[c.wr_id].wr_id : ~0ull;
			out.push_back({id, c.byte_len, c.opcode, c.status});
		}
		return out;
	}

	std::optional<Bytes> read_mem(uint32_t mr_off, uint32_t len) override
	{
		if (mr_off > mem_.size() || len > mem_.size() - mr_off)
			return std::nullopt;
		return Bytes(mem_.begin() + mr_off, mem_.begin() + mr_off + len);
	}

	std::optional<uint64_t> counter(const std::string &name) override
	{
		if (!conn_)
			return std::nullopt;
		mrc_conn_stats st;
		mrc_get_stats(conn_, &st);
		static const struct {
			const char *name;
			uint64_t mrc_conn_stats::*field;
		} fields[] = {
			{"rx_data", &mrc_conn_stats::rx_data},
			{"rx_dup", &mrc_conn_stats::rx_dup},
			{"rx_bad_crc", &mrc_conn_stats::rx_bad_crc},
			{"rx_malformed", &mrc_conn_stats::rx_malformed},
			{"rx_wrong_qpn", &mrc_conn_stats::rx_wrong_qpn},
			{"rx_out_of_window", &mrc_conn_stats::rx_out_of_window},
			{"rx_no_recv_wr", &mrc_conn_stats::rx_no_recv_wr},
			{"rx_place_err", &mrc_conn_stats::rx_place_err},
			{"tx_retrans", &mrc_conn_stats::tx_retrans},
		};
		for (const auto &f : fields)
			if (name == f.name)
				return st.*f.field;
		return std::nullopt;
	}

	uint64_t now() override { return now_; }

private:
	void drain(std::vector<RxPkt> *out)
	{
		uint8_t buf[MRC_MAX_PKT_LEN(MRC_MAX_MTU)];
		unsigned path;
		int n;
		while ((n = mrc_next_packet(conn_, buf, sizeof(buf), &path, now_)) > 0)
			out->push_back({Bytes(buf, buf + n), path, now_});
	}

	static CoreDut *self(void *u) { return static_cast<CoreDut *>(u); }

	static int read_payload(void *u, uint64_t wr_id, uint32_t off, void *dst,
				uint32_t len)
	{
		auto *d = self(u);
		if (wr_id >= d->sends_.size() || off > d->sends_[wr_id].len ||
		    len > d->sends_[wr_id].len - off)
			return -EINVAL;
		memcpy(dst, &d->mem_[d->sends_[wr_id].mr_off + off], len);
		return 0;
	}

	static int place_send(void *u, uint64_t wr_id, uint32_t off,
			      const void *src, uint32_t len)
	{
		auto *d = self(u);
		if (wr_id >= d->recvs_.size() || off > d->recvs_[wr_id].len ||
		    len > d->recvs_[wr_id].len - off)
			return -EINVAL;
		memcpy(&d->mem_[d->recvs_[wr_id].mr_off + off], src, len);
		return 0;
	}

	static int place_write(void *u, uint32_t rkey, uint64_t raddr,
			       const void *src, uint32_t len)
	{
		auto *d = self(u);
		if (rkey != core_rkey || raddr < core_addr ||
		    raddr - core_addr > core_mr_len ||
		    len > core_mr_len - (raddr - core_addr))
			return -EACCES;
		memcpy(&d->mem_[raddr - core_addr], src, len);
		return 0;
	}

	static constexpr mrc_callbacks callbacks = {
		.read_payload = read_payload,
		.place_send = place_send,
		.place_write = place_write,
		.read_remote = nullptr,
		.place_read = nullptr,
		.atomic = nullptr,
	};

	mrc_config cfg_{};
	std::vector<uint64_t> storage_;
	mrc_conn *conn_ = nullptr;
	std::vector<RxPkt> parting_;	// sent by destroy_qp(), not collected
	Bytes mem_;
	std::vector<Recv> recvs_, sends_;
	uint64_t now_ = core_t0;
};

}  // namespace

std::unique_ptr<Dut> make_core_dut() { return std::make_unique<CoreDut>(); }

}  // namespace mrcomp
