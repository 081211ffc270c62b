/* smt-quiet's parts the tests drive (hwprio/smt_quiet.c). */
#ifndef MA_SMT_QUIET_H
#define MA_SMT_QUIET_H

#include <stdint.h>
#include "arch/ma_quiet_arch.h"

/* How long a worker at level goes quiet after running ran_ns: 0 at level 0, a third at
 * -1 (in the quiet wait), as long at -2 (parked); at most a millisecond. */
uint64_t ma_hw_sq_quiet_for(uint64_t ran_ns, int level);
/* Replaces the backend's clock, park (level -2) and wait (level -1, ma_quiet_arch_wait's
 * contract): a test's own time line. */
void ma_hw_sq_set_clock(void *priv, uint64_t (*clock)(void), void (*park)(uint64_t ns),
			uint64_t (*wait)(uint64_t ns, enum ma_quiet_mech *used));
/* The time VP vp spent quiet (waiting or parked) so far. */
uint64_t ma_hw_sq_quiet_ns(const void *priv, unsigned vp);

#endif
