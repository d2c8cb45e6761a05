// A fixed pool of threads per process (per MPI rank) for work that splits
// into independent tasks: blocked fusions, reductions by rows, ...
//
//   hl_thread_pool_t *pool;
//   HL_RETURN_IF_ERROR(hl_thread_pool_create(2, &pool));   // caller + 1 worker
//   hl_thread_pool_run(pool, tasks, fn, arg);  // fn(arg, task, worker) for every task
//   hl_thread_pool_destroy(pool);
//
// The calling thread is worker 0 and takes tasks too; hl_thread_pool_run
// returns when every task is done. Tasks are handed out in ascending order
// from a shared counter, so any task may run on any worker: fn must write
// disjoint memory per task. One run at a time per pool (the executor is
// single-threaded above it); a NULL pool runs every task on the caller.
// Between runs the workers spin for up to 200 us before they sleep, so runs
// posted instruction after instruction start without a wake-up.
#ifndef HL_RUNTIME_THREADS_THREAD_POOL_H_
#define HL_RUNTIME_THREADS_THREAD_POOL_H_

#include <stdint.h>

#include "runtime/base/status.h"

typedef struct hl_thread_pool hl_thread_pool_t;

// threads >= 1 (1: no extra thread is started).
hl_status_t hl_thread_pool_create(int threads, hl_thread_pool_t **out_pool);
void hl_thread_pool_destroy(hl_thread_pool_t *pool);  // NULL-safe; joins the workers
int hl_thread_pool_size(const hl_thread_pool_t *pool);  // 1 for NULL

typedef void (*hl_task_fn_t)(void *arg, int64_t task, int worker);
void hl_thread_pool_run(hl_thread_pool_t *pool, int64_t tasks, hl_task_fn_t fn, void *arg);

// The same for many small items (blocks of a fusion, rows): threads take
// contiguous ranges of items that shrink as the work runs out (guided
// self-scheduling: each a 1/(2 x threads) share of what is left), so a
// thread streams through neighbouring memory, the shared counter moves
// between cores rarely, and the threads finish together. fn(arg, item,
// worker) per item; on a NULL pool or one thread, ascending on the caller.
void hl_thread_pool_run_ranges(hl_thread_pool_t *pool, int64_t items, hl_task_fn_t fn,
                               void *arg);

// An array of n items cut into contiguous chunks, shrinking as for ranges
// (each a multiple of 64 items, at least HL_POOL_CHUNK_MIN_ITEMS / 16),
// fn(arg, lo, len, worker) per chunk; below
// HL_POOL_CHUNK_MIN_ITEMS items, or without a pool, one call on the caller
// with the whole array. For element-wise array loops: any cut gives the
// same bits.
#define HL_POOL_CHUNK_MIN_ITEMS (INT64_C(1) << 16)
typedef void (*hl_chunk_fn_t)(void *arg, int64_t lo, int64_t len, int worker);
void hl_thread_pool_run_chunks(hl_thread_pool_t *pool, int64_t n, hl_chunk_fn_t fn, void *arg);

#endif  // HL_RUNTIME_THREADS_THREAD_POOL_H_
