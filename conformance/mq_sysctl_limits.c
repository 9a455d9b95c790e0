// SPDX-License-Identifier: MIT
/*
 * mq_sysctl_limits: the fs/mqueue sysctls set the limits they name
 * (mq_overview(7)), for a process without CAP_SYS_RESOURCE:
 *  - msg_max and msgsize_max cap mq_maxmsg and mq_msgsize (EINVAL past them),
 *    and raising them admits bigger queues;
 *  - msg_default and msgsize_default are the attributes of a queue created
 *    with attr == NULL;
 *  - queues_max caps the number of queues (ENOSPC);
 *  - out-of-range values are refused (EINVAL): msg_max 0 or past 65536,
 *    msgsize_max under 128.
 *
 * The sysctls are per IPC namespace, so the test runs in a child with a new
 * IPC namespace (needs root): it starts from the kernel's defaults, and
 * nothing it writes can reach the host's values or other users' queues; the
 * namespace disappears with the child.  The child drops CAP_SYS_RESOURCE
 * first, which would otherwise lift the caps.
 *
 * Kernels without CONFIG_IPC_NS (the lab's small guest kernels) cannot do
 * that.  There, and only where the whole machine is ours (a lab guest,
 * IPCBENCH_ACCEL=kvm|tcg, or CT_GLOBAL_SYSCTLS=1), the same checks change
 * the global values through ct_sysctl_set(), which restores them on every
 * exit path; elsewhere the test skips.  queues_max is then checked without
 * knowing how many queues others hold: at queues_max 1, a second queue of
 * ours must be ENOSPC.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <mqueue.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ct.h"

static const char *const knobs[] = {
	"fs/mqueue/msg_max", "fs/mqueue/msgsize_max", "fs/mqueue/msg_default",
	"fs/mqueue/msgsize_default", "fs/mqueue/queues_max",
};
#define NR_KNOBS (int)(sizeof(knobs) / sizeof(knobs[0]))

static bool global_mode;

/*
 * Write a sysctl: in our private namespace, or (global_mode) through
 * ct_sysctl_set so that it is restored.  Returns 0 or -errno.
 */
static int knob_set(const char *name, long value)
{
	char path[128], buf[32];
	int fd, ret = 0, len;

	len = snprintf(buf, sizeof(buf), "%ld", value);
	if (global_mode)
		return ct_sysctl_set(name, buf);
	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != len)
		ret = -errno;
	close(fd);
	return ret;
}

static int drop_sys_resource(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[0].effective &= ~(1u << CAP_SYS_RESOURCE);
	data[0].permitted &= ~(1u << CAP_SYS_RESOURCE);
	data[0].inheritable &= ~(1u << CAP_SYS_RESOURCE);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

static mqd_t open_q(const char *name, long maxmsg, long msgsize)
{
	struct mq_attr a = { .mq_maxmsg = maxmsg, .mq_msgsize = msgsize };

	return mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, maxmsg ? &a : NULL);
}

