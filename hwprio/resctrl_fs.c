/* The resctrl file system as the resctrl backends read and write it (ma_resctrl.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ma_resctrl.h"

/* root/rel's one word, spaces around it dropped: 0 or an errno. */
static int ma_hw_rc_read_word(const char *root, const char *rel, char *buf, size_t size, const char **word,
			      struct ma_hw_why *why)
{
	int e = ma_hw_read(root, rel, buf, size, why);
	if (e)
		return e;
	char *s = buf;
	while (isspace((unsigned char)*s))
		s++;
	char *end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = 0;
	*word = s;
	return 0;
}

static int ma_hw_rc_garbage(const char *root, const char *rel, const char *text, const char *expected,
			    struct ma_hw_why *why)
{
	char q[48];
	return ma_hw_fail(why, EINVAL, "%s/%s holds '%s': expected %s", root, rel, ma_hw_quote(text, q, sizeof(q)),
			  expected);
}

int ma_hw_rc_read_uint(const char *root, const char *rel, unsigned *v, struct ma_hw_why *why)
{
	char buf[64];
	const char *s;
	int e = ma_hw_rc_read_word(root, rel, buf, sizeof(buf), &s, why);
	if (e)
		return e;
	size_t digits = strspn(s, "0123456789");
	errno = 0;
	unsigned long x = digits ? strtoul(s, NULL, 10) : 0;
	if (!digits || s[digits] || errno || x > UINT_MAX)
		return ma_hw_rc_garbage(root, rel, s, "a decimal number", why);
	*v = (unsigned)x;
	return 0;
}

int ma_hw_rc_read_hex(const char *root, const char *rel, unsigned long *v, struct ma_hw_why *why)
{
	char buf[64];
	const char *s;
	int e = ma_hw_rc_read_word(root, rel, buf, sizeof(buf), &s, why);
	if (e)
		return e;
	size_t digits = strspn(s, "0123456789abcdefABCDEF");
	errno = 0;
	unsigned long x = digits ? strtoul(s, NULL, 16) : 0;
	if (!digits || s[digits] || errno)
		return ma_hw_rc_garbage(root, rel, s, "a hexadecimal mask", why);
	*v = x;
	return 0;
}

void ma_hw_rc_last_status(const char *root, char *buf, size_t size)
{
	struct ma_hw_why why;
	if (ma_hw_read(root, "info/last_cmd_status", buf, size, &why)) {
		snprintf(buf, size, "%s", why.s);
		return;
	}
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

int ma_hw_rc_tasks_has(const char *root, const char *rel, pid_t tid)
{
	char path[PATH_MAX];
	struct ma_hw_why why;
	int e = ma_hw_path(path, sizeof(path), root, rel, &why);
	if (e)
		return -e;
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	long v;
	int found = 0;
	while (!found && fscanf(f, "%ld", &v) == 1)
		found = v == (long)tid;
	fclose(f);
	return found;
}

/* One `id=value` after another, separated by ';', in line (after the resource's ':'): the
 * number of domains, or -1 if the line is not of that form. */
static int ma_hw_rc_parse_domains(const char *p, int base, unsigned *ids, unsigned long *vals, unsigned max)
{
	unsigned n = 0;
	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			return n ? (int)n : -1;
		char *end;
		if (!isdigit((unsigned char)*p) || n == max)
			return -1;
		unsigned long id = strtoul(p, &end, 10);
		if (*end != '=' || id > UINT_MAX)
			return -1;
		p = end + 1;
		while (*p == ' ')
			p++;
		if (!isxdigit((unsigned char)*p))
			return -1;
		errno = 0;
		vals[n] = strtoul(p, &end, base);
		if (errno)
			return -1;
		ids[n++] = (unsigned)id;
		p = end;
		while (*p == ' ')
			p++;
		if (*p == ';')
			p++;
		else if (*p)
			return -1;
	}
}

