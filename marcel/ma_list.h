/* Intrusive circular doubly-linked list (run queues' per-priority FIFOs, bubble members,
 * caches, wait queues). */
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

/* Walks list head's entries, declaring pos (a `type *`, in scope in the loop only) to point
 * to each in turn; `member` is the field of type that links them. The list must not change
 * during the walk but by the _safe form's deletion of the current entry; a walk that
 * stops early breaks out of the loop. */
#define ma_list_for_each_entry(type, pos, head, member)                                    \
	for (type *pos = ma_container_of((head)->next, type, member); &pos->member != (head); \
	     pos = ma_container_of(pos->member.next, type, member))

/* The same, where the body may delete (or move elsewhere) the current entry: the next one
 * is read before the body runs. */
#define ma_list_for_each_entry_safe(type, pos, head, member)                               \
	for (type *pos = ma_container_of((head)->next, type, member),                       \
		  *pos##_next = ma_container_of(pos->member.next, type, member);                \
	     &pos->member != (head);                                                          \
	     pos = pos##_next, pos##_next = ma_container_of(pos##_next->member.next, type, member))

#endif
