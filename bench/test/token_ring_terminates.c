// SPDX-License-Identifier: MIT
/*
 * token-ring ends by itself: whatever the process count and transfer count
 * (1 process, an odd count, more processes than transfers), every child gets
 * a termination token and exits, with no help from the watchdog.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	static const char *const cases[][2] = {
		{ "1", "1" }, { "1", "1001" }, { "2", "7" }, { "100", "3" }, { "64", "5001" },
	};
	struct engine_result res;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *args[] = { (char *)engine_path(argc, argv), "token-ring", "--json",
				 "--procs", (char *)cases[i][0], "--transfers",
				 (char *)cases[i][1], "--timeout", "5", NULL };

		if (engine_run(args, 8, &res))
			return EXIT_FAIL;
		if (res.status != 0) {
			t_fail(&res, "--procs %s --transfers %s did not end cleanly",
			       cases[i][0], cases[i][1]);
			engine_result_free(&res);
			return EXIT_FAIL;
		}
		engine_result_free(&res);
	}
	return EXIT_OK;
}
