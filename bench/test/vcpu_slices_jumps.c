// SPDX-License-Identifier: MIT
/*
 * vcpu-slices stops at --count jumps (or its duration), reports how many it
 * saw and the share of reads that found the count moved, and refuses one CPU
 * for both threads: there would be no second vCPU to take turns with.
 */
#include "engine_run.h"

#include <sched.h>

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	static const char *const same[] = { "--cpus", "0,0", NULL };
	char *args[] = { (char *)engine, "vcpu-slices", "--json", "--cpus", "0,1", "--count", "5",
			 "--still", "16", "--duration", "2", NULL };
	struct engine_result res;
	double jumps, moved;
	cpu_set_t set;
	int ret = EXIT_FAIL;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 &&
	    (!CPU_ISSET(0, &set) || !CPU_ISSET(1, &set))) {
		printf("SKIP: vcpu-slices needs CPUs 0 and 1\n");
		return EXIT_SKIP;
	}
	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, "jumps", &jumps) ||
	    !json_metric(res.out, "moved_per_read", &moved)) {
		t_fail(&res, "want exit 0 with jumps and moved_per_read");
	} else if (jumps > 5 || !(moved > 0 && moved <= 1)) {
		t_fail(&res, "%g jumps (want at most 5), moved_per_read %g", jumps, moved);
	} else {
		ret = EXIT_OK;
	}
	engine_result_free(&res);
	if (ret != EXIT_OK)
		return ret;
	return expect_usage_error(engine, "vcpu-slices", same, "two different CPUs");
}
