#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Planes: a MetaRoCE device over two netdevs, configured with
# metaroce-plane (the module's generic netlink family), run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-planes.sh BUILD_DIR
# mr0 in netns mra and mr1 in netns mrb are joined by two veth pairs, plane
# 0 (veth0, 10.88.0.0/24, the devices' GIDs) and plane 1 (veth1,
# 10.88.1.0/24):
#   - bad requests fail with their errno (ENODEV, EEXIST, EBUSY,
#     EOPNOTSUPP, EPERM without CAP_NET_ADMIN) and change nothing;
#   - ibv_rc_pingpong --chk over both planes: each plane sends and
#     receives (its counters in "rdma statistic" and "metaroce-plane show");
#   - ib_write_bw while plane 1 goes down ("ip link set veth1 down") and
#     comes back: no error on either side, the plane took its paths out of
#     service and put them back; after it returned it carries traffic
#     again (a new pingpong; the transfer's own count is reported);
#   - plane 1 silent (netem loss 100% on mra's link): ibv_rc_pingpong
#     --chk completes over plane 0 and the core declared mr0's paths on
#     plane 1 failed (MR-FAIL-001; rdma statistic counts them there);
#   - every plane cut (netem loss 100% on both links of mra) during
#     ib_write_bw: its client QP fails with IBV_WC_RETRY_EXC_ERR
#     (MR-FAIL-007: at the latest (retry_cnt + 1) local ACK timeouts,
#     8 x 67 ms for perftest's 7 and 14, or 8 PTOs if that is longer),
#     and new QPs work once the links carry traffic again;
#   - del removes the plane; resources are clean (no tx_errors: packets
#     sent in the moment a link goes down count as tx_link_down), each
#     transport counter is the sum of its planes', the module unloads and
#     dmesg is clean.
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

tool=$build/tools/metaroce-plane
[ -x "$tool" ] || fail "$tool not built"
server=10.88.0.1

vm_load_module "$(mr_ko "$build")" || fail "loading the module"
mr_netns_devices
vm_install_provider "$build" || fail "installing the provider"
gid=$(mr_gid_index mr0)

step "plane 1: a second veth pair"
ip link add pl1a type veth peer name pl1b
ip link set pl1a netns mra
ip link set pl1b netns mrb
ip -n mra link set pl1a name veth1
ip -n mrb link set pl1b name veth1
ip -n mra addr add 10.88.1.1/24 dev veth1
ip -n mrb addr add 10.88.1.2/24 dev veth1
ip -n mra link set veth1 up
ip -n mrb link set veth1 up

# plane NS ARGS...: metaroce-plane in netns NS.
plane() { local ns=$1; shift; ip netns exec "$ns" "$tool" "$@"; }
# expect_err ERRTEXT CMD...: CMD must exit 1 and print ERRTEXT.
expect_err() {
	local text=$1 rc=0 out
	shift
	out=$("$@" 2>&1) || rc=$?
	[ "$rc" = 1 ] || fail "$*: exit $rc, wanted 1 ($out)"
	grep -q "$text" <<<"$out" || fail "$*: '$out', wanted '$text'"
}
# count DEV NAME: a counter of "rdma statistic".
count() { mr_counter "$1" "$2"; }

step "bad requests"
expect_err "No such device" plane mra add mr0 nosuchdev
expect_err "No such device" plane mra add mr9 veth1
expect_err "File exists" plane mra add mr0 veth0
expect_err "Device or resource busy" plane mra del mr0 veth0
expect_err "Operation not supported" plane mra add mr0 lo
expect_err "No such device" plane mra del mr0 veth1
expect_err "Operation not permitted" ip netns exec mra setpriv --reuid=65534 --regid=65534 \
	--clear-groups --inh-caps=-all --bounding-set=-all "$tool" add mr0 veth1
[ "$(plane mra show mr0 | wc -l)" = 1 ] || fail "a refused request changed the planes: $(plane mra show)"

step "add plane 1 on both devices"
plane mra add mr0 veth1
plane mrb add mr1 veth1
expect_err "File exists" plane mra add mr0 veth1
plane mra show
plane mra -j show mr0 >planes-mr0.json
python3 - planes-mr0.json <<'PY'
import json, sys
planes = json.load(open(sys.argv[1]))
assert [(p["plane"], p["ifname"], p["admin"], p["oper"]) for p in planes] == \
    [(0, "veth0", "up", "up"), (1, "veth1", "up", "up")], planes
