// The launcher's side of the debugging tools (see debug_launcher.h).
#include "launcher/debug_launcher.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/strbuf.h"
#include "runtime/debug/postmortem.h"
#include "runtime/loader/program_loader.h"

void hl_debug_prepare_dir(const hl_launch_options_t *o, char *dir, size_t cap, bool *out_made) {
  *out_made = false;
  dir[0] = '\0';
  if (o->hang_timeout_s <= 0) return;
  if (o->debug_dir) {
    snprintf(dir, cap, "%s", o->debug_dir);
    return;
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, cap, "%s/hlo-launch-debug-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    dir[0] = '\0';
    return;
  }
  *out_made = true;
}

// Removes the files the ranks leave (rank<k>.state / .report, hang) and
// the directory.
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4400];
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "rank", 4) != 0 && strcmp(e->d_name, "hang") != 0) continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

int hl_debug_after_job(const hl_launch_options_t *o, const hl_grid_t *grid, const char *dir,
                       bool made, int code, bool lost) {
  if (!dir || !*dir) return code;
  char path[4200];
  snprintf(path, sizeof(path), "%s/hang-report.txt", dir);
  bool keep = access(path, F_OK) == 0;
  // mpiexec's status for a rank killed by a signal: look for the rank that
  // died.
  if ((lost || (code > 128 && code < 160)) && !keep) {
    hl_program_t program;
    memset(&program, 0, sizeof(program));
    hl_status_t st = hl_program_load_file(o->program, &program);
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    int dead = hl_postmortem_report(dir, (int)grid->processes, st ? NULL : program.module,
                                    o->program, grid->replicas, grid->partitions, &sb);
    hl_status_free(st);
    if (!st) hl_program_deinit(&program);
    if (dead) {
      fputs(hl_strbuf_cstr(&sb), stderr);
      fflush(stderr);
      snprintf(path, sizeof(path), "%s/postmortem.txt", dir);
      FILE *f = fopen(path, "w");
      if (f) {
        fputs(hl_strbuf_cstr(&sb), f);
        keep = fclose(f) == 0;
      }
    }
    hl_strbuf_deinit(&sb);
  }
  if (made && !keep) remove_dir(dir);
  return code;
}
