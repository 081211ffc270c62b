/*
 * uclamp twice over.
 *
 * On this machine's kernel: what the probe says, printed; where the kernel clamps, each
 * level applied to a thread of the test and read back with sched_getattr, and reset; where
 * it does not, the reason, and an apply that fails leaving the thread as it was. Bad
 * levels and ended threads either way.
 *
 * On a model of the kernel: the positive path everywhere, and the refusals a kernel may
 * give. The model is this program's syscall(), which the backend's calls reach (libhwprio
 * is linked in statically): while a test turns it on, sched_setattr, sched_getattr and
 * tgkill act on a table of threads as kernel/sched/syscalls.c does (the 56-byte struct,
 * uclamp_validate's bounds, -1 back to the default, whether a clamp was asked for), and
 * every other call goes to the C library's syscall().
 */
#define _GNU_SOURCE
#include <check.h>
#include "ma_check_run.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ma_hwprio.h"

extern const struct ma_hw_backend ma_hw_uclamp;

/* include/uapi/linux/sched/types.h, 5.3 */
struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

#define KEEP_ALL 0x18
#define CLAMP_MIN 0x20
#define CLAMP_MAX 0x40
#define DEFAULT UINT32_MAX

/* ---- the model kernel ---- */

struct model_thread {
	pid_t tid;
	uint32_t policy;
	uint32_t min, max;
	int min_asked, max_asked; /* uclamp_se.user_defined */
};

static struct {
	int on;
	uint32_t ksize;      /* its struct sched_attr: 56, or 48 before 5.3 */
	int refuse;          /* sched_setattr fails with this errno, 0: it does not */
	unsigned sets;       /* sched_setattr calls that changed a thread */
	unsigned bad_flags;  /* sched_setattr calls without KEEP_ALL | CLAMP_MIN | CLAMP_MAX */
	pid_t self;          /* the thread that pid 0 means */
	struct model_thread t[8];
	unsigned n;
} model;

static struct model_thread *model_find(pid_t tid)
{
	if (!tid)
		tid = model.self;
	for (unsigned i = 0; i < model.n; i++)
		if (model.t[i].tid == tid)
			return &model.t[i];
	return NULL;
}

static struct model_thread *model_thread(pid_t tid, uint32_t policy, uint32_t min, uint32_t max, int asked)
{
	ck_assert_uint_lt(model.n, 8);
	struct model_thread *t = &model.t[model.n++];
	*t = (struct model_thread){ tid, policy, min, max, asked, asked };
	return t;
}

static void model_start(void)
{
	memset(&model, 0, sizeof(model));
	model.ksize = 56;
	model.self = 1000;
	model_thread(1000, 0, 0, 1024, 0);
	model.on = 1;
}

static long model_fail(int e)
{
	errno = e;
	return -1;
}

static long model_getattr(pid_t tid, struct attr *a, unsigned usize)
{
	if (usize < 48)
		return model_fail(EINVAL);
	struct model_thread *t = model_find(tid);
	if (!t)
		return model_fail(ESRCH);
	struct attr k = { .policy = t->policy, .util_min = t->min, .util_max = t->max };
	k.size = usize < model.ksize ? usize : model.ksize;
	memcpy(a, &k, k.size);
	return 0;
}

static long model_setattr(pid_t tid, const struct attr *a)
{
	if (a->flags & (CLAMP_MIN | CLAMP_MAX) && a->size < 56)
		return model_fail(EINVAL);
	if (model.ksize < 56 && a->size > model.ksize && (a->util_min || a->util_max))
		return model_fail(E2BIG);
	struct model_thread *t = model_find(tid);
	if (!t)
		return model_fail(ESRCH);
	if (a->flags != (KEEP_ALL | CLAMP_MIN | CLAMP_MAX))
		model.bad_flags++;
	if (model.refuse)
		return model_fail(model.refuse);
	uint32_t min = a->util_min, max = a->util_max;
	if ((min != DEFAULT && min > 1024) || (max != DEFAULT && max > 1024) ||
	    (min != DEFAULT && max != DEFAULT && min > max))
		return model_fail(EINVAL);
	int rt = t->policy == 1 || t->policy == 2;
	t->min_asked = min != DEFAULT;
	t->min = min != DEFAULT ? min : rt ? 1024 : 0;
	t->max_asked = max != DEFAULT;
	t->max = max != DEFAULT ? max : 1024;
	model.sets++;
	return 0;
}

