/**
 * @file marcel/snapshot.h
 * @brief A picture of the scheduler: the run-queue tree with the bubbles and threads each
 * queue holds or runs, and the bubble tree with every entity's statistics.
 *
 * The tests use this and nothing else to see placement; it is the interface for tools. Each queue and each
 * bubble is read under its own lock, one after the other, so the picture is consistent per
 * queue and per bubble but is not one instant of the whole machine.
 */
#ifndef MARCEL_SNAPSHOT_H
#define MARCEL_SNAPSHOT_H

#include <stdio.h>
#include <stdint.h>
#include <marcel/types.h>
#include <marcel/bubble.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_snapshot Scheduler snapshots
 * @{ */

/** What a snapshot entity is. */
enum marcel_snapshot_kind {
	MARCEL_SNAPSHOT_THREAD = 0, /**< A thread. */
	MARCEL_SNAPSHOT_BUBBLE = 1, /**< A bubble. */
};

/** A thread's state in a snapshot. */
enum marcel_snapshot_state {
	MARCEL_SNAPSHOT_BORN = 0,      /**< Created, not started. */
	MARCEL_SNAPSHOT_READY = 1,     /**< Waiting on a queue or in a closed bubble. */
	MARCEL_SNAPSHOT_RUNNING = 2,   /**< Running on a VP. */
	MARCEL_SNAPSHOT_BLOCKED = 3,   /**< Waiting for an event. */
	MARCEL_SNAPSHOT_OTHER = 4,     /**< Ending, suspended, in a blocking section... */
};

/** One entity (thread or bubble). Indexes refer to the snapshot's arrays; -1 means none. */
struct marcel_snapshot_entity {
	int kind;                 /**< ::marcel_snapshot_kind. */
	uint64_t uid;             /**< Unique id (the trace's thread/bubble id). */
	int id;                   /**< Bubble: marcel_bubble_setid() value (-1 if unset); thread: -1. */
	marcel_t thread;          /**< The thread (may have ended since the snapshot). */
	marcel_bubble_t *bubble;  /**< The bubble (may have been destroyed since). */
	char name[MARCEL_MAXNAMESIZE]; /**< Thread name; bubbles: "bubble <id>", "children of <name>", "root". */
	int implicit;             /**< Bubble: an implicit children bubble. */
	int state;                /**< Thread: ::marcel_snapshot_state; bubble: ::marcel_bubble_status. */
	int parent;               /**< Entity index of its bubble (natural holder), -1 for the root. */
	int depth;                /**< Depth in the bubble tree (root 0). */
	int queue;                /**< Queue index it is scheduled on: where it is queued, runs or
				       will be queued; for a thread held in a closed bubble, that
				       bubble's queue. -1 if not placed. */
	int held_by;              /**< Thread: entity index of the closed bubble serving it, -1 if
				       it is scheduled on its own. */
	int running_vp;           /**< Thread: VP running it now, -1 if not running. */
	int prio;                 /**< Priority. */
	int sched_level;          /**< marcel_entity_setschedlevel() value. */
	long long load;           /**< ::MARCEL_STATS_LOAD (synthesized for bubbles). */
	long long nb_threads;     /**< ::MARCEL_STATS_NB_THREADS. */
	long long nb_ready;       /**< ::MARCEL_STATS_NB_READY. */
	long long nb_running;     /**< ::MARCEL_STATS_NB_RUNNING. */
	long long cpu_ns;         /**< ::MARCEL_STATS_CPU_TIME. */
	int last_vp;              /**< ::MARCEL_STATS_LAST_VP. */
	int last_level;           /**< ::MARCEL_STATS_LAST_LEVEL. */
	long long memory;         /**< ::MARCEL_STATS_MEMORY. */
};

/** One run queue: a topology item's, or a VP's own. */
struct marcel_snapshot_queue {
	char name[32];            /**< "machine", "NUMANode1", "Core5", or "VP3" for a VP's own queue. */
	int item;                 /**< Topology item (marcel_topo_get_item()); for a VP's queue, its
				       VP's item. */
	int vp;                   /**< VP number for a VP's own queue, -1 for an item's. */
	int parent;               /**< Queue index of the parent queue, -1 for the machine. */
	unsigned depth;           /**< Item depth (a VP's queue: its item's depth + 1). */
	unsigned kinds;           /**< ::marcel_level_kind bits of the item. */
	unsigned first_vp;        /**< First VP that can see this queue. */
	unsigned nb_vps;          /**< Number of VPs that can see it. */
	int running;              /**< VP queue: entity index of the thread the VP runs, -1 if idle. */
	unsigned nb_queued;       /**< Entities queued on it now. */
	int *queued;              /**< Their entity indexes, in queue order (most urgent first). */
	int hwprio_level;         /**< VP queue: the hardware-priority level its worker applied last
				       (marcel/hwprio.h; 0 while hwprio is off). */
};

/** A snapshot: queues in topology pre-order (machine first) followed by the VPs' own
 * queues; entities in bubble-tree pre-order (root first). */
struct marcel_snapshot {
	char strategy[32];        /**< Name of the bubble scheduler in use. */
	unsigned nb_vps;          /**< Number of VPs. */
	unsigned nb_queues;       /**< Number of queues. */
	struct marcel_snapshot_queue *queues; /**< The queues. */
	unsigned nb_entities;     /**< Number of entities. */
	struct marcel_snapshot_entity *entities; /**< The entities. */
};

/** Takes a snapshot. Free it with marcel_sched_snapshot_free().
 * @return the snapshot, or NULL with errno set (EPERM if the runtime is not running,
 * ENOMEM). */
struct marcel_snapshot *marcel_sched_snapshot(void);

/** Frees @p s (NULL is allowed). */
void marcel_sched_snapshot_free(struct marcel_snapshot *s);

/** Writes @p s as JSON (an object with "strategy", "vps", "queues" and "entities"; every
 * field above under its name) to @p out.
 * @return 0; EINVAL for NULL arguments; EIO if writing failed. */
int marcel_sched_snapshot_write_json(const struct marcel_snapshot *s, FILE *out);

/** Takes a snapshot and writes it as JSON to @p out.
 * @return as marcel_sched_snapshot_write_json(), or EPERM/ENOMEM. */
int marcel_sched_snapshot_json(FILE *out);

/** Returns the index of the entity for thread @p t in @p s, or -1. */
int marcel_snapshot_find_thread(const struct marcel_snapshot *s, marcel_t t);

/** Returns the index of the entity for bubble @p b in @p s, or -1. */
int marcel_snapshot_find_bubble(const struct marcel_snapshot *s, marcel_bubble_t *b);

/** Returns the VP a thread entity runs on or will run on, as far as its queue tells: the
 * running VP, the VP of a VP queue, or -1 when its queue is shared by several VPs. */
int marcel_snapshot_thread_vp(const struct marcel_snapshot *s, int entity);

/** Returns non-zero if queue @p q of @p s is @p anc or lies below it. */
int marcel_snapshot_queue_within(const struct marcel_snapshot *s, int q, int anc);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
