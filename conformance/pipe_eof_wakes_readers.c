// SPDX-License-Identifier: MIT
/*
 * pipe_eof_wakes_readers: when the last writer closes, every reader blocked
 * in read() wakes up and sees EOF (read returns 0).
 *
 * Eight reader processes block in read() on an empty pipe while the parent
 * holds two write descriptors.  Closing the first must wake no one into a
 * false EOF.  Closing the last must wake all of them: a reader still asleep
 * afterwards is a lost wakeup, caught by a deadline instead of a hang.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

#define READERS 8

static int fds[2], w2;

static int reader(void *arg)
{
	char c;
	ssize_t n;

	(void)arg;
	/* Only the parent may hold the write ends. */
	close(fds[1]);
	close(w2);
	do {
		n = read(fds[0], &c, 1);
	} while (n < 0 && errno == EINTR);
	/* 0 is EOF, as expected; anything else goes back through the status. */
	return n == 0 ? 0 : n < 0 ? 2 : 3;
}

int main(void)
{
	pid_t pids[READERS];
	int i, status, exited = 0;
	uint64_t end;

	ct_watchdog(30, "pipe_eof_wakes_readers: readers never woke");
	if (pipe(fds))
		ct_fatal("pipe: %m");
	w2 = dup(fds[1]);
	if (w2 < 0)
		ct_fatal("dup: %m");
	for (i = 0; i < READERS; i++) {
		pids[i] = ct_spawn(reader, NULL);
		if (pids[i] < 0)
			ct_fatal("fork: %s", strerror(-pids[i]));
	}
	for (i = 0; i < READERS; i++)
		if (ct_wait_sleeping(pids[i], ct_scale(5) * 1000))
			ct_fatal("reader %d never blocked in read()", i);

	/* One writer left: nobody may wake up with EOF. */
	close(fds[1]);
	ct_sleep_ms(100);
	for (i = 0; i < READERS; i++)
		ct_expect(ct_try_wait(pids[i], &status) == 0,
			  "reader %d returned while a writer was still open", i);
	if (ct_failed())
		return ct_result();

	/* Last writer gone: all of them, within a generous deadline. */
	close(w2);
	end = ct_now_ns() + (uint64_t)(ct_scale(5) * 1e9);
	while (exited < READERS && ct_now_ns() < end) {
		for (i = 0; i < READERS; i++) {
			if (!pids[i] || ct_try_wait(pids[i], &status) != 1)
				continue;
			ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
				  "reader %d: wanted EOF, got status %#x", i, status);
			pids[i] = 0;
			exited++;
		}
		ct_sleep_ms(5);
	}
	ct_expect(exited == READERS, "%d of %d readers still asleep 5 s after the last "
		  "writer closed (lost wakeup)", READERS - exited, READERS);
	return ct_result();
}
