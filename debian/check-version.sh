#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# check-version.sh SRC_DIR [CMAKE_VERSION]
# Fails unless the upstream version of SRC_DIR/debian/changelog (no epoch,
# no Debian revision) is the project(VERSION) of SRC_DIR/CMakeLists.txt.
# CMAKE_VERSION, when given (ctest passes ${PROJECT_VERSION}), must be
# that version too: it proves the parse below reads what CMake reads.
set -eu
src=${1:?usage: $0 SRC_DIR [CMAKE_VERSION]}

cmake_v=$(sed -n 's/^project([[:alnum:]_-]* VERSION \([0-9][0-9.]*\).*/\1/p' \
	"$src/CMakeLists.txt")
if [ -z "$cmake_v" ]; then
	echo "check-version: no project(... VERSION x.y.z) in $src/CMakeLists.txt" >&2
	exit 1
fi
if [ $# -ge 2 ] && [ "$2" != "$cmake_v" ]; then
	echo "check-version: CMake says $2, $src/CMakeLists.txt parses as $cmake_v" >&2
	exit 1
fi
deb_v=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
upstream=${deb_v#*:}
upstream=${upstream%-*}
if [ "$upstream" != "$cmake_v" ]; then
	echo "check-version: debian/changelog is $deb_v (upstream $upstream)," \
	     "CMakeLists.txt project(VERSION) is $cmake_v" >&2
	exit 1
fi
echo "check-version: $deb_v matches project(VERSION $cmake_v)"
