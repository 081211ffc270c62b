/* Small files under a root that tests may move (sysfs, resctrl): the backends' reads
 * and writes (ma_hw_file.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "ma_hw_file.h"

int ma_hw_path(char *buf, size_t size, const char *root, const char *rel, struct ma_hw_why *why)
{
	int n = snprintf(buf, size, "%s%s%s", root, *rel ? "/" : "", rel);
	if (n < 0 || (size_t)n >= size)
		return ma_hw_fail(why, ENAMETOOLONG, "%s/%s: path too long", root, rel);
	return 0;
}

/* A file's contents as a message can show them: on one line, cut short. */
const char *ma_hw_quote(const char *s, char *out, size_t size)
{
	size_t i = 0;
	for (; s[i] && i + 4 < size && i < 40; i++)
		out[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	if (s[i] && i + 4 <= size) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = 0;
	return out;
}

int ma_hw_read(const char *root, const char *rel, char *buf, size_t size, struct ma_hw_why *why)
{
	char path[PATH_MAX];
	int e = ma_hw_path(path, sizeof(path), root, rel, why);
	if (e)
		return e;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return ma_hw_fail(why, e, "cannot read %s: %s", path, strerror(e));
	}
	size_t len = 0;
	ssize_t r = 0;
	/* One byte more than fits, to tell a file that is too long. */
	char extra;
	while (len < size - 1 && (r = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)r;
	if (len == size - 1 && read(fd, &extra, 1) == 1) {
		close(fd);
		return ma_hw_fail(why, EFBIG, "%s holds more than the %zu bytes expected", path, size - 1);
	}
	e = len < size - 1 && r < 0 ? errno : 0;
	close(fd);
	if (e)
		return ma_hw_fail(why, e, "cannot read %s: %s", path, strerror(e));
	buf[len] = 0;
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = 0;
	return 0;
}

int ma_hw_write(const char *root, const char *rel, const char *s, int flags)
{
	char path[PATH_MAX];
	struct ma_hw_why why;
	int e = ma_hw_path(path, sizeof(path), root, rel, &why);
	if (e)
		return e;
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags);
	if (fd < 0)
		return errno;
	size_t len = strlen(s);
	ssize_t n = write(fd, s, len);
	/* The kernel takes a command whole or refuses it: a short count is a refusal too. */
	e = n < 0 ? errno : (size_t)n != len ? EIO : 0;
	close(fd);
	return e;
}
