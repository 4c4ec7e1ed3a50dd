// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * metaroce-sim: the MetaRoCE sans-IO core (or the same core in RoCEv2
 * go-back-N mode) on a simulated multi-plane fabric.
 *
 * Runs the requested configuration, then the same configuration without
 * loss or failures (the lossless reference), and prints one JSON object (or
 * CSV) with goodput, its ratio to the reference, FCTs, retransmissions,
 * integrity counters and simulator cost.
 */
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ns3/core-module.h"

#include "fabric.h"
#include "host_app.h"
#include "metrics.h"
#include "workload.h"

using namespace ns3;
using namespace metaroce_sim;

namespace {

struct RunConfig {
	FabricConfig fabric;
	TransportConfig transport;
	Workload workload = Workload::ONE_FLOW;
	uint64_t message_bytes = 0;	/* 0: per-workload default */
	uint32_t seed = 1;
	double max_sim_ms = 2000;
};

struct RunResult {
	uint64_t flows_total = 0;
	uint64_t flows_done = 0;
	uint64_t bytes_offered = 0;
	uint64_t bytes_delivered = 0;
	uint64_t bytes_corrupted = 0;
	uint64_t placements_out_of_range = 0;
	uint64_t completion_errors = 0;
	int first_error_status = 0;	/* enum mrc_wc_status of a failed flow */
	uint64_t rx_unmatched = 0;
	uint64_t core_tx_errors = 0;
	struct mrc_conn_stats core = {};
	uint64_t path_timeouts = 0;
	uint64_t path_silences = 0;
	uint64_t error_drops = 0;
	uint64_t queue_drops = 0;
	uint64_t ecn_marks = 0;
	uint64_t start_ns = 0;
	uint64_t end_ns = 0;	/* last receive completion, or the time limit */
	double goodput_gbps = 0;
	double fct_p50_us = 0;
	double fct_p99_us = 0;
	uint64_t bin_ns = 0;
	std::vector<uint64_t> placed_per_bin;
	uint64_t events = 0;
	double wall_s = 0;
};

uint64_t default_message_bytes(Workload w)
{
	switch (w) {
	case Workload::ONE_FLOW:
		return 16u << 20;
	case Workload::INCAST:
		return 1u << 20;
	case Workload::ALL_TO_ALL:
		return 256u << 10;
	case Workload::ALLREDUCE:
		return 1u << 20;
	}
	return 1u << 20;
}

double percentile(std::vector<double> v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = static_cast<size_t>(std::ceil(q * v.size()));
	return v[std::min(v.size() - 1, i ? i - 1 : 0)];
}

RunResult run_once(const RunConfig &rc)
{
	RngSeedManager::SetSeed(1);
	RngSeedManager::SetRun(rc.seed);

	RunResult r;
	Metrics m;
	uint64_t bytes = rc.message_bytes ? rc.message_bytes
					  : default_message_bytes(rc.workload);
	m.flows = make_flows(rc.workload, rc.fabric.hosts, bytes);

	Fabric fabric(rc.fabric);
	std::vector<Ptr<HostApp>> apps;
	for (uint32_t h = 0; h < rc.fabric.hosts; h++) {
		Ptr<HostApp> app =
			Create<HostApp>(fabric, h, rc.transport, m);
		fabric.host(h)->AddApplication(app);
		app->SetStartTime(Seconds(0));
		apps.push_back(app);
	}
	fabric.set_plane_listener([&](uint32_t plane, bool up) {
		for (const auto &app : apps)
			app->set_plane_state(plane, up);
	});
	for (uint32_t id = 0; id < m.flows.size(); id++) {
		apps[m.flows[id].src]->conn_to(m.flows[id].dst);
		apps[m.flows[id].dst]->expect(id);
	}
	m.flow_finished = [&](uint32_t id) {
		if (!m.flows[id].status)
			for (uint32_t next : m.flows[id].then_start)
				apps[m.flows[next].src]->start_flow(next);
		if (m.flows_done + m.flows_failed >= m.flows.size())
			Simulator::Stop();
	};
	for (uint32_t id : initial_flows(m.flows))
		Simulator::Schedule(Seconds(0), &HostApp::start_flow, apps[m.flows[id].src], id);

	Simulator::Stop(MilliSeconds(rc.max_sim_ms));
	auto t0 = std::chrono::steady_clock::now();
	Simulator::Run();
	r.wall_s = std::chrono::duration<double>(
			   std::chrono::steady_clock::now() - t0).count();
	r.events = Simulator::GetEventCount();

	std::vector<double> fcts;
	r.start_ns = UINT64_MAX;
	for (const Flow &f : m.flows) {
		r.bytes_offered += f.bytes;
		if (f.start_ns != NOT_YET)
			r.start_ns = std::min(r.start_ns, f.start_ns);
		if (f.status && !r.first_error_status)
			r.first_error_status = f.status;
		if (f.done_ns == NOT_YET)
			continue;
		r.end_ns = std::max(r.end_ns, f.done_ns);
		fcts.push_back((f.done_ns - f.start_ns) / 1e3);
	}
	if (r.start_ns == UINT64_MAX)
		r.start_ns = 0;
	if (m.flows_done < m.flows.size())
		r.end_ns = Simulator::Now().GetNanoSeconds();
	r.flows_total = m.flows.size();
	r.flows_done = m.flows_done;
	r.bytes_delivered = m.bytes_delivered;
	r.bytes_corrupted = m.bytes_corrupted;
	r.placements_out_of_range = m.placements_out_of_range;
	r.completion_errors = m.completion_errors;
	r.rx_unmatched = m.rx_unmatched;
	r.core_tx_errors = m.core_tx_errors;
	if (r.end_ns > r.start_ns)
		r.goodput_gbps = r.bytes_delivered * 8.0 / (r.end_ns - r.start_ns);
	r.fct_p50_us = percentile(fcts, 0.50);
	r.fct_p99_us = percentile(fcts, 0.99);
	r.bin_ns = m.bin_ns;
	r.placed_per_bin = m.placed_per_bin;
	for (const auto &app : apps) {
		app->add_stats(r.core);
		r.path_timeouts += app->path_stat_sum(&mrc_path_stats::ptos);
		r.path_silences +=
			app->path_stat_sum(&mrc_path_stats::silences);
	}
	r.error_drops = fabric.error_drops();
	r.queue_drops = fabric.queue_drops();
	r.ecn_marks = fabric.ecn_marks();

	Simulator::Destroy();
	return r;
}

/*
 * After a plane failure: the first time the delivery rate, in bins of
 * r.bin_ns, is back to `fraction` of the lossless rate scaled to the planes
 * still up. Bins before the failure and the final, partial bin are ignored.
 * Returns -1 if it never recovers.
 */
double recovery_ms(const RunConfig &rc, const RunResult &r,
		   double lossless_gbps, double fraction)
{
	uint64_t fail_ns = static_cast<uint64_t>(rc.fabric.fail_at_ms * 1e6);
	double remaining = (rc.fabric.planes - 1.0) / rc.fabric.planes;
	double want = fraction * remaining * lossless_gbps / 8.0 * r.bin_ns;
	uint64_t last_full = r.end_ns / r.bin_ns;

	for (uint64_t b = fail_ns / r.bin_ns + 1;
	     b < last_full && b < r.placed_per_bin.size(); b++)
		if (r.placed_per_bin[b] >= want)
			return ((b + 1) * r.bin_ns - fail_ns) / 1e6;
	return -1;
}

void usage(FILE *out)
{
	fprintf(out,
		"usage: metaroce-sim [options]\n"
		"  --transport metaroce|rocev2   core mode (default metaroce)\n"
		"  --workload one-flow|incast|all-to-all|allreduce\n"
		"  --nodes K --planes P          hosts and planes (64 x 8)\n"
		"  --loss P                      Bernoulli loss per packet\n"
		"  --burst-loss P [--burst-len L] bursty loss, mean rate P\n"
		"  --fail-plane I --fail-at-ms T [--fail-for-ms D] [--fail-notify]\n"
		"  --message-size BYTES          per message / allreduce chunk\n"
		"  --link-gbps G --link-delay-us D --plane-skew-us S\n"
		"  --no-ecn                      switches drop, never mark CE\n"
		"  --entropies E --mtu BYTES --window PKTS (default 512)\n"
		"  --cc-loss-share               a loss shrinks by its share (MR-CC-002)\n"
		"  --cc-loss-gate-us T           only a loss with T us of queue (MR-CC-007)\n"
		"  --initial-rtt-us T --ack-delay-us T --granularity-us T\n"
		"  --rto-us T                    core timers (20, 2, 2 us; 0: core default)\n"
		"  --seed S --max-sim-ms T\n"
		"  --json | --csv                output format (default json)\n"
		"  --help, -h                    this summary\n");
}

struct Args {
	int argc;
	char **argv;
	int i = 1;
	const char *value()
	{
		if (i + 1 >= argc) {
			fprintf(stderr, "metaroce-sim: %s needs a value\n", argv[i]);
			exit(2);
		}
		return argv[++i];
	}
	double number()
	{
		const char *v = value();
		char *end;
		double d = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || !std::isfinite(d) || d < 0) {
			fprintf(stderr, "metaroce-sim: bad value '%s' for %s\n", v,
				argv[i - 1]);
			exit(2);
		}
		return d;
	}
};

