# bench: nested parallelism benchmarks (included by bench/Makefile.am)
# bench_nested: the recursions of examples/sumtime and examples/nested-sort (their
# headers, hence -I examples) against OpenMP tasks, in this program when the compiler has
# OpenMP, and TBB task_group, in the helper bench_nested_tbb (C++, built when oneTBB is
# there), which bench_nested runs from its own directory. bench/run runs bench_nested only.
BENCH_PROGS += bench_nested
bench_nested_SOURCES = bench_nested.c common.h
bench_nested_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples
if HAVE_OPENMP
bench_nested_CFLAGS = $(AM_CFLAGS) $(OPENMP_CFLAGS)
endif

if HAVE_TBB
BENCH_PROGS += bench_nested_tbb
endif
bench_nested_tbb_SOURCES = bench_nested_tbb.cc
bench_nested_tbb_CPPFLAGS = -I$(top_srcdir)/examples $(TBB_CFLAGS)
# MA_CFLAGS without its C-only warnings.
bench_nested_tbb_CXXFLAGS = -std=c++17 -pthread $(filter-out -Wstrict-prototypes -Wmissing-prototypes,$(MA_CFLAGS))
bench_nested_tbb_LDADD = $(TBB_LIBS)
