#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest half of the two-guest perftest benchmarks (vmtest.sh --guests 2):
# benchmarks/loss-vs-rxe.sh, benchmarks/perftest-vs-rxe.sh and the demo
# (scripts/demo.sh) run
#   guest-perftest.sh BUILD_DIR [--rounds N] [--sides LIST] [--conds LIST]
#                     [--progs LIST] [--bw-iters N] [--iters N] [--planefail]
#                     [--perf] [--link RATE[/MARK]]
# (LISTs comma-separated).  Sides, the transports compared:
#   mr2  MetaRoCE, mr0 over eth0 and eth1 (planes 0 and 1; needs --planes 2)
#   mr1  MetaRoCE, mr0 over eth0 only (plane 1 removed): the same one link as
#        rxe, the like-for-like comparison
#   mr1sys  mr1 with METAROCE_NO_RINGS=1 on both ends: the provider's
#        syscall path (every post and poll a uverbs command), to weigh the
#        mapped rings against it
#   mr1v2  mr1 with METAROCE_TRANSPORT=rocev2 on both ends: the same module,
#        provider and link carrying RoCEv2 (go-back-N), which separates what
#        the MetaRoCE protocol costs from what the module's data path does;
#        not with side rxe (both need UDP 4791)
#   rxe  the kernel's rdma_rxe (RoCEv2, go-back-N), rxe0 on eth0
#   mr1 or mr2 with the suffix wN (mr2w128, mr1w128, ...) runs with
#   both devices' requester window (sysfs window, MR-FC-001) at N instead
#   of the module's default, to weigh the window within one run; with the
#   suffix gM (mr1g8, mr2w128g8, ...) both devices' loss gate is on (sysfs
#   cc_loss_gate, MR-CC-007) with a delay target of M ms (sysfs
#   cc_delay_target_ns); with the suffix hN (mr1h300, ...) both devices
#   hold a message's final ACK up to N us for a reply to carry it (sysfs
#   ack_hold_ns, MR-LOSS-014); with the suffix pN (mr2p8, ...) the QPs of
#   both devices spread their packets over N paths (sysfs paths).
# Conditions, put on every plane of both guests with netem (see cond_netem):
#   0, a number P (loss P%), burst (Gilbert-Elliott loss, ~1% in bursts of 4
#   on average) and reorder (1 ms delay for 3 packets of 4, the rest sent at
#   once).  Programs: ib_write_bw, ib_send_bw, ib_read_bw (64 KiB, -n BW_ITERS),
#   ib_write_lat, ib_send_lat (64 B, -n ITERS), ibv_rc_pingpong (4 KiB, -n
#   ITERS).
# --link RATE[/MARK] (tc's units, e.g. 40mbit or 40mbit/5ms): every plane of
#   both guests is a link of that rate whose queue marks ECN-capable packets
#   CE once they have waited MARK (default 20ms), as a datacenter switch port
#   with DCTCP-style marking does (20 ms: a TCG guest sends in bursts after
#   its stalls of 5-45 ms, and a lower threshold marks those bursts rather
#   than a standing queue; measured in docs/results/testbed.md): the
#   condition's netem, then tbf at RATE, then fq_codel with ce_threshold
#   MARK (its own drop law out of reach: target 1 s; packets that are not
#   ECN-capable, rdma_rxe's, meet a 2000-packet tail drop).  Without it the
#   planes are as fast as the emulator moves datagrams, and the only queue
#   that fills is the host's socket buffer, which drops and marks nothing.
# For every round, condition and program the sides run back to back, their
# order reversed every other round.  Guest 0 serves, guest 1 is the client
# and writes "round cond side prog value unit" lines to $RESULTS/bench.txt
# (value: BW average MB/s, t_typical us, pingpong Mbit/s; "fail" when the
# client failed); guest 0 writes the same lines for servers that failed to
# $RESULTS/server-fail.txt.  The script exits 1 if any program failed, after
# running everything.
#
# --planefail (mr0 over two planes, lossless): ib_write_bw while plane 1 is
# cut in guest 1, the sender, and restored, once silently (netem loss 100%
# on eth1: the transport must find out from its timeouts) and once visibly
# (ip link set eth1 down: the device takes the plane's paths out at once).
# Before them, the same transfer with plane 1 out of service on both sides
# (metaroce-plane set ... down) measures what plane 0 alone carries.  Guest 1
# samples mr0's planeN_tx_packets every ~100 ms into
# $RESULTS/planefail-VARIANT.txt ("EPOCHREALTIME plane0 plane1" lines, and
# "# cutting T" / "# cut T" / "# restore T" / "# start T" / "# end T" marks:
# the cut handed over and the hand-over returned, ...; the host's capture
# finds when the plane really went quiet) and the exit status of both
# programs into planefail-VARIANT.rc.
#
# --perf: each guest samples itself whole (perf record -a -g, 499 Hz) while
# a program runs and writes the profile, read in the guest against its own
# kernel's symbols, to $RESULTS/perf-ROUND-COND-SIDE-PROG.txt (guest 0 the
# server, guest 1 the client), and who called its hottest symbols to
# perf-...-callers.txt: where a side's CPU time goes.  Sampling
# slows the guests, so the numbers of such a run are not for comparison
# (perftest's clock calibration even fails beside it now and then: BW 0.00).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR [--rounds N] [--sides ...] [--conds ...] [--progs ...]}")
shift
rounds=3
sides=mr2,mr1,rxe
conds=0,1
progs=ib_write_bw,ib_send_bw,ib_read_bw,ib_send_lat
bw_iters=100
iters=300
planefail=
perf=
link=
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--sides) sides=$2; shift 2 ;;
	--conds) conds=$2; shift 2 ;;
	--progs) progs=$2; shift 2 ;;
	--bw-iters) bw_iters=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--planefail) planefail=1; shift ;;
	--perf) perf=1; shift ;;
	--link) link=$2; shift 2 ;;
	*) echo "FAIL: unknown argument $1"; exit 1 ;;
	esac
