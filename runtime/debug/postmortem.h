// After a job ended abnormally (mpiexec reports a rank killed by a signal):
// names, from the ranks' state files, the ranks that died and the
// instruction each was in. A rank that caught SIGTERM was stopped by
// mpiexec after the death; a rank that recorded no signal while it was
// still running was killed by one it could not catch (SIGKILL, the OOM
// killer); one that recorded SIGSEGV, SIGBUS, ... crashed.
#ifndef HL_RUNTIME_DEBUG_POSTMORTEM_H_
#define HL_RUNTIME_DEBUG_POSTMORTEM_H_

#include <stdint.h>

#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"

// Appends one line per dead rank, then one merged line for the ranks that
// were stopped, to `out` (each line starts "hlo-launch: "). `module`
// resolves instruction ids for ranks that ran `program` (NULL: ids only).
// Returns the number of dead ranks named (0: nothing was appended).
int hl_postmortem_report(const char *dir, int size, const hl_module_t *module,
                         const char *program, int64_t num_replicas, int64_t num_partitions,
                         hl_strbuf_t *out);

#endif  // HL_RUNTIME_DEBUG_POSTMORTEM_H_
