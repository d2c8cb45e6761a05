// A runner's per-process debugging session (see debug_session.h).
#define _GNU_SOURCE
#include "runner/debug_session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/mpi_polite.h"
#include "collectives/progress_hook.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"

// Files a previous job may have left in a reused --debug-dir; a stale
// "hang" would end this job at once.
static void remove_stale_files(const char *dir, int size) {
  static const char *const kNames[] = {"hang", "hang-report.txt", "postmortem.txt"};
  char path[4200];
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, kNames[i]);
    unlink(path);
  }
  for (int r = 0; r < size; r++) {
    snprintf(path, sizeof(path), "%s/rank%d.report", dir, r);
    unlink(path);
  }
}

// Rank 0's part of begin: the directory, or an error message.
static void prepare_dir(hl_debug_session_t *s, char *error, size_t cap) {
  const hl_debug_session_options_t *o = s->options;
  if (o->debug_dir) {
    snprintf(s->dir, sizeof(s->dir), "%s", o->debug_dir);
    if (mkdir(s->dir, 0755) != 0 && errno != EEXIST)
      snprintf(error, cap, "--debug-dir %.200s: %s", s->dir, strerror(errno));
  } else {
    const char *tmp = getenv("TMPDIR");
    snprintf(s->dir, sizeof(s->dir), "%s/hlo-launch-debug-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(s->dir))
      snprintf(error, cap, "cannot create a debug directory %.200s: %s", s->dir, strerror(errno));
    else
      s->made_dir = true;
  }
  if (!error[0]) remove_stale_files(s->dir, s->size);
}

// Spans kept per rank for --trace (16 bytes each).
static const int64_t kTraceMaxSpans = 4 << 20;

// This kernel's boot id: processes that share it read one CLOCK_MONOTONIC.
static void read_boot_id(char *buf, size_t cap) {
  buf[0] = '\0';
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (!f) return;
  if (!fgets(buf, (int)cap, f)) buf[0] = '\0';
  fclose(f);
}

// Every rank's clock offset to rank 0. Ranks on rank 0's kernel (the same
// boot id) share its CLOCK_MONOTONIC: offset 0, exactly, however loaded the
// machine. Others by ping-pong (Cristian's method): of several rounds, the
// one with the shortest round trip, assuming the reply took half of it; the
// offset is then right to within half that trip, which the trace records
// (clock_uncertainty_ns) so a reader knows how far apart two ranks' events
// may really be.
static void measure_clock_offset(hl_debug_session_t *s) {
  enum { kRounds = 16 };
  int64_t origin = hl_rank_state_now_ns();
  hl_polite_bcast(&origin, 1, MPI_INT64_T, 0, s->comm);
  s->trace_origin_ns = origin;
  char boot[64], boot0[64];
  read_boot_id(boot, sizeof(boot));
  memcpy(boot0, boot, sizeof(boot));
  hl_polite_bcast(boot0, (int)sizeof(boot0), MPI_CHAR, 0, s->comm);
  // Test hook: measure even on rank 0's kernel (where the true offset is 0,
  // which the measurement must then come within its uncertainty of).
  const char *force = getenv("HL_TEST_CLOCK_PINGPONG");
  int same = boot[0] && strcmp(boot, boot0) == 0 && !(force && *force == '1');
  s->clock_offset_ns = 0;
  s->clock_uncertainty_ns = 0;
  for (int r = 1; r < s->size; r++) {
    if (s->rank != 0 && s->rank != r) continue;
    // Rank r says whether it shares rank 0's clock.
    if (s->rank == 0) hl_polite_recv(&same, 1, MPI_INT, r, 76, s->comm, MPI_STATUS_IGNORE);
    else hl_polite_send(&same, 1, MPI_INT, 0, 76, s->comm);
    if (same) continue;
    int64_t best_rtt = INT64_MAX, offset = 0;
    // Raw MPI here: a polite wait's yields would widen the round trips.
    for (int k = 0; k < kRounds; k++) {
      if (s->rank == 0) {
        int64_t dummy;
        MPI_Recv(&dummy, 1, MPI_INT64_T, r, 77, s->comm, MPI_STATUS_IGNORE);
        int64_t now = hl_rank_state_now_ns();
        MPI_Send(&now, 1, MPI_INT64_T, r, 78, s->comm);
      } else {
        int64_t t1 = hl_rank_state_now_ns(), t0;
        MPI_Send(&t1, 1, MPI_INT64_T, 0, 77, s->comm);
        MPI_Recv(&t0, 1, MPI_INT64_T, 0, 78, s->comm, MPI_STATUS_IGNORE);
        int64_t t2 = hl_rank_state_now_ns();
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          offset = t1 + (t2 - t1) / 2 - t0;
        }
      }
    }
    if (s->rank == r) {
      s->clock_offset_ns = offset;
      s->clock_uncertainty_ns = (best_rtt + 1) / 2;
    }
  }
}

