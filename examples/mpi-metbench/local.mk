# examples/mpi-metbench: rules (included by examples/Makefile.am)
# MetBench as an MPI program: ranks compute their loads, then meet (barrier, neighbour
# exchange or allreduce); or, with --no-iterations, no structure at all. Plain MPI, no
# marcel: the unmodified program that libmarcel-dlrb is preloaded into. Built only when
# configure found MPI. No fused multiply-add: its values must not depend on the target
# having one. tests/mpi-metbench.sh runs it.
if HAVE_MPI
nobase_pkglibexec_PROGRAMS += mpi-metbench/metbench
nobase_dist_examples_DATA += mpi-metbench/mpi-metbench.h mpi-metbench/metbench.c mpi-metbench/options.c \
	mpi-metbench/patterns.c mpi-metbench/work.c
mpi_metbench_metbench_SOURCES = mpi-metbench/metbench.c mpi-metbench/mpi-metbench.h mpi-metbench/options.c \
	mpi-metbench/patterns.c mpi-metbench/work.c
mpi_metbench_metbench_CPPFLAGS = $(MPI_CFLAGS)
mpi_metbench_metbench_CFLAGS = $(AM_CFLAGS) -ffp-contract=off
mpi_metbench_metbench_LDADD = $(MPI_LIBS) -lm
endif
