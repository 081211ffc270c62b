/* SMT siblings as sysfs lists them (hwprio/smt.c). */
#ifndef MA_SMT_H
#define MA_SMT_H

#include "ma_hwprio.h"

/* Two SMT siblings cpu[0] and cpu[1], the first two CPUs of the first
 * <sysfs>/devices/system/cpu/cpuN/topology/thread_siblings_list that names two (whether
 * this process may run there is the caller's to find): 0, or an errno with why filled
 * (ENODEV: no core has two; ENOENT: no such file at all; EINVAL: a list that is not one). */
int ma_hw_smt_siblings(const char *sysfs, int cpu[2], struct ma_hw_why *why);

#endif
