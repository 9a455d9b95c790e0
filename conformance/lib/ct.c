// SPDX-License-Identifier: MIT
/*
 * ct: helper for the conformance tests (see ct.h).
 *
 * Cleanup contract: the process that loaded the test (the "owner") restores
 * sysctls, unlinks its mqueues and kills its tracked children on every exit
 * path: normal exit (atexit), ct_skip/ct_fatal, the watchdog (SIGALRM) and
 * SIGINT/SIGTERM/SIGHUP (run.sh's timeout sends SIGTERM first).  Children
 * forked through ct_spawn() forget the owner's state and die with it.  The
 * signal-path cleanup only uses async-signal-safe calls (kill, open, write,
 * close, mq_unlink is a plain syscall).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mqueue.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

#define CT_MAX_CHILDREN	512
#define CT_MAX_MQ	16

static pid_t ct_owner;
static volatile sig_atomic_t ct_failures;
static const char *ct_watchdog_what = "timeout";
static unsigned int ct_watchdog_secs;

static pid_t ct_children[CT_MAX_CHILDREN];
static volatile sig_atomic_t ct_nr_children;

static char ct_mq_names[CT_MAX_MQ][64];
static volatile sig_atomic_t ct_nr_mq;

/* ---- async-signal-safe cleanup ------------------------------------------ */

static void ct_write_str(int fd, const char *s)
{
	ssize_t n = write(fd, s, strlen(s));

	(void)n;
}

static void ct_cleanup_signal_safe(void)
{
	int i;

	if (getpid() != ct_owner)
		return;
	for (i = 0; i < ct_nr_children; i++)
		if (ct_children[i] > 0)
			kill(ct_children[i], SIGKILL);
	for (i = 0; i < ct_nr_mq; i++)
		if (ct_mq_names[i][0])
			mq_unlink(ct_mq_names[i]);
	if (sysctl_restore())
		ct_write_str(1, "# WARNING: could not restore a sysctl\n");
}

static void ct_reap_children(void)
{
	int i;

	for (i = 0; i < ct_nr_children; i++) {
		if (ct_children[i] > 0) {
			kill(ct_children[i], SIGKILL);
			waitpid(ct_children[i], NULL, 0);
			ct_children[i] = 0;
		}
	}
	ct_nr_children = 0;
}

static void ct_atexit(void)
{
	if (getpid() != ct_owner)
		return;
	fflush(stdout);
	ct_reap_children();
	ct_cleanup_signal_safe();
}

static void ct_on_alarm(int sig)
{
	char buf[160];

	(void)sig;
	/* snprintf is not on the async-signal-safe list; build by hand. */
	strcpy(buf, "# FAIL watchdog: ");
	strncat(buf, ct_watchdog_what, sizeof(buf) - strlen(buf) - 40);
	strcat(buf, " (no completion in time; lost wakeup or hang)\n");
	ct_write_str(1, buf);
	ct_cleanup_signal_safe();
	_exit(EXIT_FAIL);
}

static void ct_on_term(int sig)
{
	ct_write_str(1, "# FAIL interrupted by a signal; cleaned up\n");
	ct_cleanup_signal_safe();
	signal(sig, SIG_DFL);
	_exit(EXIT_FAIL);
}

__attribute__((constructor)) static void ct_init(void)
{
	struct sigaction sa;

	ct_owner = getpid();
	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(ct_atexit);

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = ct_on_term;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = ct_on_alarm;
	sigaction(SIGALRM, &sa, NULL);
}

/* ---- results ------------------------------------------------------------ */

static void ct_vlog(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	printf("# %s%s\n", prefix, buf);
	fflush(stdout);
}

void ct_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ct_vlog("", fmt, ap);
	va_end(ap);
}

void ct_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ct_vlog("SKIP ", fmt, ap);
	va_end(ap);
	exit(EXIT_SKIP);
}

void ct_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ct_vlog("FAIL ", fmt, ap);
	va_end(ap);
	exit(EXIT_FAIL);
}

void ct_failf(const char *file, int line, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("# FAIL %s:%d: %s\n", file, line, buf);
	fflush(stdout);
	ct_failures++;
}

bool ct_failed(void)
{
	return ct_failures != 0;
}

int ct_result(void)
{
	return ct_failures ? EXIT_FAIL : EXIT_OK;
}

const char *ct_errname(int err)
{
	switch (err) {
	case 0: return "0";
	case EAGAIN: return "EAGAIN";
	case EBADF: return "EBADF";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EFAULT: return "EFAULT";
	case EINTR: return "EINTR";
	case EINVAL: return "EINVAL";
	case EMFILE: return "EMFILE";
	case EMSGSIZE: return "EMSGSIZE";
	case ENAMETOOLONG: return "ENAMETOOLONG";
	case ENFILE: return "ENFILE";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	case ENOSPC: return "ENOSPC";
	case ENOSYS: return "ENOSYS";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EPIPE: return "EPIPE";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ESPIPE: return "ESPIPE";
	default: return strerrorname_np(err) ? strerrorname_np(err) : "E?";
	}
}