done
IFS=, read -r -a sides <<<"$sides"
IFS=, read -r -a conds <<<"$conds"
IFS=, read -r -a progs <<<"$progs"
link_rate=${link%%/*}
link_mark=20ms
[[ $link == */* ]] && link_mark=${link#*/}
# The root of a --link plane: the condition's netem, the shaper under it.
link_root="root handle 1: netem limit 10000"
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

[ "$GUEST_COUNT" = 2 ] || fail "run with --guests 2"
# What the planes were, for the report (testbed_report.py).
[ -z "$link" ] || echo "$link_rate $link_mark" >"$RESULTS/link.txt"
[ -z "$perf" ] || command -v perf >/dev/null ||
	fail "perf not found (scripts/install-deps.sh installs linux-perf)"
tool=$build/tools/metaroce-plane
vm_load_module "$(mr_ko "$build")" || fail "loading rdma_metaroce"
vm_install_provider "$build" || fail "installing the provider"
# rdma_rxe binds UDP 4791 when it loads and fails if that port is taken;
# a MetaRoCE-mode device that finds it taken runs without UD/GSI (RC on
# 4793 is all perftest needs here), so rxe goes first.  Without it, mr0
# has 4791 for its RoCEv2 mode (side mr1v2): the two exclude each other.
with_rxe=
[[ ",${sides[*]}," == *[,\ ]rxe[,\ ]* ]] && with_rxe=1
[[ -n $with_rxe && " ${sides[*]} " == *v2* ]] &&
	fail "side mr1v2 needs UDP 4791, which rdma_rxe holds: run it without side rxe"
[ -z "$with_rxe" ] || vm_rxe_add rxe0 eth0 || fail "rxe0"
rdma link add mr0 type metaroce netdev eth0 || fail "rdma link add mr0"
mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
vm_wait_for_peer 60 || fail "peer unreachable"

gid_of() {
	local g i t
	for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${g##*/}
		grep -q '0000:0000:0000:0000:0000:ffff:' "$g" || continue
		read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null || continue
		[ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
	done
	fail "$1: no IPv4 RoCE v2 GID"
}
declare -A gid=([mr0]=$(gid_of mr0))
[ -z "$with_rxe" ] || gid[rxe0]=$(gid_of rxe0)

# The planes of mr0: 2 (eth1 added) or 1.  Both guests change theirs before
# the barrier of the run that needs it.
mr_planes=1
set_mr_planes() {
	[ "$mr_planes" = "$1" ] && return 0
	[ "$PLANES" -ge 2 ] || fail "side mr2 needs vmtest.sh --planes 2"
	if [ "$1" = 2 ]; then
		"$tool" add mr0 eth1 || fail "metaroce-plane add mr0 eth1"
	else
		"$tool" del mr0 eth1 || fail "metaroce-plane del mr0 eth1"
	fi
	mr_planes=$1
}

# cond_netem COND: the netem arguments of a condition (none: lossless).
cond_netem() {
	case $1 in
	0) ;;
	# Gilbert-Elliott: enter the bad state with p = 0.25%, leave it with
	# r = 25% (bursts of 4 packets on average), lose everything in it:
	# p / (p + r) = 0.99% of the packets.
	burst) echo "loss gemodel 0.25% 25% 100% 0%" ;;
	# 3 packets of 4 wait 1 ms; the rest (25%, correlated 50%) overtake them.
	reorder) echo "delay 1ms reorder 25% 50%" ;;
	*[!0-9.]*|'') fail "unknown condition $1" ;;
	*) echo "loss $1%" ;;
	esac
}
set_cond() {
	local p args
	args=$(cond_netem "$1")
	for ((p = 0; p < PLANES; p++)); do
		vm_netem_clear "eth$p"
		if [ -n "$link" ]; then
			set_link "eth$p" "$args"
			continue
		fi
		# shellcheck disable=SC2086 # args is a word list
		[ -z "$args" ] || vm_netem "eth$p" $args || fail "netem $args on eth$p"
	done
}
# set_link DEV NETEM_ARGS: DEV's root is netem (NETEM_ARGS, none lossless)
# over a shaper at the --link rate over a queue that marks CE at MARK.
# tbf's burst is a few packets of slack for the guests' coarse timers.
set_link() {
	local dev=$1 args=$2
	modprobe sch_netem 2>/dev/null
	# shellcheck disable=SC2086 # link_root and args are word lists
	tc qdisc replace dev "$dev" $link_root $args || fail "netem $args on $dev"
	tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "$link_rate" burst 16k latency 1s ||
		fail "tbf $link_rate on $dev"
	tc qdisc add dev "$dev" parent 10:1 handle 20: fq_codel ecn ce_threshold "$link_mark" \
		target 1s interval 10s limit 2000 || fail "fq_codel on $dev"
}
# netem_line DEV ARGS...: the tc batch line that makes DEV's netem ARGS, under
# --link too (its shaper and marking queue stay); "loss 0%" restores it.
netem_line() {
	local dev=$1
	shift
	if [ -n "$link" ]; then
		echo "qdisc change dev $dev $link_root $*"
	elif [ "$*" = "loss 0%" ]; then
		echo "qdisc del dev $dev root"
	else
		echo "qdisc replace dev $dev root netem $*"
	fi
}

