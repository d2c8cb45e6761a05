// hlo-launch's per-rank debugging session (see debug_session.h).
#define _GNU_SOURCE
#include "launcher/debug_session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  const hl_launch_options_t *o = s->options;
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

hl_status_t hl_debug_session_begin(hl_debug_session_t *s, const hl_launch_options_t *o,
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
    MPI_Bcast(shared, (int)sizeof(shared), MPI_CHAR, 0, comm);
    char *cut = strchr(shared, '\1');
    if (cut) return HL_ERROR(HL_IO_ERROR, "%s", cut + 1);
    snprintf(s->dir, sizeof(s->dir), "%.4000s", shared);
    char path[4200];
    hl_rank_state_path(s->dir, rank, path, sizeof(path));
    HL_RETURN_IF_ERROR(hl_rank_state_create(path, rank, o->program, &s->state));
    hl_watchdog_catch_fatal_signals(s->state);
  }
  if (watch || o->check_nans || o->check_infs) {
    hl_debug_observer_options_t obs = {
        .state = s->state, .check_nans = o->check_nans, .check_infs = o->check_infs};
    HL_RETURN_IF_ERROR(hl_debug_observer_create(&obs, &s->observer));
  }
  return NULL;
}

// Rank 0's watchdog, after printing the report: the launcher learns the
// status from its status file, and MPI_Abort ends every rank (the others
// are blocked, most likely in MPI).
static void end_job(void *arg, const char *report_path) {
  hl_debug_session_t *s = arg;
  (void)report_path;
  if (s->options->status_file) {
    int fd = open(s->options->status_file, O_WRONLY | O_TRUNC);
    if (fd >= 0) {
      dprintf(fd, "%d\n", HL_EXIT_HANG);
      close(fd);
    }
  }
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

void hl_debug_session_end(hl_debug_session_t *s, bool clean) {
  hl_watchdog_stop(s->watchdog);
  s->watchdog = NULL;
  hl_debug_observer_destroy(s->observer);
  s->observer = NULL;
  if (s->state) {
    hl_rank_state_set_phase(s->state, HL_PHASE_DONE);
    hl_watchdog_release_fatal_signals();
    hl_rank_state_close(s->state);
    s->state = NULL;
    if (clean) {
      char path[4200];
      hl_rank_state_path(s->dir, s->rank, path, sizeof(path));
      unlink(path);
      MPI_Barrier(s->comm);
      if (s->rank == 0 && s->made_dir) rmdir(s->dir);
    }
  }
}
