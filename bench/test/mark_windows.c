// SPDX-License-Identifier: MIT
/*
 * With IPCBENCH_MARK=FILE every measured section is marked at both ends for the
 * lab's QEMU plugin: the file gains one byte per mark, and each sample names
 * the window its start mark opened (the marks before it + 1).  Without the
 * variable a sample names no window and no file appears.
 */
#include "engine_run.h"

#include <sys/stat.h>

static int sample(char *engine, double *window, bool *has_window)
{
	char *args[] = { engine, "pipe-throughput", "--json", "--count", "200", NULL };
	struct engine_result res;
	int ret = EXIT_FAIL;

	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "pipe-throughput --count 200 failed");
		goto out;
	}
	*has_window = json_number(res.out, "window", window);
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}

static long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : st.st_size;
}

int main(int argc, char **argv)
{
	char *engine = (char *)engine_path(argc, argv);
	char path[] = "/tmp/ipcbench-marks-XXXXXX";
	double w1 = 0, w2 = 0, w0 = 0;
	bool h1, h2, h0;
	int fd = mkstemp(path), ret = EXIT_FAIL;

	if (fd < 0) {
		perror("mkstemp");
		return EXIT_FAIL;
	}
	close(fd);
	unlink(path);
	unsetenv("IPCBENCH_MARK");
	if (sample(engine, &w0, &h0) != EXIT_OK)
		return EXIT_FAIL;
	if (h0 || file_size(path) != -1) {
		fprintf(stderr, "without IPCBENCH_MARK: window %g, file size %ld\n", w0,
			file_size(path));
		return EXIT_FAIL;
	}
	setenv("IPCBENCH_MARK", path, 1);
	if (sample(engine, &w1, &h1) != EXIT_OK || sample(engine, &w2, &h2) != EXIT_OK)
		goto out;
	if (!h1 || !h2 || w1 != 1 || w2 != 3 || file_size(path) != 4) {
		fprintf(stderr, "windows %g and %g (want 1 and 3), %ld marks (want 4)\n",
			h1 ? w1 : -1, h2 ? w2 : -1, file_size(path));
		goto out;
	}
	ret = EXIT_OK;
out:
	unlink(path);
	return ret;
}