# A plane cut is handed to a tc or ip started before the transfer, in batch
# mode on a fifo (cutter_start TOOL, cutter LINE, cutter_stop): starting a
# program takes a TCG guest's one vCPU for 250-500 ms, which the capture
# would count as the transport's failover.  While the cut is carried out
# only the sampler of the script's runs on that vCPU, as in every variant:
# cutter hands LINE over and returns, the tool writes only when a line
# fails, and cutter_stop reads that after the restore.  On 6.1 the guests'
# softirq work (the transport, the planes' shapers) waits in ksoftirqd
# behind every runnable task (ftrace, sched_switch): a loop looking at
# eth1's operstate every millisecond until it read "down" took 60-90% of
# the vCPU for the 20-70 ms that took.  The tool is not niced: at nice 19
# the busy-polling perftest left it no time to take the link down in 4 s.
cutter_start() {
	# (the working directory is a 9p share, which refuses fifos)
	cutter_fifo=$(mktemp -u /dev/shm/metaroce-cutter.XXXXXX)
	mkfifo "$cutter_fifo" || fail "mkfifo $cutter_fifo"
	"$1" -force -batch - <"$cutter_fifo" >cutter.out 2>&1 &
	cutter_pid=$!
	exec {cutter_fd}>"$cutter_fifo"
}
# A tool that exited early would end the script by SIGPIPE, without a word.
cutter() {
	local ok=1

	trap '' PIPE
	{ echo "$*" >&"$cutter_fd"; } 2>/dev/null || ok=0
	trap - PIPE
	[ "$ok" = 1 ] || fail "plane cut: the tool exited before '$*': $(cat cutter.out)"
}
cutter_stop() {
	exec {cutter_fd}>&-
	rm -f "$cutter_fifo"
	if ! wait "$cutter_pid" || [ -s cutter.out ]; then
		fail "plane cut: $(cat cutter.out)"
	fi
}

