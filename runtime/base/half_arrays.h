// Array conversions between the 16-bit float types (bf16, f16) and f32,
// written with integer operations (and one float add for f16 subnormals) so
// the compiler vectorises them: bf16 -> f32 is a shift, f32 -> bf16 / f16
// round to nearest even on the bit pattern. Every element gives exactly
// the bits of the scalar conversions named below (test_half_arrays checks
// every f32 / every 16-bit pattern), so the array kernels, the blocked
// fusion executor and the dot, which all call these, agree with the
// element-at-a-time paths.
//
// NaN: a 16-bit NaN widens to the f32 NaN with the same sign and payload.
// Narrowing f32 NaN has two conventions in the runtime, kept as they were:
//   *_keep:  sign and the top payload bits kept, quiet bit set (convert
//            f32 -> bf16, as hl_f32_to_bf16 and XLA's CPU fptrunc do);
//   *_canon: the quiet NaN with the sign (0x7fc0 / 0x7e00), as
//            hl_elem_f64_to_bf16 / hl_elem_f64_to_f16 give for arithmetic
//            results and for every other conversion into f16 / bf16.
#ifndef HL_RUNTIME_BASE_HALF_ARRAYS_H_
#define HL_RUNTIME_BASE_HALF_ARRAYS_H_

#include <stdint.h>

// y[i] = x[i] as f32 (exact).
void hl_bf16_to_f32_array(const uint16_t *x, float *y, int64_t n);
void hl_f16_to_f32_array(const uint16_t *x, float *y, int64_t n);
// y[i] = x[i] rounded to nearest even; overflow gives +-inf.
void hl_f32_to_bf16_array_keep(const float *x, uint16_t *y, int64_t n);
void hl_f32_to_bf16_array_canon(const float *x, uint16_t *y, int64_t n);
void hl_f32_to_f16_array_canon(const float *x, uint16_t *y, int64_t n);

#endif  // HL_RUNTIME_BASE_HALF_ARRAYS_H_
