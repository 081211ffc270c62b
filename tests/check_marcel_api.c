/*
 * Marcel's names that marcel lacked or spelled with another signature (issue 19, items 11
 * and 12): the feature macros, barrier mode type, once initializer, named semaphores,
 * marcel_clock, the allocator, marcel_nbprocessors, attribute id and initial bubble,
 * marcel_threadslist, marcel_fork/atfork, marcel_bubble_shake(void), the bubble
 * scheduler classes, Marcel's form of the statistics calls, and the names that are build
 * errors. Each test checks the contract in marcel's headers, error codes included. Every
 * tcase runs on this machine and on the synthetic 32-PU topology (ma_test.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/wait.h>
#include "ma_test.h"

/* Marcel programs test these before using a feature: each works, so each is defined. */
#if !defined(MARCEL_KEYS_ENABLED) || !defined(MARCEL_ONCE_ENABLED) || !defined(MARCEL_SUSPEND_ENABLED) || \
	!defined(MARCEL_BLOCKING_ENABLED) || !defined(MARCEL_STATS_ENABLED) || !defined(MARCEL_BUBBLES) ||  \
	!defined(MARCEL_NUMA) || !defined(MARCEL_SMP) || !defined(MARCEL_CLEANUP_ENABLED) ||   \
	!defined(MARCEL_SIGNALS_ENABLED) || !defined(MARCEL_SIGMASK_ENABLED)
#error "a feature macro of a working feature is missing"
#endif
/* ...and these do not work (yet): a program must not be told they do. */
#if defined(MARCEL_FORK_ENABLED) || defined(MARCEL_LIBPTHREAD) || defined(MARCEL_POSIX)
#error "a feature macro of a missing feature is defined"
#endif

#define I2P(i) ((any_t)(intptr_t)(i))


/* ============================================================ sync.h names */

/* One per copy of the test: with CK_FORK=no both copies run in one process. */
static marcel_once_t once_ctl[2] = { MARCEL_ONCE_INITIALIZER, MARCEL_ONCE_INITIALIZER };
static int once_runs;

static void once_fn(void)
{
	once_runs++;
}

START_TEST(test_barrier_mode_and_once)
{
	marcel_barrierattr_t a;
	marcel_barrier_mode_t mode = MARCEL_BARRIER_SLEEP_MODE;
	ck_assert_int_eq(marcel_barrierattr_init(&a), 0);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, MARCEL_BARRIER_YIELD_MODE), 0);
	/* A marcel_barrier_mode_t is what getmode fills. */
	ck_assert_int_eq(marcel_barrierattr_getmode(&a, &mode), 0);
	ck_assert_int_eq(mode, MARCEL_BARRIER_YIELD_MODE);
	ck_assert_int_eq(marcel_barrierattr_setmode(&a, (marcel_barrier_mode_t)7), EINVAL);
	ck_assert_int_eq(marcel_barrierattr_destroy(&a), 0);

	ma_test_init();
	once_runs = 0;
	marcel_once_t *ctl = &once_ctl[ma_test_topology != NULL];
	ck_assert_int_eq(marcel_once(ctl, once_fn), 0);
	ck_assert_int_eq(marcel_once(ctl, once_fn), 0);
	ck_assert_int_eq(once_runs, 1);
	marcel_once_t local = MARCEL_ONCE_INITIALIZER;
	ck_assert_int_eq(marcel_once(&local, once_fn), 0);
	ck_assert_int_eq(once_runs, 2);

	/* MARCEL_MAX_SCHEDULE_TIMEOUT: "forever", which an available unit does not wait for. */
	ck_assert(MARCEL_MAX_SCHEDULE_TIMEOUT == LONG_MAX);
	marcel_sem_t s;
	ck_assert_int_eq(marcel_sem_init(&s, 1), 0);
	ck_assert_int_eq(marcel_sem_timed_P(&s, MARCEL_MAX_SCHEDULE_TIMEOUT), 1);
	marcel_end();
}
END_TEST

static marcel_sem_t *token_sem;
static atomic_int token_holders, token_max;

