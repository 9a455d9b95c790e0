// SPDX-License-Identifier: MIT
/*
 * When the watchdog (--timeout) fires in the middle of a 30 s pipe-sweep,
 * the engine exits 1 at once and leaves no process behind: the test is a
 * child subreaper, so anything the engine did not reap would become ours.
 */
#include <sys/prctl.h>

#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			 "--duration", "30", "--timeout", "1", "--writers", "3",
			 "--readers", "2", NULL };
	struct engine_result res;
	int left, ret = EXIT_FAIL;

	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return EXIT_SKIP;
	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	left = count_our_children(true);
	if (res.status != 1 || res.seconds > 4) {
		t_fail(&res, "expected exit 1 soon after the 1 s watchdog");
		goto out;
	}
	if (left) {
		t_fail(&res, "%d processes outlived the engine", left);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
