// SPDX-License-Identifier: MIT
/*
 * Each side says where it ran: pinned with --cpus A,B, pipe-context's
 * initiator starts and ends on A and its responder on B, and a side pinned to
 * one CPU is never migrated.  fastpipe's and pipe-sweep's writer and reader say
 * the same.
 */
#include "engine_run.h"

/* The side whose "role" is @role: cpu_start, cpu_end and migrations (-1 for null). */
static bool side_of(const char *json, const char *role, double v[3])
{
	static const char *const keys[] = { "cpu_start", "cpu_end", "migrations" };
	char pat[64];
	const char *p, *sides = strstr(json, "\"sides\": [");
	int i;

	snprintf(pat, sizeof(pat), "{\"role\": \"%s\"", role);
	p = sides ? strstr(sides, pat) : NULL;
	if (!p)
		return false;
	for (i = 0; i < 3; i++) {
		char k[32];
		const char *q;

		snprintf(k, sizeof(k), "\"%s\": ", keys[i]);
		q = strstr(p, k);
		if (!q)
			return false;
		q += strlen(k);
		v[i] = strncmp(q, "null", 4) ? strtod(q, NULL) : -1;
	}
	return true;
}

static int check(const char *engine, const char *workload, const char *extra,
		 const char *const roles[2], int cpu_a, int cpu_b)
{
	char cpus[16];
	char *args[] = { (char *)engine, (char *)workload, "--json", "--cpus", cpus,
			 (char *)extra, NULL };
	struct engine_result res;
	const int want[2] = { cpu_a, cpu_b };
	int ret = EXIT_FAIL, i;

	snprintf(cpus, sizeof(cpus), "%d,%d", cpu_a, cpu_b);
	if (!extra)
		args[5] = NULL;
	if (engine_run(args, 30, &res))
		return EXIT_FAIL;
	if (res.status != 0) {
		t_fail(&res, "%s --cpus %s failed", workload, cpus);
		goto out;
	}
	for (i = 0; i < 2; i++) {
		double v[3];

		if (!side_of(res.out, roles[i], v)) {
			t_fail(&res, "%s: no side %s in \"sides\"", workload, roles[i]);
			goto out;
		}
		if (v[0] != want[i] || v[1] != want[i]) {
			t_fail(&res, "%s --cpus %s: %s ran %g -> %g, pinned to %d", workload,
			       cpus, roles[i], v[0], v[1], want[i]);
			goto out;
		}
		/* null where the kernel has no /proc/thread-self/sched */
		if (v[2] > 0) {
			t_fail(&res, "%s: %s pinned, yet %g migrations", workload, roles[i], v[2]);
			goto out;
		}
	}
	ret = EXIT_OK;
out:
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	static const char *const pc[2] = { "initiator", "responder" };
	static const char *const fp[2] = { "writer", "reader" };

	if (check(engine, "pipe-context", "--count=2000", pc, 0, 0))
		return EXIT_FAIL;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return EXIT_OK;
	if (check(engine, "pipe-context", "--count=2000", pc, 0, 1) ||
	    check(engine, "pipe-context", "--count=2000", pc, 1, 0) ||
	    check(engine, "fastpipe", "--duration=0.1", fp, 0, 1) ||
	    check(engine, "pipe-sweep", "--count=2000", fp, 1, 0))
		return EXIT_FAIL;
	return EXIT_OK;
}
