#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Guest test of the Debian packages, run by
#   tests/vm/vmtest.sh [--kernel VER] -- tests/vm/t-deb-install.sh PKG_DIR
# PKG_DIR holds the .debs built by tests/vm/t-deb-build.sh.
#
# Installs them with dpkg (into the guest's overlay: the host is not
# touched), checks that DKMS builds and installs rdma_metaroce.ko for the
# guest kernel from /usr/src/metaroce-<ver> and the kernel's headers,
# loads it, creates mr0 and opens it through the installed provider
# (ld.so must load it from libibverbs' driver directory, nothing from the
# build tree).  Runs ibv_rc_pingpong and ib_write_bw on mr0 (client and
# server on the one device, through its UDP socket).  Checks that the
# module is loaded at boot only once configured (systemd-modules-load with
# and without the example /etc/modules-load.d file).  Runs metaroce-sim
# and metaroce-sim-sweep from /usr/bin (metaroce-utils) and finds their
# man pages.
# Finally purges the packages and checks that the module, the DKMS tree,
# the provider and the utilities are gone.  Leaves dkms-build.time,
# dpkg-install.log, ibv_devinfo.txt and the tools' outputs in $RESULTS.
set -euo pipefail

pkgdir=$(realpath -e "${1:?usage: $0 PKG_DIR}")
dev=mr0
pkgs=(metaroce-dkms libmetaroce1 ibverbs-provider-metaroce libmetaroce-dev metaroce-utils)
# fail, step, mr_veth, mr_wait, mr_dev_gone, mr_peer
# shellcheck source=../../kernel/guest-test-lib.sh
. "$METAROCE_SRC/kernel/guest-test-lib.sh"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
provider=/usr/lib/$multiarch/libibverbs/libmetaroce-rdmav34.so
driver=/etc/libibverbs.d/metaroce.driver
# metaroce-utils: its programs and their man pages.
utils=(/usr/bin/metaroce-sim /usr/bin/metaroce-sim-sweep)
manpages=(/usr/share/man/man1/metaroce-sim.1.gz /usr/share/man/man1/metaroce-sim-sweep.1.gz)
modules_load=/etc/modules-load.d/metaroce.conf

debs=()
for p in "${pkgs[@]}"; do
	f=("$pkgdir/${p}_"*.deb)
	[ -f "${f[0]}" ] || fail "no ${p}_*.deb in $pkgdir (run tests/vm/t-deb-build.sh)"
	debs+=("${f[0]}")
done
version=$(dpkg-deb -f "${debs[0]}" Version)
upstream=${version%-*}

step "preconditions"
# Nothing of ours may be there already, or the checks below prove nothing.
modinfo rdma_metaroce >/dev/null 2>&1 && fail "rdma_metaroce already in /lib/modules/$KVER"
[ ! -e "$provider" ] || fail "$provider exists before the install"
[ ! -e "$driver" ] || fail "$driver exists before the install"
for f in "${utils[@]}" "${manpages[@]}" "$modules_load"; do
	[ ! -e "$f" ] || fail "$f exists before the install"
done
# The guest's /lib/modules is the extracted linux-image package: the
# build link is what linux-headers-$KVER installs next to it.
headers=/usr/src/linux-headers-$KVER
[ -f "$headers/Makefile" ] || fail "$headers missing: install linux-headers-$KVER (scripts/install-deps.sh)"
if [ ! -e "/lib/modules/$KVER/build" ]; then
	ln -s "$headers" "/lib/modules/$KVER/build"
fi

step "dpkg -i ${debs[*]##*/}"
export DEBIAN_FRONTEND=noninteractive
# metaroce-utils installs man pages, so man-db's trigger would re-index the
# host's whole man tree over 9p under TCG (it ran past 15 minutes); man -w
# below finds the pages without the index.  Only the guest's overlay changes.
rm -f /var/lib/man-db/auto-update
start=$(date +%s.%N)
dpkg -i "${debs[@]}" >"$RESULTS/dpkg-install.log" 2>&1 || {
	cat "$RESULTS/dpkg-install.log"
	fail "dpkg -i failed"
}
end=$(date +%s.%N)
cat "$RESULTS/dpkg-install.log"
echo "dpkg -i with the DKMS build: $(echo "$end - $start" | bc) s" | tee "$RESULTS/dkms-build.time"
for p in "${pkgs[@]}"; do
	s=$(dpkg-query -W -f='${Status}' "$p") || fail "$p not known to dpkg"
	[ "$s" = "install ok installed" ] || fail "$p: $s"
