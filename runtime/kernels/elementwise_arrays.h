// The element-wise kernels' loops over plain arrays (no literals), shared by
// the op-by-op kernels and the blocked fusion executor (runtime/fusion), so
// both paths compute every element with the same code and agree bit for bit.
//
// All arrays are row-major runs of n elements of the named types; y may be
// the same array as an input (in place), otherwise arrays do not overlap.
// Only real and integer types (hl_elem_is_real_or_int); complex stays in the
// kernels. Each *_supported check is what the kernel would accept.
#ifndef HL_RUNTIME_KERNELS_ELEMENTWISE_ARRAYS_H_
#define HL_RUNTIME_KERNELS_ELEMENTWISE_ARRAYS_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/dtype.h"
#include "runtime/ir/module.h"
#include "runtime/vmath/vmath.h"

// Unary / binary arithmetic (elementwise.c): op on element type `in`, result
// type `out` (pred for is-finite, else `in`).
bool hl_ew_unary_supported(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out);
void hl_ew_unary_array(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out, const void *x, void *y,
                       int64_t n);
bool hl_ew_binary_supported(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out);
// The two checks above for an instruction, by its opcode's arity (operand
// element type in, its own out); false for other arities.
bool hl_ew_instruction_supported(const hl_instruction_t *inst);
// The vmath function an f32 / f64 unary op runs through (HL_VM_NONE: none).
hl_vmath_fn_t hl_ew_vmath_fn(hl_opcode_t op);
void hl_ew_binary_array(hl_opcode_t op, hl_dtype_t in, hl_dtype_t out, const void *a,
                        const void *b, void *y, int64_t n);
// The same with one operand a single element (a_scalar: a, else b): false
// (nothing written) when (op, type) has no such loop; the caller then
// repeats the scalar into an array and calls hl_ew_binary_array.
bool hl_ew_binary_array_scalar(hl_opcode_t op, hl_dtype_t t, const void *a, bool a_scalar,
                               const void *b, void *y, int64_t n);

// compare (compare_select.c): `type` already resolved from DEFAULT; r is pred.
bool hl_compare_supported(hl_comparison_direction_t dir, hl_comparison_type_t type,
                          hl_dtype_t t);
void hl_compare_array(hl_comparison_direction_t dir, hl_comparison_type_t type, hl_dtype_t t,
                      const void *a, const void *b, uint8_t *r, int64_t n);
// select with an array predicate: y[i] = p[i] ? on_true[i] : on_false[i].
void hl_select_array(size_t elem_size, const uint8_t *p, const void *on_true,
                     const void *on_false, void *y, int64_t n);
// clamp: lo / hi point at one element when *_scalar, else at n elements.
bool hl_clamp_supported(hl_dtype_t t);
void hl_clamp_array(hl_dtype_t t, const void *lo, bool lo_scalar, const void *x, const void *hi,
                    bool hi_scalar, void *y, int64_t n);

// convert (convert.c), st != dt, both real or integer.
bool hl_convert_supported(hl_dtype_t st, hl_dtype_t dt);
void hl_convert_array(hl_dtype_t st, hl_dtype_t dt, const void *x, void *y, int64_t n);

#endif  // HL_RUNTIME_KERNELS_ELEMENTWISE_ARRAYS_H_
