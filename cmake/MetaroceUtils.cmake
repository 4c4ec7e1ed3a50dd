# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The user programs (the metaroce-utils Debian package): each is installed
# by one call
#
#   metaroce_add_util(TARGET <name> MANPAGE <page.N>)
#   metaroce_add_util(PROGRAM <file> NAME <name> MANPAGE <page.N>)
#
# which installs the executable target <name> (or the script <file>
# renamed) as ${bindir}/<name> and its man page in
# ${mandir}/manN, both in the install component "utils", and adds the test
# manpage_<name> (label "unit"): the page renders without groff warnings,
# every option of "<name> --help" is documented in it and every option it
# documents exists.  debian/metaroce-utils.install takes the component's
# directories whole, so a new program needs no line in debian/.
set(METAROCE_MANPAGE_CHECK ${CMAKE_CURRENT_LIST_DIR}/manpage-check.py)

function(metaroce_add_util)
	cmake_parse_arguments(PARSE_ARGV 0 U "" "NAME;TARGET;PROGRAM;MANPAGE" "")
	if(U_TARGET)
		set(U_NAME ${U_TARGET})
	endif()
	if(NOT U_NAME OR NOT U_MANPAGE OR (U_TARGET AND U_PROGRAM))
		message(FATAL_ERROR "metaroce_add_util: TARGET, or PROGRAM and NAME; and MANPAGE")
	endif()
	get_filename_component(_page ${U_MANPAGE} ABSOLUTE)
	string(REGEX MATCH "[1-9]$" _section ${_page})
	if(NOT _section)
		message(FATAL_ERROR "metaroce_add_util: ${U_MANPAGE} has no section suffix")
	endif()
	if(U_TARGET)
		install(TARGETS ${U_TARGET} RUNTIME
			DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT utils)
		set(_run $<TARGET_FILE:${U_TARGET}>)
	else()
		get_filename_component(_run ${U_PROGRAM} ABSOLUTE)
		install(PROGRAMS ${_run} DESTINATION ${CMAKE_INSTALL_BINDIR}
			RENAME ${U_NAME} COMPONENT utils)
	endif()
	install(FILES ${_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
		COMPONENT utils)

	find_package(Python3 REQUIRED COMPONENTS Interpreter)
	add_test(NAME manpage_${U_NAME}
		COMMAND Python3::Interpreter ${METAROCE_MANPAGE_CHECK}
			${_page} ${U_NAME} ${_run})
	set_tests_properties(manpage_${U_NAME} PROPERTIES LABELS unit TIMEOUT 30)
endfunction()

# A man page that documents no program of its own (a library call, an
# overview):
#
#   metaroce_add_manpage(<page.N> [COMPONENT <component>])
#
# installs it in ${mandir}/manN (in <component>, if given) and adds the
# test manpage_<page>_<N> (label "unit"): the page renders without groff
# warnings (man --warnings, as lintian runs it) and its .TH names it.
function(metaroce_add_manpage page)
	cmake_parse_arguments(PARSE_ARGV 1 M "" "COMPONENT" "")
	get_filename_component(_page ${page} ABSOLUTE)
	get_filename_component(_file ${_page} NAME)
	string(REGEX MATCH "^(.+)\\.([1-9])$" _m ${_file})
	if(NOT _m)
		message(FATAL_ERROR "metaroce_add_manpage: ${page} has no section suffix")
	endif()
	set(_name ${CMAKE_MATCH_1})
	set(_section ${CMAKE_MATCH_2})
	if(M_COMPONENT)
		set(_component COMPONENT ${M_COMPONENT})
	endif()
	install(FILES ${_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${_section}
		${_component})
	find_package(Python3 REQUIRED COMPONENTS Interpreter)
	add_test(NAME manpage_${_name}_${_section}
		COMMAND Python3::Interpreter ${METAROCE_MANPAGE_CHECK} ${_page} ${_name})
	set_tests_properties(manpage_${_name}_${_section} PROPERTIES
		LABELS unit TIMEOUT 30)
endfunction()
