#define _GNU_SOURCE  // pipe2

#include "launcher/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collectives/groups.h"
#include "launcher/batch_list.h"
#include "launcher/binding.h"
#include "launcher/global_io.h"
#include "launcher/debug_launcher.h"
#include "runtime/debug/collective_check.h"
#include "launcher/ompi_session.h"
#include "runtime/spmd/grid.h"
#include "launcher/inputs.h"
#include "launcher/outputs.h"
#include "runtime/base/alloc.h"
#include "runtime/base/strbuf.h"
#include "launcher/partition_hook.h"
#include "launcher/starter.h"
#include "launcher/host_watch.h"
#include "runtime/custom_calls/check.h"
#include "runtime/custom_calls/ffi_plugin.h"
#include "runtime/loader/program_loader.h"
#include "runtime/verifier/verifier.h"

bool hl_spawn_inside_mpi_job(void) {
  static const char *const kRankVars[] = {
      "OMPI_COMM_WORLD_SIZE",  // Open MPI's mpirun / mpiexec
      "PMIX_RANK",             // any PMIx launcher (mpirun, srun --mpi=pmix)
      "PMI_RANK",              // MPICH's Hydra (and Intel MPI's), srun --mpi=pmi2
      "PMI_SIZE",              // the same, with PMI_FD: Hydra's PMI-1 wire protocol
      "PMI_FD",
      "MPI_LOCALNRANKS",       // Hydra: the ranks on this node
      "MV2_COMM_WORLD_RANK",   // MVAPICH's mpirun_rsh
  };
  for (size_t i = 0; i < sizeof(kRankVars) / sizeof(kRankVars[0]); i++)
    if (getenv(kRankVars[i])) return true;
  // A task of a srun job step (srun sets SLURM_STEP_ID for its tasks; a
  // batch script or salloc shell has a job but no step of its own).
  return getenv("SLURM_PROCID") && getenv("SLURM_STEP_ID") && getenv("SLURM_STEP_NUM_TASKS");
}

