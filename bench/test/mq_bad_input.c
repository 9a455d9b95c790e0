// SPDX-License-Identifier: MIT
/*
 * mq-latency refuses impossible values: exit 2 and one line naming the
 * option.  A depth above the kernel's hard limit is impossible even as root.
 */
#include "engine_run.h"

static const struct {
	const char *args[4];
	const char *names;
} cases[] = {
	{ { "--msg-size", "0" }, "--msg-size" },
	{ { "--msg-size", "17M" }, "--msg-size" },
	{ { "--depth", "0" }, "--depth" },
	{ { "--depth", "65537" }, "--depth" },
	{ { "--depth", "many" }, "--depth" },
	{ { "--priorities", "sideways" }, "--priorities" },
	{ { "--copies", "2" }, "--copies" },
};

int main(int argc, char **argv)
{
	struct engine_result res;
	unsigned int i, j;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *args[8] = { (char *)engine_path(argc, argv), "mq-latency" };

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