void print_json(const RunConfig &rc, const RunResult &r, const RunResult &ref,
		double recovery)
{
	double ratio = ref.goodput_gbps > 0 ? r.goodput_gbps / ref.goodput_gbps : 0;
	double wall = r.wall_s + ref.wall_s;
	printf("{\"transport\":\"%s\",\"workload\":\"%s\",\"nodes\":%u,"
	       "\"planes\":%u,\"entropies\":%u,\"loss\":%g,\"burst_loss\":%g,"
	       "\"link_gbps\":%g,\"message_size\":%" PRIu64 ",\"seed\":%u,",
	       rc.transport.mode == MRC_MODE_ROCEV2 ? "rocev2" : "metaroce",
	       workload_name(rc.workload), rc.fabric.hosts, rc.fabric.planes,
	       rc.transport.entropies, rc.fabric.loss, rc.fabric.burst_loss,
	       rc.fabric.link_gbps, r.bytes_offered / std::max<uint64_t>(1, r.flows_total),
	       rc.seed);
	printf("\"goodput_gbps\":%.4f,\"lossless_goodput_gbps\":%.4f,"
	       "\"goodput_ratio\":%.4f,\"retransmitted_packets\":%" PRIu64 ","
	       "\"fct_p50_us\":%.3f,\"fct_p99_us\":%.3f,"
	       "\"bytes_offered\":%" PRIu64 ",\"bytes_delivered\":%" PRIu64 ","
	       "\"bytes_corrupted\":%" PRIu64 ",\"flows\":%" PRIu64 ","
	       "\"flows_completed\":%" PRIu64 ",\"completion_errors\":%" PRIu64 ","
	       "\"first_error_status\":%d,",
	       r.goodput_gbps, ref.goodput_gbps, ratio, r.core.tx_retrans,
	       r.fct_p50_us, r.fct_p99_us, r.bytes_offered, r.bytes_delivered,
	       r.bytes_corrupted, r.flows_total, r.flows_done,
	       r.completion_errors, r.first_error_status);
	printf("\"spurious_retransmissions\":%" PRIu64 ","
	       "\"tail_loss_probes\":%" PRIu64 ",\"path_timeouts\":%" PRIu64 ","
	       "\"path_silences\":%" PRIu64 ",",
	       r.core.spurious_retrans, r.core.tlp_probes, r.path_timeouts,
	       r.path_silences);
	printf("\"data_packets\":%" PRIu64 ",\"ctrl_packets\":%" PRIu64 ","
	       "\"rx_duplicates\":%" PRIu64 ",\"rx_bad_crc\":%" PRIu64 ","
	       "\"rx_malformed\":%" PRIu64 ",\"rx_out_of_window\":%" PRIu64 ","
	       "\"rx_no_recv_wr\":%" PRIu64 ",\"rx_unmatched\":%" PRIu64 ","
	       "\"placements_out_of_range\":%" PRIu64 ",\"qps_in_error\":%u,"
	       "\"link_error_drops\":%" PRIu64 ",\"queue_drops\":%" PRIu64 ","
	       "\"ecn_marks\":%" PRIu64 ",",
	       r.core.tx_data, r.core.tx_ctrl, r.core.rx_dup, r.core.rx_bad_crc,
	       r.core.rx_malformed, r.core.rx_out_of_window,
	       r.core.rx_no_recv_wr, r.rx_unmatched, r.placements_out_of_range,
	       r.core.in_error, r.error_drops, r.queue_drops, r.ecn_marks);
	if (rc.fabric.fail_plane >= 0)
		printf("\"fail_plane\":%d,\"fail_at_ms\":%g,\"recovery_ms\":%.3f,",
		       rc.fabric.fail_plane, rc.fabric.fail_at_ms, recovery);
	printf("\"sim_time_ms\":%.4f,\"events\":%" PRIu64 ","
	       "\"events_per_sec\":%.0f,\"wall_time_s\":%.3f}\n",
	       (r.end_ns - r.start_ns) / 1e6, r.events + ref.events,
	       wall > 0 ? (r.events + ref.events) / wall : 0, wall);
}

