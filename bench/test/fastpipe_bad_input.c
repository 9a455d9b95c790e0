// SPDX-License-Identifier: MIT
/*
 * fastpipe refuses impossible combinations before running anything: exit 2
 * and one line on stderr that names the offending option.
 */
#include "engine_run.h"

static const struct {
	const char *args[6];
	const char *names;
} cases[] = {
	{ { "--verify", "--read", "splice" }, "--verify" },
	{ { "--ladder", "--write", "vmsplice" }, "--ladder" },
	{ { "--ladder", "--verify" }, "--verify" },
	{ { "--verify", "--dont-touch" }, "--dont-touch" },
	{ { "--write", "vmsplice", "--buf-size", "4K" }, "--buf-size" },
	{ { "--write", "vmsplice", "--buf-size", "12289" }, "--buf-size" },
	{ { "--buf-offset", "4096" }, "--buf-offset" },
	{ { "--bytes", "1K" }, "--bytes" },
	{ { "--bytes", "64M", "--count", "10" }, "--count" },
	{ { "--write", "mmap" }, "--write" },
	{ { "--pipe-size", "0" }, "--pipe-size" },
	{ { "--no-such-option" }, "--no-such-option" },
};

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (expect_usage_error(engine, "fastpipe", cases[i].args, cases[i].names))
			return EXIT_FAIL;
	return EXIT_OK;
}
