# libmarcel-mpi (included by marcel/Makefile.am): MPI waits that poll and let the worker
# run other threads (include/marcel/mpi.h). Built only when configure found MPI. A client
# of libmarcel's public API: no private header of the core here.
if HAVE_MPI
lib_LTLIBRARIES += libmarcel-mpi.la
marcelinclude_HEADERS += include/marcel/mpi.h
libmarcel_mpi_la_SOURCES = mpi/init.c mpi/wait.c
libmarcel_mpi_la_CPPFLAGS = -I$(srcdir)/include $(MPI_CFLAGS)
libmarcel_mpi_la_CFLAGS = $(MA_CFLAGS) -pthread
libmarcel_mpi_la_LIBADD = libmarcel.la $(MPI_LIBS)
libmarcel_mpi_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^marcel_mpi_'
endif
