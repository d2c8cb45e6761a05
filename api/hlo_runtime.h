/* hlo_runtime.h: run XLA and StableHLO programs (JAX exports, HLO dumps)
 * inside an MPI application, on the application's own communicator.
 *
 * The one public header of libhlo_runtime; docs/EMBEDDING.md is the guide.
 *
 *   hlo_program_t *program;  hlo_runner_t *runner;
 *   hlo_status_t st = hlo_program_load("model.mlir", &program);
 *   if (!st) st = hlo_runner_create(program, MPI_COMM_WORLD, NULL, &runner);
 *   for (step = 0; !st && step < n; step++)
 *     st = hlo_runner_run(runner, args, 2, results, 1);
 *   if (st) { puts(hlo_status_message(st)); hlo_status_free(st); }
 *   hlo_runner_free(runner);   // collective over the communicator
 *   hlo_program_free(program);
 *
 * Errors are values: a function that can fail returns an hlo_status_t, NULL
 * meaning success; any other value carries a code and a message and is
 * freed with hlo_status_free. No function aborts the process or prints.
 * Functions marked "collective" are called by every process of the runner's
 * communicator, in the same order, as MPI collectives are; they return the
 * same verdict on every process (an error on one is an error on all, its
 * message naming the ranks that failed and why).
 *
 * Arrays (hlo_buffer_t) are dense, row-major by default (C order), or
 * column-major (Fortran order) when their `order` says so.
 */
#ifndef HLO_RUNTIME_H_
#define HLO_RUNTIME_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HLO_API __attribute__((visibility("default")))
#else
#define HLO_API
#endif

/* The API's version: bumped when a declaration here changes. */
#define HLO_RUNTIME_API_VERSION 2
/* The most dimensions an array has. */
#define HLO_MAX_RANK 16

/*--- Status -------------------------------------------------------------*/

typedef struct hlo_status_s *hlo_status_t;

typedef enum hlo_status_code {
  HLO_STATUS_OK = 0,
  HLO_STATUS_INVALID_ARGUMENT = 1, /* a bad program, argument or option */
  HLO_STATUS_UNIMPLEMENTED = 2,    /* valid XLA this runtime does not run */
  HLO_STATUS_NOT_FOUND = 3,
  HLO_STATUS_IO_ERROR = 4,
  HLO_STATUS_OUT_OF_MEMORY = 5,
  HLO_STATUS_INTERNAL = 6,         /* a broken invariant of the runtime */
  HLO_STATUS_COMM_ERROR = 7        /* an MPI failure */
} hlo_status_code_t;

/* HLO_STATUS_OK for NULL. */
HLO_API hlo_status_code_t hlo_status_code(hlo_status_t status);
/* The message ("" for NULL), valid until the status is freed. */
HLO_API const char *hlo_status_message(hlo_status_t status);
HLO_API void hlo_status_free(hlo_status_t status); /* NULL-safe */

/* "0.1.0": the library's version. */
HLO_API const char *hlo_version(void);

/*--- Arrays -------------------------------------------------------------*/

/* Element types, numbered as XLA's PrimitiveType. */
typedef enum hlo_dtype {
  HLO_INVALID = 0,
  HLO_PRED = 1, /* one byte per element, 0 or 1 */
  HLO_S8 = 2,
  HLO_S16 = 3,
  HLO_S32 = 4,
  HLO_S64 = 5,
  HLO_U8 = 6,
  HLO_U16 = 7,
  HLO_U32 = 8,
  HLO_U64 = 9,
  HLO_F16 = 10,
  HLO_F32 = 11,
  HLO_F64 = 12,
  HLO_C64 = 15,  /* two floats: real, imaginary */
  HLO_BF16 = 16,
  HLO_C128 = 18, /* two doubles */
  HLO_F8E5M2 = 19,
  HLO_F8E4M3FN = 20
} hlo_dtype_t;

/* Bytes per element (0 for a type hlo_buffer_t does not carry). */
HLO_API int32_t hlo_dtype_size(hlo_dtype_t dtype);

typedef enum hlo_order {
  HLO_ROW_MAJOR = 0,   /* C order: the last index varies fastest */
  HLO_COLUMN_MAJOR = 1 /* Fortran order: the first index varies fastest */
} hlo_order_t;

/* An array: dims[0..rank-1] elements of dtype at data. A zeroed buffer
 * (= {0}) is a row-major scalar of no type, ready to be a result slot. */
