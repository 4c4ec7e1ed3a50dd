#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test of guest-lib.sh helpers in one guest:
#   lib.sh [KO [PROVIDER_BUILD_DIR]]
# vm_load_module/vm_unload_module (on KO, default the kernel's dummy module,
# which needs nothing built), vm_install_provider (a stand-in .so unless
# PROVIDER_BUILD_DIR is given), vm_veth_pair and vm_netns_pair with netem,
# vm_wait_until, vm_wait_tcp, vm_tcp_connect, vm_net_diag, vm_dmesg_check.
set -euo pipefail
# shellcheck source=../guest-lib.sh
. "$VMTEST_LIB"
fail() { echo "FAIL: $*"; exit 1; }
step() { echo "== $*"; }

step vm_load_module
ko=${1:-}
if [ -z "$ko" ]; then
	ko=$(modinfo -n dummy) # an in-tree module file stands in for ours
fi
name=$(modinfo -F name "$ko")
vm_load_module "$ko" || fail "vm_load_module $ko"
[ -d "/sys/module/$name" ] || fail "$name not loaded"
for m in ib_core ib_uverbs udp_tunnel ip6_udp_tunnel; do
	[ -d "/sys/module/$m" ] || fail "$m not loaded by vm_load_module"
done
vm_load_module "$ko" || fail "reloading $ko"
vm_unload_module "$name" || fail "vm_unload_module $name"
[ ! -d "/sys/module/$name" ] || fail "$name still loaded"
vm_load_module /nonexistent.ko 2>/dev/null && fail "vm_load_module of a missing file succeeded"

step vm_install_provider
build=${2:-}
if [ -z "$build" ]; then
	build=$(mktemp -d)
	mkdir -p "$build/providers/metaroce"
	cp "$(vm_verbs_provider_dir)/librxe-rdmav34.so" "$build/providers/metaroce/libmetaroce-rdmav34.so"
fi
vm_install_provider "$build" || fail vm_install_provider
[ -f "$(vm_verbs_provider_dir)/libmetaroce-rdmav34.so" ] || fail "provider .so not installed"
grep -qx 'driver metaroce' /etc/libibverbs.d/metaroce.driver || fail "metaroce.driver"
vm_install_provider /nonexistent 2>/dev/null && fail "vm_install_provider of a missing tree succeeded"

step vm_veth_pair + vm_netem
vm_veth_pair vta vtb 10.99.1.1/24 10.99.1.2/24 delay 1ms || fail vm_veth_pair
tc qdisc show dev vta | grep -q netem || fail "no netem on vta"
vm_netem_clear vta
tc qdisc show dev vta | grep -q netem && fail "netem left on vta"

step vm_netns_pair
vm_netns_pair nsa nsb loss 0% delay 2ms || fail vm_netns_pair
ip netns exec nsa "$VM_BUSYBOX" ping -c 2 -W 2 10.88.0.2 || fail "nsa cannot ping nsb"
ip netns exec nsb tc qdisc show dev veth0 | grep -q 'netem.*delay 2ms' || fail "no netem in nsb"

step vm_wait_tcp + vm_wait_until
ip netns exec nsb "$VM_BUSYBOX" timeout 30 "$VM_BUSYBOX" nc -l -p 4444 >/dev/null </dev/null &
ip netns exec nsa bash -c ". '$VMTEST_LIB'; vm_wait_tcp 10.88.0.2 4444 20" || fail vm_wait_tcp
wait
vm_wait_until 1 false 2>/dev/null && fail "vm_wait_until false succeeded"

step vm_tcp_connect + vm_net_diag
ip netns exec nsb "$VM_BUSYBOX" timeout 60 "$VM_BUSYBOX" nc -l -p 4445 >/dev/null </dev/null &
listener=$!
in_nsa() { ip netns exec nsa bash -c ". '$VMTEST_LIB'; $*"; }
out=$(in_nsa vm_tcp_connect 10.88.0.2 4446 10 2>&1) && fail "vm_tcp_connect to a closed port succeeded"
[ -z "$out" ] || fail "vm_tcp_connect printed: $out"
# Every packet lost: the attempt gives up at its bound (a hang would be the
# harness's timeout) and the listener is still there for the next one.
ip netns exec nsa tc qdisc replace dev veth0 root netem loss 100% || fail "netem loss 100% in nsa"
t0=${EPOCHREALTIME/./}
in_nsa vm_tcp_connect 10.88.0.2 4445 2 && fail "vm_tcp_connect through 100% loss succeeded"
((${EPOCHREALTIME/./} - t0 >= 2000000)) || fail "vm_tcp_connect through 100% loss gave up before its 2 s"
ip netns exec nsa tc qdisc replace dev veth0 root netem delay 2ms || fail "netem back to delay 2ms in nsa"
in_nsa vm_tcp_connect 10.88.0.2 4445 10 || fail "vm_tcp_connect to a listener failed"
wait "$listener" || fail "the listener saw no connection"
diag=$(mktemp -d)
RESULTS=$diag vm_net_diag "selftest" 2>/dev/null
grep -q '^diag at .*: selftest; load ' "$diag/diag.txt" || fail "vm_net_diag: no header: $(cat "$diag/diag.txt")"
grep -q 'TcpActiveOpens=[0-9]' "$diag/diag.txt" || fail "vm_net_diag: no TCP counters"
grep -q '^eth0 up rx [0-9]*/drop [0-9]* tx [0-9]*/drop [0-9]* qdisc [0-9]* dropped' "$diag/diag.txt" ||
	fail "vm_net_diag: no eth0 line: $(cat "$diag/diag.txt")"
vm_barrier solo 5 || fail "vm_barrier is not a no-op with one guest"

step vm_dmesg_check
vm_dmesg_check || fail "dmesg not clean"
echo "BUG: not a real one" >"$RESULTS/fake-dmesg.txt"
vm_dmesg_check "$RESULTS/fake-dmesg.txt" 2>/dev/null && fail "vm_dmesg_check passed a BUG: line"
rm "$RESULTS/fake-dmesg.txt"
echo "PASS: guest-lib on $KVER"
