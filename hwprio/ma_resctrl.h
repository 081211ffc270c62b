/*
 * The resctrl file system as the resctrl backends use it (hwprio/resctrl.c): small files
 * read and parsed, one write() per command, and the lists of tasks of the groups. Every
 * path is relative to the resctrl root the backend was given (struct ma_hw_env), so that
 * the same code runs on /sys/fs/resctrl and on a copy of its tree for tests.
 * Failures return an errno and fill a why that names the file and, for bad contents, what
 * the file holds and what was expected.
 */
#ifndef MA_RESCTRL_H
#define MA_RESCTRL_H

#include <stddef.h>
#include <sys/types.h>
#include "ma_hwprio.h"
#include "ma_hw_file.h"

/* Cache and memory domains a schemata line may name: more than any machine has today. */
#define MA_HW_RC_MAX_DOMAINS 256

/* root/rel holding one decimal number (an info file): 0, or an errno (EINVAL for other
 * contents, quoted in why). */
int ma_hw_rc_read_uint(const char *root, const char *rel, unsigned *v, struct ma_hw_why *why);
/* ...one hexadecimal mask without 0x (cbm_mask): 0 or an errno. */
int ma_hw_rc_read_hex(const char *root, const char *rel, unsigned long *v, struct ma_hw_why *why);

/* What the kernel said about the last command (info/last_cmd_status), on one line, or
 * that it could not be read. Never fails. */
void ma_hw_rc_last_status(const char *root, char *buf, size_t size);

/* Does the tasks file root/rel list tid? 1, 0, or minus an errno (it cannot be read). */
int ma_hw_rc_tasks_has(const char *root, const char *rel, pid_t tid);

/* The domains of resource res in a schemata text (lines `res:id=value;id=value`, the
 * name right-aligned and values padded as the kernel shows them): their ids and values
 * (values read in base 16 for a cache mask, 10 for a bandwidth). 0; ENOENT when no line
 * is res's; EINVAL when res's line is not of that form (why quotes it). `schemata` names
 * the file in why. */
int ma_hw_rc_domains(const char *text, const char *res, int base, unsigned *ids, unsigned long *vals,
		     unsigned max, unsigned *n, const char *schemata, struct ma_hw_why *why);

/* The smallest info/<resource>/num_closids (the kernel's limit on groups, the default
 * group included) and the resource it comes from: 0 or an errno. */
int ma_hw_rc_num_closids(const char *root, unsigned *n, char *res, size_t res_size, struct ma_hw_why *why);

/* Is name a control group of root (a directory other than info and the monitoring
 * ones)? */
int ma_hw_rc_is_group(const char *root, const char *name);

/* How many control groups root has besides the default one: 0 or an errno. */
int ma_hw_rc_count_groups(const char *root, unsigned *n, struct ma_hw_why *why);

/* The control group whose tasks lists tid, skipping the ones named in skip (n_skip of
 * them): 0 with name set ("" for the default group), or an errno when the default
 * group's tasks cannot be read. A tid listed nowhere is taken as in the default group. */
int ma_hw_rc_group_of(const char *root, pid_t tid, const char *const *skip, unsigned n_skip, char *name,
		      size_t size, struct ma_hw_why *why);

#endif