static void record_progress(void *ctx, const hl_instruction_t *inst, int64_t bytes,
                            int64_t start_ns, int64_t end_ns, int tests, bool completed) {
  hl_trace_recorder_progress(ctx, inst, bytes, start_ns, end_ns, tests, completed);
}

hl_status_t hl_debug_session_begin(hl_debug_session_t *s, const hl_debug_session_options_t *o,
                                   MPI_Comm comm, int rank, int size) {
  memset(s, 0, sizeof(*s));
  s->options = o;
  s->comm = comm;
  s->rank = rank;
  s->size = size;
  bool watch = o->hang_timeout_s > 0;
  if (watch) {
    char error[512] = "";
    if (rank == 0) prepare_dir(s, error, sizeof(error));
    // One buffer: the directory, or the error after a '\1'.
    char shared[4096 + 512];
    if (rank == 0) snprintf(shared, sizeof(shared), "%.4000s%s%.500s", s->dir, error[0] ? "\1" : "", error);
    hl_polite_bcast(shared, (int)sizeof(shared), MPI_CHAR, 0, comm);
    char *cut = strchr(shared, '\1');
    if (cut) return HL_ERROR(HL_IO_ERROR, "%s", cut + 1);
    snprintf(s->dir, sizeof(s->dir), "%.4000s", shared);
    char path[4200];
    hl_rank_state_path(s->dir, rank, path, sizeof(path));
    HL_RETURN_IF_ERROR(hl_rank_state_create(path, rank, o->label, &s->state));
    hl_watchdog_catch_fatal_signals(s->state);
  }
  if (o->trace_file) {
    HL_RETURN_IF_ERROR(hl_trace_recorder_create(kTraceMaxSpans, &s->trace));
    measure_clock_offset(s);
    // The progress thread's track: the collectives report through the hook.
    s->progress_hook = (hl_progress_hook_t){.span = record_progress, .ctx = s->trace};
    hl_collectives_set_progress_hook(&s->progress_hook);
  }
  if (watch || o->check_nans || o->check_infs || o->trace_file) {
    hl_debug_observer_options_t obs = {.state = s->state,
                                       .check_nans = o->check_nans,
                                       .check_infs = o->check_infs,
                                       .trace = s->trace};
    HL_RETURN_IF_ERROR(hl_debug_observer_create(&obs, &s->observer));
  }
  return NULL;
}

// Rank 0's watchdog, after printing the report: the session's owner ends
// the job (hlo-launch first tells its launcher the status), else MPI_Abort
// ends every rank (the others are blocked, most likely in MPI).
static void end_job(void *arg, const char *report_path) {
  hl_debug_session_t *s = arg;
  (void)report_path;
  if (s->options->end_job) s->options->end_job(s->options->end_job_ctx);
  MPI_Abort(MPI_COMM_WORLD, HL_EXIT_HANG);
}

hl_status_t hl_debug_session_start(hl_debug_session_t *s, const hl_module_t *module,
                                   int64_t num_replicas, int64_t num_partitions) {
  if (!s->state || s->watchdog) return NULL;
  hl_watchdog_config_t config = {
      .dir = s->dir, .rank = s->rank, .size = s->size,
      .num_replicas = num_replicas, .num_partitions = num_partitions,
      .timeout_s = s->options->hang_timeout_s, .state = s->state, .module = module,
      .out = stderr, .end_job = end_job, .end_job_arg = s,
  };
  return hl_watchdog_start(&config, &s->watchdog);
}

