// SPDX-License-Identifier: MIT
/*
 * pipe-throughput with --count N does exactly N write+read loops and reports
 * a positive loops/s; with --duration it reports the loops it did.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-throughput", "--json",
			 "--count", "5000", NULL };
	struct engine_result res;
	double rate, loops;
	int ret = EXIT_FAIL;

	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "pipe-throughput --count 5000 failed");
		goto out;
	}
	if (!json_metric(res.out, "loops_per_s", &rate) || !json_metric(res.out, "loops", &loops)) {
		t_fail(&res, "metrics loops_per_s/loops missing");
		goto out;
	}
	if (loops != 5000 || !(rate > 0)) {
		t_fail(&res, "loops %.0f (want 5000), loops_per_s %g (want > 0)", loops, rate);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
