/*
 * marcel-topo: prints the topology the runtime sees -- the level tree with run-queue
 * names and the VP -> PU map -- under the same MARCEL_* variables and --marcel-*
 * arguments a program would get, then hwprio's backends with what their probes find.
 */
#include <stdio.h>
#include <string.h>
#include <marcel.h>

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s [--marcel-topology SPEC] [--marcel-nvp N] [--marcel-smt 0|1] "
			       "[--marcel-maxarity N]\n"
			       "Prints the run-queue tree and VP map marcel builds, then the hardware-"
			       "priority backends and whether each can be used here; the MARCEL_* "
			       "environment variables are honoured too.\n",
			       argv[0]);
			return 0;
		}
	if (marcel_init(&argc, argv))
		return 1;
	if (argc > 1) {
		fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", argv[0], argv[1]);
		marcel_end();
		return 1;
	}
	marcel_topo_fprint(stdout);
	printf("hwprio backends (MARCEL_HWPRIO):\n");
	for (unsigned i = 0; i < marcel_hwprio_backend_count(); i++) {
		struct marcel_hwprio_backend_info b;
		if (marcel_hwprio_backend(i, &b))
			continue;
		static const char *const presence[] = { "present", "absent", "needs privilege" };
		printf("  %-12s %-15s levels %+d..%+d%s  %s%s%s\n", b.name, presence[b.presence], b.lo, b.hi,
		       b.active ? ", in use" : "", b.description, b.reason[0] ? ": " : "", b.reason);
	}
	marcel_end();
	return 0;
}
