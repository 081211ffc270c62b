/**
 * @file marcel/trace.h
 * @brief Execution traces: pause and resume recording, and mark points of interest.
 *
 * When `MARCEL_TRACE=file.json` (or `--marcel-trace file.json`) is set, marcel_init()
 * starts recording scheduler events and marcel_end() writes them to that file as a
 * Chrome/Perfetto JSON trace: one track per VP with the threads it ran, plus instant
 * events (idle start/stop, bubble events, run-queue switches, steals, marks). The file
 * opens in https://ui.perfetto.dev; README.md describes the tracks and events.
 *
 * The functions below control the recording. Their switch is process-wide and persists
 * across marcel_end() and marcel_init(): marcel_trace_off() called before marcel_init()
 * makes the trace start paused. Without a trace being written (no `MARCEL_TRACE`, or the
 * runtime not running) they only set that switch and return `ENOENT`; they never fail
 * otherwise. All may be called from any thread, marcel or not, at any time.
 */
#ifndef MARCEL_TRACE_H
#define MARCEL_TRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup marcel_trace Tracing
 * @{ */

/** Resumes recording (the default state). A thread already running on a VP when
 * recording resumes shows from its next switch on. Calls do not nest: one
 * marcel_trace_on() undoes any number of marcel_trace_off().
 * @return 0 if a trace is being written (then a "trace on" event marks the point where
 * recording resumed, unless it was not paused); ENOENT if not, after setting the switch
 * the next trace starts with. */
int marcel_trace_on(void);

/** Pauses recording: events after this call are not written (events that other VPs
 * record at the same instant may or may not be). Thread slices open at this point are
 * closed there, and a "trace off" event marks it. While paused, an event costs one test
 * of a flag.
 * @return 0 if a trace is being written; ENOENT if not, after setting the switch: the
 * next trace then starts paused. */
int marcel_trace_off(void);

/** Records an instant event named @p label (its first 31 bytes) on the caller's track:
 * its VP's, or the "outside" track for a caller that is not on a VP. Nothing is recorded
 * while recording is paused.
 * @return 0 if a trace is being written (recorded, or dropped because paused); ENOENT if
 * not; EINVAL if @p label is NULL. */
int marcel_trace_mark(const char *label);

/** @} */

#ifdef __cplusplus
}
#endif

#endif
