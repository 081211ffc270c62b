/*
 * Runtime options from MARCEL_* environment variables and --marcel-* arguments.
 * Arguments win over the environment. A bad value is reported in one line naming the
 * variable or flag, the value and what is accepted; nothing is silently defaulted.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ma_sched.h"
#include "ma_metrics.h"

extern char **environ;

#define MA_DEFAULT_STACK_SIZE ((size_t)128 * 1024)
#define MA_DEFAULT_MAXARITY 8u
/* Marcel's: long enough that the switches cost under 1% (bench_preempt), short enough
 * that a busy-wait on a flag another thread of its VP sets ends soon. Only where
 * preemption works; elsewhere the default is cooperative, silently. */
#define MA_DEFAULT_TIMESLICE_US 10000u

typedef int (*ma_opt_parser)(struct ma_options *o, const char *v, const char **accepted);

static int ma_parse_uint(const char *v, unsigned long long min, unsigned long long max,
			 unsigned long long *out)
{
	/* strtoull would accept leading blanks and signs: only digits are a count. */
	if (*v < '0' || *v > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || *end || x < min || x > max)
		return -1;
	*out = x;
	return 0;
}

static int ma_opt_nvp(struct ma_options *o, const char *v, const char **accepted)
{
	unsigned long long x;
	*accepted = "a whole number of workers from 1 to " MA_STR(MARCEL_NBMAXVPS);
	if (ma_parse_uint(v, 1, MARCEL_NBMAXVPS, &x))
		return -1;
	o->nvp = (unsigned)x;
	return 0;
}

static int ma_opt_smt(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "0 (one worker per core) or 1 (one worker per hardware thread)";
	if (strcmp(v, "0") && strcmp(v, "1"))
		return -1;
	o->smt = v[0] == '1';
	return 0;
}

static int ma_opt_maxarity(struct ma_options *o, const char *v, const char **accepted)
{
	unsigned long long x;
	*accepted = "a whole number from 2 to 1024";
	if (ma_parse_uint(v, 2, 1024, &x))
		return -1;
	o->maxarity = (unsigned)x;
	return 0;
}

static int ma_opt_topology(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "a hwloc synthetic description such as \"pack:2 numa:2 core:4 pu:2\", or @file.xml";
	if (!*v || strlen(v) >= sizeof(o->topology_buf))
		return -1;
	strcpy(o->topology_buf, v);
	o->topology = o->topology_buf;
	return 0;
}

static int ma_opt_stack_size(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "a size in bytes from 16k to 1G, with an optional k, M or G suffix";
	if (*v < '0' || *v > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno || end == v)
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || x > (MARCEL_STACK_MAX >> shift))
		return -1;
	x <<= shift;
	if (x < MARCEL_STACK_MIN || x > MARCEL_STACK_MAX)
		return -1;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	o->stack_size = ((size_t)x + page - 1) & ~(page - 1);
	return 0;
}

/* 'auto' (-1 in *out) or a count from 0 to 1000000. */
static int ma_parse_count_or_auto(const char *v, long *out)
{
	unsigned long long x;
	if (!strcmp(v, "auto")) {
		*out = -1;
		return 0;
	}
	if (ma_parse_uint(v, 0, 1000000, &x))
		return -1;
	*out = (long)x;
	return 0;
}

static int ma_opt_spin(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "a number of polling rounds from 0 (block at once) to 1000000, or 'auto'";
	return ma_parse_count_or_auto(v, &o->spin);
}

static int ma_opt_idle_spin(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "microseconds an idle worker polls before sleeping, from 0 to 1000000, or 'auto'";
	return ma_parse_count_or_auto(v, &o->idle_spin_us);
}

/* A value an upper layer checks (check NULL: accepted as is), kept in buf. */
static int ma_opt_checked(const char *v, const char *(*check)(const char *), const char *what, char *buf,
			  size_t size, const char **out, const char **accepted)
{
	const char *why = check && *v ? check(v) : NULL;
	*accepted = why ? why : what;
	if (!*v || strlen(v) >= size || why)
		return -1;
	strcpy(buf, v);
	*out = buf;
	return 0;
}

