// The reduction kernels of the shared-memory collectives: inout = in (op)
// inout, element by element, exactly what the MPI path computes for the same
// pair (collectives/mpi_reduce_ops.c):
//   integers: wrapping add / multiply (computed unsigned), min / max,
//             and / or / xor, as MPI's built-in ops;
//   pred (bytes 0 / 1): add / or / max -> or, multiply / and / min -> and,
//             xor -> xor, as the MPI path maps them;
//   f32 / f64 add / multiply, c64 / c128 add / multiply: the C operators;
//   f32 / f64 min / max: XLA's NaN-propagating, -0 < +0 minimum / maximum;
//   f16 / bf16: each pair computed in double and rounded once, as the MPI
//             path's typed user op does;
//   everything else (custom reducer computations, s4 / u4 / f8 / ...):
//             reducer->combine, the executor's own reducer.
// The loops are plain C over restrict pointers so the compiler vectorizes
// them (this folder builds with -O3); they run on cache-sized blocks.
#include <complex.h>
#include <string.h>

#include "collectives/mpi_internal.h"
#include "collectives/shm/shm_internal.h"
#include "runtime/base/float_minmax.h"

#define LOOP(T, EXPR)                          \
  do {                                         \
    const T *restrict a = in;                  \
    T *restrict b = inout;                     \
    for (int64_t i = 0; i < n; i++) EXPR;      \
  } while (0)

// Integers: add / multiply wrap (unsigned arithmetic, no signed overflow).
#define INT_CASES(T, U)                                                   \
  switch (op) {                                                           \
    case HL_COMM_REDUCE_ADD: LOOP(T, b[i] = (T)((U)a[i] + (U)b[i])); return true; \
    case HL_COMM_REDUCE_MUL: LOOP(T, b[i] = (T)((U)a[i] * (U)b[i])); return true; \
    case HL_COMM_REDUCE_MIN: LOOP(T, b[i] = a[i] < b[i] ? a[i] : b[i]); return true; \
    case HL_COMM_REDUCE_MAX: LOOP(T, b[i] = a[i] > b[i] ? a[i] : b[i]); return true; \
    case HL_COMM_REDUCE_AND: LOOP(T, b[i] = a[i] & b[i]); return true;   \
    case HL_COMM_REDUCE_OR: LOOP(T, b[i] = a[i] | b[i]); return true;    \
    case HL_COMM_REDUCE_XOR: LOOP(T, b[i] = a[i] ^ b[i]); return true;   \
    default: return false;                                                \
  }

static double apply_f64(hl_comm_reduce_op_t op, double a, double b) {
  switch (op) {
    case HL_COMM_REDUCE_ADD: return a + b;
    case HL_COMM_REDUCE_MUL: return a * b;
    case HL_COMM_REDUCE_MIN: return hl_minimum_f64(a, b);
    default: return hl_maximum_f64(a, b);
  }
}

