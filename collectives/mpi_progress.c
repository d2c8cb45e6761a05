// Progress for non-blocking collectives while the process computes.
//
// MPI moves a non-blocking collective forward only inside MPI calls. With a
// -start / -done pair around compute, a process that computes makes no MPI
// calls, so its peers waiting in their -done would wait for its compute too
// (e.g. a 2-rank Iallreduce whose root must receive, reduce and send back).
// A progress thread therefore tests the pending requests while any exist,
// sleeping between rounds with a backoff (20 us doubling to 1 ms), so it
// costs little CPU next to the compute it overlaps.
//
// MPI forbids two threads completing one request concurrently: the thread
// tests a request only while it is registered, under the lock; wait
// unregisters it under the same lock before completing it itself. Needs
// MPI_THREAD_MULTIPLE (the launcher asks for it); without it, no thread is
// started and requests progress at -done only.
//
// A tool may watch the thread through the progress hook (progress_hook.h):
// one call per request it worked on, made under the lock.
#include <pthread.h>
#include <time.h>

#include "collectives/mpi_internal.h"
#include "collectives/progress_hook.h"
#include "runtime/base/alloc.h"

static const hl_progress_hook_t *g_hook;  // read and written atomically

void hl_collectives_set_progress_hook(const hl_progress_hook_t *hook) {
  __atomic_store_n(&g_hook, hook, __ATOMIC_RELEASE);
}

static int64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t hl_progress_hook_now_ns(void) {
  return __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE) ? monotonic_ns() : 0;
}

void hl_progress_hook_report(const hl_instruction_t *inst, int64_t bytes, int64_t start_ns,
                             int64_t end_ns, int tests, bool completed) {
  const hl_progress_hook_t *hook = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
  if (hook && start_ns) hook->span(hook->ctx, inst, bytes, start_ns, end_ns, tests, completed);
}

// The hook's call for r (once per request), ending at `end_ns`.
static void report(const hl_progress_hook_t *hook, hl_comm_request_t *r, int64_t end_ns,
                   bool completed) {
  if (!hook || !r->hook_start_ns || r->hook_reported) return;
  r->hook_reported = true;
  hook->span(hook->ctx, r->inst, r->bytes, r->hook_start_ns, end_ns, r->hook_tests, completed);
}

typedef struct hl_mpi_progress {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  hl_comm_request_t **pending;
  int count, cap;
  bool started, stop;
} hl_mpi_progress_t;

static void *progress_main(void *arg) {
  hl_mpi_progress_t *p = arg;
  long pause_ns = 20000;
  pthread_mutex_lock(&p->lock);
  while (!p->stop) {
    if (p->count == 0) {
      pause_ns = 20000;
      pthread_cond_wait(&p->wake, &p->lock);
      continue;
    }
    bool any = false;
    const hl_progress_hook_t *hook = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
    int64_t round_ns = hook ? monotonic_ns() : 0;
    for (int i = 0; i < p->count; i++) {
      hl_comm_request_t *r = p->pending[i];
      bool left = false;
      for (int k = 0; k < r->n; k++) {
        if (r->reqs[k] == MPI_REQUEST_NULL) continue;
        int done = 0;
        // Completed requests become MPI_REQUEST_NULL, which wait skips.
        if (MPI_Test(&r->reqs[k], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) any = true;
        if (!done) left = true;
      }
      if (hook && !r->hook_reported) {
        if (!r->hook_start_ns) r->hook_start_ns = round_ns;
        r->hook_tests++;
        if (!left) report(hook, r, monotonic_ns(), true);
      }
    }
    pthread_mutex_unlock(&p->lock);
    pause_ns = any ? 20000 : (pause_ns * 2 > 1000000 ? 1000000 : pause_ns * 2);
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

hl_status_t hl_mpi_progress_create(hl_mpi_progress_t **out) {
  *out = NULL;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) return NULL;
  hl_mpi_progress_t *p = hl_calloc(1, sizeof(*p));
  if (!p) return HL_OOM();
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  *out = p;
  return NULL;
}

void hl_mpi_progress_destroy(hl_mpi_progress_t *p) {
  if (!p) return;
  if (p->started) {
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
  }
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->wake);
  hl_free(p->pending);
  hl_free(p);
}

void hl_mpi_progress_add(hl_mpi_progress_t *p, hl_comm_request_t *r) {
  if (!p || r->n == 0) return;
  pthread_mutex_lock(&p->lock);
  if (!p->started) {
    p->started = pthread_create(&p->thread, NULL, progress_main, p) == 0;
    if (!p->started) {
      pthread_mutex_unlock(&p->lock);
      return;  // no thread: the request progresses at its wait
    }
  }
  if (p->count == p->cap) {
    int cap = p->cap ? 2 * p->cap : 8;
    hl_comm_request_t **grown = hl_realloc(p->pending, (size_t)cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&p->lock);
      return;
    }
    p->pending = grown;
    p->cap = cap;
  }
  p->pending[p->count++] = r;
  r->progress = p;
  pthread_cond_signal(&p->wake);
  pthread_mutex_unlock(&p->lock);
}

void hl_mpi_progress_remove(hl_mpi_progress_t *p, hl_comm_request_t *r) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  const hl_progress_hook_t *hook = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
  if (hook) report(hook, r, monotonic_ns(), false);
  for (int i = 0; i < p->count; i++)
    if (p->pending[i] == r) {
      p->pending[i] = p->pending[--p->count];
      break;
    }
  r->progress = NULL;
  pthread_mutex_unlock(&p->lock);
}
