// SPDX-License-Identifier: MIT
/*
 * io_uring writes into a full pipe. Each round fills the pipe with non-blocking writes,
 * submits one io_uring write of a page, and then reads a page: io_uring first tries the
 * write with IOCB_NOWAIT, finds no room, and waits on the pipe's wr_wait through its poll
 * handler; the read makes room and its wakeup of wr_wait finds that poll entry, and
 * io_uring completes the write. Then the pipe is drained for the next round.
 *
 *   io-uring-full-pipe [ROUNDS]     default 500
 *
 * Bounded in rounds. Exit 0 when every write completed with a full page.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096

static char buf[PAGE];

/* Non-blocking only while it fills: io_uring must see a blocking file, or it fails the
 * write with EAGAIN instead of waiting for room. */
static int fill(int fd)
{
	if (fcntl(fd, F_SETFL, O_NONBLOCK))
		return -1;
	for (;;) {
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n < 0) {
			if (errno != EAGAIN)
				return -1;
			return fcntl(fd, F_SETFL, 0);
		}
	}
}

static int drain(int fd)
{
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
	}
}

static int round_trip(struct io_uring *ring, int fd[2])
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int res;

	if (fill(fd[1]))
		return -1;
	sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -1;
	io_uring_prep_write(sqe, fd[1], buf, sizeof(buf), 0);
	if (io_uring_submit(ring) != 1)
		return -1;
	/* Room for the write: the read's wakeup of wr_wait is the one counted */
	if (read(fd[0], buf, sizeof(buf)) != sizeof(buf))
		return -1;
	if (io_uring_wait_cqe(ring, &cqe))
		return -1;
	res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (res != sizeof(buf))
		return -1;
	return drain(fd[0]);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 500;
	struct io_uring ring;
	int fd[2], err;

	if (rounds < 1) {
		fprintf(stderr, "usage: io-uring-full-pipe [ROUNDS (>= 1)]\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	if (pipe(fd) || fcntl(fd[0], F_SETFL, O_NONBLOCK)) {
		perror("io-uring-full-pipe: pipe");
		return 1;
	}
	err = io_uring_queue_init(8, &ring, 0);
	if (err) {
		fprintf(stderr, "io-uring-full-pipe: io_uring_queue_init: %s\n", strerror(-err));
		return 1;
	}
	for (long i = 0; i < rounds; i++) {
		if (round_trip(&ring, fd)) {
			fprintf(stderr, "io-uring-full-pipe: round %ld failed\n", i);
			return 1;
		}
	}
	io_uring_queue_exit(&ring);
	printf("io-uring-full-pipe: %ld rounds\n", rounds);
	return 0;
}
