/* SPDX-License-Identifier: MIT */
/* strbuf.h: a growable string for building JSON and text reports. */
#ifndef IPCBENCH_STRBUF_H
#define IPCBENCH_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *s;
	size_t len, cap;
};

void sb_reset(struct strbuf *sb);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append v as a JSON string literal, quoted and escaped. */
void sb_json_str(struct strbuf *sb, const char *v);
/* Append a JSON number; non-finite values become null. */
void sb_json_num(struct strbuf *sb, double v);
/* Append ", " unless the buffer is empty: for building comma lists. */
void sb_sep(struct strbuf *sb);

#endif
