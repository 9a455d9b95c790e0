// SPDX-License-Identifier: MIT
/*
 * msg.c: the engine's one-line messages.  Every message names the workload,
 * so a line in a long log says where it came from.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

static const char *current_workload = "ipcbench";

void msg_set_workload(const char *name)
{
	current_workload = name;
}

/* "ipcbench: <workload>: <tag><message>" as one line on stderr */
static void say(const char *tag, const char *fmt, va_list ap)
{
	fprintf(stderr, "ipcbench: %s: %s", current_workload, tag);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void skip_reason(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("skip: ", fmt, ap);
	va_end(ap);
}

void fail_reason(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("error: ", fmt, ap);
	va_end(ap);
}
