#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Testbed self-test (negative): never finishes; vmtest.sh --timeout must kill
# the guest and fail the run.
echo "sleeping forever"
while :; do sleep 60; done
