// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
//
// CHECK(cond, fmt, ...): the test programs' non-fatal assertion. On failure
// it prints the location, the condition and the message, and counts the
// failure in the including file's `failures`, so one run reports every
// broken expectation and the program decides its exit status at the end.
#ifndef METAROCE_TESTS_CHECK_H
#define METAROCE_TESTS_CHECK_H

#include <cstdio>

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			std::printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__,   \
				    #cond);                                   \
			std::printf(__VA_ARGS__);                             \
			std::printf("\n");                                    \
			failures++;                                           \
		}                                                             \
	} while (0)

#endif