PY

step "ibv_rc_pingpong --chk over two planes"
for d in mr0 mr1; do
	for p in 0 1; do eval "tx_${d}_$p=$(count $d plane${p}_tx_packets)"; done
done
mr_peer pp2 tcp:18515 ibv_rc_pingpong -d @DEV@ -g "$gid" -s 65536 -n 100 --chk -- \
	-d @DEV@ -g "$gid" -s 65536 -n 100 --chk "$server"
grep -h 'bytes in' cli-pp2.txt | tee -a "$RESULTS/results.txt"
for d in mr0 mr1; do
	for p in 0 1; do
		before=tx_${d}_$p
		now=$(count $d plane${p}_tx_packets)
		[ "$now" -gt "${!before}" ] || fail "$d plane $p sent nothing ($now)"
		[ "$(count $d plane${p}_rx_packets)" -gt 0 ] || fail "$d plane $p received nothing"
	done
done

step "ib_write_bw while plane 1 goes down and comes back"
# A count, not -D: perftest times -D with a cycle counter it calibrates at
# start, which under TCG may end the run before the plane comes back.
# 10000 x 64 KiB outlasts the cut (about 3 s) on a fast guest (6.12 on a
# quiet host: 47 MB/s, 14 s); the bound is for a slow one (3 MB/s on a
# loaded host: 220 s).
( MR_PEER_TIMEOUT=300 mr_peer bw-cut tcp:18515 ib_write_bw -d @DEV@ -x "$gid" -F -s 65536 -n 10000 -- \
	-d @DEV@ -x "$gid" -F -s 65536 -n 10000 "$server" ) &
bw_pid=$!
# Cut once the measurement runs (the header is printed when it starts).
vm_wait_until 90 grep -q '#bytes' cli-bw-cut.txt || fail "ib_write_bw did not start"
sleep 1
ip -n mra link set veth1 down
mr_wait "plane 1 down" sh -c "ip netns exec mra $tool show mr0 | grep -q 'veth1 .*oper down'"
sleep 2
down_tx=$(count mr0 plane1_tx_packets)
ip -n mra link set veth1 up
mr_wait "plane 1 up" sh -c "ip netns exec mra $tool show mr0 | grep -q 'veth1 .*oper up'"
up_tx=$(count mr0 plane1_tx_packets)
wait "$bw_pid" || fail "ib_write_bw failed across the plane cut"
awk '$1 == 65536 && $2 ~ /^[0-9]+$/' cli-bw-cut.txt | tee -a "$RESULTS/results.txt"
end_tx=$(count mr0 plane1_tx_packets)
plane mra show mr0
echo "plane 1 of mr0: tx $down_tx when down, $up_tx at up, $end_tx at the end" | tee -a "$RESULTS/results.txt"
[ "$(count mr0 plane1_paths_down)" -gt 0 ] || fail "plane 1 going down took no path out of service"
[ "$(count mr0 plane1_paths_up)" -gt 0 ] || fail "plane 1 coming back put no path back"
# Packets built in the moment between the link going down and the notifier
# taking its paths out of service are dropped as tx_link_down (they are
# recovered as losses); the plane that stayed up drops none so.
echo "plane 1 of mr0: $(count mr0 plane1_tx_link_down) packets dropped on its down link" |
	tee -a "$RESULTS/results.txt"
for d in mr0 mr1; do
	[ "$(count $d plane0_tx_link_down)" = 0 ] || fail "$d dropped packets on plane 0, whose link stayed up"
done
# The transfer may end soon after the plane returns on a loaded host; new
# QPs must use the plane again in any case.
mr_peer pp-back tcp:18515 ibv_rc_pingpong -d @DEV@ -g "$gid" -s 65536 -n 50 --chk -- \
	-d @DEV@ -g "$gid" -s 65536 -n 50 --chk "$server"
back_tx=$(count mr0 plane1_tx_packets)
echo "plane 1 of mr0 after it came back: $((end_tx - up_tx)) packets in the transfer, $((back_tx - end_tx)) in a new one" |
	tee -a "$RESULTS/results.txt"
[ "$back_tx" -gt "$end_tx" ] || fail "plane 1 carried nothing after it came back"