# What each program runs with, which column of its client's output is
# reported and in which unit.
declare -A size=([ib_write_bw]=65536 [ib_send_bw]=65536 [ib_read_bw]=65536
	[ib_write_lat]=64 [ib_send_lat]=64 [ibv_rc_pingpong]=4096)
declare -A unit=([ib_write_bw]=MB/s [ib_send_bw]=MB/s [ib_read_bw]=MB/s
	[ib_write_lat]=us [ib_send_lat]=us [ibv_rc_pingpong]=Mbit/s)
# prog_args PROG DEV PORT: the arguments both sides run PROG with.
prog_args() {
	local prog=$1 dev=$2 port=$3
	case $prog in
	ibv_rc_pingpong) echo "-d $dev -g ${gid[$dev]} -p $port -s ${size[$prog]} -n $iters" ;;
	# A fixed amount of data, not -D: perftest's duration mode reports a
	# BW average of 0.00 in these TCG guests whenever its 1 s measurement
	# window between the margins is short of completions.
	*_bw) echo "-d $dev -x ${gid[$dev]} -F -p $port -s ${size[$prog]} -n $bw_iters" ;;
	*_lat) echo "-d $dev -x ${gid[$dev]} -F -p $port -s ${size[$prog]} -n $iters" ;;
	*) fail "unknown program $prog" ;;
	esac
}
# prog_value PROG FILE: the reported number of a client's output.
prog_value() {
	case $1 in
	ibv_rc_pingpong) sed -n 's/.* seconds = \([0-9.]*\) Mbit\/sec.*/\1/p' "$2" | head -n1 ;;
	*_bw) awk -v s="${size[$1]}" '$1 == s && $2 ~ /^[0-9]+$/ { print $4 }' "$2" ;;
	*_lat) awk -v s="${size[$1]}" '$1 == s && $2 ~ /^[0-9]+$/ { print $5 }' "$2" ;;
	esac
}

port=19000
# counters TAG: mr0's device counters (the hw_counters of rdma statistic,
# planes left out) as "TAG name value" lines in $RESULTS/counters.txt,
# before and after each MetaRoCE run: what the transport did in it
# (retransmits, timeouts, tail loss probes, path failures ...).  Bash
# builtins only, like sample() below.
counters() {
	local f v
	for f in /sys/class/infiniband/mr0/ports/1/hw_counters/*; do
		case ${f##*/} in plane*|lifespan) continue ;; esac
		read -r v <"$f"
		echo "$1 ${f##*/} $v"
	done >>"$RESULTS/counters.txt"
}
out=$RESULTS/bench.txt
srvfail=$RESULTS/server-fail.txt
: >"$out"
: >"$srvfail"
: >"$RESULTS/counters.txt"
failed=0

