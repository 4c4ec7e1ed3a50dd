# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# cmake -DNM=<nm> -DLIBRARY=<provider.so> -P check_exports.cmake
#
# libibverbs finds a provider through its constructor only; the provider must
# not export any symbol (they would be interposable and part of no ABI).
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
	OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()
string(STRIP "${out}" out)
if(NOT out STREQUAL "")
	message(FATAL_ERROR "${LIBRARY} exports symbols:\n${out}")
endif()
message(STATUS "${LIBRARY}: no exported symbols")
