# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# qemu guest tests of rdma_metaroce.ko (ctest label "vm"), one per test
# script and kernel the module is built for.  Included by
# kernel/CMakeLists.txt, which sets METAROCE_KERNEL_RELEASES.

set(_metaroce_kernel_tests load link)
if(METAROCE_BUILD_PROVIDER)
	# Userspace verbs through the provider built in this tree.
	list(APPEND _metaroce_kernel_tests verbs)
endif()

foreach(_kver IN LISTS METAROCE_KERNEL_RELEASES)
	foreach(_t IN LISTS _metaroce_kernel_tests)
		add_test(NAME vm_kernel_${_t}_${_kver}
			COMMAND ${PROJECT_SOURCE_DIR}/tests/vm/vmtest.sh
				--kernel ${_kver} --timeout 500 --
				${PROJECT_SOURCE_DIR}/tests/vm/t-kernel-${_t}.sh
				${CMAKE_BINARY_DIR})
		set_tests_properties(vm_kernel_${_t}_${_kver} PROPERTIES
			LABELS vm TIMEOUT 600
			FIXTURES_REQUIRED vm_kernels)
	endforeach()
endforeach()
