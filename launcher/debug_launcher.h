// The launcher's side of the debugging tools (docs/DEBUGGING.md): the job's
// debug directory, made before mpiexec starts so that the launcher can read
// the ranks' state files after the job (hl_debug_after_job names a rank
// that died and the instruction it was in).
#ifndef HL_LAUNCHER_DEBUG_LAUNCHER_H_
#define HL_LAUNCHER_DEBUG_LAUNCHER_H_

#include <stdbool.h>
#include <stddef.h>

#include "runtime/spmd/grid.h"
#include "launcher/options.h"

// The directory to pass to the ranks as --debug-dir: --debug-dir itself, or
// a new one in $TMPDIR (*out_made). "" when the watchdog is off or no
// directory can be made (the ranks then make their own).
void hl_debug_prepare_dir(const hl_launch_options_t *options, char *dir, size_t cap,
                          bool *out_made);
// After mpiexec returned `code`: for an abnormal end (a status of 129..159,
// a process killed by a signal, or `lost`: the starter says a process was
// lost another way), prints which ranks died and where; removes a directory
// made by hl_debug_prepare_dir unless it holds a report. Returns the exit
// code.
int hl_debug_after_job(const hl_launch_options_t *options, const hl_grid_t *grid,
                       const char *dir, bool made, int code, bool lost);

#endif  // HL_LAUNCHER_DEBUG_LAUNCHER_H_
