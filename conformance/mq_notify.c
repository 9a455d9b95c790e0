// SPDX-License-Identifier: MIT
/*
 * mq_notify: message arrival notification (mq_notify(3)).
 *  - SIGEV_SIGNAL: a message arriving on an empty queue sends the signal,
 *    with si_code SI_MESGQ, our sigev_value and the sender's pid;
 *  - the registration is one-shot: the next arrival sends nothing;
 *  - arrival on a non-empty queue sends nothing;
 *  - a second process cannot register while one is (EBUSY); after the
 *    owner unregisters with NULL, it can;
 *  - no notification when a receiver is blocked in mq_receive(): the
 *    message goes to the receiver (and the registration stays);
 *  - SIGEV_THREAD: the function runs in a new thread with our sigev_value.
 */
#include <errno.h>
#include <mqueue.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ct.h"

static const char *name;
static mqd_t q;
static sigset_t usr1;
static sem_t thread_ran;
static volatile int thread_value;

/* Wait for SIGUSR1 for up to @ms; returns 1 with @si filled, 0 if none. */
static int wait_usr1(siginfo_t *si, long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int sig;

	do {
		sig = sigtimedwait(&usr1, si, &ts);
	} while (sig < 0 && errno == EINTR);
	return sig == SIGUSR1;
}

static int notify_signal(mqd_t mq, int value)
{
	struct sigevent sev = {
		.sigev_notify = SIGEV_SIGNAL,
		.sigev_signo = SIGUSR1,
		.sigev_value.sival_int = value,
	};

	return mq_notify(mq, &sev);
}

static void drain(void)
{
	char buf[64];

	while (mq_receive(q, buf, sizeof(buf), NULL) >= 0)
		;
}

static int register_and_hold(void *arg)
{
	int *ctl = arg;
	mqd_t mq = mq_open(name, O_RDWR);
	char c;

	if (mq == (mqd_t)-1 || notify_signal(mq, 1))
		return 1;
	/* Tell the parent we hold the registration; wait to be told to drop it. */
	if (write(ctl[1], "r", 1) != 1 || read(ctl[2], &c, 1) != 1)
		return 2;
	if (mq_notify(mq, NULL))
		return 3;
	return write(ctl[1], "d", 1) == 1 ? 0 : 4;
}

static int blocked_receiver(void *arg)
{
	mqd_t mq = mq_open(name, O_RDONLY);
	char buf[64];

	(void)arg;
	if (mq == (mqd_t)-1)
		return 1;
	return mq_receive(mq, buf, sizeof(buf), NULL) == 1 ? 0 : 2;
}

static void on_thread(union sigval v)
{
	thread_value = v.sival_int;
	sem_post(&thread_ran);
}

static void check_signal(void)
{
	long wait_ms = (long)(ct_scale(5) * 1000);
	siginfo_t si;

	if (notify_signal(q, 4242))
		ct_fatal("mq_notify: %m");
	if (mq_send(q, "a", 1, 0))
		ct_fatal("mq_send: %m");
	if (ct_expect(wait_usr1(&si, wait_ms), "no signal for a message on an empty queue")) {
		ct_expect(si.si_code == SI_MESGQ, "si_code %d, want SI_MESGQ", si.si_code);
		ct_expect(si.si_value.sival_int == 4242, "sival_int %d", si.si_value.sival_int);
		ct_expect(si.si_pid == getpid(), "si_pid %d, want the sender %d",
			  si.si_pid, getpid());
	}
	/* One-shot: empty again and send: nothing. */
	drain();
	mq_send(q, "b", 1, 0);
	ct_expect(!wait_usr1(&si, 200), "a second signal without re-registering");

	/* Registered while non-empty: a further arrival is not "on an empty queue". */
	if (notify_signal(q, 1))
		ct_fatal("mq_notify: %m");
	mq_send(q, "c", 1, 0);
	ct_expect(!wait_usr1(&si, 200), "signal for a message on a non-empty queue");
	mq_notify(q, NULL);
	drain();
}

static void check_busy(void)
{
	int ctl[4], status;
	char c;
	pid_t pid;

	if (pipe(ctl) || pipe(ctl + 2))
		ct_fatal("pipe: %m");
	pid = ct_spawn(register_and_hold, ctl);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	if (read(ctl[0], &c, 1) != 1)
		ct_fatal("child did not register");
	ct_expect_errno(notify_signal(q, 2), EBUSY, "mq_notify while another process is "
			"registered");
	if (write(ctl[3], "g", 1) != 1 || read(ctl[0], &c, 1) != 1)
		ct_fatal("child did not unregister");
	ct_expect(notify_signal(q, 2) == 0, "mq_notify after the owner unregistered: %m");
	mq_notify(q, NULL);
	status = ct_wait(pid);
	ct_expect(status == 0, "registering child status %#x", status);
}

static void check_blocked_receiver_wins(void)
{
	siginfo_t si;
	int status;
	pid_t pid;

	pid = ct_spawn(blocked_receiver, NULL);
	if (pid < 0)
		ct_fatal("fork: %s", strerror(-pid));
	if (ct_wait_sleeping(pid, ct_scale(5) * 1000))
		ct_fatal("receiver never blocked");
	if (notify_signal(q, 3))
		ct_fatal("mq_notify: %m");
	mq_send(q, "d", 1, 0);
	status = ct_wait(pid);
	ct_expect(status == 0, "blocked receiver did not get the message (status %#x)", status);
	ct_expect(!wait_usr1(&si, 200), "signal sent although a receiver was waiting");
	/* The registration was not used up: the next arrival notifies. */
	mq_send(q, "e", 1, 0);
	ct_expect(wait_usr1(&si, (long)(ct_scale(5) * 1000)),
		  "registration lost after a message went to a blocked receiver");
	drain();
}

static void check_thread(void)
{
	struct sigevent sev = {
		.sigev_notify = SIGEV_THREAD,
		.sigev_notify_function = on_thread,
		.sigev_value.sival_int = 777,
	};
	struct timespec ts;

	sem_init(&thread_ran, 0, 0);
	if (mq_notify(q, &sev))
		ct_fatal("mq_notify SIGEV_THREAD: %m");
	mq_send(q, "f", 1, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)ct_scale(5);
	ct_expect(sem_timedwait(&thread_ran, &ts) == 0, "SIGEV_THREAD function did not run");
	ct_expect(thread_value == 777, "SIGEV_THREAD got sival_int %d", thread_value);
	drain();
}

int main(void)
{
	struct mq_attr attr = { .mq_maxmsg = 4, .mq_msgsize = 64 };

	ct_watchdog(60, "mq_notify: a step blocked");
	ct_require_mqueue();
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	q = ct_mq_create("notify", O_NONBLOCK, &attr, &name);

	check_signal();
	check_busy();
	check_blocked_receiver_wins();
	check_thread();

	mq_close(q);
	mq_unlink(name);
	return ct_result();
}
