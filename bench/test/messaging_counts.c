// SPDX-License-Identifier: MIT
/*
 * messaging delivers every message: groups x senders x receivers x loops,
 * with processes and with --threads, and ends (a receiver short of its
 * messages would block until the test's limit).
 */
#include "engine_run.h"

static int run(const char *engine, bool threads)
{
	char *args[] = { (char *)engine, "messaging", "--json", "--groups", "2", "--senders", "3",
			 "--receivers", "4", "--loops", "50", threads ? "--threads" : NULL, NULL };
	struct engine_result res;
	double msgs, rate;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (res.status != 0 || !json_metric(res.out, "messages", &msgs) ||
	    !json_metric(res.out, "messages_per_s", &rate))
		t_fail(&res, "want exit 0 with messages and messages_per_s");
	else if (msgs != 2 * 3 * 4 * 50 || !(rate > 0))
		t_fail(&res, "%g messages at %g/s, want 1200", msgs, rate);
	else
		ret = EXIT_OK;
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	static const char *const bad[] = { "--duration", "1", NULL };
	int ret = run(engine, false);

	if (ret == EXIT_OK)
		ret = run(engine, true);
	if (ret == EXIT_OK && expect_usage_error(engine, "messaging", bad, "--duration"))
		ret = EXIT_FAIL;
	return ret;
}
