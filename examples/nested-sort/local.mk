# examples/nested-sort: rules (included by examples/Makefile.am)