# client FILE PROG ARGS...: PROG as the client of guest 0's server, its
# output in FILE.  Retried only while the server does not listen yet: a
# client that connected and failed is a result.
client() {
	local f=$1 i rc
	shift
	for ((i = 0; i < 30; i++)); do
		rc=0
		timeout 180 stdbuf -oL "$@" "$(vm_peer_addr 0)" >"$f" 2>&1 || rc=$?
		[ "$rc" != 0 ] && grep -q "^Couldn't connect to\|Couldn't read remote address\|Unable to init the socket connection" "$f" || return "$rc"
		sleep 1
	done
	return "$rc"
}

# The window, loss gate, delay target and ACK hold of mr0 for a run: the
# side's, or the module's defaults (read at start).
mr0_attr=/sys/class/infiniband/mr0
read -r default_window <$mr0_attr/window
read -r default_gate <$mr0_attr/cc_loss_gate
read -r default_target <$mr0_attr/cc_delay_target_ns
read -r default_hold <$mr0_attr/ack_hold_ns
read -r default_paths <$mr0_attr/paths
set_attr() {
	echo "$2" >"$mr0_attr/$1" || fail "setting mr0's $1 to $2"
}

# perf_start TAG / perf_stop: the --perf profile of one run (see above).
perf_pid=
perf_start() {
	[ -n "$perf" ] || return 0
	perf_tag=$1
	rm -f /tmp/perf.ctl /tmp/perf.ack
	mkfifo /tmp/perf.ctl /tmp/perf.ack
	# Disabled until told: perf takes seconds to start in a TCG guest, and
	# a program started beside its start-up runs unsampled and fails
	# perftest's clock calibration (BW 0.00).  The "ack" of "enable"
	# says it samples.
	perf record -q -a -g -e cpu-clock -F 499 -D -1 \
		--control fifo:/tmp/perf.ctl,/tmp/perf.ack \
		-o "/tmp/perf-$perf_tag.data" >/dev/null 2>&1 &
	perf_pid=$!
	exec {perf_ctl}>/tmp/perf.ctl {perf_ack}</tmp/perf.ack
	echo enable >&"$perf_ctl"
	read -r -t 120 -u "$perf_ack" _ || fail "perf record did not start"
}
perf_stop() {
	[ -n "$perf_pid" ] || return 0
	kill -INT "$perf_pid" 2>/dev/null || :
	wait "$perf_pid" || :
	exec {perf_ctl}>&- {perf_ack}<&-
	perf_pid=
	perf report -q -i "/tmp/perf-$perf_tag.data" --stdio --no-children \
		--sort dso,sym -g none --percent-limit 0.3 \
		>"$RESULTS/perf-$perf_tag.txt" 2>&1 || echo "perf report failed for $perf_tag"
	# ... and who called the symbols above 1.5%.
	perf report -q -i "/tmp/perf-$perf_tag.data" --stdio --no-children \
		--sort sym -g caller,0.5,callee,function,percent --percent-limit 1.5 \
		>"$RESULTS/perf-$perf_tag-callers.txt" 2>&1 || :
	rm -f "/tmp/perf-$perf_tag.data"
}

