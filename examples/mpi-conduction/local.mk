# examples/mpi-conduction: rules (included by examples/Makefile.am)
