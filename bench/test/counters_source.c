// SPDX-License-Identifier: MIT
/*
 * --counters picks where the scheduler counters come from: fastpipe counts
 * with getrusage alone unless told (perf events would slow its switches),
 * token-ring with perf events (the seed's perf stat), and either can be
 * turned around.  "rusage" must never carry cpu_migrations; "perf" must,
 * unless perf_event_open was refused, which a note then says.
 */
#include "engine_run.h"

static int check(const char *engine, const char *workload, const char *counters,
		 const char *want)
{
	char *args[16];
	struct engine_result res;
	double mig;
	int n = 0, ret = EXIT_FAIL;

	args[n++] = (char *)engine;
	args[n++] = (char *)workload;
	args[n++] = "--json";
	args[n++] = "--timeout";
	args[n++] = "20";
	if (!strcmp(workload, "fastpipe")) {
		args[n++] = "--bytes";
		args[n++] = "64M";
	} else {
		args[n++] = "--procs";
		args[n++] = "4";
		args[n++] = "--transfers";
		args[n++] = "2000";
	}
	if (counters) {
		args[n++] = "--counters";
		args[n++] = (char *)counters;
	}
	args[n] = NULL;
	if (engine_run(args, 25, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "%s --counters %s: exit status", workload, counters ? counters : "(default)");
		goto out;
	}
	if (!strcmp(want, "rusage")) {
		if (!strstr(res.out, "\"source\": \"rusage\"") || json_number(res.out, "cpu_migrations", &mig)) {
			t_fail(&res, "%s --counters %s: want rusage only", workload,
			       counters ? counters : "(default)");
			goto out;
		}
	} else if (strstr(res.out, "\"source\": \"perf+rusage\"")) {
		if (!json_number(res.out, "cpu_migrations", &mig)) {
			t_fail(&res, "%s: perf source without cpu_migrations", workload);
			goto out;
		}
	} else if (!strstr(res.out, "perf_event_open refused")) {
		t_fail(&res, "%s --counters %s: want perf events, or a note saying they were refused",
		       workload, counters ? counters : "(default)");
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	const char *bad[] = { "--counters", "hw", NULL };

	if (check(engine, "fastpipe", NULL, "rusage") ||
	    check(engine, "fastpipe", "perf", "perf") ||
	    check(engine, "token-ring", NULL, "perf") ||
	    check(engine, "token-ring", "rusage", "rusage"))
		return EXIT_FAIL;
	if (expect_usage_error(engine, "token-ring", bad, "--counters"))
		return EXIT_FAIL;
	return EXIT_OK;
}