static int checks(void)
{
	char name[4][64];
	struct mq_attr a;
	mqd_t q[4];
	int i;

	if (drop_sys_resource() || ct_has_cap(CAP_SYS_RESOURCE)) {
		ct_log("cannot drop CAP_SYS_RESOURCE");
		return EXIT_FAIL;
	}
	for (i = 0; i < 4; i++) {
		snprintf(name[i], sizeof(name[i]), "/ipclab-ct-sysctl-%d-%d", getpid(), i);
		mq_unlink(name[i]);
	}

	/* A fresh namespace starts from the kernel defaults. */
	if (!global_mode) {
		ct_expect(ct_sysctl_read("fs/mqueue/msg_max") == 10 &&
			  ct_sysctl_read("fs/mqueue/msgsize_max") == 8192 &&
			  ct_sysctl_read("fs/mqueue/queues_max") == 256,
			  "new namespace: msg_max %lld msgsize_max %lld queues_max %lld, "
			  "want 10 8192 256", ct_sysctl_read("fs/mqueue/msg_max"),
			  ct_sysctl_read("fs/mqueue/msgsize_max"),
			  ct_sysctl_read("fs/mqueue/queues_max"));
	}

	/* Raise msg_max and msgsize_max: bigger queues fit, one more does not. */
	ct_expect(knob_set("fs/mqueue/msg_max", 50) == 0, "set msg_max 50");
	ct_expect(knob_set("fs/mqueue/msgsize_max", 16384) == 0, "set msgsize_max 16384");
	q[0] = open_q(name[0], 50, 16);
	ct_expect(q[0] != (mqd_t)-1, "maxmsg 50 with msg_max 50: %m");
	mq_close(q[0]);
	mq_unlink(name[0]);
	ct_expect_errno(open_q(name[0], 51, 16), EINVAL, "maxmsg 51 with msg_max 50");
	q[0] = open_q(name[0], 2, 16384);
	ct_expect(q[0] != (mqd_t)-1, "msgsize 16384 with msgsize_max 16384: %m");
	mq_close(q[0]);
	mq_unlink(name[0]);
	ct_expect_errno(open_q(name[0], 2, 16385), EINVAL, "msgsize 16385");

	/* Lower msg_max below a request that used to fit. */
	ct_expect(knob_set("fs/mqueue/msg_max", 3) == 0, "set msg_max 3");
	ct_expect_errno(open_q(name[0], 4, 16), EINVAL, "maxmsg 4 with msg_max 3");

	/* Defaults for attr == NULL. */
	ct_expect(knob_set("fs/mqueue/msg_default", 2) == 0, "set msg_default 2");
	ct_expect(knob_set("fs/mqueue/msgsize_default", 200) == 0,
		  "set msgsize_default 200 (the minimum is 128)");
	q[0] = open_q(name[0], 0, 0);
	if (ct_expect(q[0] != (mqd_t)-1, "open with default attributes: %m")) {
		mq_getattr(q[0], &a);
		ct_expect(a.mq_maxmsg == 2 && a.mq_msgsize == 200,
			  "default attributes %ld/%ld, want 2/200", a.mq_maxmsg, a.mq_msgsize);
		mq_close(q[0]);
	}
	mq_unlink(name[0]);

	if (global_mode) {
		/* Others may hold queues: at queues_max 1 our second one cannot fit. */
		ct_expect(knob_set("fs/mqueue/queues_max", 1) == 0, "set queues_max 1");
		q[0] = open_q(name[0], 1, 16);
		ct_expect_errno(open_q(name[1], 1, 16), ENOSPC, "second queue with queues_max 1");
		if (q[0] != (mqd_t)-1)
			mq_close(q[0]);
		mq_unlink(name[0]);
		mq_unlink(name[1]);
		goto range;
	}
	/* queues_max 2: the third queue is ENOSPC. */
	ct_expect(knob_set("fs/mqueue/queues_max", 2) == 0, "set queues_max 2");
	q[0] = open_q(name[0], 1, 16);
	q[1] = open_q(name[1], 1, 16);
	ct_expect(q[0] != (mqd_t)-1 && q[1] != (mqd_t)-1, "two queues with queues_max 2: %m");
	ct_expect_errno(open_q(name[2], 1, 16), ENOSPC, "third queue with queues_max 2");
	mq_close(q[0]);
	mq_unlink(name[0]);
	q[2] = open_q(name[2], 1, 16);
	ct_expect(q[2] != (mqd_t)-1, "a queue after one was unlinked: %m");
	mq_close(q[1]);
	mq_close(q[2]);
	mq_unlink(name[1]);
	mq_unlink(name[2]);

range:
	/* Range checks. */
	ct_expect(knob_set("fs/mqueue/msg_max", 0) == -EINVAL, "msg_max 0 accepted");
	ct_expect(knob_set("fs/mqueue/msg_max", 65537) == -EINVAL, "msg_max 65537 accepted");
	ct_expect(knob_set("fs/mqueue/msgsize_max", 127) == -EINVAL, "msgsize_max 127 accepted");
	return ct_result();
}

static int in_namespace(void *arg)
{
	(void)arg;
	if (unshare(CLONE_NEWIPC)) {
		/* EINVAL: no CONFIG_IPC_NS; say so through a distinct status. */
		ct_log("unshare(CLONE_NEWIPC): %m");
		return EXIT_SKIP;
	}
	return checks();
}

/* The whole machine is ours: a lab guest, or the caller says so. */
static bool may_change_global(void)
{
	const char *accel = getenv("IPCBENCH_ACCEL"), *ok = getenv("CT_GLOBAL_SYSCTLS");

	return (accel && (!strcmp(accel, "kvm") || !strcmp(accel, "tcg"))) ||
	       (ok && !strcmp(ok, "1"));
}

int main(void)
{
	long before[NR_KNOBS];
	int status, i;
	pid_t pid;

	ct_require_root("creates an IPC namespace to change its fs/mqueue sysctls");
	ct_watchdog(30, "mq_sysctl_limits");
	ct_require_mqueue();
	for (i = 0; i < NR_KNOBS; i++)
		before[i] = ct_sysctl_read(knobs[i]);

	pid = ct_spawn(in_namespace, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	status = ct_wait(pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_SKIP) {
		if (!may_change_global())
			ct_skip("no IPC namespaces here, and the global fs/mqueue limits are not "
				"ours to change (IPCBENCH_ACCEL=kvm|tcg or CT_GLOBAL_SYSCTLS=1 allow)");
		ct_log("no IPC namespaces: changing the global limits, restored at exit");
		global_mode = true;
		ct_expect(checks() == EXIT_OK, "checks on the global limits failed");
		ct_sysctl_restore();
		for (i = 0; i < NR_KNOBS; i++)
			ct_expect(ct_sysctl_read(knobs[i]) == before[i],
				  "%s not restored: %lld, was %ld", knobs[i],
				  ct_sysctl_read(knobs[i]), before[i]);
		return ct_result();
	}
	ct_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "namespace child failed (status %#x)", status);
	for (i = 0; i < NR_KNOBS; i++)
		ct_expect(ct_sysctl_read(knobs[i]) == before[i],
			  "host %s changed: %lld, was %ld", knobs[i],
			  ct_sysctl_read(knobs[i]), before[i]);
	return ct_result();
}
