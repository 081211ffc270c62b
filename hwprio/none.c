/* The backend that changes nothing: hwprio measures and decides, and the decisions show
 * in the trace and the snapshots, but no resource moves. Always present. */
#include "ma_hwprio.h"

static enum ma_hw_presence ma_hw_none_probe(const struct ma_hw_env *env, struct ma_hw_why *why)
{
	(void)env;
	(void)why;
	return MA_HW_PRESENT;
}

static int ma_hw_none_apply(void *priv, const struct ma_hw_target *t, int level, struct ma_hw_why *why)
{
	(void)priv;
	(void)t;
	(void)level;
	(void)why;
	return 0;
}

const struct ma_hw_backend ma_hw_none = {
	.name = "none",
	.desc = "decide and trace levels, change no resource",
	.lo = MA_HW_LEVEL_MIN,
	.hi = MA_HW_LEVEL_MAX,
	.probe = ma_hw_none_probe,
	.apply = ma_hw_none_apply,
};
