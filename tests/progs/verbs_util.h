// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// Verbs plumbing shared by the hardening programs (metaroce_hostile,
// metaroce_negative): open a device by name, bring an RC QP through
// INIT/RTR/RTS towards a peer named by GID and QPN, poll one completion
// with a bound, read a device counter from sysfs, open a UDP socket in
// another network namespace.  Nothing here checks
// behaviour; the programs do, with CHECK().
#ifndef METAROCE_TESTS_VERBS_UTIL_H
#define METAROCE_TESTS_VERBS_UTIL_H

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <infiniband/verbs.h>
#include "open_device.h"

namespace vu {

// The device called NAME, opened, or nullptr (reason on stderr).
inline ibv_context *open_device(const std::string &name)
{
	ibv_context *ctx = open_by_name(name);

	if (!ctx)
		std::fprintf(stderr, "cannot open device %s: %s\n", name.c_str(),
			     std::strerror(errno));
	return ctx;
}

// An RC QP on CQ with room for DEPTH WRs each way.
inline ibv_qp *create_rc(ibv_pd *pd, ibv_cq *cq, uint32_t depth = 16)
{
	ibv_qp_init_attr ia = {};

	ia.send_cq = ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &ia);
}

// RESET -> INIT with remote ACCESS; 0 or an errno.
inline int to_init(ibv_qp *qp, unsigned int access)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

// INIT -> RTR towards DQPN at DGID, expecting RQ_PSN first; 0 or an errno.
inline int to_rtr(ibv_qp *qp, uint32_t dqpn, uint32_t rq_psn,
		  const ibv_gid &dgid, int sgid_idx, ibv_mtu mtu = IBV_MTU_1024)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = dgid;
	a.ah_attr.grh.sgid_index = uint8_t(sgid_idx);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC |
					     IBV_QP_MIN_RNR_TIMER);
}

// RTR -> RTS sending from SQ_PSN; few retries so a dead peer is seen
// soon.  0 or an errno.
inline int to_rts(ibv_qp *qp, uint32_t sq_psn, uint8_t retry_cnt = 7)
{
	ibv_qp_attr a = {};

	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC);
}

// The IPv4-mapped GID ::ffff:A.B.C.D of an address in network order.
inline ibv_gid ipv4_gid(uint32_t addr_be)
{
	ibv_gid g = {};

	g.raw[10] = g.raw[11] = 0xff;
	std::memcpy(g.raw + 12, &addr_be, 4);
	return g;
}

// One completion of CQ into WC within SECONDS: 1, 0 on timeout, -1 on a
// poll error.  The bound only keeps a lost completion from hanging the
// test; it is not a timing check.
inline int poll_one(ibv_cq *cq, ibv_wc &wc, double seconds = 30)
{
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration<double>(seconds);

	for (;;) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n != 0)
			return n > 0 ? 1 : -1;
		if (std::chrono::steady_clock::now() > end)
			return 0;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
}

// Lines of /proc/self/maps that map a uverbs device (mapped rings).
inline std::vector<std::string> uverbs_maps()
{
	std::ifstream maps("/proc/self/maps");
	std::vector<std::string> out;
	std::string line;

	while (std::getline(maps, line))
		if (line.find("/dev/infiniband/uverbs") != std::string::npos)
			out.push_back(line);
	return out;
}

// Device counter NAME of "rdma statistic" (sysfs hw_counters), or -1.
inline long long counter(const std::string &dev, const std::string &name)
{
	std::ifstream f("/sys/class/infiniband/" + dev + "/ports/1/hw_counters/" +
			name);
	long long v = -1;

	if (!(f >> v))
		return -1;
	return v;
}

// Wait (bounded) until PRED() holds; whether it did.
template <class Pred> bool wait_for(Pred pred, double seconds = 20)
{
	auto end = std::chrono::steady_clock::now() +
		   std::chrono::duration<double>(seconds);

	while (!pred()) {
		if (std::chrono::steady_clock::now() > end)
			return pred();
		std::this_thread::sleep_for(std::chrono::milliseconds(2));
	}
	return true;
}

/*
 * A UDP socket in network namespace NAME (ip netns), or in ours for "";
 * -1 on failure.  The program itself stays in its namespace: sysfs there
 * shows the devices' counters, an "ip netns exec" one would not.
 */
inline int netns_socket(const std::string &name)
{
	int self, ns, fd = -1;

	if (name.empty())
		return socket(AF_INET, SOCK_DGRAM, 0);
	self = open("/proc/self/ns/net", O_RDONLY);
	ns = open(("/var/run/netns/" + name).c_str(), O_RDONLY);
	if (self >= 0 && ns >= 0 && setns(ns, CLONE_NEWNET) == 0) {
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (setns(self, CLONE_NEWNET)) {
			std::fprintf(stderr, "setns back: %s\n", std::strerror(errno));
			std::exit(2);
		}
	} else {
		std::fprintf(stderr, "netns %s: %s\n", name.c_str(),
			     std::strerror(errno));
	}
	if (self >= 0)
		close(self);
	if (ns >= 0)
		close(ns);
	return fd;
}

} // namespace vu

#endif
