// SPDX-License-Identifier: MIT
/*
 * pipe-sweep --sweep emits one result per cell of the seed's matrix,
 * writers {1,2,5} x readers {1,5,10}, each with its bytes conserved.
 */
#include "engine_run.h"

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "pipe-sweep", "--json", "--sweep",
			 "--duration", "0.1", NULL };
	static const int writers[] = { 1, 2, 5 }, readers[] = { 1, 5, 10 };
	struct engine_result res;
	double written, read;
	char want[96];
	const char *line;
	int i, j, ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status != 0 || count_lines(res.out) != 9) {
		t_fail(&res, "expected 9 JSON lines and exit 0");
		goto out;
	}
	line = res.out;
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 3; j++) {
			snprintf(want, sizeof(want), "\"params\": {\"writers\": %d, \"readers\": %d,",
				 writers[i], readers[j]);
			if (strncmp(strstr(line, "\"params\""), want, strlen(want))) {
				t_fail(&res, "cell %d: expected %s", i * 3 + j, want);
				goto out;
			}
			if (!json_metric(line, "bytes_written", &written) ||
			    !json_metric(line, "bytes_read", &read) || written != read) {
				t_fail(&res, "cell %d: bytes not conserved", i * 3 + j);
				goto out;
			}
			line = strchr(line, '\n') + 1;
		}
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
