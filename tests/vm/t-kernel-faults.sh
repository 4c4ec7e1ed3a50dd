#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Fault campaigns against rdma_metaroce.ko (issue 10), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-faults.sh BUILD_DIR
#
# mr0 (netns mra, 10.88.0.1) and mr1 (netns mrb, 10.88.0.2) as in the other
# tests; tests/progs/metaroce_faults (usage at the top of its source) does
# the in-process parts.  Every campaign ends with a verified data check
# (tests/progs/metaroce_integrity, every opcode, both sides checking every
# byte) on the devices as the campaign left them (one for 2 and 3), and no
# user QP, CQ, MR or PD left on them ("rdma resource show").
#   1. many QPs: 500 RC pairs mr0 <-> mr1 (1000 QPs) connected at once,
#      a SEND checked on each; many MRs: one-page MRs on mr1 up to max_mr,
#      then ENOMEM, then all freed.  (CQ overflow is metaroce_cq_test's,
#      in t-kernel-verbs.sh, with and without mapped rings.)
#   2. netdev down/up during metaroce_faults traffic (verified SENDs both
#      ways): both ports follow their netdevs (veth: the peer loses carrier
#      too); each QP either goes on delivering verified data once the link
#      is back or, if the flap outlasted its retry budget (MR-LOSS-009,
#      MR-FAIL-007), failed cleanly with IBV_WC_RETRY_EXC_ERR (in TCG both
#      happen).  Down for good: both QPs fail cleanly with
#      IBV_WC_RETRY_EXC_ERR; nothing mismatched either way.
#   3. MTU change during a transfer: an MTU that still carries the QP's
#      path MTU (1500 -> 1200 -> 9000 -> 1500) completes byte-exact.  One
#      that does not (1000 < 1024 + headers) cannot: the port's active MTU
#      drops to 512 for new QPs, but a QP's path MTU is its own, fixed at
#      RTR as in IBTA and rdma_rxe (middle packets must be exactly path
#      MTU, the sender cannot re-segment), and its datagrams are DF like
#      rxe's, so metaroce_faults traffic's QPs fail cleanly with
#      IBV_WC_RETRY_EXC_ERR within the give-up bound.
#   4. kill -9 of either peer of metaroce_faults peer mid-transfer: the
#      survivor's QP fails with IBV_WC_RETRY_EXC_ERR (the time after the
#      peer's exit is printed next to (retry_cnt + 1) x T), the objects of
#      both processes are all freed.
#   5. churn: 4 threads creating and destroying PDs, CQs, MRs, RC and UD QPs
#      on mr1 while datagrams from mra hit their QP numbers and "rdma
#      resource show" lists them in a loop.
#   6. "rdma link delete mr1" during metaroce_faults traffic (a verified
#      SEND stream mr0 <-> mr1 in one process, CQ rings mapped): mr1's
#      context gets IBV_EVENT_DEVICE_FATAL and refuses work, mr0's QP
#      fails with IBV_WC_RETRY_EXC_ERR; a new mr1 works.
#   7. "modprobe -r rdma_metaroce" during the same traffic.  rdma_rxe
#      refuses ("in use"): it has no disassociate_ucontext, so ib_uverbs
#      pins the driver module for every open context (and "rdma link
#      delete" of an rxe device waits for its processes to close).
#      rdma_metaroce implements disassociate_ucontext, so nothing pins it:
#      the unload proceeds like a device removal, both contexts get
#      IBV_EVENT_DEVICE_FATAL, the program's calls fail and its destroys
#      succeed, no oops.  Reloaded, new devices work.
# Then no drop or error was counted on the fresh devices, the module
# unloads and dmesg is clean (vmtest checks dmesg again).  Timings go to
# $RESULTS/results.txt (not asserted: the bounds only catch hangs).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

faults=$build/tests/progs/metaroce_faults
integrity=$build/tests/progs/metaroce_integrity
for p in "$faults" "$integrity"; do
	[ -x "$p" ] || fail "$p not built"
done
server=10.88.0.1
export MR_PEER_TIMEOUT=${MR_PEER_TIMEOUT:-100}
ko=$(mr_ko "$build")

vm_load_module "$ko" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

