// Per-rank hang reports and their merge (see hang_report.h).
#include "runtime/debug/hang_report.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/groups.h"
#include "runtime/base/alloc.h"
#include "runtime/debug/debug_observer.h"

void hl_hang_format_ranks(const int *ranks, int n, hl_strbuf_t *out) {
  for (int i = 0; i < n; i++) {
    int j = i;
    while (j + 1 < n && ranks[j + 1] == ranks[j] + 1) j++;
    if (j > i) hl_strbuf_appendf(out, "%s%d-%d", i ? "," : "", ranks[i], ranks[j]);
    else hl_strbuf_appendf(out, "%s%d", i ? "," : "", ranks[i]);
    i = j;
  }
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

// "{0..7}" for consecutive ranks, else "{0,2,4}".
static void format_group(const int *ranks, int n, hl_strbuf_t *out) {
  int sorted[4096];
  if (n > 4096) n = 4096;
  memcpy(sorted, ranks, sizeof(int) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(int), compare_ints);
  bool consecutive = n > 2;
  for (int i = 1; i < n && consecutive; i++) consecutive = sorted[i] == sorted[i - 1] + 1;
  if (consecutive) {
    hl_strbuf_appendf(out, "{%d..%d}", sorted[0], sorted[n - 1]);
    return;
  }
  hl_strbuf_append(out, "{");
  for (int i = 0; i < n; i++) hl_strbuf_appendf(out, i ? ",%d" : "%d", sorted[i]);
  hl_strbuf_append(out, "}");
}

// The ranks `rank` waits with in `inst` (its process group; for a permute:
// the processes it sends to and receives from). 0 when unknown.
static int group_of(const hl_instruction_t *inst, int rank, int64_t R, int64_t P, int *out,
                    int cap) {
  if (!hl_opcode_is_collective(inst->opcode)) return 0;
  hl_process_groups_t g;
  hl_status_t st = hl_process_groups_resolve(inst, R, P, &g);
  if (st) {
    hl_status_free(st);
    return 0;
  }
  int n = 0;
  if (g.is_permute) {
    int peers[3] = {hl_process_groups_permute_source(&g, rank), rank,
                    hl_process_groups_permute_target(&g, rank)};
    for (int i = 0; i < 3; i++) {
      bool seen = peers[i] < 0;
      for (int j = 0; j < n && !seen; j++) seen = out[j] == peers[i];
      if (!seen && n < cap) out[n++] = peers[i];
    }
  } else {
    int k = hl_process_groups_find(&g, rank, NULL);
    for (int i = k >= 0 ? g.offsets[k] : 0; k >= 0 && i < g.offsets[k + 1] && n < cap; i++)
      out[n++] = g.ranks[i];
  }
  hl_process_groups_deinit(&g);
  return n;
}

static const char *signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a signal";
  }
}

// "all-reduce.5 (all-reduce)", or "instruction id 12" without the module.
static void name_instruction(const hl_instruction_t *inst, int64_t id, hl_strbuf_t *out) {
  if (inst) hl_strbuf_appendf(out, "%s (%s)", inst->name, hl_opcode_name(inst->opcode));
  else hl_strbuf_appendf(out, "instruction id %lld", (long long)id);
}

static void report_rank(const hl_rank_state_t *s, const hl_module_t *module, int64_t R,
                        int64_t P, int64_t now_ns, const char *note, hl_strbuf_t *out);

void hl_hang_report_rank(const hl_rank_state_t *s, const hl_module_t *module, int64_t R,
                         int64_t P, int64_t now_ns, const char *note, hl_strbuf_t *out) {
  // The marker (rank_state.h): the plain instruction started last inside the
  // innermost frame is shown as the innermost frame itself, unless that one
  // waits in a collective or channel (frames that communicate have a start
  // time): then it would be the collective's reducer, and the wait is what
  // matters.
  int d = s->depth;
  if (s->phase == HL_PHASE_RUNNING && d >= 0 && d < HL_RANK_STATE_MAX_DEPTH &&
      s->frames[d].id != HL_RANK_STATE_NO_ID && (d == 0 || s->frames[d - 1].start_ns == 0)) {
    hl_rank_state_t *view = hl_malloc(sizeof(*view));
    if (view) {
      *view = *s;
      view->frames[d] = (hl_rank_frame_t){s->frames[d].id, -2, 0};
      view->depth = d + 1;
      report_rank(view, module, R, P, now_ns, note, out);
      hl_free(view);
      return;
    }
  }
  report_rank(s, module, R, P, now_ns, note, out);
}

