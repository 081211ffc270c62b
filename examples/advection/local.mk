# examples/advection: rules (included by examples/Makefile.am)
# Semi-Lagrangian advection (irregular reads), run by the four conduction drivers: only
# the kernel differs (advection/kernel.c, linked instead of conduction/kernel.c), so the
# variants' checksums agree as conduction's do; tests/check_advection checks them. No
# fused multiply-add either, for the same reason.
# Both stencils compile the same driver sources with per-program flags. automake prefixes
# such objects with the program's base name unless two programs share it, as here
# (advection/marcel, conduction/marcel), and then with the whole name: each program gets
# objects of its own (conduction/advection_marcel-marcel.o, conduction/conduction_marcel-...).
advection_common = conduction/common.c conduction/conduction.h advection/kernel.c
nobase_pkglibexec_PROGRAMS += advection/simple advection/fixed advection/marcel
nobase_dist_examples_DATA += advection/kernel.c
advection_simple_SOURCES = conduction/simple.c $(advection_common)
advection_simple_CPPFLAGS =
advection_simple_CFLAGS = $(conduction_cflags)
advection_simple_LDADD =
advection_fixed_SOURCES = conduction/fixed.c $(advection_common)
advection_fixed_CPPFLAGS = $(HWLOC_CFLAGS)
advection_fixed_CFLAGS = $(conduction_cflags)
advection_fixed_LDADD = $(HWLOC_LIBS)
# The marcel port reports what hwprio did, as conduction's does.
advection_marcel_SOURCES = conduction/marcel.c conduction/marcel_report.c metbench/report.c metbench/report.h \
	$(advection_common)
advection_marcel_CFLAGS = $(conduction_cflags)
if HAVE_OPENMP
nobase_pkglibexec_PROGRAMS += advection/openmp
advection_openmp_SOURCES = conduction/openmp.c $(advection_common)
advection_openmp_CPPFLAGS =
advection_openmp_CFLAGS = $(conduction_cflags) $(OPENMP_CFLAGS)
advection_openmp_LDADD =
endif