hl_launcher_kind_t hl_spawn_choose_launcher(const hl_launch_options_t *o) {
  if (o->launcher != HL_LAUNCHER_AUTO) return o->launcher;
  // Inside an allocation (salloc, sbatch) srun places the ranks on the
  // allocated nodes; explicit hosts mean mpiexec.
  const char *job = getenv("SLURM_JOB_ID");
  if (job && *job && !o->hosts && !o->hostfile) return HL_LAUNCHER_SRUN;
  return HL_LAUNCHER_MPIRUN;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("hlo-launch: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

static int fail_status(hl_status_t st) {
  int code = fail("%s", hl_status_message(st));
  hl_status_free(st);
  return code;
}

//===----------------------------------------------------------------------===//
// The mpiexec command line
//===----------------------------------------------------------------------===//

typedef struct argv_builder {
  char **v;
  int n, cap;
  bool failed;
} argv_builder_t;

static void push(argv_builder_t *b, const char *s) {
  if (b->failed) return;
  if (b->n + 2 > b->cap) {
    int cap = b->cap ? b->cap * 2 : 32;
    char **grown = hl_realloc(b->v, sizeof(char *) * (size_t)cap);
    if (!grown) {
      b->failed = true;
      return;
    }
    b->v = grown;
    b->cap = cap;
  }
  b->v[b->n] = hl_strdup(s);
  if (!b->v[b->n]) {
    b->failed = true;
    return;
  }
  b->v[++b->n] = NULL;
}

static void builder_free(argv_builder_t *b) {
  for (int i = 0; i < b->n; i++) hl_free(b->v[i]);
  hl_free(b->v);
}

static void self_path(char *buf, size_t cap, const char *argv0) {
  ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
  if (n > 0) {
    buf[n] = '\0';
    return;
  }
  snprintf(buf, cap, "%s", argv0);
}

static void push_srun(const hl_launch_options_t *o, const hl_starter_t *s, argv_builder_t *b) {
  push(b, "srun");
  // -K: one task that fails ends the step at once, instead of leaving the
  // others blocked in a collective.
  push(b, "-K");
  // The PMI the library speaks: Debian's Open MPI and most site builds
  // PMIx only, MPICH the PMI-1 wire protocol Slurm's pmi2 plugin serves; a
  // user's own SLURM_MPI_TYPE wins.
  const char *mpi_type = getenv("SLURM_MPI_TYPE");
  const char *plugin = hl_starter_srun_mpi_plugin(s->family);
  if ((!mpi_type || !*mpi_type) && plugin) {
    char flag[32];
    snprintf(flag, sizeof(flag), "--mpi=%s", plugin);
    push(b, flag);
  }
  // Each rank binds itself (--bind-to); Slurm's own binding would only fight it.
  if (o->bind_to != HL_BIND_NONE) push(b, "--cpu-bind=none");
  for (int i = 0; i < o->mpiexec_arg_count; i++) push(b, o->mpiexec_args[i]);
}

// MPICH's Hydra (and Intel MPI's): no root or slot checks to lift, and it
// forwards the whole environment by itself. `host_watch`: the launcher's
// address for the ranks (host_watch.h), NULL for none.
static void push_hydra(const hl_launch_options_t *o, const hl_starter_t *s, const char *host_watch,
                       argv_builder_t *b) {
  push(b, s->command);
  if (host_watch) {
    push(b, "-genv");
    push(b, HL_HOST_WATCH_ENV);
    push(b, host_watch);
  }
  // The ranks bind themselves (binding.c), knowing their node-local rank.
  push(b, "-bind-to");
  push(b, "none");
  if (o->hosts) {
    push(b, "-hosts");
    push(b, o->hosts);
  }
  if (o->hostfile) {
    push(b, "-f");
    push(b, o->hostfile);
  }
  for (int i = 0; i < o->mpiexec_arg_count; i++) push(b, o->mpiexec_args[i]);
}

static void push_mpiexec(const hl_launch_options_t *o, const hl_starter_t *s, argv_builder_t *b) {
  push(b, s->command);
  // Open MPI refuses root without this; containers and CI run as root.
  if (geteuid() == 0) push(b, "--allow-run-as-root");
  // More ranks than cores is the normal case on a laptop or CI box; Open MPI
  // then also yields when idle instead of spinning.
  push(b, "--oversubscribe");
  // The ranks bind themselves (binding.c), knowing their node-local rank.
  push(b, "--bind-to");
  push(b, "none");
  if (o->hosts) {
    push(b, "--host");
    push(b, o->hosts);
  }
  if (o->hostfile) {
    push(b, "--hostfile");
    push(b, o->hostfile);
  }
  if (o->hosts || o->hostfile) {
    // Without a TCP keepalive a host whose link is cut is noticed only after
    // about 8 minutes; with it (3 s idle, then 3 probes 1 s apart), after about 6 s.
    static const char *const kKeepalive[][2] = {{"oob_tcp_keepalive_time", "3"},
                                                 {"oob_tcp_keepalive_intvl", "1"},
                                                 {"oob_tcp_keepalive_probes", "3"}};
    for (size_t i = 0; i < sizeof(kKeepalive) / sizeof(kKeepalive[0]); i++) {
      push(b, "--mca");
      push(b, kKeepalive[i][0]);
      push(b, kKeepalive[i][1]);
    }
  }
  for (int i = 0; i < o->mpiexec_arg_count; i++) push(b, o->mpiexec_args[i]);
}

static void build_command(const hl_launch_options_t *o, const hl_starter_t *starter,
                          const hl_grid_t *grid, int argc, char **argv, const char *status_file,
                          const char *debug_dir, const char *const *extra, const char *host_watch,
                          argv_builder_t *b) {
  char count[32], self[4096];
  if (hl_spawn_choose_launcher(o) == HL_LAUNCHER_SRUN)
    push_srun(o, starter, b);
  else if (starter->family == HL_MPI_FAMILY_MPICH)
    push_hydra(o, starter, host_watch, b);
  else
    push_mpiexec(o, starter, b);
  self_path(self, sizeof(self), argv[0]);
  // MPMD: one mpiexec app context per program ("-n N self ... : -n M self
  // ..."); each gets the options before the first ':' plus the job's total
  // -np and its own program, so ranks of every context agree on the grid.
  int parts = o->mpmd_count > 1 ? o->mpmd_count : 1;
  int options_end = argc;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], ":") == 0) {
      options_end = i;
      break;
    }
  for (int k = 0; k < parts; k++) {
    if (k) push(b, ":");
    snprintf(count, sizeof(count), "%lld",
             (long long)(parts > 1 ? o->mpmd_np[k] : grid->processes));
    push(b, "-n");
    push(b, count);
    push(b, self);
    push(b, "--worker");
    if (status_file) {
      push(b, "--status-file");
      push(b, status_file);
    }
    if (debug_dir && *debug_dir && !o->debug_dir) {
      push(b, "--debug-dir");
      push(b, debug_dir);
    }
    for (int i = 0; extra && extra[i]; i++) push(b, extra[i]);
    for (int i = 1; i < options_end; i++)
      if (strcmp(argv[i], "--dry-run") != 0) push(b, argv[i]);
    if (parts > 1) {
      snprintf(count, sizeof(count), "%lld", (long long)grid->processes);
      push(b, "--np");
      push(b, count);
      push(b, "--mpmd-program");
      push(b, o->mpmd_programs[k]);
    }
  }
}

