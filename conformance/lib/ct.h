/* SPDX-License-Identifier: MIT */
/*
 * ct: the small helper every conformance test links against.
 *
 * A test is one program that checks one behaviour and exits EXIT_OK (0,
 * pass), EXIT_FAIL (1) or EXIT_SKIP (77): the engine's codes, from
 * bench/src/shared.h, as are write_full/read_full, rng_next and the sysctl
 * bookkeeping behind ct_sysctl_set.  The helper gives it:
 *  - expectations that print "# FAIL file:line: ..." and remember the failure,
 *  - a watchdog (alarm) that kills every tracked child and fails the test, so
 *    a lost wakeup becomes a failure instead of a hang,
 *  - tracked children that die with the test (PR_SET_PDEATHSIG),
 *  - sysctl changes that are put back on every exit path,
 *  - small utilities: checksums, a seeded PRNG, unique mqueue names, waiting
 *    until a child sleeps in the kernel.
 *
 * Diagnostics go to stdout as "# ..." lines, so run.sh can pass them through
 * as KTAP comments.
 */
#ifndef CT_H
#define CT_H

#include <mqueue.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "shared.h"	/* bench/src: exit codes, write_full/read_full, rng_next, sysctls */

/* ---- results ------------------------------------------------------------ */

/* Print "# msg" on stdout (flushed). */
void ct_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "# SKIP msg" and exit EXIT_SKIP (restoring sysctls, killing children). */
void ct_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Print "# FAIL msg" and exit EXIT_FAIL at once. */
void ct_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Record a failure and carry on. */
void ct_failf(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* EXIT_FAIL if any expectation failed, EXIT_OK otherwise. */
int ct_result(void);
bool ct_failed(void);

#define ct_expect(cond, fmt, ...)						\
	({ bool __ok = (cond);							\
	   if (!__ok)								\
		ct_failf(__FILE__, __LINE__, "%s: " fmt, #cond, ##__VA_ARGS__);	\
	   __ok; })

/* A syscall-style result (>= 0 ok, -1 + errno) that must succeed. */
#define ct_expect_ok(ret, what)							\
	ct_expect((ret) >= 0, "%s: %m", what)

/* A syscall-style result that must fail with errno == err. */
#define ct_expect_errno(ret, err, what)						\
	({ long __r = (long)(ret); int __e = errno;				\
	   bool __ok = __r == -1 && __e == (err);				\
	   if (!__ok)								\
		ct_failf(__FILE__, __LINE__, "%s: want -1/%s, got %ld/%s",	\
			 what, ct_errname(err), __r,				\
			 __r == -1 ? ct_errname(__e) : "-");			\
	   __ok; })

const char *ct_errname(int err);

/* ---- watchdog and children ---------------------------------------------- */

/*
 * Arm (or re-arm) the watchdog: after @seconds, SIGKILL every tracked
 * child, restore sysctls and exit EXIT_FAIL with "# watchdog: <what>".
 * CT_WATCHDOG_SCALE (a float, e.g. 25 under TCG) multiplies every limit.
 */
void ct_watchdog(unsigned int seconds, const char *what);
/* Scale a duration by CT_WATCHDOG_SCALE (for sleeps that wait on peers). */
double ct_scale(double seconds);

/* fork() a tracked child that runs fn(arg) and _exit()s with its result. */
pid_t ct_spawn(int (*fn)(void *arg), void *arg);
/* Wait for a tracked child; returns its raw wait status or -errno. */
int ct_wait(pid_t pid);
/* Non-blocking ct_wait: 1 and *status when reaped, 0 if running, -errno. */
int ct_try_wait(pid_t pid, int *status);
/* SIGKILL and reap every tracked child. */
void ct_kill_children(void);

/*
 * Wait until @pid (a process or, with tid, a thread) is in an interruptible
 * sleep (state S in /proc/PID/stat, three readings in a row), for up to
 * @timeout_ms.  Returns 0, or -ETIMEDOUT, or -errno.
 */
int ct_wait_sleeping(pid_t pid, unsigned int timeout_ms);

/* ---- sysctls ------------------------------------------------------------ */

/*
 * Write @value to /proc/sys/@name (e.g. "fs/pipe-user-pages-soft"), saving
 * the old value the first time.  Every saved value is written back at exit,
 * on ct_skip/ct_fatal, on the watchdog, and on SIGINT/SIGTERM/SIGHUP.
 * Returns 0 or -errno.
 */
int ct_sysctl_set(const char *name, const char *value);
long long ct_sysctl_read(const char *name);
/* Put every saved sysctl back now (also done automatically). */
void ct_sysctl_restore(void);

bool ct_is_root(void);
/* Is capability @cap (e.g. CAP_SYS_RESOURCE = 24) in our effective set? */
bool ct_has_cap(int cap);
/* Skip unless root. */
void ct_require_root(const char *why);

/* ---- mqueue ------------------------------------------------------------- */

/*
 * Skip (77) when POSIX message queues are not available.  mq_open() goes
 * through the kernel's internal mqueue mount, so /dev/mqueue does not have
 * to be mounted (it is not, by default, on the project's machines); we probe
 * with a real mq_open() instead.
 */
void ct_require_mqueue(void);
/* "/ipclab-ct-<tag>-<pid>-<n>"; unlinked at exit if still there. */
const char *ct_mq_name(const char *tag);
/*
 * Create a new queue named by ct_mq_name(@tag), with @attr, opened
 * O_RDWR | O_CREAT | O_EXCL | @flags (e.g. O_NONBLOCK); *@name gets its
 * name, for mq_unlink() or a second mq_open().  Exits EXIT_FAIL with
 * "mq_open: <error>" when it cannot: a test that would rather skip on
 * EMFILE or ENOSPC opens its queue itself.
 */
mqd_t ct_mq_create(const char *tag, int flags, struct mq_attr *attr, const char **name);

/* ---- utilities ---------------------------------------------------------- */

/* 64-bit FNV-1a. */
uint64_t ct_hash(const void *buf, size_t len, uint64_t seed);
/* Seed from CT_SEED (printed), or from time and pid. */
uint64_t ct_seed(void);
/* Directory for temporary files: CT_TMPDIR, TMPDIR or /tmp. */
const char *ct_tmpdir(void);
/* Create and unlink a temporary file; returns fd or -errno. */
int ct_tmpfile(void);

uint64_t ct_now_ns(void);
void ct_sleep_ms(unsigned int ms);
/* CLOCK_REALTIME timespec @ms from now (for mq_timed*). */
struct timespec ct_deadline_ms(long ms);

/*
 * read() until EOF or @cap bytes, retrying short reads and EINTR: how many
 * bytes, or -errno when a read failed.  (write_full/read_full move exactly
 * @len: shared.h.)
 */
ssize_t ct_read_to_eof(int fd, void *buf, size_t cap);

/* Fill @buf with a pattern derived from @seed and @offset (byte-addressed). */
void ct_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset);
/* Index of the first byte that does not match, or -1. */
ssize_t ct_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset);

