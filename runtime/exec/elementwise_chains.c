// Grouping of unfused element-wise chains (elementwise_chains.h).
#include "runtime/exec/elementwise_chains.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/kernels/elementwise_arrays.h"

// What may be part of a chain: the element-wise ops the blocked compiler
// covers, and broadcasts (read as index arithmetic) feeding them.
static bool chain_candidate(const hl_instruction_t *inst) {
  const hl_shape_t *s = &inst->shape;
  if (!hl_shape_is_array(s) || s->dynamic_mask || inst->control_predecessor_count) return false;
  switch (inst->opcode) {
    case HL_OP_COMPARE:
    case HL_OP_SELECT:
    case HL_OP_CLAMP:
    case HL_OP_CONVERT:
    case HL_OP_BROADCAST:
      return true;
    default:
      break;
  }
  return hl_ew_instruction_supported(inst);
}

void hl_chains_destroy(hl_plan_chain_t *chains, int count) {
  if (!chains) return;
  for (int i = 0; i < count; i++) {
    hl_free(chains[i].members);
    hl_free(chains[i].input_slots);
    hl_fusion_program_destroy(chains[i].program);
  }
  hl_free(chains);
}

// Fills chain `ch` from the instructions of group g (positions ascending)
// and compiles it; false when the blocked compiler does not cover it.
static hl_status_t build_chain(const hl_computation_t *c, const hl_instruction_t *const *order,
                               int count, const int *group, int g, int root_q, int members,
                               hl_plan_chain_t *ch, bool *ok) {
  *ok = false;
  memset(ch, 0, sizeof(*ch));
  ch->root_position = root_q;
  ch->members = hl_malloc(sizeof(*ch->members) * (size_t)members);
  int max_inputs = 0;
  for (int q = 0; q <= root_q; q++)
    if (group[order[q]->index] == g) max_inputs += order[q]->operand_count;
  const hl_instruction_t **inputs = hl_malloc(sizeof(*inputs) * (size_t)(max_inputs ? max_inputs : 1));
  ch->input_slots = hl_malloc(sizeof(int) * (size_t)(max_inputs ? max_inputs : 1));
  if (!ch->members || !inputs || !ch->input_slots) {
    hl_free(inputs);
    return HL_OOM();
  }
  for (int q = 0; q < count && q <= root_q; q++) {
    const hl_instruction_t *inst = order[q];
    if (group[inst->index] != g) continue;
    ch->members[ch->member_count++] = inst;
    for (int k = 0; k < inst->operand_count; k++) {
      const hl_instruction_t *o = inst->operands[k];
      if (group[o->index] == g) continue;
      bool seen = false;
      for (int i = 0; i < ch->input_count && !seen; i++) seen = inputs[i] == o;
      if (seen) continue;
      inputs[ch->input_count] = o;
      ch->input_slots[ch->input_count++] = o->index;
    }
  }
  const char *why = NULL;
  hl_status_t st = hl_fusion_program_compile_chain(c, ch->members, ch->member_count, inputs,
                                                   ch->input_count, &ch->program, &why);
  hl_free(inputs);
  *ok = !st && ch->program;
  return st;
}

hl_status_t hl_chains_find(const hl_computation_t *c, const hl_instruction_t *const *order,
                           int n, hl_plan_chain_t **out_chains, int *out_count, int **out_at) {
  *out_chains = NULL;
  *out_count = 0;
  *out_at = NULL;
  int *uses = hl_calloc((size_t)n, sizeof(int));
  int *user = hl_malloc(sizeof(int) * (size_t)n);
  bool *pinned = hl_calloc((size_t)n, sizeof(bool));  // a control predecessor
  int *group = hl_malloc(sizeof(int) * (size_t)n);
  int *root_q = hl_malloc(sizeof(int) * (size_t)n);  // per group: its root's position
  int *size = hl_calloc((size_t)n, sizeof(int));     // per group: members
  int *at = hl_malloc(sizeof(int) * (size_t)n);
  hl_status_t st = (uses && user && pinned && group && root_q && size && at) ? NULL : HL_OOM();
  hl_plan_chain_t *chains = NULL;
  int chain_count = 0;
  if (!st) {
    for (int q = 0; q < n; q++) {
      const hl_instruction_t *inst = order[q];
      group[inst->index] = -1;
      at[q] = -1;
      for (int k = 0; k < inst->operand_count; k++) {
        uses[inst->operands[k]->index]++;
        user[inst->operands[k]->index] = inst->index;
      }
      for (int k = 0; k < inst->control_predecessor_count; k++)
        pinned[inst->control_predecessors[k]->index] = true;
    }
    // Users come after their operands: walking back, a value joins its one
    // user's group or starts a group of its own.
    int groups = 0;
    for (int q = n - 1; q >= 0; q--) {
      const hl_instruction_t *inst = order[q];
      int s = inst->index;
      if (pinned[s] || !chain_candidate(inst)) continue;
      if (uses[s] == 1 && inst != c->root && group[user[s]] >= 0) {
        group[s] = group[user[s]];
      } else {
        if (inst->opcode == HL_OP_BROADCAST ||
            hl_shape_element_count(&inst->shape) < HL_CHAIN_MIN_ELEMENTS)
          continue;  // a broadcast alone, or too small to gain
        root_q[groups] = q;
        group[s] = groups++;
      }
      size[group[s]]++;
    }
    int worth = 0;
    for (int g = 0; g < groups; g++) worth += size[g] >= 2;
    if (worth) chains = hl_calloc((size_t)worth, sizeof(*chains));
    if (worth && !chains) st = HL_OOM();
    for (int g = 0; g < groups && !st; g++) {
      if (size[g] < 2) continue;
      bool ok = false;
      st = build_chain(c, order, n, group, g, root_q[g], size[g], &chains[chain_count], &ok);
      if (st || !ok) {
        hl_plan_chain_t dropped = chains[chain_count];
        hl_free(dropped.members);
        hl_free(dropped.input_slots);
        hl_fusion_program_destroy(dropped.program);
        continue;
      }
      for (int q = 0; q < root_q[g]; q++)
        if (group[order[q]->index] == g) at[q] = -2;
      at[root_q[g]] = chain_count++;
    }
  }
  hl_free(uses);
  hl_free(user);
  hl_free(pinned);
  hl_free(group);
  hl_free(root_q);
  hl_free(size);
  if (st || chain_count == 0) {
    hl_chains_destroy(chains, chain_count);
    hl_free(at);
    return st;
  }
  *out_chains = chains;
  *out_count = chain_count;
  *out_at = at;
  return NULL;
}
