#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/metaroce_rc_pingpong on rdma_metaroce.ko, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-pingpong.sh BUILD_DIR
#
# mr0 in netns mra is the server, mr1 in netns mrb the client; every run
# checks its messages (--chk) and must exit 0 on both sides with a result:
#   - --transport metaroce --paths 1 (4 KiB: 4 packets a message) and
#     --paths 4 (64 B and 16 KiB), and --transport rocev2 (16 KiB); each
#     side's statistics must name the transport asked for and show exactly
#     that many paths carrying packets, and a capture on mrb's veth0 of a
#     16 KiB run in each mode must show UDP 4793 only (metaroce) or RoCEv2
#     RC on 4791 only (rocev2); in that capture the client has more than
#     one PSN outstanding, and exactly one at most once both devices'
#     sysfs window is 1 (MR-FC-001);
#   - completion events (-e) on both sides;
#   - against an unmodified ibv_rc_pingpong --chk in the same wire mode
#     (METAROCE_TRANSPORT): ours as server in MetaRoCE mode, over the
#     number of paths the device gives the unmodified client (sysfs
#     paths), ours as client in RoCEv2 mode; and the --chk failure: our
#     server exits 1 naming the wrong message when an ibv_rc_pingpong
#     client sends without --chk (0x7b everywhere);
#   - 1% netem loss on both ends, both modes: messages still arrive
#     intact; retransmissions counted, SACKs in MetaRoCE mode;
#   - a wire-mode mismatch in both directions (MR-COMPAT-011): the
#     server's device drops the client's packets (rx_wrong_transport), no
#     side prints a result, and the client exits 1 with "transport retry
#     counter exceeded", RoCEv2 mode after its retries, MetaRoCE mode
#     within its give-up bound (MR-FAIL-007); the bounds below only
#     keep a hang from passing.
# Then no QP, CQ, MR or PD is left, no CRC/malformed drop was counted, the
# module unloads and dmesg is clean.  Throughputs and latencies go to
# $RESULTS/results.txt (reported, not asserted: the testbed is TCG).
# covers: MR-COMPAT-011 MR-FC-001
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

pp=$build/tools/metaroce_rc_pingpong
[ -x "$pp" ] || fail "$pp not built"
iters=${METAROCE_TEST_ITERS:-100}
server=10.88.0.1

vm_load_module "$(mr_ko "$build")" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)
[ "$(mr_gid_index mr1)" = "$gid" ] || fail "mr0 and mr1 list their IPv4 GIDs at different indexes"

# conn_stat FILE KEY: the value after KEY on FILE's "connection:" line.
conn_stat() {
	awk -v k="$2" '/^connection:/ { for (i = 2; i < NF; i++) if ($i == k) print $(i + 1) }' "$1"
}
# paths_used FILE: how many "path N:" lines show packets sent.
paths_used() {
	awk '/^path [0-9]+:/ { for (i = 3; i < NF; i++) if ($i == "tx_packets" && $(i + 1) > 0) n++ }
		END { print n + 0 }' "$1"
}

# expect_qp TAG MODE PATHS: both sides' statistics name MODE and PATHS
# paths, and exactly PATHS of them carried packets.
expect_qp() {
	local tag=$1 mode=$2 paths=$3 side f want
	want="transport: $mode, $paths path"
	[ "$paths" = 1 ] || want+=s
	for side in srv cli; do
		f=$side-$tag.txt
		grep -qx "$want" "$f" || { cat "$f"; fail "$tag ($side): no '$want'"; }
		[ "$(paths_used "$f")" = "$paths" ] ||
			{ cat "$f"; fail "$tag ($side): $(paths_used "$f") paths carried packets, expected $paths"; }
	done
}

# result TAG FILE: FILE's result lines, into results.txt.
result() {
	local line
	line=$(grep -h -e 'bytes in' -e 'usec/iter' -e '^latency:' "$2" | tr '\n' ' ') || :
	[ -n "$line" ] || { cat "$2"; fail "$1: no result in $2"; }
	echo "$1: $line" | tee -a "$RESULTS/results.txt"
}

