# examples/metbench: rules (included by examples/Makefile.am)
