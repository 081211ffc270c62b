# tests: the metbench suite (included by tests/Makefile.am)
# Runs examples/metbench and recomputes its checksum sequentially: the same arithmetic to
# the bit, so no fused multiply-add here either.
if HAVE_CHECK
check_PROGRAMS += check_metbench  # TESTS is $(check_PROGRAMS)
endif
check_metbench_SOURCES = check_metbench.c ma_test.h ma_example_test.h
check_metbench_CPPFLAGS = $(AM_CPPFLAGS) -DMA_EXAMPLES_DIR=\"$(abs_top_builddir)/examples\"
check_metbench_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