run() {
	local r=$1 cond=$2 side=$3 prog=$4 dev=mr0 v window=$default_window base=$3
	local gate=$default_gate target=$default_target hold=$default_hold
	local paths=$default_paths
	local -a args env=()
	port=$((port + 1))
	# The pattern of benchmarks/bench_sides.py, which the reports use.
	if [[ $side =~ ^(mr[12])(w([0-9]+))?(g([0-9]+))?(h([0-9]+))?(p([0-9]+))?$ ]]; then
		base=${BASH_REMATCH[1]}
		[ -z "${BASH_REMATCH[2]}" ] || window=${BASH_REMATCH[3]}
		[ -z "${BASH_REMATCH[4]}" ] || gate=1 target=$((BASH_REMATCH[5] * 1000000))
		[ -z "${BASH_REMATCH[6]}" ] || hold=$((BASH_REMATCH[7] * 1000))
		[ -z "${BASH_REMATCH[8]}" ] || paths=${BASH_REMATCH[9]}
	fi
	set_attr window "$window"
	set_attr cc_loss_gate "$gate"
	set_attr cc_delay_target_ns "$target"
	set_attr ack_hold_ns "$hold"
	set_attr paths "$paths"
	case $base in
	mr2) set_mr_planes 2 ;;
	mr1) set_mr_planes 1 ;;
	mr1sys) set_mr_planes 1; env=(env METAROCE_NO_RINGS=1) ;;
	mr1v2) set_mr_planes 1; env=(env METAROCE_TRANSPORT=rocev2) ;;
	rxe) dev=rxe0 ;;
	*) fail "unknown side $side" ;;
	esac
	read -r -a args <<<"$(prog_args "$prog" "$dev" "$port")"
	perf_start "$r-$cond-$side-$prog"
	vm_barrier "r$r-$cond-$side-$prog" 300 || fail "barrier"
	[ "$dev" = mr0 ] && counters "$r $cond $side $prog before"
	if [ "$GUEST_INDEX" = 0 ]; then
		if ! timeout 180 "${env[@]}" "$prog" "${args[@]}" >srv.txt 2>&1; then
			echo "server $prog on $side failed: $(tail -3 srv.txt)"
			echo "$r $cond $side $prog fail ${unit[$prog]}" >>"$srvfail"
			failed=1
		fi
	elif client cli.txt "${env[@]}" "$prog" "${args[@]}"; then
		v=$(prog_value "$prog" cli.txt)
		echo "$r $cond $side $prog ${v:-nan} ${unit[$prog]}" | tee -a "$out"
	else
		echo "$r $cond $side $prog fail ${unit[$prog]}" | tee -a "$out"
		tail -3 cli.txt
		failed=1
	fi
	perf_stop
	[ "$dev" = mr0 ] && counters "$r $cond $side $prog after"
	return 0
}