static any_t token_user(any_t arg)
{
	marcel_sem_t *s = marcel_sem_open("token", 0);
	ck_assert_ptr_eq(s, token_sem);
	for (int i = 0; i < 50; i++) {
		marcel_sem_P(s);
		int h = atomic_fetch_add(&token_holders, 1) + 1;
		int m = atomic_load(&token_max);
		while (h > m && !atomic_compare_exchange_weak(&token_max, &m, h))
			;
		marcel_yield();
		atomic_fetch_sub(&token_holders, 1);
		marcel_sem_V(s);
	}
	ck_assert_int_eq(marcel_sem_close(s), 0);
	return arg;
}

START_TEST(test_sem_open)
{
	/* Bad names and values, before marcel_init too. */
	set_errno(0);
	ck_assert_ptr_eq(marcel_sem_open(NULL, O_CREAT, 0600, 1), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_ptr_eq(marcel_sem_open("/", O_CREAT, 0600, 1), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_ptr_eq(marcel_sem_open("/a/b", O_CREAT, 0600, 1), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), EINVAL);
	char longname[NAME_MAX + 8];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_ptr_eq(marcel_sem_open(longname, O_CREAT, 0600, 1), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), ENAMETOOLONG);
	ck_assert_ptr_eq(marcel_sem_open("/big", O_CREAT, 0600, (unsigned)MARCEL_SEM_VALUE_MAX + 1), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_ptr_eq(marcel_sem_open("/missing", 0), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), ENOENT);
	ck_assert_int_eq(marcel_sem_unlink("/missing"), -1);
	ck_assert_int_eq(get_errno(), ENOENT);
	ck_assert_int_eq(marcel_sem_unlink(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_int_eq(marcel_sem_close(NULL), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	marcel_sem_t plain;
	ck_assert_int_eq(marcel_sem_init(&plain, 0), 0);
	ck_assert_int_eq(marcel_sem_close(&plain), -1);
	ck_assert_int_eq(get_errno(), EINVAL);

	ma_test_init();
	/* "/token" and "token" are one name; O_EXCL refuses an existing one. */
	token_sem = marcel_sem_open("/token", O_CREAT | O_EXCL, 0600, 2);
	ck_assert_ptr_ne(token_sem, MARCEL_SEM_FAILED);
	ck_assert_ptr_eq(marcel_sem_open("token", O_CREAT | O_EXCL, 0600, 2), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), EEXIST);
	int v;
	ck_assert_int_eq(marcel_sem_getvalue(token_sem, &v), 0);
	ck_assert_int_eq(v, 2);
	/* O_CREAT alone opens the existing one, ignoring the value. */
	marcel_sem_t *again = marcel_sem_open("/token", O_CREAT, 0600, 9);
	ck_assert_ptr_eq(again, token_sem);
	ck_assert_int_eq(marcel_sem_close(again), 0);

	atomic_store(&token_holders, 0);
	atomic_store(&token_max, 0);
	marcel_t t[8];
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_create(&t[i], NULL, token_user, I2P(i)), 0);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	ck_assert_int_le(atomic_load(&token_max), 2);
	ck_assert_int_ge(atomic_load(&token_max), 1);

	/* Unlinked while open: still usable, the name is free for a new one. */
	ck_assert_int_eq(marcel_sem_unlink("token"), 0);
	ck_assert_ptr_eq(marcel_sem_open("/token", 0), MARCEL_SEM_FAILED);
	ck_assert_int_eq(get_errno(), ENOENT);
	marcel_sem_t *other = marcel_sem_open("/token", O_CREAT, 0600, 0);
	ck_assert_ptr_ne(other, MARCEL_SEM_FAILED);
	ck_assert_ptr_ne(other, token_sem);
	marcel_sem_V(token_sem);
	ck_assert_int_eq(marcel_sem_try_P(token_sem), 1);
	ck_assert_int_eq(marcel_sem_try_P(other), 0);
	ck_assert_int_eq(marcel_sem_close(token_sem), 0);
	/* Closed as often as opened: a further close is refused. */
	ck_assert_int_eq(marcel_sem_close(other), 0);
	ck_assert_int_eq(marcel_sem_close(other), -1);
	ck_assert_int_eq(get_errno(), EINVAL);
	/* Still linked: opening it again finds it, with its count. */
	other = marcel_sem_open("token", 0);
	ck_assert_ptr_ne(other, MARCEL_SEM_FAILED);
	ck_assert_int_eq(marcel_sem_close(other), 0);
	ck_assert_int_eq(marcel_sem_unlink("/token"), 0);
	marcel_end();
}
END_TEST

/* ============================================================ compat.h names */

START_TEST(test_clock_malloc_processors)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	ck_assert_uint_eq(marcel_nbprocessors, (unsigned)(online > 0 ? online : 1));
	unsigned long c0 = marcel_clock();
	ma_test_init();
	struct marcel_topo_item machine;
	ck_assert_int_eq(marcel_topo_get_item(0, &machine), 0);
	ck_assert_uint_eq(marcel_nbprocessors, machine.nb_pus);
	if (ma_test_topology)
		ck_assert_uint_eq(marcel_nbprocessors, 32);

	unsigned long t0 = marcel_clock();
	ck_assert_uint_ge(t0, c0);
	marcel_delay(30);
	unsigned long t1 = marcel_clock();
	ck_assert_uint_ge(t1 - t0, 29);
	ck_assert_uint_lt(t1 - t0, 5000);

	char *p = marcel_malloc(100);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 100);
	p = marcel_realloc(p, 1000);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p[99], 1);
	marcel_free(p);
	int *z = marcel_calloc(10, sizeof(int));
	ck_assert_ptr_nonnull(z);
	ck_assert_int_eq(z[9], 0);
	marcel_free(z);
	marcel_end();
}
END_TEST

