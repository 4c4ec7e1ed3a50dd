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

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <string>
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

struct Helper {
	std::unique_ptr<Dut> dut = make_core_dut();
	in_addr self{};
	uint64_t slow = 1;
	int sock = -1;
	sockaddr_in peer{};
	uint64_t last = 0;
	bool metaroce = true;	// the MetaRoCE header names the path
	unsigned paths = 1;

	void reply(const std::string &s)
	{
		printf("%s\n", s.c_str());
		fflush(stdout);
	}

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

	void open_qp(std::istringstream &in)
	{
		std::map<std::string, std::string> kv;
		std::string tok;
		while (in >> tok) {
			auto eq = tok.find('=');
			if (eq != std::string::npos)
				kv[tok.substr(0, eq)] = tok.substr(eq + 1);
		}
		DutSetup s;
		s.mode = kv["mode"] == "rocev2" ? Mode::rocev2 : Mode::metaroce;
		s.num_paths = std::stoul(kv["paths"], nullptr, 0);
		s.peer_qpn = std::stoul(kv["peer_qpn"], nullptr, 0);
		s.peer_psn = std::stoul(kv["peer_psn"], nullptr, 0);
		uint16_t port = s.mode == Mode::rocev2 ? 4791 : 4793;
		peer = sockaddr_in{};
		peer.sin_family = AF_INET;
		peer.sin_port = htons(port);
		if (inet_pton(AF_INET, kv["peer_addr"].c_str(), &peer.sin_addr) != 1)
			return reply("err bad peer_addr");
		sockaddr_in sa{};
		sa.sin_family = AF_INET;
		sa.sin_port = htons(port);
		sa.sin_addr = self;
		sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		int one = 1;
		setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(sock, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)))
			return reply(std::string("err bind: ") + strerror(errno));
		DutInfo i;
		std::string err;
		if (!dut->open(s, &i, &err))
			return reply("err " + err);
		metaroce = s.mode == Mode::metaroce;
		paths = i.num_paths;
		last = mono_ns();
		std::ostringstream o;
		o << "ok qpn=" << i.qpn << " psn=" << i.psn << " rkey=" << i.rkey
		  << " addr=" << i.addr << " mr_len=" << i.mr_len << " mtu=" << i.mtu
		  << " paths=" << i.num_paths << " window=" << i.window
		  << " retry_cnt=" << i.retry_cnt << " answer_ns=" << 30000000
		  << " timer_ns=" << i.timer_ns * slow;
		reply(o.str());
	}

	void command(const std::string &line)
	{
		std::istringstream in(line);
		std::string cmd;
		in >> cmd;
		unsigned long long a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
		if (cmd == "open") {
			open_qp(in);
		} else if (cmd == "close") {
			dut->close();
			if (sock >= 0)
				close(sock);
			sock = -1;
			reply("ok");
		} else if (cmd == "recv" && (in >> a >> b >> c)) {
			reply(dut->post_recv(a, b, c) ? "ok" : "err post_recv");
		} else if (cmd == "send" && (in >> a >> b >> c >> d >> e >> f)) {
			bool ok = dut->post_send(a, b, c, d, e, f);
			pump();	// the core builds the packets at once
			reply(ok ? "ok" : "err post_send");
		} else if (cmd == "poll") {
			for (const auto &w : dut->poll())
				printf("wc %llu %u %u %u\n", (unsigned long long)w.wr_id,
				       w.status, w.opcode, w.byte_len);
			reply("ok");
		} else if (cmd == "mem" && (in >> a >> b)) {
			auto m = dut->read_mem(a, b);
			if (!m)
				return reply("err range");
			std::string hex;
			char x[3];
			for (uint8_t v : *m) {
				snprintf(x, sizeof(x), "%02x", v);
				hex += x;
			}
			reply("ok " + hex);
		} else if (cmd == "counter" && (in >> cmd)) {
			auto v = dut->counter(cmd);
			reply(v ? "ok " + std::to_string(*v) : "err unknown counter");
		} else {
			reply("err unknown command");
		}
	}
};

}  // namespace

int main(int argc, char **argv)
{
	Helper h;
	if (argc != 3 || inet_pton(AF_INET, argv[1], &h.self) != 1 ||
	    (h.slow = strtoull(argv[2], nullptr, 0)) == 0) {
		fprintf(stderr, "usage: core-udp-dut ADDR SLOW\n");
		return 2;
	}
	std::string line;
	for (;;) {
		pollfd p[2] = {{0, POLLIN, 0}, {h.sock, POLLIN, 0}};
		::poll(p, h.sock >= 0 ? 2 : 1, 1);
		h.pump();
		if (h.sock >= 0 && (p[1].revents & POLLIN)) {
			h.receive();
			h.pump();
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			char buf[4096];
			if (!fgets(buf, sizeof(buf), stdin))
				return 0;
			line = buf;
			while (!line.empty() && line.back() == '\n')
				line.pop_back();
			h.pump();
			h.command(line);
		}
	}
}
