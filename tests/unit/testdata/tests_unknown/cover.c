/* Checker self-test input, not compiled.  covers: MR-TEST-001 MR-TEST-002 */
