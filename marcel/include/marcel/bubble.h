/**
 * @file marcel/bubble.h
 * @brief Bubbles: groups of related threads that the scheduler keeps together.
 *
 * An application puts threads that share data into a bubble, and bubbles into bubbles,
 * without naming a processor. The bubble scheduler (the *strategy*, chosen with
 * `MARCEL_BUBBLE_SCHEDULER`, see marcel/bubble_sched.h) maps this tree onto the run
 * queues, which mirror the machine: a bubble sits on a run queue as one unit (*closed*:
 * the workers below that queue serve its threads, round robin), or *bursts* there
 * (*opened*): its threads and sub-bubbles become separate units that the strategy spreads
 * further down. Every entity (thread or bubble) belongs to at most one bubble, its
 * *natural holder*; marcel_root_bubble holds everything else.
 *
 * A thread that creates threads without naming a bubble (no
 * marcel_attr_setnaturalbubble(), no marcel_attr_setinheritholder()) gets an implicit
 * *children bubble*, inserted into the creator's own bubble, so creation trees become
 * bubble trees. Children bubbles start opened, so their threads run where their
 * attributes place them, exactly as without bubbles, until a strategy decides otherwise.
 */
#ifndef MARCEL_BUBBLE_H
#define MARCEL_BUBBLE_H