static marcel_sem_t list_gate;

static any_t list_waiter(any_t arg)
{
	marcel_sem_P(&list_gate);
	return arg;
}

START_TEST(test_threadslist)
{
	int nb = -1;
	marcel_t one;
	ck_assert_int_eq(marcel_threadslist(0, NULL, &nb, 0), EPERM);
	ma_test_init();
	ck_assert_int_eq(marcel_threadslist(0, NULL, NULL, 0), EINVAL);
	ck_assert_int_eq(marcel_threadslist(-1, NULL, &nb, 0), EINVAL);
	ck_assert_int_eq(marcel_threadslist(1, NULL, &nb, 0), EINVAL);
	ck_assert_int_eq(marcel_threadslist(1, &one, &nb, 256), EINVAL);

	/* Alone: the list is the caller. */
	marcel_t list[64];
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, 0), 0);
	ck_assert_int_eq(nb, 1);
	ck_assert_ptr_eq(list[0], marcel_self());

	enum { N = 6 };
	ck_assert_int_eq(marcel_sem_init(&list_gate, 0), 0);
	marcel_t t[N];
	marcel_attr_t det;
	ck_assert_int_eq(marcel_attr_init(&det), 0);
	ck_assert_int_eq(marcel_attr_setdetachstate(&det, MARCEL_CREATE_DETACHED), 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(marcel_create(&t[i], i < 2 ? &det : NULL, list_waiter, I2P(i)), 0);
	/* Wait until all N block on the gate. */
	for (int tries = 0;; tries++) {
		ck_assert_int_eq(marcel_threadslist(64, list, &nb, BLOCKED_ONLY), 0);
		if (nb == N)
			break;
		ck_assert_int_lt(tries, 10000);
		marcel_usleep(1000);
	}
	for (int i = 0; i < N; i++) {
		int found = 0;
		for (int k = 0; k < nb; k++)
			found |= list[k] == t[i];
		ck_assert(found);
	}
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, 0), 0);
	ck_assert_int_eq(nb, N + 1);
	/* nb counts them all, even past max. */
	ck_assert_int_eq(marcel_threadslist(2, list, &nb, 0), 0);
	ck_assert_int_eq(nb, N + 1);
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, READY_ONLY | NOT_BLOCKED_ONLY), 0);
	ck_assert_int_eq(nb, 1); /* the caller, running */
	ck_assert_ptr_eq(list[0], marcel_self());
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, BLOCKED_ONLY | DETACHED_ONLY), 0);
	ck_assert_int_eq(nb, 2);
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, BLOCKED_ONLY | NOT_DETACHED_ONLY), 0);
	ck_assert_int_eq(nb, N - 2);
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, NOT_READY_ONLY | MIGRATABLE_ONLY), 0);
	ck_assert_int_eq(nb, N);
	ck_assert_int_eq(marcel_threadslist(64, list, &nb, NOT_MIGRATABLE_ONLY), 0);
	ck_assert_int_eq(nb, 0);
	for (int i = 0; i < N; i++)
		marcel_sem_V(&list_gate);
	for (int i = 2; i < N; i++)
		ck_assert_int_eq(marcel_join(t[i], NULL), 0);
	marcel_end();
}
END_TEST

