// SPDX-License-Identifier: MIT
/*
 * pipe-sweep --fill makes each write's bytes anew; with --verify the reader
 * finds every byte of the pattern where it belongs, packet mode or not.
 */
#include "engine_run.h"

static int run(const char *engine, bool packet)
{
	char *args[] = { (char *)engine, "pipe-sweep", "--json", "--write-size", "700",
			 "--pipe-size", "64K", "--no-latency", "--count", "3000", "--fill",
			 "--verify", packet ? "--packet" : NULL, NULL };
	struct engine_result res;
	char want[96];
	double got;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	snprintf(want, sizeof(want), "\"fill\": \"%d bytes read, every one as written\"",
		 3000 * 700);
	if (res.status != 0 || !json_metric(res.out, "bytes_read", &got))
		t_fail(&res, "want exit 0 and bytes_read");
	else if (got != 3000 * 700 || !strstr(res.out, want))
		t_fail(&res, "want %s", want);
	else
		ret = EXIT_OK;
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	static const char *const bad[] = { "--verify", NULL };
	int ret = run(engine, false);

	if (ret == EXIT_OK)
		ret = run(engine, true);
	if (ret == EXIT_OK && expect_usage_error(engine, "pipe-sweep", bad, "--verify"))
		ret = EXIT_FAIL;
	return ret;
}
