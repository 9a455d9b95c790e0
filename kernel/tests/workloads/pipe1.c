// SPDX-License-Identifier: MIT
/*
 * will-it-scale's pipe1 shape: many tasks, each with a pipe of its own, each writing one
 * byte into it and reading the byte back, so nobody ever waits on anybody.
 *
 *   pipe1 [TASKS [LOOPS]]     default 8 tasks of 2000 loops each
 *
 * Bounded in operations (TASKS x LOOPS write+read pairs), not in time, so that boots under
 * the deterministic mode repeat. Exit 0 when every task made all its loops.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int loop(long loops)
{
	int fd[2];
	char c = 0;

	if (pipe(fd))
		return 1;
	for (long i = 0; i < loops; i++) {
		ssize_t n;

		do
			n = write(fd[1], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			return 1;
		do
			n = read(fd[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long tasks = argc > 1 ? atol(argv[1]) : 8;
	long loops = argc > 2 ? atol(argv[2]) : 2000;
	int failed = 0;

	if (tasks < 1 || tasks > 1024 || loops < 1) {
		fprintf(stderr, "usage: pipe1 [TASKS (1-1024) [LOOPS (>= 1)]]\n");
		return 2;
	}
	for (long t = 0; t < tasks; t++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("pipe1: fork");
			return 1;
		}
		if (pid == 0)
			_exit(loop(loops));
	}
	for (long t = 0; t < tasks; t++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed++;
	}
	printf("pipe1: %ld tasks x %ld loops, %d failed\n", tasks, loops, failed);
	return failed ? 1 : 0;
}