void print_csv(const RunConfig &rc, const RunResult &r, const RunResult &ref)
{
	double ratio = ref.goodput_gbps > 0 ? r.goodput_gbps / ref.goodput_gbps : 0;
	printf("transport,workload,nodes,planes,loss,burst_loss,seed,goodput_gbps,"
	       "lossless_goodput_gbps,goodput_ratio,retransmitted_packets,"
	       "fct_p50_us,fct_p99_us,bytes_delivered,bytes_corrupted,"
	       "wall_time_s\n");
	printf("%s,%s,%u,%u,%g,%g,%u,%.4f,%.4f,%.4f,%" PRIu64 ",%.3f,%.3f,"
	       "%" PRIu64 ",%" PRIu64 ",%.3f\n",
	       rc.transport.mode == MRC_MODE_ROCEV2 ? "rocev2" : "metaroce",
	       workload_name(rc.workload), rc.fabric.hosts, rc.fabric.planes,
	       rc.fabric.loss, rc.fabric.burst_loss, rc.seed, r.goodput_gbps,
	       ref.goodput_gbps, ratio, r.core.tx_retrans, r.fct_p50_us,
	       r.fct_p99_us, r.bytes_delivered, r.bytes_corrupted,
	       r.wall_s + ref.wall_s);
}

} // namespace

