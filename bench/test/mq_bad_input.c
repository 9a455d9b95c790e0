// SPDX-License-Identifier: MIT
/*
 * mq-latency refuses impossible values: exit 2 and one line naming the
 * option.  A depth above the kernel's hard limit is impossible even as root.
 */
#include "engine_run.h"

static const struct {
	const char *args[6];
	const char *names;
} cases[] = {
	{ { "--msg-size", "0" }, "--msg-size" },
	{ { "--msg-size", "17M" }, "--msg-size" },
	{ { "--depth", "0" }, "--depth" },
	{ { "--depth", "65537" }, "--depth" },
	{ { "--depth", "many" }, "--depth" },
	{ { "--priorities", "sideways" }, "--priorities" },
	{ { "--copies", "2" }, "--copies" },
	{ { "--stream" }, "--receiver" },
	{ { "--interval", "100" }, "--receiver" },
	{ { "--receiver", "fork" }, "--receiver" },
	{ { "--receiver", "thread", "--msg-size", "4" }, "--msg-size" },
	{ { "--receiver", "thread", "--depth", "4" }, "--depth" },
	{ { "--receiver", "thread", "--stream", "--interval", "5" }, "--interval" },
	{ { "--receiver", "thread", "--stream", "--priorities", "all" }, "--priorities" },
};

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (expect_usage_error(engine, "mq-latency", cases[i].args, cases[i].names))
			return EXIT_FAIL;
	return EXIT_OK;
}
