#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# metaroce-compliance against rdma_metaroce.ko over UDP, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-compliance.sh BUILD_DIR [MODE]
# MODE is the module's default_transport (metaroce, the default, or rocev2).
#
# netns mra holds mr0 on its veth0 (10.88.0.1) and the DUT-side helper
# tests/progs/metaroce_compliance_dut, which creates an ordinary verbs RC
# QP and MR per case; the suite runs in netns mrb (10.88.0.2, no device,
# so it owns UDP 4793/4791 there) and crafts and observes the packets.
# The helper makes each case's QP with metarocedv_create_qp() in the wire
# mode and with the paths the case asks for, whatever MODE is, so every
# case of both modes applies: each must pass (none n/a); the JSON report
# goes to the results directory.  The helper sets mr0's initial_rtt_ns to the suite's rtt_ns
# for its QPs and puts the device's value back when it exits.
# Afterwards no QP, CQ, MR or PD is left, the module unloads and dmesg is
# clean.
#
# covers: MR-WIRE-001
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE]}")
mode=${2:-metaroce}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

suite=$build/tools/compliance/metaroce-compliance
helper=$build/tests/progs/metaroce_compliance_dut
[ -x "$suite" ] || fail "$suite not built"
[ -x "$helper" ] || fail "$helper not built"

vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
trap mr_netns_cleanup EXIT
vm_netns_pair mra mrb || fail "vm_netns_pair"
ip netns exec mra rdma link add mr0 type metaroce netdev veth0 || fail "rdma link add mr0"
mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
mr_wait "mr0 IPv4 GID" grep -q 'ffff:0a58:0001' -r /sys/class/infiniband/mr0/ports/1/gids/
vm_install_provider "$build" || fail "installing the provider"
rtt=/sys/class/infiniband/mr0/initial_rtt_ns
read -r rtt0 <"$rtt" || fail "no $rtt"
mr_expect_error "Invalid argument" bash -c "echo 999 >$rtt"
mr_expect_error "Invalid argument" bash -c "echo 10000000001 >$rtt"

step "metaroce-compliance --target udp:10.88.0.1 ($mode)"
rc=0
ip netns exec mrb "$suite" --target udp:10.88.0.1 --local 10.88.0.2 \
	--dut-helper "ip netns exec mra $helper mr0" --json >"$RESULTS/compliance-$mode.json" || rc=$?
python3 - "$RESULTS/compliance-$mode.json" <<'PY' | tee -a "$RESULTS/results.txt"
import json, sys
doc = json.load(open(sys.argv[1]))
for r in doc["results"]:
    print(f'{r["id"]:14} {r["case"]:22} {r["status"]:5} {r["detail"]}')
print(f'passed {doc["passed"]} failed {doc["failed"]} n/a {doc["not_applicable"]}')
PY
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "metaroce-compliance exit status $rc"
passed=$(python3 - "$RESULTS/compliance-$mode.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
bad = [r["case"] for r in doc["results"] if r["status"] != "pass"]
if bad or len(doc["results"]) < 50:
    sys.exit(f"failed: {' '.join(bad)}; {len(doc['results'])} results")
print(doc["passed"])
PY
) || fail "metaroce-compliance: a case failed or was n/a"
[ "$rc" = 0 ] || fail "metaroce-compliance exit status $rc with no case failed"
[ "$passed" -gt 0 ] || fail "no case passed"
read -r v <"$rtt"
[ "$v" = "$rtt0" ] || fail "initial_rtt_ns is $v after the helper, was $rtt0"

step "resources"
for t in qp cq mr pd; do
	[ "$(mr_res_count $t)" = 0 ] || fail "$t left after the helper exited: $(rdma resource show $t)"
done

step "teardown"
mr_teardown
echo "PASS: metaroce-compliance ($mode, $passed cases) on $KVER"
