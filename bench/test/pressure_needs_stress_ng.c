// SPDX-License-Identifier: MIT
/*
 * --memory-pressure without stress-ng in PATH fails at once (exit 1) with a
 * message that names stress-ng, instead of measuring without pressure.
 */
#include "engine_run.h"

static bool no_path(void)
{
	return setenv("PATH", "/nonexistent", 1) == 0;
}

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			 "--memory-pressure", "--duration", "0.2", NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (engine_run_full(args, 10, 0, 0, no_path, &res))
		return EXIT_FAIL;
	if (res.status != 1 || !strstr(res.err, "stress-ng") || res.out[0]) {
		t_fail(&res, "expected exit 1, no result, and a message naming stress-ng");
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
