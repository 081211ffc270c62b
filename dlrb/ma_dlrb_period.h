/*
 * Iterations found in a stream of MPI calls (period.c): pure, no MPI in it, so that it is
 * unit-tested on streams made by hand (tests/check_dlrb_period.c).
 *
 * Each call becomes a symbol (its kind and its peer relative to the caller). An iterative
 * program repeats one sequence of symbols; the detector finds the shortest period that
 * the last MA_PERIOD_CONFIRM periods repeat exactly, then follows it at one comparison per
 * call: each time the stream comes round to the period's anchor, an iteration ended. A
 * symbol that breaks the period is a phase change: the period is dropped and looked for
 * again. While looking, each call costs a comparison per candidate period (at most
 * MA_PERIOD_MAX).
 *
 * The anchor: just after the period's last synchronising call (a collective or a wait,
 * where ranks meet), so that an iteration is "compute, then meet", as MetBench's; a
 * period without one is anchored where it was found.
 */
#ifndef MA_DLRB_PERIOD_H
#define MA_DLRB_PERIOD_H

#include <stdint.h>

#define MA_PERIOD_MAX 256      /* the longest period looked for, in calls */
#define MA_PERIOD_CONFIRM 3    /* periods that must repeat before one is believed */
#define MA_PERIOD_MIN_RUN 8    /* and calls, at least: a period of 1 or 2 is not believed
				  from 3 or 5 calls */
#define MA_PERIOD_HIST (MA_PERIOD_MAX * (MA_PERIOD_CONFIRM + 1))

/* A symbol: the call's kind in the top byte (bit 7: a synchronising call), its peer's
 * offset from the caller below. */
#define MA_SYM_SYNC 0x80u
static inline uint32_t ma_period_symbol(unsigned kind, int sync, unsigned peer_offset)
{
	return ((uint32_t)(kind & 0x7fu) | (sync ? MA_SYM_SYNC : 0u)) << 24 | (peer_offset & 0xffffffu);
}

struct ma_period {
	uint32_t hist[MA_PERIOD_HIST]; /* the last symbols, a ring */
	unsigned long n;               /* symbols seen */
	unsigned run[MA_PERIOD_MAX + 1]; /* per candidate q: symbols in a row equal to the one q before */
	unsigned period;               /* 0: none known */
	unsigned pos;                  /* position in the period, 0 at the anchor */
	unsigned long found;           /* periods found (1 + phase changes) */
	unsigned long iterations;      /* anchors passed */
};

enum ma_period_event {
	MA_PERIOD_NONE,      /* nothing to report */
	MA_PERIOD_FOUND,     /* a period was found; the call just seen ends an iteration if
				p->pos is 0 */
	MA_PERIOD_ITERATION, /* the call just seen ends an iteration */
	MA_PERIOD_LOST,      /* the call just seen broke the period (a phase change) */
};

void ma_period_init(struct ma_period *p);
/* One call's symbol; what it means for iterations. */
enum ma_period_event ma_period_push(struct ma_period *p, uint32_t sym);

#endif
