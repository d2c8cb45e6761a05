// Status agreement over an MPI communicator: every process calls at the same
// point with its own status and all of them learn the same verdict, so no
// process goes on to a collective step that another one will never reach.
// Shared by hlo-launch's worker and the embedding API (api/).
#ifndef HL_COLLECTIVES_AGREE_H_
#define HL_COLLECTIVES_AGREE_H_

#include <mpi.h>
#include <stddef.h>

#include "runtime/base/status.h"

typedef struct hl_agree_style {
  // Put before every line of the combined message ("hlo-launch: "); NULL: none.
  const char *line_prefix;
  // Names one process in the message ("rank 3 (replica 1, partition 1)");
  // NULL: "rank 3".
  void (*name_rank)(void *ctx, int rank, char *buf, size_t size);
  void *ctx;
  // Printed as a second line when a stuck process aborts (below); NULL: none.
  const char *abort_note;
} hl_agree_style_t;

// Consumes `mine` (NULL: this process succeeded). Returns NULL on every
// process when all passed NULL; otherwise, on every process, the same new
// status: its code is the lowest failed rank's, its message one line per
// distinct failure message, "<who>: <message>", who naming the ranks that
// reported it ("rank 2", "ranks 0-3,6", "all 8 ranks"), lines joined by '\n'.
//
// stuck_seconds >= 0: a failed process waits at most that long for the
// others; they may be blocked in a collective that needs it and never get
// here. Then the communicator can never be used again (MPI cannot cancel a
// collective), so it prints its message to stderr and calls MPI_Abort on
// `comm`. stuck_seconds < 0: waits for as long as it takes.
hl_status_t hl_mpi_agree(MPI_Comm comm, hl_status_t mine, double stuck_seconds,
                         const hl_agree_style_t *style);

#endif  // HL_COLLECTIVES_AGREE_H_