static void report_rank(const hl_rank_state_t *s, const hl_module_t *module, int64_t R,
                        int64_t P, int64_t now_ns, const char *note, hl_strbuf_t *out) {
  if (P <= 0) P = 1;
  int depth = s->depth < HL_RANK_STATE_MAX_DEPTH ? s->depth : HL_RANK_STATE_MAX_DEPTH;
  const hl_instruction_t *top = NULL;
  if (s->phase == HL_PHASE_RUNNING && depth > 0)
    top = hl_rank_state_find_instruction(module, s->frames[depth - 1].id);
  bool waiting = top && hl_debug_opcode_communicates(top->opcode);
  int group[4096];
  int group_size = waiting ? group_of(top, s->rank, R, P, group, 4096) : 0;

  // The enclosing loops: "iteration 12 of while.3".
  hl_strbuf_t loops, key;
  hl_strbuf_init(&loops);
  hl_strbuf_init(&key);
  for (int d = 0; d < depth - 1; d++) {
    if (s->frames[d].iteration < -1) continue;
    const hl_instruction_t *w = hl_rank_state_find_instruction(module, s->frames[d].id);
    hl_strbuf_appendf(&loops, "%siteration %lld of %s", loops.length ? ", " : "",
                      (long long)s->frames[d].iteration, w ? w->name : "a while loop");
    hl_strbuf_appendf(&key, "/%lld", (long long)s->frames[d].iteration);
  }

  // Line 1-3: key, group, summary.
  if (waiting) hl_strbuf_appendf(out, "key %s@%s\n", top->name, hl_strbuf_cstr(&key));
  else if (s->phase == HL_PHASE_WAITING) hl_strbuf_append(out, "key end\n");
  else hl_strbuf_append(out, "key \n");
  hl_strbuf_append(out, "group");
  for (int i = 0; i < group_size; i++) hl_strbuf_appendf(out, " %d", group[i]);
  if (!waiting && s->phase == HL_PHASE_WAITING)
    for (int64_t r = 0; r < R * P; r++) hl_strbuf_appendf(out, " %lld", (long long)r);
  hl_strbuf_append(out, "\nsummary ");
  if (s->signal) hl_strbuf_appendf(out, "died on %s (signal %d) while it ", signal_name(s->signal), s->signal);
  if (s->phase == HL_PHASE_STARTING) {
    hl_strbuf_append(out, "had not started the program");
  } else if (s->phase == HL_PHASE_WAITING) {
    hl_strbuf_append(out, "finished the run and waits for the other ranks");
  } else if (s->phase == HL_PHASE_DONE) {
    hl_strbuf_append(out, "was past the run");
  } else if (depth == 0) {
    hl_strbuf_append(out, "was between instructions");
  } else {
    hl_strbuf_append(out, waiting ? "waits in " : "computes in ");
    if (top) hl_strbuf_append(out, top->name);
    else hl_strbuf_appendf(out, "instruction id %lld", (long long)s->frames[depth - 1].id);
    bool open = false;
    // The opcode, unless the name already says it ("all-reduce.5").
    const char *op = top ? hl_opcode_name(top->opcode) : NULL;
    if (op && strncmp(top->name, op, strlen(op)) != 0) {
      hl_strbuf_appendf(out, " (%s", op);
      open = true;
    }
    if (top && top->attrs.channel_id > 0) {
      hl_strbuf_appendf(out, "%schannel %lld", open ? ", " : " (", (long long)top->attrs.channel_id);
      open = true;
    }
    if (group_size) {
      hl_strbuf_append(out, open ? ", group " : " (group ");
      format_group(group, group_size, out);
      open = true;
    }
    if (loops.length) {
      hl_strbuf_appendf(out, "%s%s", open ? ", " : " (", hl_strbuf_cstr(&loops));
      open = true;
    }
    if (open) hl_strbuf_append(out, ")");
  }
  if (note && *note) hl_strbuf_appendf(out, " [%s]", note);
  hl_strbuf_append(out, "\n");

  // Details: who, the stack, the flight recorder.
  hl_strbuf_appendf(out, "rank %d (replica %lld, partition %lld), pid %d on %s\n", s->rank,
                    (long long)(s->rank / P), (long long)(s->rank % P), s->pid, s->host);
  if (depth > 0) hl_strbuf_append(out, "  stack (outermost first):\n");
  for (int d = 0; d < depth; d++) {
    const hl_rank_frame_t *f = &s->frames[d];
    const hl_instruction_t *inst = hl_rank_state_find_instruction(module, f->id);
    hl_strbuf_append(out, "    ");
    if (inst) hl_strbuf_append(out, hl_instruction_location(inst));
    else hl_strbuf_appendf(out, "instruction id %lld", (long long)f->id);
    if (inst && inst->attrs.channel_id > 0)
      hl_strbuf_appendf(out, ", channel %lld", (long long)inst->attrs.channel_id);
    if (f->iteration >= -1) hl_strbuf_appendf(out, ", iteration %lld", (long long)f->iteration);
    if (f->start_ns > 0)
      hl_strbuf_appendf(out, ", entered %.3f s ago", (double)(now_ns - f->start_ns) * 1e-9);
    hl_strbuf_append(out, "\n");
  }
  if (s->depth > depth) hl_strbuf_appendf(out, "    ... %d deeper frames\n", s->depth - depth);
  int64_t written = s->events_written;
  int64_t first = written > HL_RANK_STATE_EVENTS ? written - HL_RANK_STATE_EVENTS + 1 : 1;
  if (written > 0)
    hl_strbuf_appendf(out, "  last %lld collective / channel events (oldest first):\n",
                      (long long)(written - first + 1));
  for (int64_t serial = first; serial <= written; serial++) {
    const hl_rank_event_t *ev = &s->events[(serial - 1) % HL_RANK_STATE_EVENTS];
    if (ev->serial != serial) continue;
    const hl_instruction_t *inst = hl_rank_state_find_instruction(module, ev->id);
    hl_strbuf_append(out, "    ");
    name_instruction(inst, ev->id, out);
    if (ev->iteration >= 0) hl_strbuf_appendf(out, " iteration %lld", (long long)ev->iteration);
    hl_strbuf_appendf(out, ": %lld bytes", (long long)ev->bytes);
    int peers[4096];
    int n = inst ? group_of(inst, s->rank, R, P, peers, 4096) : 0;
    if (n) {
      hl_strbuf_append(out, ", peers ");
      format_group(peers, n, out);
    }
    if (ev->end_ns)
      hl_strbuf_appendf(out, ", took %.3f ms, ended %.3f s ago\n",
                        (double)(ev->end_ns - ev->start_ns) * 1e-6,
                        (double)(now_ns - ev->end_ns) * 1e-9);
    else
      hl_strbuf_appendf(out, ", started %.3f s ago, not finished\n",
                        (double)(now_ns - ev->start_ns) * 1e-9);
  }
  hl_strbuf_deinit(&loops);
  hl_strbuf_deinit(&key);
}

