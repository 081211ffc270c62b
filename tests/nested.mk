# tests: the nested suite (included by tests/Makefile.am)
# check_nested runs examples/sumtime and examples/nested-sort (by path, through popen) and
# sorts the same keys itself with the examples' generator (sort-kernel.h, hence
# -I examples) to know the checksum to expect.
if HAVE_CHECK
check_PROGRAMS += check_nested
endif
check_nested_SOURCES = check_nested.c ma_test.h ma_example_test.h
check_nested_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples -DMA_EXAMPLES_DIR=\"$(abs_top_builddir)/examples\"
