# examples/advection: rules (included by examples/Makefile.am)
