/*
 * resctrl-cat and resctrl-mba on fake resctrl trees: what the probe says of missing,
 * garbled, refused and complete trees; the groups start makes and the schemata it writes;
 * the threads apply moves and reset puts back; every failure's message and what it leaves.
 *
 * A plain directory does not act as resctrl: mkdir there makes an empty directory, rmdir
 * refuses a non-empty one, and a write is stored whatever it says. So this program plays
 * the kernel's part: its mkdir, rmdir and write replace the C library's for the backends
 * (libhwprio is linked in statically), and for paths in the fake root only they do what
 * resctrl does (Documentation/filesystems/resctrl.rst): mkdir makes a group with its
 * files, or fails with ENOSPC and "Out of CLOSIDs"; rmdir removes a group and its files;
 * a write to tasks takes one thread number, to schemata lines ending with '\n', and
 * either may be refused with an errno and a last_cmd_status text, as the test asks.
 * Unlike the kernel, the fake's rmdir does not move a group's threads to the default
 * group, and a tasks file keeps every number written to it: what a test reads there is
 * what the backend wrote. Everything else goes to the C library.
 */
#define _GNU_SOURCE
#include <check.h>
#include "ma_check_run.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ma_hwprio.h"

/* ---- the fake kernel ---- */

static char base[200]; /* every tree of the run is made in it (the parent removes it) */

static struct {
	char root[256];           /* the fake resctrl root; "" while building or with none */
	unsigned mkdirs;          /* groups made */
	unsigned fail_mkdir;      /* the n-th group mkdir (1-based) fails with ENOSPC, 0: none */
	const char *tasks_dir;    /* a group whose name ends so gets a directory as tasks */
	const char *refuse;       /* writes to this file (relative to root) are refused... */
	int refuse_errno;         /* ...with this errno... */
	const char *refuse_status; /* ...and this last_cmd_status */
	pid_t gone;               /* writing this thread fails with ESRCH: it ended */
	unsigned task_writes;     /* accepted writes to tasks files */
} fake;

static void fake_status(const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/info/last_cmd_status", fake.root);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
	}
}

/* path relative to the fake root, or NULL if not in it. */
static const char *fake_rel(const char *path)
{
	size_t n = strlen(fake.root);
	return fake.root[0] && !strncmp(path, fake.root, n) && path[n] == '/' ? path + n + 1 : NULL;
}

/* A group of the fake root: a directory right under it. */
static int fake_group(const char *path)
{
	const char *rel = fake_rel(path);
	return rel && *rel && !strchr(rel, '/') && strcmp(rel, "info");
}

static int fake_ends(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = suffix ? strlen(suffix) : 0;
	return suffix && a >= b && !strcmp(s + a - b, suffix);
}

static void fake_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "fake kernel: cannot make %s", path);
	fputs(text, f);
	fclose(f);
}

int mkdir(const char *path, mode_t mode)
{
	if (!fake_group(path))
		return mkdirat(AT_FDCWD, path, mode);
	if (fake.fail_mkdir && ++fake.mkdirs == fake.fail_mkdir) {
		fake_status("Out of CLOSIDs");
		errno = ENOSPC;
		return -1;
	}
	if (mkdirat(AT_FDCWD, path, mode))
		return -1;
	/* A new group starts with the default allocations (the root's schemata). */
	char root_schemata[PATH_MAX], text[4096] = "";
	snprintf(root_schemata, sizeof(root_schemata), "%s/schemata", fake.root);
	FILE *f = fopen(root_schemata, "r");
	if (f) {
		size_t n = fread(text, 1, sizeof(text) - 1, f);
		text[n] = 0;
		fclose(f);
	}
	fake_file(path, "schemata", text);
	fake_file(path, "cpus", "0\n");
	fake_file(path, "mode", "shareable\n");
	if (fake_ends(path, fake.tasks_dir)) {
		char tasks[PATH_MAX];
		snprintf(tasks, sizeof(tasks), "%s/tasks", path);
		mkdirat(AT_FDCWD, tasks, 0755);
	} else
		fake_file(path, "tasks", "");
	fake_status("ok");
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? unlinkat(AT_FDCWD, path, AT_REMOVEDIR) : unlink(path);
}

