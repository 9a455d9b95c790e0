// SPDX-License-Identifier: MIT
/*
 * --copies N runs N copies and the headline rate is their sum: for
 * pipe-throughput and pipe-context, the metric equals the sum of the
 * per-copy rates listed in the notes, and there are N of them.
 */
#include <math.h>

#include "engine_run.h"

static int check(const char *engine, const char *workload, const char *metric,
		 const char *note)
{
	char *args[] = { (char *)engine, (char *)workload, "--json", "--copies", "3",
			 "--duration", "0.3", NULL };
	struct engine_result res;
	char pat[128];
	double total, sum = 0;
	const char *p;
	char *end;
	int n = 0, ret = EXIT_FAIL;

	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, metric, &total)) {
		t_fail(&res, "%s --copies 3: no %s", workload, metric);
		goto out;
	}
	snprintf(pat, sizeof(pat), "\"%s\": \"", note);
	p = strstr(res.out, pat);
	if (!p) {
		t_fail(&res, "%s: note %s missing", workload, note);
		goto out;
	}
	for (p += strlen(pat); *p != '"'; p = *end == ',' ? end + 1 : end) {
		double v = strtod(p, &end);

		if (end == p || v <= 0) {
			t_fail(&res, "%s: bad per-copy value at '%.20s'", workload, p);
			goto out;
		}
		sum += v;
		n++;
	}
	/*
	 * per-copy values are rounded to integers, the headline to 6
	 * significant digits (the core's JSON number format)
	 */
	if (n != 3 || total <= 0 || fabs(sum - total) > n + total * 1e-5) {
		t_fail(&res, "%s: %d per-copy values summing to %.1f, headline %.1f",
		       workload, n, sum, total);
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

	if (check(engine, "pipe-throughput", "loops_per_s", "per_copy_loops_per_s"))
		return EXIT_FAIL;
	if (check(engine, "pipe-context", "round_trips_per_s", "per_copy_round_trips_per_s"))
		return EXIT_FAIL;
	return EXIT_OK;
}
