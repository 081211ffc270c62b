/*
 * The seven tables. A strategy's file includes this header and ma_view.h, nothing of the
 * runtime: its table type is bubbles/ma_strategy_ops.h. The registry, which does reach
 * the runtime (selection at marcel_init, Marcel's classes), is ma_registry.h.
 */
#ifndef MA_STRATEGIES_H
#define MA_STRATEGIES_H

#include "ma_strategy_ops.h"

extern const struct ma_strategy ma_strategy_null MA_HIDDEN;
extern const struct ma_strategy ma_strategy_burst MA_HIDDEN;
extern const struct ma_strategy ma_strategy_spread MA_HIDDEN;
extern const struct ma_strategy ma_strategy_cache MA_HIDDEN;
extern const struct ma_strategy ma_strategy_steal MA_HIDDEN;
extern const struct ma_strategy ma_strategy_gang MA_HIDDEN;
extern const struct ma_strategy ma_strategy_memory MA_HIDDEN;

#endif
