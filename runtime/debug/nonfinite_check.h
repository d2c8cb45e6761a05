// --check-nans / --check-infs: finds the first NaN or Inf an instruction
// produced and describes it with its operands (min / max / NaN / Inf count).
#ifndef HL_RUNTIME_DEBUG_NONFINITE_CHECK_H_
#define HL_RUNTIME_DEBUG_NONFINITE_CHECK_H_

#include <stdbool.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

// NULL when `result` (every array leaf of a floating or complex type) holds
// no NaN (check_nans) and no +-Inf (check_infs); otherwise an error naming
// the instruction, the first bad element's index, the counts, the operands'
// summaries and `where` (e.g. "iteration 3 of while.1"; may be NULL).
hl_status_t hl_nonfinite_check(const hl_instruction_t *inst, hl_literal_t *const *operands,
                               int operand_count, const hl_literal_t *result, bool check_nans,
                               bool check_infs, const char *where);

#endif  // HL_RUNTIME_DEBUG_NONFINITE_CHECK_H_