# ours TAG MODE PATHS SIZE [ARGS...]: metaroce_rc_pingpong on both sides,
# --transport MODE (--paths PATHS in MetaRoCE mode), checked.
ours() {
	local tag=$1 mode=$2 paths=$3 size=$4
	shift 4
	local -a a=(-d @DEV@ -g "$gid" -s "$size" -n "$iters" --chk --transport "$mode" "$@")
	[ "$mode" = rocev2 ] || a+=(--paths "$paths")
	step "metaroce_rc_pingpong $tag: $mode, $paths path(s), $size B ${*:-}"
	mr_peer "$tag" tcp:18515 "$pp" "${a[@]}" -- "${a[@]}" "$server"
	result "$tag" "cli-$tag.txt"
	expect_qp "$tag" "$mode" "$paths"
}

# phase NAME: the seconds since the previous phase, into results.txt.
phase_start=$SECONDS
phase() {
	echo "phase $1: $((SECONDS - phase_start)) s" | tee -a "$RESULTS/results.txt"
	phase_start=$SECONDS
}
phase setup

step "wire modes and paths, lossless"
ours mr-p1 metaroce 1 4096
ours mr-p4-64 metaroce 4 64
mr_capture mr-p4 ours mr-p4 metaroce 4 16384
mr_expect_wire mr-p4 metaroce
# The devices' window (sysfs, MR-FC-001) bounds what a requester has
# outstanding: by default a 16-packet ping leaves at once; with window 1
# on both devices one PSN at a time, each sent once the previous one is
# acknowledged (window-check.py reads the client's view from the capture).
outstanding() {
	python3 "$METAROCE_SRC/tests/vm/window-check.py" "cap-$1.pcap" 10.88.0.2 |
		sed "s/^/$1: /" | tee -a "$RESULTS/results.txt" | awk '{ print $NF }'
}
w=$(outstanding mr-p4) || fail "window-check.py on mr-p4"
[ "$w" -gt 1 ] || fail "mr-p4: $w PSNs outstanding at most with the default window"
read -r window </sys/class/infiniband/mr0/window
for d in mr0 mr1; do echo 1 >/sys/class/infiniband/$d/window || fail "setting $d's window to 1"; done
iters_all=$iters iters=20
mr_capture mr-p4-w1 ours mr-p4-w1 metaroce 4 16384
iters=$iters_all
for d in mr0 mr1; do echo "$window" >/sys/class/infiniband/$d/window || fail "restoring $d's window"; done
w=$(outstanding mr-p4-w1) || fail "window-check.py on mr-p4-w1"
[ "$w" = 1 ] || fail "mr-p4-w1: $w PSNs outstanding at most with window 1"
mr_capture r2 ours r2 rocev2 1 16384
mr_expect_wire r2 rocev2
ours mr-p4-events metaroce 4 4096 -e
phase lossless

step "against an unmodified ibv_rc_pingpong"
# mr_peer's PROGRAM is env: each side names its own program.  Ours takes
# as many paths as the unmodified peer's QP gets from its device.
read -r dev_paths </sys/class/infiniband/mr1/paths
up=(ibv_rc_pingpong -d @DEV@ -g "$gid" -s 16384 -n "$iters")
mr_peer up-cli tcp:18515 env "$pp" -d @DEV@ -g "$gid" -s 16384 -n "$iters" --chk \
	--transport metaroce --paths "$dev_paths" -- METAROCE_TRANSPORT=metaroce "${up[@]}" --chk "$server"
result up-cli "srv-up-cli.txt"
result up-cli-upstream "cli-up-cli.txt"
grep -q 'invalid data' cli-up-cli.txt && fail "up-cli: ibv_rc_pingpong found invalid data"
grep -qx "transport: metaroce, $dev_paths paths" srv-up-cli.txt ||
	fail "up-cli: no metaroce QP of $dev_paths paths"
[ "$(paths_used srv-up-cli.txt)" = "$dev_paths" ] ||
	fail "up-cli: not $dev_paths paths carrying packets"
mr_peer up-srv tcp:18515 env METAROCE_TRANSPORT=rocev2 "${up[@]}" --chk \
	-- "$pp" -d @DEV@ -g "$gid" -s 16384 -n "$iters" --chk --transport rocev2 "$server"
