/*
 * A program written for PM2's Marcel, the way its marcel/tests were: one `#include
 * <marcel.h>` and nothing else (Marcel's header brought the C library in), features
 * guarded by Marcel's feature macros, Marcel's names and signatures (the bubble scheduler
 * class API, marcel_bubble_shake(void), `*(long *)marcel_task_stats_get(t, LAST_VP)`,
 * marcel_task_stats_set(long, ...), marcel_attr_setinitbubble, named semaphores,
 * marcel_threadslist, marcel_clock), and MARCEL_TEST_SUCCEEDED as its exit status.
 *
 * It must compile unchanged and run every part: where Marcel's tests would skip a part
 * whose macro is missing, this one fails instead, since a missing macro here means a
 * working feature that Marcel programs would silently skip.
 */
#include <marcel.h>

#if defined(MARCEL_BUBBLES) && defined(MA__BUBBLES) && defined(MA__LWPS) && defined(MARCEL_SMP) &&       \
	defined(MARCEL_NUMA) && defined(MARCEL_KEYS_ENABLED) && defined(MARCEL_ONCE_ENABLED) &&          \
	defined(MARCEL_SUSPEND_ENABLED) && defined(MARCEL_BLOCKING_ENABLED) && defined(MARCEL_STATS_ENABLED)

#define NB_THREADS 4

static int failures;
#define CHECK(cond)                                                                            \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			marcel_fprintf(stderr, "marcel-program.c:%d: %s\n", __LINE__, #cond); \
			failures++;                                                            \
		}                                                                              \
	} while (0)

static marcel_once_t once = MARCEL_ONCE_INITIALIZER;
static int once_runs;
static marcel_key_t key;
static marcel_barrier_t start_barrier;
static marcel_sem_t *named;
static int tids_alive[NB_THREADS]; /* only their addresses: thread-specific values */

static void once_init(void)
{
	once_runs++;
}

static void *worker(void *arg)
{
	long id = (long)arg;

	marcel_barrier_wait(&start_barrier);
	marcel_once(&once, once_init);
	CHECK(marcel_setspecific(key, &tids_alive[id]) == 0);

	/* Marcel's statistics: a pointer to a long, and the four-argument setter. */
	long vp = *(long *)marcel_task_stats_get(marcel_self(), LAST_VP);
	CHECK(vp >= 0 && vp < (long)marcel_nbvps());
	marcel_task_stats_set(long, marcel_self(), LOAD, 10 + id);
	CHECK(*(long *)marcel_task_stats_get(NULL, LOAD) == 10 + id);

	/* Named semaphore as a token passed around. */
	marcel_sem_P(named);
	marcel_yield();
	marcel_sem_V(named);

	CHECK(marcel_getspecific(key) == &tids_alive[id]);
	return arg;
}

static int keys_destroyed;
static void key_destructor(any_t v)
{
	(void)v;
	__atomic_add_fetch(&keys_destroyed, 1, __ATOMIC_RELAXED);
}

/* The C library, through <marcel.h> alone. */
static void libc_through_marcel_h(void)
{
	jmp_buf env;
	volatile int jumped = 0;
	char *scratch = alloca(64);
	memset(scratch, 'x', 63);
	scratch[63] = 0;
	CHECK(strlen(scratch) == 63);
	if (setjmp(env) == 0)
		longjmp(env, 1);
	else
		jumped = 1;
	CHECK(jumped);
	int fd = open("/dev/null", O_RDONLY);
	CHECK(fd >= 0);
	if (fd >= 0)
		CHECK(close(fd) == 0);
	sigset_t set;
	sigemptyset(&set);
	CHECK(!sigismember(&set, SIGINT));
	CHECK(getpid() > 0);
	char *p = marcel_malloc(128);
	CHECK(p != NULL);
	marcel_free(p);
}

int main(int argc, char *argv[])
{
	marcel_t tids[NB_THREADS];
	marcel_attr_t attr;
	marcel_barrierattr_t battr;
	marcel_barrier_mode_t mode;
	marcel_bubble_t bubble;
	marcel_bubble_sched_t *scheduler;
	int nb, i;

	marcel_init(&argc, argv);
	marcel_ensure_abi_compatibility(MARCEL_HEADER_HASH);
	libc_through_marcel_h();
	CHECK(marcel_nbprocessors >= 1);

	/* Choose the cache scheduler through its class, as bubble-cache-*.c did. */
	CHECK(marcel_lookup_bubble_scheduler_class("cache") == &marcel_bubble_cache_sched_class);
	CHECK(marcel_lookup_bubble_scheduler_class("@does-not-exist") == NULL);
	scheduler = alloca(marcel_bubble_sched_instance_size(&marcel_bubble_cache_sched_class));
	CHECK(marcel_bubble_sched_instantiate(&marcel_bubble_cache_sched_class, scheduler) == 0);
	marcel_bubble_change_sched(scheduler);
	CHECK(marcel_bubble_current_sched() == scheduler);
	CHECK(marcel_bubble_sched_class(marcel_bubble_current_sched()) == &marcel_bubble_cache_sched_class);

	CHECK(marcel_key_create(&key, key_destructor) == 0);
	marcel_barrierattr_init(&battr);
	marcel_barrierattr_setmode(&battr, MARCEL_BARRIER_YIELD_MODE);
	marcel_barrierattr_getmode(&battr, &mode);
	CHECK(mode == MARCEL_BARRIER_YIELD_MODE);
	marcel_barrier_init(&start_barrier, &battr, NB_THREADS + 1);
	named = marcel_sem_open("/marcel-program", O_CREAT | O_EXCL, 0600, 1);
	CHECK(named != MARCEL_SEM_FAILED);

	marcel_bubble_init(&bubble);
	marcel_attr_init(&attr);
	CHECK(marcel_attr_setinitbubble(&attr, &bubble) == 0);
	for (i = 0; i < NB_THREADS; i++) {
		marcel_attr_setid(&attr, i);
		marcel_create(&tids[i], &attr, worker, (any_t)(long)i);
	}
	marcel_wake_up_bubble(&bubble);
	marcel_bubble_sched_begin();

	/* The threads wait at the barrier: all are alive, and so is main. */
	CHECK(marcel_threadslist(0, NULL, &nb, 0) == 0);
	CHECK(nb >= NB_THREADS + 1);
	CHECK(marcel_bubble_holding_task(tids[0]) == &bubble);

	unsigned long t0 = marcel_clock();
	marcel_delay(20);
	CHECK(marcel_clock() - t0 >= 19);

	marcel_barrier_wait(&start_barrier);
	marcel_bubble_shake();
	for (i = 0; i < NB_THREADS; i++) {
		any_t ret;
		CHECK(marcel_join(tids[i], &ret) == 0 && ret == (any_t)(long)i);
	}
	marcel_bubble_join(&bubble);
	CHECK(once_runs == 1);
	CHECK(keys_destroyed == NB_THREADS);
	CHECK(marcel_sem_close(named) == 0);
	CHECK(marcel_sem_unlink("/marcel-program") == 0);

	/* Back to the null scheduler, Marcel's ready-made instance. */
	marcel_bubble_change_sched(&marcel_bubble_null_sched);
	CHECK(marcel_bubble_current_sched() == &marcel_bubble_null_sched);

	marcel_attr_destroy(&attr);
	marcel_bubble_destroy(&bubble);
	marcel_end();
	return failures ? 1 : MARCEL_TEST_SUCCEEDED;
}

#else

int main(void)
{
	fprintf(stderr, "marcel-program: <marcel.h> lacks a feature macro of a working feature: a Marcel "
			"program would skip it\n");
	return 1;
}

#endif
