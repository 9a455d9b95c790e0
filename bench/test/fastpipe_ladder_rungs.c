// SPDX-License-Identifier: MIT
/*
 * fastpipe --ladder emits the post's five rungs, in order, one JSON object
 * each, with the modes each rung stands for, the post's buffer placement
 * (16 bytes past a page as its malloc gave, 2 MiB aligned for huge pages)
 * and a positive GiB/s.
 */
#include "engine_run.h"

static const struct {
	const char *rung, *write, *read;
	bool huge, busy;
} rungs[] = {
	{ "write-read", "write", "read", false, false },
	{ "vmsplice-read", "vmsplice", "read", false, false },
	{ "vmsplice-splice", "vmsplice", "splice", false, false },
	{ "huge-pages", "vmsplice", "splice", true, false },
	{ "busy-loop", "vmsplice", "splice", true, true },
};

static bool has(const char *line, const char *key, const char *val)
{
	char pat[128];

	snprintf(pat, sizeof(pat), "\"%s\": %s", key, val);
	return strstr(line, pat) != NULL;
}

int main(int argc, char **argv)
{
	char *args[] = { (char *)engine_path(argc, argv), "fastpipe", "--ladder", "--json",
			 "--duration", "0.2", NULL };
	struct engine_result res;
	char *line, *next;
	unsigned int i;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (t_skipped(&res)) {
		ret = EXIT_SKIP;
		goto out;
	}
	if (res.status != 0 || count_lines(res.out) != 5) {
		t_fail(&res, "want 5 result lines and exit 0");
		goto out;
	}
	for (i = 0, line = res.out; i < 5; i++, line = next + 1) {
		char val[64];
		double gib;

		next = strchr(line, '\n');
		*next = '\0';
		snprintf(val, sizeof(val), "\"%s\"", rungs[i].rung);
		if (!has(line, "rung", val)) {
			t_fail(&res, "line %u is not rung %s", i + 1, rungs[i].rung);
			goto out;
		}
		snprintf(val, sizeof(val), "\"%s\"", rungs[i].write);
		if (!has(line, "write", val)) {
			t_fail(&res, "rung %s: write mode is not %s", rungs[i].rung, rungs[i].write);
			goto out;
		}
		snprintf(val, sizeof(val), "\"%s\"", rungs[i].read);
		if (!has(line, "read", val) ||
		    !has(line, "huge_pages", rungs[i].huge ? "true" : "false") ||
		    !has(line, "busy_loop", rungs[i].busy ? "true" : "false")) {
			t_fail(&res, "rung %s: wrong read/huge_pages/busy_loop", rungs[i].rung);
			goto out;
		}
		if (!has(line, "buf_offset", rungs[i].huge ? "0" : "16")) {
			t_fail(&res, "rung %s: buf_offset is not the post's %s", rungs[i].rung,
			       rungs[i].huge ? "0" : "16");
			goto out;
		}
		if (rungs[i].huge && !strstr(line, "\"huge_pages\": \"writer AnonHugePages")) {
			t_fail(&res, "rung %s: no huge-page verdict in notes", rungs[i].rung);
			goto out;
		}
		if (!json_metric(line, "throughput", &gib) || !(gib > 0)) {
			t_fail(&res, "rung %s: no positive throughput", rungs[i].rung);
			goto out;
		}
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}
