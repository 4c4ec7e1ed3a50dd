# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Tests of the Debian packaging (debian/), included by the top CMakeLists:
#  - debian_version (label "unit"): debian/changelog's upstream version is
#    this project's VERSION (and debian_version_detects_*: the check
#    fails for any other);
#  - deb_build (label "deb", fixture deb_packages): dpkg-buildpackage -b of
#    git HEAD with the work tree's debian/, lintian without errors
#    (tests/vm/t-deb-build.sh), .debs in <build>/debian-pkg;
#  - vm_deb_install_<kernel> (labels "vm" and "deb"): the .debs installed,
#    built by DKMS, used (verbs tools, metaroce-sim, boot-time loading) and
#    purged in a guest (tests/vm/t-deb-install.sh).
# ctest -L vm pulls in deb_build as the fixture of the guest tests.
# Most of a guest test's time is DKMS compiling the module under TCG
# (~500 s of ~630 s for 6.1 on an idle 2-core host).  With three other
# guests and builds on the host, dpkg -i took 687 s (6.1) and 1094 s (6.12)
# and a 6.12 run hit 1500 s in the purge's depmod, hence TIMEOUT 2400.

add_test(NAME debian_version
	COMMAND ${PROJECT_SOURCE_DIR}/debian/check-version.sh
		${PROJECT_SOURCE_DIR} ${PROJECT_VERSION})
# The check fails when the changelog's upstream version is not CMake's
# (the same tree with "<version>.999-<revision>" as the changelog's top
# entry), and when its parse of CMakeLists.txt is not what CMake read.
add_test(NAME debian_version_detects_changelog_mismatch
	COMMAND sh -c "d=$(mktemp -d) && mkdir \"$d/debian\" &&
		cp \"$0/CMakeLists.txt\" \"$d/\" &&
		sed '1s/(\\([^)]*\\)-\\([^)-]*\\))/(\\1.999-\\2)/' \"$0/debian/changelog\" >\"$d/debian/changelog\" &&
		grep -q '^metaroce (.*\\.999-' \"$d/debian/changelog\" || exit 0;
		\"$0/debian/check-version.sh\" \"$d\"; s=$?; rm -rf \"$d\"; exit $s"
		${PROJECT_SOURCE_DIR})
add_test(NAME debian_version_detects_cmake_mismatch
	COMMAND ${PROJECT_SOURCE_DIR}/debian/check-version.sh
		${PROJECT_SOURCE_DIR} ${PROJECT_VERSION}.999)
set_tests_properties(debian_version PROPERTIES LABELS unit)
set_tests_properties(debian_version_detects_changelog_mismatch
	debian_version_detects_cmake_mismatch PROPERTIES LABELS unit
	WILL_FAIL ON)

set(_metaroce_deb_dir ${CMAKE_BINARY_DIR}/debian-pkg)
add_test(NAME deb_build
	COMMAND ${PROJECT_SOURCE_DIR}/tests/vm/t-deb-build.sh ${_metaroce_deb_dir})
set_tests_properties(deb_build PROPERTIES LABELS deb TIMEOUT 900
	PROCESSORS 2 FIXTURES_SETUP deb_packages)

include(${PROJECT_SOURCE_DIR}/tests/vm/VmTest.cmake)
foreach(_kernel 6.1 6.12)
	metaroce_add_vm_test(vm_deb_install_${_kernel}
		${PROJECT_SOURCE_DIR}/tests/vm/t-deb-install.sh
		KERNEL ${_kernel} TIMEOUT 2400 ARGS ${_metaroce_deb_dir}
		PROPERTIES FIXTURES_REQUIRED "vm_kernels;deb_packages")
	set_property(TEST vm_deb_install_${_kernel} APPEND PROPERTY LABELS deb)
endforeach()
