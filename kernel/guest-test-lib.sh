# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Helpers of the rdma_metaroce.ko guest tests (tests/vm/t-kernel-*.sh),
# sourced inside a vmtest.sh guest, on top of the testbed's guest-lib.sh.

[ -n "${VMTEST_LIB:-}" ] && [ -r "$VMTEST_LIB" ] || {
	echo "FAIL: VMTEST_LIB not set: run under tests/vm/vmtest.sh"
	exit 1
}
# shellcheck source=../tests/vm/guest-lib.sh
. "$VMTEST_LIB"

fail() { echo "FAIL: $*"; exit 1; }
step() { echo "== $*"; }

# mr_ko BUILD_DIR: path of the module built for the running kernel.
mr_ko() {
	local ko=$1/kernel/$KVER/rdma_metaroce.ko
	[ -f "$ko" ] || fail "$ko not built"
	echo "$ko"
}

mr_load() { vm_load_module "$1" || fail "loading $1"; }

mr_unload() {
	rmmod rdma_metaroce || fail "rmmod rdma_metaroce"
	[ ! -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce still loaded"
}

# mr_wait DESCRIPTION CMD...: poll CMD until it succeeds, fail after 30 s.
# A bound on how long to wait for ib_core's work items, not a timing check.
mr_wait() {
	local what=$1
	shift
	vm_wait_until 30 "$@" || fail "timed out waiting for $what"
}

# mr_expect_error MESSAGE CMD...: CMD must fail and print MESSAGE (the
# strerror text of the expected errno) on stderr.
mr_expect_error() {
	local msg=$1 err
	shift
	if err=$("$@" 2>&1); then
		fail "'$*' succeeded, expected '$msg'"
	fi
	case $err in
	*"$msg"*) echo "ok: '$*' -> $err" ;;
	*) fail "'$*' failed with '$err', expected '$msg'" ;;
	esac
}

# mr_veth A B: a veth pair, both ends up.
mr_veth() {
	ip link add "$1" type veth peer name "$2" || fail "veth $1/$2"
	ip link set "$1" up && ip link set "$2" up || fail "veth $1/$2 up"
}

# mr_port_state DEV: the port's state name from sysfs (ACTIVE, DOWN, ...).
mr_port_state() {
	local s
	s=$(cat "/sys/class/infiniband/$1/ports/1/state") || return 1
	echo "${s#*: }"
}

# mr_port_is DEV STATE
mr_port_is() { [ "$(mr_port_state "$1")" = "$2" ]; }

mr_dev_exists() { [ -e "/sys/class/infiniband/$1" ]; }
mr_dev_gone() { [ ! -e "/sys/class/infiniband/$1" ]; }

# mr_header_abi_version: METAROCE_UVERBS_ABI_VERSION from the uapi header.
mr_header_abi_version() {
	local v
	v=$(sed -n 's/^#define METAROCE_UVERBS_ABI_VERSION[[:space:]]\+\([0-9]\+\).*/\1/p' \
		"$METAROCE_SRC/include/uapi/rdma/metaroce-abi.h")
	[ -n "$v" ] || fail "no METAROCE_UVERBS_ABI_VERSION in metaroce-abi.h"
	echo "$v"
}

# mr_netns_devices: netns mra and mrb joined by a veth pair (10.88.0.1 and
# .2, veth0 in each), mr0 on mra's and mr1 on mrb's, both ACTIVE with their
# IPv4-mapped GIDs; removed again when the script exits.  Load the module
# first.
mr_netns_cleanup() {
	rdma link delete mr0 2>/dev/null || :
	rdma link delete mr1 2>/dev/null || :
	ip netns del mra 2>/dev/null || :
	ip netns del mrb 2>/dev/null || :
}
mr_netns_devices() {
	trap mr_netns_cleanup EXIT
	vm_netns_pair mra mrb || fail "vm_netns_pair"
	ip netns exec mra rdma link add mr0 type metaroce netdev veth0 || fail "rdma link add mr0"
	ip netns exec mrb rdma link add mr1 type metaroce netdev veth0 || fail "rdma link add mr1"
	mr_wait "mr0 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr0/ports/1/state
	mr_wait "mr1 ACTIVE" grep -q ACTIVE /sys/class/infiniband/mr1/ports/1/state
	mr_wait "IPv4 GIDs" grep -q 'ffff:0a58:0002' -r /sys/class/infiniband/mr1/ports/1/gids/
}

