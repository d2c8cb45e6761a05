// Batch mode's list of programs (hlo-launch PROG1 PROG2 ..., --programs
// LISTFILE, a directory, --split-input-file): built the same way by the
// launcher and by every rank from the command line, so all agree on it.
#ifndef HL_LAUNCHER_BATCH_LIST_H_
#define HL_LAUNCHER_BATCH_LIST_H_

#include <stdbool.h>
#include <stddef.h>

#include "launcher/options.h"
#include "runtime/base/status.h"
#include "runtime/loader/program_loader.h"

typedef struct hl_batch_entry {
  char *path;         // the program file (owned)
  char *label;        // what lines and errors name: the path, or "PATH:LINE" for a case (owned)
  int text_index;     // a --split-input-file case: its file's text in hl_batch_t, else -1
  size_t offset, length;
  int first_line;     // the case's first line (1-based)
  bool empty;         // a case of only comments and blank lines: nothing to run
} hl_batch_entry_t;

typedef struct hl_batch {
  hl_batch_entry_t *entries;  // (owned)
  int count;
  char **texts;               // the split files' contents (owned)
  int text_count;
} hl_batch_t;

// True when the command line asks for batch mode: several programs,
// --programs, a directory as PROGRAM, or --split-input-file.
bool hl_batch_wanted(const hl_launch_options_t *options);

// The programs in order: the PROGRAM arguments (a directory: its files, sorted
// by name, leaving out hidden files and *.md, *.txt, *.npy, *.json, *.py), then
// the lines of --programs (blank lines and '#' comments left out). With
// --split-input-file each file's `// -----` cases are entries of their own.
hl_status_t hl_batch_build(const hl_launch_options_t *options, hl_batch_t *out_batch);
void hl_batch_deinit(hl_batch_t *batch);

// Where entry `e` reads its --args-dir inputs: DIR/<its file name>/ when
// --args-dir DIR has that folder (written into buf), else DIR (or NULL).
const char *hl_batch_args_dir(const hl_launch_options_t *options, const hl_batch_entry_t *e,
                              char *buf, size_t cap);

// Loads an entry: its file, or its case padded with the blank lines before
// it, so diagnostics name the user's file and its line numbers. A program
// with dynamic shapes is refined from process 0's arguments (--args,
// --global-args, or --args-dir, which `options` must give as the entry's:
// hl_batch_args_dir), as a single program is.
hl_status_t hl_batch_load(const hl_batch_t *batch, int index, const hl_launch_options_t *options,
                          hl_program_t *out_program);

#endif  // HL_LAUNCHER_BATCH_LIST_H_