static long (*libc_syscall)(long, ...);

long syscall(long n, ...)
{
	va_list ap;
	va_start(ap, n);
	if (!libc_syscall)
		libc_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	long r;
	/* Each call takes its own arguments: none is read that the caller did not pass. */
	if (n == SYS_sched_getattr) {
		pid_t tid = va_arg(ap, pid_t);
		struct attr *a = va_arg(ap, struct attr *);
		unsigned size = va_arg(ap, unsigned);
		unsigned flags = va_arg(ap, unsigned);
		r = model.on ? model_getattr(tid, a, size) : libc_syscall(n, tid, a, size, flags);
	} else if (n == SYS_sched_setattr) {
		pid_t tid = va_arg(ap, pid_t);
		struct attr *a = va_arg(ap, struct attr *);
		unsigned flags = va_arg(ap, unsigned);
		r = model.on ? model_setattr(tid, a) : libc_syscall(n, tid, a, flags);
	} else if (n == SYS_tgkill) {
		pid_t pid = va_arg(ap, pid_t), tid = va_arg(ap, pid_t);
		int sig = va_arg(ap, int);
		r = model.on ? (model_find(tid) ? 0 : model_fail(ESRCH)) : libc_syscall(n, pid, tid, sig);
	} else if (n == SYS_gettid) {
		r = model.on ? model.self : libc_syscall(n);
	} else {
		fprintf(stderr, "check_hwprio_uclamp: syscall %ld: not one this program passes on\n", n);
		abort();
	}
	va_end(ap);
	return r;
}

/* ---- the backend ---- */

static void *priv;
static struct ma_hw_why why;
static const struct ma_hw_env env = { .sysfs = "/sys", .resctrl = "/sys/fs/resctrl" };

static void backend_start(void)
{
	priv = calloc(1, ma_hw_uclamp.priv_size);
	ck_assert_ptr_nonnull(priv);
	ck_assert_int_eq(ma_hw_uclamp.start(priv, &env, &why), 0);
}

static void backend_stop(void)
{
	ma_hw_uclamp.stop(priv);
	free(priv);
	priv = NULL;
}

static int apply(pid_t tid, int level)
{
	struct ma_hw_target t = { .vp = 0, .tid = tid, .cpu = -1, .core = -1, .cache = -1, .node = -1, .kind = -1 };
	why.s[0] = 0;
	return ma_hw_uclamp.apply(priv, &t, level, &why);
}

#define ASSERT_WHY(text) ck_assert_msg(strstr(why.s, (text)) != NULL, "expected '%s' in: %s", (text), why.s)

static void assert_clamps(pid_t tid, uint32_t min, uint32_t max)
{
	struct model_thread *t = model_find(tid);
	ck_assert_ptr_nonnull(t);
	ck_assert_msg(t->min == min && t->max == max, "thread %d: util_min %u util_max %u, expected %u %u", (int)tid,
		      t->min, t->max, min, max);
}

/* ---- on the model ---- */

START_TEST(model_probe_present_leaves_the_thread)
{
	model_start();
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_PRESENT);
	ck_assert_uint_eq(model.sets, 1);
	ck_assert_uint_eq(model.bad_flags, 0);
	/* Never clamped before, never clamped after: written back as "the default". */
	struct model_thread *t = model_find(0);
	ck_assert(t->min == 0 && t->max == 1024 && !t->min_asked && !t->max_asked);
	/* Clamps asked for stay asked for, with their values. */
	t->min = 300;
	t->max = 800;
	t->min_asked = t->max_asked = 1;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_PRESENT);
	ck_assert(t->min == 300 && t->max == 800 && t->min_asked && t->max_asked);
}
END_TEST

