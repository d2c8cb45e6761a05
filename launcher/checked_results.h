// Checked results and replays (docs/DEBUGGING.md): --expect DIR compares a
// process's result with DIR/replica<r>_partition<p>/result<i>.npy (an
// HloSnapshot's recorded result is the expectation when no --expect is
// given), and --record DIR writes what a replay needs.
#ifndef HL_LAUNCHER_CHECKED_RESULTS_H_
#define HL_LAUNCHER_CHECKED_RESULTS_H_

#include <stdbool.h>
#include <stddef.h>

#include "launcher/inputs.h"
#include "launcher/options.h"
#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/loader/program_loader.h"

// Exit status of a job whose results differ from the expectation.
enum { HL_EXIT_MISMATCH = 4 };

// Whether this process has an expectation (--expect, or a snapshot result).
bool hl_expect_wanted(const hl_launch_options_t *options, const hl_program_t *program);

// Compares `result` with this process's expectation; writes a one-line
// verdict ("matches: 16 elements ..." / "3 of 16 elements differ; worst
// ...") into `line` and sets *out_matched. *out_checked is false (and
// nothing compared) for a snapshot that records no result. Errors: an
// expectation that cannot be read or has other shapes.
hl_status_t hl_expect_check(const hl_launch_options_t *options, const hl_program_t *program,
                            const hl_literal_t *result, int64_t replica, int64_t partition,
                            char *line, size_t cap, bool *out_checked, bool *out_matched);

// --expect-global FILE.npy, on rank 0: compares the assembled global result
// (launcher/global_io.h) with the file, as hl_expect_check does, naming the
// worst element global[i,j]. Errors: the file cannot be read or its shape
// is not the global result's.
hl_status_t hl_expect_global_check(const hl_launch_options_t *options,
                                   const hl_literal_t *global, char *line, size_t cap,
                                   bool *out_matched);

// --record DIR: DIR/replica<r>_partition<p>/arg<i>.npy, result<i>.npy and
// snapshot.pb (an HloSnapshot: program, arguments, result).
hl_status_t hl_record_write(const char *dir, const hl_program_t *program,
                            const hl_inputs_t *inputs, const hl_literal_t *result,
                            int64_t replica, int64_t partition);

#endif  // HL_LAUNCHER_CHECKED_RESULTS_H_
