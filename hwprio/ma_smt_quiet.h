/* smt-quiet's parts the tests drive (hwprio/smt_quiet.c). */
#ifndef MA_SMT_QUIET_H
#define MA_SMT_QUIET_H

#include <stdint.h>

/* How long a worker at level parks after running ran_ns: 0 at level 0, a third at -1,
 * as long at -2; at most a millisecond. */
uint64_t ma_hw_sq_quiet_for(uint64_t ran_ns, int level);
/* Replaces the backend's clock and park (a test's own time line). */
void ma_hw_sq_set_clock(void *priv, uint64_t (*clock)(void), void (*park)(uint64_t ns));
/* The time VP vp spent parked so far. */
uint64_t ma_hw_sq_quiet_ns(const void *priv, unsigned vp);

#endif