// Prints `s` so a POSIX shell reads it back as one word.
static void print_quoted(FILE *out, const char *s) {
  bool plain = *s != '\0';
  for (const char *p = s; *p && plain; p++)
    plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%^",
                   *p) != NULL;
  if (plain) {
    fputs(s, out);
    return;
  }
  fputc('\'', out);
  for (const char *p = s; *p; p++) {
    if (*p == '\'')
      fputs("'\\''", out);
    else
      fputc(*p, out);
  }
  fputc('\'', out);
}

//===----------------------------------------------------------------------===//
// Running mpiexec
//===----------------------------------------------------------------------===//

static volatile sig_atomic_t g_child = 0;
static volatile sig_atomic_t g_timed_out = 0;
static volatile sig_atomic_t g_stop_signal = 0;  // the first SIGINT / SIGTERM / SIGHUP received
static bool g_host_lost = false;  // the host watch stopped the job

// Termination requests for the launcher are passed to mpiexec, which stops
// the ranks; a Ctrl-C from the terminal already reaches mpiexec through the
// process group, so only signals sent by kill() are forwarded.
static void forward_signal(int sig, siginfo_t *info, void *context) {
  (void)context;
  if (!g_stop_signal) g_stop_signal = sig;
  if (g_child > 0 && (info->si_code == SI_USER || info->si_code == SI_QUEUE))
    kill((pid_t)g_child, sig);
}

static void on_alarm(int sig) {
  (void)sig;
  if (g_child <= 0) return;
  if (!g_timed_out) {
    g_timed_out = 1;
    kill((pid_t)g_child, SIGTERM);
    alarm(5);  // then SIGKILL, as mpirun can ignore SIGTERM when ranks hang
  } else {
    kill((pid_t)g_child, SIGKILL);
  }
}

static void install_handlers(double timeout_s) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  if (timeout_s > 0) {
    struct sigaction al;
    memset(&al, 0, sizeof(al));
    al.sa_handler = on_alarm;
    al.sa_flags = SA_RESTART;
    sigemptyset(&al.sa_mask);
    sigaction(SIGALRM, &al, NULL);
    struct itimerval t;
    memset(&t, 0, sizeof(t));
    t.it_value.tv_sec = (time_t)timeout_s;
    t.it_value.tv_usec = (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6);
    if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0) t.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &t, NULL);
  }
}

// The status rank 0 left in the file: -1 when there is none.
static int read_status_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int code = -1;
  if (fscanf(f, "%d", &code) != 1) code = -1;
  fclose(f);
  return code;
}

// SIGKILLs every process whose parent is this one (orphaned ranks that a
// child subreaper inherited).
static void kill_adopted_children(void) {
  DIR *proc = opendir("/proc");
  if (!proc) return;
  pid_t self = getpid();
  struct dirent *e;
  while ((e = readdir(proc)) != NULL) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')');  // after "pid (comm)"
    int ppid = 0;
    if (close_paren && sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == (int)self)
      kill((pid_t)atoi(e->d_name), SIGKILL);
  }
  closedir(proc);
}

// mpiexec may return before a rank it signalled has finished dying; such
// ranks are re-parented to the launcher (a child subreaper, set before the
// fork), which waits for them here so that no rank outlives it. After
// `grace_s` what is left is killed.
static void reap_orphaned_ranks(double grace_s) {
  struct timespec start, now, nap = {0, 10 * 1000 * 1000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    pid_t r = waitpid(-1, NULL, WNOHANG);
    if (r > 0) continue;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return;  // ECHILD: none left
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec) >
        grace_s)
      break;
    nanosleep(&nap, NULL);
  }
  // Killing a starter's process (a Hydra proxy) hands its ranks to us in
  // turn: killed on the next round.
  do {
    kill_adopted_children();
  } while (waitpid(-1, NULL, 0) > 0 || errno == EINTR);
}

