/*
 * Marcel's names for thread attributes that marcel keeps only on the attribute
 * (marcel/attr.h): the application id. The initial bubble is a bubble call
 * (bubbles/compat.c).
 */
#include <errno.h>
#include "ma_sched.h"

static int ma_attr_valid(const marcel_attr_t *attr)
{
	return attr && attr->magic == MA_ATTR_MAGIC;
}

int marcel_attr_setid(marcel_attr_t *attr, int id)
{
	if (!ma_attr_valid(attr))
		return EINVAL;
	attr->id = id;
	return 0;
}

int marcel_attr_getid(const marcel_attr_t *attr, int *id)
{
	if (!ma_attr_valid(attr) || !id)
		return EINVAL;
	*id = attr->id;
	return 0;
}
