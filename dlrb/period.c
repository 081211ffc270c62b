/*
 * The period detector (ma_dlrb_period.h). While no period is known, every candidate q
 * keeps how many symbols in a row equalled the one q before; the smallest q whose run
 * reaches MA_PERIOD_CONFIRM - 1 whole periods, and MA_PERIOD_MIN_RUN calls, is believed
 * (its last MA_PERIOD_CONFIRM periods are then equal; short periods need more of them,
 * or a stream without structure would show one by chance). Known, the period is checked at one comparison per call.
 */
#include <string.h>
#include "ma_dlrb_period.h"

void ma_period_init(struct ma_period *p)
{
	memset(p, 0, sizeof(*p));
}

static uint32_t ma_period_at(const struct ma_period *p, unsigned long back)
{
	return p->hist[(p->n - 1 - back) % MA_PERIOD_HIST];
}

/* Where in the period just confirmed its anchor falls: the distance, back from the
 * newest symbol, to just after the last synchronising call in the last period. */
static unsigned ma_period_anchor(const struct ma_period *p, unsigned q)
{
	for (unsigned back = 0; back < q; back++)
		if (ma_period_at(p, back) >> 24 & MA_SYM_SYNC)
			return back;
	return 0;
}

enum ma_period_event ma_period_push(struct ma_period *p, uint32_t sym)
{
	p->hist[p->n % MA_PERIOD_HIST] = sym;
	p->n++;
	if (p->period) {
		if (sym != ma_period_at(p, p->period)) {
			/* A phase change: look again from here. */
			p->period = 0;
			p->pos = 0;
			memset(p->run, 0, sizeof(p->run));
			return MA_PERIOD_LOST;
		}
		p->pos = (p->pos + 1) % p->period;
		if (p->pos)
			return MA_PERIOD_NONE;
		p->iterations++;
		return MA_PERIOD_ITERATION;
	}
	unsigned best = 0;
	for (unsigned q = 1; q <= MA_PERIOD_MAX && q < p->n; q++) {
		p->run[q] = sym == ma_period_at(p, q) ? p->run[q] + 1 : 0;
		unsigned need = (MA_PERIOD_CONFIRM - 1) * q;
		if (!best && p->run[q] >= (need > MA_PERIOD_MIN_RUN ? need : MA_PERIOD_MIN_RUN))
			best = q;
	}
	if (!best)
		return MA_PERIOD_NONE;
	p->period = best;
	p->found++;
	/* The newest symbol sits `back` calls after the anchor's: an iteration ends exactly
	 * at the anchor, so the position is back (mod period). */
	unsigned back = ma_period_anchor(p, best);
	p->pos = back % best;
	p->iterations += !p->pos;
	return MA_PERIOD_FOUND;
}
