#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Demo guest script (one guest): load rdma_metaroce.ko from BUILD_DIR, create
# mr0 over a veth, install the provider and show what unmodified verbs tools
# see. Run by scripts/demo.sh as
#   tests/vm/vmtest.sh -- scripts/demo/guest-device.sh BUILD_DIR
set -euo pipefail
build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
. "$VMTEST_LIB"

vm_load_module "$build/kernel/$KVER/rdma_metaroce.ko"
vm_install_provider "$build"
vm_veth_pair mrv0 mrv1 10.78.0.1/24 10.78.0.2/24

echo "\$ rdma link add mr0 type metaroce netdev mrv0"
rdma link add mr0 type metaroce netdev mrv0
echo "\$ rdma link show mr0/1"
rdma link show mr0/1
echo "\$ ibv_devices"
ibv_devices
echo "\$ ibv_devinfo -d mr0"
ibv_devinfo -d mr0
echo "\$ ip link set mrv0 down; ibv_devinfo -d mr0 | grep state"
ip link set mrv0 down
sleep 1
ibv_devinfo -d mr0 | grep -E 'state:'
ip link set mrv0 up
sleep 1
echo "\$ ip link set mrv0 up; ibv_devinfo -d mr0 | grep state"
ibv_devinfo -d mr0 | grep -E 'state:'
rdma link delete mr0
vm_unload_module rdma_metaroce
