// The JIT'd region of a fusion as the code generator sees it: a straight
// list of lane-wise operations over one element type, evaluated for every
// element of a run (inputs read at the element, or one element broadcast).
// Operations are those of the element-wise kernels (elementwise.c,
// compare_select.c) with their exact semantics, so a compiled loop gives the
// bits of the op-by-op loops:
//   floats (f32, f64): IEEE operations in the type, no contraction (a
//     multiply feeding an add stays two roundings), XLA's maximum / minimum;
//   f16 / bf16: every operation widens its operands to f32, computes there
//     and rounds once to the 16-bit type (canonical quiet NaN), as the
//     kernels' half loops do; select and loads move the 16-bit patterns;
//   integers of 8 to 64 bits, signed or unsigned: two's complement
//     wrap-around; division / remainder / shifts with XLA's CPU corner cases
//     (x / 0 = -1, INT_MIN / -1 = INT_MIN, x % 0 = x, INT_MIN % -1 = 0,
//     shifts by >= the width give 0 or the sign fill).
// A body may mix types: each value has its own (converts change it), and
// an input's type is that of the values reading it.
#ifndef HL_RUNTIME_FUSION_JIT_JIT_BODY_H_
#define HL_RUNTIME_FUSION_JIT_JIT_BODY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hl_jit_type {
  HL_JIT_BODY_TYPE,  // a value's type: the body's (hl_jit_body_t.type)
  HL_JIT_F32,
  HL_JIT_F64,
  HL_JIT_BF16,
  HL_JIT_F16,
  HL_JIT_S8,
  HL_JIT_S16,
  HL_JIT_S32,
  HL_JIT_S64,
  HL_JIT_U8,
  HL_JIT_U16,
  HL_JIT_U32,
  HL_JIT_U64,
  HL_JIT_TYPE_COUNT_
} hl_jit_type_t;

typedef enum hl_jit_op {
  HL_JIT_LOAD,       // input a: the element at the current position
  HL_JIT_BROADCAST,  // input a: its one element in every lane
  HL_JIT_ADD,        // a + b
  HL_JIT_SUB,
  HL_JIT_MUL,
  HL_JIT_DIV,
  HL_JIT_MAX,  // floats: XLA maximum / minimum (runtime/base/float_minmax.h)
  HL_JIT_MIN,
  HL_JIT_NEG,   // floats: the sign bit flipped; integers: 0 - a
  HL_JIT_ABS,   // floats: the sign bit cleared; integers: INT_MIN stays
  HL_JIT_SQRT,  // floats
  // Comparisons give a lane mask (only a select may use it). Floats: IEEE,
  // false when either side is NaN, except NE; integers: signed or unsigned
  // by the body's type (the compare's own comparison type must agree).
  HL_JIT_CMP_EQ,
  HL_JIT_CMP_NE,
  HL_JIT_CMP_LT,
  HL_JIT_CMP_LE,
  HL_JIT_CMP_GT,
  HL_JIT_CMP_GE,
  HL_JIT_SELECT,  // mask a ? b : c
  // A vmath routine of one argument (floats; 16-bit types through f32):
  // fn is SLEEF's vector routine of 32-byte vectors on this CPU (8 f32 / 4
  // f64 lanes, vmath.h), called on lanes grouped from the run's first
  // element with the lanes past its end zeroed, as vmath's array loops do;
  // or, where vmath runs scalar routines, scalar_fn element by element.
  HL_JIT_CALL,
  // Floats: floor, ceil (exact); f32 rsqrt as the kernel computes it,
  // (float)(1.0 / sqrt((double)a)).
  HL_JIT_FLOOR,
  HL_JIT_CEIL,
  HL_JIT_RSQRT,
  // Integers only.
  HL_JIT_REM,
  HL_JIT_AND,
  HL_JIT_OR,
  HL_JIT_XOR,
  HL_JIT_NOT,
  HL_JIT_SHL,  // shift-left, shift-right-arithmetic, shift-right-logical
  HL_JIT_SRA,
  HL_JIT_SRL,
  // a converted from its own type to the value's, as convert.c does:
  // float -> integer truncates, saturates and gives 0 for NaN; integer ->
  // float rounds once to nearest even; integer -> integer keeps the low
  // bits (sign- or zero-extended by the source's signedness); f32 -> bf16
  // keeps a NaN's payload (quieted), other roundings to a 16-bit type give
  // its canonical quiet NaN with the sign; f32 <-> f64 quiet a NaN keeping
  // its payload, as the CPU's conversions do.
  HL_JIT_CONVERT,
  // The element's index along one dimension, ((base + element) / c) % b:
  // base is the loop's `base` argument (codegen_api.h), b the dimension's
  // size, c the elements of the dimensions after it. Integers keep the low
  // bits, f32 is (float)(double)index, f64 (double)index (fusion_program_run.c).
  HL_JIT_IOTA,
  // A vmath routine of two arguments (a, b), as HL_JIT_CALL: pow, atan2.
  HL_JIT_CALL2,
  // clamp(a = min, b = operand, c = max) = minimum(maximum(b, a), c) with
  // XLA's maximum / minimum, as compare_select.c computes it: floats through
  // double, so an f32 NaN result is quieted (16-bit types: their canonical
  // NaN); integers signed or unsigned by the type.
  HL_JIT_CLAMP,
  HL_JIT_OP_COUNT_
} hl_jit_op_t;

typedef void (*hl_jit_fn_t)(void);

typedef struct hl_jit_value {
  hl_jit_op_t op;
  int a, b, c;  // earlier values (LOAD / BROADCAST: the input number)
  // The result's type (a compare: its operands'); HL_JIT_BODY_TYPE: the
  // body's. A convert's operand has its own type; every other operand the
  // value's (a select's mask aside).
  hl_jit_type_t type;
  int64_t iota_size, iota_inner;  // IOTA: b and c above
  // CALL: the routine (one of fn, scalar_fn) and a name that identifies it
  // across processes (the symbol it is bound to in the generated code).
  hl_jit_fn_t fn, scalar_fn;
  const char *fn_name;
} hl_jit_value_t;

#define HL_JIT_MAX_INPUTS 11
#define HL_JIT_MAX_VALUES 512

typedef struct hl_jit_body {
  hl_jit_type_t type;  // the type of values that name none
  const hl_jit_value_t *values;
  int count;        // the last value is the result
  int input_count;  // inputs[i] BROADCAST-read when input_scalar[i]
  bool input_scalar[HL_JIT_MAX_INPUTS];
} hl_jit_body_t;

// Bytes per element of the type in memory.
size_t hl_jit_type_size(hl_jit_type_t t);
bool hl_jit_type_is_float(hl_jit_type_t t);  // f32, f64, bf16, f16
bool hl_jit_is_mask_op(hl_jit_op_t op);
bool hl_jit_is_call(hl_jit_op_t op);  // CALL, CALL2
bool hl_jit_type_is_signed(hl_jit_type_t t);  // s8 .. s64
// Value i's type (its own or the body's).
hl_jit_type_t hl_jit_value_type(const hl_jit_body_t *b, int i);
// Input i's type: that of its first LOAD / BROADCAST, else the body's.
hl_jit_type_t hl_jit_input_type(const hl_jit_body_t *b, int i);
int hl_jit_arity(hl_jit_op_t op);  // operands among earlier values (LOAD: 0)

// NULL when the body is well formed (operands earlier values, masks only
// into selects, ops of the type), else what is wrong.
const char *hl_jit_body_check(const hl_jit_body_t *body);

#endif  // HL_RUNTIME_FUSION_JIT_JIT_BODY_H_
