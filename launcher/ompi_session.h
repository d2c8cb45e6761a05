// Open MPI's session directory, private to one launch (spawn.c).
//
// Open MPI 4.1 keeps its per-user session directory (sockets, shared-memory
// backing files) in <orte_tmpdir_base>/ompi.<host>.<uid>; every job on the
// node creates it when it starts and the last one removes it when it ends.
// Two jobs starting or ending at the same moment race on that mkdir / rmdir
// and the loser's orte_init fails ("A call to mkdir was unable to create the
// desired directory ... File exists"). A base of its own per launch removes
// the race; the startup-race test names the message when it still happens
// (a base set by the user is shared by every job under it).
#ifndef HL_LAUNCHER_OMPI_SESSION_H_
#define HL_LAUNCHER_OMPI_SESSION_H_

#include <stdbool.h>
#include <stddef.h>

typedef struct hl_ompi_session {
  char base[256];   // the private base ("" when none was made)
  char *saved;      // the caller's OMPI_MCA_orte_tmpdir_base (owned; NULL: unset)
  bool had_saved;
} hl_ompi_session_t;

// Makes a fresh directory (under the user's OMPI_MCA_orte_tmpdir_base if set,
// else $TMPDIR, else /tmp; /tmp when that path would be too long for the Unix
// sockets Open MPI puts there) and points OMPI_MCA_orte_tmpdir_base at it, so
// the mpiexec started next and its ranks use it. False when none could be
// made: the job then runs with Open MPI's default.
bool hl_ompi_session_begin(hl_ompi_session_t *session);

// Removes the directory and everything in it, and restores the variable.
void hl_ompi_session_end(hl_ompi_session_t *session);

// True when `text` (the starter's stderr) shows a startup failure that is
// known to be transient: orte_init failing on the session directory's mkdir.
bool hl_ompi_startup_race(const char *text, size_t length);

#endif  // HL_LAUNCHER_OMPI_SESSION_H_