typedef struct hlo_buffer {
  hlo_dtype_t dtype;
  int32_t rank;
  const int64_t *dims;
  void *data;
  /* Element order of data. A column-major array is the same logical array
   * as a row-major one (element (i, j) is element (i, j)): the runtime
   * reorders it on the way in and out, at the cost of a copy. */
  hlo_order_t order;
} hlo_buffer_t;

/* Frees what hlo_runner_run allocated for a result (data and dims) and
 * zeroes the buffer. Only for buffers the runtime filled in. */
HLO_API void hlo_buffer_free(hlo_buffer_t *buffer);

/*--- Programs -----------------------------------------------------------*/

typedef struct hlo_program hlo_program_t;

/* Loads a program in any format hlo-launch reads, detected by content
 * (StableHLO text, HLO text, HloProto / HloModuleProto / HloSnapshot,
 * gzipped or not) and verifies it. Not collective: every process that
 * makes a runner loads the file itself. */
HLO_API hlo_status_t hlo_program_load(const char *path, hlo_program_t **out_program);
/* The same for a program in memory (e.g. linked into the application):
 * `size` bytes at `data`, read during the call; `name` stands for the file
 * in messages. */
HLO_API hlo_status_t hlo_program_load_memory(const void *data, size_t size, const char *name,
                                             hlo_program_t **out_program);
/* The program must outlive every runner made from it. */
HLO_API void hlo_program_free(hlo_program_t *program); /* NULL-safe */

/*--- Runners ------------------------------------------------------------*/

typedef enum hlo_collectives {
  HLO_COLLECTIVES_AUTO = 0, /* node shared memory where measured faster, else MPI */
  HLO_COLLECTIVES_MPI = 1,  /* MPI only */
  HLO_COLLECTIVES_SHM = 2   /* node shared memory for every node-local group */
} hlo_collectives_t;

/* Options of a runner. Made by hlo_runner_options_init (the defaults, and
 * struct_size); then set the fields wanted. The struct only grows, at its
 * end: a program compiled against an older header passes a smaller
 * struct_size and gets the defaults for the fields it does not know. */
typedef struct hlo_runner_options {
  /* sizeof(hlo_runner_options_t) as the caller compiled it (set by
   * hlo_runner_options_init; a struct that was not initialized is refused). */
  size_t struct_size;
  /* The process grid, replicas x partitions = the communicator's size;
   * 0: as the program says (mhlo.num_replicas / num_partitions), or the
   * other count divided out of the size, or all replicas. */
  int64_t replicas, partitions;
  /* Threads of this process for the runtime's split work; 0 or 1: the
   * calling thread alone (the application owns its cores). */
  int32_t threads;
  hlo_collectives_t collectives;
  /* Nonzero: a program with shardings and no collectives of its own is
   * partitioned for the grid's partitions even without a Sharding
   * custom-call (hlo-launch --global-program). */
  int32_t global_program;
  /* Nonzero: skip the static check that every process reaches the same
   * collectives (hlo-launch --no-collective-check). It runs only when every
   * process loaded a program of the same file name (or memory name):
   * processes of an MPMD application with different programs skip it. */
  int32_t no_collective_check;
  /* Nonzero: a run stops with an error at the first instruction that
   * produces a NaN (check_nans) or an infinity (check_infs), naming it and
   * describing its operands (hlo-launch --check-nans / --check-infs). They
   * turn the fusion pass off (every value is named). */
  int32_t check_nans, check_infs;
  /* How long a process whose run failed waits for the others to learn it
   * (seconds; default 30). A process that fails alone while the others
   * are blocked in a collective that needs it leaves the communicator
   * unusable (MPI cannot cancel a collective): after this long it prints
   * its error and calls MPI_Abort on the communicator (on MPI_COMM_WORLD
   * under MPICH, which would end this process alone) rather than hang the
   * job. Negative: wait forever. */
  double stuck_seconds;
  /* Nonzero: run the program as loaded, without the fusion pass (hlo-launch
   * --no-fusion-pass). By default a runner forms the fusions XLA's CPU
   * compiler would (StableHLO programs, "before optimizations" dumps) on
   * its own copy of the program's module; the results are the same. */
  int32_t no_fusion_pass;
  /* Nonzero: time every instruction of every run (hlo-launch --profile);
   * read with hlo_runner_profile_text. profile_first_apart: the first run
   * (cold: plans, compiled loops, first touch of memory) in a table of its
   * own. */
  int32_t profile, profile_first_apart;
  /* A Chrome / Perfetto trace (JSON) of the runs and their collectives on
   * every process (hlo-launch --trace), written by hlo_runner_write_trace;
   * NULL: none. Read during hlo_runner_create only. */
  const char *trace_path;
  /* The hang watchdog (hlo-launch --hang-timeout, docs/DEBUGGING.md): when
   * no process makes progress for this many seconds, process 0 prints a
   * report of every process's state (the instruction, the collective and
   * who it waits for) to stderr and ends the job (MPI_Abort of
   * MPI_COMM_WORLD, exit status 3). 0: off. Rank state files go to
   * debug_dir (NULL: a new directory in $TMPDIR, removed after a clean
   * hlo_runner_free). */
  double hang_timeout_seconds;
  const char *debug_dir;
} hlo_runner_options_t;