START_TEST(model_probe_refusals)
{
	model_start();
	model.refuse = EOPNOTSUPP;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_str_eq(why.s, "the kernel has no utilisation clamping: CONFIG_UCLAMP_TASK is off");
	model.refuse = EPERM;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_NEEDS_PRIVILEGE);
	ASSERT_WHY("sched_setattr: Operation not permitted: a security module (LSM) or seccomp filter");
	ASSERT_WHY("CAP_SYS_NICE");
	model_find(0)->policy = 6;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_NEEDS_PRIVILEGE);
	ASSERT_WHY("the thread runs SCHED_DEADLINE: any sched_setattr on it needs CAP_SYS_NICE");
	model.refuse = ENOSYS;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_ABSENT);
	ASSERT_WHY("no sched_setattr system call");
	model.refuse = 0;
	model.ksize = 48;
	ck_assert_int_eq(ma_hw_uclamp.probe(&env, &why), MA_HW_ABSENT);
	ck_assert_str_eq(why.s, "the kernel's struct sched_attr is 48 bytes, without the clamps (Linux before 5.3)");
	ck_assert_uint_eq(model.sets, 0);
}
END_TEST

/* Each level's clamps, from a thread never clamped and from one with clamps of its own. */
START_TEST(model_levels)
{
	static const struct {
		uint32_t min0, max0;
		uint32_t want[5][2]; /* levels -2..+2 */
	} c[] = {
		{ 0, 1024, { { 0, 128 }, { 0, 512 }, { 0, 1024 }, { 512, 1024 }, { 1024, 1024 } } },
		{ 200, 700, { { 128, 128 }, { 200, 512 }, { 200, 700 }, { 512, 700 }, { 1024, 1024 } } },
		{ 600, 1024, { { 128, 128 }, { 512, 512 }, { 600, 1024 }, { 600, 1024 }, { 1024, 1024 } } },
		{ 0, 100, { { 0, 100 }, { 0, 100 }, { 0, 100 }, { 512, 512 }, { 1024, 1024 } } },
	};
	static const int order[] = { 2, 0, -2, 1, -1, 2, -2, 0 };
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		model_start();
		int asked = c[i].min0 || c[i].max0 != 1024;
		model_thread(2001, 0, c[i].min0, c[i].max0, asked);
		backend_start();
		for (unsigned k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
			int l = order[k];
			ck_assert_msg(apply(2001, l) == 0, "level %d: %s", l, why.s);
			assert_clamps(2001, c[i].want[l + 2][0], c[i].want[l + 2][1]);
		}
		/* Back at 0: as it was, whether asked for or not. */
		struct model_thread *t = model_find(2001);
		ck_assert_int_eq(t->min_asked, c[i].min0 != 0);
		ck_assert_int_eq(t->max_asked, c[i].max0 != 1024);
		ck_assert_uint_eq(model.bad_flags, 0);
		backend_stop();
	}
}
END_TEST

/* A real-time thread's util_min is 1024 by default: written back as the number. */
START_TEST(model_realtime_thread)
{
	model_start();
	model_thread(2002, 1, 1024, 1024, 0);
	backend_start();
	ck_assert_int_eq(apply(2002, -2), 0);
	assert_clamps(2002, 128, 128);
	ck_assert_int_eq(apply(2002, 0), 0);
	assert_clamps(2002, 1024, 1024);
	ck_assert(!model_find(2002)->max_asked);
	backend_stop();
}
END_TEST

/* tid 0 is the caller: its clamps are remembered under its own tid, for reset. */
START_TEST(model_tid_zero_is_the_caller)
{
	model_start();
	backend_start();
	ck_assert_int_eq(apply(0, 2), 0);
	assert_clamps(1000, 1024, 1024);
	model.self = 9999; /* reset runs on another thread */
	ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
	assert_clamps(1000, 0, 1024);
	backend_stop();
}
END_TEST

START_TEST(model_level_zero_untouched_does_nothing)
{
	model_start();
	model_thread(2003, 0, 0, 1024, 0);
	backend_start();
	ck_assert_int_eq(apply(2003, 0), 0);
	ck_assert_int_eq(apply(4242, 0), 0); /* not even a thread */
	ck_assert_uint_eq(model.sets, 0);
	backend_stop();
}
END_TEST

