/*
 * Target of tests/gdb-helper.sh: puts named threads in known states, each in a function
 * of its own, then calls ma_gdb_breakpoint_here(), where gdb stops and runs the
 * `marcel threads` commands of tools/marcel-gdb.py.
 *
 *   sem-waiter   BLOCKED  in block_in_sem       (marcel_sem_P)
 *   sleeper      BLOCKED  in block_in_sleep     (marcel_usleep)
 *   cond-waiter  BLOCKED  in block_in_cond      (marcel_cond_wait)
 *   joiner       BLOCKED  in block_in_join      (marcel_join of sem-waiter)
 *   spinner      RUNNING  in spin_until_released, alone on the last VP
 *   yielder      READY    in yield_until_released (started, then yielded to the spinner)
 *   unborn       BORN     (marcel_create_dontsched, never started)
 *   suspended    BLOCKED  in stop_in_suspend    (marcel_suspend of itself)
 *   reader       RUNNING  in block_in_read, in a blocking section (marcel_read of an empty
 *                         pipe): its kernel thread left its VP to a spare one
 *   main         RUNNING  in ma_gdb_breakpoint_here (called by main)
 *
 * Run it with at least two VPs (the test uses a synthetic 4-VP topology). Without gdb it
 * releases everything and exits 0 after a few seconds (the sleeper's nap).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <marcel.h>

static marcel_sem_t sem;
static marcel_mutex_t mutex = MARCEL_MUTEX_INITIALIZER;
static marcel_cond_t cond = MARCEL_COND_INITIALIZER;
static int cond_ready;
static atomic_int about_to_block;
static atomic_int released;
static atomic_int spinner_started, yielder_started;
static marcel_t sem_waiter;
static int pipe_fds[2];

/* Keeps the calls below from becoming tail calls, so each function keeps its frame. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) static any_t block_in_sem(any_t arg)
{
	atomic_fetch_add(&about_to_block, 1);
	marcel_sem_P(&sem);
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t block_in_sleep(any_t arg)
{
	atomic_fetch_add(&about_to_block, 1);
	marcel_usleep(3 * 1000 * 1000);
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t block_in_cond(any_t arg)
{
	marcel_mutex_lock(&mutex);
	atomic_fetch_add(&about_to_block, 1);
	while (!cond_ready)
		marcel_cond_wait(&cond, &mutex);
	marcel_mutex_unlock(&mutex);
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t block_in_join(any_t arg)
{
	atomic_fetch_add(&about_to_block, 1);
	marcel_join(sem_waiter, NULL);
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t block_in_read(any_t arg)
{
	char c;
	atomic_fetch_add(&about_to_block, 1);
	if (marcel_read(pipe_fds[0], &c, 1) != 1)
		return (any_t)1;
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t stop_in_suspend(any_t arg)
{
	atomic_fetch_add(&about_to_block, 1);
	marcel_suspend(marcel_self());
	KEEP_FRAME();
	return arg;
}

/* Shares the last VP with the spinner: runs once, then stays queued behind it. */
__attribute__((noinline)) static any_t yield_until_released(any_t arg)
{
	atomic_store(&yielder_started, 1);
	while (!atomic_load(&released))
		marcel_yield();
	KEEP_FRAME();
	return arg;
}

/* Lets the yielder start once, then keeps its VP without yielding until released. */
__attribute__((noinline)) static any_t spin_until_released(any_t arg)
{
	while (!atomic_load(&yielder_started))
		marcel_yield();
	atomic_store(&spinner_started, 1);
	while (!atomic_load(&released))
		__asm__ volatile("" ::: "memory");
	KEEP_FRAME();
	return arg;
}

__attribute__((noinline)) static any_t never_started(any_t arg)
{
	return arg;
}

/* gdb breaks here; everything above is in place. */
__attribute__((noinline)) void ma_gdb_breakpoint_here(void);
__attribute__((noinline)) void ma_gdb_breakpoint_here(void)
{
	__asm__ volatile("" ::: "memory");
}

static marcel_t spawn(const char *name, marcel_func_t f, int dontsched, int vp)
{
	marcel_attr_t a;
	marcel_t t;
	marcel_attr_init(&a);
	marcel_attr_setname(&a, name);
	if (vp >= 0)
		marcel_attr_setvpset(&a, MARCEL_VPSET_VP((unsigned)vp));
	int r = dontsched ? marcel_create_dontsched(&t, &a, f, NULL) : marcel_create(&t, &a, f, NULL);
	if (r) {
		fprintf(stderr, "gdb-target: cannot create %s: %d\n", name, r);
		exit(1);
	}
	return t;
}

int main(int argc, char **argv)
{
	if (marcel_init(&argc, argv))
		return 1;
	int nvp = (int)marcel_nbvps();
	if (nvp < 2) {
		fprintf(stderr, "gdb-target: needs at least 2 VPs (has %d)\n", nvp);
		marcel_end();
		return 1;
	}
	marcel_sem_init(&sem, 0);
	if (pipe(pipe_fds)) {
		perror("gdb-target: pipe");
		return 1;
	}
	marcel_t t[8];
	t[0] = sem_waiter = spawn("sem-waiter", block_in_sem, 0, -1);
	t[1] = spawn("sleeper", block_in_sleep, 0, -1);
	t[2] = spawn("cond-waiter", block_in_cond, 0, -1);
	t[3] = spawn("joiner", block_in_join, 0, -1);
	t[4] = spawn("yielder", yield_until_released, 0, nvp - 1);
	t[5] = spawn("spinner", spin_until_released, 0, nvp - 1);
	t[6] = spawn("reader", block_in_read, 0, -1);
	t[7] = spawn("suspended", stop_in_suspend, 0, -1);
	marcel_t unborn = spawn("unborn", never_started, 1, -1);

	/* Wait until everybody is where it should be, then give the blockers time to block
	 * (the flag is set just before the blocking call). */
	while (atomic_load(&about_to_block) < 6 || !atomic_load(&spinner_started))
		marcel_usleep(1000);
	marcel_usleep(200 * 1000);

	ma_gdb_breakpoint_here();

	/* Release everyone (only reached without gdb, or if gdb lets it continue). */
	atomic_store(&released, 1);
	marcel_sem_V(&sem);
	marcel_mutex_lock(&mutex);
	cond_ready = 1;
	marcel_cond_signal(&cond);
	marcel_mutex_unlock(&mutex);
	if (write(pipe_fds[1], "x", 1) != 1)
		return 1;
	marcel_resume(t[7]);
	marcel_wake_up_created_thread(unborn);
	marcel_join(unborn, NULL);
	/* t[0] is joined by the joiner. */
	int ret = 0;
	for (int i = 1; i < 8; i++) {
		any_t r = NULL;
		marcel_join(t[i], &r);
		ret |= r != NULL;
	}
	marcel_end();
	puts("gdb-target: done");
	return ret;
}