static int ma_opt_bubble_sched(struct ma_options *o, const char *v, const char **accepted)
{
	const struct ma_option_checks *c = o->checks;
	return ma_opt_checked(v, c && strcmp(v, "list") ? c->sched : NULL, "the name of a bubble scheduler",
			      o->bubble_sched_buf, sizeof(o->bubble_sched_buf), &o->bubble_sched, accepted);
}

static int ma_opt_hwprio(struct ma_options *o, const char *v, const char **accepted)
{
	return ma_opt_checked(v, o->checks ? o->checks->hwprio : NULL, "auto, none or backend names",
			      o->hwprio_buf, sizeof(o->hwprio_buf), &o->hwprio, accepted);
}

static int ma_opt_hwprio_policy(struct ma_options *o, const char *v, const char **accepted)
{
	return ma_opt_checked(v, o->checks ? o->checks->hwprio_policy : NULL, "the name of a hwprio policy",
			      o->hwprio_policy_buf, sizeof(o->hwprio_policy_buf), &o->hwprio_policy, accepted);
}

static int ma_opt_timeslice(struct ma_options *o, const char *v, const char **accepted)
{
	unsigned long long x;
	*accepted = "a time slice in microseconds, 0 (cooperative) or from 10 to 10000000";
	if (ma_parse_uint(v, 0, 10000000, &x) || (x && x < 10))
		return -1;
	o->timeslice_us = (unsigned)x;
	o->timeslice_given = 1;
	return 0;
}

static int ma_opt_trace(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "the path of the trace file to write";
	if (!*v || strlen(v) >= sizeof(o->trace_buf))
		return -1;
	strcpy(o->trace_buf, v);
	o->trace = o->trace_buf;
	return 0;
}

static int ma_opt_debug(struct ma_options *o, const char *v, const char **accepted)
{
	*accepted = "0 (quiet) or 1 (name threads a wait may never see end, and threads that "
		    "leave __thread data behind when they move)";
	if (strcmp(v, "0") && strcmp(v, "1"))
		return -1;
	o->debug = v[0] == '1';
	return 0;
}

static int ma_opt_metrics(struct ma_options *o, const char *v, const char **accepted)
{
	static const char *const names[] = { [MA_METRICS_AUTO] = "auto", [MA_METRICS_OFF] = "off",
					     [MA_METRICS_HINTS] = "hints", [MA_METRICS_PERF] = "perf" };
	*accepted = "auto (hardware counters while a strategy reads the load metrics, else the "
		    "application's hints), off, hints or perf";
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i])) {
			o->metrics = (int)i;
			return 0;
		}
	return -1;
}

static const struct {
	const char *env;
	const char *flag;
	ma_opt_parser parse;
} ma_opts[] = {
	{ "MARCEL_NVP", "--marcel-nvp", ma_opt_nvp },
	{ "MARCEL_SMT", "--marcel-smt", ma_opt_smt },
	{ "MARCEL_TOPOLOGY", "--marcel-topology", ma_opt_topology },
	{ "MARCEL_MAXARITY", "--marcel-maxarity", ma_opt_maxarity },
	{ "MARCEL_STACK_SIZE", "--marcel-stack-size", ma_opt_stack_size },
	{ "MARCEL_SPIN", "--marcel-spin", ma_opt_spin },
	{ "MARCEL_IDLE_SPIN", "--marcel-idle-spin", ma_opt_idle_spin },
	{ "MARCEL_BUBBLE_SCHEDULER", "--marcel-bubble-scheduler", ma_opt_bubble_sched },
	{ "MARCEL_TIMESLICE", "--marcel-timeslice", ma_opt_timeslice },
	{ "MARCEL_TRACE", "--marcel-trace", ma_opt_trace },
	{ "MARCEL_DEBUG", "--marcel-debug", ma_opt_debug },
	{ "MARCEL_HWPRIO", "--marcel-hwprio", ma_opt_hwprio },
	{ "MARCEL_HWPRIO_POLICY", "--marcel-hwprio-policy", ma_opt_hwprio_policy },
	{ "MARCEL_METRICS", "--marcel-metrics", ma_opt_metrics },
};
#define MA_NB_OPTS (sizeof(ma_opts) / sizeof(ma_opts[0]))

/* Read elsewhere: by the libraries built on libmarcel (libmarcel-preload), and by
 * marcel_init's steps when MARCEL_DEBUG is set (startup.c). */
