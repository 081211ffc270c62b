# tests: the nested suite (included by tests/Makefile.am)