for ((r = 1; r <= rounds; r++)); do
	order=("${sides[@]}")
	if ((r % 2 == 0)); then
		order=()
		for ((i = ${#sides[@]} - 1; i >= 0; i--)); do order+=("${sides[i]}"); done
	fi
	for cond in "${conds[@]}"; do
		set_cond "$cond"
		for prog in "${progs[@]}"; do
			for side in "${order[@]}"; do
				run "$r" "$cond" "$side" "$prog"
			done
		done
	done
done
set_cond 0
set_attr window "$default_window"
set_attr cc_loss_gate "$default_gate"
set_attr cc_delay_target_ns "$default_target"
set_attr ack_hold_ns "$default_hold"
set_attr paths "$default_paths"

# ------------------------------------------------------------ plane failure
# wait_s SECONDS: sleep without starting a program (sleep(1) from the 9p root
# took seconds longer than asked on a loaded host; a process substitution
# per sleep would start one at the moment of a plane cut): a read that times
# out on a pipe nobody writes, opened once.
exec {sleep_fd}<> <(:)
wait_s() { read -r -t "$1" -u "$sleep_fd" _ || :; }

# sample FILE: mr0's per-plane tx counters every ~100 ms until ./stop-sampling
# exists (bash builtins only: a program started from the 9p root costs more
# than the interval under TCG).
sample() {
	local c=/sys/class/infiniband/mr0/ports/1/hw_counters a b
	while [ ! -e stop-sampling ]; do
		read -r a <"$c/plane0_tx_packets"
		read -r b <"$c/plane1_tx_packets"
		echo "$EPOCHREALTIME $a $b"
		wait_s 0.1
	done >>"$1"
}

# planefail VARIANT SECONDS [CUT_AFTER RESTORE_AFTER]: ib_write_bw -D
# SECONDS over both planes; guest 1 samples, cuts plane 1 CUT_AFTER seconds
# into the measurement and restores it RESTORE_AFTER seconds later.
planefail() {
	local variant=$1 secs=$2 cut_after=${3:-} restore_after=${4:-} rc=0 spid ppid cutting cut state
	local f=$RESULTS/planefail-$variant.txt
	local -a args
	port=$((port + 1))
	read -r -a args <<<"-d mr0 -x ${gid[mr0]} -F -p $port -s 65536 -D $secs -f 1"
	vm_barrier "planefail-$variant" 300 || fail "barrier"
	counters "0 planefail-$variant mr2 ib_write_bw before"
	if [ "$GUEST_INDEX" = 0 ]; then
		timeout 180 ib_write_bw "${args[@]}" >"srv-$variant.txt" 2>&1 || rc=$?
		counters "0 planefail-$variant mr2 ib_write_bw after"
		echo "server $rc" >"$RESULTS/planefail-$variant.rc"
		[ "$rc" = 0 ] || { failed=1; tail -3 "srv-$variant.txt"; }
		return 0
	fi
	: >"$f"
	rm -f stop-sampling
	sample "$f" &
	spid=$!
	client "cli-$variant.txt" ib_write_bw "${args[@]}" &
	ppid=$!
	# The header is printed when the measurement starts.
	vm_wait_until 90 grep -q '#bytes' "cli-$variant.txt" || fail "ib_write_bw did not start ($variant)"
	echo "# start $EPOCHREALTIME" >>"$f"
	if [ -n "$cut_after" ]; then
		local cut_line restore_line
		case $variant in
		netem)
			cut_line=$(netem_line eth1 loss 100%)
			restore_line=$(netem_line eth1 loss 0%)
			cutter_start tc ;;
		linkdown)
			cut_line="link set eth1 down"
			restore_line="link set eth1 up"
			cutter_start ip ;;
		esac
		wait_s "$cut_after"
		# Between the cut and the restore the script only sleeps; the
		# sampler goes on as in every variant.  The marks are written
		# after the restore: writing to the 9p share costs the vCPU too.
		# "# cutting" and "# cut": the cut handed over, the hand-over
		# returned (the capture finds when the plane went quiet).
		cutting=$EPOCHREALTIME
		cutter "$cut_line"
		cut=$EPOCHREALTIME
		wait_s "$restore_after"
		state=down
		[ "$variant" = linkdown ] && read -r state </sys/class/net/eth1/operstate
		cutter "$restore_line"
		printf '# cutting %s\n# cut %s\n# restore %s\n' "$cutting" "$cut" "$EPOCHREALTIME" >>"$f"
		cutter_stop
		# (restored first: the server would wait out its timeout)
		[ "$state" = down ] || fail "eth1 was $state after '$cut_line'"
	fi
	wait "$ppid" || rc=$?
	echo "# end $EPOCHREALTIME" >>"$f"
	counters "0 planefail-$variant mr2 ib_write_bw after"
	: >stop-sampling
	wait "$spid" || :
	echo "client $rc" >"$RESULTS/planefail-$variant.rc"
	grep -ci 'error\|fail' "cli-$variant.txt" | sed 's/^/client_error_lines /' >>"$RESULTS/planefail-$variant.rc" || :
	awk '$1 == 65536 && $2 ~ /^[0-9]+$/ { print "client_bw_MBps", $4 }' "cli-$variant.txt" >>"$RESULTS/planefail-$variant.rc"
	[ "$rc" = 0 ] || { failed=1; tail -5 "cli-$variant.txt"; }
	return 0
}

if [ -n "$planefail" ]; then
	step "plane failure"
	set_mr_planes 2
	vm_wait_for_peer 60 || fail "peer unreachable before the plane-failure runs"
	# What plane 0 alone carries: plane 1 out of service on both sides.
	"$tool" set mr0 eth1 down || fail "metaroce-plane set mr0 eth1 down"
	planefail plane0-only 4
	"$tool" set mr0 eth1 up || fail "metaroce-plane set mr0 eth1 up"
	planefail netem 14 4 4
	vm_wait_for_peer 60 || fail "peer unreachable after the netem cut"
	planefail linkdown 14 4 4
	vm_wait_for_peer 60 || fail "peer unreachable after the link-down cut"
	"$tool" show mr0
fi

vm_barrier "done" 120 || fail "final barrier"
rdma statistic show link mr0/1
rdma link delete mr0
vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
vm_dmesg_check || fail "dmesg"
exit "$failed"
