#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Hostile packets and isolation against rdma_metaroce.ko (issue 10; the
# negative verbs tests of issue 5), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-hostile.sh BUILD_DIR
#
# mr0 (netns mra) and mr1 (netns mrb) as in the other tests.
#   1. While metaroce_integrity moves verified data mr1 -> mr0 (client on
#      mr1), tests/progs/metaroce_hostile, sending from netns mra, forges packets at
#      mr1 over the veth (UDP 4793 and 4791): the access-control cases
#      (forged rkeys, another PD's MR, an MR without the access, out of
#      bounds; memory checked untouched, rem_access_err counted) and a
#      flood of >= 10^4 random and mutated packets, some at the live
#      server QP on mr0.  metaroce_hostile checks mr1's drop counters grew
#      by exactly what it sent per reason; here: mrb's UDP InErrors grew by
#      at least the datagrams the module gives back to UDP, mr0 counted the
#      packets aimed at its live QP, and the live transfer is byte-exact.
#   2. tests/progs/metaroce_negative between mr0 and mr1, in both wire
#      modes: lkeys and rkeys of another PD or process, wrong keys, out of
#      bounds, per-MR and per-QP access flags, posting in the wrong state,
#      registration of unmapped and read-only memory (IBTA statuses and
#      errnos; see the program).
#   3. Then no user QP, CQ, MR or PD is left, the module unloads and dmesg
#      is clean (vmtest checks dmesg again).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

integrity=$build/tests/progs/metaroce_integrity
hostile=$build/tests/progs/metaroce_hostile
negative=$build/tests/progs/metaroce_negative
for p in "$integrity" "$hostile" "$negative"; do
	[ -x "$p" ] || fail "$p not built"
done
packets=${METAROCE_HOSTILE_PACKETS:-10000}
export MR_PEER_TIMEOUT=${MR_PEER_TIMEOUT:-200}

vm_load_module "$(mr_ko "$build")" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"
rdma resource show qp link mr1/1 | grep -q "lqpn 1 type GSI" || fail "mr1 has no GSI QP1"

udp_inerrors() { mr_udp_stat "$1" InErrors; }

step "metaroce_hostile ($packets packets) during metaroce_integrity"
# The transfer runs until metaroce_hostile is done (--until).
rm -f hostile-done
( mr_peer hostile-live tcp:18516 "$integrity" -e -d @DEV@ -g "$gid" -- \
	-e -d @DEV@ -g "$gid" -u "$PWD/hostile-done" -S 3 10.88.0.1 ) >peer.txt 2>&1 &
peer=$!
# The server's QP on mr0 in RTS, with the PSN it expects.
live_qp() { rdma resource show qp link mr0/1 | awk '/type RC state RTS/ && !/comm \[/ {
	for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "rq-psn") p = $(i + 1) }
	print q ":" p; exit }'; }
have_live_qp() { [ -n "$(live_qp)" ]; }
vm_wait_until 60 have_live_qp || { cat peer.txt; fail "no live RC QP on mr0"; }
live=$(live_qp)
echo "live server QP on mr0: $live"
inerr0=$(udp_inerrors mrb)
mr0_crc0=$(mr_counter mr0 rx_bad_crc)
mr0_oow0=$(mr_counter mr0 rx_out_of_window)
rc=0
"$hostile" --netns mra -d mr1 -g "$gid" --victim-ip 10.88.0.2 --peer-ip 10.88.0.1 \
	-n "$packets" -S 7 --gsi --live "10.88.0.1:$live" >hostile.txt 2>&1 || rc=$?
cat hostile.txt
touch hostile-done
[ "$rc" = 0 ] || fail "metaroce_hostile exited with $rc"
inerr=$(( $(udp_inerrors mrb) - inerr0 ))
want=$(awk '/^expect udp_inerrors/ { print $3 }' hostile.txt)
echo "mrb UDP InErrors +$inerr (at least $want expected)"
[ "$inerr" -ge "$want" ] || fail "mrb UDP InErrors grew by $inerr, expected at least $want"

wait "$peer" || { cat peer.txt; fail "metaroce_integrity under hostile packets failed"; }
cat peer.txt cli-hostile-live.txt srv-hostile-live.txt
mr_integrity_passed hostile-live
# The live QP's own packets were all valid: mr0's drops are the forged ones.
for c in rx_bad_crc rx_out_of_window; do
	sent=$(awk -v k="live_${c#rx_}" '$1 == "sent" && $2 == k { print $3 }' hostile.txt)
	case $c in rx_bad_crc) d=$(( $(mr_counter mr0 $c) - mr0_crc0 )) ;;
	*) d=$(( $(mr_counter mr0 $c) - mr0_oow0 )) ;; esac
	echo "mr0 $c +$d (sent ${sent:-0} at the live QP)"
	[ "${sent:-0}" = 0 ] || [ "$d" -gt 0 ] || fail "mr0 counted none of the $c packets at its live QP"
	[ "$d" -le "${sent:-0}" ] || fail "mr0 $c grew by $d, more than the $sent forged"
done
grep -h '^sent total\|^counter' hostile.txt | sed 's/^/hostile: /' >>"$RESULTS/results.txt"

step "isolation and negative verbs (metaroce_negative), both wire modes"
for m in metaroce rocev2; do
	rc=0
	METAROCE_TRANSPORT=$m "$negative" -a mr0 -b mr1 -g "$gid" >"negative-$m.txt" 2>&1 || rc=$?
	sed "s/^/$m: /" "negative-$m.txt"
	[ "$rc" = 0 ] || fail "metaroce_negative ($m) exited with $rc"
	echo "negative $m: $(grep -c '^ok ' "negative-$m.txt") cases ok" >>"$RESULTS/results.txt"
done

step "resources"
for t in qp cq mr pd; do
	[ "$(mr_res_count $t)" = 0 ] || fail "$t left after the programs exited: $(rdma resource show $t)"
done

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: hostile packets and isolation on $KVER"
