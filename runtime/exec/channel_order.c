// Evaluation order around channel instructions (see hl_channel_order).
//
// Why: sends and receives are non-blocking, only send-done / recv-done wait.
// Two processes that exchange in both directions deadlock if either waits in
// a recv-done before it has started the send the other one waits for, which
// is what a plain IR-order walk does for "recv, recv-done, send, send-done".
// The spec's ordering (recv before send before recv-done; send before
// send-done) holds for any input order once every transfer that can start
// does so before the process blocks: a list schedule that prefers starts and
// defers waits. It only moves instructions within what the dependencies
// allow, so results do not change.
#include <stdbool.h>

#include "runtime/base/alloc.h"
#include "runtime/exec/channel_order.h"
#include "runtime/ir/module.h"

enum { kStart = 0, kPlain = 1, kWait = 2 };

static bool computation_waits(const hl_computation_t *c, int depth);

static bool instruction_waits(const hl_instruction_t *inst, int depth) {
  if (inst->opcode == HL_OP_SEND_DONE || inst->opcode == HL_OP_RECV_DONE) return true;
  if (depth > 64) return false;  // HLO does not recurse; a cap keeps bad input bounded
  for (int k = 0; k < inst->called_count; k++)
    if (inst->called_computations[k] && computation_waits(inst->called_computations[k], depth + 1))
      return true;
  return false;
}

static bool computation_waits(const hl_computation_t *c, int depth) {
  if (c->is_fusion_computation) return false;
  for (int i = 0; i < c->instruction_count; i++)
    if (instruction_waits(c->instructions[i], depth)) return true;
  return false;
}

static int instruction_class(const hl_instruction_t *inst) {
  if (inst->opcode == HL_OP_SEND || inst->opcode == HL_OP_RECV) return kStart;
  return instruction_waits(inst, 0) ? kWait : kPlain;
}

hl_status_t hl_channel_order(const hl_computation_t *c, const hl_instruction_t **order) {
  int n = c->instruction_count;
  bool any = false;
  for (int i = 0; i < n && !any; i++) {
    hl_opcode_t op = c->instructions[i]->opcode;
    any = op == HL_OP_SEND || op == HL_OP_RECV || instruction_class(c->instructions[i]) == kWait;
  }
  if (!any) return NULL;

  // Kahn's algorithm over the given order; the place in it breaks ties within
  // a class, so unrelated instructions keep their relative order.
  int *missing = hl_calloc((size_t)n, sizeof(int));  // dependencies not yet placed
  int *cls = hl_malloc((size_t)n * sizeof(int));
  bool *placed = hl_calloc((size_t)n, sizeof(bool));
  const hl_instruction_t **out = hl_malloc((size_t)n * sizeof(*out));
  hl_status_t st = (missing && cls && placed && out) ? NULL : HL_OOM();
  for (int p = 0; p < n && !st; p++) {
    const hl_instruction_t *inst = order[p];
    cls[inst->index] = instruction_class(inst);
    missing[inst->index] = inst->operand_count + inst->control_predecessor_count;
  }
  for (int q = 0; q < n && !st; q++) {
    // Picks the ready instruction of the lowest class, earliest in `order`.
    // Quadratic, but only computations with channel instructions get here.
    int best = -1;
    for (int p = 0; p < n; p++) {
      int i = order[p]->index;
      if (placed[i] || missing[i] > 0) continue;
      if (best < 0 || cls[i] < cls[best]) best = i;
      if (cls[i] == kStart) break;
    }
    if (best < 0) {
      st = HL_INTERNAL_ERROR("computation '%s': channel ordering found no ready instruction",
                             c->name);
      break;
    }
    placed[best] = true;
    out[q] = c->instructions[best];
    // Each user's count drops once per edge to `best`.
    for (int p = 0; p < n; p++) {
      const hl_instruction_t *u = order[p];
      if (placed[u->index]) continue;
      for (int k = 0; k < u->operand_count; k++)
        if (u->operands[k] == out[q]) missing[u->index]--;
      for (int k = 0; k < u->control_predecessor_count; k++)
        if (u->control_predecessors[k] == out[q]) missing[u->index]--;
    }
  }
  if (!st)
    for (int q = 0; q < n; q++) order[q] = out[q];
  hl_free(missing);
  hl_free(cls);
  hl_free(placed);
  hl_free(out);
  return st;
}
