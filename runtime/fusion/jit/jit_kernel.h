// A compiled loop (jit_body.h) run over any element count: whole unrolled
// iterations, then single vectors, then the last partial vector through
// zero-padded copies of its inputs and output.
//
// The loops come from the LLVM code generator (codegen_api.h), a module
// loaded on the first compile (for bodies compiled in the background, by
// the background compiler's thread: no caller waits for libLLVM to load);
// builds without LLVM, hosts where the module
// or libLLVM does not load, HL_NO_FUSION_JIT=1 in the environment and
// hl_jit_set_enabled(false) (hlo-launch --no-fusion-jit) compile nothing,
// and the blocked executor interprets (the same bits).
//
// A body is compiled once per process: kernels are kept in a process-wide
// table keyed by the body, shared by every fusion program that asks for the
// same body, and live until the process exits.
#ifndef HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_
#define HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/status.h"
#include "runtime/fusion/jit/jit_body.h"

typedef struct hl_jit_kernel hl_jit_kernel_t;

bool hl_jit_enabled(void);
// Process-wide switch, set before any fusion is compiled (programs compiled
// earlier keep their code).
void hl_jit_set_enabled(bool on);
// Vector width in bytes the generator targets, 0 for the host's widest
// (HL_FUSION_JIT_VECTOR_BYTES in the environment); before the first compile.
// Tests use it to run the lane-splitting paths of wider hosts.
void hl_jit_set_vector_bytes(int bytes);
// What generates the loops: "LLVM 15.0.6, x86_64-pc-linux-gnu znver3,
// 32-byte vectors", or why none does ("built without LLVM", ...). Loads the
// generator if it is not loaded yet.
const char *hl_jit_describe(void);

// *out NULL with *why set when the body is not compiled; errors only for
// out of memory.
hl_status_t hl_jit_kernel_create(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                 const char **why);
// The same, compiled off the caller's thread: *out is returned at once and
// runs only once hl_jit_kernel_ready(); until then (and for good where the
// compile fails) the caller runs its interpreted path, which gives the same
// bits, as tiered JITs do. HL_FUSION_JIT_WAIT=1 in the environment or
// hl_jit_set_wait(true) (tests, benchmarks) compiles in the caller instead.
hl_status_t hl_jit_kernel_create_background(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                            const char **why);
bool hl_jit_kernel_ready(const hl_jit_kernel_t *k);
void hl_jit_set_wait(bool wait);
// Directory of the disk cache of compiled loops (NULL: none, the default;
// HL_FUSION_JIT_CACHE_DIR in the environment), before the first compile; a
// second process finds each body's object there and skips its compile.
// The directory must exist; files are named hl-jit-<hash>.o and never
// replace an existing file.
void hl_jit_set_cache_dir(const char *dir);
void hl_jit_kernel_destroy(hl_jit_kernel_t *k);  // NULL-safe; the code stays (see above)
// Waits until the background compiler's first body is done, if it is under
// way: the generator's load and first compile, during which libLLVM
// registers destructors with atexit that exit would run under them (later
// compiles are safe: the compiler's own exit handler runs first, see
// jit_kernel.c). Called on the way out (hl_executable_destroy, MPI_Finalize,
// hlo-launch's ranks); at once otherwise, and in a process forked during them
// (jit_kernel.c's fork handlers).
void hl_jit_settle(void);

// out[0..n) from inputs (vector inputs n elements each, scalar inputs one).
void hl_jit_kernel_run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n);
// The same with non-temporal stores for the whole vectors when out is
// aligned to the vector width (else as hl_jit_kernel_run): the same values,
// written around the caches, for outputs too large to stay in them.
void hl_jit_kernel_run_streaming(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                                 int64_t n);

// Either of the above (stream: streaming) for the elements base..base+n of
// the iteration space: what an iota in the body counts from.
void hl_jit_kernel_run_at(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                          int64_t n, int64_t base, bool stream);

// Bodies compiled in this process and the time spent compiling them.
void hl_jit_compile_stats(int *bodies, double *seconds);

#endif  // HL_RUNTIME_FUSION_JIT_JIT_KERNEL_H_
