// SPDX-License-Identifier: MIT
/*
 * As root, mq-latency --depth above fs.mqueue.msg_max raises the limit for
 * the run, says so, and puts the old value back, also when killed by
 * SIGTERM mid-run.
 */
#include "engine_run.h"

#define MSG_MAX "/proc/sys/fs/mqueue/msg_max"

static long read_msg_max(void)
{
	FILE *f = fopen(MSG_MAX, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long before = read_msg_max(), after;
	char depth[32];
	char *args[] = { (char *)engine_path(argc, argv), "mq-latency", "--json",
			 "--depth", depth, "--duration", "0.2", NULL };
	char *slow[] = { (char *)engine_path(argc, argv), "mq-latency", "--json",
			 "--depth", depth, "--duration", "30", NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (before < 0) {
		printf("skip: no %s\n", MSG_MAX);
		return EXIT_SKIP;
	}
	if (geteuid() != 0) {
		printf("skip: needs root to raise msg_max\n");
		return EXIT_SKIP;
	}
	snprintf(depth, sizeof(depth), "%ld", before + 6);
	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	after = read_msg_max();
	if (res.status != 0 || !strstr(res.out, "\"msg_max\": \"raised from") || after != before) {
		t_fail(&res, "msg_max %ld before, %ld after; want the note and no change",
		       before, after);
		goto out;
	}
	engine_result_free(&res);

	if (engine_run_full(slow, 10, 0.5, SIGTERM, NULL, &res))
		return EXIT_FAIL;
	after = read_msg_max();
	if (after != before) {
		t_fail(&res, "after SIGTERM msg_max is %ld, was %ld", after, before);
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
