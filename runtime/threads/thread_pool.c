// Thread pool: a run is posted by bumping a generation counter; workers
// take task numbers from an atomic counter and report back through an
// atomic count of busy workers. Between runs a worker spins for a short
// while before it sleeps on a condition variable, and the caller spins
// before it sleeps waiting for the workers: the executor posts one run per
// instruction (fusion blocks, gemm tiles, conversions), microseconds apart,
// and a condition-variable round trip costs 30-50 us on a VM (wake-up IPIs),
// as much as a small fusion's whole work.
#include "runtime/threads/thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "runtime/base/alloc.h"

// How long a waiting thread spins before it sleeps: longer than the gaps
// between one instruction's pool run and the next, short enough that an
// oversubscribed core loses little to it.
#define SPIN_NS 200000

struct hl_thread_pool {
  int size;                 // threads including the caller
  pthread_t *threads;       // size - 1 workers
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  int sleepers;             // workers inside pthread_cond_wait(wake) (under mu)
  bool caller_sleeps;       // the caller is inside pthread_cond_wait(done) (under mu)
  _Atomic bool stop;
  _Atomic uint64_t generation;  // bumped per run, after the run's fields are set
  _Atomic int busy;             // workers still inside the current run
  // The current run.
  hl_task_fn_t fn;
  void *arg;
  int64_t tasks;
  _Atomic int64_t next;
};

struct worker_start {
  hl_thread_pool_t *pool;
  int index;
};

// One step of a bounded spin: a pause, and every 64 steps a look at the
// clock; false once SPIN_NS have passed since the first look (*deadline
// starts at 0).
static bool spin_on(int step, int64_t *deadline) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
  if ((step & 63) != 63) return true;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  if (!*deadline) *deadline = t + SPIN_NS;
  return t <= *deadline;
}

// Spin up to SPIN_NS for a new generation (or stop) / for the workers to
// finish; false when the time ran out first.
static bool spin_for_generation(hl_thread_pool_t *p, uint64_t seen) {
  int64_t deadline = 0;
  for (int i = 0; spin_on(i, &deadline); i++)
    if (atomic_load_explicit(&p->generation, memory_order_acquire) != seen ||
        atomic_load_explicit(&p->stop, memory_order_relaxed))
      return true;
  return false;
}

static bool spin_until_idle(hl_thread_pool_t *p) {
  int64_t deadline = 0;
  for (int i = 0; spin_on(i, &deadline); i++)
    if (atomic_load_explicit(&p->busy, memory_order_acquire) == 0) return true;
  return false;
}

static void take_tasks(hl_thread_pool_t *p, int worker) {
  for (;;) {
    int64_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (t >= p->tasks) return;
    p->fn(p->arg, t, worker);
  }
}

