// A custom-call's buffers in the memory order the target is promised.
//
// Literals here are always dense row-major. A custom-call's layouts
// (operand_layout_constraints, else the operand's shape layout; the result
// shape's layouts) say which memory order the target reads and writes, so
// operands are copied into that order before the target runs and results
// copied back after: a target written against raw buffers (jaxlib's LAPACK
// kernels, an FFI plugin) sees exactly the bytes it would under XLA.
#ifndef HL_CUSTOM_CALLS_FRAME_H_
#define HL_CUSTOM_CALLS_FRAME_H_

#include <stdint.h>

#include "runtime/custom_calls/registry.h"

typedef struct hl_cc_buffer {
  hl_dtype_t dtype;
  int rank;
  int64_t dims[HL_MAX_RANK];  // logical dimensions
  int64_t minor_to_major[HL_MAX_RANK];
  int64_t count;              // element count
  void *data;                 // count elements in the layout's memory order (owned)
} hl_cc_buffer_t;

typedef struct hl_cc_frame {
  int arg_count, ret_count;
  hl_cc_buffer_t *args, *rets;  // rets start zero-filled
} hl_cc_frame_t;

// Copies the operands into their layouts and allocates zeroed results.
hl_status_t hl_cc_frame_init(const hl_custom_call_t *call, hl_cc_frame_t *frame);
// Builds the result literal (a tuple when inst->shape is one) from rets.
hl_status_t hl_cc_frame_finish(const hl_custom_call_t *call, const hl_cc_frame_t *frame,
                               hl_literal_t **out);
void hl_cc_frame_deinit(hl_cc_frame_t *frame);

// Product of dims[from..to) (1 when empty).
int64_t hl_cc_dims_product(const hl_cc_buffer_t *b, int from, int to);

#endif  // HL_CUSTOM_CALLS_FRAME_H_