//===----------------------------------------------------------------------===//
// Merge
//===----------------------------------------------------------------------===//

typedef struct parsed {
  char key[256];
  char summary[1024];
  int *group;
  int group_size;
  const char *details;
} parsed_t;

static const char *read_line(const char *p, const char *prefix, char *buf, size_t cap) {
  buf[0] = '\0';
  size_t plen = strlen(prefix);
  if (!p || strncmp(p, prefix, plen) != 0) return p;
  p += plen;
  const char *nl = strchr(p, '\n');
  size_t len = nl ? (size_t)(nl - p) : strlen(p);
  snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), p);
  return nl ? nl + 1 : p + len;
}

static void parse(const char *text, parsed_t *out) {
  memset(out, 0, sizeof(*out));
  if (!text) return;
  const char *p = read_line(text, "key ", out->key, sizeof(out->key));
  char *groups = hl_malloc(65536);
  if (groups) {
    p = read_line(p, "group", groups, 65536);
    int cap = 16;
    out->group = hl_calloc((size_t)cap, sizeof(int));
    for (char *q = groups; out->group && *q;) {
      char *end;
      long v = strtol(q, &end, 10);
      if (end == q) break;
      if (out->group_size == cap) {
        int *grown = hl_realloc(out->group, sizeof(int) * (size_t)(cap *= 2));
        if (!grown) break;
        out->group = grown;
      }
      out->group[out->group_size++] = (int)v;
      q = end;
    }
    hl_free(groups);
  }
  p = read_line(p, "summary ", out->summary, sizeof(out->summary));
  out->details = p;
}

