// The seam between the JIT's driver (jit_kernel.c, in every build) and the
// code generator (llvm/llvm_codegen.c: a module of its own, linked with
// libLLVM and loaded with dlopen on the first compile, so processes that
// compile no loop never map or relocate LLVM).
//
// A compiled body is three functions of the same loop,
//   void fn(const void *const *inputs, void *out, int64_t vectors,
//           int64_t valid, int64_t base)
// over `vectors` vectors of `lanes` elements (inputs read at the same
// element, scalar inputs broadcast): `main` takes `unroll` vectors per
// iteration (vectors a positive multiple of it), `single` one, `stream` is
// main with non-temporal stores (out aligned to lanes * element size); the
// caller fences after it (store_fence in jit_kernel.c). In `single`, lanes from `valid` on are zeroed in
// the argument of every vector call (the zero-padded last vector of vmath's
// array loops); main and stream take whole vectors only. base is the
// index of out's first element in the iteration space (iota counts from it).
#ifndef HL_RUNTIME_FUSION_JIT_CODEGEN_API_H_
#define HL_RUNTIME_FUSION_JIT_CODEGEN_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/fusion/jit/jit_body.h"

typedef void (*hl_jit_loop_fn)(const void *const *inputs, void *out, int64_t vectors,
                               int64_t valid, int64_t base);

typedef struct hl_jit_loops {
  hl_jit_loop_fn main_fn, single_fn, stream_fn;
  int lanes, unroll;
} hl_jit_loops_t;

#define HL_JIT_CODEGEN_API_VERSION 3

typedef struct hl_jit_codegen_api {
  int version;  // HL_JIT_CODEGEN_API_VERSION
  // Once per process: the target (host CPU and its features, or the
  // override vector_bytes > 0); NULL or why there is no generator. *target
  // describes it ("x86_64 znver3 avx2, 32-byte vectors, LLVM 15.0.6").
  const char *(*init)(int vector_bytes, const char **target);
  // Compiles a checked body whose key (the driver's, naming everything that
  // shapes its code) is key[0..key_len); NULL or why not. With cache_dir,
  // the object is read from or written to the disk cache there (*cached:
  // it was read). Thread-safe; code stays mapped until the process exits.
  const char *(*compile)(const hl_jit_body_t *body, const char *key, size_t key_len,
                         const char *cache_dir, hl_jit_loops_t *out, bool *cached);
} hl_jit_codegen_api_t;

// The module's one export (looked up with dlsym by this name).
#define HL_JIT_CODEGEN_ENTRY "hl_jit_codegen_api"
const hl_jit_codegen_api_t *hl_jit_codegen_api(void);

#endif  // HL_RUNTIME_FUSION_JIT_CODEGEN_API_H_