int ma_hw_rc_domains(const char *text, const char *res, int base, unsigned *ids, unsigned long *vals,
		     unsigned max, unsigned *n, const char *schemata, struct ma_hw_why *why)
{
	size_t rlen = strlen(res);
	for (const char *line = text; *line;) {
		size_t len = strcspn(line, "\n");
		const char *name = line;
		while (*name == ' ' || *name == '\t')
			name++;
		if (!strncmp(name, res, rlen) && name[rlen] == ':') {
			char buf[4096], q[48];
			if (len >= sizeof(buf))
				return ma_hw_fail(why, EINVAL, "the %s line of %s is longer than %zu bytes", res, schemata,
						  sizeof(buf) - 1);
			memcpy(buf, line, len);
			buf[len] = 0;
			int k = ma_hw_rc_parse_domains(buf + (name - line) + rlen + 1, base, ids, vals, max);
			if (k < 0)
				return ma_hw_fail(why, EINVAL, "%s holds '%s': expected %s:<id>=<%s>;... (at most %u)",
						  schemata, ma_hw_quote(buf, q, sizeof(q)), res,
						  base == 16 ? "hex mask" : "number", max);
			*n = (unsigned)k;
			return 0;
		}
		line += len + (line[len] == '\n');
	}
	return ENOENT;
}

int ma_hw_rc_num_closids(const char *root, unsigned *n, char *res, size_t res_size, struct ma_hw_why *why)
{
	char path[PATH_MAX];
	int e = ma_hw_path(path, sizeof(path), root, "info", why);
	if (e)
		return e;
	DIR *d = opendir(path);
	if (!d) {
		e = errno;
		return ma_hw_fail(why, e, "cannot read %s: %s", path, strerror(e));
	}
	int found = 0;
	struct dirent *de;
	while (!e && (de = readdir(d))) {
		char rel[NAME_MAX + 32];
		unsigned v;
		struct ma_hw_why w;
		if (de->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "info/%s/num_closids", de->d_name);
		int r = ma_hw_rc_read_uint(root, rel, &v, &w);
		if (r == ENOENT || r == ENOTDIR)
			continue; /* not a resource: last_cmd_status, L3_MON */
		if (r) {
			*why = w;
			e = r;
		} else if (!found || v < *n) {
			found = 1;
			*n = v;
			snprintf(res, res_size, "%s", de->d_name);
		}
	}
	closedir(d);
	if (!e && !found)
		e = ma_hw_fail(why, ENOENT, "no %s/*/num_closids: no resource allocates here", path);
	return e;
}

int ma_hw_rc_is_group(const char *root, const char *name)
{
	static const char *const not_groups[] = { ".", "..", "info", "mon_data", "mon_groups" };
	for (unsigned i = 0; i < sizeof(not_groups) / sizeof(not_groups[0]); i++)
		if (!strcmp(name, not_groups[i]))
			return 0;
	char path[PATH_MAX];
	struct stat st;
	struct ma_hw_why why;
	return !ma_hw_path(path, sizeof(path), root, name, &why) && !stat(path, &st) && S_ISDIR(st.st_mode);
}

int ma_hw_rc_count_groups(const char *root, unsigned *n, struct ma_hw_why *why)
{
	DIR *d = opendir(root);
	if (!d) {
		int e = errno;
		return ma_hw_fail(why, e, "cannot read %s: %s", root, strerror(e));
	}
	*n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		*n += (unsigned)ma_hw_rc_is_group(root, de->d_name);
	closedir(d);
	return 0;
}

int ma_hw_rc_group_of(const char *root, pid_t tid, const char *const *skip, unsigned n_skip, char *name,
		      size_t size, struct ma_hw_why *why)
{
	name[0] = 0;
	int r = ma_hw_rc_tasks_has(root, "tasks", tid);
	if (r < 0)
		return ma_hw_fail(why, -r, "cannot read %s/tasks: %s", root, strerror(-r));
	if (r)
		return 0;
	DIR *d = opendir(root);
	if (!d) {
		int e = errno;
		return ma_hw_fail(why, e, "cannot read %s: %s", root, strerror(e));
	}
	struct dirent *de;
	while (!name[0] && (de = readdir(d))) {
		int skipped = !ma_hw_rc_is_group(root, de->d_name);
		for (unsigned i = 0; i < n_skip && !skipped; i++)
			skipped = !strcmp(de->d_name, skip[i]);
		char rel[NAME_MAX + 8];
		snprintf(rel, sizeof(rel), "%s/tasks", de->d_name);
		/* A group that cannot be read is not where the thread is, as far as we can tell. */
		if (!skipped && strlen(de->d_name) < size && ma_hw_rc_tasks_has(root, rel, tid) == 1)
			snprintf(name, size, "%s", de->d_name);
	}
	closedir(d);
	return 0;
}
