/* Built against an installed marcel with `cc prog.c $(pkg-config --cflags --libs marcel)`. */
#include <marcel.h>
#include <stdio.h>

static any_t square(any_t arg)
{
	long x = (long)arg;
	return (any_t)(x * x);
}

int main(int argc, char **argv)
{
	if (marcel_init(&argc, argv))
		return 1;
	marcel_t t;
	any_t r = NULL;
	if (marcel_create(&t, NULL, square, (any_t)7L) || marcel_join(t, &r) || (long)r != 49) {
		fprintf(stderr, "install-smoke: wrong result\n");
		return 1;
	}
	printf("install-smoke: marcel %u VPs, 7*7=%ld\n", marcel_nbvps(), (long)r);
	marcel_end();
	return 0;
}
