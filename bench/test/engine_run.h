/* SPDX-License-Identifier: MIT */
/*
 * engine_run.h: run the built ipcbench from a test and pick numbers out of
 * its JSON by plain string scanning.  Header only; every test is one file.
 *
 * The engine is $IPCBENCH, else argv[1], else ../ipcbench.  Tests exit
 * EXIT_OK (pass), EXIT_FAIL or EXIT_SKIP (shared.h: 0, 1, 77).
 */
#ifndef ENGINE_RUN_H
#define ENGINE_RUN_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shared.h"	/* EXIT_OK (pass), EXIT_FAIL, EXIT_SKIP */

struct engine_result {
	int status;		/* exit code, 128 + signal, or -1 if it had to be killed */
	double seconds;		/* wall time */
	char *out;		/* stdout, NUL terminated */
	char *err;		/* stderr, NUL terminated */
};

static inline const char *engine_path(int argc, char **argv)
{
	const char *p = getenv("IPCBENCH");

	if (p && *p)
		return p;
	if (argc > 1)
		return argv[1];
	return "../ipcbench";
}

static inline double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline char *slurp_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	if (!buf)
		return NULL;
	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += n;
		if (cap - len < 2) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	buf[len] = '\0';
	return buf;
}

/*
 * Hook run in the child just before exec (change credentials, environment).
 * Return false to make the child exit 127.
 */
typedef bool (*engine_prep_fn)(void);

/*
 * Run argv (argv[0] is the engine path).  If @signal_after > 0, send
 * @sig to it after that many seconds.  Killed with SIGKILL after @limit_s.
 */
static inline int engine_run_full(char *const argv[], double limit_s, double signal_after,
				  int sig, engine_prep_fn prep, struct engine_result *res)
{
	char out_path[] = "/tmp/ipcbench-test-out.XXXXXX";
	char err_path[] = "/tmp/ipcbench-test-err.XXXXXX";
	int out_fd, err_fd, status;
	bool signalled = false;
	double t0;
	pid_t pid, w;

	memset(res, 0, sizeof(*res));
	out_fd = mkstemp(out_path);
	err_fd = mkstemp(err_path);
	if (out_fd < 0 || err_fd < 0)
		return -errno;
	unlink(out_path);
	unlink(err_path);
	fflush(NULL);
	t0 = mono_s();
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		dup2(out_fd, STDOUT_FILENO);
		dup2(err_fd, STDERR_FILENO);
		if (prep && !prep())
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (signal_after > 0 && !signalled && mono_s() - t0 >= signal_after) {
			kill(pid, sig);
			signalled = true;
		}
		if (mono_s() - t0 > limit_s) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			res->status = -1;
			goto out_read;
		}
		usleep(2000);
	}
	res->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out_read:
	res->seconds = mono_s() - t0;
	res->out = slurp_fd(out_fd);
	res->err = slurp_fd(err_fd);
	close(out_fd);
	close(err_fd);
	return 0;
}

static inline int engine_run(char *const argv[], double limit_s, struct engine_result *res)
{
	return engine_run_full(argv, limit_s, 0, 0, NULL, res);
}

static inline void engine_result_free(struct engine_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}

/* The engine skipped (exit 77): pass its reason on, as the test's own skip. */
static inline bool t_skipped(const struct engine_result *res)
{
	if (res->status != EXIT_SKIP)
		return false;
	printf("skip: %s", res->err);
	return true;
}

/* Print why a test failed, with what the engine said. */
static inline void t_fail(const struct engine_result *res, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (res) {
		fprintf(stderr, "  exit %d after %.2f s\n  stdout: %.2000s\n  stderr: %.2000s\n",
			res->status, res->seconds, res->out ? res->out : "",
			res->err ? res->err : "");
	}
}

/* The value of metric @key in one JSON object: "key": {"value": N, ... */
static inline bool json_metric(const char *json, const char *key, double *v)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": {\"value\": ", key);
	p = strstr(json, pat);
	if (!p)
		return false;
	*v = strtod(p + strlen(pat), NULL);
	return true;
}

/* The number after "key": at or after @from (first match). */
static inline bool json_number(const char *from, const char *key, double *v)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(from, pat);
	if (!p)
		return false;
	*v = strtod(p + strlen(pat), NULL);
	return true;
}

static inline int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * Processes whose parent is us, alive or zombie.  With the test a child
 * subreaper, anything the engine failed to reap lands here.
 */
/*
 * Run "engine workload args..." and expect a usage error: exit 2, nothing on
 * stdout, and exactly one line on stderr that contains @names.
 */
static inline int expect_usage_error(const char *engine, const char *workload,
				     const char *const *args, const char *names)
{
	char *argv[16] = { (char *)engine, (char *)workload };
	struct engine_result res;
	unsigned int j;
	int ret = EXIT_OK;

	for (j = 0; args[j] && j + 3 < sizeof(argv) / sizeof(argv[0]); j++)
		argv[2 + j] = (char *)args[j];
	if (engine_run(argv, 5, &res))
		return EXIT_FAIL;
	if (res.status != 2 || count_lines(res.err) != 1 || !strstr(res.err, names) ||
	    res.out[0]) {
		t_fail(&res, "%s %s: want exit 2 and one line naming %s", workload, args[0],
		       names);
		ret = EXIT_FAIL;
	}
	engine_result_free(&res);
	return ret;
}

static inline int count_our_children(bool include_zombies)
{
	char path[64], buf[512], state, *p;
	int n = 0, ppid;
	struct dirent *de;
	FILE *f;
	DIR *d;

	d = opendir("/proc");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", atoi(de->d_name));
		f = fopen(path, "r");
		if (!f)
			continue;
		buf[0] = '\0';
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid != getpid())
			continue;
		if (state == 'Z' && !include_zombies)
			continue;
		n++;
	}
	closedir(d);
	return n;
}

static inline bool have_stress_ng(void)
{
	return system("command -v stress-ng >/dev/null 2>&1") == 0;
}

#endif /* ENGINE_RUN_H */
