#!/usr/bin/env bash
# Install every build, test and demo dependency of MetaRoCE on Debian 12.
#
# Idempotent: packages already present are left alone. Kernel *images* for the
# qemu testbed are not installed on the host; tests/vm/fetch-kernel.sh
# downloads and extracts them into its cache directory
# (${XDG_CACHE_HOME:-~/.cache}/metaroce-vm or $METAROCE_VM_CACHE).
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
else
	SUDO=
fi

here=$(cd "$(dirname "$0")" && pwd)

pkgs=(
	# toolchain
	build-essential cmake pkg-config git python3 clang lld
	# rdma-core: libibverbs/librdmacm headers and the upstream tools we test with
	rdma-core libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils
	rdmacm-utils perftest
	python3-pyverbs  # kernel guest tests hold verbs objects from Python
	# control tool
	libnl-3-dev libnl-genl-3-dev libnl-route-3-dev
	# tests and benchmarks
	libcmocka-dev libbenchmark-dev
	# simulator (libns3-dev's .pc files name gsl and sqlite3 by path)
	libns3-dev libgsl-dev libsqlite3-dev gnuplot-nox
	# kernel module build
	kmod bc sparse
	# Debian packaging (debian/, tests/vm/t-deb-*.sh): dpkg-buildpackage, DKMS,
	# dh_python3 (metaroce-sim-sweep), lintian; man-db for the man page tests
	debhelper dh-dkms dh-python dkms dpkg-dev fakeroot lintian man-db
	# qemu testbed
	qemu-system-x86 busybox-static cpio xz-utils zstd iproute2 ethtool tcpdump
	# profiles of the guests in the perftest benchmarks (PERF=1)
	linux-perf
	# the Wireshark dissector's tests (tests/dissector, tools/wireshark)
	tshark
)
# The package lists must be current before kernel versions can be resolved.
if [ ! -s /var/lib/apt/lists/lock ] && ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
	$SUDO apt-get update -qq
fi
mapfile -t KERNELS < <("$here/kernel-versions.sh")
for k in "${KERNELS[@]}"; do
	pkgs+=("linux-headers-$k")
done

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# wireshark-common asks whether non-root users may capture; answer no
# (tshark only reads capture files here).
echo "wireshark-common wireshark-common/install-setuid boolean false" |
	$SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
