#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test, run with --guests 2 --planes N: RoCEv2 between the
# guests works on every plane. Each guest puts a soft-RoCE device rxe<p> on
# eth<p>; on each plane guest 0 runs an ibv_rc_pingpong server and guest 1
# the client (RC over UDP 4791 through the plane's qemu dgram link).
set -euo pipefail
# shellcheck source=../guest-lib.sh
. "$VMTEST_LIB"
fail() { echo "FAIL: $*"; exit 1; }

[ "$GUEST_COUNT" = 2 ] || fail "run with --guests 2"

# gid_index DEV ADDR: index of the RoCE v2 GID of IPv4 ADDR (builtins only:
# the table has 1024 slots).
gid_index() {
	local g i v t gid
	gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for g in "/sys/class/infiniband/$1/ports/1/gids/"*; do
		i=${g##*/}
		read -r v <"$g" || continue
		[ "$v" = "$gid" ] || continue
		read -r t <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$i" 2>/dev/null || continue
		[ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
	done
	return 1
}

for ((p = 0; p < PLANES; p++)); do
	vm_rxe_add "rxe$p" "eth$p" || fail "rxe$p on eth$p"
done
vm_wait_for_peer 60 || fail "peer unreachable"

for ((p = 0; p < PLANES; p++)); do
	idx=$(gid_index "rxe$p" "$(vm_my_addr "$p")") || fail "no RoCE v2 GID on rxe$p"
	port=$((18515 + p))
	vm_barrier "plane$p" 120 || fail "barrier before plane $p"
	if [ "$GUEST_INDEX" = 0 ]; then
		ibv_rc_pingpong -d "rxe$p" -g "$idx" -p "$port" -n 100 >"$RESULTS/pingpong-$p.txt" 2>&1 ||
			fail "server on plane $p: $(cat "$RESULTS/pingpong-$p.txt")"
	else
		# Retry until the server listens (a probe connection would be
		# taken for the client by the one-shot server).
		vm_retry 60 1 ibv_rc_pingpong -d "rxe$p" -g "$idx" -p "$port" -n 100 "$(vm_peer_addr "$p")" \
			>"$RESULTS/pingpong-$p.txt" 2>&1 || fail "client on plane $p: $(cat "$RESULTS/pingpong-$p.txt")"
	fi
	echo "plane $p: $(grep 'iters in' "$RESULTS/pingpong-$p.txt")"
done
vm_barrier end 60 || fail "final barrier"
echo "PASS: RC ping-pong between the guests on $PLANES planes"
