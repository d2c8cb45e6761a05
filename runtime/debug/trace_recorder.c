// Instruction spans for --trace (see trace_recorder.h).
#include "runtime/debug/trace_recorder.h"

#include <stdlib.h>
#include <string.h>

#include "collectives/groups.h"
#include "runtime/base/alloc.h"
#include "runtime/debug/debug_observer.h"

enum { kChannelSlots = 256 };

hl_status_t hl_trace_recorder_create(int64_t max_spans, hl_trace_recorder_t **out) {
  *out = NULL;
  hl_trace_recorder_t *t = hl_calloc(1, sizeof(*t));
  if (!t) return HL_OOM();
  t->max = max_spans;
  pthread_mutex_init(&t->progress_lock, NULL);
  hl_trace_clock_init(&t->clock, true);
  t->log.tsc = t->clock.tsc;
  t->log.base = t->clock.base;
  *out = t;
  return NULL;
}

void hl_trace_recorder_destroy(hl_trace_recorder_t *t) {
  if (!t) return;
  hl_free(t->records);
  hl_free(t->bytes);
  hl_free(t->progress);
  pthread_mutex_destroy(&t->progress_lock);
  hl_free(t);
}

void hl_trace_recorder_clear(hl_trace_recorder_t *t) {
  t->log.next = t->records;
  t->dropped = 0;
  t->bytes_count = 0;
  t->progress_count = 0;
  t->progress_dropped = 0;
}

void hl_trace_recorder_grow_(hl_trace_recorder_t *t) {
  int64_t cap = t->cap ? 2 * t->cap : 4096;
  if (cap > t->max) cap = t->max;
  hl_trace_record_t *grown =
      cap > t->cap ? hl_realloc(t->records, (size_t)cap * sizeof(*grown)) : NULL;
  if (!grown) {
    t->dropped++;
    return;
  }
  int64_t count = hl_trace_recorder_count(t);
  t->records = grown;
  t->cap = cap;
  t->log.next = grown + count;
  t->log.end = grown + cap;
}

void hl_trace_recorder_set_clock_uncertainty(hl_trace_recorder_t *t, int64_t ns) {
  t->clock_uncertainty_ns = ns;
}

void hl_trace_recorder_leave_bytes(hl_trace_recorder_t *t, const hl_instruction_t *inst,
                                   int depth, int64_t bytes) {
  int64_t before = hl_trace_recorder_count(t);
  hl_trace_recorder_append_(t, inst, depth);
  if (hl_trace_recorder_count(t) == before) return;  // not recorded
  if (t->bytes_count == t->bytes_cap) {
    int64_t cap = t->bytes_cap ? 2 * t->bytes_cap : 256;
    hl_trace_bytes_t *grown = hl_realloc(t->bytes, (size_t)cap * sizeof(*grown));
    if (!grown) return;  // the span stays, with 0 bytes
    t->bytes = grown;
    t->bytes_cap = cap;
  }
  t->bytes[t->bytes_count++] = (hl_trace_bytes_t){before, bytes};
}

void hl_trace_recorder_progress(hl_trace_recorder_t *t, const hl_instruction_t *inst,
                                int64_t bytes, int64_t start_ns, int64_t end_ns, int tests,
                                bool completed) {
  pthread_mutex_lock(&t->progress_lock);
  if (!t->progress) t->progress = hl_malloc(HL_TRACE_PROGRESS_SPANS * sizeof(*t->progress));
  if (!t->progress || t->progress_count == HL_TRACE_PROGRESS_SPANS)
    t->progress_dropped++;
  else
    t->progress[t->progress_count++] =
        (hl_trace_progress_span_t){inst, start_ns, end_ns, bytes, tests, completed};
  pthread_mutex_unlock(&t->progress_lock);
}