/* A refused apply leaves the thread as it was, and nothing for reset to undo. */
START_TEST(model_refused_apply)
{
	model_start();
	model_thread(2004, 0, 100, 900, 1);
	backend_start();
	model.refuse = EPERM;
	ck_assert_int_eq(apply(2004, 1), EPERM);
	ck_assert_str_eq(why.s, "thread 2004, level +1 (util_min 512, util_max 900): sched_setattr: Operation not permitted "
				"(a security module (LSM) or seccomp filter refuses sched_setattr without CAP_SYS_NICE)");
	assert_clamps(2004, 100, 900);
	model.refuse = 0;
	ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
	ck_assert_uint_eq(model.sets, 0);
	/* Once accepted, from the same originals. */
	ck_assert_int_eq(apply(2004, 1), 0);
	assert_clamps(2004, 512, 900);
	backend_stop();
}
END_TEST

/* reset: every thread changed back, the ended ones skipped; what it could not put back it
 * says and keeps for the next reset. */
START_TEST(model_reset)
{
	model_start();
	model_thread(2005, 0, 0, 1024, 0);
	model_thread(2006, 0, 50, 600, 1);
	model_thread(2007, 0, 0, 1024, 0);
	backend_start();
	ck_assert_int_eq(apply(2005, 2), 0);
	ck_assert_int_eq(apply(2006, -2), 0);
	ck_assert_int_eq(apply(2007, -1), 0);
	model.t[3] = model.t[--model.n]; /* 2007 ends */
	ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
	assert_clamps(2005, 0, 1024);
	assert_clamps(2006, 50, 600);
	ck_assert_int_eq(apply(2005, 1), 0);
	model.refuse = EPERM;
	ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), EPERM);
	ck_assert_str_eq(why.s, "thread 2005 back to util_min 0, util_max 1024: sched_setattr: Operation not permitted");
	assert_clamps(2005, 512, 1024);
	model.refuse = 0;
	ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
	assert_clamps(2005, 0, 1024);
	ck_assert_uint_eq(model.bad_flags, 0);
	backend_stop();
}
END_TEST

START_TEST(model_gone_thread)
{
	model_start();
	model_thread(2008, 0, 0, 1024, 0);
	backend_start();
	ck_assert_int_eq(apply(3333, 1), ESRCH);
	ck_assert_str_eq(why.s, "thread 3333, level +1: the thread is gone");
	ck_assert_int_eq(apply(2008, 1), 0);
	model.n--; /* 2008 ends */
	ck_assert_int_eq(apply(2008, -1), ESRCH);
	ck_assert_str_eq(why.s, "thread 2008, level -1: the thread is gone");
	backend_stop();
}
END_TEST

/* ---- on this machine's kernel ---- */

/* A thread of the test that waits to be told to end. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pid_t tid;
	int end;
} peer = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static void *peer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&peer.lock);
	peer.tid = gettid();
	pthread_cond_broadcast(&peer.cond);
	while (!peer.end)
		pthread_cond_wait(&peer.cond, &peer.lock);
	pthread_mutex_unlock(&peer.lock);
	return NULL;
}

static pthread_t peer_start(void)
{
	pthread_t th;
	peer.tid = 0;
	peer.end = 0;
	ck_assert_int_eq(pthread_create(&th, NULL, peer_main, NULL), 0);
	pthread_mutex_lock(&peer.lock);
	while (!peer.tid)
		pthread_cond_wait(&peer.cond, &peer.lock);
	pthread_mutex_unlock(&peer.lock);
	return th;
}

/* Ends the peer and waits until its tid names no thread. pthread_join returns once the
 * kernel has cleared the thread's tid word, which it does early in the thread's exit:
 * until the exit completes, the tid still finds the thread (sched_getattr succeeds on
 * it), a window that a loaded machine widens. Bounded: a tid taken again at once would
 * keep naming a thread. */
static void peer_end(pthread_t th)
{
	pid_t tid = peer.tid;
	pthread_mutex_lock(&peer.lock);
	peer.end = 1;
	pthread_cond_broadcast(&peer.cond);
	pthread_mutex_unlock(&peer.lock);
	pthread_join(th, NULL);
	for (int i = 0; i < 5000; i++) {
		if (syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH)
			return;
		usleep(1000);
	}
}

static struct attr kernel_get(pid_t tid)
{
	struct attr a;
	memset(&a, 0, sizeof(a));
	ck_assert_msg(syscall(SYS_sched_getattr, tid, &a, (unsigned)sizeof(a), 0u) == 0, "sched_getattr %d: %s", (int)tid,
		      strerror(errno));
	return a;
}