hl_exec_observer_t *hl_debug_session_observer(const hl_debug_session_t *s) {
  return s->observer ? hl_debug_observer_base(s->observer) : NULL;
}

void hl_debug_session_phase(hl_debug_session_t *s, hl_rank_phase_t phase) {
  hl_rank_state_set_phase(s->state, phase);
}

hl_status_t hl_debug_session_write_trace(hl_debug_session_t *s, int64_t R, int64_t P,
                                         const hl_channel_env_t *channels) {
  if (!s->trace) return NULL;
  // Every collective ended with the run: the progress thread is idle.
  hl_collectives_set_progress_hook(NULL);
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  // Rank clocks minus offset = rank 0's clock.
  hl_trace_recorder_set_clock_uncertainty(s->trace, s->clock_uncertainty_ns);
  hl_trace_recorder_write_events(s->trace, s->rank, R, P, -s->clock_offset_ns,
                                 s->trace_origin_ns, channels, &sb);
  long long mine = sb.failed ? 0 : (long long)sb.length;
  long long *lengths = s->rank == 0 ? hl_calloc((size_t)s->size, sizeof(long long)) : NULL;
  hl_polite_gather(&mine, 1, MPI_LONG_LONG, lengths, 1, MPI_LONG_LONG, 0, s->comm);
  hl_status_t st = NULL;
  FILE *f = NULL;
  if (s->rank == 0) {
    f = fopen(s->options->trace_file, "w");
    if (!f)
      st = HL_ERROR(HL_IO_ERROR, "--trace %s: %s", s->options->trace_file, strerror(errno));
    else
      fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
  }
  // One rank at a time, so no int count limit applies to the whole file.
  for (int r = 0; r < s->size; r++) {
    if (s->rank == 0) {
      char *text = NULL;
      if (r == 0) {
        text = sb.data;
      } else if (lengths && lengths[r] > 0) {
        text = hl_malloc((size_t)lengths[r]);
        for (long long off = 0; off < lengths[r]; off += 1 << 28) {
          int n = lengths[r] - off < (1 << 28) ? (int)(lengths[r] - off) : 1 << 28;
          hl_polite_recv(text ? text + off : NULL, text ? n : 0, MPI_CHAR, r, 79, s->comm,
                   MPI_STATUS_IGNORE);
        }
      }
      if (f && text && lengths && lengths[r] > 0) {
        if (r) fputs(",\n", f);
        fwrite(text, 1, (size_t)lengths[r], f);
      }
      if (r) hl_free(text);
    } else if (s->rank == r && mine > 0) {
      for (long long off = 0; off < mine; off += 1 << 28) {
        int n = mine - off < (1 << 28) ? (int)(mine - off) : 1 << 28;
        hl_polite_send(sb.data + off, n, MPI_CHAR, 0, 79, s->comm);
      }
    }
  }
  if (f) {
    fputs("\n]}\n", f);
    if (fclose(f) != 0 && !st)
      st = HL_ERROR(HL_IO_ERROR, "--trace %s: cannot write", s->options->trace_file);
  }
  hl_free(lengths);
  hl_strbuf_deinit(&sb);
  return st;
}

void hl_debug_session_end(hl_debug_session_t *s, bool clean) {
  hl_watchdog_stop(s->watchdog);
  s->watchdog = NULL;
  hl_debug_observer_destroy(s->observer);
  s->observer = NULL;
  if (s->trace) hl_collectives_set_progress_hook(NULL);
  hl_trace_recorder_destroy(s->trace);
  s->trace = NULL;
  if (s->state) {
    hl_rank_state_set_phase(s->state, HL_PHASE_DONE);
    hl_watchdog_release_fatal_signals();
    hl_rank_state_close(s->state);
    s->state = NULL;
    if (clean) {
      char path[4200];
      hl_rank_state_path(s->dir, s->rank, path, sizeof(path));
      unlink(path);
      hl_polite_barrier(s->comm);
      if (s->rank == 0 && s->made_dir) rmdir(s->dir);
    }
  }
}
