// SPDX-License-Identifier: MIT
/*
 * pipe-context --count N completes exactly N checked round trips, both
 * unpinned and pinned to two CPUs, and both processes exit cleanly.
 */
#include "engine_run.h"

static int run(const char *engine, const char *cpus)
{
	char *args[] = { (char *)engine, "pipe-context", "--json", "--count", "2000",
			 cpus ? "--cpus" : NULL, (char *)cpus, NULL };
	struct engine_result res;
	double trips, rate;
	int ret = EXIT_FAIL;

	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, "round_trips", &trips) ||
	    !json_metric(res.out, "round_trips_per_s", &rate)) {
		t_fail(&res, "pipe-context --count 2000 %s failed", cpus ? cpus : "");
		goto out;
	}
	if (trips != 2000 || !(rate > 0)) {
		t_fail(&res, "round_trips %.0f (want 2000), rate %g", trips, rate);
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

	if (run(engine, NULL))
		return EXIT_FAIL;
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2 && run(engine, "0,1"))
		return EXIT_FAIL;
	return EXIT_OK;
}
