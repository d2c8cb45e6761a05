// Which MPI implementation this process runs on: the family decides the
// starter and its flags (launcher/starter.h) and the few workarounds that
// belong to one implementation (mpi_reduce_ops.c). Asked of the library
// itself (MPI_Get_library_version, callable before MPI_Init), so an
// ABI-compatible library swapped in at run time counts, not the headers.
#ifndef HL_COLLECTIVES_MPI_FAMILY_H_
#define HL_COLLECTIVES_MPI_FAMILY_H_

typedef enum hl_mpi_family {
  HL_MPI_FAMILY_UNKNOWN,
  HL_MPI_FAMILY_OPENMPI,  // Open MPI 4.x / 5.x (mpiexec, mpirun: ORTE or PRRTE)
  HL_MPI_FAMILY_MPICH,    // MPICH and its derivatives: Intel MPI, MVAPICH, Cray MPICH (Hydra)
} hl_mpi_family_t;

// The family of a library version string (MPI_Get_library_version's) or of
// a starter's `--version` text: "Open MPI" / "OpenRTE" / "PRRTE" -> Open
// MPI; "MPICH" / "HYDRA" / "Intel(R) MPI" / "MVAPICH" -> MPICH; else unknown.
hl_mpi_family_t hl_mpi_family_classify(const char *version_text);

// The family of the MPI library this process is linked with (asked once).
hl_mpi_family_t hl_mpi_library_family(void);

// The first line of the library's version string ("MPICH Version: 4.0.2",
// "Open MPI v4.1.4, ...") for messages; static storage.
const char *hl_mpi_library_version_line(void);

// "Open MPI", "MPICH" or "an unknown MPI".
const char *hl_mpi_family_name(hl_mpi_family_t family);

#endif  // HL_COLLECTIVES_MPI_FAMILY_H_
