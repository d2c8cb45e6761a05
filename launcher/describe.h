// `hlo-launch --describe PROGRAM`: what a program expects and returns, read
// from the file alone (no MPI start): format, origin (producer, versions,
// jax.export fields), the grid it states, arguments and results with their
// dtypes, shapes ('?' for a dynamic dimension) and shardings.
#ifndef HL_LAUNCHER_DESCRIBE_H_
#define HL_LAUNCHER_DESCRIBE_H_

#include <stdio.h>

#include "launcher/options.h"
#include "runtime/base/strbuf.h"
#include "runtime/loader/program_loader.h"

// Appends the description of a loaded program (`path` names it).
hl_status_t hl_describe_program(const hl_program_t *program, const char *path, hl_strbuf_t *out);

// Describes every PROGRAM on the command line, one block each (a blank line
// between). Returns the exit code: 0, or 1 when a program does not load.
int hl_describe_main(const hl_launch_options_t *options, FILE *out);

#endif  // HL_LAUNCHER_DESCRIBE_H_
