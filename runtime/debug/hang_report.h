// Hang reports: what one rank is doing (from its rank state), and the
// merged report rank 0 prints ("ranks 0-2,4-7 wait in all-reduce.5 (group
// {0..7}, iteration 12 of while.3); never arrived: rank 3").
//
// A rank's report is text whose first three lines are for the merge:
//   key <instruction name>@<enclosing while iterations>   ("" when not waiting
//        in a collective; "end" at the end-of-run wait)
//   group <ranks of the group it waits with, space-separated>
//   summary <one line: "waits in all-reduce.5 (...)">
// and whose other lines are the details (stack, flight recorder).
#ifndef HL_RUNTIME_DEBUG_HANG_REPORT_H_
#define HL_RUNTIME_DEBUG_HANG_REPORT_H_

#include <stdint.h>

#include "runtime/base/strbuf.h"
#include "runtime/debug/rank_state.h"
#include "runtime/ir/module.h"

// Appends rank state `s`'s report to `out`. `module` resolves instruction
// ids (NULL: they are printed as ids); R x P is the grid; `now_ns` is
// hl_rank_state_now_ns() of the reader; `note` (may be NULL) is added to
// the summary, e.g. "did not answer".
void hl_hang_report_rank(const hl_rank_state_t *s, const hl_module_t *module, int64_t R,
                         int64_t P, int64_t now_ns, const char *note, hl_strbuf_t *out);

// Merges the reports of ranks 0..size-1 (NULL: none, the rank is named as
// silent) into `summary` (the lines printed on stderr) and `full` (summary
// then every rank's details: the report file).
void hl_hang_report_merge(const char *const *reports, int size, hl_strbuf_t *summary,
                          hl_strbuf_t *full);

// "0-3,6": ascending ranks as ranges.
void hl_hang_format_ranks(const int *ranks, int n, hl_strbuf_t *out);

#endif  // HL_RUNTIME_DEBUG_HANG_REPORT_H_
