// SPDX-License-Identifier: MIT
/*
 * --memory-pressure works whatever the working directory: stress-ng refuses to
 * start in one it cannot write (a lab guest's read-only checkout), so the
 * engine gives it a temporary directory of its own.  The test runs the engine
 * as nobody in a directory nobody may not write (as root it could write any).
 */
#include "engine_run.h"

static char dir[] = "/tmp/ipcbench-test-cwd.XXXXXX";
static char engine[sizeof(dir) + 16];

/* A copy of the engine in dir, where nobody may run it: the checkout's own may sit below a
 * directory only root can enter (a fresh clone in a mkdtemp folder). */
static bool copy_engine(const char *from)
{
	char buf[65536];
	ssize_t n = 0;
	int in, out;
	bool ok;

	snprintf(engine, sizeof(engine), "%s/ipcbench", dir);
	in = open(from, O_RDONLY);
	out = open(engine, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	ok = in >= 0 && out >= 0;
	while (ok && (n = read(in, buf, sizeof(buf))) > 0)
		ok = write(out, buf, n) == n;
	ok = ok && n == 0;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

static bool as_nobody_in_a_dir_it_cannot_write(void)
{
	return chdir(dir) == 0 && setgid(65534) == 0 && setuid(65534) == 0 &&
	       access(".", W_OK) != 0;
}

int main(int argc, char **argv)
{
	char *args[] = { engine, "pipe-sweep", "--json",
			 "--memory-pressure", "--vm", "1", "--vm-bytes", "32M",
			 "--count", "20", "--timeout", "60", NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (!have_stress_ng()) {
		printf("stress-ng is not installed\n");
		return EXIT_SKIP;
	}
	if (geteuid() != 0) {
		printf("needs root, to become nobody\n");
		return EXIT_SKIP;
	}
	if (!mkdtemp(dir) || chmod(dir, 0755))
		return EXIT_FAIL;
	if (!copy_engine(engine_path(argc, argv))) {
		printf("cannot copy the engine to %s: %s\n", dir, strerror(errno));
		goto out_dir;
	}
	if (engine_run_full(args, 90, 0, 0, as_nobody_in_a_dir_it_cannot_write, &res))
		goto out_dir;
	if (res.status != 0 || !strstr(res.out, "\"memory_pressure\": \"stress-ng pid")) {
		t_fail(&res, "expected a sample under pressure, run from a directory it cannot write");
		goto out;
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
out_dir:
	unlink(engine);
	rmdir(dir);
	return ret;
}
