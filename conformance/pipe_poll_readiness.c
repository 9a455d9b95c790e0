// SPDX-License-Identifier: MIT
/*
 * pipe_poll_readiness: poll() reports pipe readiness correctly, and a
 * blocked poll() is woken by the event it waits for.
 *  - empty pipe: read end not readable, write end writable;
 *  - data queued: read end POLLIN;
 *  - full: write end not writable; writable again once a page is read;
 *  - a poll() asleep on the read end wakes when another process writes,
 *    and one asleep on a full write end wakes when another process reads;
 *  - no writer left: POLLHUP on the read end (with POLLIN while data
 *    remain); no reader left: POLLERR on the write end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static int fds[2];

static short revents(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		ct_fatal("poll: %m");
	return n ? p.revents : 0;
}

static int delayed_write(void *arg)
{
	(void)arg;
	close(fds[0]);
	ct_sleep_ms(100);
	return write(fds[1], "w", 1) == 1 ? 0 : 1;
}

static int delayed_read_page(void *arg)
{
	static char buf[1 << 16];
	long page = sysconf(_SC_PAGESIZE);

	(void)arg;
	close(fds[1]);
	ct_sleep_ms(100);
	return read_full(fds[0], buf, page) ? 1 : 0;
}

static void check_wakeup(int (*fn)(void *), int fd, short ev, const char *what)
{
	int status;
	pid_t pid;
	short r;

	pid = ct_spawn(fn, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	/* Far longer than the 100 ms the peer waits: this is a wakeup deadline. */
	r = revents(fd, ev, (int)(ct_scale(10) * 1000));
	ct_expect(r & ev, "%s: poll was not woken (revents %#x)", what, r);
	status = ct_wait(pid);
	ct_expect(status == 0, "%s: peer failed (status %#x)", what, status);
}

int main(void)
{
	static char buf[1 << 16];
	long page = sysconf(_SC_PAGESIZE);
	short r;

	ct_watchdog(30, "pipe_poll_readiness: poll never returned");
	if (pipe(fds))
		ct_fatal("pipe: %m");

	ct_expect(revents(fds[0], POLLIN, 0) == 0, "empty pipe: read end ready (%#x)",
		  revents(fds[0], POLLIN, 0));
	ct_expect(revents(fds[1], POLLOUT, 0) == POLLOUT, "empty pipe: write end %#x",
		  revents(fds[1], POLLOUT, 0));

	check_wakeup(delayed_write, fds[0], POLLIN, "read end, peer writes");
	ct_expect(revents(fds[0], POLLIN, 0) == POLLIN, "1 byte queued: read end %#x",
		  revents(fds[0], POLLIN, 0));
	if (read(fds[0], buf, 1) != 1)
		ct_fatal("read: %m");

	/* Fill, page by page. */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	while (write(fds[1], buf, page) == page)
		;
	fcntl(fds[1], F_SETFL, 0);
	ct_expect(!(revents(fds[1], POLLOUT, 0) & POLLOUT), "full pipe: write end writable");
	check_wakeup(delayed_read_page, fds[1], POLLOUT, "full write end, peer reads a page");
	ct_expect(revents(fds[1], POLLOUT, 0) == POLLOUT, "a page free: write end %#x",
		  revents(fds[1], POLLOUT, 0));

	/* Writer gone with data left: POLLIN|POLLHUP; drained: POLLHUP alone. */
	close(fds[1]);
	r = revents(fds[0], POLLIN, 0);
	ct_expect(r == (POLLIN | POLLHUP), "no writer, data left: read end %#x, want %#x",
		  r, POLLIN | POLLHUP);
	while (read(fds[0], buf, sizeof(buf)) > 0)
		;
	r = revents(fds[0], POLLIN, 0);
	ct_expect(r == POLLHUP, "no writer, drained: read end %#x, want POLLHUP", r);
	close(fds[0]);

	/* Reader gone: POLLERR on the write end (POLLOUT may come with it). */
	if (pipe(fds))
		ct_fatal("pipe: %m");
	close(fds[0]);
	r = revents(fds[1], POLLOUT, 0);
	ct_expect(r & POLLERR, "no reader: write end %#x, want POLLERR", r);
	close(fds[1]);
	return ct_result();
}
