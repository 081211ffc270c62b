/* An ordinary OpenMP program (plain `cc -fopenmp`), run by preload-run.sh under
 * LD_PRELOAD=libmarcel-preload.so. With "probe" it ends before any parallel region (the
 * preload's start-up warning is what is checked); otherwise it sums in parallel regions
 * and checks the sums. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "probe"))
		return 0;
	long sum = 0;
	for (int rep = 0; rep < 20; rep++) {
#pragma omp parallel for reduction(+ : sum)
		for (int i = 0; i < 100000; i++)
			sum += i % 7;
	}
	int threads = 0;
#pragma omp parallel
	{
#pragma omp single
		threads = omp_get_num_threads();
	}
	if (sum != 20L * 299995) {
		fprintf(stderr, "preload-omp: sum %ld, expected %ld\n", sum, 20L * 299995);
		return 1;
	}
	printf("preload-omp: %d threads: ok\n", threads);
	return 0;
}
