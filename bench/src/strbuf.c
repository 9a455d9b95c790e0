// SPDX-License-Identifier: MIT
/*
 * strbuf.c: growable strings.  An allocation failure aborts: the engine
 * cannot report anything meaningful without memory for its output.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "strbuf.h"

static void sb_grow(struct strbuf *sb, size_t need)
{
	size_t cap = sb->cap ? sb->cap : 256;

	if (sb->len + need + 1 <= sb->cap)
		return;
	while (cap < sb->len + need + 1)
		cap *= 2;
	sb->s = realloc(sb->s, cap);
	if (!sb->s) {
		fputs("ipcbench: error: out of memory\n", stderr);
		abort();
	}
	sb->cap = cap;
}

void sb_reset(struct strbuf *sb)
{
	sb_grow(sb, 0);
	sb->len = 0;
	sb->s[0] = '\0';
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sb_grow(sb, n);
	va_start(ap, fmt);
	vsnprintf(sb->s + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
}

void sb_json_str(struct strbuf *sb, const char *v)
{
	const unsigned char *p;

	sb_printf(sb, "\"");
	for (p = (const unsigned char *)v; *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_printf(sb, "\\%c", *p);
		else if (*p < 0x20)
			sb_printf(sb, "\\u%04x", *p);
		else
			sb_printf(sb, "%c", *p);
	}
	sb_printf(sb, "\"");
}

void sb_json_num(struct strbuf *sb, double v)
{
	if (!isfinite(v))
		sb_printf(sb, "null");
	else if (v == (double)(long long)v && fabs(v) < 1e15)
		sb_printf(sb, "%lld", (long long)v);
	else
		sb_printf(sb, "%.10g", v);
}

void sb_sep(struct strbuf *sb)
{
	if (sb->len)
		sb_printf(sb, ", ");
}
