# examples/sumtime: rules (included by examples/Makefile.am)