# covers: MR-FAIL-001
# Plane 1 drops everything mra sends from the start: mr0's paths there
# time out while plane 0 answers, are suspected and declared failed, and
# the pingpong completes over plane 0.
step "plane 1 silent: its paths fail, the transfer goes on"
failures=$(count mr0 plane1_path_failures)
ip netns exec mra tc qdisc replace dev veth1 root netem loss 100%
mr_peer pp-silent tcp:18515 ibv_rc_pingpong -d @DEV@ -g "$gid" -s 4096 -n 500 --chk -- \
	-d @DEV@ -g "$gid" -s 4096 -n 500 --chk "$server"
ip netns exec mra tc qdisc del dev veth1 root
grep -h 'bytes in' cli-pp-silent.txt | tee -a "$RESULTS/results.txt"
n=$(( $(count mr0 plane1_path_failures) - failures ))
echo "mr0 plane 1 silent: $n path failures" | tee -a "$RESULTS/results.txt"
[ "$n" -gt 0 ] || fail "no path failure counted on the silent plane 1 of mr0"

# covers: MR-FAIL-007
# cut_every_plane ROUND: ib_write_bw mr0 -> mr1, every link of mra
# dropping all it sends from 2 s in; the client must fail with
# IBV_WC_RETRY_EXC_ERR (see mr_perftest_retry_exc for why not a
# ping-pong).  Where the give-up happens depends on the moment of the cut
# (a timer, or a retransmission past retry_cnt while packets are built):
# three rounds see both.  The timeouts only catch a hang (the give-up
# takes a second or two).
cut_every_plane() {
	local round=$1 srv_pid cli_pid cli_rc=0 cut_at d
	local -a bw=(ib_write_bw -x "$gid" -F -s 4096 -n 1000000)
	ip netns exec mrb timeout 200 stdbuf -oL "${bw[@]}" -d mr1 >"srv-cut$round.txt" 2>&1 &
	srv_pid=$!
	MR_SRV_NS=mrb vm_wait_until 30 mr_listening tcp:18515 || fail "ib_write_bw server did not start"
	ip netns exec mra timeout 120 stdbuf -oL "${bw[@]}" -d mr0 10.88.0.2 >"cli-cut$round.txt" 2>&1 &
	cli_pid=$!
	# The out-of-band exchange runs over plane 0: cut after it (perftest
	# prints its table's header after the last handshake), mid-transfer.
	vm_wait_until 90 grep -q '#bytes' "cli-cut$round.txt" || fail "ib_write_bw did not start"
	sleep 2
	for d in veth0 veth1; do
		ip netns exec mra tc qdisc replace dev $d root netem loss 100%
	done
	cut_at=$(date +%s.%N)
	wait "$cli_pid" || cli_rc=$?
	echo "every plane cut, round $round: the client failed after $(awk -v a="$cut_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" |
		tee -a "$RESULTS/results.txt"
	# The server only waits for an end that cannot come: stop it.
	kill "$srv_pid" 2>/dev/null || :
	wait "$srv_pid" || :
	cat "cli-cut$round.txt"
	[ "$cli_rc" != 0 ] || fail "ib_write_bw survived every plane cut"
	[ "$cli_rc" != 124 ] || fail "round $round: the client hung after every plane was cut"
	mr_perftest_retry_exc "cli-cut$round.txt" || fail "no IBV_WC_RETRY_EXC_ERR completion"
	for d in veth0 veth1; do ip netns exec mra tc qdisc del dev $d root; done
}
step "every plane cut: IBV_WC_RETRY_EXC_ERR"
for round in 1 2 3; do
	cut_every_plane $round
done
mr_peer pp-after tcp:18515 ibv_rc_pingpong -d @DEV@ -g "$gid" -s 4096 -n 50 --chk -- \
	-d @DEV@ -g "$gid" -s 4096 -n 50 --chk "$server"

step "del plane 1"
plane mra del mr0 veth1
plane mrb del mr1 veth1
[ "$(plane mra show mr0 | wc -l)" = 1 ] || fail "plane 1 still listed"

step "resources and counters"
mr_check_clean_end
mr_check_plane_sums mr0
mr_check_plane_sums mr1
step "teardown"
mr_teardown
cat "$RESULTS/results.txt"
echo "PASS: planes on $KVER"