int main(int argc, char **argv)
{
	RunConfig rc;
	/*
	 * Fabric-scale timers: the base RTT here is a few microseconds, the
	 * core's defaults assume a millisecond-scale software testbed.
	 */
	rc.transport.initial_rtt_ns = 20000;
	rc.transport.max_ack_delay_ns = 2000;
	rc.transport.granularity_ns = 2000;
	/*
	 * The largest window the core supports: 128 packets (its default) is
	 * about one BDP of an 8 x 100G host, so every hole at the window's
	 * left edge stalls the sender until it is repaired.
	 */
	rc.transport.window = MRC_MAX_WINDOW;
	bool csv = false;
	bool entropies_set = false;
	Args a{ argc, argv };

	for (; a.i < argc; a.i++) {
		std::string opt = argv[a.i];
		if (opt == "--transport") {
			std::string v = a.value();
			if (v == "metaroce")
				rc.transport.mode = MRC_MODE_METAROCE;
			else if (v == "rocev2")
				rc.transport.mode = MRC_MODE_ROCEV2;
			else {
				fprintf(stderr, "metaroce-sim: unknown transport '%s'\n",
					v.c_str());
				return 2;
			}
		} else if (opt == "--workload") {
			std::string v = a.value();
			if (!parse_workload(v, rc.workload)) {
				fprintf(stderr, "metaroce-sim: unknown workload '%s'\n",
					v.c_str());
				return 2;
			}
		} else if (opt == "--loss") {
			rc.fabric.loss = a.number();
		} else if (opt == "--burst-loss") {
			rc.fabric.burst_loss = a.number();
		} else if (opt == "--burst-len") {
			rc.fabric.burst_len = a.number();
		} else if (opt == "--planes") {
			rc.fabric.planes = a.number();
		} else if (opt == "--nodes") {
			rc.fabric.hosts = a.number();
		} else if (opt == "--seed") {
			rc.seed = a.number();
		} else if (opt == "--fail-plane") {
			rc.fabric.fail_plane = a.number();
		} else if (opt == "--fail-at-ms") {
			rc.fabric.fail_at_ms = a.number();
		} else if (opt == "--fail-for-ms") {
			rc.fabric.fail_for_ms = a.number();
		} else if (opt == "--fail-notify") {
			rc.fabric.fail_notify = true;
		} else if (opt == "--message-size") {
			rc.message_bytes = a.number();
		} else if (opt == "--link-gbps") {
			rc.fabric.link_gbps = a.number();
		} else if (opt == "--link-delay-us") {
			rc.fabric.link_delay_us = a.number();
		} else if (opt == "--plane-skew-us") {
			rc.fabric.plane_skew_us = a.number();
		} else if (opt == "--no-ecn") {
			rc.fabric.ecn = false;
		} else if (opt == "--entropies") {
			rc.transport.entropies = a.number();
			entropies_set = true;
		} else if (opt == "--mtu") {
			rc.transport.mtu = a.number();
		} else if (opt == "--window") {
			rc.transport.window = a.number();
		} else if (opt == "--cc-loss-share") {
			rc.transport.cc_loss_share = true;
		} else if (opt == "--cc-loss-gate-us") {
			rc.transport.cc_loss_gate_ns = a.number() * 1e3;
		} else if (opt == "--initial-rtt-us") {
			rc.transport.initial_rtt_ns = a.number() * 1e3;
		} else if (opt == "--ack-delay-us") {
			rc.transport.max_ack_delay_ns = a.number() * 1e3;
		} else if (opt == "--granularity-us") {
			rc.transport.granularity_ns = a.number() * 1e3;
		} else if (opt == "--rto-us") {
			rc.transport.rto_ns = a.number() * 1e3;
		} else if (opt == "--max-sim-ms") {
			rc.max_sim_ms = a.number();
		} else if (opt == "--json") {
			csv = false;
		} else if (opt == "--csv") {
			csv = true;
		} else if (opt == "--help" || opt == "-h") {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "metaroce-sim: unknown option '%s'\n",
				opt.c_str());
			usage(stderr);
			return 2;
		}
	}
	if (rc.fabric.hosts < 2 || rc.fabric.hosts > 255 ||
	    rc.fabric.planes < 1 || rc.fabric.planes > MRC_MAX_PATHS ||
	    rc.fabric.loss >= 1 || rc.fabric.burst_loss >= 1 ||
	    rc.fabric.burst_len < 1 || rc.fabric.link_gbps <= 0 ||
	    rc.transport.entropies < 1 ||
	    (rc.fabric.fail_plane >= 0 &&
	     static_cast<uint32_t>(rc.fabric.fail_plane) >= rc.fabric.planes) ||
	    rc.transport.mtu < MRC_MIN_MTU || rc.transport.mtu > MRC_MAX_MTU ||
	    rc.transport.window > MRC_MAX_WINDOW) {
		fprintf(stderr, "metaroce-sim: option out of range (nodes 2..255, "
				"planes 1..%d, loss < 1, mtu %d..%d, window <= %d)\n",
			MRC_MAX_PATHS, MRC_MIN_MTU, MRC_MAX_MTU, MRC_MAX_WINDOW);
		return 2;
	}
	/* By default, use every path the core offers across the planes. */
	if (!entropies_set)
		rc.transport.entropies =
			std::max<uint32_t>(1, MRC_MAX_PATHS / rc.fabric.planes);
	if (rc.transport.mode == MRC_MODE_ROCEV2)
		rc.transport.entropies = 1;

	RunResult r = run_once(rc);
	RunConfig lossless = rc;
	lossless.fabric.loss = 0;
	lossless.fabric.burst_loss = 0;
	lossless.fabric.fail_plane = -1;
	bool same = rc.fabric.loss == 0 && rc.fabric.burst_loss == 0 &&
		    rc.fabric.fail_plane < 0;
	RunResult ref = same ? r : run_once(lossless);
	if (same) {
		ref.events = 0;
		ref.wall_s = 0;
	}
	double recovery = rc.fabric.fail_plane >= 0 ?
		recovery_ms(rc, r, ref.goodput_gbps, 0.85) : 0;

	if (csv)
		print_csv(rc, r, ref);
	else
		print_json(rc, r, ref, recovery);
	return 0;
}
