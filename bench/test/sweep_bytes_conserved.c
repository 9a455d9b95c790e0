// SPDX-License-Identifier: MIT
/*
 * pipe-sweep reads every byte it writes: bytes_read == bytes_written, for a
 * write size that is neither a page multiple nor smaller than the pipe, in
 * process mode and in thread mode.
 */
#include "engine_run.h"

/* @mode: NULL for processes, "--threads" for threads */
static int check(const char *engine, const char *mode, const char *writers,
		 const char *readers, const char *write_size)
{
	char *argv[] = { (char *)engine, "pipe-sweep", "--json", "--duration", "0.5",
			 "--writers", (char *)writers, "--readers", (char *)readers,
			 "--write-size", (char *)write_size, "--pipe-size", "64K",
			 (char *)mode, NULL };
	const char *name = mode ? mode : "processes";
	struct engine_result res;
	double written, read, writes, size = atof(write_size);
	int ret = EXIT_FAIL;

	if (engine_run(argv, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "%s: exit status", name);
		goto out;
	}
	if (!json_metric(res.out, "bytes_written", &written) ||
	    !json_metric(res.out, "bytes_read", &read) ||
	    !json_metric(res.out, "writes", &writes)) {
		t_fail(&res, "%s: metrics missing", name);
		goto out;
	}
	if (written <= 0 || written != read) {
		t_fail(&res, "%s: written %.0f, read %.0f", name, written, read);
		goto out;
	}
	if (written != writes * size) {
		t_fail(&res, "%s: %.0f bytes written is not %.0f writes x %.0f", name,
		       written, writes, size);
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

	/* 100001 bytes: not a page multiple, larger than the 64 KiB pipe */
	if (check(engine, NULL, "2", "3", "100001"))
		return EXIT_FAIL;
	if (check(engine, "--threads", "3", "2", "3001"))
		return EXIT_FAIL;
	return EXIT_OK;
}
