# tests: the advection suite (included by tests/Makefile.am)
# Runs the examples/advection programs (the OpenMP one only where it is built) and checks
# them against a sequential reference, whose arithmetic must match the kernel's to the
# bit: no fused multiply-add here either.
if HAVE_CHECK
check_PROGRAMS += check_advection  # TESTS is $(check_PROGRAMS)
endif
if HAVE_OPENMP
advection_openmp = 1
else
advection_openmp = 0
endif
check_advection_SOURCES = check_advection.c ma_test.h ma_example_test.h
check_advection_CPPFLAGS = $(AM_CPPFLAGS) -DMA_EXAMPLES_DIR=\"$(abs_top_builddir)/examples\" \
	-DMA_HAVE_OPENMP=$(advection_openmp)
check_advection_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
check_advection_LDADD = $(LDADD) -lm
