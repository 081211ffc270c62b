# tests: the mpi suite (included by tests/Makefile.am)
# check_mpi runs examples/mpi-conduction and conduction/simple under mpirun and compares
# their checksums; it also runs itself under mpirun as an MPI program (tests/mpi-helper.c,
# linked in) to test libmarcel-mpi inside one rank. One binary, so no helper program
# needs rules of its own. MPIRUN is configure's path of mpirun (empty: the suite skips).
if HAVE_CHECK
if HAVE_MPI
check_PROGRAMS += check_mpi  # TESTS is $(check_PROGRAMS)
check_mpi_SOURCES = check_mpi.c mpi-helper.c ma_test.h ma_idle_probe.h
check_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(MPI_CFLAGS) -DMA_EXAMPLES_DIR=\"$(abs_top_builddir)/examples\" \
	-DMA_MPIRUN=\"$(MPIRUN)\" -DMA_CHECK_MPI=\"$(abs_builddir)/check_mpi$(EXEEXT)\"
check_mpi_LDADD = $(top_builddir)/marcel/libmarcel-mpi.la $(LDADD) $(MPI_LIBS)
endif
endif
