// SPDX-License-Identifier: MIT
/*
 * pipe_many_writers_readers: many writers and many readers on each of
 * several pipes, all blocking, all finish, and every message arrives once.
 *
 * 10 groups, each one pipe with 4 writer and 4 reader processes, as
 * hackbench's pipe mode shares a pipe among senders and receivers: each
 * writer sends 2000 messages of 100 bytes (atomic writes), readers read one
 * message per read() until EOF.  This is the load that made upstream Linux
 * hang when a writer read ->head and ->tail apart and slept on an empty
 * pipe (fixed in 6.14): a hang here is a watchdog failure.  Every message
 * carries its writer and sequence number; the readers mark them in shared
 * memory, and each writer's messages must all arrive, each once.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ct.h"

#define GROUPS		10
#define WRITERS		4
#define READERS	4
#define MESSAGES	2000
#define MSG_SIZE	100

struct msg {
	uint32_t writer;	/* group * WRITERS + writer */
	uint32_t seq;
	uint64_t check;
	uint8_t pad[MSG_SIZE - 16];
};

struct tally {
	atomic_uint count;
	atomic_uint dup;
	atomic_uint bad;
	atomic_uchar seen[(MESSAGES + 7) / 8];
};

static struct tally *tally;	/* GROUPS * WRITERS, shared */
static int pipes[GROUPS][2];

struct role {
	int group;
	int index;
};

static void keep_only(int group, int end)
{
	int g;

	for (g = 0; g < GROUPS; g++) {
		close(pipes[g][!end]);
		if (g != group)
			close(pipes[g][end]);
	}
}

static int writer(void *arg)
{
	const struct role *ro = arg;
	struct msg m;
	uint32_t id = ro->group * WRITERS + ro->index;
	uint32_t s;

	keep_only(ro->group, 1);
	memset(&m, 0, sizeof(m));
	m.writer = id;
	for (s = 0; s < MESSAGES; s++) {
		m.seq = s;
		m.check = ct_hash(&m, 8, id);
		if (write(pipes[ro->group][1], &m, sizeof(m)) != sizeof(m))
			return 1;
	}
	return 0;
}

static int reader(void *arg)
{
	const struct role *ro = arg;
	struct msg m;
	ssize_t n;

	keep_only(ro->group, 0);
	for (;;) {
		n = read(pipes[ro->group][0], &m, sizeof(m));
		if (n == 0)
			return 0;
		if (n != sizeof(m)) {
			ct_log("group %d: read returned %zd (%s)", ro->group, n,
			       n < 0 ? strerror(errno) : "short");
			return 1;
		}
		if (m.writer / WRITERS != (uint32_t)ro->group ||
		    m.check != ct_hash(&m, 8, m.writer) || m.seq >= MESSAGES) {
			atomic_fetch_add(&tally[ro->group * WRITERS].bad, 1);
			continue;
		}
		atomic_fetch_add(&tally[m.writer].count, 1);
		if (atomic_fetch_or(&tally[m.writer].seen[m.seq / 8], 1u << (m.seq % 8)) &
		    (1u << (m.seq % 8)))
			atomic_fetch_add(&tally[m.writer].dup, 1);
	}
}

int main(void)
{
	static struct role roles[GROUPS][WRITERS + READERS];
	pid_t pids[GROUPS * (WRITERS + READERS)];
	int g, i, n = 0, status;

	ct_watchdog(120, "pipe_many_writers_readers: readers and writers stopped");
	tally = mmap(NULL, GROUPS * WRITERS * sizeof(*tally), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (tally == MAP_FAILED)
		ct_fatal("mmap: %m");
	for (g = 0; g < GROUPS; g++)
		if (pipe(pipes[g]))
			ct_fatal("pipe: %m");
	for (g = 0; g < GROUPS; g++) {
		for (i = 0; i < WRITERS + READERS; i++) {
			roles[g][i].group = g;
			roles[g][i].index = i < WRITERS ? i : i - WRITERS;
			pids[n] = ct_spawn(i < WRITERS ? writer : reader, &roles[g][i]);
			if (pids[n] < 0)
				ct_fatal("fork: %s", strerror(-pids[n]));
			n++;
		}
	}
	for (g = 0; g < GROUPS; g++) {
		close(pipes[g][0]);
		close(pipes[g][1]);
	}
	for (i = 0; i < n; i++) {
		status = ct_wait(pids[i]);
		ct_expect(status == 0, "process %d of %d failed (status %#x)", i, n, status);
	}
	for (i = 0; i < GROUPS * WRITERS; i++) {
		ct_expect(atomic_load(&tally[i].bad) == 0, "group %d: %u corrupt messages",
			  i / WRITERS, atomic_load(&tally[i].bad));
		ct_expect(atomic_load(&tally[i].count) == MESSAGES &&
			  atomic_load(&tally[i].dup) == 0,
			  "writer %d: %u messages arrived, %u twice; want each of %d once",
			  i, atomic_load(&tally[i].count), atomic_load(&tally[i].dup),
			  MESSAGES);
	}
	return ct_result();
}
