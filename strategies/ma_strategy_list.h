/*
 * The strategies, one line each, in the order `MARCEL_BUBBLE_SCHEDULER=list` prints them:
 * MA_STRATEGY(x) stands for the table ma_strategy_x (strategies/x.c, or the file that
 * defines it) and its Marcel class marcel_bubble_x_sched_class. A new strategy adds its
 * line here; ma_strategies.h declares the tables and registry.c lists them and makes
 * their classes from this list. Included with MA_STRATEGY defined by the includer.
 */
MA_STRATEGY(null)
MA_STRATEGY(burst)
MA_STRATEGY(spread)
MA_STRATEGY(cache)
MA_STRATEGY(steal)
MA_STRATEGY(gang)
MA_STRATEGY(memory)
MA_STRATEGY(contention)
MA_STRATEGY(pa)
MA_STRATEGY(mintlp)