static void remove_tree(const char *path)
{
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int rmdir(const char *path)
{
	if (!fake_group(path))
		return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
	struct stat st;
	if (stat(path, &st))
		return -1;
	remove_tree(path);
	return 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t len = fake.root[0] ? readlink(link, path, sizeof(path) - 1) : -1;
	const char *rel = NULL;
	if (len > 0) {
		path[len] = 0;
		rel = fake_rel(path);
	}
	if (rel) {
		const char *name = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
		char text[256] = "";
		memcpy(text, buf, n < sizeof(text) - 1 ? n : sizeof(text) - 1);
		if (fake.refuse && !strcmp(rel, fake.refuse)) {
			fake_status(fake.refuse_status);
			errno = fake.refuse_errno;
			return -1;
		}
		if (!strcmp(name, "tasks")) {
			/* Older kernels take one number per write: insist on it. */
			char *end;
			long tid = strtol(text, &end, 10);
			if (end == text || (*end && strcmp(end, "\n"))) {
				fake_status("Task list parsing error");
				errno = EINVAL;
				return -1;
			}
			if (tid == fake.gone) {
				char s[64];
				snprintf(s, sizeof(s), "No task %ld", tid);
				fake_status(s);
				errno = ESRCH;
				return -1;
			}
			fake.task_writes++;
		}
		/* rdtgroup_schemata_write refuses a buffer not ending with a newline, and says
		 * nothing in last_cmd_status. */
		if (!strcmp(name, "schemata") && (!n || ((const char *)buf)[n - 1] != '\n')) {
			errno = EINVAL;
			return -1;
		}
		fake_status("ok");
	}
	return syscall(SYS_write, fd, buf, n);
}

/* ---- trees ---- */

enum { NO_L3 = 1, NO_MB = 2, CDP = 4 };

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	for (char *p = path + strlen(fake.root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdirat(AT_FDCWD, path, 0755);
		*p = '/';
	}
	FILE *f = fopen(path, "w");
	ck_assert_msg(f != NULL, "cannot make %s", path);
	fputs(text, f);
	fclose(f);
}

/* The text of root/rel, or NULL if it cannot be read. */
static const char *get(const char *rel)
{
	static char buf[4096];
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static int exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", fake.root, rel);
	return !stat(path, &st);
}

/* An empty directory as the root. */
static struct ma_hw_env empty_tree(void)
{
	snprintf(fake.root, sizeof(fake.root), "%s/tree.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(fake.root));
	chmod(fake.root, 0755);
	return (struct ma_hw_env){ .sysfs = "/nonexistent/sys", .resctrl = fake.root };
}

/* A machine with two L3 caches of 20 ways and two memory domains, as the kernel shows it
 * (names right-aligned, values padded to the widest). */
static struct ma_hw_env tree(unsigned flags)
{
	struct ma_hw_env env = empty_tree();
	char schemata[256] = "";
	put("info/last_cmd_status", "ok\n");
	put("info/L3_MON/num_rmids", "144\n");
	if (!(flags & (NO_L3 | CDP))) {
		put("info/L3/cbm_mask", "fffff\n");
		put("info/L3/min_cbm_bits", "1\n");
		put("info/L3/num_closids", "16\n");
		put("info/L3/shareable_bits", "0\n");
		strcat(schemata, "L3:0=fffff;1=fffff\n");
	}
	if (flags & CDP) {
		put("info/L3CODE/cbm_mask", "fffff\n");
		put("info/L3CODE/num_closids", "8\n");
		put("info/L3DATA/cbm_mask", "fffff\n");
		put("info/L3DATA/num_closids", "8\n");
		strcat(schemata, "L3CODE:0=fffff;1=fffff\nL3DATA:0=fffff;1=fffff\n");
	}
	if (!(flags & NO_MB)) {
		put("info/MB/min_bandwidth", "10\n");
		put("info/MB/bandwidth_gran", "10\n");
		put("info/MB/num_closids", "8\n");
		put("info/MB/delay_linear", "1\n");
		strcat(schemata, flags & CDP ? "    MB:0=  100;1=  100\n" : "MB:0=  100;1=  100\n");
	}
	put("schemata", schemata);
	put("tasks", "");
	put("cpus", "3\n");
	return env;
}

static const struct ma_hw_backend *backend(const char *name)
{
	const struct ma_hw_backend *b = ma_hw_backend_find(name);
	ck_assert_msg(b != NULL, "backend %s is not registered", name);
	return b;
}

static const struct ma_hw_backend *cat(void)
{
	return backend("resctrl-cat");
}

static const struct ma_hw_backend *mba(void)
{
	return backend("resctrl-mba");
}

static enum ma_hw_presence probe(const struct ma_hw_backend *b, const struct ma_hw_env *env, struct ma_hw_why *why)
{
	why->s[0] = 0;
	return b->probe(env, why);
}

static void has(const char *text, const char *part)
{
	ck_assert_msg(strstr(text, part) != NULL, "'%s' is not in '%s'", part, text);
}

static char *group(const char *kind)
{
	static char name[2][64];
	char *s = name[!strcmp(kind, "mid")];
	snprintf(s, 64, "marcel-hwprio-%d-%s", (int)getpid(), kind);
	return s;
}

static const char *group_file(const char *kind, const char *file)
{
	static char rel[2][128];
	char *s = rel[!strcmp(kind, "mid")];
	snprintf(s, 128, "%s/%s", group(kind), file);
	return s;
}

/* Directories the backends made in the root. */
static unsigned groups_left(void)
{
	DIR *d = opendir(fake.root);
	ck_assert_ptr_nonnull(d);
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, "marcel-hwprio-", 14);
	closedir(d);
	return n;
}

static void *started(const struct ma_hw_backend *b, const struct ma_hw_env *env)
{
	void *priv = calloc(1, b->priv_size);
	struct ma_hw_why why = { "" };
	int e = b->start(priv, env, &why);
	ck_assert_msg(e == 0, "%s: start returned %d: %s", b->name, e, why.s);
	return priv;
}

static void finished(const struct ma_hw_backend *b, void *priv)
{
	struct ma_hw_why why = { "" };
	int e = b->reset(priv, &why);
	ck_assert_msg(e == 0, "%s: reset returned %d: %s", b->name, e, why.s);
	b->stop(priv);
	free(priv);
	ck_assert_uint_eq(groups_left(), 0);
}

static int apply(const struct ma_hw_backend *b, void *priv, pid_t tid, int level, struct ma_hw_why *why)
{
	struct ma_hw_target t = { .vp = 0, .tid = tid, .cpu = -1, .core = -1, .cache = -1, .node = -1, .kind = -1 };
	why->s[0] = 0;
	return b->apply(priv, &t, level, why);
}

static void applied(const struct ma_hw_backend *b, void *priv, pid_t tid, int level)
{
	struct ma_hw_why why;
	int e = apply(b, priv, tid, level, &why);
	ck_assert_msg(e == 0, "apply(%d, %d) returned %d: %s", (int)tid, level, e, why.s);
}

static void done(void)
{
	remove_tree(fake.root);
	memset(&fake, 0, sizeof(fake));
}

/* ---- probe ---- */

START_TEST(probe_absent_without_a_mount)
{
	struct ma_hw_env env = empty_tree();
	const struct ma_hw_backend *bs[] = { cat(), mba() };
	for (unsigned i = 0; i < 2; i++) {
		struct ma_hw_why why;
		ck_assert_int_eq(probe(bs[i], &env, &why), MA_HW_ABSENT);
		has(why.s, "/info is missing");
		has(why.s, "mount -t resctrl resctrl");
		has(why.s, "RDT");
		ck_assert_ptr_null(strchr(why.s, '\n'));
	}
	/* A root that does not exist says the same. */
	char missing[PATH_MAX];
	snprintf(missing, sizeof(missing), "%s/nonexistent", fake.root);
	struct ma_hw_env gone = { .sysfs = "/sys", .resctrl = missing };
	struct ma_hw_why why;
	ck_assert_int_eq(probe(cat(), &gone, &why), MA_HW_ABSENT);
	has(why.s, "nonexistent/info is missing");
	done();
}
END_TEST

START_TEST(probe_one_resource_without_the_other)
{
	struct ma_hw_why why;
	struct ma_hw_env env = tree(NO_L3);
	ck_assert_int_eq(probe(cat(), &env, &why), MA_HW_ABSENT);
	has(why.s, "info/L3 is missing");
	has(why.s, "cat_l3");
	ck_assert_int_eq(probe(mba(), &env, &why), MA_HW_PRESENT);
	ck_assert_str_eq(why.s, "");
	done();

	env = tree(NO_MB);
	ck_assert_int_eq(probe(mba(), &env, &why), MA_HW_ABSENT);
	has(why.s, "info/MB is missing");
	has(why.s, "flag mba");
	ck_assert_int_eq(probe(cat(), &env, &why), MA_HW_PRESENT);
	done();

	/* Mounted with -o cdp: L3CODE and L3DATA instead of L3. */
	env = tree(CDP);
	ck_assert_int_eq(probe(cat(), &env, &why), MA_HW_ABSENT);
	has(why.s, "info/L3 is missing");
	has(why.s, "-o cdp");
	ck_assert_int_eq(probe(mba(), &env, &why), MA_HW_PRESENT);
	done();
}
END_TEST

START_TEST(probe_present_on_a_full_tree)
{
	struct ma_hw_env env = tree(0);
	struct ma_hw_why why;
	ck_assert_int_eq(probe(cat(), &env, &why), MA_HW_PRESENT);
	ck_assert_int_eq(probe(mba(), &env, &why), MA_HW_PRESENT);
	/* Probing reads: nothing made, nothing written. */
	ck_assert_uint_eq(groups_left(), 0);
	ck_assert_str_eq(get("tasks"), "");
	done();
}
END_TEST

/* A file with garbage: the probe says absent, naming the file and what it holds. */
static const struct {
	const char *backend, *file, *content, *says[2];
} garbage[] = {
	{ "resctrl-cat", "info/L3/cbm_mask", "xyz\n", { "info/L3/cbm_mask holds 'xyz'", "hexadecimal" } },
	{ "resctrl-cat", "info/L3/cbm_mask", "f0f\n", { "info/L3/cbm_mask holds 'f0f'", "from bit 0" } },
	{ "resctrl-cat", "info/L3/cbm_mask", "\x01\x02zz", { "info/L3/cbm_mask holds '??zz'", "hexadecimal" } },
	{ "resctrl-cat", "info/L3/cbm_mask", "", { "info/L3/cbm_mask holds ''", "hexadecimal" } },
	{ "resctrl-cat", "info/L3/num_closids", "many\n", { "info/L3/num_closids holds 'many'", "decimal" } },
	{ "resctrl-cat", "info/MB/num_closids", "-3\n", { "info/MB/num_closids holds '-3'", "decimal" } },
	{ "resctrl-cat", "info/L3/min_cbm_bits", "30\n", { "info/L3/min_cbm_bits holds '30'", "20 bits" } },
	{ "resctrl-cat", "schemata", "L3:0=zz;1=fffff\n", { "schemata holds 'L3:0=zz;1=fffff'", "L3:<id>=" } },
	{ "resctrl-cat", "schemata", "MB:0=100\n", { "schemata has no L3 line", "" } },
	{ "resctrl-mba", "info/MB/bandwidth_gran", "0\n", { "info/MB/bandwidth_gran holds '0'", "1 to 100" } },
	{ "resctrl-mba", "info/MB/min_bandwidth", "ten\n", { "info/MB/min_bandwidth holds 'ten'", "decimal" } },
	{ "resctrl-mba", "info/MB/num_closids", "8 9\n", { "info/MB/num_closids holds '8 9'", "decimal" } },
	{ "resctrl-mba", "schemata", "L3:0=fffff\nMB:0=2048;1=2048\n", { "MB 0=2048, not a percentage", "mba_MBps" } },
};

START_TEST(probe_names_the_garbled_file)
{
	struct ma_hw_env env = tree(0);
	put(garbage[_i].file, garbage[_i].content);
	struct ma_hw_why why;
	ck_assert_int_eq(probe(backend(garbage[_i].backend), &env, &why), MA_HW_ABSENT);
	has(why.s, fake.root);
	has(why.s, garbage[_i].says[0]);
	has(why.s, garbage[_i].says[1]);
	ck_assert_ptr_null(strchr(why.s, '\n'));
	/* Start reads the same and refuses the same way, making nothing. */
	void *priv = calloc(1, cat()->priv_size);
	ck_assert_int_ne(backend(garbage[_i].backend)->start(priv, &env, &why), 0);
	has(why.s, garbage[_i].says[0]);
	ck_assert_uint_eq(groups_left(), 0);
	free(priv);
	done();
}
END_TEST

/* As root, a tree whose files are root's 0644: a process of another user may read it
 * but neither make groups nor move threads. */
START_TEST(probe_needs_privilege_for_another_user)
{
	if (geteuid() != 0) {
		printf("probe_needs_privilege_for_another_user: skipped: it needs root to drop to uid 65534\n");
		return;
	}
	struct ma_hw_env env = tree(0);
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		struct {
			enum ma_hw_presence p[2];
			char why[2][256];
		} r = { { 0, 0 }, { "", "" } };
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		struct ma_hw_why why;
		r.p[0] = probe(cat(), &env, &why);
		memcpy(r.why[0], why.s, sizeof(r.why[0]));
		r.p[1] = probe(mba(), &env, &why);
		memcpy(r.why[1], why.s, sizeof(r.why[1]));
		_exit(syscall(SYS_write, fds[1], &r, sizeof(r)) == (long)sizeof(r) ? 0 : 3);
	}
	close(fds[1]);
	struct {
		enum ma_hw_presence p[2];
		char why[2][256];
	} r;
	ck_assert_int_eq(read(fds[0], &r, sizeof(r)), (ssize_t)sizeof(r));
	int status;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_int_eq(status, 0);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_msg(r.p[i] == MA_HW_NEEDS_PRIVILEGE, "probe %u: %s: %s", i, ma_hw_presence_name(r.p[i]),
			      r.why[i]);
		has(r.why[i], "is not writable by this process (uid 65534)");
		has(r.why[i], "needs root");
	}
	done();
}
END_TEST

