// SPDX-License-Identifier: MIT
/*
 * pipe_epoll_edge: epoll reports pipe readiness, level- and edge-triggered.
 *  - level-triggered: EPOLLIN is reported again and again while data wait;
 *  - edge-triggered: one event per change, none while nothing changes;
 *  - edge-triggered, every new write produces a new EPOLLIN event even if
 *    the reader has not drained the pipe.  Linux 5.5 briefly stopped doing
 *    that and broke programs that rely on it; 5.15 restored it ("pipe: avoid
 *    unnecessary EPOLLET wakeups under normal loads").  A patch that skips
 *    wakeups without sleepers must keep it: epoll is a sleeper.
 *  - an epoll_wait() asleep is woken by a write from another process;
 *  - edge-triggered EPOLLOUT fires when a full pipe gets a free page;
 *  - EPOLLHUP once the last writer closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ct.h"

static int fds[2];

static int wait_events(int ep, uint32_t *ev, int timeout_ms)
{
	struct epoll_event e;
	int n;

	do {
		n = epoll_wait(ep, &e, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		ct_fatal("epoll_wait: %m");
	*ev = n ? e.events : 0;
	return n;
}

static int add(int ep, int fd, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

static int delayed_write(void *arg)
{
	(void)arg;
	close(fds[0]);
	ct_sleep_ms(100);
	return write(fds[1], "w", 1) == 1 ? 0 : 1;
}

int main(void)
{
	static char buf[1 << 16];
	long page = sysconf(_SC_PAGESIZE);
	int lt, et, out, n, status;
	uint32_t ev;
	pid_t pid;

	ct_watchdog(30, "pipe_epoll_edge: epoll_wait never returned");
	if (pipe(fds))
		ct_fatal("pipe: %m");
	lt = epoll_create1(0);
	et = epoll_create1(0);
	out = epoll_create1(0);
	if (lt < 0 || et < 0 || out < 0)
		ct_fatal("epoll_create1: %m");
	if (add(lt, fds[0], EPOLLIN) || add(et, fds[0], EPOLLIN | EPOLLET) ||
	    add(out, fds[1], EPOLLOUT | EPOLLET))
		ct_fatal("epoll_ctl: %m");

	ct_expect(wait_events(et, &ev, 0) == 0, "empty pipe: EPOLLIN reported (%#x)", ev);

	/* A blocked epoll_wait is woken by another process's write. */
	pid = ct_spawn(delayed_write, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	n = wait_events(et, &ev, (int)(ct_scale(10) * 1000));
	ct_expect(n == 1 && (ev & EPOLLIN), "epoll_wait not woken by a write (n %d ev %#x)",
		  n, ev);
	status = ct_wait(pid);
	ct_expect(status == 0, "writer failed (%#x)", status);

	/* Edge consumed: nothing more until something changes. */
	ct_expect(wait_events(et, &ev, 0) == 0, "ET: event repeated without a change (%#x)", ev);
	/* Level-triggered keeps saying so. */
	ct_expect(wait_events(lt, &ev, 0) == 1 && (ev & EPOLLIN), "LT: no EPOLLIN with data");
	ct_expect(wait_events(lt, &ev, 0) == 1 && (ev & EPOLLIN), "LT: EPOLLIN not repeated");

	/* A second write, not drained in between: a new edge. */
	if (write(fds[1], "x", 1) != 1)
		ct_fatal("write: %m");
	n = wait_events(et, &ev, 0);
	ct_expect(n == 1 && (ev & EPOLLIN),
		  "ET: a write to a non-empty pipe gave no new EPOLLIN event (n %d)", n);
	ct_expect(wait_events(et, &ev, 0) == 0, "ET: event repeated without a change");

	/* EPOLLOUT edge: initial edge, then full, then a page read. */
	wait_events(out, &ev, 0);
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	while (write(fds[1], buf, page) == page)
		;
	while (wait_events(out, &ev, 0))
		;	/* consume edges from the filling writes, if any */
	ct_expect(wait_events(out, &ev, 0) == 0, "ET: full pipe reports EPOLLOUT");
	if (read(fds[0], buf, 2) != 2 || read_full(fds[0], buf, page - 2) < 0)
		ct_fatal("read: %m");
	n = wait_events(out, &ev, 0);
	ct_expect(n == 1 && (ev & EPOLLOUT), "ET: a freed page gave no EPOLLOUT (n %d)", n);

	/* Writer gone: EPOLLHUP on the read end. */
	close(fds[1]);
	n = wait_events(et, &ev, 0);
	ct_expect(n == 1 && (ev & EPOLLHUP), "ET: no EPOLLHUP after the writer closed (%#x)", ev);
	return ct_result();
}
