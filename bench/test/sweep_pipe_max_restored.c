// SPDX-License-Identifier: MIT
/*
 * As root, --pipe-size above fs/pipe-max-size raises the sysctl for the run,
 * and the old value is back afterwards: after a normal run and after the
 * watchdog killed the run.
 */
#include "engine_run.h"

#define PIPE_MAX "/proc/sys/fs/pipe-max-size"

static long long pipe_max(void)
{
	long long v = -1;
	FILE *f = fopen(PIPE_MAX, "r");

	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

int main(int argc, char **argv)
{
	char size[32];
	char *normal[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			   "--duration", "0.2", "--pipe-size", size, NULL };
	char *killed[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
			   "--duration", "30", "--timeout", "0.5", "--pipe-size", size, NULL };
	struct engine_result res;
	long long before = pipe_max(), granted_want;
	double granted;
	int ret = EXIT_FAIL;

	if (geteuid() != 0 || before <= 0 || access(PIPE_MAX, W_OK)) {
		printf("needs root and a writable %s\n", PIPE_MAX);
		return EXIT_SKIP;
	}
	granted_want = before * 4;
	snprintf(size, sizeof(size), "%lld", granted_want);

	if (engine_run(normal, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_number(strstr(res.out, "\"params\""), "pipe_size", &granted) ||
	    granted != granted_want || !strstr(res.out, "\"pipe_max_size\": \"raised")) {
		t_fail(&res, "expected a %lld-byte pipe and a note about the sysctl", granted_want);
		goto out;
	}
	if (pipe_max() != before) {
		t_fail(&res, "pipe-max-size is %lld after the run, was %lld", pipe_max(), before);
		goto out;
	}
	engine_result_free(&res);

	if (engine_run(killed, 10, &res))
		return EXIT_FAIL;
	if (res.status != 1 || pipe_max() != before) {
		t_fail(&res, "after the watchdog: pipe-max-size %lld, was %lld", pipe_max(), before);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