/* ---- start ---- */

static const struct {
	const char *cbm_mask, *min_cbm_bits, *mid, *low;
} cat_lines[] = {
	{ "fffff", "1", "L3:0=3ff;1=3ff\n", "L3:0=1f;1=1f\n" }, /* 20 ways: 10 and 5 */
	{ "fffff", "8", "L3:0=3ff;1=3ff\n", "L3:0=ff;1=ff\n" }, /* at least min_cbm_bits */
	{ "7ff", "2", "L3:0=1f;1=1f\n", "L3:0=3;1=3\n" },       /* 11 ways: 5 and 2 */
	{ "3", "2", "L3:0=3;1=3\n", "L3:0=3;1=3\n" },           /* no fewer than the minimum */
};

START_TEST(start_cat_writes_both_groups)
{
	struct ma_hw_env env = tree(0);
	put("info/L3/cbm_mask", cat_lines[_i].cbm_mask);
	put("info/L3/min_cbm_bits", cat_lines[_i].min_cbm_bits);
	void *priv = started(cat(), &env);
	ck_assert_uint_eq(groups_left(), 2);
	ck_assert_str_eq(get(group_file("mid", "schemata")), cat_lines[_i].mid);
	ck_assert_str_eq(get(group_file("low", "schemata")), cat_lines[_i].low);
	ck_assert_str_eq(get("info/last_cmd_status"), "ok\n");
	finished(cat(), priv);
	done();
}
END_TEST

