// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
// metaroce-compliance: run the MetaRoCE compliance cases against the
// userspace core (--target core) or a live implementation over UDP
// (--target udp:ADDR with a DUT-side helper, see README.md).
#include "compliance.hpp"

#include <cstdio>
#include <cstring>
#include <getopt.h>
#include <set>
#include <sstream>

using namespace mrcomp;

namespace {

void usage(FILE *f)
{
	fprintf(f,
		"usage: metaroce-compliance --target core|udp:ADDR [options]\n"
		"  --target core        run every case in-process against the userspace core\n"
		"  --target udp:ADDR    run them over UDP against the implementation at ADDR\n"
		"  --dut-helper CMD     (udp) shell command of the DUT-side helper\n"
		"  --local ADDR         (udp) the suite's own IPv4 address (default: any)\n"
		"  --case NAME          run only this case (repeatable)\n"
		"  --dut-fault FAULT    falsify the DUT's behaviour in one way (self-test)\n"
		"  --list               list the cases and faults and exit\n"
		"  --json               print one JSON object instead of a table\n"
		"  -h, --help           this text\n");
}

std::string json_escape(const std::string &s)
{
	std::string o;
	for (unsigned char c : s) {
		if (c == '"' || c == '\\') {
			o += '\\';
			o += static_cast<char>(c);
		} else if (c < 0x20) {
			char b[8];
			snprintf(b, sizeof(b), "\\u%04x", c);
			o += b;
		} else {
			o += static_cast<char>(c);
		}
	}
	return o;
}

const char *status_name(Status s)
{
	return s == Status::pass ? "pass" : s == Status::fail ? "fail" : "n/a";
}

}  // namespace

int main(int argc, char **argv)
{
	static const option opts[] = {
		{"target", required_argument, nullptr, 't'},
		{"dut-helper", required_argument, nullptr, 'H'},
		{"local", required_argument, nullptr, 'l'},
		{"case", required_argument, nullptr, 'c'},
		{"dut-fault", required_argument, nullptr, 'f'},
		{"list", no_argument, nullptr, 'L'},
		{"json", no_argument, nullptr, 'j'},
		{"help", no_argument, nullptr, 'h'},
		{nullptr, 0, nullptr, 0},
	};
	std::string target, helper, local = "0.0.0.0", fault;
	std::set<std::string> only;
	bool json = false, list = false;
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, nullptr)) != -1) {
		switch (c) {
		case 't': target = optarg; break;
		case 'H': helper = optarg; break;
		case 'l': local = optarg; break;
		case 'c': only.insert(optarg); break;
		case 'f': fault = optarg; break;
		case 'L': list = true; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	const auto &cases = all_cases();
	if (list) {
		for (const auto &k : cases)
			printf("%-22s %-14s %s\n", k.name, k.req, k.summary);
		for (const char *const *f = fault_names; *f; f++)
			printf("fault %s\n", *f);
		return 0;
	}
	for (const auto &n : only) {
		bool known = false;
		for (const auto &k : cases)
			known |= n == k.name;
		if (!known) {
			fprintf(stderr, "metaroce-compliance: unknown case %s\n", n.c_str());
			return 2;
		}
	}

	std::unique_ptr<Dut> dut;
	std::string err;
	if (target == "core") {
		dut = make_core_dut();
	} else if (target.rfind("udp:", 0) == 0 && target.size() > 4) {
		if (helper.empty()) {
			fprintf(stderr, "metaroce-compliance: --target udp needs --dut-helper\n");
			return 2;
		}
		dut = make_udp_dut(target.substr(4), local, helper, &err);
	} else {
		usage(stderr);
		return 2;
	}
	if (!dut) {
		fprintf(stderr, "metaroce-compliance: %s\n", err.c_str());
		return 2;
	}
	if (!fault.empty()) {
		dut = make_faulty_dut(std::move(dut), fault);
		if (!dut) {
			fprintf(stderr, "metaroce-compliance: unknown fault %s\n", fault.c_str());
			return 2;
		}
	}

	unsigned counts[3] = {};
	std::ostringstream js;
	js << "{\"target\": \"" << json_escape(target) << "\", \"results\": [";
	if (!json)
		printf("%-14s %-22s %-6s %s\n", "ID", "case", "status", "detail");
	bool first = true;
	for (const auto &k : cases) {
		if (!only.empty() && !only.count(k.name))
			continue;
		Result r = run_case(*dut, k);
		counts[static_cast<int>(r.status)]++;
		if (json) {
			js << (first ? "" : ",") << "\n  {\"id\": \"" << k.req
			   << "\", \"case\": \"" << k.name << "\", \"status\": \""
			   << status_name(r.status) << "\", \"detail\": \""
			   << json_escape(r.detail) << "\"}";
		} else {
			printf("%-14s %-22s %-6s %s\n", k.req, k.name,
			       status_name(r.status), r.detail.c_str());
			fflush(stdout);
		}
		first = false;
	}
	if (json) {
		js << "\n], \"passed\": " << counts[0] << ", \"failed\": " << counts[1]
		   << ", \"not_applicable\": " << counts[2] << "}\n";
		fputs(js.str().c_str(), stdout);
	} else {
		printf("%u passed, %u failed, %u n/a\n", counts[0], counts[1], counts[2]);
	}
	return counts[1] ? 1 : 0;
}
