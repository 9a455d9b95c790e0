// SPDX-License-Identifier: MIT
/*
 * token-ring reports its scheduler counters: context switches (also per
 * transfer), voluntary and involuntary switches, task clock, and CPU
 * migrations when perf events are allowed, all consistent with each other.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "token-ring", "--json",
			 "--procs", "8", "--transfers", "20000", "--timeout", "10", NULL };
	struct engine_result res;
	double cs, per, vol, invol, clock, elapsed, transfers = 20000, mig;
	int ret = EXIT_FAIL;

	if (engine_run(args, 15, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "exit status");
		goto out;
	}
	if (!json_metric(res.out, "context_switches", &cs) ||
	    !json_metric(res.out, "cs_per_transfer", &per) ||
	    !json_metric(res.out, "voluntary_cs", &vol) ||
	    !json_metric(res.out, "involuntary_cs", &invol) ||
	    !json_metric(res.out, "task_clock_ms", &clock) ||
	    !json_metric(res.out, "elapsed_s", &elapsed)) {
		t_fail(&res, "a metric is missing");
		goto out;
	}
	/*
	 * Every child blocks in read() at least once in its life: rusage's voluntary count
	 * says so. perf's count can be lower on a loaded host (cs 4 against voluntary 10
	 * was seen), so it is only required to have counted something.
	 */
	if (cs < 1 || vol < 8 || clock <= 0 || elapsed <= 0) {
		t_fail(&res, "implausible counters: cs %.0f, voluntary %.0f, task clock %.3f ms",
		       cs, vol, clock);
		goto out;
	}
	if (per < cs / transfers * 0.999 || per > cs / transfers * 1.001) {
		t_fail(&res, "cs_per_transfer %g is not %g / %g", per, cs, transfers);
		goto out;
	}
	if (strstr(res.out, "\"source\": \"perf+rusage\"")) {
		if (!json_metric(res.out, "cpu_migrations", &mig)) {
			t_fail(&res, "perf counters but no cpu_migrations");
			goto out;
		}
	} else if (!strstr(res.out, "\"source\": \"rusage\"") || cs != vol + invol) {
		t_fail(&res, "rusage fallback: cs should be voluntary + involuntary");
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
