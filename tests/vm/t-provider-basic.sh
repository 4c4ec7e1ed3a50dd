#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test of the libibverbs provider on rdma_metaroce.ko, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-provider-basic.sh BUILD_DIR
#
# Loads the module, creates mr0 on a veth, installs the provider from
# BUILD_DIR, and checks that libibverbs finds and opens the device
# (ibv_devices, ibv_devinfo) and that tests/progs/metaroce_pd_test passes;
# finally removes the device and unloads the module.  The PD test also runs
# on an rxe0 next to mr0 as a reference.  Leaves ibv_devices.txt,
# ibv_devinfo.txt, pd_test.txt and pd_test_rxe.txt in $RESULTS.
set -euo pipefail

build=$(realpath -e "${1:?usage: $0 BUILD_DIR}")
dev=mr0
# fail, step, mr_ko, mr_load, mr_unload, mr_veth, mr_dev_gone
# shellcheck source=../../kernel/guest-test-lib.sh
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

ko=$(mr_ko "$build")
provider=$build/providers/metaroce/libmetaroce-rdmav34.so
[ -f "$provider" ] || fail "$provider not built"

mr_load "$ko"
# rdma_rxe binds UDP 4791 when it loads and fails if it is taken; a
# MetaRoCE-mode device binds it for UD only if it is free, so rxe first.
modprobe rdma_rxe
mr_veth mrv0 mrv1
rdma link add "$dev" type metaroce netdev mrv0
rdma link show "$dev/1"

# A device libibverbs has no provider for is not listed: the checks below
# see our provider, not some other one claiming mr0.
lists_dev() { awk -v d="$dev" '$1 == d { found = 1 } END { exit !found }'; }
ibv_devices 2>/dev/null | lists_dev && fail "$dev listed before the provider is installed"
# The uninstalled build tree, through the environment and through its own
# config file (which names the .so by absolute path).
build_driver=$build/providers/metaroce/libibverbs.d/metaroce.driver
RDMAV_DRIVERS=$build/providers/metaroce/libmetaroce ibv_devices 2>&1 | lists_dev ||
	fail "RDMAV_DRIVERS=<build>/providers/metaroce/libmetaroce does not find $dev"
install -m 644 "$build_driver" /etc/libibverbs.d/metaroce.driver
ibv_devices 2>&1 | lists_dev || fail "$build_driver does not find $dev"

# The rest runs on the provider installed as `cmake --install` does it
# (copied into libibverbs' provider directory, "driver metaroce").
if declare -F vm_install_provider >/dev/null; then
	vm_install_provider "$build"
fi

# A soft-RoCE device next to ours: each provider must claim only its own.
rdma link add rxe0 type rxe netdev mrv1

step ibv_devices
ibv_devices 2>"$RESULTS/ibv_devices.err" | tee "$RESULTS/ibv_devices.txt"
cat "$RESULTS/ibv_devices.err"
lists_dev <"$RESULTS/ibv_devices.txt" || fail "ibv_devices does not list $dev"
grep -qw rxe0 "$RESULTS/ibv_devices.txt" || fail "ibv_devices does not list rxe0"
# libibverbs and the provider only write to stderr about problems.
[ -s "$RESULTS/ibv_devices.err" ] && fail "ibv_devices complained (above)"
ibv_devinfo -d rxe0 >/dev/null || fail "rxe0 cannot be opened"

step "ibv_devinfo -v -d $dev"
ibv_devinfo -v -d "$dev" >"$RESULTS/ibv_devinfo.txt" 2>&1 ||
	{ cat "$RESULTS/ibv_devinfo.txt"; fail "ibv_devinfo -d $dev failed"; }
cat "$RESULTS/ibv_devinfo.txt"
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' "$RESULTS/ibv_devinfo.txt" ||
	fail "port of $dev not PORT_ACTIVE"
grep -Eq 'link_layer:[[:space:]]+Ethernet' "$RESULTS/ibv_devinfo.txt" ||
	fail "link layer of $dev not Ethernet"

step metaroce_pd_test
"$build/tests/progs/metaroce_pd_test" --device "$dev" --exhaust 2>&1 | tee "$RESULTS/pd_test.txt" ||
	fail "metaroce_pd_test failed"

# The same program on rxe0: the kernel's soft-RoCE as the reference for
# both the test's expectations and the rates.
step "metaroce_pd_test on rxe0 (reference)"
"$build/tests/progs/metaroce_pd_test" --device rxe0 2>&1 | tee "$RESULTS/pd_test_rxe.txt" ||
	fail "metaroce_pd_test fails on rxe0 too: the test or the guest is broken"

# Every context is closed: the device and the module must go away cleanly.
rdma link delete rxe0
rdma link delete "$dev"
mr_dev_gone "$dev" || fail "$dev still in sysfs after delete"
ibv_devices 2>/dev/null | lists_dev && fail "$dev still listed after delete"
mr_unload
echo "PASS: provider basic on $KVER"