static const struct {
	const char *min, *gran, *mid, *low;
} mba_lines[] = {
	{ "10", "10", "MB:0=50;1=50\n", "MB:0=30;1=30\n" }, /* half and a quarter, rounded up to the step */
	{ "10", "1", "MB:0=50;1=50\n", "MB:0=25;1=25\n" },
	{ "40", "10", "MB:0=50;1=50\n", "MB:0=40;1=40\n" }, /* at least the minimum */
	{ "60", "10", "MB:0=60;1=60\n", "MB:0=60;1=60\n" },
};

START_TEST(start_mba_writes_both_groups)
{
	struct ma_hw_env env = tree(0);
	put("info/MB/min_bandwidth", mba_lines[_i].min);
	put("info/MB/bandwidth_gran", mba_lines[_i].gran);
	void *priv = started(mba(), &env);
	ck_assert_uint_eq(groups_left(), 2);
	ck_assert_str_eq(get(group_file("mid", "schemata")), mba_lines[_i].mid);
	ck_assert_str_eq(get(group_file("low", "schemata")), mba_lines[_i].low);
	finished(mba(), priv);
	done();
}
END_TEST

static void start_refused(const struct ma_hw_backend *b, const struct ma_hw_env *env, int err, const char *says1,
			  const char *says2)
{
	void *priv = calloc(1, b->priv_size);
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(b->start(priv, env, &why), err);
	has(why.s, says1);
	has(why.s, says2);
	ck_assert_ptr_null(strchr(why.s, '\n'));
	ck_assert_uint_eq(groups_left(), 0);
	free(priv);
}