# mr_gid_index DEV: index of DEV's IPv4-mapped RoCE v2 GID (rdma_rxe
# also lists each address as a RoCE v1 GID: the type must say v2).  In
# index order, with builtins: the table has 1024 entries.
mr_gid_index() {
	local i=0 v t port=/sys/class/infiniband/$1/ports/1
	while [ -e "$port/gids/$i" ]; do
		v=
		read -r v <"$port/gids/$i" || :
		if [[ $v == 0000:0000:0000:0000:0000:ffff:* ]]; then
			t=
			read -r t 2>/dev/null <"$port/gid_attrs/types/$i" || :
			if [ -z "$t" ] || [ "$t" = "RoCE v2" ]; then
				echo "$i"
				return 0
			fi
		fi
		i=$((i + 1))
	done
	fail "$1 has no IPv4-mapped RoCE v2 GID"
}

# mr_user_res TYPE: the objects of TYPE "rdma resource show" lists that
# user space owns.  Kernel consumers' objects (ib_mad's QP1, its PD and CQs,
# named "comm [ib_core]") live as long as the device and are left out.
mr_user_res() { rdma resource show "$1" | grep -v 'comm \[' || :; }

# mr_res_count TYPE: how many user objects of TYPE are on mr0/mr1.
mr_res_count() { mr_user_res "$1" | grep -cE '(dev|link) mr[01]([ /]|$)' || :; }

# mr_counter DEV NAME: a device counter of "rdma statistic".
mr_counter() {
	rdma statistic show link "$1/1" | tr ' ' '\n' |
		awk -v n="$2" 'prev == n { print; exit } { prev = $0 }'
}

# mr_udp_stat NS NAME: counter NAME (InErrors, InCsumErrors, ...) of the
# Udp line of /proc/net/snmp in netns NS ("-": init_net).
mr_udp_stat() {
	mr_in_ns "$1" awk -v n="$2" '/^Udp:/ {
		if (!c) { for (i = 1; i <= NF; i++) if ($i == n) c = i; next }
		print $c; exit }' /proc/net/snmp
}

# mr_integrity_passed TAG: the metaroce_integrity run of mr_peer TAG
# passed on both sides (cli-TAG.txt, srv-TAG.txt) and printed its summary;
# with two guests, on the side this guest ran (mr_peer_here).
mr_integrity_passed() {
	if mr_peer_here cli; then
		grep -q '^PASS: integrity' "cli-$1.txt" || fail "$1: integrity client did not pass"
		grep -q '^client: .* windows' "cli-$1.txt" || fail "$1: no integrity summary"
	fi
	if mr_peer_here srv; then
		grep -q '^PASS: integrity' "srv-$1.txt" || fail "$1: integrity server did not pass"
		grep -q '^server: .* mismatches 0 bad_completions 0$' "srv-$1.txt" ||
			fail "$1: integrity server counted errors"
	fi
}

# The transport counters of "rdma statistic" (kernel/metaroce_stats.c):
# device totals NAME and per plane planeN_NAME.
MR_XPORT_COUNTERS="retransmits sacks_sent sacks_received rx_out_of_order rx_duplicates path_failures path_recoveries lost timeouts spurious_retrans"

# mr_check_plane_sums DEV: every transport counter of DEV is the sum of its
# planes' (true while no plane id was given to a second plane).
mr_check_plane_sums() {
	local stats c total sum n v
	stats=$(rdma statistic show link "$1/1" | tr ' ' '\n')
	for c in $MR_XPORT_COUNTERS; do
		total=$(awk -v n="$c" 'prev == n { print; exit } { prev = $0 }' <<<"$stats")
		[ -n "$total" ] || fail "$1: no counter $c"
		sum=0
		for n in 0 1 2 3; do
			v=$(awk -v n="plane${n}_$c" 'prev == n { print; exit } { prev = $0 }' <<<"$stats")
			[ -n "$v" ] || fail "$1: no counter plane${n}_$c"
			sum=$((sum + v))
		done
		[ "$total" = "$sum" ] || fail "$1: $c is $total, its planes add up to $sum"
	done
	echo "ok: $1: planes add up to the device's $MR_XPORT_COUNTERS"
}

# mr_check_clean_end: after the programs exited, no user QP, CQ, MR or PD
# is left on mr0/mr1 and neither device counted a CRC, malformed-packet or
# transmit error; both devices' statistics are saved in stats-DEV.txt.
mr_check_clean_end() {
	local t d c ns
	for t in qp cq mr pd; do
		[ "$(mr_res_count $t)" = 0 ] || fail "$t left after the programs exited: $(rdma resource show $t)"
	done
	for d in mr0 mr1; do
		ns=mra
		[ $d = mr1 ] && ns=mrb
		ip netns exec $ns rdma statistic show link $d/1 | tee "stats-$d.txt"
	done
	for c in rx_bad_crc rx_malformed tx_errors; do
		[ "$(mr_counter mr0 $c)" = 0 ] && [ "$(mr_counter mr1 $c)" = 0 ] ||
			fail "$c counted: $(cat stats-mr0.txt stats-mr1.txt)"
	done
}

