// SPDX-License-Identifier: MIT
/*
 * fastpipe --verify checks every byte the reader gets, for write and for
 * vmsplice (whose double buffering it proves, with the post's 16-byte offset,
 * page aligned, and with a buffer whose half is not a power-of-two pipe size),
 * and says how many it checked.
 */
#include "engine_run.h"

static int run(const char *engine, const char *mode, const char *opt, const char *val)
{
	char *args[] = { (char *)engine, "fastpipe", "--verify", "--write", (char *)mode,
			 "--bytes", "64M", "--json", (char *)opt, (char *)val, NULL };
	struct engine_result res;
	const char *p;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status == EXIT_SKIP) {
		ret = EXIT_SKIP;
		goto out;
	}
	p = strstr(res.out, "\"verify\": \"");
	/* 64 MiB: every byte the reader got, first transfer included */
	if (res.status != 0 || !p || strncmp(p + 11, "67108864 bytes checked, all correct", 35)) {
		t_fail(&res, "--verify --write %s %s %s: want exit 0 and 67108864 bytes checked",
		       mode, opt ? opt : "", val ? val : "");
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
	int ret;

	ret = run(engine, "write", NULL, NULL);
	if (!ret)
		ret = run(engine, "vmsplice", NULL, NULL);
	if (!ret)
		ret = run(engine, "vmsplice", "--buf-offset", "0");
	if (!ret)
		ret = run(engine, "vmsplice", "--buf-size", "24K");
	return ret;
}
