/*
 * What spread.c shares with memory.c: the two strategies are one decision (distrib.c)
 * with or without the memory preference, and one set of figures kept between submits
 * per strategy. `memory` selects which: 0 for spread, 1 for memory. Callers hold no
 * lock; the functions take the bubble locks they need in the documented order.
 */
#ifndef MA_SPREAD_H
#define MA_SPREAD_H

#include "ma_strategies.h"

/* Sets up (init) or drops (exit) the placed-load figures of spread or memory. */
int ma_spread_init_common(int memory) MA_HIDDEN;
void ma_spread_exit_common(int memory) MA_HIDDEN;
/* Distributes the root bubble's members from the machine down (the strategy's start). */
void ma_spread_start_common(int memory) MA_HIDDEN;
/* Decides for closed bubble b below the item its parent is opened on (submit). */
void ma_spread_submit_common(struct ma_bubble *b, int memory) MA_HIDDEN;

#endif
