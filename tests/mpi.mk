# tests: the mpi suite (included by tests/Makefile.am)
