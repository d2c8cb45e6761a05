#include "collectives/mpi_family.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

// strcasestr without _GNU_SOURCE.
static bool contains(const char *text, const char *word) {
  size_t n = strlen(word);
  for (const char *p = text; *p; p++)
    if (strncasecmp(p, word, n) == 0) return true;
  return false;
}

hl_mpi_family_t hl_mpi_family_classify(const char *text) {
  if (!text) return HL_MPI_FAMILY_UNKNOWN;
  // Open MPI's starters: "mpiexec (OpenRTE) 4.1.4", "mpiexec (Open MPI) 5.0.3"
  // (PRRTE underneath); its library: "Open MPI v4.1.4, package: ...".
  if (contains(text, "Open MPI") || contains(text, "OpenRTE") || contains(text, "PRRTE") ||
      contains(text, "Open-MPI"))
    return HL_MPI_FAMILY_OPENMPI;
  // MPICH's library: "MPICH Version: 4.0.2"; Hydra: "HYDRA build details:";
  // the derivatives name themselves ("Intel(R) MPI Library", "MVAPICH2
  // Version", "CRAY MPICH version").
  if (contains(text, "MPICH") || contains(text, "HYDRA") || contains(text, "Intel(R) MPI") ||
      contains(text, "MVAPICH"))
    return HL_MPI_FAMILY_MPICH;
  return HL_MPI_FAMILY_UNKNOWN;
}

static char g_version[MPI_MAX_LIBRARY_VERSION_STRING + 1];
static bool g_asked;

static void ask_library(void) {
  if (g_asked) return;
  g_asked = true;
  int len = 0;
  if (MPI_Get_library_version(g_version, &len) != MPI_SUCCESS) g_version[0] = '\0';
  g_version[MPI_MAX_LIBRARY_VERSION_STRING] = '\0';
}

hl_mpi_family_t hl_mpi_library_family(void) {
  ask_library();
  return hl_mpi_family_classify(g_version);
}

const char *hl_mpi_library_version_line(void) {
  static char line[160];
  ask_library();
  const char *p = g_version;
  while (*p == ' ' || *p == '\t' || *p == '\n') p++;
  size_t n = strcspn(p, "\n,");
  snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), p);
  // MPICH pads with tabs and spaces ("MPICH Version:    \t4.0.2"): one space.
  char *w = line;
  for (const char *q = line; *q; q++)
    if (!((*q == ' ' || *q == '\t') && w > line && w[-1] == ' ')) *w++ = *q == '\t' ? ' ' : *q;
  *w = '\0';
  return line[0] ? line : "an MPI library that gives no version";
}

const char *hl_mpi_family_name(hl_mpi_family_t family) {
  switch (family) {
    case HL_MPI_FAMILY_OPENMPI: return "Open MPI";
    case HL_MPI_FAMILY_MPICH: return "MPICH";
    default: return "an unknown MPI";
  }
}
