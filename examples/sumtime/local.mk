# examples/sumtime: rules (included by examples/Makefile.am)
# sumtime, the classic nested-parallelism demo: recursive sum, two threads and a bubble
# per level (see sumtime.c). nested.h holds what it shares with examples/nested-sort and
# bench/bench_nested (the fork-join step, the command line).
nobase_pkglibexec_PROGRAMS += sumtime/sumtime
nobase_dist_examples_DATA += sumtime/sumtime.c sumtime/sumtime.h sumtime/nested.h
sumtime_sumtime_SOURCES = sumtime/sumtime.c sumtime/sumtime.h sumtime/nested.h
