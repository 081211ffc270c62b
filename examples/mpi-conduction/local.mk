# examples/mpi-conduction: rules (included by examples/Makefile.am)
# The conduction stencil split across MPI ranks, marcel threads inside each rank, halo
# rows exchanged with non-blocking MPI and waited with libmarcel-mpi (marcel/mpi.h).
# Built only when configure found MPI. Same kernel and no fused multiply-add, as
# conduction's programs, so its checksum is theirs (tests/check_mpi compares them).
if HAVE_MPI
nobase_pkglibexec_PROGRAMS += mpi-conduction/mpi-conduction
nobase_dist_examples_DATA += mpi-conduction/mpi-conduction.c mpi-conduction/slab.c mpi-conduction/slab.h
mpi_conduction_mpi_conduction_SOURCES = mpi-conduction/mpi-conduction.c mpi-conduction/slab.c \
	mpi-conduction/slab.h $(conduction_common)
mpi_conduction_mpi_conduction_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS)
mpi_conduction_mpi_conduction_CFLAGS = $(conduction_cflags)
mpi_conduction_mpi_conduction_LDADD = $(top_builddir)/marcel/libmarcel-mpi.la $(LDADD) $(MPI_LIBS)
endif