START_TEST(start_needs_two_free_closids)
{
	struct ma_hw_env env = tree(0);
	put("info/L3/num_closids", "2\n");
	start_refused(cat(), &env, ENOSPC, "no free CLOSID", "info/L3/num_closids is 2");
	/* The smallest over the resources counts. */
	put("info/L3/num_closids", "16\n");
	put("info/MB/num_closids", "2\n");
	start_refused(cat(), &env, ENOSPC, "no free CLOSID", "info/MB/num_closids is 2");
	/* Groups already there take theirs. */
	put("info/MB/num_closids", "4\n");
	put("a/tasks", "");
	put("b/tasks", "");
	start_refused(mba(), &env, ENOSPC, "no free CLOSID", "2 other groups");
	done();

	/* The kernel runs out between our count and our mkdir: the first group goes too. */
	env = tree(0);
	fake.fail_mkdir = 2;
	start_refused(cat(), &env, ENOSPC, "no free CLOSID", "Out of CLOSIDs");
	ck_assert_uint_eq(fake.mkdirs, 2);
	done();
}
END_TEST

START_TEST(start_refused_schemata_undoes_its_groups)
{
	struct ma_hw_env env = tree(0);
	char rel[128];
	snprintf(rel, sizeof(rel), "%s", group_file("low", "schemata"));
	fake.refuse = rel;
	fake.refuse_errno = EINVAL;
	fake.refuse_status = "Mask out of range";
	start_refused(cat(), &env, EINVAL, "Mask out of range", "-low/schemata refused its L3 line");
	done();
}
END_TEST