/*
 * A pattern stream through a pipe: the pattern of @seed from offset 0, moved
 * in transfers of 1 byte to CT_STREAM_CHUNK whose sizes are drawn from @rng
 * (an rng_next() state: writer and reader draw theirs apart, so the two sides'
 * sizes do not line up).  Up to twice a default pipe's 64 KiB, so that some
 * transfers fit and some have to wait for room or split.
 */
#define CT_STREAM_CHUNK	(1u << 17)

/* Write @len bytes of the stream to @fd.  Returns 0 or -errno. */
int ct_pattern_write_stream(int fd, uint64_t len, uint64_t seed, uint64_t rng);
/*
 * Read the stream from @fd until EOF or a read error, checking every byte.
 * Stops at the first read that holds a byte that differs: *@bad is that
 * byte's offset in the stream, -1 when none did.  *@len is what was read
 * before that, or before EOF, for the caller to compare with what was
 * written.  Returns 0 or -errno (-ENOMEM): a read error only ends the stream.
 */
int ct_pattern_read_stream(int fd, uint64_t seed, uint64_t rng, uint64_t *len, int64_t *bad);

/* ---- memory witnesses --------------------------------------------------- */

/* Sum of /proc/vmstat's pgalloc_* counters (system-wide), or -1 without them. */
long long ct_pgalloc(void);
/* Field @key of our cgroup v2 memory.stat, in bytes, or -1 outside one. */
long long ct_memcg_stat(const char *key);

#endif /* CT_H */