/* Handlers cannot be unregistered: with CK_FORK=no both copies of the test run in one
 * process, so the test counts what one fork adds. */
static int forked_prepare, forked_parent, forked_child, forked_registered;

static void on_prepare(void)
{
	forked_prepare++;
}

static void on_parent(void)
{
	forked_parent++;
}

static void on_child(void)
{
	forked_child++;
}

static any_t forker(any_t arg)
{
	(void)arg;
	pid_t pid = marcel_fork();
	if (pid == 0)
		_exit(forked_child == 1 ? 42 : 1); /* the child may only exit (or exec) */
	return I2P(pid);
}

START_TEST(test_fork)
{
	ma_test_init();
	if (!forked_registered++)
		ck_assert_int_eq(marcel_atfork(on_prepare, on_parent, on_child), 0);
	forked_prepare = forked_parent = forked_child = 0;
	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, forker, NULL), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	pid_t pid = (pid_t)(intptr_t)r;
	ck_assert_int_gt(pid, 0);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 42);
	ck_assert_int_eq(forked_prepare, 1);
	ck_assert_int_eq(forked_parent, 1);
	ck_assert_int_eq(forked_child, 0); /* ran in the child only */
	marcel_end();
}
END_TEST

/* ============================================================ attr.h names */

static any_t noop(any_t arg)
{
	return arg;
}

START_TEST(test_attr_id_initbubble)
{
	marcel_attr_t a;
	int id = 5;
	ck_assert_int_eq(marcel_attr_setid(NULL, 1), EINVAL);
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(marcel_attr_setid(&a, 1), EINVAL);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_getid(&a, &id), 0);
	ck_assert_int_eq(id, 0);
	ck_assert_int_eq(marcel_attr_setid(&a, 17), 0);
	ck_assert_int_eq(marcel_attr_getid(&a, &id), 0);
	ck_assert_int_eq(id, 17);
	ck_assert_int_eq(marcel_attr_getid(&a, NULL), EINVAL);

	ma_test_init();
	marcel_bubble_t b, *got = NULL;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(marcel_attr_setinitbubble(&a, &b), 0);
	ck_assert_int_eq(marcel_attr_getinitbubble(&a, &got), 0);
	ck_assert_ptr_eq(got, &b);
	/* PM2's tests name the root bubble (shake.c, bubble-cache-*.c). */
	ck_assert_int_eq(marcel_attr_setinitbubble(&a, &marcel_root_bubble), 0);
	ck_assert_int_eq(marcel_attr_setinitbubble(&a, &b), 0);
	marcel_t t;
	ck_assert_int_eq(marcel_create(&t, &a, noop, NULL), 0);
	ck_assert_ptr_eq(marcel_bubble_holding_task(t), &b);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	marcel_end();
}
END_TEST

/* ============================================================ bubble_sched.h names */