/* resctrl-cat and resctrl-mba would move the same threads: the second one refuses, and
 * leaves the first one's groups alone. */
START_TEST(start_cat_and_mba_exclude_each_other)
{
	struct ma_hw_env env = tree(0);
	void *priv = started(cat(), &env);
	void *other = calloc(1, mba()->priv_size);
	struct ma_hw_why why = { "" };
	ck_assert_int_eq(mba()->start(other, &env, &why), EEXIST);
	has(why.s, "exclude each other");
	ck_assert_uint_eq(groups_left(), 2);
	ck_assert_str_eq(get(group_file("low", "schemata")), "L3:0=1f;1=1f\n");
	free(other);
	finished(cat(), priv);
	done();
}
END_TEST

/* ---- apply and reset ---- */

START_TEST(apply_moves_and_reset_puts_back)
{
	struct ma_hw_env env = tree(0);
	/* Thread 1004 starts in a group of its own, made before the program. */
	put("other/tasks", "1004\n");
	put("other/schemata", "L3:0=ff;1=ff\n");
	put("tasks", "1\n");
	const struct ma_hw_backend *b = _i ? mba() : cat();
	void *priv = started(b, &env);
	applied(b, priv, 1001, -1);
	applied(b, priv, 1002, -2);
	ck_assert_str_eq(get(group_file("mid", "tasks")), "1001\n");
	ck_assert_str_eq(get(group_file("low", "tasks")), "1002\n");
	/* Where it is already: nothing written. */
	unsigned writes = fake.task_writes;
	applied(b, priv, 1001, -1);
	ck_assert_uint_eq(fake.task_writes, writes);
	/* Never moved: level 0 leaves it alone. */
	applied(b, priv, 1009, 0);
	ck_assert_uint_eq(fake.task_writes, writes);
	/* Up, then back to 0: to the default group it was in. */
	applied(b, priv, 1003, -1);
	applied(b, priv, 1003, 0);
	ck_assert_str_eq(get("tasks"), "1\n1003\n");
	/* 0 sends a thread back to its own group, not to the default one. */
	applied(b, priv, 1004, -2);
	applied(b, priv, 1004, 0);
	ck_assert_str_eq(get("other/tasks"), "1004\n1004\n");
	applied(b, priv, 1004, -1);
	ck_assert_str_eq(get(group_file("mid", "tasks")), "1001\n1003\n1004\n");
	ck_assert_str_eq(get(group_file("low", "tasks")), "1002\n1004\n");

	struct ma_hw_why why = { "" };
	ck_assert_int_eq(b->reset(priv, &why), 0);
	/* Each moved thread back once, where it came from; 1003 was back already. */
	ck_assert_str_eq(get("tasks"), "1\n1003\n1001\n1002\n");
	ck_assert_str_eq(get("other/tasks"), "1004\n1004\n1004\n");
	ck_assert_uint_eq(groups_left(), 0);
	ck_assert(exists("other/tasks"));
	/* Reset twice is harmless; after it, applies are refused. */
	ck_assert_int_eq(b->reset(priv, &why), 0);
	ck_assert_int_eq(apply(b, priv, 1001, -1, &why), ECANCELED);
	has(why.s, "was reset");
	b->stop(priv);
	free(priv);
	done();
}
END_TEST