done

# DKMS keeps the build's log; its second line is the date the build began.
make_log=/var/lib/dkms/metaroce/$upstream/build/make.log
built_ko=/var/lib/dkms/metaroce/$upstream/build/rdma_metaroce.ko
if [ -f "$make_log" ] && [ -f "$built_ko" ]; then
	cp "$make_log" "$RESULTS/dkms-make.log"
	if make_start=$(date -d "$(sed -n 2p "$make_log")" +%s 2>/dev/null); then
		echo "DKMS make (start to rdma_metaroce.ko): $(( $(stat -c %Y "$built_ko") - make_start )) s" |
			tee -a "$RESULTS/dkms-build.time"
	fi
fi

step "dkms status"
dkms status metaroce | tee "$RESULTS/dkms-status.txt"
grep -q "^metaroce/$upstream, $KVER, [^:]*: installed" "$RESULTS/dkms-status.txt" ||
	fail "dkms status does not show metaroce/$upstream installed for $KVER"
ko=$(modinfo -F filename rdma_metaroce) || fail "modinfo rdma_metaroce: not installed for $KVER"
echo "module: $ko"
case $ko in
/lib/modules/$KVER/updates/dkms/rdma_metaroce.ko*) ;;
*) fail "rdma_metaroce resolves to $ko, not the DKMS-installed module" ;;
esac
[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$KVER" ] || fail "$ko: vermagic is not $KVER"

# Not loaded by the install, nor at boot unless configured: what
# systemd-modules-load does at boot loads it only once the example
# (README.Debian) is in /etc/modules-load.d with its line uncommented.
step "load at boot only when configured"
[ ! -d /sys/module/rdma_metaroce ] || fail "the install loaded rdma_metaroce"
modules_load_bin=/lib/systemd/systemd-modules-load
[ -x "$modules_load_bin" ] || fail "$modules_load_bin missing (systemd)"
"$modules_load_bin" || fail "systemd-modules-load failed"
[ ! -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce loaded at boot without configuration"
example=/usr/share/doc/metaroce-dkms/examples/metaroce.conf
[ -f "$example" ] || fail "$example not installed"
sed 's/^#rdma_metaroce$/rdma_metaroce/' "$example" >"$modules_load"
grep -qx rdma_metaroce "$modules_load" || fail "$example has no '#rdma_metaroce' line to uncomment"
"$modules_load_bin" || fail "systemd-modules-load failed with $modules_load"
[ -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce not loaded at boot with $modules_load"
rm "$modules_load"
rmmod rdma_metaroce || fail "rmmod rdma_metaroce"

step "modprobe rdma_metaroce"
modprobe rdma_metaroce || fail "modprobe rdma_metaroce"
[ -d /sys/module/rdma_metaroce ] || fail "rdma_metaroce not loaded"

step "rdma link add $dev"
# eth0 has its IPv4 address (10.77.0.1): the data path uses its RoCE v2 GID.
netdev=$(vm_plane_dev 0)
rdma link add "$dev" type metaroce netdev "$netdev" || fail "rdma link add $dev"
mr_wait "$dev in sysfs" test -e "/sys/class/infiniband/$dev"
rdma link show "$dev/1"

step "ibv_devinfo -d $dev from the installed provider"
[ -f "$provider" ] || fail "$provider not installed"
[ "$(cat "$driver")" = "driver metaroce" ] || fail "$driver: $(cat "$driver")"
dpkg -S "$provider" | grep -q '^ibverbs-provider-metaroce' || fail "$provider not owned by the package"
unset RDMAV_DRIVERS
LD_DEBUG=libs ibv_devinfo -d "$dev" >"$RESULTS/ibv_devinfo.txt" 2>"$RESULTS/ibv_devinfo.ld.txt" || {
	cat "$RESULTS/ibv_devinfo.txt" "$RESULTS/ibv_devinfo.ld.txt"
	fail "ibv_devinfo -d $dev"
}
cat "$RESULTS/ibv_devinfo.txt"
grep -q "hca_id:[[:space:]]*$dev" "$RESULTS/ibv_devinfo.txt" || fail "ibv_devinfo does not show $dev"
# ld.so names every library it initialises: ours from the driver dir only.
grep -q "calling init: $provider\$" "$RESULTS/ibv_devinfo.ld.txt" ||
	fail "ld.so did not load $provider (see ibv_devinfo.ld.txt)"
if grep 'calling init: .*libmetaroce' "$RESULTS/ibv_devinfo.ld.txt" | grep -v -q "init: $provider\$"; then
	fail "a libmetaroce other than $provider was loaded"
fi

# The RC data path: an RC QP on a CQ must be creatable, or every verbs
# tool fails before its first packet; the probe names the errno, which the
# tools do not.
step "data path probe (CQ + RC QP on $dev)"
probe_status=0
python3 - "$dev" >"$RESULTS/datapath-probe.txt" 2>&1 <<'PY' || probe_status=$?
import errno, sys
import pyverbs.enums as e
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPCap, QPInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
try:
    ctx = Context(name=sys.argv[1])
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
except PyverbsRDMAError as err:
    print(f"probe: {err} (errno {err.error_code})")
    sys.exit(3 if err.error_code in (errno.EOPNOTSUPP, errno.ENOSYS) else 1)
print("probe: CQ and RC QP created")
PY
cat "$RESULTS/datapath-probe.txt"
if [ $probe_status -ne 0 ]; then
	fail "data path probe failed (see datapath-probe.txt)"
else
	# The IPv4-mapped RoCE v2 GID of the netdev's address.
	addr=$(vm_my_addr 0)
	# shellcheck disable=SC2086 # split the address into its four octets
	gid=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${addr//./ })
	idx=
	for g in "/sys/class/infiniband/$dev/ports/1/gids/"*; do
		read -r v <"$g" || continue
		[ "$v" = "$gid" ] && idx=${g##*/} && break
	done
	[ -n "$idx" ] || fail "no GID $gid on $dev"

	# Server and client on the one device, in init_net; mr_peer starts the
	# client once the server listens (a loaded TCG guest can take seconds
	# to open the device) and shows the server's output if it never does.
	export MR_SRV_NS=- MR_CLI_NS=- MR_SRV_DEV=$dev MR_CLI_DEV=$dev MR_SRV_GID=$idx MR_CLI_GID=$idx

	step "ibv_rc_pingpong on $dev (GID index $idx)"
	mr_peer pingpong tcp:18515 ibv_rc_pingpong -d @DEV@ -g @GID@ -n 100 -- \
		-d @DEV@ -g @GID@ -n 100 127.0.0.1
	cat cli-pingpong.txt
	grep -q 'iters in' cli-pingpong.txt || fail "no ping-pong result"

	step "ib_write_bw on $dev"
	mr_peer write_bw tcp:18515 ib_write_bw -d @DEV@ -x @GID@ -D 2 -- \
		-d @DEV@ -x @GID@ -D 2 127.0.0.1
	cat cli-write_bw.txt
	grep -q 'BW average' cli-write_bw.txt || fail "no ib_write_bw result"
fi

step "metaroce-sim from /usr/bin"
for f in "${utils[@]}"; do
	dpkg -S "$f" | grep -q '^metaroce-utils:' || fail "$f not owned by metaroce-utils"
done
[ "$(command -v metaroce-sim)" = /usr/bin/metaroce-sim ] || fail "metaroce-sim on PATH is $(command -v metaroce-sim)"
# Two hosts, two planes, one 1 MB flow at 1% loss: a fraction of a second.
metaroce-sim --nodes 2 --planes 2 --workload one-flow --loss 0.01 \
	--message-size 1000000 --seed 1 --json >"$RESULTS/sim.json" ||
	fail "metaroce-sim failed: $(cat "$RESULTS/sim.json")"
cat "$RESULTS/sim.json"
python3 - "$RESULTS/sim.json" <<'PY' || fail "metaroce-sim result (see sim.json)"
import json, sys
r = json.load(open(sys.argv[1]))
ratio = r["goodput_ratio"]
assert r["bytes_corrupted"] == 0, r
assert r["bytes_delivered"] == r["bytes_offered"] > 0, r
# The loss was applied, so the ratio compares a lossy run with a lossless one.
assert r["link_error_drops"] > 0, r
assert isinstance(ratio, (int, float)) and not isinstance(ratio, bool), ratio
assert 0 < ratio <= 1, ratio
print(f"metaroce-sim: goodput_ratio {ratio}, bytes_corrupted 0")
PY

step "metaroce-sim-sweep (metaroce-sim from PATH)"
metaroce-sim-sweep --out "$RESULTS/sweep" --losses 0,0.01 --nodes 2 \
	--planes 2 --message-size 200000 >"$RESULTS/sweep.log" 2>&1 || {
	cat "$RESULTS/sweep.log"
	fail "metaroce-sim-sweep failed"
}
cat "$RESULTS/sweep.log"
# A header and one row per transport (2) and loss (2).
[ "$(wc -l <"$RESULTS/sweep/goodput_vs_loss.csv")" = 5 ] ||
	fail "goodput_vs_loss.csv: $(cat "$RESULTS/sweep/goodput_vs_loss.csv")"
if command -v gnuplot >/dev/null; then
	[ -s "$RESULTS/sweep/goodput_vs_loss.png" ] || fail "gnuplot is installed, but no goodput_vs_loss.png"
fi

if command -v man >/dev/null; then
	step "man -w"
	for i in "${!utils[@]}"; do
		page=$(man -w "${utils[i]##*/}") || fail "man -w ${utils[i]##*/} finds no page"
		[ "$page" = "${manpages[i]}" ] || fail "man -w ${utils[i]##*/}: $page, not ${manpages[i]}"
		echo "${utils[i]##*/}: $page"
	done
fi

step "rdma link delete $dev, rmmod"
rdma link delete "$dev" || fail "rdma link delete $dev"
mr_wait "$dev to leave sysfs" mr_dev_gone "$dev"
rmmod rdma_metaroce || fail "rmmod rdma_metaroce"

step "apt-get purge ${pkgs[*]}"
apt-get purge -y "${pkgs[@]}" >"$RESULTS/purge.log" 2>&1 || {
	cat "$RESULTS/purge.log"
	fail "apt-get purge failed"
}
cat "$RESULTS/purge.log"
for p in "${pkgs[@]}"; do
	if s=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) && [ "$s" != "unknown ok not-installed" ]; then
		fail "$p still known to dpkg after purge: $s"
	fi
done
modinfo rdma_metaroce >/dev/null 2>&1 && fail "modinfo still finds rdma_metaroce: $(modinfo -F filename rdma_metaroce)"
ls "/lib/modules/$KVER/updates/dkms/"rdma_metaroce.ko* >/dev/null 2>&1 && fail "module file left in updates/dkms"
[ ! -e "$provider" ] || fail "$provider left after purge"
[ ! -e "$driver" ] || fail "$driver left after purge"
for f in "${utils[@]}" "${manpages[@]}"; do
	[ ! -e "$f" ] || fail "$f left after purge"
done
[ ! -e "/usr/src/metaroce-$upstream" ] || fail "/usr/src/metaroce-$upstream left after purge"
[ ! -e /var/lib/dkms/metaroce ] || fail "/var/lib/dkms/metaroce left after purge"
[ -z "$(dkms status metaroce)" ] || fail "dkms still lists metaroce: $(dkms status metaroce)"
echo "PASS: Debian packages install, build with DKMS, work and purge on $KVER"
