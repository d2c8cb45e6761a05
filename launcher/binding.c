#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT
#include "launcher/binding.h"

#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/mpi_family.h"
#include "collectives/mpi_polite.h"
#include "runtime/base/alloc.h"
#include "runtime/kernels/blas_threads.h"

hl_status_t hl_bind_policy_parse(const char *text, hl_bind_policy_t *out) {
  if (strcmp(text, "core") == 0 || strcmp(text, "cores") == 0)
    *out = HL_BIND_CORE;
  else if (strcmp(text, "numa") == 0)
    *out = HL_BIND_NUMA;
  else if (strcmp(text, "none") == 0)
    *out = HL_BIND_NONE;
  else
    return HL_INVALID("--bind-to needs core, numa or none, got '%s'", text);
  return NULL;
}

const char *hl_bind_policy_name(hl_bind_policy_t policy) {
  switch (policy) {
    case HL_BIND_CORE: return "core";
    case HL_BIND_NUMA: return "numa";
    case HL_BIND_NONE: return "none";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Placement math
//===----------------------------------------------------------------------===//

void hl_binding_split(int units, int takers, int i, int *out_first, int *out_count) {
  int64_t first = (int64_t)i * units / takers;
  if (takers > units) {
    // Block-wise sharing keeps neighbouring ranks (which talk most in rings)
    // on the same core.
    *out_first = (int)first;
    *out_count = 1;
    return;
  }
  int64_t next = (int64_t)(i + 1) * units / takers;
  *out_first = (int)first;
  *out_count = (int)(next - first);
}

hl_status_t hl_binding_plan(int numa_count, const int *cores_per_numa, hl_bind_policy_t policy,
                            int local_rank, int local_size, int *out_first, int *out_count) {
  if (numa_count < 1) return HL_INVALID("binding: %d NUMA nodes", numa_count);
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size)
    return HL_INVALID("binding: local rank %d of %d", local_rank, local_size);
  int64_t total = 0;
  for (int n = 0; n < numa_count; n++) {
    if (cores_per_numa[n] < 0) return HL_INVALID("binding: NUMA node %d has no core count", n);
    total += cores_per_numa[n];
  }
  if (total < 1 || total > (1 << 24)) return HL_INVALID("binding: %lld cores", (long long)total);
  if (policy == HL_BIND_NONE) {
    *out_first = 0;
    *out_count = (int)total;
    return NULL;
  }
  // Positions of the nodes' first cores.
  int64_t start = 0;
  if (local_size < numa_count) {
    // Fewer ranks than nodes: whole nodes each, for both policies.
    int first_node, node_count;
    hl_binding_split(numa_count, local_size, local_rank, &first_node, &node_count);
    int64_t count = 0;
    for (int n = 0; n < first_node; n++) start += cores_per_numa[n];
    for (int n = first_node; n < first_node + node_count; n++) count += cores_per_numa[n];
    if (count == 0) {
      // Only memory on those nodes (HBM, CXL): fall back to an even share
      // of all cores.
      hl_binding_split((int)total, local_size, local_rank, out_first, out_count);
      return NULL;
    }
    *out_first = (int)start;
    *out_count = (int)count;
    return NULL;
  }
  // Node n takes ranks [floor(N * C_n / T), floor(N * C_{n+1} / T)), C_n the
  // cores before node n: in proportion to its cores, none for core-less nodes.
  int64_t before = 0;
  for (int n = 0; n < numa_count; n++) {
    int64_t r0 = (int64_t)local_size * before / total;
    int64_t r1 = (int64_t)local_size * (before + cores_per_numa[n]) / total;
    if (local_rank >= r0 && local_rank < r1) {
      if (policy == HL_BIND_NUMA) {
        *out_first = (int)before;
        *out_count = cores_per_numa[n];
        return NULL;
      }
      int first, count;
      hl_binding_split(cores_per_numa[n], (int)(r1 - r0), (int)(local_rank - r0), &first, &count);
      *out_first = (int)(before + first);
      *out_count = count;
      return NULL;
    }
    before += cores_per_numa[n];
  }
  return HL_INTERNAL_ERROR("binding: local rank %d fell on no NUMA node", local_rank);
}

int hl_binding_slurm_tasks_on_node(const char *list, int node_id) {
  if (!list || node_id < 0) return -1;
  const char *p = list;
  int node = 0;
  while (*p) {
    char *end;
    long tasks = strtol(p, &end, 10);
    if (end == p || tasks < 0) return -1;
    long repeat = 1;
    p = end;
    if (p[0] == '(' && p[1] == 'x') {
      repeat = strtol(p + 2, &end, 10);
      if (end == p + 2 || *end != ')' || repeat < 1) return -1;
      p = end + 1;
    }
    if (node_id < node + repeat) return (int)tasks;
    node += (int)repeat;
    if (*p == ',')
      p++;
    else if (*p)
      return -1;
  }
  return -1;
}

void hl_binding_prepare_mpi(void) {
  // An Open MPI setting (MPICH ignores it and has none alike).
  if (hl_mpi_library_family() != HL_MPI_FAMILY_OPENMPI) return;
  if (getenv("OMPI_MCA_mpi_yield_when_idle") || !getenv("SLURM_STEP_ID")) return;
  const char *node = getenv("SLURM_NODEID");
  int tasks = hl_binding_slurm_tasks_on_node(getenv("SLURM_STEP_TASKS_PER_NODE"),
                                             node ? atoi(node) : 0);
  cpu_set_t cpus;
  if (tasks < 0 || sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return;
  if (tasks > CPU_COUNT(&cpus)) setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
}

//===----------------------------------------------------------------------===//
// hwloc
//===----------------------------------------------------------------------===//

// The node's cores (PUs where hwloc finds no cores) grouped by NUMA node in
// logical order: *out_order[i] is the logical index of core position i.
static bool group_cores(hwloc_topology_t topo, hwloc_obj_type_t type, int **out_order,
                        int **out_per_numa, int *out_numa_count) {
  int ncores = hwloc_get_nbobjs_by_type(topo, type);
  int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  if (ncores < 1) return false;
  if (nnuma < 1) nnuma = 1;
  int *order = hl_calloc((size_t)ncores, sizeof(int));
  int *per = hl_calloc((size_t)nnuma, sizeof(int));
  bool *used = hl_calloc((size_t)ncores, sizeof(bool));
  if (!order || !per || !used) {
    hl_free(order);
    hl_free(per);
    hl_free(used);
    return false;
  }
  int placed = 0;
  for (int n = 0; n < nnuma; n++) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)n);
    for (int c = 0; c < ncores; c++) {
      hwloc_obj_t core = hwloc_get_obj_by_type(topo, type, (unsigned)c);
      if (used[c] || !core || !core->cpuset) continue;
      if (node && node->cpuset && !hwloc_bitmap_isincluded(core->cpuset, node->cpuset)) continue;
      used[c] = true;
      order[placed++] = c;
      per[n]++;
    }
  }
  if (placed != ncores) {
    // Cores outside every node's cpuset: treat the machine as one node.
    for (int c = 0; c < ncores; c++) order[c] = c;
    nnuma = 1;
    per[0] = ncores;
  }
  hl_free(used);
  *out_order = order;
  *out_per_numa = per;
  *out_numa_count = nnuma;
  return true;
}