static int by_start(const void *a, const void *b) {
  const hl_trace_progress_span_t *x = a, *y = b;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

// JSON string contents: instruction names are identifiers, but quote anyway.
static void append_json_string(hl_strbuf_t *out, const char *s) {
  hl_strbuf_append_char(out, '"');
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') hl_strbuf_append_char(out, '\\');
    if ((unsigned char)*s < 0x20) {
      hl_strbuf_appendf(out, "\\u%04x", (unsigned char)*s);
      continue;
    }
    hl_strbuf_append_char(out, *s);
  }
  hl_strbuf_append_char(out, '"');
}

// "{0,1,2,3}" for the collective's group holding `rank` ("" when none).
static void append_group(hl_strbuf_t *out, const hl_instruction_t *inst, int rank, int64_t R,
                         int64_t P) {
  hl_process_groups_t g;
  hl_status_t st = hl_process_groups_resolve(inst, R, P, &g);
  if (st) {
    hl_status_free(st);
    return;
  }
  if (g.is_permute) {
    int src = hl_process_groups_permute_source(&g, rank),
        dst = hl_process_groups_permute_target(&g, rank);
    hl_strbuf_appendf(out, "from %d to %d", src, dst);
  } else {
    int k = hl_process_groups_find(&g, rank, NULL);
    hl_strbuf_append(out, "{");
    for (int i = k >= 0 ? g.offsets[k] : 0; k >= 0 && i < g.offsets[k + 1]; i++)
      hl_strbuf_appendf(out, i > g.offsets[k] ? ",%d" : "%d", g.ranks[i]);
    hl_strbuf_append(out, "}");
  }
  hl_process_groups_deinit(&g);
}

static void append_span(hl_strbuf_t *out, const hl_instruction_t *inst, int64_t bytes, int rank,
                        int tid, double ts, double dur, int64_t R, int64_t P) {
  hl_strbuf_append(out, ",\n{\"ph\":\"X\",\"name\":");
  append_json_string(out, inst->name);
  hl_strbuf_appendf(out, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                    "\"args\":{\"opcode\":\"%s\",\"computation\":",
                    tid ? "collective" : "instruction", rank, tid, ts, dur,
                    hl_opcode_name(inst->opcode));
  append_json_string(out, inst->parent ? inst->parent->name : "");
  if (tid) {
    hl_strbuf_appendf(out, ",\"bytes\":%lld", (long long)bytes);
    if (inst->attrs.channel_id > 0)
      hl_strbuf_appendf(out, ",\"channel\":%lld", (long long)inst->attrs.channel_id);
    if (hl_opcode_is_collective(inst->opcode)) {
      hl_strbuf_t group;
      hl_strbuf_init(&group);
      append_group(&group, inst, rank, R, P);
      hl_strbuf_append(out, ",\"group\":");
      append_json_string(out, hl_strbuf_cstr(&group));
      hl_strbuf_deinit(&group);
    }
  }
  hl_strbuf_append(out, "}}");
}

// The progress thread's span for one collective: on track `tid`, with the
// collective's bytes and group, and whether the thread saw it complete.
static void append_progress_span(hl_strbuf_t *out, const hl_trace_progress_span_t *s, int rank,
                                 int tid, int64_t offset_ns, int64_t origin_ns, int64_t R,
                                 int64_t P) {
  double ts = (double)(s->start_ns + offset_ns - origin_ns) * 1e-3;
  double dur = (double)(s->end_ns - s->start_ns) * 1e-3;
  hl_strbuf_append(out, ",\n{\"ph\":\"X\",\"name\":");
  append_json_string(out, s->inst ? s->inst->name : "collective");
  hl_strbuf_appendf(out, ",\"cat\":\"progress\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                    "\"args\":{\"opcode\":\"%s\",\"bytes\":%lld,\"tests\":%d,"
                    "\"completed_by\":\"%s\"",
                    rank, tid, ts, dur, s->inst ? hl_opcode_name(s->inst->opcode) : "",
                    (long long)s->bytes, s->tests,
                    s->completed ? "progress thread" : "done (wait)");
  if (s->inst && hl_opcode_is_collective(s->inst->opcode)) {
    hl_strbuf_t group;
    hl_strbuf_init(&group);
    append_group(&group, s->inst, rank, R, P);
    hl_strbuf_append(out, ",\"group\":");
    append_json_string(out, hl_strbuf_cstr(&group));
    hl_strbuf_deinit(&group);
  }
  hl_strbuf_append(out, "}}");
}

