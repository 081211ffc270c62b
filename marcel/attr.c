/* Thread attributes. Every setter validates and leaves the object unchanged on error. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "ma_sched.h"

int ma_copy_name(char *buf, size_t n, const char *name)
{
	size_t len = strnlen(name, MARCEL_MAXNAMESIZE);
	if (n <= len)
		return ERANGE;
	memcpy(buf, name, len + 1);
	return 0;
}

/* Programs copy attributes by value, a fork-join recursion once per level (the examples'
 * nested_fork2). Up to 256 bytes, compilers copy with a few vector moves; above, GCC uses
 * `rep movsq`, whose start-up cost is a visible share of a level (doc/design.md, "Spawn
 * cost", for the measurement). */
_Static_assert(sizeof(marcel_attr_t) <= 256, "marcel_attr_t grew past 256 bytes: copies become rep movs");

static int ma_attr_ok(const marcel_attr_t *attr)
{
	return attr && attr->magic == MA_ATTR_MAGIC;
}

int marcel_attr_init(marcel_attr_t *attr)
{
	if (!attr)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->magic = MA_ATTR_MAGIC;
	attr->detachstate = MARCEL_CREATE_JOINABLE;
	attr->prio = MA_DEF_PRIO;
	attr->schedpolicy = MARCEL_SCHED_DEFAULT;
	attr->preemptible = 1;
	attr->vpset = marcel_vpset_full();
	strcpy(attr->name, "user");
	return 0;
}

int marcel_attr_destroy(marcel_attr_t *attr)
{
	if (!ma_attr_ok(attr))
		return EINVAL;
	attr->magic = 0;
	return 0;
}

int marcel_attr_setstacksize(marcel_attr_t *attr, size_t size)
{
	if (!ma_attr_ok(attr) || size < MARCEL_STACK_MIN || size > MARCEL_STACK_MAX)
		return EINVAL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	attr->stacksize = (size + page - 1) & ~(page - 1);
	return 0;
}

int marcel_attr_getstacksize(const marcel_attr_t *attr, size_t *size)
{
	if (!ma_attr_ok(attr) || !size)
		return EINVAL;
	*size = attr->stacksize;
	return 0;
}

int marcel_attr_setdetachstate(marcel_attr_t *attr, int detached)
{
	if (!ma_attr_ok(attr) || (detached != MARCEL_CREATE_JOINABLE && detached != MARCEL_CREATE_DETACHED))
		return EINVAL;
	attr->detachstate = detached;
	return 0;
}

int marcel_attr_getdetachstate(const marcel_attr_t *attr, int *detached)
{
	if (!ma_attr_ok(attr) || !detached)
		return EINVAL;
	*detached = attr->detachstate;
	return 0;
}

int marcel_attr_setname(marcel_attr_t *attr, const char *name)
{
	if (!ma_attr_ok(attr) || !name)
		return EINVAL;
	snprintf(attr->name, sizeof(attr->name), "%s", name);
	return 0;
}

int marcel_attr_getname(const marcel_attr_t *attr, char *buf, size_t n)
{
	if (!ma_attr_ok(attr) || !buf)
		return EINVAL;
	return ma_copy_name(buf, n, attr->name);
}

int marcel_attr_setprio(marcel_attr_t *attr, int prio)
{
	if (!ma_attr_ok(attr) || prio < 0 || prio >= MA_MAX_PRIO)
		return EINVAL;
	attr->prio = prio;
	return 0;
}

int marcel_attr_getprio(const marcel_attr_t *attr, int *prio)
{
	if (!ma_attr_ok(attr) || !prio)
		return EINVAL;
	*prio = attr->prio;
	return 0;
}

int marcel_attr_setschedpolicy(marcel_attr_t *attr, int policy)
{
	if (!ma_attr_ok(attr) || policy < MARCEL_SCHED_SHARED || policy > MARCEL_SCHED_BALANCE)
		return EINVAL;
	attr->schedpolicy = policy;
	return 0;
}

int marcel_attr_getschedpolicy(const marcel_attr_t *attr, int *policy)
{
	if (!ma_attr_ok(attr) || !policy)
		return EINVAL;
	*policy = attr->schedpolicy;
	return 0;
}

int marcel_attr_setvpset(marcel_attr_t *attr, marcel_vpset_t set)
{
	if (!ma_attr_ok(attr) || marcel_vpset_iszero(&set))
		return EINVAL;
	attr->vpset = set;
	attr->vpset_first = marcel_vpset_first(&set);
	attr->vpset_last = marcel_vpset_last(&set);
	attr->has_vpset = 1;
	return 0;
}

int marcel_attr_getvpset(const marcel_attr_t *attr, marcel_vpset_t *set)
{
	if (!ma_attr_ok(attr) || !set)
		return EINVAL;
	*set = attr->vpset;
	return 0;
}

int marcel_attr_setpreemptible(marcel_attr_t *attr, int preemptible)
{
	if (!ma_attr_ok(attr))
		return EINVAL;
	attr->preemptible = preemptible != 0;
	return 0;
}

int marcel_attr_getpreemptible(const marcel_attr_t *attr, int *preemptible)
{
	if (!ma_attr_ok(attr) || !preemptible)
		return EINVAL;
	*preemptible = attr->preemptible;
	return 0;
}

int marcel_attr_setseed(marcel_attr_t *attr, int seed)
{
	if (!ma_attr_ok(attr))
		return EINVAL;
	attr->seed = seed != 0;
	return 0;
}

int marcel_attr_getseed(const marcel_attr_t *attr, int *seed)
{
	if (!ma_attr_ok(attr) || !seed)
		return EINVAL;
	*seed = attr->seed;
	return 0;
}
