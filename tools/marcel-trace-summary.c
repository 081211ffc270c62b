/*
 * marcel-trace-summary: what a MARCEL_TRACE file holds, per VP, without opening a UI --
 * slices (threads run), busy and idle fractions, and how many of each instant event.
 * Exits 1 if the file is not valid JSON or breaks the rules the Perfetto UI relies on,
 * so scripts can use it as a check.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "trace-json.h"

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s TRACE.json\n"
		"Prints, for each track of a trace written with MARCEL_TRACE (VP0, VP1, ...,\n"
		"outside), the number of thread slices and the fraction of the trace's span spent\n"
		"in slices (busy) and between idle start/stop (idle); then the count of each\n"
		"instant event. Exit status 1 if the file is invalid or its slices do not nest.\n",
		prog);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout, argv[0]);
		return 0;
	}
	if (argc != 2) {
		usage(stderr, argv[0]);
		return 2;
	}
	size_t len;
	char *text = tj_read_file(argv[1], &len);
	if (!text) {
		fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
		return 1;
	}
	struct tj_parser ps;
	struct tj_summary s;
	memset(&s, 0, sizeof(s));
	int r = tj_parse(&ps, text, len, tj_sum_event, &s);
	free(text);
	if (r) {
		fprintf(stderr, "%s: %s: not a valid trace: %s\n", argv[0], argv[1], ps.err);
		tj_sum_free(&s);
		return 1;
	}
	tj_sum_finish(&s);
	double span = s.has_ts ? s.last_ts - s.first_ts : 0;
	printf("%s: %u tracks, %lu events, %.3f us\n", argv[1], s.nb_tracks, s.nb_events, span);
	printf("%-10s %10s %7s %7s\n", "track", "slices", "busy", "idle");
	for (unsigned i = 0; i < s.nb_tracks; i++) {
		const struct tj_track *t = &s.tracks[i];
		printf("%-10s %10lu %6.1f%% %6.1f%%\n", t->name, t->slices, span > 0 ? 100 * t->busy_us / span : 0.0,
		       span > 0 ? 100 * t->idle_us / span : 0.0);
	}
	for (unsigned i = 0; i < s.nb_counts; i++)
		printf("event %10lu  %s\n", s.counts[i].n, s.counts[i].name);
	int bad = s.nb_errors != 0;
	if (bad)
		fprintf(stderr, "%s: %s: %lu problem(s), the first: %s\n", argv[0], argv[1], s.nb_errors,
			s.first_error);
	tj_sum_free(&s);
	return bad;
}