// One track per collective: the -start / send / recv instruction that a
// span's instruction belongs to (a -done belongs to its -start, as its
// operand), so an async pair shares a row and overlapping collectives get
// rows of their own.
static const hl_instruction_t *collective_of(const hl_instruction_t *inst) {
  bool done = inst->opcode == HL_OP_ALL_GATHER_DONE || inst->opcode == HL_OP_ALL_REDUCE_DONE ||
              inst->opcode == HL_OP_COLLECTIVE_PERMUTE_DONE ||
              inst->opcode == HL_OP_SEND_DONE || inst->opcode == HL_OP_RECV_DONE;
  if (done && inst->operand_count > 0 &&
      hl_debug_opcode_communicates(inst->operands[0]->opcode))
    return inst->operands[0];
  return inst;
}

// Collective instruction -> its track's tid (open addressing on the
// pointer; the table doubles at half full).
typedef struct collective_rows {
  const hl_instruction_t **keys;
  int *tids;
  int64_t cap, count;
} collective_rows_t;

// Below: the executor (0), the progress thread's rows (2 ...).
enum { kFirstProgressTid = 2, kFirstCollectiveTid = kFirstProgressTid + HL_TRACE_PROGRESS_ROWS };

static size_t row_slot(const collective_rows_t *rows, const hl_instruction_t *inst) {
  size_t h = (size_t)((uintptr_t)inst >> 4) * 0x9E3779B97F4A7C15ull;
  size_t mask = (size_t)rows->cap - 1, i = (h >> 17) & mask;
  while (rows->keys[i] && rows->keys[i] != inst) i = (i + 1) & mask;
  return i;
}

static bool rows_grow(collective_rows_t *rows) {
  collective_rows_t grown = {NULL, NULL, rows->cap ? 2 * rows->cap : 64, rows->count};
  grown.keys = hl_calloc((size_t)grown.cap, sizeof(*grown.keys));
  grown.tids = hl_calloc((size_t)grown.cap, sizeof(*grown.tids));
  if (!grown.keys || !grown.tids) {
    hl_free(grown.keys);
    hl_free(grown.tids);
    return false;
  }
  for (int64_t i = 0; i < rows->cap; i++)
    if (rows->keys[i]) {
      size_t k = row_slot(&grown, rows->keys[i]);
      grown.keys[k] = rows->keys[i];
      grown.tids[k] = rows->tids[i];
    }
  hl_free(rows->keys);
  hl_free(rows->tids);
  *rows = grown;
  return true;
}

// The track of collective `inst` (its thread_name written when first seen):
// "all-reduce.5 {0,1,2,3}", "permute.2 from 1 to 2", "send.1 channel 1 to 3".
// Tracks are numbered in the order their collectives first finished. Out of
// memory: the shared row 1.
static int collective_tid(collective_rows_t *rows, const hl_instruction_t *inst, int rank,
                          int64_t R, int64_t P, const hl_channel_env_t *channels,
                          hl_strbuf_t *out) {
  if (2 * (rows->count + 1) > rows->cap && !rows_grow(rows)) return 1;
  size_t k = row_slot(rows, inst);
  if (rows->keys[k]) return rows->tids[k];
  int tid = kFirstCollectiveTid + (int)rows->count++;
  rows->keys[k] = inst;
  rows->tids[k] = tid;
  hl_strbuf_t name;
  hl_strbuf_init(&name);
  hl_strbuf_append(&name, inst->name);
  if (inst->opcode == HL_OP_SEND || inst->opcode == HL_OP_RECV) {
    bool send = inst->opcode == HL_OP_SEND;
    const hl_channel_route_t *route = hl_channel_env_route(
        channels, inst->attrs.channel_id, send ? HL_CHANNEL_SEND : HL_CHANNEL_RECV);
    hl_strbuf_appendf(&name, " channel %lld", (long long)inst->attrs.channel_id);
    if (route && route->peer >= 0)
      hl_strbuf_appendf(&name, send ? " to %d" : " from %d", route->peer);
  } else if (hl_opcode_is_collective(inst->opcode)) {
    hl_strbuf_append(&name, " ");
    append_group(&name, inst, rank, R, P);
  }
  hl_strbuf_appendf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":", rank, tid);
  append_json_string(out, hl_strbuf_cstr(&name));
  hl_strbuf_append(out, "}}");
  hl_strbuf_deinit(&name);
  return tid;
}

