// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// A deliberately broken DUT: wraps a working one and falsifies what it
// sends or accepts in one named way.  The suite's own tests run every case
// through each fault and require the cases that check that behaviour to
// fail, so no case passes whatever the DUT does.
#include "compliance.hpp"

#include <cstring>

namespace mrcomp {

const char *const fault_names[] = {
	"tx-crc",	 // every packet the DUT sends has a wrong CRC32C
	"tx-version",	 // ... carries version 2
	"tx-path",	 // ... leaves on path 0 and names path 0
	"no-sack",	 // the DUT's ACKs carry no SACK ranges
	"ts-echo",	 // the DUT's ACKs echo a wrong timestamp
	"drop-retx",	 // the DUT never retransmits (RETX packets vanish)
	"rx-ignore-crc", // the DUT accepts packets whose CRC is wrong
	"close-silent",	 // the DUT sends nothing when it destroys its QP
	nullptr,
};

namespace {

class FaultyDut final : public Dut {
public:
	FaultyDut(std::unique_ptr<Dut> inner, std::string fault)
		: in_(std::move(inner)), fault_(std::move(fault)) {}

	bool open(const DutSetup &s, DutInfo *info, std::string *err) override
	{
		mode_ = s.mode;
		destroyed_ = false;
		return in_->open(s, info, err);
	}
	bool destroy_qp() override
	{
		destroyed_ = true;
		return in_->destroy_qp();
	}
	void close() override { in_->close(); }
	bool post_recv(uint64_t id, uint32_t off, uint32_t len) override
	{
		return in_->post_recv(id, off, len);
	}
	bool post_send(uint64_t id, uint32_t op, uint32_t off, uint32_t len,
		       uint32_t rkey, uint64_t raddr) override
	{
		return in_->post_send(id, op, off, len, rkey, raddr);
	}
	void inject(const Bytes &pkt, unsigned path) override
	{
		if (fault_ == "rx-ignore-crc" && pkt.size() >= 4) {
			Bytes fixed = pkt;
			reseal(fixed);
			in_->inject(fixed, path);
			return;
		}
		in_->inject(pkt, path);
	}
	std::vector<RxPkt> collect(uint64_t wait_ns) override
	{
		std::vector<RxPkt> out;
		for (auto &p : in_->collect(wait_ns)) {
			if (falsify(&p))
				out.push_back(std::move(p));
		}
		return out;
	}
	std::vector<Completion> poll() override { return in_->poll(); }
	std::optional<Bytes> read_mem(uint32_t off, uint32_t len) override
	{
		return in_->read_mem(off, len);
	}
	std::optional<uint64_t> counter(const std::string &n) override
	{
		return in_->counter(n);
	}
	uint64_t now() override { return in_->now(); }

private:
	// false: the packet is dropped.
	bool falsify(RxPkt *p)
	{
		Bytes &b = p->bytes;
		if (fault_ == "close-silent" && destroyed_)
			return false;
		if (b.size() < 20)
			return true;
		bool is_ack = b[1] == 0x10 && b.size() >= 40;
		if (fault_ == "tx-crc") {
			b[b.size() - 1] ^= 0x5a;
		} else if (mode_ != Mode::metaroce) {
			// the other faults falsify MetaRoCE headers only
		} else if (fault_ == "tx-version") {
			b[0] = static_cast<uint8_t>(0x20 | (b[0] & 0xf));
			reseal(b);
		} else if (fault_ == "tx-path") {
			p->path = 0;
			b[3] = 0;
			reseal(b);
		} else if (fault_ == "no-sack" && is_ack) {
			b[34] = 0;
			b.resize(36);
			seal(b);
		} else if (fault_ == "ts-echo" && is_ack) {
			b[23] ^= 0x11;
			reseal(b);
		} else if (fault_ == "drop-retx") {
			return !(b[1] >= 0x01 && b[1] <= 0x09 && (b[2] & 0x04));
		}
		return true;
	}

	std::unique_ptr<Dut> in_;
	std::string fault_;
	Mode mode_ = Mode::metaroce;
	bool destroyed_ = false;	// destroy_qp() since open()
};

}  // namespace

std::unique_ptr<Dut> make_faulty_dut(std::unique_ptr<Dut> inner,
				     const std::string &fault)
{
	for (const char *const *f = fault_names; *f; f++)
		if (fault == *f)
			return std::make_unique<FaultyDut>(std::move(inner), fault);
	return nullptr;
}

}  // namespace mrcomp
