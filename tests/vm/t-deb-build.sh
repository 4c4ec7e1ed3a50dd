#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Build the Debian packages on the host and check them with lintian:
#   tests/vm/t-deb-build.sh OUT_DIR
# Exports the committed tree (git archive HEAD) into OUT_DIR/src, with
# debian/ as it is in the work tree (so packaging changes can be tried
# before they are committed), and runs `dpkg-buildpackage -us -uc -b`
# there: dpkg-buildpackage and dh_clean never touch the work tree, and
# uncommitted changes elsewhere do not leak into the packages.  The .debs and the .changes land in OUT_DIR; OUT_DIR/lintian.txt
# holds lintian's report.  Fails if the build fails or lintian reports an
# error (warnings must carry an override in debian/).  Used as the fixture
# of the guest install tests (t-deb-install.sh).
set -euo pipefail

out=${1:?usage: $0 OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir "$out/src"
git -C "$root" archive --format=tar HEAD | tar -C "$out/src" -xf -
rm -rf "$out/src/debian"
cp -a "$root/debian" "$out/src/debian"

start=$SECONDS
# Two jobs (make and ctest), the PROCESSORS that ctest reserves for it.
(cd "$out/src" && dpkg-buildpackage -us -uc -b -J"${DEB_BUILD_JOBS:-2}") \
	>"$out/build.log" 2>&1 || {
	tail -n 60 "$out/build.log"
	echo "t-deb-build: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
echo "t-deb-build: dpkg-buildpackage $((SECONDS - start)) s"

changes=$(ls "$out"/metaroce_*.changes)
lintian_status=0
lintian --fail-on error --info --display-info --show-overrides \
	"$changes" >"$out/lintian.txt" 2>&1 || lintian_status=$?
cat "$out/lintian.txt"
for tag in E W I; do
	echo "t-deb-build: lintian $tag: $(grep -c "^$tag: " "$out/lintian.txt" || true)"
done
if [ $lintian_status -ne 0 ]; then
	echo "t-deb-build: lintian failed ($lintian_status)" >&2
	exit 1
fi
# dpkg refuses to unpack a package whose file another installed package
# owns: every regular file and link must be in exactly one .deb.
shared=$(for deb in "$out"/*.deb; do
	dpkg-deb --fsys-tarfile "$deb" | tar -t | grep -v '/$' | sort -u
done | sort | uniq -d)
if [ -n "$shared" ]; then
	echo "t-deb-build: files in more than one package:" >&2
	echo "$shared" >&2
	exit 1
fi
ls -l "$out"/*.deb