START_TEST(apply_level_out_of_reach)
{
	struct ma_hw_env env = tree(0);
	void *priv = started(cat(), &env);
	struct ma_hw_why why;
	ck_assert_int_eq(apply(cat(), priv, 1001, 1, &why), EINVAL);
	has(why.s, "level 1");
	has(why.s, "-2..0");
	ck_assert_int_eq(apply(cat(), priv, 1001, -3, &why), EINVAL);
	has(why.s, "level -3");
	ck_assert_uint_eq(fake.task_writes, 0);
	finished(cat(), priv);
	ck_assert_str_eq(get("tasks"), "");
	done();
}
END_TEST

START_TEST(apply_failures_leave_things_as_they_were)
{
	struct ma_hw_env env = tree(0);
	fake.tasks_dir = "-low"; /* the low group's tasks cannot be written */
	void *priv = started(cat(), &env);
	struct ma_hw_why why;
	applied(cat(), priv, 1001, -1);
	ck_assert_int_eq(apply(cat(), priv, 1002, -2, &why), EISDIR);
	has(why.s, "cannot move thread 1002 into");
	has(why.s, "-low/tasks");
	/* 1001 stays recorded in mid: reset puts it back, and only it. */
	ck_assert_int_eq(apply(cat(), priv, 1001, -2, &why), EISDIR);

	/* A thread that ended. */
	fake.gone = 1005;
	ck_assert_int_eq(apply(cat(), priv, 1005, -1, &why), ESRCH);
	ck_assert_str_eq(why.s, "thread 1005 is gone");
	/* The kernel refuses with a reason: the reason is in the message. */
	char rel[128];
	snprintf(rel, sizeof(rel), "%s", group_file("mid", "tasks"));
	fake.refuse = rel;
	fake.refuse_errno = EINVAL;
	fake.refuse_status = "Can't move task to different control group";
	ck_assert_int_eq(apply(cat(), priv, 1006, -1, &why), EINVAL);
	has(why.s, "Can't move task to different control group");
	/* Another user's thread. */
	fake.refuse_errno = EPERM;
	fake.refuse_status = "No permission to move task 1007";
	ck_assert_int_eq(apply(cat(), priv, 1007, -1, &why), EPERM);
	has(why.s, "refused");
	has(why.s, "root");
	fake.refuse = NULL;
	ck_assert_str_eq(get(group_file("mid", "tasks")), "1001\n");

	finished(cat(), priv);
	ck_assert_str_eq(get("tasks"), "1001\n");
	done();
}
END_TEST

