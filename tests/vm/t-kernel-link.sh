#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# "rdma link" life cycle of rdma_metaroce.ko without userspace verbs, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-kernel-link.sh BUILD_DIR
#
# Checks: device creation on a veth and what sysfs shows of it (ABI version
# attribute, the bounds of the window, paths and initial_rtt_ns attributes,
# node type and GUID, link layer, P_Key, RoCEv2 GIDs from the
# netdev's addresses); the port state following netdev up/down, peer
# carrier and MTU; the errno of bad "rdma link add" requests; "rdma link
# delete"; removal of the devices when their netdevs are deleted.
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

sys=/sys/class/infiniband/mr0
mr_load "$(mr_ko "$build")"
mr_veth mrv0 mrv1
ip addr add 10.99.0.1/24 dev mrv0
ip addr add fd00:99::1/64 dev mrv0 nodad

step "rdma link add"
rdma link add mr0 type metaroce netdev mrv0
rdma link show mr0/1 | tee link.txt
grep -q 'state ACTIVE physical_state LINK_UP netdev mrv0' link.txt ||
	fail "rdma link show: $(cat link.txt)"

step "sysfs"
abi=$(mr_header_abi_version)
[ "$(cat $sys/metaroce_abi_version)" = "$abi" ] ||
	fail "metaroce_abi_version '$(cat $sys/metaroce_abi_version)' != $abi"
uverbs=
for u in /sys/class/infiniband_verbs/uverbs*; do
	[ "$(cat "$u/ibdev")" = mr0 ] && uverbs=$u
done
[ -n "$uverbs" ] || fail "no uverbs device for mr0"
[ "$(cat "$uverbs/abi_version")" = "$abi" ] ||
	fail "$uverbs/abi_version '$(cat "$uverbs/abi_version")' != $abi"
[ "$(cat $sys/node_type)" = "1: CA" ] || fail "node_type $(cat $sys/node_type)"
[ "$(cat $sys/ports/1/link_layer)" = Ethernet ] || fail "link_layer"
[ "$(cat $sys/ports/1/pkeys/0)" = 0xffff ] || fail "pkey 0 $(cat $sys/ports/1/pkeys/0)"
[ ! -e $sys/ports/1/pkeys/1 ] || fail "more than one P_Key"
# EUI-64 of the netdev's MAC: universal/local bit flipped, ff:fe inserted.
IFS=: read -r m0 m1 m2 m3 m4 m5 </sys/class/net/mrv0/address
guid=$(printf '%02x%s:%sff:fe%s:%s%s' $((0x$m0 ^ 2)) "$m1" "$m2" "$m3" "$m4" "$m5")
[ "$(cat $sys/node_guid)" = "$guid" ] || fail "node_guid $(cat $sys/node_guid) != $guid"
# rw_attr NAME DEFAULT GOOD BAD...: attribute NAME reads DEFAULT, takes
# GOOD, and refuses each BAD with EINVAL, keeping its value.
rw_attr() {
	local name=$1 def=$2 good=$3 bad v
	shift 3
	read -r v <"$sys/$name"
	[ "$v" = "$def" ] || fail "$name is $v, expected $def"
	echo "$good" >"$sys/$name" || fail "$name refused $good"
	for bad in "$@"; do
		if out=$( (echo "$bad" >"$sys/$name") 2>&1); then
			fail "$name took $bad"
		fi
		[[ $out == *"Invalid argument"* ]] || fail "$name refused $bad with: $out"
	done
	read -r v <"$sys/$name"
	[ "$v" = "$good" ] || fail "$name is $v after refused writes, expected $good"
	echo "$def" >"$sys/$name" || fail "$name refused its default $def"
}
rw_attr window 512 1 0 513 -1 abc ""
rw_attr paths 8 16 0 17 -1 abc ""
rw_attr initial_rtt_ns 100000 10000000000 999 10000000001 abc

step "RoCEv2 GIDs"
# gid_present GID: GID is in the table with type RoCE v2 (one grep over the
# 1024 entries: a process per entry is slow under TCG).
gid_present() {
	local f
	for f in $(grep -lFx "$1" $sys/ports/1/gids/*); do
		[ "$(cat $sys/ports/1/gid_attrs/types/"${f##*/}")" = "RoCE v2" ] &&
			return 0
	done
	return 1
}
gid4=0000:0000:0000:0000:0000:ffff:0a63:0001
gid6=fd00:0099:0000:0000:0000:0000:0000:0001
mr_wait "IPv4 GID" gid_present $gid4
mr_wait "IPv6 GID" gid_present $gid6
# Empty slots fail with EINVAL; every filled one must be RoCE v2.
types=$({ grep -h . $sys/ports/1/gid_attrs/types/* 2>/dev/null || :; } | sort -u)
[ "$types" = "RoCE v2" ] || fail "GID types: $types"
ip addr del 10.99.0.1/24 dev mrv0
mr_wait "IPv4 GID removal" eval '! gid_present $gid4'

step "port state follows the netdev"
ip link set mrv0 down
mr_port_is mr0 DOWN || fail "state $(mr_port_state mr0) after mrv0 down"
rdma link show mr0/1 | grep -q 'state DOWN physical_state DISABLED' ||
	fail "rdma link show after down: $(rdma link show mr0/1)"
ip link set mrv0 up
mr_wait "ACTIVE after mrv0 up" mr_port_is mr0 ACTIVE
ip link set mrv1 down # carrier of mrv0 follows its peer
mr_wait "DOWN without carrier" mr_port_is mr0 DOWN
ip link set mrv1 up
mr_wait "ACTIVE with carrier" mr_port_is mr0 ACTIVE
# 300 bytes of MTU leave no room for a 256-byte payload after the headers.
ip link set mrv0 mtu 300
mr_port_is mr0 DOWN || fail "state $(mr_port_state mr0) at MTU 300"
ip link set mrv0 mtu 1500
mr_port_is mr0 ACTIVE || fail "state $(mr_port_state mr0) at MTU 1500"

step "bad rdma link add"
mr_expect_error "Operation not supported" rdma link add mrx type metaroce netdev lo
mr_expect_error "No such device" rdma link add mrx type metaroce netdev nonexistent0
mr_expect_error "File exists" rdma link add mrx type metaroce netdev mrv0
mr_expect_error "File exists" rdma link add mr0 type metaroce netdev mrv1
mr_dev_gone mrx || fail "mrx created"

step "rdma link delete"
rdma link delete mr0
mr_dev_gone mr0 || fail "mr0 left after delete"
[ -z "$(rdma link show)" ] || fail "rdma link still lists: $(rdma link show)"
mr_expect_error "" rdma link delete mr0

step "netdev removal removes the devices"
rdma link add mr0 type metaroce netdev mrv0
rdma link add mr1 type metaroce netdev mrv1
ip link del mrv0 # and its peer mrv1
mr_wait "mr0 removal" mr_dev_gone mr0
mr_wait "mr1 removal" mr_dev_gone mr1

mr_unload
echo "PASS: rdma link life cycle on $KVER"
