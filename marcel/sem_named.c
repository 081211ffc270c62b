/*
 * Named semaphores (marcel_sem_open/close/unlink). Marcel's were private to the process
 * (it mapped the shm file MAP_PRIVATE), and so are these: a list of names in this
 * process, no shm file at all, which also spares the runtime a file-system dependency.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <marcel.h>

struct ma_named_sem {
	marcel_sem_t sem;          /* first: the handle given out is its address */
	char *name;                /* NULL once unlinked */
	unsigned opens;            /* opens not closed yet */
	struct ma_named_sem *next;
};

/* A marcel mutex, not a pthread one: a marcel thread waiting for it gives its worker
 * away, and kernel threads may open semaphores too. */
static marcel_mutex_t ma_named_lock = MARCEL_MUTEX_INITIALIZER;
static struct ma_named_sem *ma_named;

/* The name as POSIX systems compare it: without its leading slashes. NULL (and *err set)
 * if it is not a valid name. */
static const char *ma_sem_key(const char *name, int *err)
{
	*err = EINVAL;
	if (!name)
		return NULL;
	while (*name == '/')
		name++;
	size_t n = strlen(name);
	if (n == 0 || strchr(name, '/'))
		return NULL;
	if (n > NAME_MAX) {
		*err = ENAMETOOLONG;
		return NULL;
	}
	return name;
}

static struct ma_named_sem *ma_sem_find_name(const char *key)
{
	for (struct ma_named_sem *n = ma_named; n; n = n->next)
		if (n->name && !strcmp(n->name, key))
			return n;
	return NULL;
}

/* Unlinks n from the list and frees it if nothing refers to it any more. */
static void ma_sem_release(struct ma_named_sem *n)
{
	if (n->opens || n->name)
		return;
	for (struct ma_named_sem **p = &ma_named; *p; p = &(*p)->next)
		if (*p == n) {
			*p = n->next;
			break;
		}
	free(n);
}

marcel_sem_t *marcel_sem_open(const char *name, int oflag, ...)
{
	int err;
	const char *key = ma_sem_key(name, &err);
	unsigned value = 0;
	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		(void)va_arg(ap, mode_t); /* nothing outside the process can open it */
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	if (!key || value > MARCEL_SEM_VALUE_MAX) {
		errno = key ? EINVAL : err;
		return MARCEL_SEM_FAILED;
	}
	marcel_mutex_lock(&ma_named_lock);
	struct ma_named_sem *n = ma_sem_find_name(key);
	err = 0;
	if (n && (oflag & O_CREAT) && (oflag & O_EXCL))
		err = EEXIST;
	else if (!n && !(oflag & O_CREAT))
		err = ENOENT;
	else if (!n) {
		n = calloc(1, sizeof(*n));
		if (n)
			n->name = strdup(key);
		if (!n || !n->name) {
			free(n);
			n = NULL;
			err = ENOMEM;
		} else {
			marcel_sem_init(&n->sem, (int)value);
			n->next = ma_named;
			ma_named = n;
		}
	}
	if (!err)
		n->opens++;
	marcel_mutex_unlock(&ma_named_lock);
	if (err) {
		errno = err;
		return MARCEL_SEM_FAILED;
	}
	return &n->sem;
}

int marcel_sem_close(marcel_sem_t *s)
{
	marcel_mutex_lock(&ma_named_lock);
	struct ma_named_sem *n = ma_named;
	while (n && &n->sem != s)
		n = n->next;
	if (!s || !n || !n->opens) {
		marcel_mutex_unlock(&ma_named_lock);
		errno = EINVAL;
		return -1;
	}
	n->opens--;
	ma_sem_release(n);
	marcel_mutex_unlock(&ma_named_lock);
	return 0;
}

int marcel_sem_unlink(const char *name)
{
	int err;
	const char *key = ma_sem_key(name, &err);
	if (!key) {
		errno = err;
		return -1;
	}
	marcel_mutex_lock(&ma_named_lock);
	struct ma_named_sem *n = ma_sem_find_name(key);
	if (n) {
		free(n->name);
		n->name = NULL;
		ma_sem_release(n);
	}
	marcel_mutex_unlock(&ma_named_lock);
	if (!n) {
		errno = ENOENT;
		return -1;
	}
	return 0;
}
