// Placement of a rank on its node: each rank binds itself (hwloc) to its
// share of the node's cores, after MPI told it its node-local rank.
#ifndef HL_LAUNCHER_BINDING_H_
#define HL_LAUNCHER_BINDING_H_

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"

typedef enum hl_bind_policy {
  HL_BIND_CORE = 0,  // default: an even share of the node's cores
  HL_BIND_NUMA,      // the whole NUMA node(s) the rank falls on
  HL_BIND_NONE,      // leave the placement to the OS
} hl_bind_policy_t;

// "core" / "numa" / "none".
hl_status_t hl_bind_policy_parse(const char *text, hl_bind_policy_t *out_policy);
const char *hl_bind_policy_name(hl_bind_policy_t policy);

// Pure placement math, independent of hwloc so it can be unit tested.
//
// The node has `numa_count` NUMA nodes; node n has cores_per_numa[n] cores,
// numbered consecutively node after node (core positions 0 .. total-1).
// Local rank `local_rank` of `local_size` ranks gets a run of core positions
// [*out_first, *out_first + *out_count):
//  - ranks are first spread over the NUMA nodes in blocks (ranks 0..k-1 on
//    node 0, ...), in proportion to the nodes' core counts, so a rank's cores
//    never straddle two nodes when there are at least as many ranks as nodes;
//    with fewer ranks than nodes each rank gets whole nodes;
//  - within a node, its ranks split its cores evenly (the first ones get one
//    more when they do not divide); with more ranks than cores, consecutive
//    ranks share a core (ranks never fail for lack of cores).
// HL_BIND_NUMA gives the whole node(s) instead of a share of the cores.
// HL_BIND_NONE gives every core. Errors only for nonsense arguments.
hl_status_t hl_binding_plan(int numa_count, const int *cores_per_numa, hl_bind_policy_t policy,
                            int local_rank, int local_size, int *out_first, int *out_count);

// Splits `units` among `takers`: taker i gets [*out_first, *out_first +
// *out_count). More takers than units: block-wise sharing, count 1.
void hl_binding_split(int units, int takers, int i, int *out_first, int *out_count);

// Tasks on node `node_id` from a Slurm tasks-per-node list such as
// "2(x3),1" (nodes 0-2 have 2, node 3 has 1); -1 when the list does not say.
int hl_binding_slurm_tasks_on_node(const char *list, int node_id);

// Call before MPI_Init. A rank started by srun with more tasks on its node
// than CPUs it may use asks Open MPI to yield when idle (what mpirun does
// by itself when it knows it oversubscribes; without it, busy-polling
// ranks make every collective crawl), unless OMPI_MCA_mpi_yield_when_idle
// is set already.
void hl_binding_prepare_mpi(void);

typedef struct hl_binding {
  int local_rank, local_size;  // from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)
  char host[256];
  char cpuset[256];            // the bound cpuset as a list ("0-3,8"), after binding
  int threads;                 // threads the rank's BLAS / OpenMP may use
  bool bound;
  char warning[256];           // why binding was skipped, or ""
} hl_binding_t;

// Collective over `comm`: learns the local rank from MPI, binds this process
// (every thread) to its share and limits OpenMP threads to the size of the
// cpuset (out->threads, the default thread count) unless
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say otherwise.
// A failure to bind is not an error: out->warning says why.
void hl_binding_apply(MPI_Comm comm, hl_bind_policy_t policy, hl_binding_t *out);

// The rank's thread count: `requested` (--threads) when > 0, else the
// cpuset's size as hl_binding_apply found it (1 when unbound). OpenBLAS is
// set to one thread (the runtime splits gemms over its own pool) unless
// OPENBLAS_NUM_THREADS / OMP_NUM_THREADS say otherwise.
int hl_binding_set_threads(hl_binding_t *binding, int requested);

// Collective over `comm`: rank 0 prints one line per rank, in rank order, to
// stderr: "hlo-launch: binding: host=H rank=K replica=R partition=P
// local_rank=L/N cpuset=LIST threads=T policy=core".
void hl_binding_report(MPI_Comm comm, const hl_binding_t *binding, int rank, int64_t replica,
                       int64_t partition, hl_bind_policy_t policy);

#endif  // HL_LAUNCHER_BINDING_H_
