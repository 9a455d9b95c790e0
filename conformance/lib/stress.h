/* SPDX-License-Identifier: MIT */
/*
 * stress: what the two integrity stress tests share.
 *
 * Writers (senders) and readers (receivers) are processes.  They share one
 * anonymous MAP_SHARED area: counters, a stop flag, the first failure
 * message, and a bitmap per writer with one bit per record sequence number,
 * so that a record received twice is caught when it happens and a record
 * never received is caught at the end.
 *
 * The parent supervises: it lets the writers run for --duration seconds,
 * tells them to stop, and then waits for everyone to finish.  Any stretch of
 * --stall seconds without progress (no record sent or received while work
 * is pending) is a lost wakeup or a hang: the parent prints what every child
 * is doing (state and wchan from /proc), kills them all and fails.
 */
#ifndef CT_STRESS_H
#define CT_STRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define STRESS_MAX_PROCS	64
/* Records per writer we can account for; writers stop there (logged). */
#define STRESS_SEQ_BITS		(1u << 24)

struct stress_opts {
	double duration;	/* seconds the writers run */
	int writers;
	int readers;
	long record_size;	/* 0: the test's default */
	long pipe_size;		/* pipe: F_SETPIPE_SZ, 0 = default */
	long depth;		/* mqueue: mq_maxmsg */
	double stall;		/* seconds without progress that count as a hang */
	bool tolerate_enomem;	/* fault injection: ENOMEM is retried, not a failure */
	bool packet;		/* pipe: O_DIRECT packet mode */
	bool splice;		/* pipe: records go in and out through splice(2) */
	uint64_t seed;
};

struct stress_shared {
	atomic_int stop;		/* writers: finish the current record and exit */
	atomic_int failed;
	char why[512];			/* the first failure, set once */
	atomic_uint_fast64_t progress;	/* bumped on every record sent or received */
	atomic_uint_fast64_t sent[STRESS_MAX_PROCS];	/* records, per writer */
	atomic_uint_fast64_t received;
	atomic_uint_fast64_t bytes_sent, bytes_received;
	atomic_uint_fast64_t enomem_retries;	/* only with --tolerate-enomem */
	atomic_uint_fast64_t short_writes;	/* tolerated (continued) partial writes */
	atomic_uint_fast64_t capped;		/* writers that hit STRESS_SEQ_BITS */
	atomic_uchar *bitmap;		/* writers * STRESS_SEQ_BITS / 8 bytes */
};

/*
 * Parse the common options (see stress_usage()); prints one line and exits 2
 * on a usage error, prints help and exits 0 for --help.
 */
void stress_parse(int argc, char **argv, struct stress_opts *o, const char *prog,
		  const char *about);
/* The shared area, or exit EXIT_FAIL. */
struct stress_shared *stress_shared_new(int writers);
/* Record the first failure (any process) and return -1. */
int stress_fail(struct stress_shared *sh, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Mark (writer, seq) received; false if it already was (a duplicate). */
bool stress_mark(struct stress_shared *sh, int writer, uint64_t seq);
/* Every record writer @w sent was received once: returns the first missing seq or -1. */
int64_t stress_first_missing(struct stress_shared *sh, int w);

/*
 * Fork @writer(i) for i in [0, o->writers), then @reader(i) for i in
 * [0, o->readers), as tracked children; @pids gets the writers first, then
 * the readers, as stress_supervise() wants them.  With --tolerate-enomem a
 * failing fork is retried for a while; exits EXIT_FAIL when one still fails.
 */
void stress_start(const struct stress_opts *o, int (*writer)(void *), int (*reader)(void *),
		  pid_t *pids);
/*
 * The supervisor loop described above.  @pids holds the writers first, then
 * the readers.  @writers_done (may be NULL) runs once, in the parent, when
 * the last writer has exited: the mqueue test uses it to tell the readers
 * that no more messages will come.  Returns 0 when every child exited 0 in
 * time, -1 otherwise (with the reason logged).
 */
int stress_supervise(const struct stress_opts *o, struct stress_shared *sh,
		     pid_t *pids, int nr_writers, int nr_readers,
		     void (*writers_done)(void));
/*
 * Judge the run after stress_supervise() returned @ret: the first failure
 * a child recorded or, without one, a child that failed; then, if nothing
 * failed yet, every record each writer sent must have arrived.  @writer and
 * @record name them in the message ("sender", "message" for the mqueue
 * test).  Returns the number of records sent, for the test's own totals.
 */
uint64_t stress_check(struct stress_shared *sh, int ret, int nr_writers, const char *writer,
		      const char *record);

#endif /* CT_STRESS_H */
