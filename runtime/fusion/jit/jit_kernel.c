#define _GNU_SOURCE  // dladdr: find the generator module beside this binary
#include "runtime/fusion/jit/jit_kernel.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/jit/codegen_api.h"

// Widest vector of any target: 64 bytes (AVX-512) of 8-bit lanes.
#define MAX_VECTOR_BYTES 64

struct hl_jit_kernel {
  hl_jit_loops_t loops;
  size_t es;                          // of the result
  size_t in_es[HL_JIT_MAX_INPUTS];    // of each input
  int input_count;
  bool input_scalar[HL_JIT_MAX_INPUTS];
  // Process table (see jit_kernel.h): the body's key, the next entry.
  char *key;
  size_t key_len;
  const char *why;  // NULL: compiled
  // PENDING until the compile ends (READY or FAILED); a kernel queued for
  // the background compiler keeps a copy of its body until then.
  _Atomic int state;
  hl_jit_body_t body;
  hl_jit_value_t *values;
  struct hl_jit_kernel *next, *queue_next;
};

enum { PENDING, READY, FAILED };

// -1: not decided yet (the environment is read on first use).
static int g_enabled = -1;
static int g_vector_bytes = -1;
static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static atomic_bool g_loaded;  // load_generator has run: g_api and g_target are final
static const hl_jit_codegen_api_t *g_api;
static const char *g_target = "not loaded";
static pthread_mutex_t g_table_mu = PTHREAD_MUTEX_INITIALIZER;
static hl_jit_kernel_t *g_table;
static int g_compiled;
static double g_compile_seconds;
static atomic_bool g_log;  // HL_FUSION_JIT_LOG (set by the load, read by every thread)
// The background compiler: one thread, started on the first queued body,
// which loads the generator before its first compile (so no run waits for
// libLLVM); at exit it finishes the body in hand and drops the rest (the
// generator's static destructors must not run under a compile: see
// register_stop and hl_jit_settle).
static pthread_cond_t g_queue_cv = PTHREAD_COND_INITIALIZER, g_idle_cv = PTHREAD_COND_INITIALIZER;
static hl_jit_kernel_t *g_queue_head, *g_queue_tail;
static bool g_worker_started, g_worker_busy, g_stopping;
// The worker's first body is done (the generator loaded on the way), or the
// worker left without one.
static bool g_worker_settled;
static int g_wait = -1;  // compile in the caller's thread (HL_FUSION_JIT_WAIT=1)
// Threads inside libLLVM (loading it or compiling), counted under the table
// lock; what a forked child is told when one was (see fork_child).
static int g_in_llvm;
static const char *g_forked_why;

static bool env_on(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0;
}

bool hl_jit_enabled(void) {
  if (g_enabled < 0) g_enabled = !env_on("HL_NO_FUSION_JIT");
  return g_enabled == 1 && !g_forked_why;
}

void hl_jit_set_enabled(bool on) { g_enabled = on; }

void hl_jit_set_vector_bytes(int bytes) { g_vector_bytes = bytes; }

void hl_jit_set_wait(bool wait) { g_wait = wait; }

static const char *g_cache_dir;
static bool g_cache_dir_set;

void hl_jit_set_cache_dir(const char *dir) {
  g_cache_dir = dir && *dir ? dir : NULL;
  g_cache_dir_set = true;
}

static const char *cache_dir(void) {
  if (!g_cache_dir_set) {
    const char *e = getenv("HL_FUSION_JIT_CACHE_DIR");
    g_cache_dir = e && *e ? e : NULL;
    g_cache_dir_set = true;
  }
  return g_cache_dir;
}

static bool waiting(void) {
  if (g_wait < 0) g_wait = env_on("HL_FUSION_JIT_WAIT");
  return g_wait == 1;
}

