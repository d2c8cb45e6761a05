// Compiles a straight-line list of vector operations (the JIT'd region of a
// fusion) into machine code for one loop over 8 f32 / 4 f64 lanes per
// vector: every value of the list lives in a YMM register, each input is read
// once per vector and the one result stored once. Operations are the IEEE
// ones of the element-wise kernels, in the list's order, with no contraction
// (a multiply feeding an add stays two roundings), so results are bitwise
// those of the op-by-op loops.
//
// The code holds three functions of the same loop, all
//   void fn(const void *const *inputs, void *out, int64_t bytes,
//           const void *lane_mask)
// over `bytes` of output (a positive multiple of their step): `main` handles
// `unroll` vectors per iteration (independent copies interleaved, for the
// out-of-order core), `single` one vector per iteration, `stream` is main
// with non-temporal stores (out 32-byte aligned; for outputs larger than the
// last-level cache, which skip the read-for-ownership of every line and do
// not evict the inputs) and an sfence before it returns; a loop with calls
// has no stream (its stores, one vector between calls, would leave the
// write-combining buffers half full), `stream` is `main`. lane_mask (32
// bytes: all ones, or ones for the lanes of a partial last vector) is ANDed
// into the argument of every CALL.
#ifndef HL_RUNTIME_FUSION_JIT_LOOP_COMPILER_H_
#define HL_RUNTIME_FUSION_JIT_LOOP_COMPILER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/fusion/jit/x86_encoder.h"

typedef enum hl_jit_type { HL_JIT_F32, HL_JIT_F64 } hl_jit_type_t;

typedef enum hl_jit_op {
  HL_JIT_LOAD,       // input a: the vector at the current element
  HL_JIT_BROADCAST,  // input a: its one element in every lane
  HL_JIT_ADD,        // a + b
  HL_JIT_SUB,
  HL_JIT_MUL,
  HL_JIT_DIV,
  HL_JIT_MAX,        // XLA maximum / minimum (runtime/base/float_minmax.h)
  HL_JIT_MIN,
  HL_JIT_NEG,        // -a (the sign bit flipped)
  HL_JIT_ABS,        // |a| (the sign bit cleared)
  HL_JIT_SQRT,
  // Comparisons give a lane mask (only a select may use it); IEEE: false
  // when either side is NaN, except NE.
  HL_JIT_CMP_EQ,
  HL_JIT_CMP_NE,
  HL_JIT_CMP_LT,
  HL_JIT_CMP_LE,
  HL_JIT_CMP_GT,
  HL_JIT_CMP_GE,
  HL_JIT_SELECT,  // mask a ? b : c
  // fn(a): a one-vector routine of the SysV vector ABI (argument and result
  // in ymm0, every vector register clobbered), such as SLEEF's: live values
  // and the loop's registers are saved around the call.
  HL_JIT_CALL,
} hl_jit_op_t;

typedef void (*hl_jit_fn_t)(void);

typedef struct hl_jit_value {
  hl_jit_op_t op;
  int a, b, c;     // earlier values (LOAD / BROADCAST: the input number)
  hl_jit_fn_t fn;  // CALL
} hl_jit_value_t;

#define HL_JIT_MAX_INPUTS 11
#define HL_JIT_MAX_VALUES 512

typedef struct hl_jit_body {
  hl_jit_type_t type;
  const hl_jit_value_t *values;
  int count;        // the last value is the result
  int input_count;  // inputs[i] BROADCAST-read when input_scalar[i]
  bool input_scalar[HL_JIT_MAX_INPUTS];
} hl_jit_body_t;

typedef struct hl_jit_code {
  hl_x86_buf_t bytes;
  size_t main_entry, single_entry;
  // main with non-temporal stores (32-byte aligned out), then sfence; main
  // itself for loops with calls
  size_t stream_entry;
  int unroll;  // vectors per iteration of main
} hl_jit_code_t;

// Fills *out (caller frees out->bytes) and returns NULL, or returns why the
// body is not compiled (malformed, too many inputs or live values).
const char *hl_jit_compile_loop(const hl_jit_body_t *body, hl_jit_code_t *out);

#endif  // HL_RUNTIME_FUSION_JIT_LOOP_COMPILER_H_