result up-srv "cli-up-srv.txt"
grep -qx 'transport: rocev2, 1 path' cli-up-srv.txt || fail "up-srv: no rocev2 QP"
# --chk must notice messages that are not what the client sends with
# --chk: the run completes, then our server reports and exits 1.
MR_PEER_SRV_RC=1 mr_peer up-nochk tcp:18515 env "$pp" -d @DEV@ -g "$gid" -s 4096 -n 20 --chk \
	--transport metaroce -- METAROCE_TRANSPORT=metaroce ibv_rc_pingpong -d @DEV@ -g "$gid" \
	-s 4096 -n 20 "$server"
grep -q -- '--chk: 20 of 20 messages received were wrong; message 0 differs' srv-up-nochk.txt ||
	{ cat srv-up-nochk.txt; fail "up-nochk: no --chk report"; }

phase interop

step "1% loss on both ends"
for ns in mra mrb; do
	ip netns exec $ns tc qdisc replace dev veth0 root netem loss 1% || fail "netem in $ns"
done
ours mr-p4-loss1 metaroce 4 16384
ours r2-loss1 rocev2 1 16384
for ns in mra mrb; do
	ip netns exec $ns tc qdisc del dev veth0 root || fail "removing netem in $ns"
done
for tag in mr-p4-loss1 r2-loss1; do
	retx=$(( $(conn_stat "srv-$tag.txt" retransmits) + $(conn_stat "cli-$tag.txt" retransmits) ))
	sacks=$(( $(conn_stat "srv-$tag.txt" sacks_received) + $(conn_stat "cli-$tag.txt" sacks_received) ))
	echo "$tag: $retx retransmissions, $sacks SACKs received" | tee -a "$RESULTS/results.txt"
	[ "$retx" -gt 0 ] || fail "$tag: no retransmission counted under 1% loss"
	case $tag in
	mr-*) [ "$sacks" -gt 0 ] || fail "$tag: no SACK in MetaRoCE mode under loss" ;;
	*) [ "$sacks" = 0 ] || fail "$tag: SACKs counted in RoCEv2 mode" ;;
	esac
done

# mismatch TAG SERVER_MODE CLIENT_MODE: the client's packets arrive on the
# port of its mode and the server's device drops them; the client must
# give up with RETRY_EXC_ERR and exit 1, the server (which never hears
# from it, as ibv_rc_pingpong's would not) is stopped then.
mismatch() {
	local tag=$1 smode=$2 cmode=$3 srv_pid rc=0 wrong0 wrong t0 secs
	step "mismatch: server $smode, client $cmode"
	wrong0=$(mr_counter mr0 rx_wrong_transport)
	ip netns exec mra timeout 100 "$pp" -d mr0 -g "$gid" -n 5 --transport "$smode" \
		>"srv-$tag.txt" 2>&1 &
	srv_pid=$!
	vm_wait_until 30 mr_listening tcp:18515 || fail "$tag: server did not start: $(cat "srv-$tag.txt")"
	t0=$(date +%s%N)
	ip netns exec mrb timeout 60 "$pp" -d mr1 -g "$gid" -n 5 --transport "$cmode" "$server" \
		>"cli-$tag.txt" 2>&1 || rc=$?
	secs=$(( ($(date +%s%N) - t0) / 1000000 ))
	kill "$srv_pid" 2>/dev/null || :
	wait "$srv_pid" || :
	cat "cli-$tag.txt"
	[ "$rc" = 1 ] || fail "$tag: the client exited with $rc (124: hung), expected 1"
	grep -q 'failed status transport retry counter exceeded' "cli-$tag.txt" ||
		fail "$tag: the client did not fail with RETRY_EXC_ERR"
	! grep -q 'bytes in' "cli-$tag.txt" "srv-$tag.txt" || fail "$tag: a side printed a result"
	grep -q "^transport: $cmode, " "cli-$tag.txt" || fail "$tag: the client's QP is not $cmode"
	wrong=$(( $(mr_counter mr0 rx_wrong_transport) - wrong0 ))
	[ "$wrong" -gt 0 ] || fail "$tag: mr0 counted no rx_wrong_transport"
	echo "$tag: client gave up after $secs ms; mr0 dropped $wrong packets of the other wire mode" |
		tee -a "$RESULTS/results.txt"
}
phase lossy
mismatch mm-r2-client metaroce rocev2
mismatch mm-mr-client rocev2 metaroce
phase mismatch

step "resources and counters"
mr_check_clean_end

step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: metaroce_rc_pingpong on $KVER"
