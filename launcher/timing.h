// The report of `hlo-launch --repeat N`: per-run times (each the slowest
// process's) summed up in one line.
#ifndef HL_LAUNCHER_TIMING_H_
#define HL_LAUNCHER_TIMING_H_

#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"

// Appends "N runs on P processes: first X ms; runs 2-N: min A ms, median B ms,
// max C ms" (one run: "1 run on P processes: X ms") to `out`. `seconds` is not modified.
hl_status_t hl_timing_format(const double *seconds, int64_t runs, int processes,
                             hl_strbuf_t *out);

#endif  // HL_LAUNCHER_TIMING_H_
