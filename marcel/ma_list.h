/* Intrusive circular doubly-linked list (the run queues' per-priority FIFOs). */
#ifndef MA_LIST_H
#define MA_LIST_H

#include <stddef.h>

struct ma_list {
	struct ma_list *next, *prev;
};

#define ma_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

static inline void ma_list_init(struct ma_list *l)
{
	l->next = l->prev = l;
}

static inline int ma_list_empty(const struct ma_list *l)
{
	return l->next == l;
}

static inline void ma_list_add_tail(struct ma_list *l, struct ma_list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static inline void ma_list_del(struct ma_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#endif
