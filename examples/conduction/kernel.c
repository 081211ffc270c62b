/*
 * The heat-conduction arithmetic (conduction.h): explicit time steps of the heat equation,
 * a 5-point stencil in 2D and a 7-point one in 3D, on fixed boundary values.
 */
#include <stddef.h>
#include "conduction.h"

const char cond_stencil[] = "conduction";

/* Diffusion numbers: below the explicit scheme's stability limits (1/4 in 2D, 1/6 in 3D),
 * so the field stays bounded however long it runs. */
#define ALPHA2 0.2
#define ALPHA3 0.125

/* Initial value: the first face is hot, the second cooler, the others cold; the interior
 * starts with a ripple so that every cell matters to the checksum. */
double cond_initial(const struct cond_run *r, long i, long j, long l)
{
	if (i == 0)
		return 100.0;
	if (j == 0)
		return 50.0;
	if (i == r->n - 1 || j == r->m - 1 || (r->dims == 3 && (l == 0 || l == r->k - 1)))
		return 0.0;
	return (double)((i * 31 + j * 17 + l * 7) % 101) * 0.25;
}

/* --imbalance: the rows of the moving band (cond_hot_row) stand for a region where the
 * physics is stiffer (a front): each of their cells is advanced in HOT_COST sub-steps of
 * 1/HOT_COST of the time step, which costs about HOT_COST times more. */
#define HOT_COST 8

/* New value of a cell c whose `count` neighbours sum to around. */
static inline double advance(double c, double around, double alpha, int count)
{
	return c + alpha * (around - count * c);
}

static inline double advance_hot(double c, double around, double alpha, int count)
{
	double v = c;
	for (int q = 0; q < HOT_COST; q++)
		v = v + (alpha / HOT_COST) * (around - count * v);
	return v;
}

/* One row (2D) or plane (3D); the hot test is hoisted out of the cell loops so that the
 * common case keeps its tight, vectorisable loop. */
#define STEP_ROW(update)                                                                   \
	do {                                                                               \
		if (r->dims == 2) {                                                        \
			for (long j = 1; j < m - 1; j++) {                                 \
				const double *c = in + i * m + j;                          \
				out[i * m + j] = update(*c, (c[-m] + c[m]) + (c[-1] + c[1]), ALPHA2, 4); \
			}                                                                  \
			break;                                                             \
		}                                                                          \
		for (long j = 1; j < m - 1; j++)                                           \
			for (long l = 1; l < k - 1; l++) {                                 \
				const double *c = in + i * plane + j * k + l;              \
				double around = (c[-plane] + c[plane]) + (c[-k] + c[k]) + (c[-1] + c[1]); \
				out[i * plane + j * k + l] = update(*c, around, ALPHA3, 6); \
			}                                                                  \
	} while (0)

void cond_step(const struct cond_run *r, int s, long t)
{
	const double *restrict in = r->buf[t % 2];
	double *restrict out = r->buf[(t + 1) % 2];
	long lo, hi;
	cond_stripe_rows(r, s, &lo, &hi);
	if (lo < 1)
		lo = 1;
	if (hi > r->n - 1)
		hi = r->n - 1;
	const long m = r->m, k = r->k;
	const long plane = m * k;
	for (long i = lo; i < hi; i++) {
		if (r->imbalance && cond_hot_row(r, i, t))
			STEP_ROW(advance_hot);
		else
			STEP_ROW(advance);
	}
}
