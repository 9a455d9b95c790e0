// SPDX-License-Identifier: MIT
/*
 * token-ring --duration stops on a timer (stress-ng pipeherd's rule): the
 * run ends about when asked, every transfer made is counted once, and the
 * seconds spent forking and reaping the herd are reported apart.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "token-ring", "--json", "--procs", "9",
			 "--no-decoy", "--packet", "--duration", "0.5", "--counters", "rusage",
			 NULL };
	struct engine_result res;
	double transfers, elapsed, fork_s, reap_s;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_number(res.out, "transfers", &transfers) ||
	    !json_metric(res.out, "elapsed_s", &elapsed) ||
	    !json_metric(res.out, "fork_s", &fork_s) || !json_metric(res.out, "reap_s", &reap_s)) {
		t_fail(&res, "want exit 0 with transfers, elapsed_s, fork_s and reap_s");
		goto out;
	}
	if (!strstr(res.out, "\"stop\": \"timer\"") || !strstr(res.out, "\"decoy\": false")) {
		t_fail(&res, "want stop timer and no decoy in params");
		goto out;
	}
	if (transfers < 100 || elapsed < 0.5 || elapsed > 0.75 || fork_s < 0 || reap_s < 0 ||
	    res.seconds > 5) {
		t_fail(&res, "%g transfers in %g s (fork %g, reap %g)", transfers, elapsed,
		       fork_s, reap_s);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
