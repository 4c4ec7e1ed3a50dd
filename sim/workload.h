/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Traffic patterns, as lists of messages (flows) between hosts. Flows with
 * no predecessor start at time 0; the others when the flow that lists them
 * in then_start has been received.
 */
#ifndef METAROCE_SIM_WORKLOAD_H
#define METAROCE_SIM_WORKLOAD_H

#include <cstdint>
#include <string>
#include <vector>

#include "metrics.h"

namespace metaroce_sim {

enum class Workload { ONE_FLOW, INCAST, ALL_TO_ALL, ALLREDUCE };

/* false if name is not a workload. */
bool parse_workload(const std::string &name, Workload &out);
const char *workload_name(Workload w);

/*
 * one-flow:   host 0 sends one message to host 1.
 * incast:     every other host sends one message to host 0.
 * all-to-all: every host sends one message to every other host.
 * allreduce:  ring reduce-scatter + all-gather: 2(K-1) steps; in each step
 *             every host sends one chunk to its ring successor, and starts
 *             step s+1 once it has received step s from its predecessor.
 * message_bytes is the size of each message (each chunk for allreduce).
 */
std::vector<Flow> make_flows(Workload w, uint32_t hosts, uint64_t message_bytes);

/* Flows that no other flow starts. */
std::vector<uint32_t> initial_flows(const std::vector<Flow> &flows);

} // namespace metaroce_sim

#endif
