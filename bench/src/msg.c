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

int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ipcbench: %s: ", current_workload);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

void skip_reason(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ipcbench: %s: skip: ", current_workload);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void fail_reason(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ipcbench: %s: error: ", current_workload);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

