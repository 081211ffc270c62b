/*
 * The strategy registry (registry.c): the list of the strategies, lookup by name, and
 * selection at marcel_init. It reaches the runtime (bubbles/ma_strategy.h), which the
 * strategies themselves never do.
 */
#ifndef MA_REGISTRY_H
#define MA_REGISTRY_H

#include "ma_strategies.h"
#include "ma_strategy.h"

/* Looks a strategy up by name or alias; NULL if unknown. */
const struct ma_strategy *ma_strategy_lookup(const char *name) MA_HIDDEN;
/* At marcel_init: selects ma_rt.opt.bubble_sched (or the default). "list" prints the
 * names and exits; an unknown name prints the valid ones and returns EINVAL. */
int ma_strategies_start(void) MA_HIDDEN;
void ma_strategies_stop(void) MA_HIDDEN;

/* For the option parser (before any layer starts): whether `name` names a strategy, and
 * the accepted names in words. */
int ma_strategy_name_ok(const char *name) MA_HIDDEN;
const char *ma_strategy_names(void) MA_HIDDEN;

#endif
