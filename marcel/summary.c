/*
 * The path summary: what find_next and yield read instead of every bitmap of the worker's
 * path. Byte i of a worker's summary is its path[i]'s best priority plus one (0: empty),
 * written by whoever changes that queue's bitmap, under the queue's lock, right after the
 * bitmap. A (worker, byte) pair shows one queue only, so each byte has one writer at a
 * time and no read-modify-write is needed; the reader loads the 8 bytes at once.
 *
 * A queue seen by many workers (a machine of hundreds of VPs) would make every change
 * of it a store into each of their lines: such queues are not summarised, and the
 * workers whose path holds one scan their bitmaps as before (summary_full is 0).
 */
#include "ma_sched.h"

void ma_summary_init(void)
{
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		for (unsigned i = 0; i < w->path_len; i++)
			w->path[i]->nb_summary = 0;
	}
	/* First count who sees each queue (nb_summary doubles as the count), then register. */
	unsigned char many = MA_SUMMARY_VPS + 1;
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		for (unsigned i = 0; i < w->path_len; i++)
			if (w->path[i]->nb_summary < many)
				w->path[i]->nb_summary++;
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		w->summary_full = 1;
		for (unsigned i = 0; i < w->path_len; i++) {
			struct ma_runqueue *rq = w->path[i];
			if (rq->nb_summary > MA_SUMMARY_VPS || i >= MA_SUMMARY_LEVELS)
				w->summary_full = 0;
		}
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		for (unsigned i = 0; i < w->path_len; i++)
			if (w->path[i]->nb_summary <= MA_SUMMARY_VPS)
				w->path[i]->nb_summary = 0;
	}
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		for (unsigned i = 0; i < w->path_len && i < MA_SUMMARY_LEVELS; i++) {
			struct ma_runqueue *rq = w->path[i];
			if (rq->nb_summary < MA_SUMMARY_VPS)
				rq->summary_at[rq->nb_summary++] = &w->summary[i];
		}
	}
	/* The queues left out show in no summary. */
	for (unsigned v = 0; v < ma_rt.nb_vps; v++) {
		struct ma_worker *w = &ma_rt.workers[v];
		for (unsigned i = 0; i < w->path_len; i++)
			if (w->path[i]->nb_summary == many)
				w->path[i]->nb_summary = 0;
	}
}
