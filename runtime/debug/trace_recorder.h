// --trace: a timeline of every instruction a rank runs (one span per
// instruction, with bytes for collectives and channels), written as Chrome
// trace-event JSON (the format chrome://tracing and Perfetto read) by
// hl_trace_recorder_write_events; launcher/debug_session.c gathers every
// rank's events into one file. Recording stores fixed-size binary records
// (no strings, no locks, allocation only when the array doubles); all
// formatting happens at the end.
#ifndef HL_RUNTIME_DEBUG_TRACE_RECORDER_H_
#define HL_RUNTIME_DEBUG_TRACE_RECORDER_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/debug/trace_clock.h"
#include "runtime/comm/channels.h"
#include "runtime/exec/observer.h"
#include "runtime/ir/module.h"

// One finished instruction: 16 bytes, no strings, one clock read. Its span
// ends at `tick` and starts where the instruction before it at its depth or
// above ended (the previous record of depth <= its own: the end of one span
// is the start of the next on the executor track, and a parent's span starts
// where its first child's does), worked out when the trace is written, as
// are names, groups and flow ids. inst NULL: a boundary only (a run's start).
typedef hl_exec_log_record_t hl_trace_record_t;

// Bytes of a collective / channel instruction's record (operand bytes, or a
// -done's result bytes): rare, so kept aside from the records.
typedef struct hl_trace_bytes {
  int64_t record;  // index into the records
  int64_t bytes;
} hl_trace_bytes_t;

// What the collectives' progress thread did for one non-blocking
// collective (collectives/progress_hook.h), on the "progress thread" track.
typedef struct hl_trace_progress_span {
  const hl_instruction_t *inst;
  int64_t start_ns, end_ns;  // CLOCK_MONOTONIC
  int64_t bytes;
  int32_t tests;             // MPI_Test rounds it ran for it
  bool completed;            // the thread saw it complete (else the -done took it back)
} hl_trace_progress_span_t;

enum {
  HL_TRACE_DEPTH_BITS = HL_EXEC_LOG_DEPTH_BITS,
  HL_TRACE_MAX_DEPTH = 1 << HL_TRACE_DEPTH_BITS,  // deeper instructions are not recorded
  HL_TRACE_PROGRESS_SPANS = 1 << 16,
  HL_TRACE_PROGRESS_ROWS = 62,
};

// Private: in the header only so that hl_trace_recorder_leave inlines into
// the debugging observer. The hot path is the executor's: it appends to
// `log` (one clock read, one 16-byte store; runtime/exec/observer.h).
typedef struct hl_trace_recorder {
  hl_trace_record_t *records;
  hl_exec_log_t log;  // log.next - records records kept; log.end: records + cap
  int64_t cap, max, dropped;
  hl_trace_bytes_t *bytes;  // in record order
  int64_t bytes_count, bytes_cap;
  hl_trace_clock_t clock;
  int64_t clock_uncertainty_ns;  // how far the offset to the reference clock may be off
  // The progress threads' spans: the MPI backend's and the shared-memory
  // layer's threads may report at once, hence the lock.
  pthread_mutex_t progress_lock;
  hl_trace_progress_span_t *progress;
  int64_t progress_count, progress_dropped;
} hl_trace_recorder_t;

// At most `max_spans` records (about one per instruction) are kept (later
// ones are counted, not stored).
hl_status_t hl_trace_recorder_create(int64_t max_spans, hl_trace_recorder_t **out_recorder);
void hl_trace_recorder_destroy(hl_trace_recorder_t *recorder);  // NULL-safe
// Forgets the spans recorded so far (keeps the memory).
void hl_trace_recorder_clear(hl_trace_recorder_t *recorder);

// Out of line: grows the record array (or counts a dropped record).
void hl_trace_recorder_grow_(hl_trace_recorder_t *recorder);

// Records kept so far.
static inline int64_t hl_trace_recorder_count(const hl_trace_recorder_t *t) {
  return t->log.next - t->records;
}

// The log the executor appends to; the debugging observer keeps its depth.
static inline hl_exec_log_t *hl_trace_recorder_log(hl_trace_recorder_t *t) { return &t->log; }

static inline void hl_trace_recorder_append_(hl_trace_recorder_t *t,
                                             const hl_instruction_t *inst, int depth) {
  t->log.depth = depth;
  if (hl_exec_log_append(&t->log, inst) || (unsigned)depth >= HL_TRACE_MAX_DEPTH) return;
  hl_trace_recorder_grow_(t);  // else dropped (counted)
  hl_exec_log_append(&t->log, inst);
}

// Called by the debugging observer when an instruction at call depth
// `depth` finished (and the executor did not log it itself).
static inline void hl_trace_recorder_leave(hl_trace_recorder_t *t, const hl_instruction_t *inst,
                                           int depth) {
  hl_trace_recorder_append_(t, inst, depth);
}

// The same for a collective / channel instruction, with its bytes.
void hl_trace_recorder_leave_bytes(hl_trace_recorder_t *recorder, const hl_instruction_t *inst,
                                   int depth, int64_t bytes);

// A run begins: the first instruction's span starts here.
static inline void hl_trace_recorder_begin(hl_trace_recorder_t *t) {
  hl_trace_recorder_append_(t, NULL, 0);
}

// How far this rank's clock offset (write_events' offset_ns) may be off the
// truth: written into the process's metadata (0 by default: the same clock).
void hl_trace_recorder_set_clock_uncertainty(hl_trace_recorder_t *recorder, int64_t ns);

// The progress thread's work on `inst` (see hl_trace_progress_span_t).
void hl_trace_recorder_progress(hl_trace_recorder_t *recorder, const hl_instruction_t *inst,
                                int64_t bytes, int64_t start_ns, int64_t end_ns, int tests,
                                bool completed);

// Appends this rank's events (comma-separated trace-event objects, no
// brackets): process and thread names (the process's args also give
// clock_offset_ns, this rank's clock minus the reference, and
// clock_uncertainty_ns), an "X" span per instruction on the
// executor track and per collective / channel instruction on that
// collective's own track (bytes, group, channel; a -done on its -start's,
// a send-done / recv-done on its send's / recv's; tids from 16 in the order
// the collectives first finished), the progress threads' spans on the
// progress thread's track (when they recorded any; spans that overlap
// without nesting, from requests in flight together, on extra rows
// "progress thread (2)" ...), and flow events from each send
// to its recv-done ("s" on the sender, "f" on the receiver, ids from the
// channel, both ends and the occurrence; `channels` gives this rank's peer,
// NULL: no arrows). Times are in microseconds after adding
// `offset_ns` (this rank's clock minus the reference clock) and subtracting
// `origin_ns` (reference clock at the start). Calibrates the recorder's
// clock (trace_clock.h: may wait until 10 ms after the recorder was made).
void hl_trace_recorder_write_events(hl_trace_recorder_t *recorder, int rank,
                                    int64_t num_replicas, int64_t num_partitions,
                                    int64_t offset_ns, int64_t origin_ns,
                                    const hl_channel_env_t *channels, hl_strbuf_t *out);

#endif  // HL_RUNTIME_DEBUG_TRACE_RECORDER_H_
