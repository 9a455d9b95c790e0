// SPDX-License-Identifier: MIT
/*
 * stress_pipe_splice_integrity: stress_pipe_integrity through the splice(2)
 * paths: writers splice their records into the shared pipe from private
 * pipes, readers splice them out into private pipes.  The same checks (no
 * record lost, duplicated, corrupted or split; no stall) and options.
 */
#define STRESS_DEFAULT_SPLICE true
#include "stress_pipe_integrity.c"