// The verb of a summary for several ranks: "waits in" -> "wait in".
static const char *plural(const char *summary) {
  static _Thread_local char buf[1024];
  static const char *const kVerbs[][2] = {
      {"waits in ", "wait in "}, {"computes in ", "compute in "},
      {"finished the run and waits ", "finished the run and wait "},
      {"had not started", "had not started"}, {"was ", "were "}};
  for (size_t i = 0; i < sizeof(kVerbs) / sizeof(kVerbs[0]); i++) {
    size_t n = strlen(kVerbs[i][0]);
    if (strncmp(summary, kVerbs[i][0], n) == 0) {
      snprintf(buf, sizeof(buf), "%s%.900s", kVerbs[i][1], summary + n);
      return buf;
    }
  }
  return summary;
}

void hl_hang_report_merge(const char *const *reports, int size, hl_strbuf_t *summary,
                          hl_strbuf_t *full) {
  parsed_t *ranks = hl_calloc((size_t)size, sizeof(parsed_t));
  bool *done = hl_calloc((size_t)size, sizeof(bool));
  int *same = hl_calloc((size_t)size, sizeof(int));
  bool *in_key = hl_calloc((size_t)size, sizeof(bool));
  if (!ranks || !done || !same || !in_key) {
    hl_strbuf_append(summary, "  (out of memory merging the reports)\n");
    goto out;
  }
  for (int r = 0; r < size; r++) parse(reports[r], &ranks[r]);
  for (int r = 0; r < size; r++) {
    if (done[r]) continue;
    int n = 0;
    for (int k = r; k < size; k++) {
      if (done[k] || (reports[k] == NULL) != (reports[r] == NULL) ||
          strcmp(ranks[k].summary, ranks[r].summary) != 0)
        continue;
      done[k] = true;
      same[n++] = k;
    }
    hl_strbuf_append(summary, n > 1 ? "  ranks " : "  rank ");
    hl_hang_format_ranks(same, n, summary);
    if (!reports[r]) {
      hl_strbuf_append(summary, n > 1 ? ": no report (their state files are missing)\n"
                                      : ": no report (its state file is missing)\n");
      continue;
    }
    hl_strbuf_appendf(summary, " %s", n > 1 ? plural(ranks[r].summary) : ranks[r].summary);
    // Members of the groups these ranks wait with that are not waiting at
    // the same instruction and iteration: the ones that never arrived.
    if (ranks[r].key[0]) {
      memset(in_key, 0, sizeof(bool) * (size_t)size);
      for (int i = 0; i < n; i++)
        for (int g = 0; g < ranks[same[i]].group_size; g++) {
          int m = ranks[same[i]].group[g];
          if (m >= 0 && m < size) in_key[m] = true;
        }
      int missing = 0;
      for (int m = 0; m < size; m++) {
        if (!in_key[m] || (reports[m] && strcmp(ranks[m].key, ranks[r].key) == 0)) continue;
        same[missing++] = m;
      }
      if (missing) {
        hl_strbuf_append(summary, missing > 1 ? "; never arrived: ranks " : "; never arrived: rank ");
        hl_hang_format_ranks(same, missing, summary);
      }
    }
    hl_strbuf_append(summary, "\n");
  }
  hl_strbuf_append(full, hl_strbuf_cstr(summary));
  for (int r = 0; r < size; r++) {
    hl_strbuf_append(full, "\n");
    if (!reports[r]) {
      hl_strbuf_appendf(full, "rank %d: no report\n", r);
      continue;
    }
    hl_strbuf_appendf(full, "rank %d %s\n", r, ranks[r].summary);
    hl_strbuf_append(full, ranks[r].details ? ranks[r].details : "");
  }
out:
  if (ranks)
    for (int r = 0; r < size; r++) hl_free(ranks[r].group);
  hl_free(ranks);
  hl_free(done);
  hl_free(same);
  hl_free(in_key);
}