static void *worker_main(void *raw) {
  struct worker_start *ws = raw;
  hl_thread_pool_t *p = ws->pool;
  int index = ws->index;
  hl_free(ws);
  uint64_t seen = 0;
  for (;;) {
    if (!spin_for_generation(p, seen)) {
      pthread_mutex_lock(&p->mu);
      p->sleepers++;
      while (!atomic_load(&p->stop) && atomic_load(&p->generation) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
      p->sleepers--;
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) break;
    seen = atomic_load_explicit(&p->generation, memory_order_acquire);
    take_tasks(p, index);
    if (atomic_fetch_sub_explicit(&p->busy, 1, memory_order_acq_rel) == 1) {
      // The last worker out wakes a caller that stopped spinning.
      pthread_mutex_lock(&p->mu);
      if (p->caller_sleeps) pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

hl_status_t hl_thread_pool_create(int threads, hl_thread_pool_t **out_pool) {
  *out_pool = NULL;
  if (threads < 1) return HL_INVALID("thread pool needs at least 1 thread, got %d", threads);
  hl_thread_pool_t *p = hl_calloc(1, sizeof(*p));
  if (!p) return HL_OOM();
  p->size = 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (threads > 1) {
    p->threads = hl_calloc((size_t)threads - 1, sizeof(pthread_t));
    if (!p->threads) {
      hl_thread_pool_destroy(p);
      return HL_OOM();
    }
  }
  for (int i = 1; i < threads; i++) {
    struct worker_start *ws = hl_malloc(sizeof(*ws));
    if (!ws) {
      hl_thread_pool_destroy(p);
      return HL_OOM();
    }
    *ws = (struct worker_start){p, i};
    if (pthread_create(&p->threads[i - 1], NULL, worker_main, ws) != 0) {
      hl_free(ws);
      hl_thread_pool_destroy(p);
      return HL_ERROR(HL_INTERNAL, "cannot start thread %d of %d", i + 1, threads);
    }
    p->size++;
  }
  *out_pool = p;
  return NULL;
}

void hl_thread_pool_destroy(hl_thread_pool_t *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, true);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->size - 1; i++) pthread_join(p->threads[i], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  hl_free(p->threads);
  hl_free(p);
}

int hl_thread_pool_size(const hl_thread_pool_t *p) { return p ? p->size : 1; }

void hl_thread_pool_run(hl_thread_pool_t *p, int64_t tasks, hl_task_fn_t fn, void *arg) {
  if (tasks <= 0) return;
  if (!p || p->size == 1 || tasks == 1) {
    for (int64_t t = 0; t < tasks; t++) fn(arg, t, 0);
    return;
  }
  // Every worker is idle here (the previous run waited for them): the run's
  // fields are published by the generation's release store.
  p->fn = fn;
  p->arg = arg;
  p->tasks = tasks;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  atomic_store_explicit(&p->busy, p->size - 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
  // A worker that saw the old generation under mu is counted in sleepers
  // before it waits, so it cannot miss this broadcast.
  pthread_mutex_lock(&p->mu);
  if (p->sleepers) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  take_tasks(p, 0);
  if (!spin_until_idle(p)) {
    pthread_mutex_lock(&p->mu);
    p->caller_sleeps = true;
    while (atomic_load(&p->busy) > 0) pthread_cond_wait(&p->done, &p->mu);
    p->caller_sleeps = false;
    pthread_mutex_unlock(&p->mu);
  }
}

// Guided self-scheduling for ranges and chunks: every thread takes the next
// piece of the remaining items from one shared counter, a piece being a
// 1/(2 x threads) share of what remains (at least `min_take`, a multiple of
// `align`). Pieces shrink as the work runs out, so the threads finish within
// about one small piece of each other (fixed-size pieces left a tail of up
// to one piece, 1/8 of the run, on a single thread), while the counter is
// touched only O(threads x log items) times.
typedef struct guided {
  hl_task_fn_t item_fn;   // ranges: fn(arg, item, worker) per item
  hl_chunk_fn_t chunk_fn; // chunks: fn(arg, lo, len, worker) per piece
  void *arg;
  int64_t n, min_take, align;
  int threads;
  _Atomic int64_t next;
} guided_t;

static bool guided_take(guided_t *g, int64_t *lo, int64_t *len) {
  int64_t cur = atomic_load_explicit(&g->next, memory_order_relaxed);
  for (;;) {
    if (cur >= g->n) return false;
    int64_t rest = g->n - cur;
    int64_t take = rest / (2 * (int64_t)g->threads);
    if (take < g->min_take) take = g->min_take;
    take = (take + g->align - 1) / g->align * g->align;
    if (take > rest) take = rest;
    if (atomic_compare_exchange_weak_explicit(&g->next, &cur, cur + take, memory_order_relaxed,
                                              memory_order_relaxed)) {
      *lo = cur;
      *len = take;
      return true;
    }
  }
}

// One task per thread; each takes pieces until none are left.
static void guided_task(void *raw, int64_t task, int worker) {
  (void)task;
  guided_t *g = raw;
  int64_t lo, len;
  while (guided_take(g, &lo, &len)) {
    if (g->chunk_fn)
      g->chunk_fn(g->arg, lo, len, worker);
    else
      for (int64_t i = lo; i < lo + len; i++) g->item_fn(g->arg, i, worker);
  }
}

void hl_thread_pool_run_ranges(hl_thread_pool_t *p, int64_t items, hl_task_fn_t fn, void *arg) {
  if (items <= 0) return;
  guided_t g = {.item_fn = fn, .arg = arg, .n = items, .min_take = 1, .align = 1,
                .threads = hl_thread_pool_size(p)};
  atomic_init(&g.next, 0);
  hl_thread_pool_run(p, g.threads, guided_task, &g);
}

void hl_thread_pool_run_chunks(hl_thread_pool_t *p, int64_t n, hl_chunk_fn_t fn, void *arg) {
  if (n <= 0) return;
  int threads = hl_thread_pool_size(p);
  if (threads <= 1 || n < HL_POOL_CHUNK_MIN_ITEMS) {
    fn(arg, 0, n, 0);
    return;
  }
  guided_t g = {.chunk_fn = fn, .arg = arg, .n = n, .min_take = HL_POOL_CHUNK_MIN_ITEMS / 16,
                .align = 64, .threads = threads};
  atomic_init(&g.next, 0);
  hl_thread_pool_run(p, threads, guided_task, &g);
}