// True once limit_threads has set OMP_NUM_THREADS itself: the variable then
// no longer means the user chose a count, so --threads may still set it.
static bool g_set_omp_threads;

static void limit_threads(hl_binding_t *b, int pus) {
  bool user_says = getenv("OPENBLAS_NUM_THREADS") || getenv("OMP_NUM_THREADS");
  if (!user_says && pus > 0) {
    char text[16];
    snprintf(text, sizeof(text), "%d", pus);
    // For OpenMP runtimes that start after this point.
    setenv("OMP_NUM_THREADS", text, 0);
    g_set_omp_threads = true;
    b->threads = pus;
    return;
  }
  // The user's count as OpenBLAS read it (0 when the BLAS behind libblas.so
  // is another). OpenBLAS itself is set by hl_binding_set_threads.
  int blas = hl_blas_threads_get();
  b->threads = blas > 0 ? blas : (user_says ? 0 : pus);
}

void hl_binding_apply(MPI_Comm comm, hl_bind_policy_t policy, hl_binding_t *out) {
  memset(out, 0, sizeof(*out));
  int rank;
  MPI_Comm_rank(comm, &rank);
  // MPI knows which ranks share the node, in every launch mode; Slurm's and
  // Open MPI's variables are stale under mpirun inside an allocation.
  MPI_Comm shm;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shm);
  MPI_Comm_rank(shm, &out->local_rank);
  MPI_Comm_size(shm, &out->local_size);
  MPI_Comm_free(&shm);
  if (gethostname(out->host, sizeof(out->host) - 1) != 0) snprintf(out->host, sizeof(out->host), "?");

  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) {
    snprintf(out->warning, sizeof(out->warning), "hwloc could not start");
    snprintf(out->cpuset, sizeof(out->cpuset), "?");
    return;
  }
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  int *order = NULL, *per = NULL, nnuma = 0;
  if (hwloc_topology_load(topo) != 0) {
    snprintf(out->warning, sizeof(out->warning), "hwloc could not read the topology");
  } else if (policy != HL_BIND_NONE) {
    hwloc_obj_type_t type =
        hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int first = 0, count = 0;
    hl_status_t st = NULL;
    if (!group_cores(topo, type, &order, &per, &nnuma))
      snprintf(out->warning, sizeof(out->warning), "hwloc found no cores");
    else if ((st = hl_binding_plan(nnuma, per, policy, out->local_rank, out->local_size, &first,
                                   &count))) {
      snprintf(out->warning, sizeof(out->warning), "%s", hl_status_message(st));
      hl_status_free(st);
    } else {
      hwloc_bitmap_zero(set);
      for (int i = first; i < first + count; i++) {
        hwloc_obj_t core = hwloc_get_obj_by_type(topo, type, (unsigned)order[i]);
        if (core && core->cpuset) hwloc_bitmap_or(set, set, core->cpuset);
      }
      // HWLOC_CPUBIND_PROCESS binds every thread, including MPI's and
      // OpenBLAS's, which exist already.
      if (hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
        out->bound = true;
      else
        snprintf(out->warning, sizeof(out->warning), "hwloc_set_cpubind failed");
    }
  }
  if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_bitmap_copy(set, hwloc_topology_get_allowed_cpuset(topo));
  char *list = NULL;
  hwloc_bitmap_list_asprintf(&list, set);
  snprintf(out->cpuset, sizeof(out->cpuset), "%s", list ? list : "?");
  free(list);  // allocated by hwloc with malloc
  if (policy != HL_BIND_NONE) limit_threads(out, hwloc_bitmap_weight(set));
  else out->threads = 0;
  hl_free(order);
  hl_free(per);
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(topo);
}

