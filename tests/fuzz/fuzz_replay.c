// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * main() for a fuzz harness built without libFuzzer (any compiler): runs
 * LLVMFuzzerTestOneInput() once per file named on the command line, so the
 * seed corpus and every crash reproducer are unit tests of the normal
 * build.  Exit status 1 if a file cannot be read; an invariant violation
 * aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	int i;

	for (i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		size_t n;

		if (!f) {
			perror(argv[i]);
			return 1;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	printf("%d inputs ran\n", argc - 1);
	return argc > 1 ? 0 : 1;
}
