#!/usr/bin/env bash
# Run the whole MetaRoCE test suite on a Debian 12 machine:
# install dependencies, configure, build (userspace, provider, the kernel
# module for every target kernel, simulator), then run every ctest test:
# CMocka unit and property tests, simulator smoke tests, and the qemu guest
# tests that load the module and drive it with unmodified verbs tools.
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
cd "$build"
exec ctest --output-on-failure --timeout 1800 "$@"
