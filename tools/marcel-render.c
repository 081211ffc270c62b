/*
 * marcel-render: pictures of placement from the two files that marcel and marcel-sim both
 * write -- a snapshot (marcel_sched_snapshot_json) drawn as an SVG of the run-queue tree,
 * and a trace (MARCEL_TRACE) turned into one self-contained HTML page that replays it. It
 * reads those files only, through tools/trace-json.h, and links nothing of the runtime, so
 * a live run and a simulated one draw alike. This file is the command: its arguments,
 * where the output goes, and the exits every part takes on a bad input or no memory; the
 * parts are listed in marcel-render.h.
 *
 * Every input is checked in full before anything is written: a file that is not JSON,
 * or not a snapshot or trace as marcel writes them, gets one line naming it and exit 2.
 * The output goes to a temporary file renamed over OUT at the end, so a failure leaves
 * OUT as it was. Same input, same bytes: nothing depends on time, addresses or hashing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "marcel-render.h"

const char mr_prog[] = "marcel-render";

/* ---- errors and memory ---- */

void mr_bad(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: %s: ", mr_prog, file);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

static void mr_no_memory(void) __attribute__((noreturn));
static void mr_no_memory(void)
{
	fprintf(stderr, "%s: out of memory\n", mr_prog);
	exit(1);
}

void *mr_alloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		mr_no_memory();
	return p;
}

/* Grows array a (*n elements of sz bytes, room for *cap) by one zeroed element at its
 * end; returns the array, which may have moved. */
void *mr_grow(void *a, unsigned *n, unsigned *cap, size_t sz)
{
	if (*n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 16;
		a = realloc(a, (size_t)ncap * sz);
		if (!a)
			mr_no_memory();
		*cap = ncap;
	}
	memset((char *)a + (size_t)(*n)++ * sz, 0, sz);
	return a;
}

void mr_add_int(int **a, unsigned *n, unsigned *cap, int v)
{
	*a = mr_grow(*a, n, cap, sizeof(int));
	(*a)[*n - 1] = v;
}

char *mr_read(const char *file, size_t *len)
{
	char *text = tj_read_file(file, len);
	if (!text)
		mr_bad(file, "cannot read: %s", strerror(errno));
	return text;
}

/* ---- output ---- */

/* Where the output goes: a temporary file beside OUT, renamed over it by mr_out_close.
 * An OUT that exists and is not a regular file (a device, a pipe: /dev/null, /dev/stdout)
 * is written directly: renaming over it would replace the device itself. */
struct mr_out {
	FILE *f;
	const char *path;                 /* NULL: standard output */
	char *tmp;                        /* NULL: written in place */
};

static void mr_out_open(struct mr_out *o, const char *path)
{
	o->path = path;
	o->tmp = NULL;
	if (!path) {
		o->f = stdout;
		return;
	}
	struct stat st;
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		o->f = fopen(path, "w");
		if (!o->f) {
			fprintf(stderr, "%s: %s: %s\n", mr_prog, path, strerror(errno));
			exit(1);
		}
		return;
	}
	o->tmp = mr_alloc(strlen(path) + 16);
	sprintf(o->tmp, "%s.XXXXXX", path);
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: cannot create a file beside it: %s\n", mr_prog, path, strerror(errno));
		exit(1);
	}
	/* mkstemp makes it private; the picture gets the mode a plain fopen would give. */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		fprintf(stderr, "%s: %s: %s\n", mr_prog, path, strerror(errno));
		unlink(o->tmp);
		exit(1);
	}
}

static int mr_out_close(struct mr_out *o)
{
	int bad = fflush(o->f) != 0 || ferror(o->f);
	int e = errno;
	if (o->path) {
		if (fclose(o->f) != 0 && !bad)
			bad = 1, e = errno;
		if (o->tmp && !bad && rename(o->tmp, o->path))
			bad = 1, e = errno;
		if (o->tmp && bad)
			unlink(o->tmp);
		free(o->tmp);
	}
	if (bad) {
		fprintf(stderr, "%s: %s: cannot write: %s\n", mr_prog, o->path ? o->path : "standard output",
			strerror(e ? e : EIO));
		return 1;
	}
	return 0;
}

/* ---- the two commands ---- */