// The progress threads' spans by start, each on the first row whose last
// span ended before it starts (requests in flight together overlap without
// nesting, which one row cannot show; one thread's shared-memory jobs run
// one after another). Rows past HL_TRACE_PROGRESS_ROWS: counted as dropped.
static void append_progress_rows(hl_trace_recorder_t *t, int rank, int64_t offset_ns,
                                 int64_t origin_ns, int64_t R, int64_t P, hl_strbuf_t *out) {
  pthread_mutex_lock(&t->progress_lock);
  if (t->progress_count > 0)  // else t->progress may be NULL, which qsort must not get
    qsort(t->progress, (size_t)t->progress_count, sizeof(*t->progress), by_start);
  int64_t row_end[HL_TRACE_PROGRESS_ROWS];
  int rows = 0;
  for (int64_t i = 0; i < t->progress_count; i++) {
    const hl_trace_progress_span_t *s = &t->progress[i];
    int k = 0;
    while (k < rows && row_end[k] > s->start_ns) k++;
    if (k == HL_TRACE_PROGRESS_ROWS) {
      t->progress_dropped++;
      continue;
    }
    if (k == rows) {
      rows++;
      if (k > 0)
        hl_strbuf_appendf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
                          "\"tid\":%d,\"args\":{\"name\":\"progress thread (%d)\"}}", rank,
                          kFirstProgressTid + k, k + 1);
    }
    row_end[k] = s->end_ns;
    append_progress_span(out, s, rank, kFirstProgressTid + k, offset_ns, origin_ns, R, P);
  }
  pthread_mutex_unlock(&t->progress_lock);
}

