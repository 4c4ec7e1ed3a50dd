#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The RC data path of rdma_metaroce.ko through the generic uverbs write()
# commands (kernel/uverbs-rc-test.py: no libibverbs, no provider), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-uverbs.sh BUILD_DIR [MODE]
# MODE is the module's default_transport (metaroce, the default, or rocev2).
#
# Two devices, mr0 on veth0 of netns mra and mr1 on veth0 of netns mrb (so
# their packets cross namespaces through each namespace's UDP socket):
# SEND/RECV of 64, 4096 and 65536 bytes (> MTU) verified byte for byte,
# unsignaled/inline/zero-length sends, RDMA WRITE, wrong rkey ->
# IB_WC_REM_ACCESS_ERR with the responder untouched, flush in ERR; then the
# same with 1% netem loss on both ends.  "rdma resource" shows the QPs, CQs
# and MRs while they exist and none afterwards; "rdma statistic" counts the
# packets; the module unloads; dmesg stays clean.
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [MODE]}")
mode=${2:-metaroce}
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

test_py=$METAROCE_SRC/kernel/uverbs-rc-test.py
iters=${METAROCE_TEST_ITERS:-200}

vm_load_module "$(mr_ko "$build")" default_transport="$mode" || fail "loading the module"
mr_netns_devices

run_py() {
	local tag=$1
	shift
	python3 "$test_py" mr0 mr1 --iters "$iters" "$@" | tee "py-$tag.txt"
	grep -q '^PASS$' "py-$tag.txt" || fail "uverbs-rc-test ($tag)"
	sed -n "s/^result: /$mode $tag: /p" "py-$tag.txt" >>"$RESULTS/results.txt"
}

step "RC data path ($mode), no loss"
# Hold the objects at the end to see them in "rdma resource".
fifo=$(mktemp -d)/hold.fifo
mkfifo "$fifo"
python3 "$test_py" mr0 mr1 --iters "$iters" --hold <"$fifo" >py-clean.txt 2>&1 &
py_pid=$!
exec 3>"$fifo"
mr_wait "test program" grep -q -E '^(holding|FAIL)' py-clean.txt
cat py-clean.txt
grep -q holding py-clean.txt || fail "uverbs-rc-test (no loss)"
rdma resource show | tee res-held.txt
for t in qp cq mr pd; do
	[ "$(mr_res_count $t)" -ge 2 ] || fail "rdma resource show $t lists $(mr_res_count $t) objects of mr0/mr1"
done
exec 3>&-
wait "$py_pid" || fail "uverbs-rc-test (no loss) exited with $?"
grep -q '^PASS$' py-clean.txt || fail "uverbs-rc-test (no loss)"
sed -n "s/^result: /$mode clean: /p" py-clean.txt >>"$RESULTS/results.txt"
for t in qp cq mr pd; do
	[ "$(mr_res_count $t)" = 0 ] || fail "$t left after the program exited: $(rdma resource show $t)"
done

step "counters"
rdma statistic show link mr0/1 | tee stats0.txt
tx=$(mr_counter mr0 tx_packets)
rx=$(mr_counter mr1 rx_packets)
[ "${tx:-0}" -gt 0 ] && [ "${rx:-0}" -gt 0 ] || fail "tx_packets=$tx (mr0) rx_packets=$rx (mr1)"
[ "$(mr_counter mr1 rem_access_err)" -ge 1 ] || fail "mr1 rem_access_err not counted"

step "RC data path ($mode), 1% loss on both ends"
ip netns exec mra tc qdisc replace dev veth0 root netem loss 1%
ip netns exec mrb tc qdisc replace dev veth0 root netem loss 1%
run_py loss1 --lossy
rdma statistic show link mr0/1

step "teardown"
rdma link delete mr0
rdma link delete mr1
ip netns del mra
ip netns del mrb
trap - EXIT
vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
vm_dmesg_check || fail "dmesg"
cat "$RESULTS/results.txt"
echo "PASS: uverbs RC data path ($mode) on $KVER"
