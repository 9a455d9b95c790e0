// SPDX-License-Identifier: MIT
/*
 * env.c: kernel, CPU and IPC settings that change what a number means.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "env.h"
#include "ipcbench.h"

static void read_cpu_model(char *buf, size_t len)
{
	char line[512];
	FILE *f;

	snprintf(buf, len, "unknown");
	f = fopen("/proc/cpuinfo", "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

/* "always [madvise] never" -> "madvise" */
static void read_thp_mode(char *buf, size_t len)
{
	char raw[128], *open, *close;

	snprintf(buf, len, "unavailable");
	if (sysctl_read("/sys/kernel/mm/transparent_hugepage/enabled", raw, sizeof(raw)) < 0)
		return;
	open = strchr(raw, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!open || !close)
		return;
	*close = '\0';
	snprintf(buf, len, "%s", open + 1);
}

void env_probe(struct env_info *e)
{
	const char *accel = getenv("IPCBENCH_ACCEL");
	const char *clock = getenv("IPCBENCH_CLOCK");
	struct utsname u;

	memset(e, 0, sizeof(*e));
	if (uname(&u) == 0) {
		snprintf(e->kernel, sizeof(e->kernel), "%s", u.release);
		snprintf(e->hostname, sizeof(e->hostname), "%s", u.nodename);
	}
	read_cpu_model(e->cpu, sizeof(e->cpu));
	read_thp_mode(e->thp, sizeof(e->thp));
	/* only the kernel lab knows it booted us under emulation; it tells us */
	snprintf(e->accel, sizeof(e->accel), "%s", accel && *accel ? accel : "native");
	/*
	 * Under QEMU icount the guest clock counts instructions, so every time
	 * in a sample is an instruction count; the lab says so through this.
	 */
	snprintf(e->clock, sizeof(e->clock), "%s", clock && *clock ? clock : "real");
	e->nproc = sysconf(_SC_NPROCESSORS_ONLN);
	e->pipe_max_size = sysctl_read_ll("/proc/sys/fs/pipe-max-size");
}

void env_json(const struct env_info *e, struct strbuf *sb)
{
	sb_printf(sb, "{\"kernel\": ");
	sb_json_str(sb, e->kernel);
	sb_printf(sb, ", \"cpu\": ");
	sb_json_str(sb, e->cpu);
	sb_printf(sb, ", \"nproc\": %ld, \"thp\": ", e->nproc);
	sb_json_str(sb, e->thp);
	sb_printf(sb, ", \"pipe_max_size\": %lld, \"accel\": ", e->pipe_max_size);
	sb_json_str(sb, e->accel);
	sb_printf(sb, ", \"clock\": ");
	sb_json_str(sb, e->clock);
	sb_printf(sb, ", \"hostname\": ");
	sb_json_str(sb, e->hostname);
	sb_printf(sb, "}");
}
