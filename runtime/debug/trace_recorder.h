// --trace: a timeline of every instruction a rank runs (one span per
// instruction, with bytes for collectives and channels), written as Chrome
// trace-event JSON (the format chrome://tracing and Perfetto read) by
// hl_trace_recorder_write_events; launcher/debug_session.c gathers every
// rank's events into one file.
#ifndef HL_RUNTIME_DEBUG_TRACE_RECORDER_H_
#define HL_RUNTIME_DEBUG_TRACE_RECORDER_H_

#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"
#include "runtime/exec/channels.h"
#include "runtime/ir/module.h"

typedef struct hl_trace_span {
  const hl_instruction_t *inst;
  int64_t start_ns, end_ns;  // CLOCK_MONOTONIC of this process
  int64_t bytes;             // collectives and channels: operand (or -done: result) bytes
  int64_t flow;              // send / recv-done: the k-th on its channel (1-based); else 0
} hl_trace_span_t;

typedef struct hl_trace_recorder hl_trace_recorder_t;

// At most `max_spans` spans are kept (later ones are counted, not stored).
hl_status_t hl_trace_recorder_create(int64_t max_spans, hl_trace_recorder_t **out_recorder);
void hl_trace_recorder_destroy(hl_trace_recorder_t *recorder);  // NULL-safe
// Forgets the spans recorded so far (keeps the memory).
void hl_trace_recorder_clear(hl_trace_recorder_t *recorder);

// Called by the debugging observer.
void hl_trace_recorder_enter(hl_trace_recorder_t *recorder, int depth, int64_t now_ns);
void hl_trace_recorder_leave(hl_trace_recorder_t *recorder, const hl_instruction_t *inst,
                             int depth, int64_t now_ns, int64_t bytes);

// Appends this rank's events (comma-separated trace-event objects, no
// brackets): process and thread names, an "X" span per instruction on the
// executor track and per collective / channel instruction on the
// collectives track (bytes, group, channel), and flow events from each send
// to its recv-done ("s" on the sender, "f" on the receiver, ids from the
// channel, both ends and the occurrence; `channels` gives this rank's peer,
// NULL: no arrows). Times are in microseconds after adding
// `offset_ns` (this rank's clock minus the reference clock) and subtracting
// `origin_ns` (reference clock at the start).
void hl_trace_recorder_write_events(const hl_trace_recorder_t *recorder, int rank,
                                    int64_t num_replicas, int64_t num_partitions,
                                    int64_t offset_ns, int64_t origin_ns,
                                    const hl_channel_env_t *channels, hl_strbuf_t *out);

#endif  // HL_RUNTIME_DEBUG_TRACE_RECORDER_H_
