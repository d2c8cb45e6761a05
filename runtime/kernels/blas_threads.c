#define _GNU_SOURCE  // RTLD_DEFAULT
#include "runtime/kernels/blas_threads.h"

#include <dlfcn.h>

typedef int (*get_fn)(void);
typedef void (*set_fn)(int);

// Looked up by name (as launcher/binding.c does): libblas.so may be another BLAS.
int hl_blas_threads_get(void) {
  get_fn get = (get_fn)dlsym(RTLD_DEFAULT, "openblas_get_num_threads");
  return get ? get() : 0;
}

void hl_blas_threads_set(int count) {
  set_fn set = (set_fn)dlsym(RTLD_DEFAULT, "openblas_set_num_threads");
  if (set && count >= 1) set(count);
}
