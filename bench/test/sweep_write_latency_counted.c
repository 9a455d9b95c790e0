// SPDX-License-Identifier: MIT
/*
 * pipe-sweep times every write(): the "write" histogram holds one entry per
 * write, its percentiles are ordered, the result carries what the timing
 * cost (ns per write, and as a share of the writers' time: below 100%, and
 * no more than the measured mean write time allows), and --no-latency drops
 * all of it.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	char *argv_on[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			    "--duration", "0.3", "--writers", "2", NULL };
	char *argv_off[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			     "--duration", "0.3", "--no-latency", NULL };
	static const char *const keys[] = { "min", "p50", "p90", "p99", "p99.9", "max" };
	struct engine_result res;
	double writes, count, v, prev = 0, cost, share, mean;
	const char *lat;
	unsigned int i;
	int ret = EXIT_FAIL;

	if (engine_run(argv_on, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, "writes", &writes)) {
		t_fail(&res, "run with latency");
		goto out;
	}
	lat = strstr(res.out, "\"latency\": {\"write\": {");
	if (!lat || !json_number(lat, "count", &count) || count != writes || writes < 1) {
		t_fail(&res, "latency.write.count should equal writes (%.0f)", writes);
		goto out;
	}
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!json_number(lat, keys[i], &v) || v < prev || v <= 0) {
			t_fail(&res, "latency.write.%s missing or out of order", keys[i]);
			goto out;
		}
		prev = v;
	}
	if (!json_metric(res.out, "timing_cost", &cost) ||
	    !json_metric(res.out, "timing_share", &share) || !json_number(lat, "mean", &mean) ||
	    !(cost > 0) || !(share > 0) || share >= 100 || cost >= mean) {
		t_fail(&res, "timing_cost / timing_share missing or implausible");
		goto out;
	}
	engine_result_free(&res);

	if (engine_run(argv_off, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !strstr(res.out, "\"latency\": {}") ||
	    !strstr(res.out, "\"latency\": false") || strstr(res.out, "timing_cost")) {
		t_fail(&res, "--no-latency should emit no write histogram");
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
