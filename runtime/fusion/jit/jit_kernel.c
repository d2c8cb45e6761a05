#include "runtime/fusion/jit/jit_kernel.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/jit/cpu_features.h"
#include "runtime/fusion/jit/exec_memory.h"

typedef void (*loop_fn_t)(const void *const *inputs, void *out, int64_t bytes,
                          const void *lane_mask);

static const _Alignas(32) uint32_t kAllLanes[8] = {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u};

struct hl_jit_kernel {
  hl_exec_memory_t mem;
  loop_fn_t main_fn, single_fn, stream_fn;
  int lanes, unroll;
  size_t es;
  int input_count;
  bool input_scalar[HL_JIT_MAX_INPUTS];
};

// -1: not decided yet (the CPU and environment are read on first use).
static int g_enabled = -1;

static bool cpu_and_env_allow(void) {
  const char *off = getenv("HL_NO_FUSION_JIT");
  if (off && *off && strcmp(off, "0") != 0) return false;
  return hl_jit_cpu_has_avx2();
}

bool hl_jit_enabled(void) {
  if (g_enabled < 0) g_enabled = cpu_and_env_allow();
  return g_enabled == 1;
}

void hl_jit_set_enabled(bool on) { g_enabled = on && hl_jit_cpu_has_avx2(); }

static loop_fn_t entry(void *code, size_t offset) {
  loop_fn_t f;
  void *p = (char *)code + offset;
  memcpy(&f, &p, sizeof(f));  // object to function pointer, as dlsym users do
  return f;
}

hl_status_t hl_jit_kernel_create(const hl_jit_body_t *body, hl_jit_kernel_t **out,
                                 const char **why) {
  *out = NULL;
  *why = NULL;
  if (!hl_jit_cpu_has_avx2()) {
    *why = "no AVX2 (or not x86-64)";
    return NULL;
  }
  hl_jit_code_t code;
  if ((*why = hl_jit_compile_loop(body, &code)) != NULL) return NULL;
  hl_jit_kernel_t *k = hl_calloc(1, sizeof(*k));
  if (!k) {
    hl_x86_buf_free(&code.bytes);
    return HL_OOM();
  }
  hl_status_t st = hl_exec_memory_create(code.bytes.data, code.bytes.len, &k->mem);
  hl_x86_buf_free(&code.bytes);
  if (st) {
    hl_free(k);
    return st;
  }
  k->main_fn = entry(k->mem.code, code.main_entry);
  k->single_fn = entry(k->mem.code, code.single_entry);
  k->stream_fn = entry(k->mem.code, code.stream_entry);
  k->es = body->type == HL_JIT_F64 ? 8 : 4;
  k->lanes = (int)(32 / k->es);
  k->unroll = code.unroll;
  k->input_count = body->input_count;
  memcpy(k->input_scalar, body->input_scalar, sizeof(k->input_scalar));
  *out = k;
  return NULL;
}

void hl_jit_kernel_destroy(hl_jit_kernel_t *k) {
  if (!k) return;
  hl_exec_memory_free(&k->mem);
  hl_free(k);
}

static void run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n,
                bool stream) {
  int64_t step = (int64_t)k->lanes * k->unroll;
  int64_t n_main = n / step * step;
  if (n_main > 0)
    (stream ? k->stream_fn : k->main_fn)(inputs, out, n_main * (int64_t)k->es, kAllLanes);
  int64_t n_single = (n - n_main) / k->lanes * k->lanes;
  const void *moved[HL_JIT_MAX_INPUTS];
  if (n_single > 0) {
    for (int i = 0; i < k->input_count; i++)
      moved[i] = k->input_scalar[i] ? inputs[i]
                                    : (const char *)inputs[i] + (size_t)n_main * k->es;
    k->single_fn(moved, (char *)out + (size_t)n_main * k->es, n_single * (int64_t)k->es,
                 kAllLanes);
  }
  int64_t done = n_main + n_single, rest = n - done;
  if (rest <= 0) return;
  // The last partial vector: zero-padded copies (the padding lanes' results
  // are computed and dropped; no FP exception is unmasked).
  _Alignas(32) unsigned char pad[HL_JIT_MAX_INPUTS][32], result[32];
  size_t bytes = (size_t)rest * k->es;
  for (int i = 0; i < k->input_count; i++) {
    if (k->input_scalar[i]) {
      moved[i] = inputs[i];
      continue;
    }
    memset(pad[i], 0, sizeof(pad[i]));
    memcpy(pad[i], (const char *)inputs[i] + (size_t)done * k->es, bytes);
    moved[i] = pad[i];
  }
  _Alignas(32) unsigned char lanes[32] = {0};
  memset(lanes, 0xFF, bytes);
  k->single_fn(moved, result, 32, lanes);
  memcpy((char *)out + (size_t)done * k->es, result, bytes);
}

void hl_jit_kernel_run(const hl_jit_kernel_t *k, const void *const *inputs, void *out, int64_t n) {
  run(k, inputs, out, n, false);
}

void hl_jit_kernel_run_streaming(const hl_jit_kernel_t *k, const void *const *inputs, void *out,
                                 int64_t n) {
  // Non-temporal vector stores need 32-byte aligned addresses.
  run(k, inputs, out, n, ((uintptr_t)out & 31) == 0);
}
