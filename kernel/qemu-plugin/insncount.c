// SPDX-License-Identifier: MIT
/*
 * insncount.c: a QEMU TCG plugin that counts the guest instructions executed at each code
 * address, window by window, for `ipclab ... --deterministic --profile`.
 *
 * Every translation block gets an inline counter of its executions. A window ends each time
 * the guest enters the marker address (the host passes the kernel's __x64_sys_swapoff, a
 * system call nothing else makes, which the guest's profile pass calls around each cell); at that
 * point the instructions each block executed since the last marker are appended to the
 * output file:
 *
 *   window N
 *   <block start address in hex> <instructions>     (kernel blocks)
 *   user <instructions>                               (all user-space blocks together)
 *
 * The host maps the addresses to functions with the image's System.map. Counts are exact
 * up to blocks cut short by an exception, which are counted whole.
 *
 * Only the plugin ABI is needed, so the few declarations below stand in for QEMU's
 * qemu-plugin.h (API version 1, QEMU 7.2), which Debian does not package.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
					  enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
					      enum qemu_plugin_op op, void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define KERNEL_START 0xffff800000000000ULL

struct block {
	uint64_t vaddr;
	uint64_t insns;		/* instructions in the block */
	uint64_t runs;		/* executions, bumped inline by the translated code */
	uint64_t seen;		/* runs at the last window's end */
};

static struct block **blocks;
static size_t nblocks, cap;
static uint64_t marker;
static unsigned long window;
static FILE *out;

static void end_window(unsigned int vcpu, void *udata)
{
	uint64_t user = 0;
	size_t i;

	(void)vcpu;
	(void)udata;
	fprintf(out, "window %lu\n", window++);
	for (i = 0; i < nblocks; i++) {
		struct block *b = blocks[i];
		uint64_t d = b->runs - b->seen;

		if (!d)
			continue;
		b->seen = b->runs;
		if (b->vaddr >= KERNEL_START)
			fprintf(out, "%" PRIx64 " %" PRIu64 "\n", b->vaddr, d * b->insns);
		else
			user += d * b->insns;
	}
	fprintf(out, "user %" PRIu64 "\n", user);
	fflush(out);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b;

	(void)id;
	if (nblocks == cap) {
		cap = cap ? 2 * cap : 65536;
		blocks = realloc(blocks, cap * sizeof(*blocks));
		if (!blocks)
			abort();
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		abort();
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	blocks[nblocks++] = b;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->runs, 1);
	if (b->vaddr == marker)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, end_window, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	end_window(0, NULL);
	fclose(out);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *path = NULL;
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strncmp(argv[i], "marker=", 7))
			marker = strtoull(argv[i] + 7, NULL, 16);
	}
	if (!path || !marker) {
		fprintf(stderr, "insncount: need out=FILE and marker=HEXADDR\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
