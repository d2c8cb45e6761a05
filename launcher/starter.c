#define _GNU_SOURCE  // pipe2
#include "launcher/starter.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// `name` as execvp would find it: itself when it holds a '/', else the
// first executable of that name on PATH. False when there is none.
static bool locate(const char *name, char *out, size_t cap) {
  if (strchr(name, '/')) {
    snprintf(out, cap, "%s", name);
    return access(name, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path; *p;) {
    size_t n = strcspn(p, ":");
    snprintf(out, cap, "%.*s/%s", (int)n, n ? p : ".", name);
    if (access(out, X_OK) == 0) return true;
    p += n;
    if (*p == ':') p++;
  }
  out[0] = '\0';
  return false;
}

static hl_mpi_family_t family_by_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  // Open MPI 4's mpiexec / mpirun are links to orterun, 5's run prterun;
  // Debian names the alternatives *.openmpi and *.mpich.
  if (strstr(base, "orterun") || strstr(base, "prterun") || strstr(base, "openmpi"))
    return HL_MPI_FAMILY_OPENMPI;
  if (strstr(base, "hydra") || strstr(base, "mpich")) return HL_MPI_FAMILY_MPICH;
  return HL_MPI_FAMILY_UNKNOWN;
}

// What `path --version` prints (stdout and stderr) within `seconds`; a
// starter that hangs or is not one is stopped then.
static void probe_version(const char *path, double seconds, char *out, size_t cap) {
  out[0] = '\0';
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execl(path, path, "--version", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  size_t used = 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &now);
    double left = seconds - (double)(now.tv_sec - start.tv_sec) -
                  1e-9 * (double)(now.tv_nsec - start.tv_nsec);
    if (left <= 0) break;
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    int r = poll(&p, 1, (int)(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char chunk[512];
    ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t take = (size_t)n < cap - 1 - used ? (size_t)n : cap - 1 - used;
    memcpy(out + used, chunk, take);
    used += take;
  }
  out[used] = '\0';
  close(fds[0]);
  kill(pid, SIGKILL);  // done or not, it has said what it will say
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

hl_mpi_family_t hl_starter_family(const char *path) {
  char found[PATH_MAX], real[PATH_MAX];
  if (!locate(path, found, sizeof(found))) return HL_MPI_FAMILY_UNKNOWN;
  hl_mpi_family_t f = family_by_name(realpath(found, real) ? real : found);
  if (f == HL_MPI_FAMILY_UNKNOWN) f = family_by_name(found);
  if (f != HL_MPI_FAMILY_UNKNOWN) return f;
  char text[4096];
  probe_version(found, 3.0, text, sizeof(text));
  return hl_mpi_family_classify(text);
}

static const char *family_starters(hl_mpi_family_t f) {
  return f == HL_MPI_FAMILY_MPICH ? "mpiexec.hydra or mpiexec.mpich" : "mpiexec or mpirun";
}

static const char *family_packages(hl_mpi_family_t f) {
  return f == HL_MPI_FAMILY_MPICH ? "Debian: apt install mpich libmpich-dev"
                                  : "Debian: apt install openmpi-bin libopenmpi-dev";
}

static hl_status_t mismatch(const char *what, const char *path, hl_mpi_family_t starter,
                            hl_mpi_family_t library) {
  return HL_INVALID(
      "%s '%s' starts %s jobs, but hlo-launch was built with %s (%s): its ranks would each run "
      "alone, as N jobs of one process. Give %s's starter (%s) with --mpiexec PATH or %s=PATH "
      "(%s), or build hlo-launch against %s (cmake -DMPI_C_COMPILER=<%s's mpicc>)",
      what, path, hl_mpi_family_name(starter), hl_mpi_family_name(library),
      hl_mpi_library_version_line(), hl_mpi_family_name(library), family_starters(library),
      HL_STARTER_ENV, family_packages(library), hl_mpi_family_name(starter),
      hl_mpi_family_name(starter));
}

hl_status_t hl_starter_find(const char *requested, hl_mpi_family_t library, hl_starter_t *out) {
  memset(out, 0, sizeof(*out));
  out->family = library;
  const char *what = "--mpiexec";
  if (!requested || !*requested) {
    requested = getenv(HL_STARTER_ENV);
    what = HL_STARTER_ENV;
  }
  if (requested && *requested) {
    snprintf(out->command, sizeof(out->command), "%s", requested);
    if (!locate(requested, out->resolved, sizeof(out->resolved))) return NULL;  // exec says why
    hl_mpi_family_t f = hl_starter_family(requested);
    if (f != HL_MPI_FAMILY_UNKNOWN && library != HL_MPI_FAMILY_UNKNOWN && f != library)
      return mismatch(what, requested, f, library);
    if (f != HL_MPI_FAMILY_UNKNOWN) out->family = f;
    return NULL;  // a starter that does not say is taken as asked
  }
  static const char *const kMpich[] = {"mpiexec.hydra", "mpiexec.mpich", "mpiexec", "mpirun",
                                       NULL};
  static const char *const kOpenMpi[] = {"mpiexec", "mpirun", "mpiexec.openmpi",
                                         "mpirun.openmpi", NULL};
  const char *const *names = library == HL_MPI_FAMILY_MPICH ? kMpich : kOpenMpi;
  char wrong[PATH_MAX] = "", found[PATH_MAX];
  hl_mpi_family_t wrong_family = HL_MPI_FAMILY_UNKNOWN;
  for (int i = 0; names[i]; i++) {
    if (!locate(names[i], found, sizeof(found))) continue;
    hl_mpi_family_t f = hl_starter_family(found);
    if (library == HL_MPI_FAMILY_UNKNOWN || f == library ||
        (f == HL_MPI_FAMILY_UNKNOWN && !strchr(names[i], '.'))) {
      // The family's own, or a plain mpiexec / mpirun that does not say.
      snprintf(out->command, sizeof(out->command), "%s", names[i]);
      snprintf(out->resolved, sizeof(out->resolved), "%s", found);
      if (f != HL_MPI_FAMILY_UNKNOWN) out->family = f;
      return NULL;
    }
    if (!wrong[0]) {
      snprintf(wrong, sizeof(wrong), "%s", found);
      wrong_family = f;
    }
  }
  if (wrong[0]) return mismatch("the only starter on PATH,", wrong, wrong_family, library);
  // None at all: running the first name fails with a message naming it.
  snprintf(out->command, sizeof(out->command), "%s", names[0]);
  return NULL;
}

const char *hl_starter_srun_mpi_plugin(hl_mpi_family_t library) {
  // Cray MPICH speaks the site's own plugin (cray_shasta), Slurm's default
  // there.
  if (library == HL_MPI_FAMILY_MPICH && strstr(hl_mpi_library_version_line(), "CRAY"))
    return NULL;
  return library == HL_MPI_FAMILY_MPICH ? "pmi2" : "pmix";
}

bool hl_starter_explain_singleton(char *buf, size_t cap) {
  struct {
    const char *size_var, *rank_var, *starter;
    hl_mpi_family_t family;
  } kStarters[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "Open MPI's mpiexec",
       HL_MPI_FAMILY_OPENMPI},
      {"PMI_SIZE", "PMI_RANK", "a PMI starter (MPICH's Hydra, srun --mpi=pmi2)",
       HL_MPI_FAMILY_MPICH},
      {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun", HL_MPI_FAMILY_UNKNOWN},
  };
  hl_mpi_family_t library = hl_mpi_library_family();
  for (size_t i = 0; i < sizeof(kStarters) / sizeof(kStarters[0]); i++) {
    const char *size = getenv(kStarters[i].size_var);
    if (!size || atoi(size) <= 1) continue;
    if (kStarters[i].family == HL_MPI_FAMILY_UNKNOWN && !getenv("SLURM_STEP_ID")) continue;
    // One of the N singletons speaks for all.
    const char *rank = getenv(kStarters[i].rank_var);
    if (rank && atoi(rank) != 0) {
      buf[0] = '\0';
      return true;
    }
    if (kStarters[i].family == HL_MPI_FAMILY_UNKNOWN) {
      const char *type = getenv("SLURM_MPI_TYPE");
      snprintf(buf, cap,
               "srun started %s tasks (%s=%s), but MPI sees a job of 1 process: srun's PMI "
               "plugin (%s) is not one %s (%s) speaks; run srun --mpi=%s, or let hlo-launch "
               "start the job (hlo-launch --launcher srun ...)",
               size, kStarters[i].size_var, size, type && *type ? type : "its default",
               hl_mpi_family_name(library), hl_mpi_library_version_line(),
               hl_starter_srun_mpi_plugin(library) ? hl_starter_srun_mpi_plugin(library)
                                                   : "<your site's plugin>");
      return true;
    }
    bool other = library != HL_MPI_FAMILY_UNKNOWN && kStarters[i].family != library;
    snprintf(buf, cap,
             "%s started %s processes (%s=%s), but MPI sees a job of 1 process: hlo-launch "
             "was built with %s (%s)%s; start it with %s's starter (%s), or let hlo-launch "
             "start the job itself (hlo-launch -np %s ...)",
             kStarters[i].starter, size, kStarters[i].size_var, size, hl_mpi_family_name(library),
             hl_mpi_library_version_line(), other ? ", which does not join that starter's jobs" : "",
             hl_mpi_family_name(library), family_starters(library), size);
    return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Hostfiles
//===----------------------------------------------------------------------===//

// Whether `s` is a whole decimal count of at least 1.
static bool parse_count(const char *s, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < 1 || v > 1000000) return false;
  *out = v;
  return true;
}

hl_status_t hl_starter_hostfile_hosts(const char *path, hl_mpi_family_t family,
                                      hl_strbuf_t *out_hosts) {
  FILE *f = fopen(path, "r");
  if (!f) return HL_INVALID("--hostfile %s: %s", path, strerror(errno));
  hl_strbuf_t list;
  hl_strbuf_init(&list);
  bool open_mpi_form = false, hydra_form = false;
  hl_status_t st = NULL;
  char line[4096];
  for (int lineno = 1; !st && fgets(line, sizeof(line), f); lineno++) {
    line[strcspn(line, "#\n")] = '\0';
    char *save = NULL, *host = strtok_r(line, " \t\r", &save);
    if (!host) continue;
    long slots = 0;
    char *colon = strchr(host, ':');
    if (colon) {  // Hydra: host:N
      *colon = '\0';
      if (!*host || !parse_count(colon + 1, &slots)) {
        st = HL_INVALID("%s:%d: '%s:%s' is no host:slots (Hydra's form, e.g. node1:4)", path,
                        lineno, host, colon + 1);
        break;
      }
      hydra_form = true;
    }
    for (char *tok; !st && (tok = strtok_r(NULL, " \t\r", &save)) != NULL;) {
      long n;
      if (strncmp(tok, "slots=", 6) == 0 && parse_count(tok + 6, &n) && !colon) {
        slots = n;
        open_mpi_form = true;
      } else if (strncmp(tok, "max_slots=", 10) == 0 && parse_count(tok + 10, &n)) {
        // Open MPI's cap on oversubscription; Hydra places ranks by slots
        // alone, and hlo-launch lets Open MPI oversubscribe.
        open_mpi_form = true;
      } else {
        st = HL_INVALID("%s:%d: '%s' after host %s is not understood (hostfile lines are "
                        "'host', 'host slots=N [max_slots=M]' (Open MPI) or 'host:N' (Hydra))",
                        path, lineno, tok, host);
      }
    }
    if (st) break;
    if (list.length) hl_strbuf_append_char(&list, ',');
    hl_strbuf_append(&list, host);
    if (slots) hl_strbuf_appendf(&list, ":%ld", slots);
  }
  fclose(f);
  if (!st && list.length == 0) st = HL_INVALID("--hostfile %s names no host", path);
  // Given as is when it is in the starter's own form (or in a form both read).
  bool other = family == HL_MPI_FAMILY_MPICH ? open_mpi_form : hydra_form;
  if (!st && other) hl_strbuf_append(out_hosts, hl_strbuf_cstr(&list));
  hl_strbuf_deinit(&list);
  return st;
}
