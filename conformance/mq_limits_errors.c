// SPDX-License-Identifier: MIT
/*
 * mq_limits_errors: mq_open/mq_send/mq_receive enforce their limits with the
 * documented errors (mq_open(3), mq_send(3), mq_receive(3), mq_overview(7)).
 * Needs no privilege and changes no sysctl:
 *  - mq_maxmsg or mq_msgsize <= 0: EINVAL; over fs/mqueue/msg_max or
 *    msgsize_max without CAP_SYS_RESOURCE: EINVAL; exactly at them: fine;
 *  - a name longer than NAME_MAX: ENAMETOOLONG; O_CREAT|O_EXCL on an
 *    existing queue: EEXIST; opening a missing queue: ENOENT;
 *  - RLIMIT_MSGQUEUE too small for the queue: EMFILE;
 *  - a message longer than mq_msgsize: EMSGSIZE; a receive buffer smaller
 *    than mq_msgsize: EMSGSIZE; priority >= MQ_PRIO_MAX: EINVAL; sending on
 *    a read-only descriptor or receiving on a write-only one: EBADF;
 *  - none of the failed calls changes the queue.
 */
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

static mqd_t open_attr(const char *name, long maxmsg, long msgsize)
{
	struct mq_attr a = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };

	mq_unlink(name);
	return mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
}

static void close_unlink(mqd_t q, const char *name)
{
	if (q != (mqd_t)-1)
		mq_close(q);
	mq_unlink(name);
}

static int tiny_rlimit(void *arg)
{
	struct rlimit rl = { 1024, 1024 };
	const char *name = arg;
	mqd_t q;

	if (setrlimit(RLIMIT_MSGQUEUE, &rl))
		return 2;
	q = open_attr(name, 4, 1024);	/* needs more than 4 KiB */
	if (q != (mqd_t)-1) {
		close_unlink(q, name);
		return 3;
	}
	return errno == EMFILE ? 0 : 4;
}

static void check_open(void)
{
	long msg_max = ct_sysctl_read("fs/mqueue/msg_max");
	long size_max = ct_sysctl_read("fs/mqueue/msgsize_max");
	bool cap = ct_has_cap(CAP_SYS_RESOURCE);
	const char *name = ct_mq_name("lim");
	char longname[NAME_MAX + 3];
	int status;
	mqd_t q;
	pid_t pid;

	ct_log("msg_max %ld, msgsize_max %ld, CAP_SYS_RESOURCE %s", msg_max, size_max,
	       cap ? "yes" : "no");
	ct_expect_errno(open_attr(name, 0, 16), EINVAL, "mq_maxmsg 0");
	ct_expect_errno(open_attr(name, -1, 16), EINVAL, "mq_maxmsg -1");
	ct_expect_errno(open_attr(name, 4, 0), EINVAL, "mq_msgsize 0");
	ct_expect_errno(open_attr(name, 4, -5), EINVAL, "mq_msgsize -5");

	q = open_attr(name, msg_max, 16);
	ct_expect(q != (mqd_t)-1, "mq_maxmsg = msg_max (%ld): %m", msg_max);
	close_unlink(q, name);
	q = open_attr(name, 1, size_max);
	ct_expect(q != (mqd_t)-1, "mq_msgsize = msgsize_max (%ld): %m", size_max);
	close_unlink(q, name);
	if (!cap) {
		ct_expect_errno(open_attr(name, msg_max + 1, 16), EINVAL, "mq_maxmsg = msg_max + 1");
		ct_expect_errno(open_attr(name, 1, size_max + 1), EINVAL,
				"mq_msgsize = msgsize_max + 1");
	}

	memset(longname, 'n', sizeof(longname));
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';	/* NAME_MAX + 1 characters after '/' */
	ct_expect_errno(mq_open(longname, O_RDWR | O_CREAT, 0600, NULL), ENAMETOOLONG,
			"name of NAME_MAX + 1 characters");

	q = open_attr(name, 2, 16);
	if (q == (mqd_t)-1)
		ct_fatal("mq_open: %m");
	ct_expect_errno(mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, NULL), EEXIST,
			"O_CREAT|O_EXCL on an existing queue");
	close_unlink(q, name);
	ct_expect_errno(mq_open(name, O_RDWR), ENOENT, "open a queue that is gone");

	pid = ct_spawn(tiny_rlimit, (void *)name);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	status = ct_wait(pid);
	ct_expect(status == 0, "RLIMIT_MSGQUEUE 1 KiB, 4 x 1 KiB queue: want EMFILE "
		  "(child step %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static void check_io(void)
{
	const char *name = ct_mq_name("io");
	char big[64] = { 0 }, small[15];
	struct mq_attr a;
	mqd_t q, ro, wo;

	q = open_attr(name, 2, 16);
	ro = mq_open(name, O_RDONLY | O_NONBLOCK);
	wo = mq_open(name, O_WRONLY | O_NONBLOCK);
	if (q == (mqd_t)-1 || ro == (mqd_t)-1 || wo == (mqd_t)-1)
		ct_fatal("mq_open: %m");

	ct_expect_errno(mq_send(q, big, 17, 0), EMSGSIZE, "message of msgsize + 1");
	ct_expect(mq_send(q, big, 16, 0) == 0, "message of exactly msgsize: %m");
	ct_expect_errno(mq_receive(q, small, sizeof(small), NULL), EMSGSIZE,
			"receive buffer of msgsize - 1");
	ct_expect_errno(mq_send(q, big, 1, MQ_PRIO_MAX), EINVAL, "priority MQ_PRIO_MAX");
	ct_expect(mq_send(q, big, 0, MQ_PRIO_MAX - 1) == 0,
		  "empty message at priority MQ_PRIO_MAX - 1: %m");
	ct_expect_errno(mq_send(ro, big, 1, 0), EBADF, "send on a read-only descriptor");
	ct_expect_errno(mq_receive(wo, big, sizeof(big), NULL), EBADF,
			"receive on a write-only descriptor");
	mq_getattr(q, &a);
	ct_expect(a.mq_curmsgs == 2, "failed calls changed the queue: %ld messages, want 2",
		  a.mq_curmsgs);
	mq_close(ro);
	mq_close(wo);
	close_unlink(q, name);
}

int main(void)
{
	ct_watchdog(30, "mq_limits_errors: a call blocked");
	ct_require_mqueue();
	check_open();
	check_io();
	return ct_result();
}