/* The defaults (what NULL options mean) and struct_size; call it through
 * hlo_runner_options_init, which passes the caller's sizeof. */
HLO_API void hlo_runner_options_initialize(hlo_runner_options_t *options, size_t struct_size);
static inline void hlo_runner_options_init(hlo_runner_options_t *options) {
  hlo_runner_options_initialize(options, sizeof(*options));
}

typedef struct hlo_runner hlo_runner_t;

/* Collective over `comm` (MPI initialized by the caller, at the thread
 * level it chose; the runner duplicates comm, so its traffic never meets
 * the application's). Binds the program to the processes of comm: rank k
 * of comm is the program's process k (replica k / P, partition k % P).
 * A global program (shardings, no collectives) is partitioned here. Sets
 * up the collectives and channels the program uses. */
HLO_API hlo_status_t hlo_runner_create(const hlo_program_t *program, MPI_Comm comm,
                                       const hlo_runner_options_t *options,
                                       hlo_runner_t **out_runner);
/* hlo_runner_create for a Fortran MPI handle (MPI_Comm_f2c); for language
 * bindings (the Fortran module hlo_runtime). */
HLO_API hlo_status_t hlo_runner_create_f(const hlo_program_t *program, MPI_Fint comm,
                                         const hlo_runner_options_t *options,
                                         hlo_runner_t **out_runner);
/* Collective (frees MPI communicators). NULL-safe. */
HLO_API void hlo_runner_free(hlo_runner_t *runner);

/* What this process's entry computation takes and gives (after
 * partitioning: a partition's shard). dims must hold HLO_MAX_RANK. */
HLO_API int32_t hlo_runner_arg_count(const hlo_runner_t *runner);
HLO_API int32_t hlo_runner_result_count(const hlo_runner_t *runner);
HLO_API hlo_status_t hlo_runner_arg_shape(const hlo_runner_t *runner, int32_t index,
                                          hlo_dtype_t *out_dtype, int32_t *out_rank,
                                          int64_t *out_dims);
HLO_API hlo_status_t hlo_runner_result_shape(const hlo_runner_t *runner, int32_t index,
                                             hlo_dtype_t *out_dtype, int32_t *out_rank,
                                             int64_t *out_dims);

/* Collective: runs the program once on this process's arguments.
 * args: one per entry parameter, read in place during the call (never
 * written). results: one per result (the entry's tuple elements, or its one
 * array). A result with data != NULL is written there; its dtype, rank and
 * dims must match. A result with data == NULL gets dtype, rank, dims and
 * data allocated by the runtime (free with hlo_buffer_free). On error
 * nothing is allocated. Repeated runs reuse everything built on the first
 * one. One run at a time per runner. */
HLO_API hlo_status_t hlo_runner_run(hlo_runner_t *runner, const hlo_buffer_t *args,
                                    int32_t nargs, hlo_buffer_t *results, int32_t nresults);

/* Collective: the per-instruction profile of the runs so far (options
 * .profile), every process's table of its `top` instructions (0: 20) with
 * its roofline line, in rank order, each headed "profile of rank ...".
 * *out_text (free with hlo_text_free) is the whole text on the
 * communicator's process 0 and "" on the others. */
HLO_API hlo_status_t hlo_runner_profile_text(hlo_runner_t *runner, int32_t top, char **out_text);
/* Collective: process 0 writes the trace of the runs so far, every
 * process's spans, to options.trace_path (Chrome trace JSON). */
HLO_API hlo_status_t hlo_runner_write_trace(hlo_runner_t *runner);
HLO_API void hlo_text_free(char *text); /* NULL-safe */

#ifdef __cplusplus
}
#endif

#endif /* HLO_RUNTIME_H_ */
