# examples/metbench: rules (included by examples/Makefile.am)
# MetBench/MetBenchVar with marcel threads: a master, N workers with given loads, a
# barrier per iteration; prints each worker's compute and wait fractions. The imbalance
# reference for hwprio; tests/check_metbench checks it. No fused multiply-add: the
# checksum of the workers' results must not depend on the target having one.
nobase_pkglibexec_PROGRAMS += metbench/metbench
# report.c prints the fractions and totals; conduction/marcel prints its stripes through it.
nobase_dist_examples_DATA += metbench/metbench.h metbench/metbench.c metbench/options.c metbench/work.c \
	metbench/report.h metbench/report.c
metbench_metbench_SOURCES = metbench/metbench.c metbench/metbench.h metbench/options.c metbench/work.c \
	metbench/report.c metbench/report.h
metbench_metbench_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