void hl_trace_recorder_write_events(hl_trace_recorder_t *t, int rank, int64_t R, int64_t P,
                                    int64_t offset_ns, int64_t origin_ns,
                                    const hl_channel_env_t *channels, hl_strbuf_t *out) {
  if (P <= 0) P = 1;
  hl_trace_clock_calibrate(&t->clock);
  hl_strbuf_appendf(out, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":"
                    "\"rank %d (replica %lld, partition %lld)\",\"clock_offset_ns\":%lld,"
                    "\"clock_uncertainty_ns\":%lld}}", rank, rank, (long long)(rank / P),
                    (long long)(rank % P), (long long)-offset_ns,
                    (long long)t->clock_uncertainty_ns);
  hl_strbuf_appendf(out, ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,\"args\":"
                    "{\"sort_index\":%d}}", rank, rank);
  hl_strbuf_appendf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":0,"
                    "\"args\":{\"name\":\"executor\"}}", rank);
  if (t->progress_count || t->progress_dropped)
    hl_strbuf_appendf(out, ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
                      "\"args\":{\"name\":\"progress thread\"}}", rank, kFirstProgressTid);
  // Occurrences of send / recv-done per channel id (hashed into slots), in
  // the order they finished, which is the order of the spans.
  int64_t sends[kChannelSlots] = {0}, recvs[kChannelSlots] = {0};
  collective_rows_t rows = {0};
  // Each record's start: the end of the last record before it at its depth
  // or above (a stack of the latest record per depth, depths increasing).
  int64_t latest[HL_TRACE_MAX_DEPTH];
  int top = 0;
  int64_t next_bytes = 0;
  int64_t count = hl_trace_recorder_count(t);
  for (int64_t i = 0; i < count; i++) {
    const hl_trace_record_t *rec = &t->records[i];
    int depth = (int)(rec->tick_depth & (HL_TRACE_MAX_DEPTH - 1));
    int64_t end = (int64_t)(rec->tick_depth >> HL_TRACE_DEPTH_BITS) + t->clock.base;
    while (top > 0 && (int)(t->records[latest[top - 1]].tick_depth &
                            (HL_TRACE_MAX_DEPTH - 1)) > depth)
      top--;
    int64_t start = top > 0 ? (int64_t)(t->records[latest[top - 1]].tick_depth >>
                                        HL_TRACE_DEPTH_BITS) + t->clock.base
                            : end;
    if (top > 0 && (int)(t->records[latest[top - 1]].tick_depth & (HL_TRACE_MAX_DEPTH - 1)) ==
                       depth)
      top--;
    latest[top++] = i;
    int64_t bytes = 0;
    if (next_bytes < t->bytes_count && t->bytes[next_bytes].record == i)
      bytes = t->bytes[next_bytes++].bytes;
    if (!rec->inst) continue;  // a boundary
    const hl_instruction_t *inst = rec->inst;
    int64_t start_ns = hl_trace_clock_to_ns(&t->clock, start);
    int64_t end_ns = hl_trace_clock_to_ns(&t->clock, end);
    double ts = (double)(start_ns + offset_ns - origin_ns) * 1e-3;
    double dur = (double)(end_ns - start_ns) * 1e-3;
    append_span(out, inst, bytes, rank, 0, ts, dur, R, P);
    if (!hl_debug_opcode_communicates(inst->opcode)) continue;
    int tid = collective_tid(&rows, collective_of(inst), rank, R, P, channels, out);
    append_span(out, inst, bytes, rank, tid, ts, dur, R, P);
    bool send = inst->opcode == HL_OP_SEND;
    if (!send && inst->opcode != HL_OP_RECV_DONE) continue;
    int64_t channel = inst->attrs.channel_id;
    int slot = (int)((uint64_t)channel % kChannelSlots);
    int64_t flow = send ? ++sends[slot] : ++recvs[slot];
    // Bound to the enclosing slices: the send's start, the recv-done's middle.
    const hl_channel_route_t *route =
        hl_channel_env_route(channels, channel, send ? HL_CHANNEL_SEND : HL_CHANNEL_RECV);
    if (!route || route->peer < 0) continue;  // a send to nobody, a recv of zeros
    int from = send ? rank : route->peer, to = send ? route->peer : rank;
    hl_strbuf_appendf(out, ",\n{\"ph\":\"%s\",%s\"name\":\"channel %lld\",\"cat\":\"channel\","
                      "\"id\":\"%lld:%d>%d#%lld\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f}",
                      send ? "s" : "f", send ? "" : "\"bp\":\"e\",", (long long)channel,
                      (long long)channel, from, to, (long long)flow, rank, tid,
                      send ? ts : ts + dur * 0.5);
  }
  hl_free(rows.keys);
  hl_free(rows.tids);
  append_progress_rows(t, rank, offset_ns, origin_ns, R, P, out);
  if (t->dropped)
    hl_strbuf_appendf(out, ",\n{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%lld spans not recorded "
                      "(limit reached)\",\"pid\":%d,\"tid\":0,\"ts\":0}",
                      (long long)t->dropped, rank);
  if (t->progress_dropped)
    hl_strbuf_appendf(out, ",\n{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%lld progress spans not "
                      "recorded\",\"pid\":%d,\"tid\":%d,\"ts\":0}",
                      (long long)t->progress_dropped, rank, kFirstProgressTid);
}
