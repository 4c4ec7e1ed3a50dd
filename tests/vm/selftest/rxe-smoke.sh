#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test: the guest's RDMA stack works. Creates a soft-RoCE device
# on eth0, checks that ibv_devices lists it and that an RC ping-pong between
# two processes over it (loopback through the device) completes.
set -euo pipefail
# shellcheck source=../guest-lib.sh
. "$VMTEST_LIB"
fail() { echo "FAIL: $*"; exit 1; }

[ "$PLANES" -ge 1 ] || fail "run with --planes >= 1"
vm_rxe_add rxe0 eth0 || fail "rxe0 on eth0"
rdma link show rxe0/1
ibv_devices | tee "$RESULTS/ibv_devices.txt"
grep -qw rxe0 "$RESULTS/ibv_devices.txt" || fail "ibv_devices does not list rxe0"

# The RoCE v2 GID of eth0's IPv4 address.
addr=$(vm_my_addr 0)
# shellcheck disable=SC2086 # split the address into its four octets
gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${addr//./ })
# Builtins only: the table has 1024 slots and every cat would be an exec.
idx=
for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
	i=${g##*/}
	read -r v <"$g" || continue
	[ "$v" = "$gid" ] || continue
	read -r t <"/sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i" 2>/dev/null || continue
	[ "$t" = "RoCE v2" ] && idx=$i && break
done
[ -n "$idx" ] || fail "no RoCE v2 GID $gid on rxe0"
echo "RoCE v2 GID index $idx ($gid)"

ibv_rc_pingpong -d rxe0 -g "$idx" -n 200 >"$RESULTS/pingpong-server.txt" 2>&1 &
server=$!
ok=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	if ibv_rc_pingpong -d rxe0 -g "$idx" -n 200 127.0.0.1 >"$RESULTS/pingpong-client.txt" 2>&1; then
		ok=1
		break
	fi
	grep -q 'Couldn.t connect' "$RESULTS/pingpong-client.txt" || break
	sleep 0.5
done
cat "$RESULTS/pingpong-client.txt"
[ -n "$ok" ] || { kill "$server" 2>/dev/null; fail "ibv_rc_pingpong client failed"; }
wait "$server" || fail "ibv_rc_pingpong server failed: $(cat "$RESULTS/pingpong-server.txt")"
grep -q 'iters in' "$RESULTS/pingpong-client.txt" || fail "no ping-pong result"
rdma link delete rxe0
echo "PASS: rdma_rxe smoke on $KVER"
