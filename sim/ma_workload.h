/*
 * What the workload generators share: the spec's parsing (`NAME:KEY=VALUE:...`) and its
 * errors. workload.c holds the iterative codes (MetBench, stencils) and the list of
 * workloads; workload-apps.c the codes with more structure (BT-MZ, spawn trees, mixes of
 * applications); workload-siesta.c the 002 seed's SIESTA; replay.c the replay of a trace.
 */
#ifndef MA_WORKLOAD_H
#define MA_WORKLOAD_H

#include <stddef.h>
#include "ma_sim.h"

/* Writes a one-line reason into err: EINVAL. */
int sim_werr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The next "key" of the spec, in place, its value in *val (NULL: none); NULL at the end. */
char *sim_next_kv(char **cursor, char **val);
/* val as a number in [lo, hi] into *out: 0, or EINVAL naming key. */
int sim_num(const char *key, const char *val, double lo, double hi, double *out, char *err, size_t errlen);
/* loads=L,L,...: n non-negative numbers times unit into out[]: 0, or EINVAL naming `what`. */
int sim_loads_list(const char *what, const char *list, unsigned n, double unit, double *out, char *err, size_t errlen);
/* pin=VP,VP,...: n VP numbers below nb_vps into pin[]: 0, or EINVAL naming `what`. */
int sim_pin_list(const char *what, const char *list, unsigned n, unsigned nb_vps, int *pin, char *err, size_t errlen);

/* workload-apps.c */
int sim_btmz(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen);
int sim_sumtime(struct sim_workload *w, char *args, char *err, size_t errlen);
int sim_mix(struct sim_workload *w, char *args, char *err, size_t errlen);
/* workload-siesta.c */
int sim_siesta(struct sim_workload *w, char *args, unsigned nb_vps, char *err, size_t errlen);

#endif