START_TEST(test_sched_classes)
{
	/* Classes need no runtime. */
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("cache"), &marcel_bubble_cache_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("affinity"), &marcel_bubble_cache_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("explode"), &marcel_bubble_explode_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("burst"), &marcel_bubble_burst_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("null"), &marcel_bubble_null_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("spread"), &marcel_bubble_spread_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("steal"), &marcel_bubble_steal_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("gang"), &marcel_bubble_gang_sched_class);
	ck_assert_ptr_eq(marcel_lookup_bubble_scheduler_class("memory"), &marcel_bubble_memory_sched_class);
	ck_assert_ptr_null(marcel_lookup_bubble_scheduler_class("@does-not-exist"));
	ck_assert_ptr_null(marcel_lookup_bubble_scheduler_class(NULL));
	ck_assert_str_eq(marcel_bubble_sched_class_name(&marcel_bubble_cache_sched_class), "cache");
	ck_assert_ptr_null(marcel_bubble_sched_class_name(NULL));
	ck_assert_uint_eq(marcel_bubble_sched_instance_size(NULL), 0);
	size_t size = marcel_bubble_sched_instance_size(&marcel_bubble_cache_sched_class);
	ck_assert_uint_gt(size, 0);
	ck_assert_uint_eq(size, marcel_bubble_cache_sched_class.instance_size);

	marcel_bubble_sched_t *cache = alloca(size);
	marcel_bubble_sched_t *steal = alloca(marcel_bubble_sched_instance_size(&marcel_bubble_steal_sched_class));
	ck_assert_int_eq(marcel_bubble_sched_instantiate(NULL, cache), EINVAL);
	ck_assert_int_eq(marcel_bubble_sched_instantiate(&marcel_bubble_cache_sched_class, NULL), EINVAL);
	marcel_bubble_sched_class_t foreign = marcel_bubble_cache_sched_class;
	ck_assert_int_eq(marcel_bubble_sched_instantiate(&foreign, cache), EINVAL);
	ck_assert_int_eq(marcel_bubble_sched_instantiate(&marcel_bubble_cache_sched_class, cache), 0);
	/* The class's own constructor, as Marcel programs may call it. */
	ck_assert_int_eq(marcel_bubble_steal_sched_class.instantiate(steal), 0);
	ck_assert_ptr_eq(marcel_bubble_sched_class(cache), &marcel_bubble_cache_sched_class);
	ck_assert_ptr_eq(marcel_bubble_sched_class(steal), &marcel_bubble_steal_sched_class);
	ck_assert_str_eq(marcel_bubble_sched_name(cache), "cache");
	ck_assert_ptr_null(marcel_bubble_sched_class(NULL));
	ck_assert_ptr_null(marcel_bubble_current_sched());
	ck_assert_ptr_null(marcel_bubble_change_sched(cache)); /* not running */

	ma_test_init_with(ma_test_topology, "spread");
	const marcel_bubble_sched_t *spread = marcel_lookup_bubble_scheduler("spread");
	ck_assert_ptr_eq(marcel_bubble_current_sched(), spread);
	ck_assert_ptr_eq(marcel_bubble_sched_class(spread), &marcel_bubble_spread_sched_class);
	/* Switching to an instance runs its class's strategy, and current_sched gives the
	 * instance back, as in Marcel. */
	ck_assert_ptr_eq(marcel_bubble_change_sched(cache), spread);
	ck_assert_ptr_eq(marcel_bubble_current_sched(), cache);
	ck_assert_ptr_eq(marcel_bubble_sched_class(marcel_bubble_current_sched()), &marcel_bubble_cache_sched_class);
	ck_assert_ptr_eq(marcel_bubble_change_sched(steal), cache);
	ck_assert_str_eq(marcel_bubble_sched_name(marcel_bubble_current_sched()), "steal");
	/* Memory that is no instance is refused, and nothing changes. */
	long junk[8] = { 0 };
	ck_assert_ptr_null(marcel_bubble_change_sched((marcel_bubble_sched_t *)(void *)junk));
	ck_assert_ptr_eq(marcel_bubble_current_sched(), steal);
	/* Marcel's ready-made null instance. */
	ck_assert_ptr_eq(marcel_bubble_change_sched(&marcel_bubble_null_sched), steal);
	ck_assert_ptr_eq(marcel_bubble_current_sched(), &marcel_bubble_null_sched);
	ck_assert_ptr_eq(marcel_bubble_sched_class(&marcel_bubble_null_sched), &marcel_bubble_null_sched_class);
	marcel_end();
	/* A new runtime starts from the strategy it is given. */
	ma_test_init_with(ma_test_topology, "gang");
	ck_assert_ptr_eq(marcel_bubble_current_sched(), marcel_lookup_bubble_scheduler("gang"));
	marcel_end();
}
END_TEST

