// SPDX-License-Identifier: MIT
/*
 * Impossible values for pipe-sweep and token-ring exit 2 with one line on
 * stderr that names the problem, and start nothing.  The pipe size above
 * fs/pipe-max-size case runs the engine as "nobody" when the test is root.
 */
#include <grp.h>
#include <pwd.h>

#include "engine_run.h"

struct bad_case {
	const char *args[8];
	const char *names;	/* the message must contain this */
};

static const struct bad_case cases[] = {
	{ { "pipe-sweep", "--writers", "0" }, "--writers" },
	{ { "pipe-sweep", "--readers", "0" }, "--readers" },
	{ { "pipe-sweep", "--duration", "-1" }, "--duration" },
	{ { "pipe-sweep", "--duration", "0" }, "--duration" },
	{ { "pipe-sweep", "--write-size", "0" }, "--write-size" },
	{ { "pipe-sweep", "--write-size", "12Q" }, "--write-size" },
	{ { "pipe-sweep", "--pipe-size", "-4096" }, "--pipe-size" },
	{ { "pipe-sweep", "--count", "10", "--duration", "1" }, "--count" },
	{ { "pipe-sweep", "--memory-pressure", "--vm", "0" }, "--vm" },
	{ { "pipe-sweep", "--memory-pressure", "--vm-bytes", "150%" }, "--vm-bytes" },
	{ { "pipe-sweep", "--memory-pressure", "--vm-bytes", "lots" }, "--vm-bytes" },
	{ { "pipe-sweep", "--writers" }, "--writers" },
	{ { "token-ring", "--procs", "0" }, "--procs" },
	{ { "token-ring", "--transfers", "0" }, "--transfers" },
	{ { "token-ring", "--transfers", "-5" }, "--transfers" },
	{ { "token-ring", "--duration", "-1" }, "--duration" },
	{ { "token-ring", "--duration", "1", "--transfers", "10" }, "--transfers" },
	{ { "token-ring", "--packet" }, "--no-decoy" },
	{ { "pipe-sweep", "--packet", "--sweep", "--count", "0" }, "--count" },
};

static bool become_nobody(void)
{
	struct passwd *pw = getpwnam("nobody");

	if (!pw)
		return false;
	return setgroups(0, NULL) == 0 && setgid(pw->pw_gid) == 0 &&
	       setuid(pw->pw_uid) == 0;
}

static int check(const char *engine, const char *const *args, const char *names,
		 engine_prep_fn prep)
{
	char *argv[12] = { (char *)engine };
	struct engine_result res;
	int i, ret = EXIT_FAIL;

	for (i = 0; args[i]; i++)
		argv[i + 1] = (char *)args[i];
	if (engine_run_full(argv, 10, 0, 0, prep, &res))
		return EXIT_FAIL;
	if (prep && res.status == 127) {
		ret = EXIT_SKIP;	/* nobody cannot run the engine from here */
		goto out;
	}
	if (res.status != 2 || count_lines(res.err) != 1 || !strstr(res.err, names) ||
	    res.out[0]) {
		t_fail(&res, "%s %s: expected exit 2 and one line naming %s", args[0],
		       args[1], names);
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
	static const char *const too_big[] = { "pipe-sweep", "--pipe-size", "1G", NULL };
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (check(engine, cases[i].args, cases[i].names, NULL))
			return EXIT_FAIL;
	/* above pipe-max-size without root (1 GiB is above any default) */
	ret = check(engine, too_big, "pipe-max-size", geteuid() == 0 ? become_nobody : NULL);
	if (ret == EXIT_FAIL)
		return EXIT_FAIL;
	if (ret == EXIT_SKIP)
		printf("pipe-size case skipped: nobody cannot execute %s\n", engine);
	return EXIT_OK;
}