result() { echo "$*" | tee -a "$RESULTS/results.txt"; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# add_link DEV NETNS: DEV on NETNS's veth0, ACTIVE with its IPv4 GID.
add_link() {
	ip netns exec "$2" rdma link add "$1" type metaroce netdev veth0 || fail "rdma link add $1"
	mr_wait "$1 ACTIVE" mr_port_is "$1" ACTIVE
	mr_wait "$1 IPv4 GID" grep -q 'ffff:0a58:' -r "/sys/class/infiniband/$1/ports/1/gids/"
}

no_user_objects() {
	local t
	for t in qp cq mr pd; do
		[ "$(mr_res_count $t)" = 0 ] || return 1
	done
}
check_no_user_objects() {
	mr_wait "$1: user objects freed" no_user_objects || :
	no_user_objects || fail "$1: objects left: $(rdma resource show)"
}

# verify TAG [BYTES]: a verified metaroce_integrity run mr1 -> mr0.
seed=100
verify() {
	local tag=$1 n=${2:-256K} line
	seed=$((seed + 1))
	mr_peer "verify-$tag" tcp:18516 "$integrity" -e -d @DEV@ -g "$gid" -- \
		-e -d @DEV@ -g "$gid" -b "$n" -S "$seed" "$server"
	mr_integrity_passed "verify-$tag"
	line=$(grep -h '^client: .* windows' "cli-verify-$tag.txt")
	echo "verified after $tag: $line"
	check_no_user_objects "$tag"
}

# The integrity server's QP on mr0 in RTS: a transfer is under way.
have_live_qp() { rdma resource show qp link mr0/1 | grep -v 'comm \[' | grep -q 'type RC state RTS'; }

# transfer_start TAG: metaroce_integrity mr1 -> mr0 in the background
# (pid in $transfer) until transfer_passed; returns once its QPs are
# connected.
transfer_start() {
	seed=$((seed + 1))
	rm -f "done-$1"
	( mr_peer "$1" tcp:18516 "$integrity" -e -d @DEV@ -g "$gid" -- \
		-e -d @DEV@ -g "$gid" -u "$PWD/done-$1" -S "$seed" "$server" ) >"peer-$1.txt" 2>&1 &
	transfer=$!
	vm_wait_until 60 have_live_qp || { cat "peer-$1.txt"; fail "$1: no live RC QP on mr0"; }
}
# transfer_passed TAG: it ends and completed byte-exact.
transfer_passed() {
	touch "done-$1"
	wait "$transfer" || { cat "peer-$1.txt" "cli-$1.txt" "srv-$1.txt"; fail "$1: transfer failed"; }
	mr_integrity_passed "$1"
	result "$1: $(grep -h '^client: .* windows' "cli-$1.txt")"
}
# cut_start TAG [ARGS]: metaroce_faults traffic mr0 <-> mr1 in the
# background (pid in $cut), returns once it runs.
cut_start() {
	local tag=$1
	shift
	rm -f "ready-$tag"
	"$faults" traffic -a mr0 -b mr1 -g "$gid" --ready "$PWD/ready-$tag" --gone none "$@" >"traffic-$tag.txt" 2>&1 &
	cut=$!
	mr_wait "$tag: traffic running" test -e "ready-$tag"
}
# cut_failed_cleanly TAG T0 WHAT: both QPs failed with IBV_WC_RETRY_EXC_ERR
# (WHAT cut the path at T0) and everything that arrived was verified.
cut_failed_cleanly() {
	local rc=0
	wait "$cut" || rc=$?
	result "$3: both QPs failed $(elapsed "$2") s after the cut"
	cat "traffic-$1.txt"
	[ "$rc" = 0 ] || fail "$1: metaroce_faults traffic exited with $rc"
	check_no_user_objects "$1"
}

step "baseline"
check_no_user_objects baseline
kmrs=$(rdma resource show pd | grep -c 'dev mr1 .*comm \[' || :)

step "1. many QPs and many MRs"
t0=$(now)
"$faults" many-qps -a mr0 -b mr1 -g "$gid" -n "${METAROCE_FAULTS_PAIRS:-500}" | tee many-qps.txt
grep -q '^PASS: many-qps' many-qps.txt || fail "many-qps"
result "$(grep '^many-qps:' many-qps.txt)"
# Each PD of a kernel consumer (ib_mad's) holds a DMA MR on a device
# without a local_dma_lkey: they count against max_mr.
"$faults" many-mrs -d mr1 --kernel-mrs "$kmrs" | tee many-mrs.txt
grep -q '^PASS: many-mrs' many-mrs.txt || fail "many-mrs"
result "$(grep '^many-mrs:' many-mrs.txt | tr '\n' ' ')"
verify many

step "2. netdev down/up during a transfer"
# A flap, down and up from one ip -batch: metaroce_faults traffic
# (verified SENDs both ways) across it.  Whether a QP rides it out depends
# on how long the flap lasts against its retry budget (retry_cnt
# retransmissions with the PTO doubling, MR-LOSS-009, at most B of
# MR-FAIL-007): both outcomes are clean.  The ports follow their netdevs:
# mr1's veth0 is set down, so mr1 reports IBV_EVENT_PORT_ERR and then
# IBV_EVENT_PORT_ACTIVE.  mr0's veth1 only loses its carrier, which the
# kernel reports through linkwatch; a flap shorter than linkwatch's run is
# coalesced into one "carrier up" change, so mr0 reports both events or
# neither, never an error without the recovery.
rm -f restored-flap
cut_start flap --until "$PWD/restored-flap"
printf 'link set veth0 down\nlink set veth0 up\n' | ip netns exec mrb ip -batch - ||
	fail "netdev down/up"
mr_wait "mr1 ACTIVE" mr_port_is mr1 ACTIVE
mr_wait "mr0 ACTIVE" mr_port_is mr0 ACTIVE
touch restored-flap
rc=0
wait "$cut" || rc=$?
cat traffic-flap.txt
[ "$rc" = 0 ] || fail "flap: metaroce_faults traffic exited with $rc"
for e in "port error" "port active"; do
	grep -q "^mr1: async event $e" traffic-flap.txt || fail "flap: mr1 had no $e event"
done
if grep -q "^mr0: async event port error" traffic-flap.txt; then
	grep -q "^mr0: async event port active" traffic-flap.txt ||
		fail "flap: mr0 reported a port error and no recovery"
fi
result "netdev down/up: $(grep -h 'survived\|failed cleanly' traffic-flap.txt | tr '\n' ' ')"
check_no_user_objects flap

# The integrity tool's TCP side channel would stall as well: a verbs-only
# stream shows the QPs giving up.
cut_start down-long
ip netns exec mrb ip link set veth0 down
t0=$(now)
mr_port_is mr1 DOWN || fail "mr1's port is $(mr_port_state mr1) with its netdev down"
mr_wait "mr0 DOWN (veth peer without carrier)" mr_port_is mr0 DOWN
cut_failed_cleanly down-long "$t0" "netdev down for good"
ip netns exec mrb ip link set veth0 up
mr_wait "mr1 ACTIVE" mr_port_is mr1 ACTIVE
mr_wait "mr0 ACTIVE" mr_port_is mr0 ACTIVE

step "3. MTU change during a transfer"
mtu_both() { ip netns exec mra ip link set veth0 mtu "$1" && ip netns exec mrb ip link set veth0 mtu "$1"; }
active_mtu() { ip netns exec mrb ibv_devinfo -d mr1 | awk '/active_mtu/ { print $2; exit }'; }
transfer_start mtu
for m in 1200 9000 1500; do
	sleep 0.5
	mtu_both $m || fail "MTU $m"
	echo "MTU $m: mr1 active_mtu $(active_mtu)"
	mr_port_is mr1 ACTIVE || fail "mr1 not ACTIVE at MTU $m"
done
transfer_passed mtu
# Below the path MTU: the datagrams are DF and do not fit (iptunnel_xmit()
# scrubs the skb's ignore_df), so the path is cut for the QPs.
cut_start mtu-small
mtu_both 1000
t0=$(now)
[ "$(active_mtu)" = 512 ] || fail "mr1's active MTU at netdev MTU 1000: $(active_mtu), expected 512"
cut_failed_cleanly mtu-small "$t0" "MTU 1000 under path MTU 1024"
mtu_both 1500
verify "netdev-and-MTU"

step "4. kill -9 of either peer mid-transfer"
kill_peer() {
	local victim=$1 spid cpid vpid surv
	ip netns exec mra "$faults" peer -d mr0 -g "$gid" >"peer-srv-$victim.txt" 2>&1 &
	spid=$!
	vm_wait_until 30 mr_listening tcp:18520 || fail "peer server did not start: $(cat "peer-srv-$victim.txt")"
	ip netns exec mrb "$faults" peer -d mr1 -g "$gid" "$server" >"peer-cli-$victim.txt" 2>&1 &
	cpid=$!
	mr_wait "both peers running" grep -q '^running' "peer-srv-$victim.txt" "peer-cli-$victim.txt"
	mr_wait "the client running" grep -q '^running' "peer-cli-$victim.txt"
	[ "$(mr_res_count qp)" -ge 2 ] || fail "rdma resource show lists $(mr_res_count qp) user QPs during the transfer"
	if [ "$victim" = srv ]; then vpid=$spid surv=cli; else vpid=$cpid surv=srv; fi
	kill -9 "$vpid"
	local rc=0
	wait "$vpid" || rc=$?
	[ "$rc" = 137 ] || fail "the killed peer exited with $rc"
	rc=0
	if [ "$surv" = srv ]; then wait "$spid" || rc=$?; else wait "$cpid" || rc=$?; fi
	cat "peer-$surv-$victim.txt"
	[ "$rc" = 0 ] || fail "the survivor of kill -9 $victim exited with $rc"
	result "kill -9 $victim: $(grep -h '^survivor:' "peer-$surv-$victim.txt")"
	check_no_user_objects "kill -9 $victim"
}
kill_peer cli
kill_peer srv
verify kill

step "5. concurrent create/destroy while datagrams hit the QP numbers"
( while :; do rdma resource show qp >/dev/null; rdma resource show mr >/dev/null; done ) &
lister=$!
"$faults" churn -d mr1 -g "$gid" --netns mra --ip 10.88.0.2 \
	-t "${METAROCE_FAULTS_THREADS:-4}" -n "${METAROCE_FAULTS_ITERATIONS:-400}" -S 5 | tee churn.txt
kill "$lister"
wait "$lister" || :
grep -q '^PASS: churn' churn.txt || fail "churn"
result "$(grep '^churn:' churn.txt)"
check_no_user_objects churn
verify churn

step "6. rdma link delete during traffic"
rm -f ready-del
"$faults" traffic -a mr0 -b mr1 -g "$gid" --ready "$PWD/ready-del" --gone b >traffic-del.txt 2>&1 &
tpid=$!
mr_wait "traffic running" test -e ready-del
t0=$(now)
timeout 60 ip netns exec mrb rdma link delete mr1 || fail "rdma link delete mr1 during traffic"
result "rdma link delete mr1 with live QPs took $(elapsed "$t0") s"
mr_dev_gone mr1 || fail "mr1 left after rdma link delete"
rc=0
wait "$tpid" || rc=$?
cat traffic-del.txt
[ "$rc" = 0 ] || fail "metaroce_faults traffic (link delete) exited with $rc"
check_no_user_objects "link delete"
add_link mr1 mrb
verify "link-delete"

step "7. modprobe -r during traffic"
# modprobe finds modules through modules.dep: a tree holding just ours.
modroot=$(mktemp -d)
mkdir -p "$modroot/lib/modules/$KVER/extra"
cp "$ko" "$modroot/lib/modules/$KVER/extra/"
touch "$modroot/lib/modules/$KVER/"modules.{order,builtin,builtin.modinfo}
depmod -b "$modroot" "$KVER" || fail "depmod of $modroot"
rm -f ready-rmmod
"$faults" traffic -a mr0 -b mr1 -g "$gid" --ready "$PWD/ready-rmmod" --gone both >traffic-rmmod.txt 2>&1 &
tpid=$!
mr_wait "traffic running" test -e ready-rmmod
t0=$(now)
timeout 60 modprobe -d "$modroot" -r rdma_metaroce || fail "modprobe -r rdma_metaroce during traffic"
result "modprobe -r rdma_metaroce with live QPs took $(elapsed "$t0") s"
[ ! -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce still loaded"
rc=0
wait "$tpid" || rc=$?
cat traffic-rmmod.txt
[ "$rc" = 0 ] || fail "metaroce_faults traffic (modprobe -r) exited with $rc"
vm_load_module "$ko" || fail "reloading the module"
add_link mr0 mra
add_link mr1 mrb
verify reload

step "resources and counters (fresh devices)"
mr_check_clean_end

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: fault campaigns on $KVER"
