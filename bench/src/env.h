/* SPDX-License-Identifier: MIT */
/* env.h: the machine facts recorded with every sample. */
#ifndef IPCBENCH_ENV_H
#define IPCBENCH_ENV_H

#include "strbuf.h"

struct env_info {
	char kernel[128];
	char cpu[128];
	char thp[32];
	char accel[16];
	char clock[48];
	char hostname[80];
	long nproc;
	long long pipe_max_size;
};

void env_probe(struct env_info *e);
/* Append the env as a JSON object. */
void env_json(const struct env_info *e, struct strbuf *sb);

#endif
