# examples/nested-sort: rules (included by examples/Makefile.am)
# nested-sort: parallel quicksort / merge sort with a bubble per recursion level (see
# nested-sort.c). sort-kernel.h (the sequential parts, C and C++) and nested-sort.h (the
# recursion) are shared with bench/bench_nested; ../sumtime/nested.h with sumtime.
nobase_pkglibexec_PROGRAMS += nested-sort/nested-sort
nobase_dist_examples_DATA += nested-sort/nested-sort.c nested-sort/nested-sort.h nested-sort/sort-kernel.h
nested_sort_nested_sort_SOURCES = nested-sort/nested-sort.c nested-sort/nested-sort.h \
	nested-sort/sort-kernel.h sumtime/nested.h
