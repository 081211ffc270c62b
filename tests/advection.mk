# tests: the advection suite (included by tests/Makefile.am)