static marcel_barrier_t shake_barrier;

static any_t shake_worker(any_t arg)
{
	marcel_barrier_wait(&shake_barrier);
	/* Marcel's shake.c: every thread shakes. */
	marcel_bubble_shake();
	for (int i = 0; i < 20; i++)
		marcel_yield();
	return arg;
}

START_TEST(test_shake_void)
{
	marcel_bubble_shake(); /* not running: nothing happens */
	ma_test_init_with(ma_test_topology, "spread");
	enum { B = 3, T = 3 };
	marcel_bubble_t b[B];
	marcel_t t[B][T];
	marcel_attr_t a;
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_barrier_init(&shake_barrier, NULL, B * T + 1), 0);
	for (int i = 0; i < B; i++) {
		ck_assert_int_eq(marcel_bubble_init(&b[i]), 0);
		ck_assert_int_eq(marcel_bubble_insertbubble(&marcel_root_bubble, &b[i]), 0);
		ck_assert_int_eq(marcel_attr_setnaturalbubble(&a, &b[i]), 0);
		for (int k = 0; k < T; k++)
			ck_assert_int_eq(marcel_create(&t[i][k], &a, shake_worker, NULL), 0);
		ck_assert_int_eq(marcel_wake_up_bubble(&b[i]), 0);
	}
	ck_assert_int_eq(marcel_bubble_sched_begin(), 0);
	marcel_barrier_wait(&shake_barrier);
	marcel_bubble_shake();
	for (int i = 0; i < B; i++)
		for (int k = 0; k < T; k++)
			ck_assert_int_eq(marcel_join(t[i][k], NULL), 0);
	/* Everything was placed again and ran to its end; the bubbles are whole. */
	for (int i = 0; i < B; i++) {
		ck_assert_int_eq(marcel_bubble_join(&b[i]), 0);
		ck_assert_int_eq(marcel_bubble_destroy(&b[i]), 0);
	}
	/* Ours, under its new name. */
	ck_assert_int_eq(marcel_bubble_shake_bubble(NULL), EINVAL);
	ck_assert_int_eq(marcel_bubble_shake_bubble(&marcel_root_bubble), EINVAL);
	marcel_end();
}
END_TEST

/* ============================================================ statistics, Marcel's form */

static any_t stats_thread(any_t arg)
{
	long *vp = marcel_task_stats_get(marcel_self(), LAST_VP);
	ck_assert_ptr_nonnull(vp);
	ck_assert_int_eq(*vp, marcel_current_vp());
	/* NULL: the caller. */
	marcel_task_stats_set(long, NULL, LOAD, 7);
	ck_assert_int_eq(*(long *)marcel_task_stats_get(NULL, LOAD), 7);
	return arg;
}