/* ---- watchdog and children ---------------------------------------------- */

double ct_scale(double seconds)
{
	const char *s = getenv("CT_WATCHDOG_SCALE");
	double k = s ? strtod(s, NULL) : 1.0;

	if (!(k >= 1.0 && k <= 1000.0))
		k = 1.0;
	return seconds * k;
}

void ct_watchdog(unsigned int seconds, const char *what)
{
	double s = ct_scale(seconds);

	ct_watchdog_what = what ? what : "timeout";
	ct_watchdog_secs = s < 1 ? 1 : (unsigned int)(s + 0.5);
	alarm(ct_watchdog_secs);
}

pid_t ct_spawn(int (*fn)(void *arg), void *arg)
{
	pid_t pid;

	if (ct_nr_children >= CT_MAX_CHILDREN)
		return -EAGAIN;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* The child owns nothing of the parent's: no cleanup, no alarm. */
		ct_nr_children = 0;
		sysctl_forget();
		ct_nr_mq = 0;
		alarm(0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != ct_owner)
			_exit(EXIT_FAIL);
		_exit(fn(arg));
	}
	ct_children[ct_nr_children] = pid;
	ct_nr_children++;
	return pid;
}

int ct_wait(pid_t pid)
{
	int status, i;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	for (i = 0; i < ct_nr_children; i++)
		if (ct_children[i] == pid)
			ct_children[i] = 0;
	return status;
}

int ct_try_wait(pid_t pid, int *status)
{
	pid_t ret;
	int i;

	ret = waitpid(pid, status, WNOHANG);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return 0;
	for (i = 0; i < ct_nr_children; i++)
		if (ct_children[i] == pid)
			ct_children[i] = 0;
	return 1;
}

void ct_kill_children(void)
{
	ct_reap_children();
}

static int ct_proc_state(pid_t pid, char *state)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -EIO;
	*state = p[2];
	return 0;
}

int ct_wait_sleeping(pid_t pid, unsigned int timeout_ms)
{
	uint64_t end = ct_now_ns() + (uint64_t)ct_scale(timeout_ms) * 1000000ull;
	int settled = 0, ret;
	char st;

	/*
	 * Three readings of 'S' in a row, 2 ms apart, so a passing sleep is not
	 * taken.  Only 'S': the waits we look for (pipe, mqueue) are
	 * interruptible, while 'D' is more likely a page fault or a lock on
	 * the way there, and signalling then would be too early.
	 */
	while (ct_now_ns() < end) {
		ret = ct_proc_state(pid, &st);
		if (ret)
			return ret;
		if (st == 'S') {
			if (++settled >= 3)
				return 0;
		} else {
			settled = 0;
		}
		ct_sleep_ms(2);
	}
	return -ETIMEDOUT;
}

/* ---- sysctls ------------------------------------------------------------ */

static int ct_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

