// Naming the ranks that died, from their state files (see postmortem.h).
#include "runtime/debug/postmortem.h"

#include <signal.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/debug/hang_report.h"
#include "runtime/debug/rank_state.h"

// The "summary" line of a rank's report (hang_report.h), without the prefix.
static void summary_of(const hl_rank_state_t *s, const hl_module_t *module, int64_t R,
                       int64_t P, hl_strbuf_t *out) {
  hl_rank_state_t copy = *s;
  copy.signal = 0;  // said here in words of its own
  hl_strbuf_t report;
  hl_strbuf_init(&report);
  hl_hang_report_rank(&copy, module, R, P, hl_rank_state_now_ns(), NULL, &report);
  const char *line = strstr(hl_strbuf_cstr(&report), "\nsummary ");
  if (line) {
    line += strlen("\nsummary ");
    const char *end = strchr(line, '\n');
    hl_strbuf_append_n(out, line, end ? (size_t)(end - line) : strlen(line));
  }
  hl_strbuf_deinit(&report);
}

int hl_postmortem_report(const char *dir, int size, const hl_module_t *module,
                         const char *program, int64_t R, int64_t P, hl_strbuf_t *out) {
  if (P <= 0) P = 1;
  hl_rank_state_t *states = hl_calloc((size_t)size, sizeof(hl_rank_state_t));
  bool *found = hl_calloc((size_t)size, sizeof(bool));
  int *stopped = hl_calloc((size_t)size, sizeof(int));
  int dead = 0;
  if (!states || !found || !stopped) goto out;
  for (int r = 0; r < size; r++) {
    char path[4200];
    hl_rank_state_path(dir, r, path, sizeof(path));
    hl_status_t st = hl_rank_state_read(path, &states[r]);
    found[r] = !st;
    hl_status_free(st);
  }
  // Ranks that recorded a fatal signal are the ones that died. Without one,
  // the ranks that recorded nothing while running are the candidates: a
  // SIGKILL leaves no trace, but neither does a rank that Open MPI ended
  // itself (_exit) on losing a peer before mpiexec's SIGTERM reached it, so
  // with several of them the report says so.
  bool *named = hl_calloc((size_t)size, sizeof(bool));
  if (!named) goto out;
  int caught = 0, traceless = 0;
  for (int r = 0; r < size; r++) {
    const hl_rank_state_t *s = &states[r];
    bool ran = found[r] && (s->phase == HL_PHASE_RUNNING || s->phase == HL_PHASE_WAITING);
    caught += ran && s->signal && s->signal != SIGTERM;
    traceless += ran && !s->signal && !s->exited;
  }
  for (int r = 0; r < size; r++) {
    const hl_rank_state_t *s = &states[r];
    if (!found[r] || (s->phase != HL_PHASE_RUNNING && s->phase != HL_PHASE_WAITING)) continue;
    bool died = caught ? s->signal && s->signal != SIGTERM : !s->signal && !s->exited;
    if (!died) continue;
    const hl_module_t *m = program && strcmp(s->program, program) == 0 ? module : NULL;
    hl_strbuf_appendf(out, "hlo-launch: rank %d (replica %lld, partition %lld, pid %d on %s) ",
                      r, (long long)(r / P), (long long)(r % P), s->pid, s->host);
    if (caught)
      hl_strbuf_appendf(out, "died on signal %d (%s); it ", s->signal, strsignal(s->signal));
    else if (traceless == 1)
      hl_strbuf_append(out, "died without a trace (a signal it cannot catch: SIGKILL, the OOM "
                            "killer); it ");
    else
      hl_strbuf_appendf(out, "ended without a trace (one of these %d was killed by SIGKILL or "
                             "the OOM killer, the others ended on losing it); it ",
                        traceless);
    summary_of(s, m, R, P, out);
    hl_strbuf_append(out, "\n");
    named[r] = true;
    dead++;
  }
  // The others, which ended after that (mpiexec's SIGTERM, or the loss of
  // a peer): where they were, merged.
  for (int r = 0; r < size; r++) {
    const hl_rank_state_t *s = &states[r];
    if (!dead || named[r] || !found[r] ||
        (s->phase != HL_PHASE_RUNNING && s->phase != HL_PHASE_WAITING))
      continue;
    hl_strbuf_t first;
    hl_strbuf_init(&first);
    summary_of(s, program && strcmp(s->program, program) == 0 ? module : NULL, R, P, &first);
    int n = 0;
    for (int k = r; k < size; k++) {
      const hl_rank_state_t *t = &states[k];
      if (named[k] || !found[k] || (t->phase != HL_PHASE_RUNNING && t->phase != HL_PHASE_WAITING))
        continue;
      hl_strbuf_t other;
      hl_strbuf_init(&other);
      summary_of(t, program && strcmp(t->program, program) == 0 ? module : NULL, R, P, &other);
      if (strcmp(hl_strbuf_cstr(&other), hl_strbuf_cstr(&first)) == 0) {
        stopped[n++] = k;
        named[k] = true;
      }
      hl_strbuf_deinit(&other);
    }
    hl_strbuf_append(out, n > 1 ? "hlo-launch: ranks " : "hlo-launch: rank ");
    hl_hang_format_ranks(stopped, n, out);
    hl_strbuf_appendf(out, " ended after that; %s %s\n", n > 1 ? "each" : "it",
                      hl_strbuf_cstr(&first));
    hl_strbuf_deinit(&first);
  }
  hl_free(named);
out:
  hl_free(states);
  hl_free(found);
  hl_free(stopped);
  return dead;
}
