// SPDX-License-Identifier: MIT
/*
 * copies.c: running N copies of a workload at once, as UnixBench's --copies
 * does: a start gate that releases every forked copy at the same moment, and
 * the sum of the copies' rates once they are reaped; copies_run() does the
 * lot around a workload's per-process function.
 *
 * The gate is two pipes.  Each child writes one byte into "ready" when it is
 * set up and then blocks reading "go"; the parent collects one byte per
 * child and closes its end of "go", and the EOF wakes them all together.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ipcbench.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int gate_open(struct start_gate *g)
{
	int ret;

	g->go[0] = g->go[1] = g->ready[0] = g->ready[1] = -1;
	g->place = NULL;
	if (pipe(g->go) < 0)
		return -errno;
	if (pipe(g->ready) < 0) {
		ret = -errno;
		goto out_close_go;
	}
	return 0;

out_close_go:
	close_fd(&g->go[0]);
	close_fd(&g->go[1]);
	return ret;
}

int gate_child_ready_wait(struct start_gate *g)
{
	char c = 0;

	/* a child holding the go pipe's write end would never see its EOF */
	close_fd(&g->go[1]);
	close_fd(&g->ready[0]);
	if (write(g->ready[1], &c, 1) != 1)
		return -EPIPE;
	/*
	 * Let go of ready at once: when a copy dies before reporting, the
	 * parent then sees EOF instead of waiting on those still blocked here.
	 */
	close_fd(&g->ready[1]);
	if (read(g->go[0], &c, 1) != 0)
		return -EPIPE;
	close_fd(&g->go[0]);
	/* released: the measured work starts here, on the CPU the child is on now */
	place_start(g->place);
	return 0;
}

int gate_release(struct start_gate *g, int n)
{
	char c;
	int i;

	/* drop our write end, or a dead child would leave us waiting forever */
	close_fd(&g->ready[1]);
	for (i = 0; i < n; i++)
		if (read(g->ready[0], &c, 1) != 1)
			return -EPIPE;
	close_fd(&g->go[1]);
	return 0;
}

void gate_close(struct start_gate *g)
{
	close_fd(&g->go[0]);
	close_fd(&g->go[1]);
	close_fd(&g->ready[0]);
	close_fd(&g->ready[1]);
}

struct copy_result *copies_alloc(int n)
{
	struct copy_result *res;
	int i;

	res = mmap(NULL, sizeof(*res) * n, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	for (i = 0; i < n; i++)
		hist_init(&res[i].h);
	return res;
}

void copies_free(struct copy_result *res, int n)
{
	munmap(res, sizeof(*res) * n);
}

double copies_sum(struct copy_result *res, int n, double *ops,
		  char *per_copy, size_t size)
{
	double total = 0, rate;
	size_t len = 0;
	int i;

	*ops = 0;
	if (size)
		per_copy[0] = '\0';
	for (i = 0; i < n; i++) {
		/* UnixBench's score: each copy's rate over its own clock, summed */
		rate = res[i].ops / (res[i].elapsed_ns / 1e9);
		if (i)
			hist_merge(&res[0].h, &res[i].h);
		total += rate;
		*ops += res[i].ops;
		if (len < size)
			len += snprintf(per_copy + len, size - len, "%s%.0f",
					i ? "," : "", rate);
	}
	return total;
}

/* What each child of copies_run() starts from. */
struct copies_child {
	const struct copies_run *run;
	struct start_gate *gate;
	int proc;
};

static int copies_child_main(void *arg)
{
	struct copies_child *ch = arg;
	struct place *place = ch->run->places ? &ch->run->places[ch->proc] : NULL;
	int ret;

	/* the gate is this child's own copy: it may point at the child's own slot */
	ch->gate->place = place;
	ret = ch->run->proc_main(ch->run->arg, ch->proc, ch->gate);
	place_end(place);
	return ret;
}

int copies_run(const struct copies_run *run, struct counters *cnt, double *rate,
	       double *ops, char *per_copy, size_t size)
{
	int nr = run->copies * run->procs_per_copy, i, err, ret = EXIT_FAIL;
	struct copies_child child = { .run = run };
	struct start_gate gate;
	pid_t pid[nr];

	err = gate_open(&gate);
	if (err < 0) {
		fail_reason("pipe: %s", strerror(-err));
		return EXIT_FAIL;
	}
	child.gate = &gate;
	counters_start(cnt);
	for (i = 0; i < nr; i++) {
		/* one struct will do: each child gets its own copy at the fork */
		child.proc = i;
		pid[i] = spawn(copies_child_main, &child);
		if (pid[i] < 0) {
			fail_reason("fork: %s", strerror(-pid[i]));
			goto out;
		}
	}
	if (run->forked)
		run->forked(run->arg);
	if (gate_release(&gate, nr) < 0) {
		fail_reason("a %s died before starting", run->roles ? "process" : "copy");
		goto out;
	}
	for (i = 0; i < nr; i++) {
		int st = reap(pid[i]), per = run->procs_per_copy;

		if (!st)
			continue;
		if (run->roles)
			fail_reason("%s of copy %d exited with status %d",
				    run->roles[i % per], i / per, st);
		else
			fail_reason("copy %d exited with status %d", i, st);
		goto out;
	}
	counters_stop(cnt);
	*rate = copies_sum(run->res, run->copies, ops, per_copy, size);
	ret = EXIT_OK;
out:
	if (ret != EXIT_OK)
		kill_children();
	gate_close(&gate);
	return ret;
}
