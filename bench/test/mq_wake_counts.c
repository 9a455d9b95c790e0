// SPDX-License-Identifier: MIT
/*
 * mq-latency --receiver: one message at a time times exactly --count
 * messages (the untimed first one aside), with a thread or a process as the
 * receiver; --stream delivers every one of --count messages, the stop
 * message after them even with random priorities.
 */
#include "engine_run.h"

static int run(const char *engine, const char *receiver, bool stream, const char *metric)
{
	char *args[] = { (char *)engine, "mq-latency", "--json", "--receiver", (char *)receiver,
			 "--count", "300", stream ? "--stream" : "--interval",
			 stream ? "--priorities" : "20", stream ? "random" : NULL, NULL };
	struct engine_result res;
	double msgs, v;
	int ret = EXIT_FAIL;

	if (engine_run(args, 20, &res))
		return EXIT_FAIL;
	if (t_skipped(&res)) {
		ret = EXIT_SKIP;
	} else if (res.status != 0 || !json_metric(res.out, "messages", &msgs) ||
		   !json_metric(res.out, metric, &v)) {
		t_fail(&res, "%s: want exit 0 with messages and %s", receiver, metric);
	} else if (msgs != 300 || !(v > 0) || v > 1e9) {
		t_fail(&res, "%s: %g messages (want 300), %s %g", receiver, msgs, metric, v);
	} else if (!stream && !strstr(res.out, "\"wake\": {\"unit\": \"ns\", \"count\": 300,")) {
		t_fail(&res, "%s: the wake histogram does not hold 300 messages", receiver);
	} else {
		ret = EXIT_OK;
	}
	engine_result_free(&res);
	return ret;
}

int main(int argc, char **argv)
{
	const char *engine = engine_path(argc, argv);
	int ret;

	if ((ret = run(engine, "thread", false, "wake_latency_ns")) != EXIT_OK ||
	    (ret = run(engine, "process", false, "wake_latency_ns")) != EXIT_OK ||
	    (ret = run(engine, "process", true, "ns_per_message")) != EXIT_OK)
		return ret;
	return run(engine, "thread", true, "ns_per_message");
}
