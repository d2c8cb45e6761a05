// The static check before a run: every rank's sequence of collectives is
// derived from the program (conditionals whose selector depends only on
// replica-id / partition-id and constants are decided per rank), and the
// ranks are matched group by group as the collectives would pair up at run
// time. When the matching stalls with every rank at a known collective (or
// at the end of the program), the job would deadlock: the error names both
// instructions. Whatever is data-dependent (a conditional on values whose
// branches differ in collectives, a loop whose first trip is not certain)
// ends the check for that rank without an error.
//
// Channels: the sends / recvs with source-target pairs are counted per
// (channel, peer), those in a while loop once per trip when its trip count
// is known before the run (a counter from a constant, compared with a
// constant, stepped by a constant; replica-id / partition-id may enter);
// where two ranks' counts are certain (no send / recv in a loop of unknown
// trip count or an undecided conditional), a rank's sends to a peer must
// equal the peer's receives from it, or the error names the instruction.
// A send (recv) a rank certainly reaches whose channel no recv (send) of
// the program uses is an error too.
#ifndef HL_RUNTIME_DEBUG_COLLECTIVE_CHECK_H_
#define HL_RUNTIME_DEBUG_COLLECTIVE_CHECK_H_

#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// NULL when no mismatch was found on the num_replicas x num_partitions grid.
hl_status_t hl_collective_check(const hl_module_t *module, int64_t num_replicas,
                                int64_t num_partitions);

#endif  // HL_RUNTIME_DEBUG_COLLECTIVE_CHECK_H_
