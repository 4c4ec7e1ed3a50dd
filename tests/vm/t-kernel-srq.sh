#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shared receive queues of rdma_metaroce.ko through the provider built in
# this tree, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-srq.sh BUILD_DIR [MODE]
# MODE is the module's default_transport (metaroce, the default, or rocev2).
#
# mr0 in netns mra and mr1 in netns mrb, as in t-kernel-rc.sh:
#   - tests/progs/metaroce_srq_test: bad SRQ attributes (errno), SENDs of
#     1 B .. 3 MTUs into an SRQ shared by two QPs, IBV_EVENT_SRQ_LIMIT_REACHED
#     once per arming, IBV_EVENT_QP_LAST_WQE_REACHED for a QP moved to ERR
#     whose SRQ WQEs are not flushed but received by the other QP;
#   - the unmodified ibv_srq_pingpong --chk at 64 B, 4 KiB and 16 KiB
#     (> MTU), with its default 16 QPs and with -q 4 and a shallow SRQ
#     (-r 8: fewer receives than QPs hold, so QPs wait for reposts);
#   - ibv_srq_pingpong 4 KiB again with 1% netem loss on both ends.
# Afterwards no QP, CQ, MR, PD or SRQ is left, no CRC/malformed drop was
# counted, the module unloads and dmesg is clean.
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE]}")
mode=${2:-metaroce}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

iters=${METAROCE_TEST_ITERS:-500}
server=10.88.0.1
srq_test=$build/tests/progs/metaroce_srq_test
[ -x "$srq_test" ] || fail "$srq_test not built"

vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

step "SRQ verbs, limit and last-WQE events (metaroce_srq_test)"
"$srq_test" --rx mr0 --tx mr1 --gid "$gid" | tee srq-test.txt || fail "metaroce_srq_test"
grep -q '^PASS: SRQ' srq-test.txt || fail "metaroce_srq_test did not pass"

# srq_pingpong TAG SIZE ARGS...: the server on mr0, the client on mr1.
srq_pingpong() {
	local tag=$1 size=$2 line
	shift 2
	step "ibv_srq_pingpong $size B x $iters $* ($tag)"
	mr_peer "srq-$tag-$size" tcp:18515 ibv_srq_pingpong -d @DEV@ -g "$gid" -s "$size" \
		-n "$iters" --chk "$@" -- -d @DEV@ -g "$gid" -s "$size" -n "$iters" --chk "$@" "$server"
	line=$(grep -h 'bytes in' "cli-srq-$tag-$size.txt") || fail "srq_pingpong $size: no result"
	echo "$mode $tag ibv_srq_pingpong $size B $*: $line" | tee -a "$RESULTS/results.txt"
}

for size in 64 4096 16384; do
	srq_pingpong lossless "$size"
done
srq_pingpong lossless 4096 -q 4 -r 8

step "1% loss on both ends"
ip netns exec mra tc qdisc replace dev veth0 root netem loss 1% || fail "netem"
ip netns exec mrb tc qdisc replace dev veth0 root netem loss 1% || fail "netem"
srq_pingpong loss1 4096

step "resources and counters"
mr_check_clean_end
if rdma resource show srq >/dev/null 2>&1; then
	[ "$(mr_res_count srq)" = 0 ] || fail "SRQ left after the programs exited: $(rdma resource show srq)"
fi

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: SRQs and ibv_srq_pingpong ($mode) on $KVER"