/* Threads that ended before reset: nothing to put back, and no error. */
START_TEST(reset_ignores_threads_that_ended)
{
	struct ma_hw_env env = tree(0);
	void *priv = started(cat(), &env);
	applied(cat(), priv, 1001, -1);
	applied(cat(), priv, 1002, -2);
	fake.gone = 1001;
	finished(cat(), priv);
	ck_assert_str_eq(get("tasks"), "1002\n");
	done();

	/* One that ended and whose number a thread of another program took: its group no
	 * longer lists it, and reset leaves that number alone. */
	env = tree(0);
	priv = started(cat(), &env);
	applied(cat(), priv, 1001, -1);
	applied(cat(), priv, 1002, -2);
	put(group_file("mid", "tasks"), "");
	finished(cat(), priv);
	ck_assert_str_eq(get("tasks"), "1002\n");
	done();
}
END_TEST

/* stop without reset (a failing start-up elsewhere) still removes the groups: they would
 * keep two CLOSIDs of the whole machine. */
START_TEST(stop_removes_what_reset_did_not)
{
	struct ma_hw_env env = tree(0);
	void *priv = started(mba(), &env);
	applied(mba(), priv, 1001, -2);
	mba()->stop(priv);
	free(priv);
	ck_assert_uint_eq(groups_left(), 0);
	ck_assert_str_eq(get("tasks"), "1001\n");
	done();
}
END_TEST

/* ---- this machine ---- */

START_TEST(probe_this_machine)
{
	struct ma_hw_env env = { .sysfs = "/sys", .resctrl = "/sys/fs/resctrl" };
	const struct ma_hw_backend *bs[] = { cat(), mba() };
	struct stat st;
	int mounted = !stat("/sys/fs/resctrl/info", &st);
	for (unsigned i = 0; i < 2; i++) {
		struct ma_hw_why why;
		enum ma_hw_presence p = probe(bs[i], &env, &why);
		printf("%s on this machine: %s%s%s\n", bs[i]->name, ma_hw_presence_name(p), why.s[0] ? ": " : "", why.s);
		ck_assert(p == MA_HW_ABSENT || p == MA_HW_PRESENT || p == MA_HW_NEEDS_PRIVILEGE);
		if (!mounted) {
			ck_assert_int_eq(p, MA_HW_ABSENT);
			has(why.s, "mount -t resctrl resctrl /sys/fs/resctrl");
		}
	}
}
END_TEST

static void base_make(void)
{
	char tmpl[] = "/tmp/check_hwprio_resctrl.XXXXXX", real[PATH_MAX];
	/* The real path: the fake kernel knows its files by what /proc/self/fd shows. */
	if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof(base)) {
		perror("check_hwprio_resctrl: cannot make a directory in /tmp");
		exit(1);
	}
	strcpy(base, real);
	chmod(base, 0755);
}

static void base_remove(void)
{
	remove_tree(base);
}

static Suite *suite(void)
{
	Suite *s = suite_create("hwprio resctrl");
	TCase *tc = tcase_create("resctrl");
	tcase_add_unchecked_fixture(tc, base_make, base_remove);
	tcase_add_test(tc, probe_absent_without_a_mount);
	tcase_add_test(tc, probe_one_resource_without_the_other);
	tcase_add_test(tc, probe_present_on_a_full_tree);
	tcase_add_loop_test(tc, probe_names_the_garbled_file, 0, sizeof(garbage) / sizeof(garbage[0]));
	tcase_add_test(tc, probe_needs_privilege_for_another_user);
	tcase_add_loop_test(tc, start_cat_writes_both_groups, 0, sizeof(cat_lines) / sizeof(cat_lines[0]));
	tcase_add_loop_test(tc, start_mba_writes_both_groups, 0, sizeof(mba_lines) / sizeof(mba_lines[0]));
	tcase_add_test(tc, start_needs_two_free_closids);
	tcase_add_test(tc, start_refused_schemata_undoes_its_groups);
	tcase_add_test(tc, start_cat_and_mba_exclude_each_other);
	tcase_add_loop_test(tc, apply_moves_and_reset_puts_back, 0, 2);
	tcase_add_test(tc, apply_level_out_of_reach);
	tcase_add_test(tc, apply_failures_leave_things_as_they_were);
	tcase_add_test(tc, reset_ignores_threads_that_ended);
	tcase_add_test(tc, stop_removes_what_reset_did_not);
	tcase_add_test(tc, probe_this_machine);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ma_check_run(suite());
}