long long ct_sysctl_read(const char *name)
{
	char path[128], buf[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	ret = sysctl_read(path, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	return strtoll(buf, NULL, 10);
}

int ct_sysctl_set(const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	return sysctl_set(path, value);
}

void ct_sysctl_restore(void)
{
	sigset_t all, old;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if (getpid() == ct_owner) {
		int failed = sysctl_restore();

		if (failed)
			ct_log("WARNING: could not restore %d sysctl(s)", failed);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

bool ct_is_root(void)
{
	return geteuid() == 0;
}

bool ct_has_cap(int cap)
{
	char buf[4096], *p;
	unsigned long long eff;
	int ret;

	/* /proc/self/status, not libcap: one less dependency inside guests. */
	ret = ct_read_file("/proc/self/status", buf, sizeof(buf));
	if (ret < 0)
		return false;
	p = strstr(buf, "CapEff:");
	if (!p)
		return false;
	eff = strtoull(p + 7, NULL, 16);
	return cap >= 0 && cap < 64 && (eff >> cap) & 1;
}

void ct_require_root(const char *why)
{
	if (!ct_is_root())
		ct_skip("needs root: %s", why);
}

/* ---- mqueue ------------------------------------------------------------- */

const char *ct_mq_name(const char *tag)
{
	static int seq;
	char *name;

	if (ct_nr_mq >= CT_MAX_MQ)
		ct_fatal("too many mqueue names");
	name = ct_mq_names[ct_nr_mq];
	snprintf(name, sizeof(ct_mq_names[0]), "/ipclab-ct-%s-%d-%d",
		 tag, (int)getpid(), seq++);
	mq_unlink(name);
	ct_nr_mq++;
	return name;
}

mqd_t ct_mq_create(const char *tag, int flags, struct mq_attr *attr, const char **name)
{
	mqd_t q;

	*name = ct_mq_name(tag);
	q = mq_open(*name, O_RDWR | O_CREAT | O_EXCL | flags, 0600, attr);
	if (q == (mqd_t)-1)
		ct_fatal("mq_open: %m");
	return q;
}

void ct_require_mqueue(void)
{
	struct mq_attr attr = { .mq_maxmsg = 1, .mq_msgsize = 16 };
	const char *name = ct_mq_name("probe");
	mqd_t q;

	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
	if (q == (mqd_t)-1) {
		if (errno == ENOSYS)
			ct_skip("POSIX message queues not in this kernel (CONFIG_POSIX_MQUEUE)");
		ct_skip("mq_open probe failed: %s", strerror(errno));
	}
	mq_close(q);
	mq_unlink(name);
}

/* ---- utilities ---------------------------------------------------------- */

uint64_t ct_hash(const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *p = buf;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

uint64_t ct_seed(void)
{
	const char *s = getenv("CT_SEED");
	uint64_t seed;

	if (s && *s)
		seed = strtoull(s, NULL, 0);
	else
		seed = ct_now_ns() ^ ((uint64_t)getpid() << 32);
	if (!seed)
		seed = 1;
	ct_log("seed %llu (CT_SEED=%llu reproduces)",
	       (unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

const char *ct_tmpdir(void)
{
	const char *d = getenv("CT_TMPDIR");

	if (!d || !*d)
		d = getenv("TMPDIR");
	if (!d || !*d)
		d = "/tmp";
	return d;
}

int ct_tmpfile(void)
{
	char path[PATH_MAX];
	int fd;

	fd = open(ct_tmpdir(), O_TMPFILE | O_RDWR | O_EXCL, 0600);
	if (fd >= 0)
		return fd;
	snprintf(path, sizeof(path), "%s/ipclab-ct-XXXXXX", ct_tmpdir());
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

uint64_t ct_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void ct_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

struct timespec ct_deadline_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

ssize_t ct_read_to_eof(int fd, void *buf, size_t cap)
{
	char *p = buf;
	size_t done = 0;
	ssize_t n;

	while (done < cap) {
		n = read(fd, p + done, cap - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

static inline uint8_t ct_pattern_byte(uint64_t seed, uint64_t off)
{
	uint64_t x = (off >> 3) * 0x9e3779b97f4a7c15ull ^ seed;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> ((off & 7) * 8));
}

void ct_pattern_fill(void *buf, size_t len, uint64_t seed, uint64_t offset)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = ct_pattern_byte(seed, offset + i);
}

ssize_t ct_pattern_check(const void *buf, size_t len, uint64_t seed, uint64_t offset)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != ct_pattern_byte(seed, offset + i))
			return (ssize_t)i;
	return -1;
}

int ct_pattern_write_stream(int fd, uint64_t len, uint64_t seed, uint64_t rng)
{
	char *buf = malloc(CT_STREAM_CHUNK);
	uint64_t off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < len) {
		size_t n = 1 + rng_next(&rng) % CT_STREAM_CHUNK;

		if (n > len - off)
			n = len - off;
		ct_pattern_fill(buf, n, seed, off);
		/* A short count means the last write() failed: errno says why. */
		ret = write_full(fd, buf, n);
		if (ret < 0)
			goto out_free;
		off += n;
	}
out_free:
	free(buf);
	return ret;
}

int ct_pattern_read_stream(int fd, uint64_t seed, uint64_t rng, uint64_t *len, int64_t *bad)
{
	char *buf = malloc(CT_STREAM_CHUNK);
	uint64_t off = 0;
	ssize_t n, at;

	*len = 0;
	*bad = -1;
	if (!buf)
		return -ENOMEM;
	for (;;) {
		n = read(fd, buf, 1 + rng_next(&rng) % CT_STREAM_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		/* A read error ends the stream short; the caller's length check sees it. */
		if (n <= 0)
			break;
		at = ct_pattern_check(buf, n, seed, off);
		if (at >= 0) {
			*bad = (int64_t)(off + at);
			break;
		}
		off += n;
	}
	*len = off;
	free(buf);
	return 0;
}

/* ---- memory witnesses --------------------------------------------------- */

long long ct_pgalloc(void)
{
	char key[64];
	long long v, sum = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strncmp(key, "pgalloc_", 8))
			sum = (sum < 0 ? 0 : sum) + v;
	fclose(f);
	return sum;
}

long long ct_memcg_stat(const char *key)
{
	char line[400], path[512] = "", k[64];
	long long v = -1, x;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "0::", 3))
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.stat", line + 3);
	}
	fclose(f);
	if (!path[0] || !(f = fopen(path, "r")))
		return -1;
	while (fscanf(f, "%63s %lld", k, &x) == 2)
		if (!strcmp(k, key))
			v = x;
	fclose(f);
	return v;
}
