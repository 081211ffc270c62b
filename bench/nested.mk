# bench: nested parallelism benchmarks (included by bench/Makefile.am)
