// SPDX-License-Identifier: MIT
/*
 * ipcbench list --json is the registry a front end builds its cells from:
 * one line holding one JSON object, every workload ipcbench list prints, in
 * its order, each with its default counters (as the README states them), the
 * pipe-sweep grid and the fastpipe rungs with the exact args that older
 * results files carry.  ipcbench list --bogus is a usage error.
 */
#include <ctype.h>

#include "engine_run.h"

#define SCHEMA		"{\"schema\":\"ipcbench-list/1\","
#define NAME_KEY	"{\"name\":"
#define SWEEP		"\"sweep\":{\"writers\":[1,2,5],\"readers\":[1,5,10]}"

/* The five rungs and their args, as ipclab and older results spell them. */
static const char *const rung_args[][8] = {
	{ "write-read", "--write", "write", "--read", "read" },
	{ "vmsplice-read", "--write", "vmsplice", "--read", "read" },
	{ "vmsplice-splice", "--write", "vmsplice", "--read", "splice" },
	{ "huge-pages", "--write", "vmsplice", "--read", "splice", "--huge-pages" },
	{ "busy-loop", "--write", "vmsplice", "--read", "splice", "--huge-pages", "--busy-loop" },
};

#define NR_RUNGS	(sizeof(rung_args) / sizeof(rung_args[0]))
#define MAX_NAMES	32

/*
 * A JSON syntax check, enough to catch what a missing escape or a misplaced
 * comma in the writer would do; it returns the end of the value or NULL.
 */
static const char *json_value(const char *s, int depth);

static const char *json_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

static const char *json_string(const char *s)
{
	int i;

	if (*s++ != '"')
		return NULL;
	for (; *s != '"'; s++) {
		if ((unsigned char)*s < 0x20)
			return NULL;	/* a raw control character or the end */
		if (*s != '\\')
			continue;
		s++;
		if (*s == 'u') {
			for (i = 1; i <= 4; i++)
				if (!isxdigit((unsigned char)s[i]))
					return NULL;
			s += 4;
		} else if (!*s || !strchr("\"\\/bfnrt", *s)) {
			return NULL;
		}
	}
	return s + 1;
}

static const char *json_members(const char *s, char close, int depth)
{
	s = json_ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (close == '}') {
			s = json_string(json_ws(s));
			if (!s)
				return NULL;
			s = json_ws(s);
			if (*s++ != ':')
				return NULL;
		}
		s = json_value(s, depth + 1);
		if (!s)
			return NULL;
		s = json_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *s, int depth)
{
	static const char *const words[] = { "true", "false", "null" };
	unsigned int i;
	char *end;

	if (depth > 64)
		return NULL;
	s = json_ws(s);
	switch (*s) {
	case '"':
		return json_string(s);
	case '{':
		return json_members(s, '}', depth);
	case '[':
		return json_members(s, ']', depth);
	}
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strncmp(s, words[i], strlen(words[i])))
			return s + strlen(words[i]);
	if (*s != '-' && !isdigit((unsigned char)*s))
		return NULL;
	strtod(s, &end);
	return end;
}

/* Exactly one JSON object, then the newline that ends the output. */
static bool one_json_object(const char *s)
{
	s = json_ws(s);
	if (*s != '{')
		return false;
	s = json_value(s, 0);
	return s && !strcmp(json_ws(s), "\n");
}

/* The workload's object: from its {"name": up to the next workload's. */
static char *workload_object(const char *json, const char *name)
{
	char pat[128];
	const char *p, *end;

	snprintf(pat, sizeof(pat), NAME_KEY "\"%s\",", name);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	end = strstr(p + 1, NAME_KEY);
	return strndup(p, end ? (size_t)(end - p) : strlen(p));
}

/* The rung's args must be ones fastpipe takes (it stops at --help). */
static bool rung_args_accepted(const char *engine, const char *const *args)
{
	char *argv[12] = { (char *)engine, "fastpipe" };
	struct engine_result res;
	unsigned int j;
	bool ok;

	for (j = 1; args[j]; j++)
		argv[j + 1] = (char *)args[j];
	argv[j + 1] = "--help";
	if (engine_run(argv, 5, &res))
		return false;
	ok = res.status == 0;
	if (!ok)
		t_fail(&res, "fastpipe refuses rung %s's args", args[0]);
	engine_result_free(&res);
	return ok;
}