// Copies the starter's stderr (read from `fd`) to ours as it comes, keeping
// its first bytes in `head`, until `pid` has exited and the pipe is drained.
// Returns the exit status from waitpid.
static int relay_stderr(int fd, pid_t pid, hl_strbuf_t *head) {
  enum { kHeadBytes = 1 << 16 };
  int wstatus = 0;
  bool exited = false;
  char buf[4096];
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, exited ? 0 : 200);
    if (ready > 0) {
      ssize_t k = read(fd, buf, sizeof(buf));
      if (k > 0) {
        for (ssize_t done = 0; done < k;) {
          ssize_t w = write(STDERR_FILENO, buf + done, (size_t)(k - done));
          if (w <= 0 && errno != EINTR) break;
          if (w > 0) done += w;
        }
        if (head->length < kHeadBytes) hl_strbuf_append_n(head, buf, (size_t)k);
        continue;
      }
      if (k < 0 && errno == EINTR) continue;
      if (!exited) {  // EOF before the exit: wait for it
        while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
      }
      return wstatus;
    }
    if (ready < 0 && errno != EINTR) break;
    if (exited) return wstatus;  // drained; a grandchild may keep the pipe open
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) exited = true;
  }
  if (!exited)
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  return wstatus;
}

// Waits for `pid` while serving the host watch; when it reports a rank's host
// lost, says so and stops the starter (SIGTERM, then SIGKILL after 2 s:
// Hydra waits for the proxy it can no longer reach).
static int wait_watched(pid_t pid, hl_host_watch_t *host_watch) {
  int wstatus = 0;
  double kill_in = -1;  // seconds until SIGKILL, once stopping
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) return wstatus;
    char msg[1024];
    if (kill_in < 0 && hl_host_watch_poll(host_watch, 200, msg, sizeof(msg))) {
      fail("%s", msg);
      g_host_lost = true;
      kill(pid, SIGTERM);
      kill_in = 2.0;
    } else if (kill_in >= 0) {
      struct timespec nap = {0, 100 * 1000 * 1000};
      nanosleep(&nap, NULL);
      if ((kill_in -= 0.1) <= 0) kill(pid, SIGKILL);
    }
  }
}

