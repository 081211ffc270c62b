# libmarcel-mpi (included by marcel/Makefile.am)
