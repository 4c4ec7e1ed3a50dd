#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma_metaroce.ko seen through libibverbs and the provider built in
# BUILD_DIR, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-verbs.sh BUILD_DIR
#
# Checks: ibv_devices lists the device with its node GUID; ibv_devinfo shows
# the limits of kernel/metaroce_param.h, PORT_ACTIVE, the link layer and an
# active MTU that follows the netdev MTU; netdev down/up gives PORT_DOWN /
# PORT_ACTIVE and exactly one IBV_EVENT_PORT_ERR / IBV_EVENT_PORT_ACTIVE;
# PDs (tests/progs/metaroce_pd_test, and one held from pyverbs) appear in
# "rdma resource show pd"; the CQ ring and the syscall path
# (tests/progs/metaroce_cq_test, with and without METAROCE_NO_RINGS=1); "rdma link delete" and rmmod complete while a
# process still has the device open (the process gets
# IBV_EVENT_DEVICE_FATAL).
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

pd_test=$build/tests/progs/metaroce_pd_test
[ -x "$pd_test" ] || fail "$pd_test not built"
cq_test=$build/tests/progs/metaroce_cq_test
[ -x "$cq_test" ] || fail "$cq_test not built"

mr_load "$(mr_ko "$build")"
mr_veth mrv0 mrv1
ip addr add 10.99.0.1/24 dev mrv0
rdma link add mr0 type metaroce netdev mrv0

vm_install_provider "$build" || fail "installing the provider from $build"

step "ibv_devices"
ibv_devices | tee devices.txt
guid=$(tr -d : </sys/class/infiniband/mr0/node_guid)
awk -v g="$guid" '$1 == "mr0" && $2 == g { found = 1 } END { exit !found }' devices.txt ||
	fail "ibv_devices does not list mr0 with node GUID $guid"

# devinfo FIELD: the value of FIELD in "ibv_devinfo -v -d mr0".
devinfo() {
	ibv_devinfo -v -d mr0 >devinfo.txt 2>&1 || { cat devinfo.txt; fail "ibv_devinfo"; }
	awk -v f="$1:" '$1 == f { print $2; exit }' devinfo.txt
}
# param NAME: a limit from kernel/metaroce_param.h, in decimal.
param() {
	local v
	v=$(sed -n "s/^#define $1[[:space:]]\+\([0-9a-fx]\+\)$/\1/p" \
		"$METAROCE_SRC/kernel/metaroce_param.h")
	[ -n "$v" ] || fail "no $1 in metaroce_param.h"
	echo $((v))
}

step "ibv_devinfo"
ibv_devinfo -v -d mr0 | tee devinfo-first.txt
[ "$(devinfo state)" = PORT_ACTIVE ] || fail "state $(devinfo state)"
[ "$(devinfo link_layer)" = Ethernet ] || fail "link_layer $(devinfo link_layer)"
[ "$(devinfo transport)" = InfiniBand ] || fail "transport $(devinfo transport)"
[ "$(devinfo max_mtu)" = 4096 ] || fail "max_mtu $(devinfo max_mtu)"
for f in max_qp:METAROCE_MAX_QP max_cq:METAROCE_MAX_CQ max_mr:METAROCE_MAX_MR \
	 max_pd:METAROCE_MAX_PD max_sge:METAROCE_MAX_SGE max_cqe:METAROCE_MAX_CQE; do
	[ "$(devinfo "${f%%:*}")" = "$(param "${f#*:}")" ] ||
		fail "${f%%:*} $(devinfo "${f%%:*}") != ${f#*:} $(param "${f#*:}")"
done

step "active MTU follows the netdev MTU"
# Payload room is the netdev MTU less 92 bytes of IPv6, UDP and MetaRoCE
# headers and CRC.
for m in 9000:4096 2200:2048 2100:1024 1500:1024 700:512; do
	ip link set mrv0 mtu "${m%%:*}"
	[ "$(devinfo active_mtu)" = "${m#*:}" ] ||
		fail "active_mtu $(devinfo active_mtu) at netdev MTU ${m%%:*}, expected ${m#*:}"
done
ip link set mrv0 mtu 1500

step "port state and async events"
stdbuf -oL ibv_asyncwatch -d mr0 >async.txt 2>&1 &
watch_pid=$!
mr_wait "ibv_asyncwatch" grep -q 'async event FD' async.txt
port_events() { grep -c "IBV_EVENT_PORT_$1" async.txt || :; }
ip link set mrv0 down
[ "$(devinfo state)" = PORT_DOWN ] || fail "state $(devinfo state) after mrv0 down"
mr_wait "IBV_EVENT_PORT_ERR" eval '[ "$(port_events ERR)" -ge 1 ]'
ip link set mrv0 up
mr_wait "PORT_ACTIVE" eval '[ "$(devinfo state)" = PORT_ACTIVE ]'
mr_wait "IBV_EVENT_PORT_ACTIVE" eval '[ "$(port_events ACTIVE)" -ge 1 ]'
cat async.txt
[ "$(port_events ERR)" = 1 ] && [ "$(port_events ACTIVE)" = 1 ] ||
	fail "expected one PORT_ERR and one PORT_ACTIVE event"

step "PD allocation"
"$pd_test" --device mr0 | tee pd_test.txt

# The CQ ring mapped from the kernel (the provider's default where the
# module offers it) and the POLL_CQ command path it falls back to:
# ordering, index wrap, the extended API, arming and events, overflow.
step "CQ paths"
"$cq_test" --dev mr0 --rings yes | tee cq_test-rings.txt
METAROCE_NO_RINGS=1 "$cq_test" --dev mr0 --rings no | tee cq_test-no-rings.txt
# hold_start: hold a context and a PD of mr0 from pyverbs until hold_stop
# (the fifo lives outside $RESULTS: 9p refuses special files).
fifo=$(mktemp -d)/hold.fifo
mkfifo "$fifo"
hold_start() {
	/usr/bin/python3 -c '
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
ctx = Context(name="mr0")
pd = PD(ctx)
print("holding", flush=True)
sys.stdin.readline()
' <"$fifo" >hold.txt 2>&1 &
	hold_pid=$!
	exec 3>"$fifo"
	mr_wait "pyverbs PD" grep -q holding hold.txt
}
hold_stop() {
	exec 3>&-
	wait "$hold_pid" || : # its PD went with the device: teardown may complain
	cat hold.txt
}

hold_start
rdma resource show pd | tee res-pd.txt
grep -Eq "dev mr0 .*pid $hold_pid comm python3" res-pd.txt ||
	fail "rdma resource show pd lacks the PD of pid $hold_pid"

step "rdma link delete with the device open"
timeout 60 rdma link delete mr0 || fail "rdma link delete blocked or failed"
mr_dev_gone mr0 || fail "mr0 left after delete"
mr_wait "IBV_EVENT_DEVICE_FATAL" grep -q IBV_EVENT_DEVICE_FATAL async.txt
cat async.txt
kill "$watch_pid" # it keeps waiting for events after DEVICE_FATAL
wait "$watch_pid" || :
hold_stop
[ -z "$(mr_user_res pd)" ] || fail "PDs left: $(rdma resource show pd)"

step "module unload with the device open"
# With disassociate_ucontext an open context does not pin the module:
# unloading destroys the context's objects like a device removal.
rdma link add mr0 type metaroce netdev mrv0
hold_start
timeout 60 rmmod rdma_metaroce || fail "rmmod blocked or failed with a context open"
mr_dev_gone mr0 || fail "mr0 left after rmmod"
hold_stop
[ ! -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce still loaded"
echo "PASS: verbs on $KVER"
