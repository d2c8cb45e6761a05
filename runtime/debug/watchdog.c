// The hang watchdog thread (see watchdog.h).
#define _GNU_SOURCE
#include "runtime/debug/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "runtime/debug/hang_report.h"

// How long rank 0 waits for the other ranks' reports once a hang is found:
// long enough for a loaded machine's watchdog threads to wake, short enough
// not to keep the user waiting for a dead rank.
static const double kReportGraceSeconds = 3.0;
static const long kPollNanoseconds = 50 * 1000 * 1000;

struct hl_watchdog {
  hl_watchdog_config_t config;
  pthread_t thread;
  atomic_bool stop;
};

static void path_in(const hl_watchdog_t *w, const char *name, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/%s", w->config.dir, name);
}

static void report_path(const hl_watchdog_t *w, int rank, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/rank%d.report", w->config.dir, rank);
}

// Blocked: inside a communicating instruction, or at the end-of-run wait,
// for longer than the timeout.
static bool blocked_too_long(const hl_watchdog_t *w, int64_t now) {
  const hl_rank_state_t *s = w->config.state;
  int64_t limit = (int64_t)(w->config.timeout_s * 1e9);
  int phase = __atomic_load_n(&s->phase, __ATOMIC_ACQUIRE);
  if (phase == HL_PHASE_WAITING) return now - s->phase_ns > limit;
  if (phase != HL_PHASE_RUNNING) return false;
  int depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
  if (depth <= 0 || depth > HL_RANK_STATE_MAX_DEPTH) return false;
  int64_t start = s->frames[depth - 1].start_ns;
  return start > 0 && now - start > limit;
}

// Writes `text` to `path` through a temporary name, so readers never see half.
static bool write_atomically(const char *path, const char *text) {
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t left = strlen(text);
  bool ok = true;
  while (left && ok) {
    ssize_t n = write(fd, text, left);
    ok = n > 0;
    if (ok) {
      text += n;
      left -= (size_t)n;
    }
  }
  ok = close(fd) == 0 && ok;
  return ok && rename(tmp, path) == 0;
}

static char *read_whole(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) hl_strbuf_append_n(&sb, buf, (size_t)n);
  close(fd);
  if (sb.failed) {
    hl_strbuf_deinit(&sb);
    return NULL;
  }
  return hl_strbuf_take(&sb);
}

static void write_own_report(const hl_watchdog_t *w) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_rank_state_t copy = *w->config.state;
  hl_hang_report_rank(&copy, w->config.module, w->config.num_replicas, w->config.num_partitions,
                      hl_rank_state_now_ns(), NULL, &sb);
  char path[4096];
  report_path(w, w->config.rank, path, sizeof(path));
  if (!sb.failed) write_atomically(path, hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
}

// A rank that wrote no report: described from its state file, if any.
static char *describe_silent_rank(const hl_watchdog_t *w, int rank) {
  char path[4096];
  hl_rank_state_path(w->config.dir, rank, path, sizeof(path));
  hl_rank_state_t s;
  hl_status_t st = hl_rank_state_read(path, &s);
  if (st) {
    hl_status_free(st);
    return NULL;
  }
  char host[64];
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = '\0';
  const char *note = "did not answer; from its state file";
  if (strncmp(host, s.host, sizeof(host)) == 0 && s.pid > 0 && kill(s.pid, 0) != 0 &&
      errno == ESRCH)
    note = "its process is gone; from its state file";
  // Instruction ids mean the same only in the same program (MPMD).
  const hl_module_t *module =
      strcmp(s.program, w->config.state->program) == 0 ? w->config.module : NULL;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_hang_report_rank(&s, module, w->config.num_replicas, w->config.num_partitions,
                      hl_rank_state_now_ns(), note, &sb);
  if (sb.failed) {
    hl_strbuf_deinit(&sb);
    return NULL;
  }
  return hl_strbuf_take(&sb);
}

static bool all_reports_present(const hl_watchdog_t *w) {
  char path[4096];
  for (int r = 0; r < w->config.size; r++) {
    report_path(w, r, path, sizeof(path));
    if (access(path, R_OK) != 0) return false;
  }
  return true;
}

