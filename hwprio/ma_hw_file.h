/*
 * Small files under a root the backends were given (struct ma_hw_env: /sys, /sys/fs/resctrl,
 * or a test's copy of their trees): read whole, written in one write(), quoted in messages.
 * Failures return an errno and, where a why is given, fill it naming the file.
 */
#ifndef MA_HW_FILE_H
#define MA_HW_FILE_H

#include <stddef.h>
#include "ma_hwprio.h"

/* root/rel into buf: 0, or ENAMETOOLONG with why filled. */
int ma_hw_path(char *buf, size_t size, const char *root, const char *rel, struct ma_hw_why *why);

/* The text of root/rel (a small file: it must fit in size, the final newline dropped):
 * 0 or an errno (EFBIG if it does not fit). */
int ma_hw_read(const char *root, const char *rel, char *buf, size_t size, struct ma_hw_why *why);

/* Writes s to root/rel in one write(), opened with O_WRONLY | flags (O_TRUNC or
 * O_APPEND): 0 or the errno of the open or the write (EIO for a short write: the kernel
 * takes a command whole or refuses it). */
int ma_hw_write(const char *root, const char *rel, const char *s, int flags);

/* A file's text as a message can show it: one line, printable, cut short. Returns out. */
const char *ma_hw_quote(const char *s, char *out, size_t size);

#endif
