/*
 * The advection arithmetic, run by the conduction drivers (conduction/conduction.h):
 * semi-Lagrangian steps carrying a scalar field along a fixed swirling flow. Each interior
 * cell traces the flow back one time step (midpoint rule) to its departure point and takes
 * the previous field there, interpolated bilinearly (2D) or trilinearly (3D). Unlike
 * conduction's fixed 5- or 7-point pattern, the cells read depend on where the flow comes
 * from: irregular reads, up to two rows away (see SWIRL), hence across stripe edges.
 * Interpolation takes convex combinations of the previous values, so the field stays
 * within its initial bounds however many steps run: every iteration count is stable.
 *
 * The flow is a box swirl: in normalised coordinates x, y, z in [0, 1], with
 * f(s) = 16 s^2 (1-s)^2 (0 on the walls, 1 in the middle),
 *   2D:  v = ( f(x) f'(y), -f'(x) f(y) )
 *   3D:  v = ( f(x) f'(y), -f'(x) f(y) + f(y) f'(z), -f'(y) f(z) )
 * Both are divergence-free (sums of swirls derived from stream functions) and tangent to
 * every wall, so nothing flows in or out and the boundary values stay fixed.
 */
#include <stddef.h>
#include "../conduction/conduction.h"

const char cond_stencil[] = "advection";

/* The time step, in cells the fastest point moves along the longest axis per velocity
 * unit: |f| <= 1 and |f'| <= 3.08, so a departure point is at most 0.3 * 3.08 = 0.92 cells
 * away along an axis in 2D and 1.85 in 3D (where two swirls add), whatever the grid size:
 * interpolation then reads at most two rows away, a neighbour exchange. */
#define SWIRL 0.3

/* The flow's shape along one axis: f(s) in *f, f'(s) in *df. */
static void profile(double s, double *f, double *df)
{
	double a = s * (1.0 - s);
	*f = 16.0 * a * a;
	*df = 32.0 * a * (1.0 - 2.0 * s);
}

/* The geometry of a run: cells per velocity unit along each axis, and the size of a cell
 * in normalised coordinates. Scaling each axis by a constant keeps the flow
 * divergence-free. */
struct flow {
	double scale[3];
	double h[3];
	double last[3];  /* the last index along each axis, as a double */
};

static void flow_of(const struct cond_run *r, struct flow *fl)
{
	long ext[3] = { r->n, r->m, r->k };
	long longest = 1;
	for (int d = 0; d < r->dims; d++)
		if (ext[d] - 1 > longest)
			longest = ext[d] - 1;
	double dt = SWIRL / (double)longest;
	for (int d = 0; d < 3; d++) {
		fl->last[d] = (double)(ext[d] - 1);
		fl->h[d] = d < r->dims ? 1.0 / fl->last[d] : 0.0;
		fl->scale[d] = fl->last[d] * dt;
	}
}

/* Displacement per step, in cells, at grid position p. */
static void velocity(const struct cond_run *r, const struct flow *fl, const double p[3], double v[3])
{
	double fx, dfx, fy, dfy, fz, dfz;
	profile(p[0] * fl->h[0], &fx, &dfx);
	profile(p[1] * fl->h[1], &fy, &dfy);
	v[0] = fl->scale[0] * (fx * dfy);
	if (r->dims == 2) {
		v[1] = fl->scale[1] * -(dfx * fy);
		v[2] = 0.0;
		return;
	}
	profile(p[2] * fl->h[2], &fz, &dfz);
	v[1] = fl->scale[1] * (fy * dfz - dfx * fy);
	v[2] = fl->scale[2] * -(dfy * fz);
}

/* The departure point of the cell at p, in @p substeps steps back along the flow: in
 * each, half a step back for the midpoint's velocity, then a full step back with it.
 * Clamped to the grid at the end. */
static void departure(const struct cond_run *r, const struct flow *fl, const double p[3], int substeps,
		      double q[3])
{
	const double part = 1.0 / substeps;  /* exact for one step: x - part * v == x - v */
	double v[3], mid[3], x[3] = { p[0], p[1], p[2] };
	for (int s = 0; s < substeps; s++) {
		velocity(r, fl, x, v);
		for (int d = 0; d < 3; d++)
			mid[d] = x[d] - 0.5 * part * v[d];
		velocity(r, fl, mid, v);
		for (int d = 0; d < 3; d++)
			x[d] = x[d] - part * v[d];
	}
	for (int d = 0; d < 3; d++)
		q[d] = x[d] < 0.0 ? 0.0 : x[d] > fl->last[d] ? fl->last[d] : x[d];
}