// Runs the native loop for (dtype, op); false when there is none (or, with
// n < 0, only tells whether there is one).
static bool native(hl_dtype_t t, hl_comm_reduce_op_t op, const void *in, void *inout,
                   int64_t n) {
  bool probe = n < 0;
  if (probe) n = 0;
  switch (t) {
    case HL_S8: INT_CASES(int8_t, uint8_t)
    case HL_S16: INT_CASES(int16_t, uint16_t)
    case HL_S32: INT_CASES(int32_t, uint32_t)
    case HL_S64: INT_CASES(int64_t, uint64_t)
    case HL_U8: INT_CASES(uint8_t, uint8_t)
    case HL_U16: INT_CASES(uint16_t, uint16_t)
    case HL_U32: INT_CASES(uint32_t, uint32_t)
    case HL_U64: INT_CASES(uint64_t, uint64_t)
    case HL_PRED:
      switch (op) {
        case HL_COMM_REDUCE_ADD: case HL_COMM_REDUCE_OR: case HL_COMM_REDUCE_MAX:
          LOOP(uint8_t, b[i] = a[i] | b[i]); return true;
        case HL_COMM_REDUCE_MUL: case HL_COMM_REDUCE_AND: case HL_COMM_REDUCE_MIN:
          LOOP(uint8_t, b[i] = a[i] & b[i]); return true;
        case HL_COMM_REDUCE_XOR: LOOP(uint8_t, b[i] = a[i] ^ b[i]); return true;
        default: return false;
      }
    case HL_F32:
      switch (op) {
        case HL_COMM_REDUCE_ADD: LOOP(float, b[i] = a[i] + b[i]); return true;
        case HL_COMM_REDUCE_MUL: LOOP(float, b[i] = a[i] * b[i]); return true;
        case HL_COMM_REDUCE_MIN: LOOP(float, b[i] = hl_minimum_f32(a[i], b[i])); return true;
        case HL_COMM_REDUCE_MAX: LOOP(float, b[i] = hl_maximum_f32(a[i], b[i])); return true;
        default: return false;
      }
    case HL_F64:
      switch (op) {
        case HL_COMM_REDUCE_ADD: LOOP(double, b[i] = a[i] + b[i]); return true;
        case HL_COMM_REDUCE_MUL: LOOP(double, b[i] = a[i] * b[i]); return true;
        case HL_COMM_REDUCE_MIN: LOOP(double, b[i] = hl_minimum_f64(a[i], b[i])); return true;
        case HL_COMM_REDUCE_MAX: LOOP(double, b[i] = hl_maximum_f64(a[i], b[i])); return true;
        default: return false;
      }
    case HL_C64:
      switch (op) {
        case HL_COMM_REDUCE_ADD: LOOP(float complex, b[i] = a[i] + b[i]); return true;
        case HL_COMM_REDUCE_MUL: LOOP(float complex, b[i] = a[i] * b[i]); return true;
        default: return false;
      }
    case HL_C128:
      switch (op) {
        case HL_COMM_REDUCE_ADD: LOOP(double complex, b[i] = a[i] + b[i]); return true;
        case HL_COMM_REDUCE_MUL: LOOP(double complex, b[i] = a[i] * b[i]); return true;
        default: return false;
      }
    case HL_F16:
    case HL_BF16: {
      if (op != HL_COMM_REDUCE_ADD && op != HL_COMM_REDUCE_MUL && op != HL_COMM_REDUCE_MIN &&
          op != HL_COMM_REDUCE_MAX)
        return false;
      if (probe) return true;
      const uint16_t *a = in;
      uint16_t *b = inout;
      if (t == HL_F16)
        for (int64_t i = 0; i < n; i++)
          b[i] = hl_f64_to_f16(apply_f64(op, hl_f16_to_f32(a[i]), hl_f16_to_f32(b[i])));
      else
        for (int64_t i = 0; i < n; i++)
          b[i] = hl_f64_to_bf16(apply_f64(op, hl_bf16_to_f32(a[i]), hl_bf16_to_f32(b[i])));
      return true;
    }
    default:
      return false;
  }
}

hl_status_t hl_shm_reduction_init(hl_dtype_t dtype, const hl_comm_reducer_t *reducer,
                                  hl_shm_reduction_t *out) {
  memset(out, 0, sizeof(*out));
  hl_comm_reduce_op_t op = reducer->op;
  HL_RETURN_IF_ERROR(hl_reduction_check_type(dtype, op));  // the MPI path's refusals
  out->dtype = dtype;
  out->reducer = reducer;
  out->native = op != HL_COMM_REDUCE_CUSTOM && native(dtype, op, NULL, NULL, -1);
  if (!out->native && !reducer->combine)
    return HL_INVALID("no way to reduce type %s with this reducer", hl_dtype_name(dtype));
  return NULL;
}

void hl_shm_combine(hl_shm_reduction_t *r, const void *in, void *inout, int64_t count) {
  if (count <= 0) return;
  if (r->native) {
    native(r->dtype, r->reducer->op, in, inout, count);
  } else if (!r->error) {
    r->error = r->reducer->combine(r->reducer->state, r->dtype, in, inout, count);
  }
}
