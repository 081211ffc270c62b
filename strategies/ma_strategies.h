/*
 * What every file of strategies/ shares: the ops table type (bubbles/ma_strategy.h), and
 * the seven tables and the registry that lists them.
 */
#ifndef MA_STRATEGIES_H
#define MA_STRATEGIES_H

#include "ma_strategy.h"

extern const struct ma_strategy ma_strategy_null MA_HIDDEN;
extern const struct ma_strategy ma_strategy_burst MA_HIDDEN;
extern const struct ma_strategy ma_strategy_spread MA_HIDDEN;
extern const struct ma_strategy ma_strategy_cache MA_HIDDEN;
extern const struct ma_strategy ma_strategy_steal MA_HIDDEN;
extern const struct ma_strategy ma_strategy_gang MA_HIDDEN;
extern const struct ma_strategy ma_strategy_memory MA_HIDDEN;

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
