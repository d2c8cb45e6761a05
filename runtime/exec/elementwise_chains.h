// Unfused element-wise chains of an ordinary computation, run through the
// blocked fusion executor (runtime/fusion) like a kLoop fusion: at plan time
// the maximal trees of element-wise instructions whose values have one user,
// inside the tree, become one blocked program; the walk then computes the
// tree's root in one blocked pass at the root's position and skips the
// interior instructions (their values never exist). With
// --no-fusion-blocking (or an observer that wants every value: the NaN
// checks) the walk runs them op by op as before: the reference the tests
// compare against.
#ifndef HL_RUNTIME_EXEC_ELEMENTWISE_CHAINS_H_
#define HL_RUNTIME_EXEC_ELEMENTWISE_CHAINS_H_

#include "runtime/base/status.h"
#include "runtime/ir/module.h"

struct hl_fusion_program;

// Smallest chain output (elements) worth a blocked program: below it the
// op-by-op walk costs as little.
#define HL_CHAIN_MIN_ELEMENTS 4096

typedef struct hl_plan_chain {
  int root_position;                // plan position of the chain's output instruction
  int member_count;                 // instructions of the chain, the root included
  const hl_instruction_t **members;  // in evaluation order, root last
  int input_count;
  int *input_slots;                 // value slots of the chain's arguments
  struct hl_fusion_program *program;
} hl_plan_chain_t;

// Finds and compiles the chains of `c` evaluated in `order` (count
// positions). *chain_at[q]: >= 0 the chain whose root is at q, -2 an interior
// member (skipped when blocking), -1 neither. Chains the blocked compiler does
// not cover are dropped (their instructions run op by op).
hl_status_t hl_chains_find(const hl_computation_t *c, const hl_instruction_t *const *order,
                           int count, hl_plan_chain_t **out_chains, int *out_chain_count,
                           int **out_chain_at);
void hl_chains_destroy(hl_plan_chain_t *chains, int chain_count);  // NULL-safe

#endif  // HL_RUNTIME_EXEC_ELEMENTWISE_CHAINS_H_
