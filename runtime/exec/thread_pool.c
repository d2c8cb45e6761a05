// Thread pool: workers sleep on a condition variable until a run is posted
// (a new generation), take task numbers from an atomic counter, and report
// back when the counter is exhausted.
#include "runtime/exec/thread_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/base/alloc.h"

struct hl_thread_pool {
  int size;                 // threads including the caller
  pthread_t *threads;       // size - 1 workers
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  uint64_t generation;      // bumped per run (under mu)
  bool stop;
  int busy;                 // workers still inside the current run
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
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->stop && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->generation;
    pthread_mutex_unlock(&p->mu);
    take_tasks(p, index);
    pthread_mutex_lock(&p->mu);
    if (--p->busy == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
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
  p->stop = true;
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
  pthread_mutex_lock(&p->mu);
  p->fn = fn;
  p->arg = arg;
  p->tasks = tasks;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->busy = p->size - 1;
  p->generation++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  take_tasks(p, 0);
  pthread_mutex_lock(&p->mu);
  while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

typedef struct ranges {
  hl_task_fn_t fn;
  void *arg;
  int64_t items, per_task;
} ranges_t;

static void range_task(void *raw, int64_t task, int worker) {
  const ranges_t *r = raw;
  int64_t i0 = task * r->per_task, i1 = i0 + r->per_task < r->items ? i0 + r->per_task : r->items;
  for (int64_t i = i0; i < i1; i++) r->fn(r->arg, i, worker);
}

void hl_thread_pool_run_ranges(hl_thread_pool_t *p, int64_t items, hl_task_fn_t fn, void *arg) {
  if (items <= 0) return;
  int64_t tasks_wanted = 8 * (int64_t)hl_thread_pool_size(p);
  int64_t per = items / tasks_wanted > 1 ? items / tasks_wanted : 1;
  ranges_t r = {fn, arg, items, per};
  hl_thread_pool_run(p, (items + per - 1) / per, range_task, &r);
}

typedef struct chunks {
  hl_chunk_fn_t fn;
  void *arg;
  int64_t n, chunk;
} chunks_t;

static void chunk_task(void *raw, int64_t task, int worker) {
  const chunks_t *c = raw;
  int64_t lo = task * c->chunk, len = c->n - lo < c->chunk ? c->n - lo : c->chunk;
  c->fn(c->arg, lo, len, worker);
}

void hl_thread_pool_run_chunks(hl_thread_pool_t *p, int64_t n, hl_chunk_fn_t fn, void *arg) {
  if (n <= 0) return;
  int threads = hl_thread_pool_size(p);
  if (threads <= 1 || n < HL_POOL_CHUNK_MIN_ITEMS) {
    fn(arg, 0, n, 0);
    return;
  }
  int64_t chunk = (n + 4 * (int64_t)threads - 1) / (4 * (int64_t)threads);
  chunk = (chunk + 63) & ~INT64_C(63);
  chunks_t c = {fn, arg, n, chunk};
  hl_thread_pool_run(p, (n + chunk - 1) / chunk, chunk_task, &c);
}