START_TEST(test_stats_marcel_form)
{
	ma_test_init();
	marcel_t self = marcel_self();
	/* Marcel's four-argument set and two-argument get... */
	marcel_task_stats_set(long, self, LOAD, 10);
	ck_assert_int_eq(*(long *)marcel_task_stats_get(self, LOAD), 10);
	/* ...agree with marcel's three-argument forms. */
	long long v = 0;
	ck_assert_int_eq(marcel_task_stats_get(self, MARCEL_STATS_LOAD, &v), 0);
	ck_assert_int_eq(v, 10);
	ck_assert_int_eq(marcel_task_stats_set(self, MARCEL_STATS_LOAD, 3), 0);
	ck_assert_int_eq(*marcel_task_stats_get(self, LOAD), 3);
	marcel_task_stats_add(long, self, LOAD, 5);
	marcel_task_stats_sub(unsigned long, self, LOAD, 1);
	ck_assert_int_eq(*marcel_task_stats_get(self, LOAD), 7);
	ck_assert_int_eq(*marcel_task_stats_get(self, LAST_VP), marcel_current_vp());
	/* The pointer keeps the value of its own type: another type's call leaves it. */
	long *load = marcel_task_stats_get(self, LOAD);
	long *vp = marcel_task_stats_get(self, LAST_VP);
	ck_assert_int_eq(*load, 7);
	ck_assert_ptr_ne(load, vp);

	/* Errors. */
	set_errno(0);
	ck_assert_ptr_null(marcel_task_stats_get(self, (marcel_stats_type_t)99));
	ck_assert_int_eq(get_errno(), EINVAL);
	ck_assert_int_eq(marcel_task_stats_put(self, LAST_VP, 1), EINVAL);
	ck_assert_int_eq(marcel_task_stats_put(self, MEMNODE, 1), EINVAL);
	ck_assert_int_eq(marcel_task_stats_adjust(self, LAST_VP, 1), EINVAL);
	ck_assert_ptr_null(marcel_bubble_stats_get(NULL, LOAD));
	ck_assert_int_eq(get_errno(), EINVAL);

	marcel_t t;
	any_t r;
	ck_assert_int_eq(marcel_create(&t, NULL, stats_thread, I2P(5)), 0);
	ck_assert_int_eq(marcel_join(t, &r), 0);
	ck_assert_ptr_eq(r, I2P(5));
	set_errno(0);
	ck_assert_ptr_null(marcel_task_stats_get(t, LOAD)); /* joined */
	ck_assert_int_eq(get_errno(), ESRCH);
	ck_assert_int_eq(marcel_task_stats_put(t, LOAD, 1), ESRCH);

	/* A bubble: load synthesized from its threads' hints, memory per node. */
	marcel_bubble_t b;
	marcel_attr_t a;
	ck_assert_int_eq(marcel_bubble_init(&b), 0);
	ck_assert_int_eq(marcel_attr_init(&a), 0);
	ck_assert_int_eq(marcel_attr_setinitbubble(&a, &b), 0);
	ck_assert_int_eq(marcel_create(&t, &a, noop, NULL), 0); /* waits for the bubble */
	marcel_task_stats_set(long, t, LOAD, 7);
	ck_assert_int_eq(*marcel_bubble_stats_get(&b, LOAD), 7);
	size_t len = 4 * (size_t)sysconf(_SC_PAGESIZE);
	char *mem = aligned_alloc((size_t)sysconf(_SC_PAGESIZE), len);
	ck_assert_ptr_nonnull(mem);
	memset(mem, 0, len);
	ck_assert_int_eq(marcel_bubble_attach_memory(&b, mem, len), 0);
	long *nodes = marcel_bubble_stats_get(&b, MEMNODE);
	ck_assert_ptr_nonnull(nodes);
	long total = 0;
	for (unsigned n = 0; n < marcel_nbnodes() && n < MARCEL_STATS_MAX_NODES; n++) {
		size_t bytes;
		ck_assert_int_eq(marcel_bubble_memory_on_node(&b, n, &bytes), 0);
		ck_assert_int_eq(nodes[n], (long)bytes);
		total += nodes[n];
	}
	ck_assert_int_eq(total, (long)len);
	/* A thread's memory is its bubble's. */
	long *tnodes = marcel_task_stats_get(t, MEMNODE);
	ck_assert_ptr_nonnull(tnodes);
	ck_assert_int_eq(tnodes[0], nodes[0]);
	ck_assert_int_eq(marcel_bubble_detach_memory(&b, mem, len), 0);
	free(mem);
	ck_assert_int_eq(marcel_wake_up_bubble(&b), 0);
	ck_assert_int_eq(marcel_join(t, NULL), 0);
	ck_assert_int_eq(marcel_bubble_join(&b), 0);
	ck_assert_int_eq(marcel_bubble_destroy(&b), 0);
	ck_assert_int_eq(marcel_attr_destroy(&a), 0);
	marcel_end();
}
END_TEST

/* From a kernel thread that is not a marcel thread: the caller must be named. */
static void *foreign_stats(void *arg)
{
	marcel_t t = arg;
	set_errno(0);
	if (marcel_task_stats_get(NULL, LOAD) || get_errno() != EINVAL)
		return NULL;
	long *l = marcel_task_stats_get(t, LOAD);
	return l && *l == 4 ? arg : NULL;
}

