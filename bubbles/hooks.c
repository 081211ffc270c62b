/*
 * The core's hook table (marcel/ma_hooks.h), as bubbles/ fills it: the whole table in one
 * place, so that what the core reaches of this layer can be read at a glance. Installed
 * by the bubbles' start step, before any worker but VP 0's runs, and emptied by its stop
 * step, once every worker has stopped.
 */
#include <string.h>
#include "ma_strategy.h"
#include "ma_hooks.h"

void ma_bubble_hooks_install(void)
{
	ma_hooks = (struct ma_hooks){
		.holder = {
			.add = ma_bubble_holder_add,
			.take_locked = ma_bubble_holder_take_locked,
			.serving = ma_bubble_holder_serving,
		},
		.pick = ma_bubble_picked,
		.unit_back = ma_unit_back,
		.task_new = ma_bubble_task_new,
		.task_start = ma_bubble_task_start,
		.task_end = ma_bubble_task_exit,
		.adopt_free = ma_free_adopt_late,
		.describe = ma_bubble_describe,
		.publish = ma_private_publish_all,
		.vp_hungry = ma_private_vp_hungry,
		.claim_private = ma_private_claim,
		.vp_idle = ma_strategy_vp_idle,
		.yield = ma_strategy_stray,
		.tick = ma_bubble_work,
	};
}

void ma_bubble_hooks_remove(void)
{
	memset(&ma_hooks, 0, sizeof(ma_hooks));
}
