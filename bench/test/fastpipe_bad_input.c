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
	{ { "--write", "vmsplice", "--buf-size", "12K" }, "--buf-size" },
	{ { "--bytes", "1K" }, "--bytes" },
	{ { "--bytes", "64M", "--count", "10" }, "--count" },
	{ { "--write", "mmap" }, "--write" },
	{ { "--pipe-size", "0" }, "--pipe-size" },
	{ { "--no-such-option" }, "--no-such-option" },
};

int main(int argc, char **argv)
{
	struct engine_result res;
	unsigned int i, j;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *args[10] = { (char *)engine_path(argc, argv), "fastpipe" };

		for (j = 0; cases[i].args[j]; j++)
			args[2 + j] = (char *)cases[i].args[j];
		if (engine_run(args, 5, &res))
			return T_FAIL;
		if (res.status != 2 || count_lines(res.err) != 1 ||
		    !strstr(res.err, cases[i].names) || res.out[0]) {
			t_fail(&res, "case %u: want exit 2 and one line naming %s", i,
			       cases[i].names);
			engine_result_free(&res);
			return T_FAIL;
		}
		engine_result_free(&res);
	}
	return T_PASS;
}