static const char *const ma_companion_env[] = {
	"MARCEL_PRELOAD_REPORT",
	"MARCEL_DEBUG_FAIL",
	/* Where hwprio's backends find the system's files (fake trees in tests). */
	"MARCEL_HWPRIO_SYSFS",
	"MARCEL_HWPRIO_RESCTRL",
};

static void ma_check_unknown_env(void)
{
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "MARCEL_", 7))
			continue;
		size_t len = strcspn(*e, "=");
		int known = 0;
		for (size_t i = 0; i < MA_NB_OPTS && !known; i++)
			known = strlen(ma_opts[i].env) == len && !strncmp(*e, ma_opts[i].env, len);
		for (size_t i = 0; i < sizeof(ma_companion_env) / sizeof(*ma_companion_env) && !known; i++)
			known = strlen(ma_companion_env[i]) == len && !strncmp(*e, ma_companion_env[i], len);
		if (!known) {
			fprintf(stderr, "marcel: warning: unknown environment variable %.*s (known:", (int)len, *e);
			for (size_t i = 0; i < MA_NB_OPTS; i++)
				fprintf(stderr, " %s", ma_opts[i].env);
			fprintf(stderr, ")\n");
		}
	}
}

static void ma_remove_args(int *argc, char **argv, int at, int n)
{
	for (int i = at; i + n <= *argc; i++)
		argv[i] = argv[i + n];
	*argc -= n;
}

int ma_options_parse(struct ma_options *o, int *argc, char **argv, const struct ma_option_checks *checks)
{
	memset(o, 0, sizeof(*o));
	o->checks = checks;
	o->maxarity = MA_DEFAULT_MAXARITY;
	o->stack_size = MA_DEFAULT_STACK_SIZE;
	o->spin = -1;
	o->idle_spin_us = -1;
	o->timeslice_us = MA_DEFAULT_TIMESLICE_US;
	const char *accepted = "";

	for (size_t i = 0; i < MA_NB_OPTS; i++) {
		const char *v = getenv(ma_opts[i].env);
		if (v && ma_opts[i].parse(o, v, &accepted)) {
			fprintf(stderr, "marcel: %s='%s': expected %s\n", ma_opts[i].env, v, accepted);
			return EINVAL;
		}
		if (v && ma_opts[i].parse == ma_opt_topology)
			o->topology_src = ma_opts[i].env;
	}
	ma_check_unknown_env();

	if (!argc || !argv)
		return 0;
	for (int a = 1; a < *argc;) {
		const char *arg = argv[a];
		if (!arg || strncmp(arg, "--marcel-", 9)) {
			a++;
			continue;
		}
		if (!strcmp(arg, "--marcel-list-schedulers")) {
			strcpy(o->bubble_sched_buf, "list");
			o->bubble_sched = o->bubble_sched_buf;
			ma_remove_args(argc, argv, a, 1);
			continue;
		}
		size_t i, nlen = strcspn(arg, "=");
		for (i = 0; i < MA_NB_OPTS; i++)
			if (strlen(ma_opts[i].flag) == nlen && !strncmp(arg, ma_opts[i].flag, nlen))
				break;
		if (i == MA_NB_OPTS) {
			fprintf(stderr, "marcel: unknown argument %s (accepted:", arg);
			for (size_t k = 0; k < MA_NB_OPTS; k++)
				fprintf(stderr, " %s", ma_opts[k].flag);
			fprintf(stderr, " --marcel-list-schedulers)\n");
			return EINVAL;
		}
		const char *v;
		int used;
		if (arg[nlen] == '=') {
			v = arg + nlen + 1;
			used = 1;
		} else if (a + 1 < *argc) {
			v = argv[a + 1];
			used = 2;
		} else {
			(void)ma_opts[i].parse(o, "", &accepted);
			fprintf(stderr, "marcel: %s needs a value: %s\n", ma_opts[i].flag, accepted);
			return EINVAL;
		}
		if (ma_opts[i].parse(o, v, &accepted)) {
			fprintf(stderr, "marcel: %s '%s': expected %s\n", ma_opts[i].flag, v, accepted);
			return EINVAL;
		}
		if (ma_opts[i].parse == ma_opt_topology)
			o->topology_src = ma_opts[i].flag;
		ma_remove_args(argc, argv, a, used);
	}
	return 0;
}
