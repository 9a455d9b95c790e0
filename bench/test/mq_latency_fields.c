// SPDX-License-Identifier: MIT
/*
 * mq-latency reports send and receive ns per message for the empty and the
 * full queue; --priorities all gives one object per pattern, in order.
 */
#include "engine_run.h"

static const char *const metrics[] = {
	"empty_send_ns", "empty_recv_ns", "full_send_ns", "full_recv_ns",
};
static const char *const patterns[] = { "constant", "increasing", "decreasing", "random" };

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "mq-latency", "--json",
			 "--priorities", "all", "--count", "2000", NULL };
	struct engine_result res;
	char *line, *next;
	unsigned int i, k;
	int ret = EXIT_FAIL;

	if (engine_run(args, 10, &res))
		return EXIT_FAIL;
	if (t_skipped(&res)) {
		ret = EXIT_SKIP;
		goto out;
	}
	if (res.status != 0 || count_lines(res.out) != 4) {
		t_fail(&res, "want exit 0 and 4 objects");
		goto out;
	}
	for (i = 0, line = res.out; i < 4; i++, line = next + 1) {
		char pat[64];

		next = strchr(line, '\n');
		*next = '\0';
		snprintf(pat, sizeof(pat), "\"priorities\": \"%s\"", patterns[i]);
		if (!strstr(line, pat)) {
			t_fail(&res, "object %u is not %s", i, patterns[i]);
			goto out;
		}
		for (k = 0; k < 4; k++) {
			double v;

			if (!json_metric(line, metrics[k], &v) || !(v > 0) || v > 1e8) {
				t_fail(&res, "%s: %s missing or absurd", patterns[i], metrics[k]);
				goto out;
			}
		}
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
