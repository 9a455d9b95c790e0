// SPDX-License-Identifier: MIT
/*
 * mq-latency leaves no message queue behind: after a normal run and after
 * SIGTERM mid-run, none of the engine's queue names can be opened.
 */
#include <mqueue.h>

#include "engine_run.h"

/* The engine names its queues /ipcbench-mq-<engine pid>-<index>. */
static bool queues_left(pid_t pid)
{
	char name[64];
	int i;

	for (i = 0; i < 64; i++) {
		mqd_t q;

		snprintf(name, sizeof(name), "/ipcbench-mq-%d-%d", (int)pid, i);
		q = mq_open(name, O_RDONLY);
		if (q != (mqd_t)-1) {
			mq_close(q);
			mq_unlink(name);
			fprintf(stderr, "FAIL: %s still exists\n", name);
			return true;
		}
	}
	return false;
}

static int run(const char *engine, double kill_after)
{
	char *args[] = { (char *)engine, "mq-latency", "--json", "--duration",
			 kill_after > 0 ? "30" : "0.2", NULL };
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return EXIT_FAIL;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, STDOUT_FILENO);
		execv(args[0], args);
		_exit(127);
	}
	if (kill_after > 0) {
		usleep((useconds_t)(kill_after * 1e6));
		kill(pid, SIGTERM);
	}
	if (waitpid(pid, &status, 0) < 0)
		return EXIT_FAIL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP)
		return EXIT_SKIP;
	if (kill_after <= 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		fprintf(stderr, "FAIL: mq-latency exited with status 0x%x\n", status);
		return EXIT_FAIL;
	}
	return queues_left(pid) ? EXIT_FAIL : EXIT_OK;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	int ret;

	ret = run(engine, 0);
	if (ret)
		return ret;
	return run(engine, 0.4);
}
