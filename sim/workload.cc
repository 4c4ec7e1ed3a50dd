// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#include "workload.h"

namespace metaroce_sim {

static const struct {
	Workload w;
	const char *name;
} workload_names[] = {
	{ Workload::ONE_FLOW, "one-flow" },
	{ Workload::INCAST, "incast" },
	{ Workload::ALL_TO_ALL, "all-to-all" },
	{ Workload::ALLREDUCE, "allreduce" },
};

bool parse_workload(const std::string &name, Workload &out)
{
	for (const auto &n : workload_names) {
		if (name == n.name) {
			out = n.w;
			return true;
		}
	}
	return false;
}

const char *workload_name(Workload w)
{
	for (const auto &n : workload_names)
		if (n.w == w)
			return n.name;
	return "?";
}

static uint32_t add_flow(std::vector<Flow> &flows, uint32_t src, uint32_t dst,
			 uint64_t bytes)
{
	Flow f;
	f.src = src;
	f.dst = dst;
	f.bytes = bytes;
	flows.push_back(f);
	return flows.size() - 1;
}

std::vector<Flow> make_flows(Workload w, uint32_t hosts, uint64_t bytes)
{
	std::vector<Flow> flows;

	switch (w) {
	case Workload::ONE_FLOW:
		add_flow(flows, 0, 1, bytes);
		break;
	case Workload::INCAST:
		for (uint32_t h = 1; h < hosts; h++)
			add_flow(flows, h, 0, bytes);
		break;
	case Workload::ALL_TO_ALL:
		for (uint32_t s = 0; s < hosts; s++)
			for (uint32_t d = 0; d < hosts; d++)
				if (s != d)
					add_flow(flows, s, d, bytes);
		break;
	case Workload::ALLREDUCE: {
		uint32_t steps = 2 * (hosts - 1);
		/* step_flow[s][h]: host h's send in step s. */
		std::vector<std::vector<uint32_t>> step_flow(steps);
		for (uint32_t s = 0; s < steps; s++)
			for (uint32_t h = 0; h < hosts; h++)
				step_flow[s].push_back(
					add_flow(flows, h, (h + 1) % hosts, bytes));
		/* Host h+1 sends step s+1 after receiving step s from h. */
		for (uint32_t s = 0; s + 1 < steps; s++)
			for (uint32_t h = 0; h < hosts; h++)
				flows[step_flow[s][h]].then_start.push_back(
					step_flow[s + 1][(h + 1) % hosts]);
		break;
	}
	}
	return flows;
}

std::vector<uint32_t> initial_flows(const std::vector<Flow> &flows)
{
	std::vector<bool> started(flows.size(), false);
	for (const Flow &f : flows)
		for (uint32_t next : f.then_start)
			started[next] = true;
	std::vector<uint32_t> out;
	for (uint32_t i = 0; i < flows.size(); i++)
		if (!started[i])
			out.push_back(i);
	return out;
}

} // namespace metaroce_sim