// Rank 0: merges, prints, writes DIR/hang-report.txt, ends the job.
static void finish_report(hl_watchdog_t *w, const char *trigger) {
  int size = w->config.size;
  char **reports = hl_calloc((size_t)size, sizeof(char *));
  if (!reports) return;
  for (int r = 0; r < size; r++) {
    char path[4096];
    report_path(w, r, path, sizeof(path));
    reports[r] = read_whole(path);
    if (!reports[r]) reports[r] = describe_silent_rank(w, r);
  }
  hl_strbuf_t summary, full;
  hl_strbuf_init(&summary);
  hl_strbuf_init(&full);
  hl_strbuf_appendf(&summary, "hang: %s made no collective or channel progress for %g s "
                    "(--hang-timeout); every rank's state:\n", trigger, w->config.timeout_s);
  hl_hang_report_merge((const char *const *)reports, size, &summary, &full);
  char path[4096];
  path_in(w, "hang-report.txt", path, sizeof(path));
  bool written = !full.failed && write_atomically(path, hl_strbuf_cstr(&full));
  FILE *out = w->config.out ? w->config.out : stderr;
  // Each line gets the launcher's prefix, as its other messages have.
  const char *text = hl_strbuf_cstr(&summary);
  while (*text) {
    const char *nl = strchr(text, '\n');
    int len = nl ? (int)(nl - text) : (int)strlen(text);
    fprintf(out, "hlo-launch: %.*s\n", len, text);
    text += len + (nl ? 1 : 0);
  }
  if (written)
    fprintf(out, "hlo-launch: the full report (every rank's stack and last collectives): %s\n",
            path);
  fflush(out);
  for (int r = 0; r < size; r++) hl_free(reports[r]);
  hl_free(reports);
  hl_strbuf_deinit(&summary);
  hl_strbuf_deinit(&full);
  if (w->config.end_job) w->config.end_job(w->config.end_job_arg, written ? path : NULL);
}

static void *watch(void *arg) {
  hl_watchdog_t *w = arg;
  char hang_path[4096];
  path_in(w, "hang", hang_path, sizeof(hang_path));
  bool triggered = false, reported = false;
  int64_t triggered_ns = 0;
  char trigger[128] = "a rank";
  while (!atomic_load(&w->stop)) {
    struct timespec pause = {0, kPollNanoseconds};
    nanosleep(&pause, NULL);
    int64_t now = hl_rank_state_now_ns();
    if (!triggered && blocked_too_long(w, now)) {
      int fd = open(hang_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd >= 0) {
        dprintf(fd, "rank %d\n", w->config.rank);
        close(fd);
      }
      triggered = true;
    }
    if (!triggered && access(hang_path, F_OK) == 0) triggered = true;
    if (!triggered) continue;
    if (!reported) {
      write_own_report(w);
      reported = true;
      triggered_ns = now;
      if (w->config.rank != 0) break;  // rank 0 ends the job
    }
    if (all_reports_present(w) || (double)(now - triggered_ns) * 1e-9 > kReportGraceSeconds) {
      char *who = read_whole(hang_path);
      if (who) {
        char *nl = strchr(who, '\n');
        if (nl) *nl = '\0';
        snprintf(trigger, sizeof(trigger), "%s", who);
        hl_free(who);
      }
      finish_report(w, trigger);
      break;
    }
  }
  return NULL;
}

hl_status_t hl_watchdog_start(const hl_watchdog_config_t *config, hl_watchdog_t **out) {
  *out = NULL;
  if (!config->dir || !config->state || config->timeout_s <= 0)
    return HL_INVALID("hang watchdog: needs a directory, a rank state and a positive timeout");
  hl_watchdog_t *w = hl_calloc(1, sizeof(*w));
  if (!w) return HL_OOM();
  w->config = *config;
  atomic_init(&w->stop, false);
  int err = pthread_create(&w->thread, NULL, watch, w);
  if (err) {
    hl_free(w);
    return HL_ERROR(HL_INTERNAL, "hang watchdog: cannot start its thread: %s", strerror(err));
  }
  *out = w;
  return NULL;
}

void hl_watchdog_stop(hl_watchdog_t *w) {
  if (!w) return;
  atomic_store(&w->stop, true);
  pthread_join(w->thread, NULL);
  hl_free(w);
}

//===----------------------------------------------------------------------===//
// Fatal signals
//===----------------------------------------------------------------------===//

static hl_rank_state_t *g_signal_state;
static const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2};
static struct sigaction g_previous[sizeof(kFatalSignals) / sizeof(kFatalSignals[0])];

static void on_fatal_signal(int sig) {
  if (g_signal_state && !g_signal_state->signal) g_signal_state->signal = sig;
  for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(kFatalSignals[0]); i++)
    if (kFatalSignals[i] == sig) sigaction(sig, &g_previous[i], NULL);
  raise(sig);  // delivered on return, to the previous handler or the default action
}

static bool g_installed, g_atexit_registered;

static void on_exit_record(void) {
  if (g_signal_state) g_signal_state->exited = 1;
}

void hl_watchdog_catch_fatal_signals(hl_rank_state_t *state) {
  g_signal_state = state;
  if (!g_atexit_registered) g_atexit_registered = atexit(on_exit_record) == 0;
  if (g_installed) return;
  g_installed = true;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(kFatalSignals[0]); i++)
    sigaction(kFatalSignals[i], &sa, &g_previous[i]);
}

void hl_watchdog_release_fatal_signals(void) {
  if (!g_installed) return;
  for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(kFatalSignals[0]); i++)
    sigaction(kFatalSignals[i], &g_previous[i], NULL);
  g_installed = false;
  g_signal_state = NULL;
}
