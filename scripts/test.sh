#!/usr/bin/env bash
# Run the whole MetaRoCE test suite on a Debian 12 machine:
# install dependencies, configure, build (userspace, provider, the kernel
# module for every target kernel, simulator), then run every ctest test:
# CMocka unit and property tests, simulator smoke tests, and the qemu guest
# tests that load the module and drive it with unmodified verbs tools, and
# (with clang) the libFuzzer smoke of the core in BUILD_DIR-fuzz.
#
#   scripts/test.sh                 everything
#   scripts/test.sh -L unit         only tests with that ctest label
#   scripts/test.sh -E vm           extra arguments go to ctest
#
# BUILD_DIR (default: build) selects the build tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

"$root/scripts/install-deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j "$jobs"

# The libFuzzer smoke of the core (tests/fuzz, ctest label fuzz) needs a
# clang build of its own: $build-fuzz, the core and its tests only.  It
# runs with the whole suite and with -L unit / -L fuzz selections.
if command -v clang >/dev/null && { [ $# -eq 0 ] || [[ "$*" =~ unit|fuzz ]]; }; then
	CC=clang CXX=clang++ cmake -S "$root" -B "$build-fuzz" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMETAROCE_FUZZ=ON \
		-DMETAROCE_BUILD_KERNEL=OFF -DMETAROCE_BUILD_PROVIDER=OFF \
		-DMETAROCE_BUILD_SIM=OFF -DMETAROCE_BUILD_BENCHMARKS=OFF
	cmake --build "$build-fuzz" -j "$jobs" --target fuzz_packet fuzz_conn
	(cd "$build-fuzz" && ctest --output-on-failure -L fuzz)
fi

cd "$build"
exec ctest --output-on-failure --timeout 1800 "$@"
