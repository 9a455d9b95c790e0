// SPDX-License-Identifier: MIT
/*
 * With --memory-pressure, the watchdog kills stress-ng and all its workers
 * too: none is left running (or unreaped) once the engine has exited.
 */
#include <sys/prctl.h>

#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			 "--memory-pressure", "--vm", "2", "--vm-bytes", "64M",
			 "--duration", "30", "--timeout", "2", NULL };
	struct engine_result res;
	int left, ret = EXIT_FAIL;

	if (!have_stress_ng()) {
		printf("stress-ng is not installed\n");
		return EXIT_SKIP;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return EXIT_SKIP;
	if (engine_run(args, 15, &res))
		return EXIT_FAIL;
	left = count_our_children(true);
	if (res.status != 1 || res.seconds > 6) {
		t_fail(&res, "expected exit 1 soon after the 2 s watchdog");
		goto out;
	}
	if (left) {
		t_fail(&res, "%d processes (stress-ng workers?) outlived the engine", left);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
