# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# metaroce_add_vm_test(NAME SCRIPT [KERNEL ver] [GUESTS n] [PLANES n]
#                      [MEM mb] [TIMEOUT sec] [EXPECT_FAIL regex]
#                      [EXPECT_PASS regex]
#                      [ARGS arg...] [PROPERTIES prop value...])
#
# A ctest (label "vm") that runs SCRIPT through tests/vm/vmtest.sh. Logs go to
# <build>/tests/vm-logs/NAME/. TIMEOUT (default 300) is vmtest.sh's limit for
# the guests; ctest's is TIMEOUT + 300 to cover a first kernel download.
# EXPECT_FAIL makes a negative test: it passes only if vmtest.sh fails a
# guest (exit 1) with a summary matching the regex; EXPECT_PASS a test of
# the harness that passes only if vmtest.sh passes and its output matches
# the regex. PROCESSORS is 2 (both
# vCPU threads of a run are busy under TCG), so `ctest -j N` does not
# oversubscribe the host.
#
# include(${PROJECT_SOURCE_DIR}/tests/vm/VmTest.cmake) from any CMakeLists.

set(METAROCE_VMTEST ${CMAKE_CURRENT_LIST_DIR}/vmtest.sh)
set(METAROCE_VMTEST_EXPECT ${CMAKE_CURRENT_LIST_DIR}/selftest/expect.sh)

function(metaroce_add_vm_test name script)
	cmake_parse_arguments(PARSE_ARGV 2 vt ""
		"KERNEL;GUESTS;PLANES;MEM;TIMEOUT;EXPECT_FAIL;EXPECT_PASS" "ARGS;PROPERTIES")
	if(NOT vt_KERNEL)
		set(vt_KERNEL 6.1)
	endif()
	if(NOT vt_GUESTS)
		set(vt_GUESTS 1)
	endif()
	if(NOT DEFINED vt_PLANES)
		set(vt_PLANES 1)
	endif()
	if(NOT vt_TIMEOUT)
		set(vt_TIMEOUT 300)
	endif()
	set(opts --kernel ${vt_KERNEL} --guests ${vt_GUESTS} --planes ${vt_PLANES}
		--timeout ${vt_TIMEOUT} --out ${CMAKE_BINARY_DIR}/tests/vm-logs/${name})
	if(vt_MEM)
		list(APPEND opts --mem ${vt_MEM})
	endif()
	if(DEFINED vt_EXPECT_FAIL)
		set(cmd ${METAROCE_VMTEST_EXPECT} fail "${vt_EXPECT_FAIL}")
	elseif(DEFINED vt_EXPECT_PASS)
		set(cmd ${METAROCE_VMTEST_EXPECT} pass "${vt_EXPECT_PASS}")
	else()
		set(cmd ${METAROCE_VMTEST})
	endif()
	add_test(NAME ${name} COMMAND ${cmd} ${opts} -- ${script} ${vt_ARGS})
	math(EXPR ctest_timeout "${vt_TIMEOUT} + 300")
	set_tests_properties(${name} PROPERTIES LABELS vm PROCESSORS 2
		TIMEOUT ${ctest_timeout} ${vt_PROPERTIES})
endfunction()
