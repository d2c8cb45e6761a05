// One process's entry arguments: from .npy files (--args, --args-dir), the
// HloSnapshot, deterministic random values (--seed) or zeros (--zeros).
#ifndef HL_LAUNCHER_INPUTS_H_
#define HL_LAUNCHER_INPUTS_H_

#include <stdint.h>

#include "launcher/options.h"
#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/loader/program_loader.h"

typedef struct hl_inputs {
  hl_literal_t **args;  // one per entry parameter (owned references)
  int count;
  char **files;         // the .npy files read, so outputs never overwrite them
  int file_count;
} hl_inputs_t;

// Builds the arguments of process (replica, partition) for program->module's
// entry computation, checking each against its parameter's shape. Errors
// name the file and the parameter.
hl_status_t hl_inputs_build(const hl_launch_options_t *options, const hl_program_t *program,
                            int64_t replica, int64_t partition, hl_inputs_t *out_inputs);
void hl_inputs_deinit(hl_inputs_t *inputs);
// A program with dynamic shapes (program->dynamic_text): its arguments read
// with the dimensions the .npy files have (--args, --args-dir, --global-args), whose
// shapes and values refine it (hl_program_refine); other sources are an
// error saying so.
hl_status_t hl_inputs_read_for_refinement(const hl_launch_options_t *options,
                                          const hl_program_t *program, int64_t replica,
                                          int64_t partition, hl_inputs_t *out_inputs);
// Lowers a program loaded with defer_dynamic_shapes from those arguments
// (a no-op for any other program). They are read again for the run, as for
// any program.
hl_status_t hl_inputs_refine_program(const hl_launch_options_t *options, hl_program_t *program,
                                     int64_t replica, int64_t partition);
// Records `path` as an input file (outputs must never overwrite it).
hl_status_t hl_inputs_add_file(hl_inputs_t *inputs, const char *path);

// The random argument for parameter number `parameter` of `shape` (the
// algorithm is in --help): a pure function of (seed, parameter, shape).
hl_status_t hl_inputs_random(const hl_shape_t *shape, uint64_t seed, int64_t parameter,
                             hl_literal_t **out_literal);

#endif  // HL_LAUNCHER_INPUTS_H_
