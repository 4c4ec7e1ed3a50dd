#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test (negative): the script succeeds but puts a WARNING: line
# in the kernel log; vmtest.sh must fail the run on the dmesg check alone.
set -euo pipefail
echo "<4>WARNING: CPU: 0 PID: $$ at vmtest-selftest: injected by tests/vm/selftest/dmesg-warning.sh" >/dev/kmsg
echo "injected a WARNING: line into /dev/kmsg; exiting 0"
