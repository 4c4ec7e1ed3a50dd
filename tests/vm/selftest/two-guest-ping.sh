#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test, run with --guests 2 --planes N: each guest has its plane
# addresses on eth0..eth<N-1>, reaches the other guest on every plane, and
# the planes are separate links (each address only answers on its plane's
# NIC). Ends with a barrier so neither guest powers off while the other
# still pings it.
set -euo pipefail
# shellcheck source=../guest-lib.sh
. "$VMTEST_LIB"
fail() { echo "FAIL: $*"; exit 1; }

[ "$GUEST_COUNT" = 2 ] || fail "run with --guests 2"
[ "$PLANES" -ge 1 ] || fail "run with --planes N >= 1"
peer=$((1 - GUEST_INDEX))
for ((p = 0; p < PLANES; p++)); do
	dev=$(vm_plane_dev "$p")
	ip -br addr show dev "$dev" | grep -q " $(vm_my_addr "$p")/24" || fail "$dev lacks $(vm_my_addr "$p")/24"
	mac=$(cat "/sys/class/net/$dev/address")
	[ "$mac" = "$(printf '52:54:00:77:%02x:%02x' "$p" "$((GUEST_INDEX + 1))")" ] || fail "$dev has MAC $mac"
done

vm_wait_for_peer 60 || fail "peer unreachable"
vm_log "peer answers on all $PLANES planes"
for ((p = 0; p < PLANES; p++)); do
	dev=$(vm_plane_dev "$p")
	addr=$(vm_peer_addr "$p")
	out=$("$VM_BUSYBOX" ping -c 3 -W 2 -I "$dev" "$addr" 2>&1) || fail "ping -I $dev $addr: $out"
	echo "plane $p: $(grep -E 'packets|round-trip' <<<"$out" | tr '\n' ' ')"
	# The peer's neighbour entry must be on this plane's NIC only.
	ip neigh show "$addr" | grep -q "dev $dev " || fail "neighbour $addr not on $dev: $(ip neigh show "$addr")"
	[ "$(ip neigh show "$addr" | grep -vc "dev $dev ")" = 0 ] || fail "neighbour $addr seen on another NIC"
done
vm_barrier end 60 || fail "barrier"
echo "PASS: guest $GUEST_INDEX reached guest $peer on $PLANES planes"