# mr_teardown: remove what mr_netns_devices made, unload the module and
# check dmesg (the end of every mr_netns_devices script).
mr_teardown() {
	mr_netns_cleanup
	trap - EXIT
	vm_unload_module rdma_metaroce || fail "rmmod rdma_metaroce"
	vm_dmesg_check || fail "dmesg"
}

# The two sides of mr_peer: MR_SRV_NS/MR_SRV_DEV for the server (default
# netns mra, mr0), MR_CLI_NS/MR_CLI_DEV for the client (mrb, mr1); a
# netns "-" is init_net (where rdma_rxe devices work).  @GID@ in the
# arguments becomes MR_SRV_GID / MR_CLI_GID (a side's own GID index).
# With two guests, MR_SRV_GUEST names the guest that serves; the other
# one is the client, and each guest runs only its side (see mr_peer).

# mr_in_ns NS CMD...: CMD in netns NS ("-": init_net).
mr_in_ns() {
	local ns=$1
	shift
	if [ "$ns" = - ]; then "$@"; else ip netns exec "$ns" "$@"; fi
}

# mr_listening READY: whether the server of mr_peer listens; READY is
# tcp:PORT (an out-of-band TCP exchange in the server's netns) or cm:PORT
# (an rdma_cm listener, seen in "rdma resource show cm_id").
mr_listening() {
	local port=${1#*:}
	case $1 in
	tcp:*) mr_in_ns "${MR_SRV_NS:-mra}" ss -ltn | grep -q ":$port " ;;
	cm:*) rdma resource show cm_id | grep -Eq "LISTEN.* src-addr [^ ]*:$port( |$)" ;;
	*) fail "mr_listening: $1: not tcp:PORT or cm:PORT" ;;
	esac
}

