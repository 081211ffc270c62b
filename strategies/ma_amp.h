/*
 * What pa and mintlp share (amp.c): placement on asymmetric machines, where some cores
 * (the most performant core kind, hwloc's cpukinds) are faster than the others. The
 * policies come from the 004 seed (Saez et al., "Operating system support for mitigating
 * software scalability bottlenecks on asymmetric multicore processors"):
 *
 * - An application is a bubble of the root (its outer bubbles, or an implicit one), or a
 *   thread alone under the root. Its thread-level parallelism (TLP) is the number of its
 *   threads that can use a core now: ready or running, and not spinning in a wait
 *   (spin-then-notify: such a thread waits, to the program).
 * - The fast cores go to the candidates in the order of a priority the policy gives each
 *   runnable thread (pa: serial phases, then master threads, then the threads of
 *   applications of low TLP; mintlp: the applications of lowest TLP first). A thread
 *   that holds a fast core keeps it against candidates of its own priority, except (pa)
 *   once it has held it for MA_AMP_BOOST_BEATS: it then yields it to one that waits (the
 *   seed's swap), so fast cores are shared and never ping-pong.
 * - The chosen threads are moved to the fast VPs' own queues, each to the free one
 *   nearest to where it last ran. A fast VP no candidate wants takes the best runnable
 *   thread left, and keeps it while it waits at barriers, for a turn at most: a fast
 *   core does not idle while work waits. Every other thread gets a slow VP's own queue
 *   in its memory domain (the machine's child holding its last VP), the slow VPs
 *   balanced by the threads they hold: left on a shared queue, a thread would be taken
 *   by a fast VP between two slices of the chosen one.
 *
 * Every bubble is burst (a strategy that places threads one by one needs them on
 * queues); decisions are made at the strategy's heartbeat (MA_AMP_BEAT_US, the seed's
 * 10 ms timeslice) on a view of the whole tree (MA_VIEW_TREE). On a machine with one
 * core kind both strategies only burst bubbles and balance nothing: there is nothing to
 * decide.
 */
#ifndef MA_AMP_H
#define MA_AMP_H

#include <stdint.h>
#include "ma_view.h"

/* The heartbeat: the seed's timeslice, its amp tick. */
#define MA_AMP_BEAT_US 10000ul
/* amp_boost_ticks: 100 beats (1 s) on a fast core before yielding it to a candidate of the
 * same priority; a serial phase keeps its top priority that long too. */
#define MA_AMP_BOOST_BEATS 100u
/* Fast VPs and applications followed. Beyond, the rest is left where it is. */
#define MA_AMP_MAX_FAST 256
#define MA_AMP_MAX_APPS 512

enum ma_amp_policy { MA_AMP_PA, MA_AMP_MINTLP };

/* The private block of pa and mintlp: what the beats remember. */
struct ma_amp_priv {
	unsigned beat;                  /* beats so far */
	struct {
		uint64_t id;            /* the thread given this fast VP, 0: none */
		unsigned since;         /* the beat it got it */
	} holder[MA_AMP_MAX_FAST];      /* by fast VP, in VP order */
	struct {
		uint64_t app;           /* an application in a serial phase */
		unsigned since;         /* the beat its phase began */
	} serial[MA_AMP_MAX_APPS];
	unsigned nb_serial;
};

/* decide_start and decide_submit: every bubble of v->root's subtree burst where its parent
 * is (the machine's queue for the root's), then the fast cores given out (start). */
void ma_amp_start(const struct ma_view *v, struct ma_amp_priv *p, struct ma_dlist *out, enum ma_amp_policy pol);
void ma_amp_submit(const struct ma_view *v, struct ma_dlist *out);
/* decide_tick: at a beat (v->root the whole tree), the fast cores given out again. */
void ma_amp_tick(const struct ma_view *v, struct ma_amp_priv *p, struct ma_dlist *out, enum ma_amp_policy pol);

#endif
