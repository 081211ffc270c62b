/*
 * The strategies' tables, one per line of ma_strategy_list.h. A strategy's file includes
 * this header and ma_view.h, nothing of the runtime: its table type is
 * bubbles/ma_strategy_ops.h. The registry, which does reach the runtime (selection at
 * marcel_init, Marcel's classes), is ma_registry.h.
 */
#ifndef MA_STRATEGIES_H
#define MA_STRATEGIES_H

#include "ma_strategy_ops.h"

#define MA_STRATEGY(x) extern const struct ma_strategy ma_strategy_##x MA_HIDDEN;
#include "ma_strategy_list.h"
#undef MA_STRATEGY

#endif