#include <stddef.h>
#include <marcel/types.h>
#include <marcel/attr.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_bubbles Bubbles
 * Unless stated otherwise these functions may be called from any marcel thread between
 * marcel_init() and marcel_end(), return 0 on success and a POSIX error code otherwise,
 * and leave everything unchanged when they fail.
 * @{ */

/** Size of the storage of a ::marcel_bubble_t. */
#define MARCEL_BUBBLE_STORAGE 1024

/** A bubble. Treat as opaque: its storage is only for the runtime. A bubble must not be
 * moved or copied once initialised. */
typedef struct marcel_bubble {
	/** The runtime's storage. */
	union {
		unsigned char bytes[MARCEL_BUBBLE_STORAGE]; /**< Raw storage. */
		long double align;                          /**< Forces the strictest alignment. */
		void *ptr;                                  /**< Forces pointer alignment. */
	} ma_storage;
} marcel_bubble_t;

/** Static initializer: a bubble defined with it is ready to use, as if marcel_bubble_init()
 * had been called on it at its first use. */
#define MARCEL_BUBBLE_INITIALIZER { { { 0 } } }

/** An entity: a thread or a bubble, as seen by the bubble functions. */
typedef struct ma_entity marcel_entity_t;

/** The bubble holding everything that was not put into another bubble. It is opened on
 * the machine's run queue and cannot be joined, destroyed or inserted anywhere. */
extern marcel_bubble_t marcel_root_bubble;

/** Bubble status (regeneration: ::MARCEL_BUBBLE_OPENED → ::MARCEL_BUBBLE_CLOSING →
 * ::MARCEL_BUBBLE_CLOSED → bursts again). */
enum marcel_bubble_status {
	MARCEL_BUBBLE_CLOSED = 0,  /**< One unit: its ready threads are served from it. */
	MARCEL_BUBBLE_OPENED = 1,  /**< Burst: its contents are placed separately. */
	MARCEL_BUBBLE_CLOSING = 2, /**< Being regenerated: its threads are coming back. */
};

/** Initialises @p b: empty, closed, not woken, priority ::MA_DEF_PRIO, no scheduling level
 * (the strategy decides), id -1 until marcel_bubble_setid(). Every initialised bubble
 * must be destroyed (marcel_bubble_destroy()) before its storage goes away (a function
 * returning, free()): the runtime may still refer to it until then, even if nothing was
 * ever put in it. Initialising it again instead is allowed.
 * @return 0; EINVAL if @p b is NULL; EBUSY if @p b is marcel_root_bubble. */
int marcel_bubble_init(marcel_bubble_t *b);

/** Releases @p b's resources. The bubble must be empty and not inserted in another bubble.
 * Children bubbles (marcel_bubble_children()) of threads that ended are let go of by the
 * runtime; destroy waits for those that are being let go of as it is called, so a destroy
 * right after marcel_bubble_join() succeeds.
 * @return 0; EINVAL if @p b is NULL, not initialised or a children bubble
 * (marcel_bubble_children(): it goes with its thread); EBUSY if it still holds entities,
 * is inserted in a bubble (remove it first), or is marcel_root_bubble. */
int marcel_bubble_destroy(marcel_bubble_t *b);

/** Sets the application's id for @p b (shown in snapshots and traces).
 * @return 0; EINVAL if @p b is NULL or not initialised. */
int marcel_bubble_setid(marcel_bubble_t *b, int id);

/** Returns @p b's id (-1 if never set, or if @p b is NULL). */
int marcel_bubble_getid(const marcel_bubble_t *b);

/** The entity of bubble @p b (NULL if @p b is NULL). */
marcel_entity_t *marcel_bubble_entity(marcel_bubble_t *b);

/** The entity of thread @p t (NULL if @p t is NULL). */
marcel_entity_t *marcel_task_entity(marcel_t t);

/**
 * Inserts entity @p e into bubble @p b. A thread that only sits in an implicit children
 * bubble is moved; an entity inserted explicitly elsewhere must be removed first. If @p b
 * was woken, the entity is woken too (a thread created with marcel_create_dontsched()
 * starts; a bubble is woken with its contents).
 * @return 0; EINVAL if an argument is NULL or not initialised, or @p e is @p b itself,
 * an ancestor of @p b (a cycle), the main thread, marcel_root_bubble or a children bubble
 * (marcel_bubble_children(): it stays where its thread made it); EBUSY if @p e is
 * already in another bubble; ESRCH if @p e is a thread that has ended.
 */
int marcel_bubble_insertentity(marcel_bubble_t *b, marcel_entity_t *e);

/** marcel_bubble_insertentity() for a bubble. @return as marcel_bubble_insertentity(). */
int marcel_bubble_insertbubble(marcel_bubble_t *b, marcel_bubble_t *sub);

/** marcel_bubble_insertentity() for a thread. @return as marcel_bubble_insertentity(). */
int marcel_bubble_inserttask(marcel_bubble_t *b, marcel_t t);

/** Removes @p e from @p b; it goes back to marcel_root_bubble (where it runs). A thread
 * keeps running; a closed bubble keeps its contents.
 * @return 0; EINVAL for a NULL or uninitialised argument, or if @p e is a children bubble;
 * ENOENT if @p e is not in @p b. */
int marcel_bubble_removeentity(marcel_bubble_t *b, marcel_entity_t *e);

/** marcel_bubble_removeentity() for a bubble. @return as marcel_bubble_removeentity(). */
int marcel_bubble_removebubble(marcel_bubble_t *b, marcel_bubble_t *sub);

/** marcel_bubble_removeentity() for a thread. @return as marcel_bubble_removeentity(). */
int marcel_bubble_removetask(marcel_bubble_t *b, marcel_t t);

/**
 * Makes @p b and everything in it runnable: threads created with
 * marcel_create_dontsched() inside it start, sub-bubbles are woken. A bubble not inserted
 * anywhere is first inserted into the caller's bubble (marcel_bubble_holding_task() of the
 * caller; marcel_root_bubble outside marcel threads). The strategy places it at once (its
 * `submit` operation); marcel_bubble_sched_begin() later lets it place everything woken so
 * far together, which gives better decisions than one bubble at a time.
 * Waking a bubble that was woken already (inserted into a woken bubble such as
 * marcel_root_bubble, or woken before) starts the threads created in it since with
 * marcel_create_dontsched(), unless a bubble above it still sleeps (they start with it).
 * @return 0; EINVAL if @p b is NULL, not initialised or marcel_root_bubble.
 */
int marcel_wake_up_bubble(marcel_bubble_t *b);

/**
 * Waits until no thread is left in @p b at any depth (every one ended or was removed),
 * then detaches @p b from its bubble and from the scheduler. Sub-bubbles, empty of
 * threads by then, stay inside @p b: remove (or join) them before destroying @p b, which
 * is EBUSY while it has members. @p b can then be destroyed or woken again.
 * @return 0; EINVAL for NULL, uninitialised, marcel_root_bubble or a children bubble (it
 * is not joined: it goes when its thread and its members have ended); EDEADLK if the
 * caller is itself inside @p b; EBUSY if another thread is already joining it.
 */
int marcel_bubble_join(marcel_bubble_t *b);

/**
 * Barrier among the threads of @p b (its direct and indirect member threads): returns
 * once every thread currently in @p b has called it. One caller per round gets
 * MARCEL_BARRIER_SERIAL_THREAD (see marcel/sync.h), the others 0.
 * @return as described; EINVAL for NULL/uninitialised; EPERM if the caller is not a
 * thread of @p b.
 */
int marcel_bubble_barrier(marcel_bubble_t *b);

/** Sets @p b's priority (0 .. ::MA_MAX_PRIO - 1; lower is more urgent), which orders it
 * among the entities of its run queue.
 * @return 0; EINVAL for NULL/uninitialised or a priority out of range. */
int marcel_bubble_setprio(marcel_bubble_t *b, int prio);

/** Reads @p b's priority. @return 0; EINVAL for NULL/uninitialised or NULL @p prio. */
int marcel_bubble_getprio(const marcel_bubble_t *b, int *prio);

/** No scheduling level: the strategy decides where the entity bursts. */
#define MARCEL_LEVEL_DEFAULT 0

/**
 * Sets the level at which @p e bursts: one ::marcel_level_kind (marcel/topology.h), e.g.
 * ::MARCEL_LEVEL_NUMA for "one NUMA node's cores run this bubble's threads", or
 * ::MARCEL_LEVEL_DEFAULT. The level is a kind, not a depth, so a program says the same on
 * any machine. A kind this machine lacks constrains nothing: `burst` and `steal` then
 * burst the bubble on the machine's queue, `spread` and `memory` where their decision
 * starts (the machine for sched_begin, the parent's queue for a submit).
 * For a thread, the level bounds how far down the strategy places it.
 * @return 0; EINVAL for a NULL entity or a value that is not 0 or a single kind bit.
 */
int marcel_entity_setschedlevel(marcel_entity_t *e, int level);

/** Reads @p e's scheduling level. @return 0; EINVAL for NULL arguments. */
int marcel_entity_getschedlevel(const marcel_entity_t *e, int *level);

/** marcel_entity_setschedlevel() for a bubble. @return as marcel_entity_setschedlevel(). */
int marcel_bubble_setschedlevel(marcel_bubble_t *b, int level);

/** marcel_entity_getschedlevel() for a bubble. @return as marcel_entity_getschedlevel(). */
int marcel_bubble_getschedlevel(const marcel_bubble_t *b, int *level);

/** marcel_entity_setschedlevel() for a thread. @return as marcel_entity_setschedlevel(). */
int marcel_task_setschedlevel(marcel_t t, int level);

/** marcel_entity_getschedlevel() for a thread. @return as marcel_entity_getschedlevel(). */
int marcel_task_getschedlevel(marcel_t t, int *level);

/** Pins @p b to the run queue of topology item @p item (marcel_topo_get_item()): when
 * woken it goes there, closed, and bursts there; strategies do not move it.
 * @return 0; EINVAL for NULL/uninitialised or an item out of range. */
int marcel_bubble_scheduleonlevel(marcel_bubble_t *b, unsigned item);

/** Pins @p b to the run queue the calling thread is scheduled on (see
 * marcel_bubble_scheduleonlevel()).
 * @return 0; EINVAL for NULL/uninitialised; EPERM outside a marcel thread. */
int marcel_bubble_scheduleonthreadholder(marcel_bubble_t *b);

/** Sets the regeneration period of @p b in microseconds (0: never, the default except
 * under the `burst` strategy, which regenerates every 20 ms a bubble whose period is
 * unset). When it expires after a burst, the bubble closes, gathers its threads and
 * bursts again where load now calls for it.
 * @return 0; EINVAL for NULL/uninitialised. */
int marcel_bubble_settimeslice(marcel_bubble_t *b, unsigned long us);

/** Reads @p b's regeneration period. @return 0; EINVAL for NULL arguments. */
int marcel_bubble_gettimeslice(const marcel_bubble_t *b, unsigned long *us);

/** Returns @p b's status (::marcel_bubble_status), or -1 for NULL/uninitialised. */
int marcel_bubble_status(const marcel_bubble_t *b);

/** Returns the bubble thread @p t belongs to (its natural holder: an explicit bubble, its
 * creator's children bubble, or marcel_root_bubble), or NULL if @p t is NULL or ended. */
marcel_bubble_t *marcel_bubble_holding_task(marcel_t t);

/** Returns the bubble bubble @p b is inserted in, or NULL if none (or @p b is NULL). */
marcel_bubble_t *marcel_bubble_holding_bubble(marcel_bubble_t *b);

/** Returns the calling thread's children bubble (created on first use; NULL outside a
 * marcel thread or if memory ran out). It sits where the thread was when it was made and
 * is freed once the thread and everything in it ended: it cannot be moved, joined or
 * destroyed, but bubbles and threads can be inserted into it. */
marcel_bubble_t *marcel_bubble_children(void);

/** Threads created with @p attr go into bubble @p b (NULL: the default, the creator's
 * children bubble); they start when @p b is woken, at once if it already is. With
 * marcel_root_bubble they belong to no bubble of the program's, as Marcel's tests ask:
 * they start at once and are placed by themselves.
 * @return 0; EINVAL if @p attr is not initialised, or @p b is not an initialised bubble. */
int marcel_attr_setnaturalbubble(marcel_attr_t *attr, marcel_bubble_t *b);

/** Reads the bubble set by marcel_attr_setnaturalbubble() (NULL: none).
 * @return 0; EINVAL for NULL arguments or an uninitialised @p attr. */
int marcel_attr_getnaturalbubble(const marcel_attr_t *attr, marcel_bubble_t **b);

/** Non-zero: threads created with @p attr go into their creator's own bubble (as its
 * siblings) instead of its children bubble. Ignored when a natural bubble is set.
 * @return 0; EINVAL for an uninitialised @p attr. */
int marcel_attr_setinheritholder(marcel_attr_t *attr, int yes);

/** Reads the flag set by marcel_attr_setinheritholder().
 * @return 0; EINVAL for NULL arguments or an uninitialised @p attr. */
int marcel_attr_getinheritholder(const marcel_attr_t *attr, int *yes);

/** @} */

/** @defgroup marcel_bubble_stats Statistics
 * Every entity carries statistics; a bubble's are synthesized from its contents when
 * asked (a walk of its subtree). Strategies and hwprio read these and nothing else.
 * @{ */

/** Statistics that can be read (and, for ::MARCEL_STATS_LOAD and the load metrics,
 * written). The load metrics (::MARCEL_STATS_FP_RATE, ::MARCEL_STATS_MISS_RATE,
 * ::MARCEL_STATS_MEMOP_RATE) say how much a thread uses the resources SMT siblings share,
 * in events per 1000 instructions retired; the `contention` strategy pairs threads by
 * them. A thread's value is the hardware counters' measure where they are in use
 * (`MARCEL_METRICS`), else the application's hint, else -1. */
enum marcel_stats {
	MARCEL_STATS_LOAD,        /**< Load hint set by the application (a thread's default is
				       1, a bubble's the sum of its contents' unless set). */
	MARCEL_STATS_NB_THREADS,  /**< Threads (alive) in it, at any depth. */
	MARCEL_STATS_NB_READY,    /**< Of those, ready (queued). */
	MARCEL_STATS_NB_RUNNING,  /**< Of those, running now. */
	MARCEL_STATS_CPU_TIME,    /**< CPU time consumed, in ns (ended threads included). */
	MARCEL_STATS_LAST_VP,     /**< VP it last ran on (for a bubble: most of its threads'),
				       -1 if never. */
	MARCEL_STATS_LAST_LEVEL,  /**< Topology item of the queue it was last taken from or
				       burst on, -1 if never. */
	MARCEL_STATS_MEMORY,      /**< Bytes of memory attached (all NUMA nodes). */
	MARCEL_STATS_MASTER,      /**< 1 if the thread is a master thread (marcel_task_setmaster(),
				       main's by default); a bubble: how many of its threads are. */
	MARCEL_STATS_NB_SPINNING, /**< Threads polling a busy primitive now, before they block
				       (counted in ::MARCEL_STATS_NB_RUNNING too): runnable to
				       the machine, waiting to the program. */
	MARCEL_STATS_FP_RATE,     /**< Floating-point operations per 1000 instructions; a
				       bubble: the sum over its threads that have one, -1 if
				       none has. */
	MARCEL_STATS_MISS_RATE,   /**< Cache misses per 1000 instructions; a bubble: as
				       ::MARCEL_STATS_FP_RATE. */
	MARCEL_STATS_MEMOP_RATE,  /**< Memory operations (level-1 data reads) per 1000
				       instructions; a bubble: as ::MARCEL_STATS_FP_RATE. */
};

/** Marks @p t as a master thread (@p master 1) or not (0): the thread whose progress the
 * others wait for in a program's serial phases. The asymmetry-aware strategies (`pa`,
 * `mintlp`) keep a master on a fast core whenever it runs. The thread that runs main is
 * a master from the start.
 * @return 0; EINVAL for a @p master other than 0 or 1; ESRCH if @p t ended. */
int marcel_task_setmaster(marcel_t t, int master);

/** Reads whether @p t is a master thread into @p master.
 * @return 0; EINVAL for a NULL @p master; ESRCH if @p t ended. */
int marcel_task_getmaster(marcel_t t, int *master);

/** Reads statistic @p which of thread @p t into @p value. A load metric is the counters'
 * measure if they measured @p t, else the hint set with marcel_task_stats_set(), else -1;
 * under `MARCEL_METRICS=perf` the read samples the counters first (at most every 10 ms).
 * @return 0; EINVAL for NULL arguments, an unknown statistic; ESRCH if @p t ended. */
int marcel_task_stats_get(marcel_t t, int which, long long *value);

/** Sets @p t's load hint (::MARCEL_STATS_LOAD) or its hint for a load metric
 * (::MARCEL_STATS_FP_RATE, ::MARCEL_STATS_MISS_RATE, ::MARCEL_STATS_MEMOP_RATE: events per
 * 1000 instructions, from 0 to 1000000; a measure of the counters, when there is one,
 * comes first). A negative @p value unsets it. Thread-safe; a strategy sees the new value
 * at its next decision.
 * @return 0; EINVAL for another statistic or a metric above 1000000 (nothing changed);
 * ESRCH if @p t ended. */
int marcel_task_stats_set(marcel_t t, int which, long long value);

/** Reads statistic @p which of bubble @p b (synthesized over its subtree).
 * @return 0; EINVAL for NULL/uninitialised arguments or an unknown statistic. */
int marcel_bubble_stats_get(marcel_bubble_t *b, int which, long long *value);

/** Sets @p b's load hint, overriding the sum of its contents (negative: unset again). The
 * load metrics are its threads' own, not a bubble's.
 * @return 0; EINVAL for another statistic or an uninitialised bubble. */
int marcel_bubble_stats_set(marcel_bubble_t *b, int which, long long value);

/** Bytes of memory attached to @p b (its subtree included) on NUMA node @p node.
 * @return 0; EINVAL for NULL arguments or a node out of range. */
int marcel_bubble_memory_on_node(marcel_bubble_t *b, unsigned node, size_t *bytes);

/**
 * Records that bubble @p b uses @p len bytes at @p addr. The bytes are counted on the NUMA
 * node(s) holding those pages now (pages not touched yet count where the memory policy
 * will put them, as hwloc reports); the `memory` strategy sends the bubble to the node
 * holding most of its bytes.
 * @return 0; EINVAL for NULL arguments or @p len 0; ENOMEM.
 */
int marcel_bubble_attach_memory(marcel_bubble_t *b, void *addr, size_t len);

/** Undoes marcel_bubble_attach_memory() for the same range.
 * @return 0; EINVAL if that range was not attached. */
int marcel_bubble_detach_memory(marcel_bubble_t *b, void *addr, size_t len);

/** marcel_bubble_attach_memory() for a thread. @return as marcel_bubble_attach_memory(). */
int marcel_task_attach_memory(marcel_t t, void *addr, size_t len);

/** Allocates @p size bytes bound to NUMA node @p node (hwloc memory binding; on a fake
 * topology, or if binding is not supported, ordinary memory is returned and the bytes are
 * still accounted to @p node when attached). Free with marcel_free_on_node().
 * @return the memory, or NULL with errno set (EINVAL for a bad node or size 0, ENOMEM). */
void *marcel_malloc_on_node(size_t size, unsigned node);

/** Frees memory from marcel_malloc_on_node() (@p size as allocated). */
void marcel_free_on_node(void *ptr, size_t size);

/** Returns the number of NUMA nodes the runtime knows (at least 1 once running). */
unsigned marcel_nbnodes(void);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