#if defined(HL_FUSION_JIT_HAVE_LLVM)
// The module by HL_FUSION_JIT_MODULE, else beside the binary that holds
// this code (an install moved to another prefix: `cmake --install --prefix`,
// a relocated package), else where it was configured to be installed, else
// in the build tree (tests and benches run from there). A module of another
// version (a stale install) is passed over for the next.
static const hl_jit_codegen_api_t *module_api(void *h) {
  const hl_jit_codegen_api_t *(*entry)(void);
  void *sym = dlsym(h, HL_JIT_CODEGEN_ENTRY);
  memcpy(&entry, &sym, sizeof(entry));  // object to function pointer, as dlsym users do
  const hl_jit_codegen_api_t *api = sym ? entry() : NULL;
  return api && api->version == HL_JIT_CODEGEN_API_VERSION ? api : NULL;
}

static const hl_jit_codegen_api_t *open_module(void) {
  char here[4096] = "", beside_lib[4200] = "", beside_exe[4200] = "";
  Dl_info info;
  if (dladdr((void *)&open_module, &info) && info.dli_fname &&
      strlen(info.dli_fname) < sizeof(here)) {
    strcpy(here, info.dli_fname);
    char *slash = strrchr(here, '/');
    if (slash) {
      *slash = '\0';
      // Inside libhlo_runtime.so (LIBDIR) or an executable (BINDIR).
      snprintf(beside_lib, sizeof(beside_lib), "%s/hlo-runtime/libhl_fusion_llvm.so", here);
      snprintf(beside_exe, sizeof(beside_exe), "%s/../%s", here, HL_FUSION_JIT_MODULE_IN_PREFIX);
    }
  }
  const char *paths[5] = {getenv("HL_FUSION_JIT_MODULE"), beside_lib, beside_exe,
                          HL_FUSION_JIT_INSTALLED_MODULE, HL_FUSION_JIT_BUILD_MODULE};
  const char *last = NULL;
  for (int i = 0; i < 5; i++) {
    if (!paths[i] || !*paths[i]) continue;
    if (i >= 1 && i <= 2 && access(paths[i], R_OK) != 0) continue;
    void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      last = dlerror();
      continue;
    }
    const hl_jit_codegen_api_t *api = module_api(h);
    if (api) return api;
    if (g_log) fprintf(stderr, "fusion jit: %s: a code generator of another version\n", paths[i]);
    dlclose(h);
    g_target = "none: a code generator module of another version";
  }
  if (g_log && last) fprintf(stderr, "fusion jit: %s\n", last);
  return NULL;
}
#endif

static double now_seconds(void);
static void load_generator_untimed(void);

// fork() from a process whose background compiler (or another thread) is
// loading libLLVM or compiling leaves the child without those threads: the
// table is consistent (its lock is held across fork), but the bodies they
// had in hand or queued would stay pending for good, and hl_jit_settle
// would wait for a first body that never ends (a forked child hung in
// hl_executable_destroy). In the child (the forking thread alone) those
// bodies fail, so they run interpreted (the same bits), and the child starts
// a compiler of its own for what it queues later, unless libLLVM was mid-load
// or mid-compile: its locks and state may belong to a thread that is gone,
// so that child compiles nothing more.
static void fork_prepare(void) { pthread_mutex_lock(&g_table_mu); }

static void fork_parent(void) { pthread_mutex_unlock(&g_table_mu); }

static void fork_child(void) {
  if (g_in_llvm > 0)
    g_forked_why = "none: the process was forked while the fusion JIT was loading or compiling";
  for (hl_jit_kernel_t *k = g_table; k; k = k->next)
    if (atomic_load_explicit(&k->state, memory_order_acquire) == PENDING) {
      k->why = "not compiled: the process was forked before its compile ended";
      atomic_store_explicit(&k->state, FAILED, memory_order_release);
    }
  g_queue_head = g_queue_tail = NULL;
  g_worker_started = g_worker_busy = g_worker_settled = false;
  g_in_llvm = 0;
  // Nobody waits on the conditions here (the waiters were other threads).
  pthread_cond_init(&g_queue_cv, NULL);
  pthread_cond_init(&g_idle_cv, NULL);
  pthread_mutex_unlock(&g_table_mu);  // held by this thread since fork_prepare
}

