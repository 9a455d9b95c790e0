// SPDX-License-Identifier: MIT
/*
 * --memory-pressure works whatever the working directory: stress-ng refuses to
 * start in one it cannot write (a lab guest's read-only checkout), so the
 * engine gives it a temporary directory of its own.  The test runs the engine
 * as nobody in a directory nobody may not write (as root it could write any).
 */
#include "engine_run.h"

static char dir[] = "/tmp/ipcbench-test-cwd.XXXXXX";

static bool as_nobody_in_a_dir_it_cannot_write(void)
{
	return chdir(dir) == 0 && setgid(65534) == 0 && setuid(65534) == 0 &&
	       access(".", W_OK) != 0;
}

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json",
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
	rmdir(dir);
	return ret;
}
