/* SPDX-License-Identifier: MIT */
/*
 * shared.h: what the engine and the conformance suite both need, written once:
 * the exit codes, whole-buffer I/O, the seeded PRNG and sysctls that are put
 * back.  shared.c needs nothing but libc; conformance/Makefile builds it into
 * every conformance test from here.
 */
#ifndef IPC_SHARED_H
#define IPC_SHARED_H

#include <stddef.h>
#include <stdint.h>

/*
 * Exit codes of the engine, its tests and the conformance tests (the
 * automake convention the runners read), and of the Python front end's
 * view of them: 0 ok or pass, 1 failed, 2 usage error, 77 skipped.
 */
enum {
	EXIT_OK		= 0,
	EXIT_FAIL	= 1,
	EXIT_USAGE	= 2,
	EXIT_SKIP	= 77,
};

/*
 * write()/read() all of @len, retrying short transfers and EINTR: 0, or
 * -errno of the call that failed (what was moved before it is lost to the
 * caller, who asked for all of it).  read_full() returns -EPIPE on EOF
 * before @len.
 */
int write_full(int fd, const void *buf, size_t len);
int read_full(int fd, void *buf, size_t len);

/* xorshift64*: reproducible random choices from a seed (0 is replaced). */
uint64_t rng_next(uint64_t *state);

/*
 * sysctls: sysctl_set() writes a /proc/sys file, remembering the value the
 * machine had the first time; sysctl_restore() writes every remembered value
 * back (async-signal-safe: for exit paths, signal handlers and watchdogs)
 * and returns how many it could not; a forked child calls sysctl_forget(),
 * so that only its parent restores.  Returns 0 or -errno.
 */
int sysctl_set(const char *path, const char *value);
/* The file's first line without its trailing newline/blanks; 0 or -errno. */
int sysctl_read(const char *path, char *buf, size_t len);
int sysctl_restore(void);
void sysctl_forget(void);

#endif /* IPC_SHARED_H */
