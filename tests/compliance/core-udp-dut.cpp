// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// A DUT-side helper (tools/compliance/README.md) whose implementation is
// the userspace core behind a real UDP socket, so the udp harness of
// metaroce-compliance is tested on the host without a guest:
//
//   core-udp-dut ADDR SLOW
//
// binds ADDR:4793 (4791 in RoCEv2 mode) per opened QP and runs the core's
// clock SLOW times slower than real time, so the suite's reaction time
// over a socket stays small against the core's 100 us timers.
#include "compliance.hpp"
#include "dut_helper.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace mrcomp;

namespace {

uint64_t mono_ns()
{
	return std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}

// The core behind a UDP socket, as a helper backend (dut_helper.hpp).
struct CoreUdp final : HelperBackend {
	std::unique_ptr<Dut> dut = make_core_dut();
	in_addr self{};
	uint64_t slow = 1;
	int sock = -1;
	sockaddr_in peer{};
	uint64_t last = 0;
	bool metaroce = true;	// the MetaRoCE header names the path
	unsigned paths = 1;

	// Advance the core's clock by the (slowed) time that passed and send
	// what it has.
	void pump()
	{
		if (sock < 0)
			return;
		uint64_t t = mono_ns();
		uint64_t d = (t - last) / slow;
		last += d * slow;
		for (const auto &p : dut->collect(d))
			sendto(sock, p.bytes.data(), p.bytes.size(), 0,
			       reinterpret_cast<sockaddr *>(&peer), sizeof(peer));
	}

	void receive()
	{
		uint8_t buf[9000];
		ssize_t n = recv(sock, buf, sizeof(buf), 0);
		if (n > 0)
			dut->inject(Bytes(buf, buf + n),
				    metaroce && n >= 4 ? buf[3] % paths : 0);
	}

	// The suite's rtt_ns needs nothing here: the slowed clock already
	// makes the core's timers long against the suite's reaction.
	std::string open(const HelperOpen &o, HelperQp *q) override
	{
		DutSetup s;
		s.mode = o.mode;
		s.num_paths = o.paths;
		s.peer_qpn = o.peer_qpn;
		s.peer_psn = o.peer_psn;
		uint16_t port = s.mode == Mode::rocev2 ? 4791 : 4793;
		peer = sockaddr_in{};
		peer.sin_family = AF_INET;
		peer.sin_port = htons(port);
		if (inet_pton(AF_INET, o.peer_addr.c_str(), &peer.sin_addr) != 1)
			return "bad peer_addr";
		sockaddr_in sa{};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(port);
		sa.sin_addr = self;
		sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int one = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(sock, reinterpret_cast<sockaddr *>(&sa), sizeof(sa))) {
			std::string e = std::string("bind: ") + strerror(errno);
			close();
			return e;
		}
		std::string err;
		if (!dut->open(s, &q->info, &err)) {
			close();
			return err.empty() ? "cannot open the core" : err;
		}
		metaroce = s.mode == Mode::metaroce;
		paths = q->info.num_paths;
		last = mono_ns();
		q->info.answer_ns = 30000000;
		q->info.timer_ns *= slow;
		return {};
	}

	// mrc_conn_close(), and its parting packets leave before the core
	// is freed; the socket stays open until close().
	std::string destroy_qp() override
	{
		if (!dut->destroy_qp())
			return "no QP";
		pump();
		return {};
	}

	void close() override
	{
		destroy_qp();
		dut->close();
		if (sock >= 0)
			::close(sock);
		sock = -1;
	}

	std::string post_recv(uint64_t wr_id, uint32_t off, uint32_t len) override
	{
		return dut->post_recv(wr_id, off, len) ? "" : "post_recv";
	}

	std::string post_send(uint64_t wr_id, uint32_t op, uint32_t off,
			      uint32_t len, uint32_t rkey, uint64_t raddr) override
	{
		bool ok = dut->post_send(wr_id, op, off, len, rkey, raddr);
		pump();	// the core builds the packets at once
		return ok ? "" : "post_send";
	}

	std::vector<Completion> poll() override { return dut->poll(); }

	std::optional<Bytes> read_mem(uint32_t off, uint32_t len) override
	{
		return dut->read_mem(off, len);
	}

	std::optional<uint64_t> counter(const std::string &name) override
	{
		return dut->counter(name);
	}
};

}  // namespace

int main(int argc, char **argv)
{
	CoreUdp b;
	if (argc != 3 || inet_pton(AF_INET, argv[1], &b.self) != 1 ||
	    (b.slow = strtoull(argv[2], nullptr, 0)) == 0) {
		fprintf(stderr, "usage: core-udp-dut ADDR SLOW\n");
		return 2;
	}
	HelperServer server(b);
	for (;;) {
		pollfd p[2] = {{0, POLLIN, 0}, {b.sock, POLLIN, 0}};
		::poll(p, b.sock >= 0 ? 2 : 1, 1);
		b.pump();
		if (b.sock >= 0 && (p[1].revents & POLLIN)) {
			b.receive();
			b.pump();
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			char buf[4096];
			if (!fgets(buf, sizeof(buf), stdin))
				return 0;
			b.pump();
			fputs(server.command(buf).c_str(), stdout);
			fflush(stdout);
		}
	}
}