// Runs the starter and waits for it; with `stderr_head`, its stderr passes
// through this process and its first bytes are kept there; with `host_watch`,
// a rank's host that stops answering stops the job (host_watch.h).
static int run_mpiexec(const hl_launch_options_t *o, char **cmd, const char *status_file,
                       hl_strbuf_t *stderr_head, hl_host_watch_t *host_watch) {
  // A close-on-exec pipe tells the parent whether exec itself failed.
  int report[2], errpipe[2] = {-1, -1};
  if (pipe2(report, O_CLOEXEC) != 0) return fail("pipe: %s", strerror(errno));
  if (stderr_head && pipe2(errpipe, O_CLOEXEC) != 0) stderr_head = NULL;
  pid_t parent = getpid();
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // orphaned ranks come back to us (reap_orphaned_ranks)
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return fail("fork: %s", strerror(errno));
  if (pid == 0) {
    close(report[0]);
    if (stderr_head) close(errpipe[0]);
    // If the launcher is killed outright, mpiexec stops the job.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    if (stderr_head) dup2(errpipe[1], STDERR_FILENO);  // dup2 clears close-on-exec
    execvp(cmd[0], cmd);
    int err = errno;
    ssize_t unused = write(report[1], &err, sizeof(err));
    (void)unused;
    _exit(127);
  }
  g_child = pid;
  close(report[1]);
  install_handlers(o->timeout_s);
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(report[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  int wstatus = 0;
  if (stderr_head) {
    close(errpipe[1]);
    wstatus = relay_stderr(errpipe[0], pid, stderr_head);
    close(errpipe[0]);
  } else if (host_watch) {
    wstatus = wait_watched(pid, host_watch);
  } else {
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
  }
  g_child = 0;
  // The ranks of a lost host that the launcher started (through an rsh
  // agent) may never end: they are not waited for.
  reap_orphaned_ranks(g_host_lost ? 1.0 : 10.0);
  if (n == (ssize_t)sizeof(exec_errno))
    return fail("cannot run '%s': %s (is %s installed? --mpiexec PATH or %s=PATH selects "
                "another)",
                cmd[0], strerror(exec_errno), hl_mpi_family_name(hl_mpi_library_family()),
                HL_STARTER_ENV);
  if (g_timed_out) {
    fail("the job did not finish within --timeout %g s; it was stopped", o->timeout_s);
    return 124;
  }
  if (g_host_lost) return 255;  // as Hydra's own status for a lost rank
  if (g_stop_signal) {
    // Shells expect 128 + the signal number (130 for Ctrl-C, 143 for kill).
    int sig = g_stop_signal;
    fail("%s received; the job was stopped", sig == SIGINT    ? "interrupted: SIGINT"
                                             : sig == SIGTERM ? "terminated: SIGTERM"
                                                              : "hung up: SIGHUP");
    return 128 + sig;
  }
  int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  int reported = status_file ? read_status_file(status_file) : -1;
  if (code == 0 && reported > 0) code = reported;
  if (code >= 128 && reported < 0)
    // A rank or host was lost; mpiexec / srun named it above.
    fail("the job ended abnormally: %s exited with status %d%s", cmd[0], code,
         code > 128 && code < 160 ? " (a process was killed by a signal)" : "");
  return code;
}

// Whether the starter is Open MPI's mpiexec, which gets a private session
// directory per launch (ompi_session.h). Remote hosts are left alone: the
// base would be made on them and never removed.
static bool starter_is_open_mpi(const hl_launch_options_t *o, const hl_starter_t *starter) {
  return hl_spawn_choose_launcher(o) == HL_LAUNCHER_MPIRUN &&
         starter->family == HL_MPI_FAMILY_OPENMPI && !o->hosts && !o->hostfile;
}

// Runs the job; with Open MPI in a session directory of its own, removed at
// the end however the job ended, and once more when the starter failed
// before any rank ran for a reason known to be transient.
static int run_job(const hl_launch_options_t *o, const hl_starter_t *starter, char **cmd,
                   const char *status_file, hl_host_watch_t *host_watch) {
  if (!starter_is_open_mpi(o, starter)) return run_mpiexec(o, cmd, status_file, NULL, host_watch);
  int code = 0;
  for (int attempt = 0; attempt < 2; attempt++) {
    hl_ompi_session_t session;
    hl_ompi_session_begin(&session);
    hl_strbuf_t head;
    hl_strbuf_init(&head);
    code = run_mpiexec(o, cmd, status_file, &head, NULL);
    hl_ompi_session_end(&session);
    bool retry = attempt == 0 && code != 0 && !g_timed_out && !g_stop_signal &&
                 (!status_file || read_status_file(status_file) < 0) &&
                 hl_ompi_startup_race(hl_strbuf_cstr(&head), head.length);
    hl_strbuf_deinit(&head);
    if (!retry) break;
    fail("Open MPI failed to start on its session directory (a known race with another job "
         "starting or ending at the same moment; no rank ran); starting the job once more");
  }
  return code;
}

// Hydra (MPICH's starter) exits with the bare number of the signal that
// killed a rank (9, 11) where Open MPI's mpiexec and shells say 128 + it.
// The ranks themselves exit 0..4 (the status file carries their codes), so
// 5..63 from Hydra with no status reported is a signal; 255 is Hydra's own
// failure, which includes losing a rank on another host (its proxies abort).
static int hydra_status(const hl_launch_options_t *o, const hl_starter_t *starter,
                        const char *cmd0, int code, const char *status_file, bool *out_lost) {
  *out_lost = false;
  if (starter->family != HL_MPI_FAMILY_MPICH || hl_spawn_choose_launcher(o) == HL_LAUNCHER_SRUN ||
      code < 5 || (status_file && read_status_file(status_file) >= 0))
    return code;
  if (code == 255) {
    *out_lost = true;
    return code;
  }
  if (code >= 64) return code;
  fail("the job ended abnormally: %s reported a process killed by signal %d", cmd0, code);
  return 128 + code;
}

// Found before any rank starts: collective groups that do not fit the grid
// (one message naming the -np / --replicas / --partitions to use). Unknown
// custom-call targets are found by hl_custom_calls_check_module.
static hl_status_t check_instructions(const hl_module_t *m, const hl_grid_t *grid) {
  for (int c = 0; c < m->computation_count; c++) {
    const hl_computation_t *comp = m->computations[c];
    for (int i = 0; i < comp->instruction_count; i++) {
      const hl_instruction_t *inst = comp->instructions[i];
      if (!hl_opcode_is_collective(inst->opcode)) continue;
      hl_process_groups_t g;
      hl_status_t st = hl_process_groups_resolve(inst, grid->replicas, grid->partitions, &g);
      hl_process_groups_deinit(&g);
      if (st) return st;
    }
  }
  return NULL;
}

hl_status_t hl_spawn_check_program(const hl_launch_options_t *o, const hl_module_t *module,
                                   const hl_grid_t *grid) {
  HL_RETURN_IF_ERROR(hl_custom_calls_check_module(module));
  HL_RETURN_IF_ERROR(check_instructions(module, grid));
  if (o->no_collective_check) return NULL;
  return hl_collective_check(module, grid->replicas, grid->partitions);
}

// The starter of the MPI this binary was built with (srun's flags follow the
// library too); an error for a starter of the other family.
static hl_status_t find_starter(const hl_launch_options_t *o, hl_starter_t *out) {
  hl_mpi_family_t library = hl_mpi_library_family();
  if (hl_spawn_choose_launcher(o) == HL_LAUNCHER_SRUN) {
    memset(out, 0, sizeof(*out));
    out->family = library;
    snprintf(out->command, sizeof(out->command), "srun");
    return NULL;
  }
  return hl_starter_find(o->mpiexec, library, out);
}

// The watch over the ranks' hosts (host_watch.h), for Hydra across hosts
// (Open MPI keeps its own, srun has Slurm's); NULL otherwise, or when none
// can be made (said; the job runs without).
static hl_host_watch_t *start_host_watch(const hl_launch_options_t *o,
                                         const hl_starter_t *starter) {
  if (starter->family != HL_MPI_FAMILY_MPICH ||
      hl_spawn_choose_launcher(o) != HL_LAUNCHER_MPIRUN || (!o->hosts && !o->hostfile))
    return NULL;
  hl_host_watch_t *w = NULL;
  hl_status_t st = hl_host_watch_create(&w);
  if (st) {
    fail("%s; a host cut off from the job is then noticed only by --timeout",
         hl_status_message(st));
    hl_status_free(st);
  }
  return w;
}

// --hostfile in the other MPI family's form (Open MPI's "host slots=N" for
// Hydra, Hydra's "host:N" for Open MPI) is given to the starter as its host
// list instead (starter.h); `placed` is `o` with that change.
static hl_status_t place_hosts(const hl_launch_options_t *o, const hl_starter_t *starter,
                               hl_launch_options_t *placed) {
  static hl_strbuf_t hosts;  // what placed->hosts points into, for the process's life
  *placed = *o;
  if (!o->hostfile || hl_spawn_choose_launcher(o) == HL_LAUNCHER_SRUN) return NULL;
  hl_strbuf_init(&hosts);
  HL_RETURN_IF_ERROR(hl_starter_hostfile_hosts(o->hostfile, starter->family, &hosts));
  if (hosts.length) {
    placed->hosts = hl_strbuf_cstr(&hosts);
    placed->hostfile = NULL;
  }
  return NULL;
}

static int print_command(const hl_launch_options_t *o, const hl_starter_t *starter,
                         const hl_grid_t *grid, int argc, char **argv,
                         const char *const *extra) {
  argv_builder_t cmd = {0};
  build_command(o, starter, grid, argc, argv, NULL, NULL, extra, NULL, &cmd);
  if (cmd.failed) {
    builder_free(&cmd);
    return fail("out of memory");
  }
  for (int i = 0; i < cmd.n; i++) {
    if (i) fputc(' ', stdout);
    print_quoted(stdout, cmd.v[i]);
  }
  fputc('\n', stdout);
  builder_free(&cmd);
  return 0;
}

// Makes an empty temporary file; false (and "") when none can be made.
static bool make_temp_file(char *path, size_t cap, const char *stem) {
  const char *tmp = getenv("TMPDIR");
  snprintf(path, cap, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", stem);
  int fd = mkstemp(path);
  if (fd < 0) {
    path[0] = '\0';
    return false;
  }
  close(fd);
  return true;
}

// The verdicts rank 0 noted in the progress file (batch mode): counts them
// and returns the program that started without a verdict (-1: none).
static int read_progress(const char *path, int *passed, int *failed) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  int pending = -1, k;
  char word[16];
  while (fscanf(f, "%d %15s", &k, word) == 2) {
    if (strcmp(word, "started") == 0) {
      pending = k;
    } else {
      if (strcmp(word, "passed") == 0)
        (*passed)++;
      else
        (*failed)++;
      pending = -1;
    }
  }
  fclose(f);
  return pending;
}

// Batch mode: one job for all the programs, as large as the largest grid.
// The ranks judge every program (load errors included, in order); when a
// program ends the job itself (a rank killed, a collective abandoned), it is
// reported failed here and the programs after it run in a new job.
static int spawn_batch(const hl_launch_options_t *o, int argc, char **argv) {
  hl_status_t st = hl_ffi_plugins_load(o->custom_call_libraries, o->custom_call_library_count);
  hl_batch_t batch;
  if (!st) st = hl_batch_build(o, &batch);
  if (st) return fail_status(st);
  hl_starter_t starter;
  hl_launch_options_t placed;
  if ((st = find_starter(o, &starter)) != NULL || (st = place_hosts(o, &starter, &placed))) {
    hl_batch_deinit(&batch);
    return fail_status(st);
  }
  o = &placed;
  hl_grid_t job = {1, 1, 1};
  for (int k = 0; k < batch.count; k++) {
    if (batch.entries[k].empty) continue;
    hl_program_t program;
    hl_grid_t grid;
    hl_launch_options_t po = *o;  // the entry's inputs refine its dynamic shapes
    char args_dir[4096];
    po.args_dir = hl_batch_args_dir(o, &batch.entries[k], args_dir, sizeof(args_dir));
    hl_status_t pst = hl_batch_load(&batch, k, &po, &program);
    if (pst) {  // the ranks report it, in its turn
      hl_status_free(pst);
      continue;
    }
    pst = hl_grid_resolve(o->np, o->replicas, o->partitions, program.module->replica_count,
                          program.module->num_partitions, &grid);
    if (!pst && grid.processes > job.processes) job.processes = job.replicas = grid.processes;
    hl_status_free(pst);
    hl_program_deinit(&program);
  }
  if (o->dry_run) {
    hl_batch_deinit(&batch);
    return print_command(o, &starter, &job, argc, argv,
                         (const char *const[]){"--batch-progress", "FILE", NULL});
  }
  char status_file[4096], progress_file[4096], debug_dir[4096];
  bool have_status = make_temp_file(status_file, sizeof(status_file), "hlo-launch-status");
  if (!make_temp_file(progress_file, sizeof(progress_file), "hlo-launch-batch")) {
    hl_batch_deinit(&batch);
    if (have_status) unlink(status_file);
    return fail("cannot create a temporary file for batch mode: %s", strerror(errno));
  }
  bool made_debug_dir;
  hl_debug_prepare_dir(o, debug_dir, sizeof(debug_dir), &made_debug_dir);
  hl_host_watch_t *host_watch = start_host_watch(o, &starter);
  int passed = 0, failed = 0, code = 0, start = 0;
  bool stopped = false;
  for (;;) {
    char start_arg[32];
    snprintf(start_arg, sizeof(start_arg), "%d", start);
    const char *extra[] = {"--batch-progress", progress_file, start ? "--batch-start" : NULL,
                           start_arg, NULL};
    argv_builder_t cmd = {0};
    build_command(o, &starter, &job, argc, argv, have_status ? status_file : NULL, debug_dir,
                  extra, host_watch ? hl_host_watch_address(host_watch) : NULL, &cmd);
    code = cmd.failed ? fail("out of memory")
                      : run_job(o, &starter, cmd.v, have_status ? status_file : NULL, host_watch);
    bool lost = false;
    if (!cmd.failed)
      code = hydra_status(o, &starter, cmd.v[0], code, have_status ? status_file : NULL, &lost);
    builder_free(&cmd);
    int pending = read_progress(progress_file, &passed, &failed);
    hl_launch_options_t named = *o;  // for naming a rank that died
    named.program = batch.entries[pending >= 0 ? pending : start].path;
    code = hl_debug_after_job(&named, &job, debug_dir, false, code, lost);
    stopped = g_timed_out || g_stop_signal || g_host_lost;
    if (pending < 0 || code == 0 || stopped) break;
    printf("hlo-launch: program %s: FAILED: the job ended while it ran (%s exited with status "
           "%d; see the messages above)\n", batch.entries[pending].label,
           starter.command, code);
    fflush(stdout);
    failed++;
    start = pending + 1;
    if (o->fail_fast || start >= batch.count) break;
    FILE *f = fopen(progress_file, "w");  // the next job's verdicts only
    if (f) fclose(f);
    if (have_status) {
      f = fopen(status_file, "w");
      if (f) fclose(f);
    }
  }
  if (!stopped) {
    printf("%d passed, %d failed\n", passed, failed);
    fflush(stdout);
  }
  if (made_debug_dir) hl_debug_after_job(o, &job, debug_dir, true, 0, false);
  hl_host_watch_destroy(host_watch);
  unlink(progress_file);
  if (have_status) unlink(status_file);
  hl_batch_deinit(&batch);
  if (stopped) return code;
  if (failed) return 1;
  return code;  // a job that failed before any program ran
}

int hl_spawn_main(const hl_launch_options_t *o, int argc, char **argv) {
  if (hl_batch_wanted(o)) return spawn_batch(o, argc, argv);
  // The program is checked here once, so a bad file or grid stops before any
  // rank starts, with one message.
  hl_program_t program;
  hl_status_t st = hl_ffi_plugins_load(o->custom_call_libraries, o->custom_call_library_count);
  if (st) return fail_status(st);
  st = hl_program_load_file_with(
      o->program, &(hl_program_load_options_t){o->max_inflated_bytes, true}, &program);
  if (st) return fail_status(st);
  st = hl_inputs_refine_program(o, &program, 0, 0);  // dynamic shapes: from process 0's arguments
  if (!st) st = hl_verify_module(program.module);
  if (!st) st = hl_custom_calls_check_module(program.module);
  hl_grid_t grid;
  if (!st)
    st = hl_grid_resolve(o->np, o->replicas, o->partitions, program.module->replica_count,
                         program.module->num_partitions, &grid);
  bool partitioned = false;  // partitioned here too, so its errors stop the job before it starts
  if (!st) st = hl_partition_if_global(o, &program, grid.replicas, grid.partitions, &partitioned);
  bool global = false, ambiguous = false;
  if (!st && !partitioned && grid.partitions > 1)
    st = hl_program_is_global(o, &program, &global, &ambiguous);
  if (!st && o->mpmd_count == 0) st = check_instructions(program.module, &grid);
  if (!st && o->mpmd_count == 0) st = hl_global_io_precheck(o, &program, &grid);
  // Ranks whose collectives cannot pair up would deadlock: said before any
  // starts (MPMD programs differ per rank and are not compared).
  if (!st && o->mpmd_count <= 1 && !o->no_collective_check)
    st = hl_collective_check(program.module, grid.replicas, grid.partitions);
  hl_program_deinit(&program);
  if (!st) st = hl_outputs_check_options(o);
  if (st) return fail_status(st);
  // Only when nothing else stops the job, so an error stays the one message.
  if (ambiguous)
    fprintf(stderr,
            "hlo-launch: note: %s carries shardings and runs as a per-partition program; if it is a "
            "global program, pass --global-program to partition it\n", o->program);

  // The starter of the MPI this binary was built with (the same check for
  // --dry-run, so it shows the command that would run).
  hl_starter_t starter;
  hl_launch_options_t placed;
  if ((st = find_starter(o, &starter)) != NULL || (st = place_hosts(o, &starter, &placed)))
    return fail_status(st);
  o = &placed;
  if (o->dry_run) return print_command(o, &starter, &grid, argc, argv, NULL);
  argv_builder_t cmd = {0};

  const char *tmp = getenv("TMPDIR");
  char status_file[4096];
  snprintf(status_file, sizeof(status_file), "%s/hlo-launch-status-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  // Without a writable temporary directory the job still runs; failed ranks
  // then exit 1 themselves and mpiexec adds its banner.
  int fd = mkstemp(status_file);
  bool have_status = fd >= 0;
  if (have_status) close(fd);
  // The ranks' state files go there, so a rank that dies can be named.
  char debug_dir[4096];
  bool made_debug_dir;
  hl_debug_prepare_dir(o, debug_dir, sizeof(debug_dir), &made_debug_dir);
  hl_host_watch_t *host_watch = start_host_watch(o, &starter);
  build_command(o, &starter, &grid, argc, argv, have_status ? status_file : NULL, debug_dir,
                NULL, host_watch ? hl_host_watch_address(host_watch) : NULL, &cmd);
  int code = cmd.failed ? fail("out of memory")
                        : run_job(o, &starter, cmd.v, have_status ? status_file : NULL, host_watch);
  hl_host_watch_destroy(host_watch);
  bool lost = false;
  if (!cmd.failed)
    code = hydra_status(o, &starter, cmd.v[0], code, have_status ? status_file : NULL, &lost);
  code = hl_debug_after_job(o, &grid, debug_dir, made_debug_dir, code, lost);
  builder_free(&cmd);
  if (have_status) unlink(status_file);
  return code;
}