// When this code was loaded (about when the process started): the log's
// times are counted from it.
static double g_start_seconds;
__attribute__((constructor)) static void note_start(void) {
  g_start_seconds = now_seconds();
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static void llvm_enter(int step) {
  pthread_mutex_lock(&g_table_mu);
  g_in_llvm += step;
  pthread_mutex_unlock(&g_table_mu);
}

static void load_generator(void) {
  g_log = env_on("HL_FUSION_JIT_LOG");
  double t0 = now_seconds();
  llvm_enter(1);
  load_generator_untimed();
  llvm_enter(-1);
  if (g_log)
    fprintf(stderr, "fusion jit: generator %s (loaded in %.2f ms, %.1f-%.1f ms after start)\n",
            g_target, 1e3 * (now_seconds() - t0), 1e3 * (t0 - g_start_seconds),
            1e3 * (now_seconds() - g_start_seconds));
  atomic_store_explicit(&g_loaded, true, memory_order_release);
}

// Under AddressSanitizer the generator is not loaded unless
// HL_FUSION_JIT_MODULE names it: libLLVM's allocations, unwound by the slow
// unwinder the tests use for LSan's suppressions, deadlock in libgcc's
// unwinder lock against MPI's progress thread (integration.global_shardings
// hung). Fusions run interpreted there, with the same bits.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HL_JIT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HL_JIT_ASAN)
static const bool kSanitized = true;
#else
static const bool kSanitized = false;
#endif

// Whether loading the generator is more than a verdict known at once (the
// build has it and may load it here).
static bool generator_may_load(void) {
#if defined(HL_FUSION_JIT_HAVE_LLVM)
  return !kSanitized || getenv("HL_FUSION_JIT_MODULE");
#else
  return false;
#endif
}

static void load_generator_untimed(void) {
#if defined(HL_FUSION_JIT_HAVE_LLVM)
  if (kSanitized && !getenv("HL_FUSION_JIT_MODULE")) {
    g_target = "none: AddressSanitizer build (HL_FUSION_JIT_MODULE loads it anyway)";
    return;
  }
  g_target = "none: the LLVM code generator module (or libLLVM) did not load";
  const hl_jit_codegen_api_t *api = open_module();
  if (!api) return;
  int vb = g_vector_bytes;
  if (vb < 0) {
    const char *e = getenv("HL_FUSION_JIT_VECTOR_BYTES");
    vb = e ? atoi(e) : 0;
  }
  if (vb != 0 && vb != 16 && vb != 32 && vb != 64) vb = 0;
  const char *target = NULL, *why = api->init(vb, &target);
  if (why) {
    g_target = why;
    return;
  }
  g_target = target;
  g_api = api;
#else
  g_target = "none: built without LLVM";
#endif
}

const char *hl_jit_describe(void) {
  if (g_forked_why) return g_forked_why;
  pthread_once(&g_load_once, load_generator);
  return g_target;
}

// The body as bytes: everything that shapes its code (routines by name).
static char *body_key(const hl_jit_body_t *b, size_t *len) {
  size_t cap = 64 + (size_t)b->count * 64, n = 0;
  char *k = hl_malloc(cap);
  if (!k) return NULL;
  n += (size_t)snprintf(k + n, cap - n, "t%d i%d:", (int)b->type, b->input_count);
  for (int i = 0; i < b->input_count; i++) k[n++] = b->input_scalar[i] ? 's' : 'v';
  for (int i = 0; i < b->count && n < cap; i++) {
    const hl_jit_value_t *v = &b->values[i];
    n += (size_t)snprintf(k + n, cap - n, ";%d,%d,%d,%d,%d,%s", (int)v->op,
                          (int)hl_jit_value_type(b, i), v->a, v->b, v->c,
                          hl_jit_is_call(v->op) && v->fn_name ? v->fn_name : "");
    if (v->op == HL_JIT_IOTA && n < cap)
      n += (size_t)snprintf(k + n, cap - n, ",%lld,%lld", (long long)v->iota_size,
                            (long long)v->iota_inner);
  }
  *len = n < cap ? n : cap;
  return k;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Compiles k's body (under no lock: the generator is thread-safe), the
// generator loaded first if it is not yet, and publishes the result.
static void compile_kernel(hl_jit_kernel_t *k, const hl_jit_body_t *body) {
  pthread_once(&g_load_once, load_generator);
  if (!g_api) {  // loaded in the background, and failed: interpreted for good
    k->why = g_target;
    atomic_store_explicit(&k->state, FAILED, memory_order_release);
    return;
  }
  hl_jit_loops_t loops = {0};
  bool cached = false;
  double t0 = now_seconds();
  llvm_enter(1);
  const char *why = g_api->compile(body, k->key, k->key_len, cache_dir(), &loops, &cached);
  double dt = now_seconds() - t0;
  pthread_mutex_lock(&g_table_mu);
  g_in_llvm--;
  g_compiled++;
  g_compile_seconds += dt;
  pthread_mutex_unlock(&g_table_mu);
  if (g_log)
    fprintf(stderr,
            "fusion jit: %d values, %d inputs, %d lanes x %d: %s (%.2f ms, ready %.1f ms after "
            "start)\n",
            body->count, body->input_count, loops.lanes, loops.unroll,
            why      ? why
            : cached ? "read from the cache"
                     : "compiled",
            1e3 * dt, 1e3 * (now_seconds() - g_start_seconds));
  k->loops = loops;
  k->why = why;
  atomic_store_explicit(&k->state, why ? FAILED : READY, memory_order_release);
}

static void stop_worker(void);

// libLLVM registers its globals' destructors with atexit as it loads, and
// those of its function-local statics when a compile first uses them (the
// pass registry, ...); exit runs them before handlers registered earlier.
// So stop_worker is registered again after the load and after each of the
// first compiles (the ones that meet new statics): it then runs first, and
// no destructor runs under a compile. The windows before that -- the load
// and the first compile, 20-40 ms from the first queued body -- are closed
// by hl_jit_settle, which waits them out (a process exiting inside one ran
// the pass registry's destructor under the compile, which then spun
// forever: tests/unit/test_fusion_jit_exit.c).
static void register_stop(void) {
  static int registrations;
  if (registrations < 64 && atexit(stop_worker) == 0) registrations++;
}

static void *worker(void *arg) {
  (void)arg;
  pthread_once(&g_load_once, load_generator);
  pthread_mutex_lock(&g_table_mu);
  if (!g_stopping) register_stop();
  for (;;) {
    while (!g_queue_head && !g_stopping) pthread_cond_wait(&g_queue_cv, &g_table_mu);
    if (g_stopping) break;
    hl_jit_kernel_t *k = g_queue_head;
    g_queue_head = k->queue_next;
    if (!g_queue_head) g_queue_tail = NULL;
    g_worker_busy = true;
    pthread_mutex_unlock(&g_table_mu);
    compile_kernel(k, &k->body);
    pthread_mutex_lock(&g_table_mu);
    if (!g_stopping) register_stop();
    for (int i = 0; i < k->body.count; i++) free((char *)k->values[i].fn_name);
    hl_free(k->values);
    k->values = NULL;
    g_worker_busy = false;
    g_worker_settled = true;
    pthread_cond_broadcast(&g_idle_cv);
  }
  g_worker_settled = true;
  pthread_cond_broadcast(&g_idle_cv);
  pthread_mutex_unlock(&g_table_mu);
  return NULL;
}

// At exit: the body in hand is finished, the queued ones are dropped
// (failed, so that nothing waits for them). Inside the first windows (see
// register_stop: nobody settled), libLLVM's destructors have already run
// and the compile in hand may never end: exit goes on without it.
static void stop_worker(void) {
  pthread_mutex_lock(&g_table_mu);
  g_stopping = true;
  pthread_cond_broadcast(&g_queue_cv);
  while (g_worker_busy && g_worker_settled) pthread_cond_wait(&g_idle_cv, &g_table_mu);
  for (hl_jit_kernel_t *k = g_queue_head; k; k = k->queue_next) {
    k->why = "not compiled: the process exited first";
    atomic_store_explicit(&k->state, FAILED, memory_order_release);
  }
  g_queue_head = g_queue_tail = NULL;
  pthread_mutex_unlock(&g_table_mu);
}

// Starts the background compiler if it is not yet (table lock held); false
// when no thread could be started.
static bool start_worker(void) {
  if (g_worker_started) return true;
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &attr, worker, NULL);
  pthread_attr_destroy(&attr);
  if (rc != 0) return false;
  register_stop();  // and again after the worker's first bodies (see there)
  g_worker_started = true;
  return true;
}

// Queues k (table lock held); false when no thread could be started.
static bool enqueue(hl_jit_kernel_t *k, const hl_jit_body_t *body) {
  if (g_stopping || !start_worker()) return false;
  k->values = hl_malloc(sizeof(hl_jit_value_t) * (size_t)body->count);
  if (!k->values) return false;
  memcpy(k->values, body->values, sizeof(hl_jit_value_t) * (size_t)body->count);
  k->body = *body;
  k->body.values = k->values;
  // Routine names point into the caller's memory: the generator binds
  // them, so keep them here too.
  for (int i = 0; i < body->count; i++)
    if (k->values[i].fn_name) {
      k->values[i].fn_name = strdup(k->values[i].fn_name);
      if (!k->values[i].fn_name) return false;
    }
  k->queue_next = NULL;
  if (g_queue_tail)
    g_queue_tail->queue_next = k;
  else
    g_queue_head = k;
  g_queue_tail = k;
  pthread_cond_signal(&g_queue_cv);
  if (g_log)
    fprintf(stderr, "fusion jit: %d values queued %.1f ms after start\n", body->count,
            1e3 * (now_seconds() - g_start_seconds));
  return true;
}

bool hl_jit_kernel_ready(const hl_jit_kernel_t *k) {
  return atomic_load_explicit(&((hl_jit_kernel_t *)k)->state, memory_order_acquire) == READY;
}

static hl_status_t create(const hl_jit_body_t *body, bool background, hl_jit_kernel_t **out,
                          const char **why);

hl_status_t hl_jit_kernel_create(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                 const char **why) {
  return create(body, false, out, why);
}

hl_status_t hl_jit_kernel_create_background(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                            const char **why) {
  return create(body, !waiting(), out, why);
}

static hl_status_t create(const hl_jit_body_t *body, bool background, hl_jit_kernel_t **out,
                          const char **why) {
  *out = NULL;
  *why = NULL;
  if (!hl_jit_enabled()) {
    *why = g_forked_why ? g_forked_why : "the fusion JIT is off";
    return NULL;
  }
  if ((*why = hl_jit_body_check(body)) != NULL) return NULL;
  // A body for the background is queued before the generator is loaded:
  // the worker loads it (libLLVM: 10-30 ms) while the caller goes on.
  if (!background || !generator_may_load())
    pthread_once(&g_load_once, load_generator);
  if (atomic_load_explicit(&g_loaded, memory_order_acquire) && !g_api) {
    *why = g_target;
    return NULL;
  }
  size_t len = 0;
  char *key = body_key(body, &len);
  if (!key) return HL_OOM();
  // A body asked for again (by another program, or by several threads at
  // once) is the same kernel: compiled once.
  pthread_mutex_lock(&g_table_mu);
  hl_jit_kernel_t *k = g_table;
  while (k && !(k->key_len == len && memcmp(k->key, key, len) == 0)) k = k->next;
  bool fresh = !k;
  if (k) {
    hl_free(key);
  } else {
    k = hl_calloc(1, sizeof(*k));
    if (!k) {
      pthread_mutex_unlock(&g_table_mu);
      hl_free(key);
      return HL_OOM();
    }
    k->key = key;
    k->key_len = len;
    k->es = hl_jit_type_size(hl_jit_value_type(body, body->count - 1));
    for (int i = 0; i < body->input_count; i++)
      k->in_es[i] = hl_jit_type_size(hl_jit_input_type(body, i));
    k->input_count = body->input_count;
    memcpy(k->input_scalar, body->input_scalar, sizeof(k->input_scalar));
    atomic_init(&k->state, PENDING);
    k->next = g_table;
    g_table = k;
    if (background && !enqueue(k, body)) {
      background = false;
      if (g_stopping) {  // exiting: no compile (nor load) under the exit handlers
        k->why = "not compiled: the process is exiting";
        atomic_store_explicit(&k->state, FAILED, memory_order_release);
        fresh = false;
      }
    }
  }
  pthread_mutex_unlock(&g_table_mu);
  if (fresh && !background) compile_kernel(k, body);
  // Not in the background: wait for a compile of the same body under way.
  while (!background && atomic_load_explicit(&k->state, memory_order_acquire) == PENDING)
    sched_yield();
  int state = atomic_load_explicit(&k->state, memory_order_acquire);
  if (state == FAILED)
    *why = k->why;
  else
    *out = k;
  return NULL;
}

void hl_jit_kernel_destroy(hl_jit_kernel_t *k) { (void)k; }

void hl_jit_settle(void) {
  pthread_mutex_lock(&g_table_mu);
  while (g_worker_started && !g_worker_settled) pthread_cond_wait(&g_idle_cv, &g_table_mu);
  pthread_mutex_unlock(&g_table_mu);
}

void hl_jit_compile_stats(int *bodies, double *seconds) {
  pthread_mutex_lock(&g_table_mu);
  *bodies = g_compiled;
  *seconds = g_compile_seconds;
  pthread_mutex_unlock(&g_table_mu);
}

// After non-temporal stores: they are visible before the caller reports
// the block done (x86: sfence orders stores only, where a C11 fence is an
// mfence; elsewhere the C11 fence).
static void store_fence(void) {
#if defined(__x86_64__)
  __builtin_ia32_sfence();
#else
  atomic_thread_fence(memory_order_seq_cst);
#endif
}

static void run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n,
                int64_t base, bool stream) {
  const hl_jit_loops_t *l = &k->loops;
  int64_t lanes = l->lanes, step = lanes * l->unroll;
  int64_t n_main = n / step * step;
  if (n_main > 0) {
    (stream ? l->stream_fn : l->main_fn)(inputs, out, n_main / lanes, lanes, base);
    if (stream && l->stream_fn != l->main_fn) store_fence();
  }
  int64_t n_single = (n - n_main) / lanes * lanes;
  const void *moved[HL_JIT_MAX_INPUTS];
  if (n_single > 0) {
    for (int i = 0; i < k->input_count; i++)
      moved[i] =
          k->input_scalar[i] ? inputs[i] : (const char *)inputs[i] + (size_t)n_main * k->in_es[i];
    l->single_fn(moved, (char *)out + (size_t)n_main * k->es, n_single / lanes, lanes,
                 base + n_main);
  }
  int64_t done = n_main + n_single, rest = n - done;
  if (rest <= 0) return;
  // The last partial vector: zero-padded copies (the padding lanes' results
  // are computed and dropped; no FP exception is unmasked), and `rest` valid
  // lanes for the routines' arguments.
  _Alignas(64) unsigned char pad[HL_JIT_MAX_INPUTS][MAX_VECTOR_BYTES * 8];
  _Alignas(64) unsigned char result[MAX_VECTOR_BYTES * 8];
  for (int i = 0; i < k->input_count; i++) {
    if (k->input_scalar[i]) {
      moved[i] = inputs[i];
      continue;
    }
    memset(pad[i], 0, (size_t)lanes * k->in_es[i]);
    memcpy(pad[i], (const char *)inputs[i] + (size_t)done * k->in_es[i],
           (size_t)rest * k->in_es[i]);
    moved[i] = pad[i];
  }
  l->single_fn(moved, result, 1, rest, base + done);
  memcpy((char *)out + (size_t)done * k->es, result, (size_t)rest * k->es);
}

void hl_jit_kernel_run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n) {
  run(k, inputs, out, n, 0, false);
}

void hl_jit_kernel_run_streaming(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                                 int64_t n) {
  hl_jit_kernel_run_at(k, inputs, out, n, 0, true);
}

void hl_jit_kernel_run_at(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                          int64_t n, int64_t base, bool stream) {
  size_t vector = (size_t)k->loops.lanes * k->es;
  run(k, inputs, out, n, base, stream && ((uintptr_t)out & (vector - 1)) == 0);
}
