// SPDX-License-Identifier: MIT
/*
 * SIGINT and SIGTERM in the middle of a run kill and reap every child,
 * in process mode and in token-ring, and the engine exits at once.
 */
#include <sys/prctl.h>

#include "engine_run.h"

static int check(char *const args[], int sig)
{
	struct engine_result res;
	int left, ret = EXIT_FAIL;

	if (engine_run_full(args, 10, 0.5, sig, NULL, &res))
		return EXIT_FAIL;
	left = count_our_children(true);
	if (res.status != 128 + sig || res.seconds > 4) {
		t_fail(&res, "%s %s: expected exit %d within a few seconds", args[1],
		       strsignal(sig), 128 + sig);
		goto out;
	}
	if (left) {
		t_fail(&res, "%s %s: %d processes outlived the engine", args[1],
		       strsignal(sig), left);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	char *sweep[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			  "--duration", "30", "--writers", "2", "--readers", "3", NULL };
	/* long enough to be caught mid-run */
	char *ring[] = { (char *)engine_path(argc, argv), "token-ring", "--json",
			 "--transfers", "2000000000", NULL };

	if (prctl(PR_SET_CHILD_SUBREAPER, 1))
		return EXIT_SKIP;
	if (check(sweep, SIGINT) || check(sweep, SIGTERM) || check(ring, SIGTERM))
		return EXIT_FAIL;
	return EXIT_OK;
}