/* --imbalance: as in conduction, a band of rows an eighth of the grid wide, moving from
 * the first interior row to the last once during the run, is costlier: its cells follow
 * the flow back in HOT_COST sub-steps, a more accurate and about HOT_COST times dearer
 * departure point. */
#define HOT_COST 8

/* Splits a clamped coordinate into a cell index (one below the last, so that index + 1
 * exists) and the fraction beyond it. */
static long split(double x, double last, double *frac)
{
	long i = (long)x;  /* x >= 0: truncation is floor */
	if (i > (long)last - 1)
		i = (long)last - 1;
	*frac = x - (double)i;
	return i;
}

/* Linear interpolation, the same expression in every dimension. */
static double lerp(double a, double b, double t)
{
	return (1.0 - t) * a + t * b;
}

/* The previous field at departure point q. Weights and summation order are fixed, so
 * the value depends on the field alone, not on who computes it. */
static double sample(const struct cond_run *r, const struct flow *fl, const double *in, const double q[3])
{
	double fi, fj, fl3;
	long i = split(q[0], fl->last[0], &fi);
	long j = split(q[1], fl->last[1], &fj);
	const long m = r->m, k = r->k;
	if (r->dims == 2) {
		const double *c = in + i * m + j;
		return lerp(lerp(c[0], c[1], fj), lerp(c[m], c[m + 1], fj), fi);
	}
	long l = split(q[2], fl->last[2], &fl3);
	const long plane = m * k;
	const double *c = in + (i * m + j) * k + l;
	const double *d = c + plane;
	return lerp(lerp(lerp(c[0], c[1], fl3), lerp(c[k], c[k + 1], fl3), fj),
		    lerp(lerp(d[0], d[1], fl3), lerp(d[k], d[k + 1], fl3), fj), fi);
}

/* Initial value: a blob of 1 in a field of 0, off the swirl's centre so that it travels,
 * with a small ripple so that every cell matters to the checksum; the first wall is 1,
 * the others 0. */
double cond_initial(const struct cond_run *r, long i, long j, long l)
{
	if (i == 0)
		return 1.0;
	if (i == r->n - 1 || j == 0 || j == r->m - 1 || (r->dims == 3 && (l == 0 || l == r->k - 1)))
		return 0.0;
	double x = (double)i / (double)(r->n - 1) - 0.3;
	double y = (double)j / (double)(r->m - 1) - 0.5;
	double z = r->dims == 3 ? (double)l / (double)(r->k - 1) - 0.5 : 0.0;
	double blob = x * x + y * y + z * z < 0.04 ? 1.0 : 0.0;
	return blob + (double)((i * 31 + j * 17 + l * 7) % 101) * 0.001;
}

void cond_step(const struct cond_run *r, int s, long t)
{
	/* Every cell of buffer t % 2 was written at iteration t - 1, before the barrier, so
	 * departure points in other stripes are safe to read. */
	const double *restrict in = r->buf[t % 2];
	double *restrict out = r->buf[(t + 1) % 2];
	struct flow fl;
	long lo, hi;
	flow_of(r, &fl);
	cond_stripe_rows(r, s, &lo, &hi);
	if (lo < 1)
		lo = 1;
	if (hi > r->n - 1)
		hi = r->n - 1;
	/* In 2D, k = 1 and the third axis is the single index l = 0. */
	const long l_lo = r->dims == 3 ? 1 : 0, l_hi = r->dims == 3 ? r->k - 1 : 1;
	for (long i = lo; i < hi; i++) {
		int substeps = r->imbalance && cond_hot_row(r, i, t) ? HOT_COST : 1;
		for (long j = 1; j < r->m - 1; j++)
			for (long l = l_lo; l < l_hi; l++) {
				double p[3] = { (double)i, (double)j, (double)l }, q[3];
				departure(r, &fl, p, substeps, q);
				out[(i * r->m + j) * r->k + l] = sample(r, &fl, in, q);
			}
	}
}
