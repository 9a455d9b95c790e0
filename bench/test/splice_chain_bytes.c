// SPDX-License-Identifier: MIT
/*
 * splice-chain moves what it says: --count rounds of 64 KiB through the
 * splice and the vmsplice chains, and in the tee chain the reader gets
 * every byte the tee process copied into its pipe.
 */
#include "engine_run.h"

static int run(const char *engine, const char *chain, const char *count, double *moved,
	       double *read_bytes)
{
	char *args[] = { (char *)engine, "splice-chain", "--json", "--chain", (char *)chain,
			 "--count", (char *)count, NULL };
	struct engine_result res;
	double rounds, rate;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (t_skipped(&res)) {
		ret = EXIT_SKIP;
	} else if (res.status != 0 || !json_metric(res.out, "rounds", &rounds) ||
		   !json_metric(res.out, "bytes_moved", moved) ||
		   !json_metric(res.out, "call_throughput", &rate) ||
		   (read_bytes && !json_metric(res.out, "bytes_read", read_bytes))) {
		t_fail(&res, "%s: want exit 0 with rounds, bytes_moved, call_throughput", chain);
	} else if (rounds != atof(count) || !(rate > 0)) {
		t_fail(&res, "%s: %g rounds (want %s), call_throughput %g", chain, rounds, count,
		       rate);
	} else {
		ret = EXIT_OK;
	}
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	static const char *const bad[] = { "--chain", "splice", "--write-size", "8", NULL };
	double moved, got;
	int ret;

	if ((ret = run(engine, "splice", "100", &moved, NULL)) != EXIT_OK)
		return ret;
	if (moved != 100 * 65536.0) {
		fprintf(stderr, "FAIL: splice chain moved %g bytes, want %g\n", moved, 100 * 65536.0);
		return EXIT_FAIL;
	}
	if ((ret = run(engine, "vmsplice", "100", &moved, NULL)) != EXIT_OK)
		return ret;
	if (moved != 100 * 65536.0) {
		fprintf(stderr, "FAIL: vmsplice chain moved %g bytes, want %g\n", moved,
			100 * 65536.0);
		return EXIT_FAIL;
	}
	if ((ret = run(engine, "tee", "500", &moved, &got)) != EXIT_OK)
		return ret;
	if (!(moved > 0) || got != moved) {
		fprintf(stderr, "FAIL: tee copied %g bytes, the reader got %g\n", moved, got);
		return EXIT_FAIL;
	}
	return expect_usage_error(engine, "splice-chain", bad, "--write-size");
}
