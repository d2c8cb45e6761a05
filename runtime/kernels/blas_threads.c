#define _GNU_SOURCE  // RTLD_DEFAULT
#include "runtime/kernels/blas_threads.h"

#include <dlfcn.h>
#include <pthread.h>

typedef int (*get_fn)(void);
typedef void (*set_fn)(int);

// Looked up by name (as launcher/binding.c does): libblas.so may be another
// BLAS. Once: every gemm asks.
static get_fn g_get;
static set_fn g_set;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void look_up(void) {
  g_get = (get_fn)dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  g_set = (set_fn)dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
}

int hl_blas_threads_get(void) {
  pthread_once(&g_once, look_up);
  return g_get ? g_get() : 0;
}

void hl_blas_threads_set(int count) {
  pthread_once(&g_once, look_up);
  if (g_set && count >= 1) g_set(count);
}
