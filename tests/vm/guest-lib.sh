# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# Helpers for guest scripts run by tests/vm/vmtest.sh. Inside a guest:
#
#   . "$VMTEST_LIB"
#
# Defines functions (all named vm_*) and nothing else; sourcing has no side
# effects. Every function prints what went wrong on stderr and returns
# non-zero on failure, so `set -e` scripts stop at the first failed helper.
# Programs started from the 9p root cost a few tenths of a second each
# under TCG, so the helpers use shell builtins and the static busybox where
# they can.
#
# Environment (set by the harness): GUEST_INDEX, GUEST_COUNT, PLANES, KVER,
# METAROCE_SRC, RESULTS.

_vm_here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=dmesg-check.sh
. "$_vm_here/dmesg-check.sh"

VM_BUSYBOX=${VM_BUSYBOX:-/bin/busybox}

vm_log() { echo "[vm$GUEST_INDEX $(vm_uptime)] $*"; }
vm_err() { echo "vmtest-lib: $*" >&2; }
vm_uptime() { local u _; read -r u _ </proc/uptime; echo "$u"; }

# vm_dmesg_check [FILE]: the harness's dmesg check, on FILE or the current
# kernel log. The harness applies it after every script anyway; call it to
# fail early (e.g. after each step of a long test).
vm_dmesg_check() {
	local log bad
	if [ $# -gt 0 ]; then
		bad=$(vmtest_dmesg_check "$1")
	else
		log=$(dmesg) || { vm_err "vm_dmesg_check: dmesg failed"; return 2; }
		bad=$(vmtest_dmesg_check <<<"$log")
	fi || {
		vm_err "dmesg check failed:"
		printf '%s\n' "$bad" | head -n 20 >&2
		return 1
	}
}

# vm_wait_until TIMEOUT_SEC CMD...: run CMD every 0.2 s until it succeeds;
# return 1 after TIMEOUT_SEC.
vm_wait_until() {
	local timeout=$1 end now
	shift
	read -r now _ </proc/uptime
	end=$((${now%.*} + timeout))
	while :; do
		"$@" && return 0
		read -r now _ </proc/uptime
		[ "${now%.*}" -ge "$end" ] && break
		sleep 0.2
	done
	vm_err "timed out after ${timeout}s waiting for: $*"
	return 1
}

# ------------------------------------------------------------------ modules

# vm_load_module PATH.ko [PARAM=VALUE...]: load an out-of-tree module. Checks
# that it was built for the running kernel, modprobes the RDMA stack it may
# need (ib_core, ib_uverbs, udp_tunnel, ip6_udp_tunnel) and its declared
# dependencies, unloads an older copy, then insmods it. Loading an unsigned
# module taints the kernel; the dmesg check expects that.
vm_load_module() {
	local ko=${1:?usage: vm_load_module PATH.ko [PARAM=VALUE...]} info name='' vermagic='' deps='' k v
	shift
	[ -f "$ko" ] || { vm_err "vm_load_module: $ko not found"; return 1; }
	info=$(modinfo "$ko") || { vm_err "vm_load_module: modinfo $ko failed"; return 1; }
	while IFS= read -r k; do
		v=${k#*:}
		v=${v#"${v%%[! ]*}"}
		case $k in
		name:*) name=$v ;;
		vermagic:*) vermagic=${v%% *} ;;
		depends:*) deps=${v//,/ } ;;
		esac
	done <<<"$info"
	if [ "$vermagic" != "$KVER" ]; then
		vm_err "vm_load_module: $ko is built for '$vermagic', the guest runs $KVER"
		return 1
	fi
	[ -n "$name" ] || { name=${ko##*/}; name=${name%.ko}; name=${name//-/_}; }
	# shellcheck disable=SC2086 # deps is a word list
	modprobe -a ib_core ib_uverbs udp_tunnel ip6_udp_tunnel $deps ||
		{ vm_err "vm_load_module: modprobe of the dependencies of $name failed"; return 1; }
	if [ -d "/sys/module/$name" ]; then
		rmmod "$name" || { vm_err "vm_load_module: $name is loaded and cannot be removed"; return 1; }
	fi
	insmod "$ko" "$@" || { vm_err "vm_load_module: insmod $ko $* failed"; return 1; }
	[ -d "/sys/module/$name" ] || { vm_err "vm_load_module: $name not in /sys/module after insmod"; return 1; }
}

# vm_unload_module NAME: rmmod, retried for up to 10 s while the module is
# still in use (e.g. by devices being torn down).
vm_unload_module() {
	local name=${1:?usage: vm_unload_module NAME}
	[ -d "/sys/module/$name" ] || return 0
	vm_wait_until 10 rmmod "$name" 2>/dev/null || { rmmod "$name"; return 1; }
}

# ------------------------------------------------------------------ provider

# vm_verbs_provider_dir: libibverbs' provider directory (where the
# lib<name>-rdmav<PABI>.so files are).
vm_verbs_provider_dir() {
	local d
	for d in /usr/lib/*-linux-gnu/libibverbs /usr/lib64/libibverbs /usr/lib/libibverbs; do
		[ -d "$d" ] && { echo "$d"; return 0; }
	done
	vm_err "no libibverbs provider directory (is ibverbs-providers installed?)"
	return 1
}

# vm_install_provider BUILD_DIR [NAME]: install the provider NAME (default
# metaroce) from a build tree into the guest (its root is an overlay, so this
# touches nothing on the host). Looks for lib<NAME>-rdmav*.so in
# BUILD_DIR/providers/<NAME>, then in BUILD_DIR; copies it into libibverbs'
# provider directory and writes /etc/libibverbs.d/<NAME>.driver with
# "driver <NAME>", so libibverbs loads the copy by name, as for an installed
# provider. (The build tree's own libibverbs.d/<NAME>.driver names the .so in
# the build tree by absolute path; copy that instead to test the build tree.)
vm_install_provider() {
	local build=${1:?usage: vm_install_provider BUILD_DIR [NAME]} name=${2:-metaroce} so='' d f
	for d in "$build/providers/$name" "$build"; do
		for f in "$d/lib$name"-rdmav*.so; do
			[ -f "$f" ] && { so=$f; break 2; }
		done
	done
	[ -n "$so" ] || { vm_err "vm_install_provider: no lib$name-rdmav*.so in $build/providers/$name or $build"; return 1; }
	d=$(vm_verbs_provider_dir) || return 1
	cp "$so" "$d/" || { vm_err "vm_install_provider: cp $so $d failed"; return 1; }
	mkdir -p /etc/libibverbs.d
	echo "driver $name" >"/etc/libibverbs.d/$name.driver"
	vm_log "installed provider $d/${so##*/} and /etc/libibverbs.d/$name.driver"
}

# ------------------------------------------------------------------ network

# vm_addr GUEST PLANE: the address of guest GUEST on plane PLANE (no /24).
vm_addr() { echo "10.77.${2:?usage: vm_addr GUEST PLANE}.$((${1} + 1))"; }
# vm_my_addr [PLANE] / vm_peer_addr [PLANE]: this guest's / the other guest's.
vm_my_addr() { vm_addr "$GUEST_INDEX" "${1:-0}"; }
vm_peer_addr() { vm_addr "$((1 - GUEST_INDEX))" "${1:-0}"; }
# vm_plane_dev PLANE: the NIC of a plane (eth<PLANE>).
vm_plane_dev() { echo "eth${1:?usage: vm_plane_dev PLANE}"; }

# vm_ping ADDR [COUNT]: a quick reachability check (busybox ping, 1 s wait).
vm_ping() { "$VM_BUSYBOX" ping -q -c "${2:-1}" -W 1 "$1" >/dev/null 2>&1; }

# vm_wait_for_peer [TIMEOUT_SEC] [PLANE...]: wait (default 60 s) until the
# other guest answers pings on each PLANE (default all planes). Returns 0 at
# once in a one-guest run.
vm_wait_for_peer() {
	local timeout=${1:-60} p planes
	shift || true
	[ "${GUEST_COUNT:-1}" -ge 2 ] || return 0
	planes=("$@")
	if [ $# -eq 0 ]; then
		for ((p = 0; p < PLANES; p++)); do planes+=("$p"); done
	fi
	for p in "${planes[@]}"; do
		vm_wait_until "$timeout" vm_ping "$(vm_peer_addr "$p")" ||
			{ vm_err "peer $(vm_peer_addr "$p") (plane $p) unreachable"; return 1; }
	done
}

# vm_retry TRIES DELAY_SEC CMD...: run CMD up to TRIES times, DELAY_SEC apart,
# until it succeeds; e.g. a client whose server in the other guest may not
# listen yet. Returns CMD's last status.
vm_retry() {
	local tries=${1:?usage: vm_retry TRIES DELAY CMD...} delay=${2:?} i rc=1
	shift 2
	for ((i = 1; i <= tries; i++)); do
		"$@" && return 0
		rc=$?
		[ "$i" -lt "$tries" ] && sleep "$delay"
	done
	return "$rc"
}

# vm_tcp_connect ADDR PORT SEC: one TCP connection to ADDR:PORT, given up
# after SEC seconds (the kernel retransmits a lost SYN within them); 0 if
# it was accepted. Starts no program: under TCG a program read from the 9p
# root can take seconds to start while the emulator is busy with network
# traffic, which a short bound would count as a failed connection.
vm_tcp_connect() {
	local addr=${1:?usage: vm_tcp_connect ADDR PORT SEC} port=${2:?} sec=${3:?} fd pid ok=
	exec {fd}< <(exec 2>/dev/null && exec 3<>"/dev/tcp/$addr/$port" && echo ok)
	pid=$!
	read -r -t "$sec" -u "$fd" ok || :
	exec {fd}<&-
	kill "$pid" 2>/dev/null || :
	[ "$ok" = ok ]
}

# vm_wait_tcp ADDR PORT [TIMEOUT_SEC]: wait (default 60 s) until ADDR:PORT
# accepts a TCP connection. The probe is a real connection: do not use it on
# one-shot servers (ibv_rc_pingpong, perftest) that would take it for their
# client; wait for such a server in its own guest instead.
vm_wait_tcp() {
	local addr=${1:?usage: vm_wait_tcp ADDR PORT [TIMEOUT]} port=${2:?} timeout=${3:-60}
	vm_wait_until "$timeout" vm_tcp_connect "$addr" "$port" 10
}

# vm_barrier NAME [TIMEOUT_SEC] [PLANE]: both guests wait here until both
# arrived (default 120 s, over plane 0). Guest 0 listens on a TCP port
# (20000-29999, derived from NAME); guest 1 connects to it on PLANE,
# retrying. No-op with one guest. A guest that gives up records the state
# of its network (vm_net_diag).
vm_barrier() {
	local name=${1:?usage: vm_barrier NAME [TIMEOUT] [PLANE]} timeout=${2:-120} plane=${3:-0} port sum=0 i
	[ "${GUEST_COUNT:-1}" -ge 2 ] || return 0
	for ((i = 0; i < ${#name}; i++)); do
		sum=$(((sum * 31 + $(printf '%d' "'${name:i:1}")) % 10000))
	done
	port=$((20000 + sum))
	if [ "$GUEST_INDEX" = 0 ]; then
		"$VM_BUSYBOX" timeout "$timeout" "$VM_BUSYBOX" nc -l -p "$port" >/dev/null </dev/null || {
			vm_err "vm_barrier $name: guest 1 did not arrive within ${timeout}s (or nc failed)"
			vm_net_diag "barrier $name, port $port"
			return 1
		}
	else
		# 20 s per attempt: room for SYN retransmissions on a busy link.
		vm_wait_until "$timeout" vm_tcp_connect "$(vm_peer_addr "$plane")" "$port" 20 || {
			vm_err "vm_barrier $name: guest 0 did not arrive within ${timeout}s"
			vm_net_diag "barrier $name, port $port"
			return 1
		}
	fi
}

# vm_net_diag WHY: a few lines on the state of this guest's network and
# CPU (TCP/UDP/IP drop counters, per-link packet and drop counts, TCP
# connections, the processes with the highest average CPU), appended to
# $RESULTS/diag.txt, which the harness prints for a failed guest.
vm_net_diag() {
	local why=${1:?usage: vm_net_diag WHY} d dev load _ line
	read -r load _ </proc/loadavg
	{
		echo "diag at $(vm_uptime) s: $why; load $load"
		nstat -asz 2>/dev/null | awk '$1 ~ /^(TcpActiveOpens|TcpPassiveOpens|TcpAttemptFails|TcpRetransSegs|TcpExtTCPTimeouts|TcpExtListenDrops|UdpInErrors|UdpRcvbufErrors|IpInDiscards|IpOutDiscards)$/ { printf "%s=%s ", $1, $2 } END { print "" }'
		for d in /sys/class/net/eth*; do
			dev=${d##*/}
			line="$dev $(<"$d/operstate") rx $(<"$d/statistics/rx_packets")/drop $(<"$d/statistics/rx_dropped")"
			line+=" tx $(<"$d/statistics/tx_packets")/drop $(<"$d/statistics/tx_dropped")"
			line+=" qdisc $(tc -s qdisc show dev "$dev" 2>/dev/null | awk '/dropped/ { gsub(",", ""); printf "%s%s dropped, backlog ", sep, $7; sep = "; " }
				/backlog/ { printf "%s/%s", $2, $3 }')"
			echo "$line"
		done
		echo "tcp: $(ss -tanH 2>/dev/null | awk '$1 != "LISTEN" { print $1, $4, $5 }' | head -n 6 | paste -sd ';')"
		echo "cpu (average over each process's life): $(ps -eo pcpu=,comm= --sort=-pcpu 2>/dev/null | head -n 4 | awk '{ print $2 " " $1 "%" }' | paste -sd ',')"
	} >>"$RESULTS/diag.txt"
	vm_err "state of the network at \"$why\" in diag.txt"
}

# vm_netem DEV ARGS...: replace DEV's root qdisc by netem ARGS (e.g.
# "loss 1%", "delay 1ms 100us", "reorder 25% 50%"). vm_netem_clear DEV.
vm_netem() {
	local dev=${1:?usage: vm_netem DEV NETEM_ARGS...}
	shift
	modprobe sch_netem 2>/dev/null
	tc qdisc replace dev "$dev" root netem "$@" ||
		{ vm_err "vm_netem: tc qdisc replace dev $dev root netem $* failed"; return 1; }
}
vm_netem_clear() { tc qdisc del dev "${1:?}" root 2>/dev/null || true; }

# vm_veth_pair DEV_A DEV_B ADDR_A/LEN ADDR_B/LEN [NETEM ARGS...]: a veth pair
# in the current namespace, both ends addressed and up; with NETEM ARGS both
# ends get that netem qdisc.
vm_veth_pair() {
	local a=${1:?usage: vm_veth_pair DEV_A DEV_B ADDR_A/LEN ADDR_B/LEN [NETEM...]} b=${2:?} aa=${3:?} ab=${4:?}
	shift 4
	ip link add "$a" type veth peer name "$b" || { vm_err "vm_veth_pair: ip link add $a/$b failed"; return 1; }
	ip -batch - <<-EOF || { vm_err "vm_veth_pair: configuring $a/$b failed"; return 1; }
		addr add $aa dev $a
		addr add $ab dev $b
		link set $a up
		link set $b up
	EOF
	if [ $# -gt 0 ]; then
		vm_netem "$a" "$@" && vm_netem "$b" "$@" || return 1
	fi
}

# vm_netns_pair NS_A NS_B [NETEM ARGS...]: two network namespaces joined by a
# veth pair. In each namespace the link is named veth0; NS_A has
# ${VM_NETNS_NET:-10.88.0}.1/24, NS_B .2/24, lo is up in both. With NETEM
# ARGS both ends get that netem qdisc. Run commands there with
# `ip netns exec NS_A CMD`.
vm_netns_pair() {
	local a=${1:?usage: vm_netns_pair NS_A NS_B [NETEM...]} b=${2:?} net=${VM_NETNS_NET:-10.88.0} tmp=vmnp$$
	shift 2
	ip netns add "$a" && ip netns add "$b" || { vm_err "vm_netns_pair: ip netns add $a/$b failed"; return 1; }
	ip -batch - <<-EOF || { vm_err "vm_netns_pair: creating the veth pair failed"; return 1; }
		link add ${tmp}a type veth peer name ${tmp}b
		link set ${tmp}a netns $a
		link set ${tmp}b netns $b
	EOF
	ip -n "$a" -batch - <<-EOF || { vm_err "vm_netns_pair: configuring $a failed"; return 1; }
		link set ${tmp}a name veth0
		addr add $net.1/24 dev veth0
		link set lo up
		link set veth0 up
	EOF
	ip -n "$b" -batch - <<-EOF || { vm_err "vm_netns_pair: configuring $b failed"; return 1; }
		link set ${tmp}b name veth0
		addr add $net.2/24 dev veth0
		link set lo up
		link set veth0 up
	EOF
	if [ $# -gt 0 ]; then
		modprobe sch_netem 2>/dev/null
		ip netns exec "$a" tc qdisc replace dev veth0 root netem "$@" &&
			ip netns exec "$b" tc qdisc replace dev veth0 root netem "$@" ||
			{ vm_err "vm_netns_pair: netem $* failed"; return 1; }
	fi
}

# ------------------------------------------------------------------ rdma_rxe

# vm_rxe_add NAME NETDEV: a soft-RoCE device NAME on NETDEV (modprobes
# rdma_rxe), waiting until its port is ACTIVE.
vm_rxe_add() {
	local name=${1:?usage: vm_rxe_add NAME NETDEV} dev=${2:?}
	modprobe rdma_rxe || { vm_err "vm_rxe_add: modprobe rdma_rxe failed"; return 1; }
	rdma link add "$name" type rxe netdev "$dev" ||
		{ vm_err "vm_rxe_add: rdma link add $name type rxe netdev $dev failed"; return 1; }
	vm_wait_until 30 grep -q ACTIVE "/sys/class/infiniband/$name/ports/1/state"
}
