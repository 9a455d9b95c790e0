// SPDX-License-Identifier: MIT
/*
 * fastpipe --bytes N and --count N (buffers) move exactly that much: the
 * timed bytes are the total less the first, untimed transfer (at most one
 * buffer).
 */
#include "engine_run.h"

static int run(const char *engine, const char *opt, const char *val, double want)
{
	char *args[] = { (char *)engine, "fastpipe", "--json", (char *)opt, (char *)val, NULL };
	struct engine_result res;
	double timed;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, "bytes_timed", &timed)) {
		t_fail(&res, "fastpipe %s %s failed", opt, val);
		goto out;
	}
	if (timed >= want || timed < want - 256 * 1024) {
		t_fail(&res, "%s %s: bytes_timed %.0f, want within one 256K buffer below %.0f",
		       opt, val, timed, want);
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

	if (run(engine, "--bytes", "32M", 32.0 * 1024 * 1024))
		return EXIT_FAIL;
	if (run(engine, "--count", "100", 100.0 * 256 * 1024))
		return EXIT_FAIL;
	return EXIT_OK;
}