START_TEST(test_stats_foreign)
{
	ma_test_init();
	marcel_task_stats_set(long, marcel_self(), LOAD, 4);
	pthread_t pt;
	void *ret;
	ck_assert_int_eq(pthread_create(&pt, NULL, foreign_stats, marcel_self()), 0);
	ck_assert_int_eq(pthread_join(pt, &ret), 0);
	ck_assert_ptr_eq(ret, marcel_self());
	marcel_end();
}
END_TEST

/* ============================================================ names that are build errors */

/* Compiles src against marcel's headers; returns the compiler's messages (malloc'd) and
 * sets *ok to whether it compiled. */
static char *compile_snippet(const char *src, int *ok)
{
	char dir[] = "/tmp/ma-api-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[64], cmd[1024];
	snprintf(path, sizeof(path), "%s/s.c", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -std=gnu11 -Wall -Wextra -Werror -c -o %s/s.o -I%s %s 2>&1", MA_CC, dir,
		 MA_INCLUDE_DIR, path);
	int status;
	char *out = ma_test_run_capture(cmd, &status);
	*ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	return out;
}

START_TEST(test_unhonoured_names)
{
	static const struct {
		const char *src, *names;
	} cases[] = {
		{ "#include <marcel.h>\nvoid f(void) { marcel_kill_other_threads_np(); }\n", "marcel_fork" },
		{ "#include <marcel.h>\nint f(marcel_bubble_sched_t *s) { return marcel_bubble_cache_sched_init(s, 0, 0); }\n",
		  "marcel_bubble_sched_instantiate" },
		{ "#include <marcel.h>\nMARCEL_DEFINE_BUBBLE_SCHEDULER_CLASS(mine, 0);\n",
		  "marcel_lookup_bubble_scheduler_class" },
		{ "#include <marcel.h>\nlong *f(void) { return marcel_task_stats_get(0); }\n", "wrong number of arguments" },
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ok;
		char *out = compile_snippet(cases[i].src, &ok);
		ck_assert_msg(!ok, "compiled: %s", cases[i].src);
		ck_assert_msg(strstr(out, cases[i].names) != NULL, "no '%s' in: %s", cases[i].names, out);
		free(out);
	}
	/* The Marcel forms that are honoured compile cleanly, with warnings as errors. */
	int ok;
	char *out = compile_snippet("#include <marcel.h>\n"
				    "long f(marcel_t t) { marcel_task_stats_set(long, t, LOAD, 2);\n"
				    "  marcel_barrier_mode_t m = 0; marcel_barrierattr_t a; marcel_barrierattr_init(&a);\n"
				    "  marcel_barrierattr_getmode(&a, &m);\n"
				    "  marcel_bubble_sched_t *s = marcel_bubble_change_sched(&marcel_bubble_null_sched);\n"
				    "  (void)s; marcel_bubble_shake(); return *(long *)marcel_task_stats_get(t, LAST_VP) + m; }\n",
				    &ok);
	ck_assert_msg(ok, "%s", out);
	free(out);
}
END_TEST

static void tc_sync(TCase *tc)
{
	tcase_add_test(tc, test_barrier_mode_and_once);
	tcase_add_test(tc, test_sem_open);
}

static void tc_compat(TCase *tc)
{
	tcase_add_test(tc, test_clock_malloc_processors);
	tcase_add_test(tc, test_threadslist);
	tcase_add_test(tc, test_fork);
	tcase_add_test(tc, test_attr_id_initbubble);
}

static void tc_sched(TCase *tc)
{
	tcase_add_test(tc, test_sched_classes);
	tcase_add_test(tc, test_shake_void);
	tcase_add_test(tc, test_stats_marcel_form);
	tcase_add_test(tc, test_stats_foreign);
}

int main(void)
{
	Suite *s = suite_create("marcel_api");
	ma_test_add_both(s, "sync", tc_sync, 60);
	ma_test_add_both(s, "compat", tc_compat, 60);
	ma_test_add_both(s, "sched", tc_sched, 60);
	TCase *tc = tcase_create("build-errors");
	tcase_add_test(tc, test_unhonoured_names);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return ma_test_run(s);
}
