// Checked results (--expect): compares a result with expected arrays
// element by element within tolerances and finds the worst element.
//
// An element matches when both are NaN, or they are equal, or
// |got - want| <= atol + rtol * |want|, or |got - want| <= ulp units of the
// expected value's ulp in the element type (2^(exponent - mantissa bits)).
// Integers and pred must be equal; complex values compare both parts.
#ifndef HL_RUNTIME_DEBUG_RESULT_CHECK_H_
#define HL_RUNTIME_DEBUG_RESULT_CHECK_H_

#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"

typedef struct hl_tolerance {
  double rtol, atol;
  double ulp;  // 0: not used
} hl_tolerance_t;

typedef struct hl_result_check_stats {
  int64_t elements, mismatches;
  int worst_leaf;        // -1: no mismatch
  int64_t worst_index;   // flat row-major index in that leaf
  double worst_got, worst_want, worst_error;  // |got - want| (inf for NaN against a number)
} hl_result_check_stats_t;

// Compares the array leaves of `got` (nested tuples flattened depth-first,
// as --output-dir writes them) with want[0..want_count). A different number
// of leaves, element type or shape is an error naming the leaf.
hl_status_t hl_result_check(const hl_literal_t *got, hl_literal_t *const *want, int want_count,
                            const hl_tolerance_t *tolerance, hl_result_check_stats_t *out_stats);

// The array leaves of `lit` depth-first (a tuple's elements in order, nested
// tuples flattened), as --output-dir numbers result<i>.npy: stores at most
// `cap` of them in out[] and counts all of them in *n (which it adds to).
void hl_result_leaves(const hl_literal_t *lit, const hl_literal_t **out, int *n, int cap);

// "[1,2]" for flat index `index` of `shape`, into buf.
void hl_result_check_format_index(const hl_shape_t *shape, int64_t index, char *buf, size_t cap);

#endif  // HL_RUNTIME_DEBUG_RESULT_CHECK_H_