static int mr_snapshot(const char *in, const char *out)
{
	struct mr_snap s;
	mr_snap_load(&s, in);
	struct mr_out o;
	mr_out_open(&o, out);
	mr_svg(&s, o.f);
	mr_snap_free(&s);
	return mr_out_close(&o);
}

static int mr_movie(const char *in, const char *out)
{
	struct mr_movie m;
	mr_movie_load(&m, in);
	struct mr_out o;
	mr_out_open(&o, out);
	mr_page(o.f, &m);
	mr_movie_free(&m);
	return mr_out_close(&o);
}

/* ---- command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s snapshot FILE.json [-o OUT.svg]\n"
		"       %s movie TRACE.json [-o OUT.html]\n"
		"\n"
		"snapshot: draws a scheduler snapshot (marcel_sched_snapshot_json, or marcel-sim\n"
		"  --snapshot) as SVG: the run-queue tree as nested boxes (machine, NUMA nodes,\n"
		"  caches, cores, then each VP's own queue with its hwprio level; a queue holding\n"
		"  nothing with one child is drawn as that child, \"Core5 / VP5\"), the threads as\n"
		"  chips labelled with their ids in the box of the queue they are on (running ones\n"
		"  outlined in black in their VP's box, blocked or unstarted ones faded, threads on\n"
		"  no queue in a box of their own), bubbles as outlines around their members in\n"
		"  each box where members are. Threads take the colour of their outermost explicit\n"
		"  bubble (not counting one that holds every thread in bubbles); a legend says\n"
		"  which. Big machines: each box lays its children out in a grid about 1.6 times as\n"
		"  wide as high; a queue draws at most %d threads and %d bubbles, a VP's queue %d\n"
		"  threads, and says how many more it holds; beyond %d VPs the boxes are compact\n"
		"  (bubbles as outlines without their nesting, %d per queue, %d threads per VP):\n"
		"  1024 VPs draw in about 5800 x 3100 pixels.\n"
		"movie: turns a trace (MARCEL_TRACE, or marcel-sim --trace) into one HTML page,\n"
		"  with no outside reference, that replays it: a time slider, play/pause, each VP\n"
		"  with the thread it runs (coloured as above, from the trace's bubble insert\n"
		"  events; by thread when the trace has none, and the page says so), idle or not,\n"
		"  and its hwprio level; a timeline of every VP, and the log of scheduler events\n"
		"  up to the cursor. Large traces: at most %u thread slices (the shortest go\n"
		"  first), %u log events and %u level changes; the page says what was left out.\n"
		"\n"
		"Writes to OUT (replaced only once complete), or to standard output. Exit\n"
		"status 2 for a bad command line or an input that is not JSON or not what marcel\n"
		"writes (one line says what is wrong), 1 if the output cannot be written.\n",
		mr_prog, mr_prog, MR_CAP_ITEM, MR_CAP_ITEM, MR_CAP_VP, MR_COMPACT_VPS, MR_CAP_ITEM_COMPACT, MR_CAP_VP_COMPACT,
		MR_MAX_SLICES, MR_MAX_EVENTS, MR_MAX_HW);
}

int main(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	const char *cmd = argc > 1 ? argv[1] : "", *in = NULL, *out = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-o")) {
			if (i + 1 >= argc || out) {
				fprintf(stderr, "%s: -o %s\n", mr_prog, out ? "given twice" : "needs a file name");
				usage(stderr);
				return 2;
			}
			out = argv[++i];
		} else if (!in && argv[i][0] != '-') {
			in = argv[i];
		} else {
			fprintf(stderr, "%s: unexpected argument '%s'\n", mr_prog, argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if ((strcmp(cmd, "snapshot") && strcmp(cmd, "movie")) || !in) {
		if (*cmd && strcmp(cmd, "snapshot") && strcmp(cmd, "movie"))
			fprintf(stderr, "%s: unknown command '%s' (snapshot or movie)\n", mr_prog, cmd);
		else
			fprintf(stderr, "%s: %s\n", mr_prog, *cmd ? "no input file" : "no command");
		usage(stderr);
		return 2;
	}
	return cmd[0] == 's' ? mr_snapshot(in, out) : mr_movie(in, out);
}
