# tests: the metbench suite (included by tests/Makefile.am)