static bool check_ladder(const char *engine, const char *fastpipe)
{
	char want[2048];
	size_t n = 0;
	unsigned int i, j;

	n += snprintf(want + n, sizeof(want) - n, "\"ladder\":[");
	for (i = 0; i < NR_RUNGS; i++) {
		n += snprintf(want + n, sizeof(want) - n, "%s{\"rung\":\"%s\",\"args\":[",
			      i ? "," : "", rung_args[i][0]);
		for (j = 1; rung_args[i][j]; j++)
			n += snprintf(want + n, sizeof(want) - n, "%s\"%s\"", j > 1 ? "," : "",
				      rung_args[i][j]);
		n += snprintf(want + n, sizeof(want) - n, "]}");
	}
	snprintf(want + n, sizeof(want) - n, "]");
	if (!strstr(fastpipe, want)) {
		fprintf(stderr, "FAIL: fastpipe's ladder is not\n  %s\nin\n  %s\n", want, fastpipe);
		return false;
	}
	for (i = 0; i < NR_RUNGS; i++)
		if (!rung_args_accepted(engine, rung_args[i]))
			return false;
	return true;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	char *list_argv[] = { (char *)engine, "list", NULL };
	char *json_argv[] = { (char *)engine, "list", "--json", NULL };
	char *version_argv[] = { (char *)engine, "--version", NULL };
	static const char *const bogus[] = { "--bogus", NULL };
	struct engine_result list, json, version;
	char *names[MAX_NAMES], *obj = NULL, *line, *p, pat[128], ver[64];
	int i, nr_names = 0, ret = EXIT_FAIL;
	const char *at;

	if (engine_run(list_argv, 5, &list))
		return EXIT_FAIL;
	if (engine_run(json_argv, 5, &json) || engine_run(version_argv, 5, &version)) {
		engine_result_free(&list);
		return EXIT_FAIL;
	}
	if (list.status != 0 || !list.out[0]) {
		t_fail(&list, "ipcbench list: want exit 0 and the workloads");
		goto out;
	}
	for (line = list.out; *line && nr_names < MAX_NAMES; line = p + 1) {
		p = strchr(line, '\n');
		if (!p)
			break;
		*p = '\0';
		names[nr_names++] = strndup(line, strcspn(line, " "));
	}

	if (json.status != 0 || json.err[0] || count_lines(json.out) != 1 ||
	    !one_json_object(json.out)) {
		t_fail(&json, "want exit 0, nothing on stderr and one JSON object on one line");
		goto out_names;
	}
	if (strncmp(json.out, SCHEMA, strlen(SCHEMA))) {
		t_fail(&json, "does not start with %s", SCHEMA);
		goto out_names;
	}
	if (sscanf(version.out, "ipcbench %63s", ver) != 1) {
		t_fail(&version, "no version");
		goto out_names;
	}
	snprintf(pat, sizeof(pat), "\"version\":\"%s\",\"workloads\":[" NAME_KEY, ver);
	if (!strstr(json.out, pat)) {
		t_fail(&json, "want %s", pat);
		goto out_names;
	}

	/* every workload of the text list, in its order, and no other */
	for (i = 0, at = json.out; (at = strstr(at, NAME_KEY)); i++, at++)
		;
	if (i != nr_names) {
		t_fail(&json, "%d workloads, ipcbench list prints %d", i, nr_names);
		goto out_names;
	}
	for (i = 0, at = json.out; i < nr_names; i++) {
		char want[64];

		snprintf(pat, sizeof(pat), NAME_KEY "\"%s\",\"summary\":\"", names[i]);
		at = strstr(at, pat);
		if (!at) {
			t_fail(&json, "workload %s missing or out of order", names[i]);
			goto out_names;
		}
		free(obj);
		obj = workload_object(json.out, names[i]);
		/* README: the scheduler's workload counts with perf, the rest do not */
		snprintf(want, sizeof(want), "\"counters\":\"%s\"",
			 strcmp(names[i], "token-ring") ? "rusage" : "perf");
		if (!obj || !strstr(obj, want)) {
			t_fail(&json, "%s: want %s", names[i], want);
			goto out_names;
		}
	}

	free(obj);
	obj = workload_object(json.out, "pipe-sweep");
	if (!obj || !strstr(obj, SWEEP)) {
		t_fail(&json, "pipe-sweep: want %s", SWEEP);
		goto out_names;
	}
	free(obj);
	obj = workload_object(json.out, "fastpipe");
	if (!obj || !check_ladder(engine, obj))
		goto out_names;

	ret = expect_usage_error(engine, "list", bogus, "--bogus");
out_names:
	free(obj);
	while (nr_names--)
		free(names[nr_names]);
out:
	engine_result_free(&list);
	engine_result_free(&json);
	engine_result_free(&version);
	return ret;
}