int hl_binding_set_threads(hl_binding_t *b, int requested) {
  int threads = requested > 0 ? requested : (b->bound && b->threads > 0 ? b->threads : 1);
  // OMP_NUM_THREADS set by limit_threads is ours, not the user's.
  bool user_says = getenv("OPENBLAS_NUM_THREADS") ||
                   (getenv("OMP_NUM_THREADS") && !g_set_omp_threads);
  if (!user_says) {
    // OpenBLAS gets one thread, bound or not: the runtime cuts gemms into
    // tiles over its own pool (runtime/kernels/gemm_tiles.h; BLAS's thread
    // count changes its bits), and idle BLAS threads would only spin beside
    // the pool's.
    hl_blas_threads_set(1);
    if (g_set_omp_threads && (requested > 0 || b->bound)) {
      char text[16];
      snprintf(text, sizeof(text), "%d", threads);
      setenv("OMP_NUM_THREADS", text, 1);
    }
  }
  b->threads = threads;
  return threads;
}

enum { kLineBytes = 640 };

void hl_binding_report(MPI_Comm comm, const hl_binding_t *b, int rank, int64_t replica,
                       int64_t partition, hl_bind_policy_t policy) {
  int size;
  MPI_Comm_size(comm, &size);
  char line[kLineBytes];
  char threads[24];
  if (b->threads > 0)
    snprintf(threads, sizeof(threads), "%d", b->threads);
  else
    snprintf(threads, sizeof(threads), "default");
  // What OpenBLAS itself will use (asked, not assumed).
  int blas_count = hl_blas_threads_get();
  char blas[32] = "";
  if (blas_count > 0) snprintf(blas, sizeof(blas), " blas_threads=%d", blas_count);
  snprintf(line, sizeof(line),
           "hlo-launch: binding: host=%.64s rank=%d replica=%lld partition=%lld local_rank=%d/%d "
           "cpuset=%.200s threads=%s policy=%s%s%s%.200s",
           b->host, rank, (long long)replica, (long long)partition, b->local_rank, b->local_size,
           b->cpuset, threads, hl_bind_policy_name(policy), blas,
           b->warning[0] ? " warning=" : "", b->warning);
  char *all = rank == 0 ? hl_malloc((size_t)size * kLineBytes) : NULL;
  hl_polite_gather(line, kLineBytes, MPI_CHAR, all, kLineBytes, MPI_CHAR, 0, comm);
  if (rank == 0 && all) {
    for (int r = 0; r < size; r++) fprintf(stderr, "%.*s\n", kLineBytes, all + (size_t)r * kLineBytes);
    fflush(stderr);
  }
  hl_free(all);
}
