#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build rdma_metaroce.ko for one kernel, out of tree, without writing into
# the source tree:
#   build-module.sh SRC_ROOT KERNEL_DIR OUT_DIR
# SRC_ROOT is the repository, KERNEL_DIR a configured kernel tree or a
# linux-headers directory, OUT_DIR receives symlinks of the sources, the
# objects and rdma_metaroce.ko.  Built with W=1; any compiler warning fails
# the build (the log is OUT_DIR/kbuild.log).  METAROCE_KBUILD_ARGS adds make
# arguments: METAROCE_KBUILD_ARGS=C=2 runs sparse on every file, and a
# sparse warning fails the build like a compiler warning.
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: $0 SRC_ROOT KERNEL_DIR OUT_DIR" >&2
	exit 2
fi
src=$(cd "$1" && pwd)
kdir=$2
out=$3

if [ ! -f "$kdir/Makefile" ]; then
	echo "build-module: $kdir is not a kernel build tree" \
	     "(install linux-headers for it)" >&2
	exit 1
fi

mkdir -p "$out/core"
# Mirror the sources as symlinks; drop links whose source is gone.
find "$out" -maxdepth 2 -xtype l -delete
for f in "$src"/kernel/*.[ch] "$src"/kernel/Kbuild; do
	ln -sfn "$f" "$out/$(basename "$f")"
done
for f in "$src"/core/*.[ch]; do
	if [ -e "$f" ]; then
		ln -sfn "$f" "$out/core/$(basename "$f")"
	fi
done

log=$out/kbuild.log
status=0
# shellcheck disable=SC2086 # METAROCE_KBUILD_ARGS: extra make words (C=2)
${MAKE:-make} -C "$kdir" M="$out" W=1 METAROCE_INCLUDE="$src/include" \
	${METAROCE_KBUILD_ARGS:-} modules >"$log" 2>&1 || status=$?
cat "$log"
if [ $status -ne 0 ]; then
	echo "build-module: Kbuild failed for $kdir" >&2
	exit $status
fi
# Compiler and modpost warnings; make's own notices (e.g. "jobserver
# unavailable" when a parent make runs -jN) are not about our code.
if grep -v '^g\{0,1\}make\(\[[0-9]*\]\)\{0,1\}: ' "$log" | grep -qi 'warning:'; then
	echo "build-module: warnings building for $kdir (see $log)" >&2
	exit 1
fi
# Kbuild leaves an up-to-date module alone; tell make the build is current.
touch "$out/rdma_metaroce.ko"
