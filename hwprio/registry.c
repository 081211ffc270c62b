/* The list of backends, their lookup by name, and the parse of MARCEL_HWPRIO. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ma_hwprio.h"

#define MA_HW_BACKEND(x) extern const struct ma_hw_backend ma_hw_##x;
#include "ma_hwprio_list.h"
#undef MA_HW_BACKEND

const struct ma_hw_backend *const ma_hw_backends[] = {
#define MA_HW_BACKEND(x) &ma_hw_##x,
#include "ma_hwprio_list.h"
#undef MA_HW_BACKEND
};
const unsigned ma_hw_nb_backends = sizeof(ma_hw_backends) / sizeof(ma_hw_backends[0]);

int ma_hw_fail(struct ma_hw_why *why, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why->s, sizeof(why->s), fmt, ap);
	va_end(ap);
	return e;
}

const struct ma_hw_backend *ma_hw_backend_find(const char *name)
{
	for (unsigned i = 0; i < ma_hw_nb_backends; i++)
		if (!strcmp(name, ma_hw_backends[i]->name))
			return ma_hw_backends[i];
	return NULL;
}

const char *ma_hw_presence_name(enum ma_hw_presence p)
{
	switch (p) {
	case MA_HW_PRESENT:
		return "present";
	case MA_HW_ABSENT:
		return "absent";
	case MA_HW_NEEDS_PRIVILEGE:
		return "needs privilege";
	}
	return "?";
}

const char *ma_hw_accepted(void)
{
	static char buf[512];
	if (!buf[0]) {
		size_t o = (size_t)snprintf(buf, sizeof(buf), "auto, none, or a comma-separated list of:");
		for (unsigned i = 0; i < ma_hw_nb_backends && o < sizeof(buf); i++)
			if (ma_hw_backends[i] != &ma_hw_none)
				o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %s", ma_hw_backends[i]->name);
	}
	return buf;
}

int ma_hw_choice_parse(const char *value, struct ma_hw_choice *c, struct ma_hw_why *why)
{
	memset(c, 0, sizeof(*c));
	if (!strcmp(value, "auto")) {
		c->automatic = 1;
		return 0;
	}
	const char *p = value;
	for (;;) {
		size_t len = strcspn(p, ",");
		char name[64];
		if (!len || len >= sizeof(name)) {
			ma_hw_fail(why, EINVAL, "'%.*s' is not a backend name", (int)(len < 40 ? len : 40), p);
			return -1;
		}
		memcpy(name, p, len);
		name[len] = 0;
		const struct ma_hw_backend *b = ma_hw_backend_find(name);
		if (!b) {
			ma_hw_fail(why, EINVAL, "'%s' is not a backend", name);
			return -1;
		}
		if ((b == &ma_hw_none && (c->n || p[len])) || (c->n && c->named[0] == &ma_hw_none)) {
			ma_hw_fail(why, EINVAL, "'none' changes nothing and goes alone");
			return -1;
		}
		for (unsigned i = 0; i < c->n; i++)
			if (c->named[i] == b) {
				ma_hw_fail(why, EINVAL, "'%s' is named twice", name);
				return -1;
			}
		if (c->n == sizeof(c->named) / sizeof(c->named[0])) {
			ma_hw_fail(why, EINVAL, "more than %u backends", c->n);
			return -1;
		}
		c->named[c->n++] = b;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* The option checks marcel_init makes before any step starts (marcel/startup.c): NULL, or
 * what is accepted followed by what is wrong with value. */
const char *ma_hwprio_check(const char *value)
{
	static char buf[1024];
	struct ma_hw_choice c;
	struct ma_hw_why why;
	if (!ma_hw_choice_parse(value, &c, &why))
		return NULL;
	snprintf(buf, sizeof(buf), "%s (%s)", ma_hw_accepted(), why.s);
	return buf;
}

const char *ma_hwprio_policy_check(const char *value)
{
	enum ma_hw_policy_kind k;
	return ma_hw_policy_find(value, &k) ? "dlrb (the default), uniform or adaptive" : NULL;
}
