# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# cmake -DNM=<nm> -DLIBRARY=<libmetaroce.so> -DMAP=<metaroce.map> -P check_exports.cmake
#
# libibverbs finds the provider through its constructor only; the library
# exports exactly the direct-verbs calls that its linker version script
# lists, each at the version node the script gives it, and nothing else
# (anything more would be interposable and part of no ABI).
cmake_policy(SET CMP0007 NEW)
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
	OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "${NM} failed on ${LIBRARY}")
endif()

# "NAME@@VERSION" for each "global:" name of each version node of MAP,
# and the version nodes themselves (nm lists them as absolute symbols).
file(READ "${MAP}" map)
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" map "${map}")
# A list element may not hold ';'.
string(REPLACE ";" "," map "${map}")
set(expected)
string(REGEX MATCHALL "[A-Za-z0-9_.]+[ \t\n]*{[^}]*}" nodes "${map}")
foreach(node IN LISTS nodes)
	string(REGEX MATCH "^[A-Za-z0-9_.]+" version "${node}")
	list(APPEND expected "${version}")
	string(FIND "${node}" "global:" at)
	if(at EQUAL -1)
		continue()
	endif()
	string(SUBSTRING "${node}" ${at} -1 globals)
	string(REGEX REPLACE "^global:|(local:|}).*$" "" globals "${globals}")
	string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*" names "${globals}")
	foreach(name IN LISTS names)
		list(APPEND expected "${name}@@${version}")
	endforeach()
endforeach()
list(SORT expected)

string(REGEX MATCHALL "[^\n]+" lines "${out}")
set(actual)
foreach(line IN LISTS lines)
	string(REGEX REPLACE "^[0-9a-fA-F]* *[A-Za-z] " "" sym "${line}")
	list(APPEND actual "${sym}")
endforeach()
list(SORT actual)

if(NOT actual STREQUAL expected)
	string(REPLACE ";" "\n  " a "${actual}")
	string(REPLACE ";" "\n  " e "${expected}")
	message(FATAL_ERROR "${LIBRARY} exports:\n  ${a}\nexpected (${MAP}):\n  ${e}")
endif()
list(LENGTH expected n)
message(STATUS "${LIBRARY}: exports exactly the ${n} symbols and versions of ${MAP}")
