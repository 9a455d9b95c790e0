// SPDX-License-Identifier: MIT
/*
 * --cpus naming a CPU this machine does not have skips the cell (exit 77,
 * one line that says why, no output), so that a suite pinned to CPUs 0 and
 * 1 runs on a one-CPU guest; a negative CPU number is a usage error (2).
 */
#include "engine_run.h"

static int expect(const char *engine, const char *cpus, int status, const char *says)
{
	char *argv[] = { (char *)engine, "pipe-context", "--cpus", (char *)cpus,
			 "--count", "10", NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (engine_run(argv, 10, &res))
		return EXIT_FAIL;
	if (res.status != status || !strstr(res.err, says) || res.out[0])
		t_fail(&res, "--cpus %s: expected exit %d, stderr naming '%s', no output",
		       cpus, status, says);
	else
		ret = EXIT_OK;
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);

	if (expect(engine, "0,4000", 77, "skip: --cpus '0,4000'") ||
	    expect(engine, "4000", 77, "CPUs 0..") ||
	    expect(engine, "-1,0", 2, "--cpus '-1,0'"))
		return EXIT_FAIL;
	return EXIT_OK;
}
