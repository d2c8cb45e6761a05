#define _GNU_SOURCE  // mkstemps, fdopen
// --split-input-file (see split_input.h). Each case is written to a
// temporary file padded with the blank lines that precede it, so its
// diagnostics keep the original file's line numbers, and run by this same
// executable with the other options unchanged.
#include "launcher/split_input.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/stablehlo.h"

static char *read_file(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = hl_malloc(cap);
  while (buf) {
    if (len == cap) {
      char *nb = hl_realloc(buf, cap * 2);
      if (!nb) {
        hl_free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  fclose(f);
  *out_size = len;
  return buf;
}

static int run_case(const char *text, const hl_mlir_case_t *c, int argc, char **argv,
                    const char *program) {
  char path[] = "/tmp/hlo-launch-case-XXXXXX.mlir";
  int fd = mkstemps(path, 5);
  if (fd < 0) {
    fprintf(stderr, "hlo-launch: cannot create a temporary file: %s\n", strerror(errno));
    return 1;
  }
  FILE *f = fdopen(fd, "wb");
  for (int i = 1; f && i < c->first_line; i++) fputc('\n', f);
  if (f) fwrite(text + c->offset, 1, c->length, f);
  if (!f || fclose(f) != 0) {
    unlink(path);
    return 1;
  }
  // The same command line without --split-input-file, the case file as program.
  char **args = hl_calloc((size_t)argc + 1, sizeof(char *));
  if (!args) {
    unlink(path);
    return 1;
  }
  int n = 0, program_at = -1;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--split-input-file") == 0) continue;
    if (i > 0 && strcmp(argv[i], program) == 0) program_at = n;
    args[n++] = argv[i];
  }
  if (program_at >= 0) args[program_at] = path;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    execv("/proc/self/exe", args);
    _exit(127);
  }
  int status = 0, code = 1;
  if (pid > 0 && waitpid(pid, &status, 0) == pid)
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  hl_free(args);
  unlink(path);
  return code;
}

// A case of only blank lines and comments is an empty module: nothing to run.
static bool is_empty_case(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') i++;
    } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
      i++;
    } else {
      return false;
    }
  }
  return true;
}

int hl_split_input_main(const hl_launch_options_t *o, int argc, char **argv) {
  size_t size;
  char *text = read_file(o->program, &size);
  if (!text) {
    fprintf(stderr, "hlo-launch: cannot read %s: %s\n", o->program, strerror(errno));
    return 2;
  }
  hl_mlir_case_t *cases;
  int count;
  hl_status_t st = hl_stablehlo_split_cases(text, size, &cases, &count);
  if (st) {
    hl_status_report(st, stderr, "hlo-launch");
    hl_free(text);
    return 1;
  }
  int failed = 0;
  for (int k = 0; k < count; k++) {
    bool empty = is_empty_case(text + cases[k].offset, cases[k].length);
    int code = empty ? 0 : run_case(text, &cases[k], argc, argv, o->program);
    if (code) failed++;
    printf("hlo-launch: case %d/%d (%s:%d): %s\n", k + 1, count, o->program, cases[k].first_line,
           code ? "FAILED" : "passed");
  }
  printf("hlo-launch: %d of %d cases passed\n", count - failed, count);
  hl_free(cases);
  hl_free(text);
  return failed ? 1 : 0;
}
