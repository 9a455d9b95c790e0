// SPDX-License-Identifier: MIT
/*
 * pipe-sweep --packet opens the pipe in packet mode: a write of more than a
 * page goes in as page-sized packets and a read takes at most one packet,
 * so 5000-byte writes come out as two reads each (4096 + 904).  Without it
 * the bytes merge and a 5000-byte read gets all of one write.
 */
#include "engine_run.h"

static int run(const char *engine, bool packet, double *writes, double *reads)
{
	char *args[] = { (char *)engine, "pipe-sweep", "--json", "--writers", "1",
			 "--readers", "1", "--write-size", "5000", "--pipe-size", "64K",
			 "--no-latency", "--count", "2000", packet ? "--packet" : NULL, NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (t_skipped(&res)) {
		ret = EXIT_SKIP;
	} else if (res.status != 0 || !json_metric(res.out, "writes", writes) ||
		   !json_metric(res.out, "reads", reads) ||
		   !strstr(res.out, packet ? "\"packet\": true" : "\"packet\": false")) {
		t_fail(&res, "want exit 0 with writes, reads and the packet param");
	} else {
		ret = EXIT_OK;
	}
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	double w, r;
	int ret;

	ret = run(engine, true, &w, &r);
	if (ret != EXIT_OK)
		return ret;
	if (w != 2000 || r != 2 * w) {
		fprintf(stderr, "FAIL: --packet: %g writes gave %g reads, want %g\n", w, r, 2 * w);
		return EXIT_FAIL;
	}
	ret = run(engine, false, &w, &r);
	if (ret != EXIT_OK)
		return ret;
	if (r >= 1.5 * w) {
		fprintf(stderr, "FAIL: without --packet %g writes gave %g reads: not merged\n",
			w, r);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