START_TEST(kernel_probe_and_apply)
{
	enum ma_hw_presence p = ma_hw_uclamp.probe(&env, &why);
	printf("check_hwprio_uclamp: this kernel: %s%s%s\n", ma_hw_presence_name(p), p == MA_HW_PRESENT ? "" : ": ",
	       p == MA_HW_PRESENT ? "" : why.s);
	pthread_t th = peer_start();
	pid_t tid = peer.tid;
	struct attr before = kernel_get(tid);
	backend_start();
	if (p == MA_HW_PRESENT) {
		ck_assert_uint_eq(before.size, 56);
		ck_assert_msg(apply(tid, 2) == 0, "%s", why.s);
		ck_assert_uint_eq(kernel_get(tid).util_min, 1024);
		ck_assert_msg(apply(tid, 0) == 0, "%s", why.s);
		struct attr a = kernel_get(tid);
		ck_assert_uint_eq(a.util_min, before.util_min);
		ck_assert_uint_eq(a.util_max, before.util_max);
		ck_assert_msg(apply(tid, -2) == 0, "%s", why.s);
		a = kernel_get(tid);
		ck_assert_uint_eq(a.util_max, 128);
		ck_assert_uint_le(a.util_min, 128);
		ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
		a = kernel_get(tid);
		ck_assert_uint_eq(a.util_min, before.util_min);
		ck_assert_uint_eq(a.util_max, before.util_max);
	} else {
		ck_assert_msg(strstr(why.s, "CONFIG_UCLAMP_TASK") || strstr(why.s, "Linux before") ||
				      strstr(why.s, "sched_setattr") || strstr(why.s, "sched_getattr"),
			      "an unexplained absence: %s", why.s);
		if (strstr(why.s, "CONFIG_UCLAMP_TASK")) {
			ck_assert_int_eq(apply(tid, 2), EOPNOTSUPP);
			char head[64];
			snprintf(head, sizeof(head), "thread %d, level +2 ", (int)tid);
			ASSERT_WHY(head);
			ASSERT_WHY(strerror(EOPNOTSUPP));
			ASSERT_WHY("CONFIG_UCLAMP_TASK is off");
		}
		struct attr a = kernel_get(tid);
		ck_assert(a.policy == before.policy && a.nice == before.nice && a.util_min == before.util_min &&
			  a.util_max == before.util_max);
		ck_assert_int_eq(ma_hw_uclamp.reset(priv, &why), 0);
	}
	backend_stop();
	peer_end(th);
}
END_TEST

START_TEST(kernel_bad_level)
{
	backend_start();
	ck_assert_int_eq(apply(0, 3), EINVAL);
	ck_assert_str_eq(why.s, "level 3 is not a uclamp level: it sets levels -2..+2");
	ck_assert_int_eq(apply(0, -7), EINVAL);
	ASSERT_WHY("level -7 is not a uclamp level");
	backend_stop();
}
END_TEST

START_TEST(kernel_gone_thread)
{
	pthread_t th = peer_start();
	pid_t tid = peer.tid;
	peer_end(th);
	backend_start();
	/* Its number may be taken again, though not this soon in practice. */
	ck_assert_int_eq(apply(tid, 1), ESRCH);
	char want[96];
	snprintf(want, sizeof(want), "thread %d, level +1: the thread is gone", (int)tid);
	ck_assert_str_eq(why.s, want);
	backend_stop();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hwprio uclamp");
	TCase *tc = tcase_create("kernel");
	tcase_add_test(tc, kernel_probe_and_apply);
	tcase_add_test(tc, kernel_bad_level);
	tcase_add_test(tc, kernel_gone_thread);
	suite_add_tcase(s, tc);
	tc = tcase_create("model");
	tcase_add_test(tc, model_probe_present_leaves_the_thread);
	tcase_add_test(tc, model_probe_refusals);
	tcase_add_test(tc, model_levels);
	tcase_add_test(tc, model_realtime_thread);
	tcase_add_test(tc, model_tid_zero_is_the_caller);
	tcase_add_test(tc, model_level_zero_untouched_does_nothing);
	tcase_add_test(tc, model_refused_apply);
	tcase_add_test(tc, model_reset);
	tcase_add_test(tc, model_gone_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ma_check_run(suite());
}
