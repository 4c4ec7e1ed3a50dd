#!/usr/bin/env bash
# Print the Debian kernel versions (uname -r form) the project builds and
# tests against, one per line: the 6.1 LTS line first, then 6.12.
#
# Debian replaces kernel ABI packages as it publishes updates (the exact
# 6.12 ABI seen on one day is gone a month later), so the versions are
# resolved through Debian's own metapackages rather than pinned. Set
# METAROCE_KERNELS="6.1.0-57-amd64 6.12.117+deb12-amd64" to override.
set -euo pipefail

if [ -n "${METAROCE_KERNELS:-}" ]; then
	tr ' ' '\n' <<<"$METAROCE_KERNELS"
	exit 0
fi

resolve() {
	# $1: metapackage whose Depends names linux-image-<version>
	apt-cache depends "$1" 2>/dev/null |
		sed -n 's/^ *Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n1
}

k61=$(resolve linux-image-amd64)
k612=$(resolve linux-image-6.12-amd64)
if [ -z "$k61" ] || [ -z "$k612" ]; then
	echo "kernel-versions: cannot resolve kernel versions from apt (run apt-get update)" >&2
	exit 1
fi
echo "$k61"
echo "$k612"