# mr_peer TAG READY PROGRAM SERVER_ARGS... -- CLIENT_ARGS...: PROGRAM as
# server (on mr0 in netns mra, unless MR_SRV_* say otherwise) and, once it
# listens (see mr_listening), as client (mr1 in mrb, or MR_CLI_*); @DEV@
# and @GID@ in the arguments become the side's device and GID index.
# Output in srv-TAG.txt and cli-TAG.txt; both must exit 0, or with the
# status MR_PEER_SRV_RC / MR_PEER_CLI_RC if set (a side expected to fail).
# The bounds only keep a hung transfer from eating the guest's time budget
# (MR_PEER_TIMEOUT seconds per program, default 120).
# Two guests (MR_SRV_GUEST set): guest MR_SRV_GUEST runs the server and,
# once it listens, meets the other guest at a barrier named after TAG,
# after which that one runs the client; each guest has its side's output
# file (mr_peer_here cli|srv says which) and checks its side's status.
mr_peer_here() {
	[ -z "${MR_SRV_GUEST:-}" ] && return 0
	case $1 in
	srv) [ "$GUEST_INDEX" = "$MR_SRV_GUEST" ] ;;
	cli) [ "$GUEST_INDEX" != "$MR_SRV_GUEST" ] ;;
	esac
}
mr_peer() {
	local tag=$1 ready=$2 prog=$3 srv_pid rc=0 srv_rc=0 a
	local sdev=${MR_SRV_DEV:-mr0} cdev=${MR_CLI_DEV:-mr1}
	local want_srv=${MR_PEER_SRV_RC:-0} want_cli=${MR_PEER_CLI_RC:-0}
	local -a srv=() cli=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		a=${1//@DEV@/$sdev}
		srv+=("${a//@GID@/${MR_SRV_GID:-}}")
		shift
	done
	[ $# -gt 0 ] && shift
	for a in "$@"; do
		a=${a//@DEV@/$cdev}
		cli+=("${a//@GID@/${MR_CLI_GID:-}}")
	done
	if mr_peer_here srv; then
		mr_in_ns "${MR_SRV_NS:-mra}" timeout "${MR_PEER_TIMEOUT:-120}" stdbuf -oL "$prog" "${srv[@]}" >"srv-$tag.txt" 2>&1 &
		srv_pid=$!
		vm_wait_until 30 mr_listening "$ready" ||
			fail "$tag: $prog server did not start: $(cat "srv-$tag.txt")"
	fi
	if [ -n "${MR_SRV_GUEST:-}" ]; then
		vm_barrier "peer-$tag" 300 || fail "$tag: the other guest did not come"
	fi
	if mr_peer_here cli; then
		mr_in_ns "${MR_CLI_NS:-mrb}" timeout "${MR_PEER_TIMEOUT:-120}" stdbuf -oL "$prog" "${cli[@]}" >"cli-$tag.txt" 2>&1 || rc=$?
	fi
	if mr_peer_here srv; then
		wait "$srv_pid" || srv_rc=$?
		[ "$srv_rc" = "$want_srv" ] || { mr_peer_show "$tag"; fail "$tag: $prog server exited with $srv_rc, expected $want_srv"; }
	fi
	if mr_peer_here cli; then
		[ "$rc" = "$want_cli" ] || { mr_peer_show "$tag"; fail "$tag: $prog client exited with $rc, expected $want_cli"; }
	fi
}

# mr_peer_show TAG: both sides' output of mr_peer TAG that this guest has.
# A side that fails often only reports that its peer went away (perftest's
# "Couldn't read remote address"): the reason is in the other's output.
mr_peer_show() {
	local side
	for side in srv cli; do
		[ -e "$side-$1.txt" ] || continue
		echo "--- $side-$1.txt"
		cat "$side-$1.txt"
	done
}

# mr_perftest_retry_exc FILE: a perftest client's output in FILE shows a
# completion with IBV_WC_RETRY_EXC_ERR (status 12).  The tests that cut
# every plane run a streaming perftest client: it has unacknowledged WRs
# whenever the cut comes, so it must give up (MR-FAIL-007).  A ping-pong
# client need not: a cut that finds its ping acknowledged and the pong not
# yet sent leaves it waiting in a receive with nothing outstanding, as an
# RC requester rightly does forever, while the server's unacknowledged
# pong is what fails.
mr_perftest_retry_exc() {
	# perftest 4.5 (Debian 12): "Failed status 12: wr_id ...";
	# 26.x: "Failed status-transport retry counter exceeded (12): ..."
	grep -q 'Completion with error at client' "$1" &&
		grep -Eq 'Failed status( 12:|-.*\(12\):)' "$1"
}

# mr_capture TAG CMD...: CMD while tcpdump records mrb's RoCE/MetaRoCE UDP
# traffic (ports 4791 and 4793) on its veth0 into cap-TAG.pcap.  A starved
# tcpdump lags behind the kernel's capture buffer and drops what is still
# in it when it is stopped, so before stopping it a marker datagram (UDP
# port 9, from mra) is sent until it is in the file: everything captured
# before it is then written too.  mrb's tcpdump sees mrb's packets as they
# leave and mra's as they arrive, before any ingress filter of mrb.  A
# capture that lost packets (tcpdump's "dropped by kernel") fails: a test
# that counts packets must see them all.
mr_capture_sentinel_seen() {
	ip netns exec mra bash -c 'echo x >/dev/udp/10.88.0.2/9' 2>/dev/null || :
	tcpdump -r "cap-$1.pcap" -n 'udp port 9' 2>/dev/null | grep -q .
}
mr_capture() {
	local tag=$1 pid dropped
	shift
	ip netns exec mrb tcpdump -Z root -i veth0 -n -U -B 8192 -w "cap-$tag.pcap" \
		'udp port 4791 or udp port 4793 or udp port 9' 2>"cap-$tag.err" &
	pid=$!
	mr_wait "tcpdump ($tag)" grep -q 'listening on' "cap-$tag.err"
	"$@"
	mr_wait "tcpdump to catch up ($tag)" mr_capture_sentinel_seen "$tag"
	kill -INT "$pid"
	wait "$pid" || :
	dropped=$(sed -n 's/^\([0-9]*\) packets\{0,1\} dropped by kernel$/\1/p' "cap-$tag.err")
	[ "$dropped" = 0 ] || fail "tcpdump ($tag) lost packets: $(cat "cap-$tag.err")"
}

# mr_packets TAG FILTER: packets of cap-TAG.pcap that match FILTER.
mr_packets() { tcpdump -r "cap-$1.pcap" -n "$2" 2>/dev/null | wc -l; }

# mr_expect_wire TAG MODE: cap-TAG.pcap shows RC packets of MODE only:
# 4793 (metaroce), or 4791 with an RC opcode (rocev2: BTH byte 0 below
# 0x20; UD is 0x64/0x65).  The counts go to results.txt.
mr_expect_wire() {
	local tag=$1 mode=$2 mr rc
	mr=$(mr_packets "$tag" 'udp port 4793')
	rc=$(mr_packets "$tag" 'udp port 4791 and udp[8] < 0x20')
	echo "$tag: $mr packets on 4793, $rc RoCEv2 RC packets on 4791" | tee -a "$RESULTS/results.txt"
	case $mode in
	metaroce) [ "$mr" -gt 0 ] && [ "$rc" = 0 ] ||
		fail "$tag: expected MetaRoCE (4793) only" ;;
	rocev2) [ "$rc" -gt 0 ] && [ "$mr" = 0 ] ||
		fail "$tag: expected RoCEv2 RC (4791) only" ;;
	*) fail "mr_expect_wire: $mode: not metaroce or rocev2" ;;
	esac
}
