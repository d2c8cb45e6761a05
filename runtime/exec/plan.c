#include "runtime/exec/plan.h"

#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/exec/channel_order.h"
#include "runtime/exec/elementwise_chains.h"

hl_exec_stats_t hl_exec_stats_counters_;

hl_exec_stats_t hl_exec_stats(void) { return hl_exec_stats_counters_; }

void hl_exec_stats_reset(void) {
  int64_t live = hl_exec_stats_counters_.live_values;
  memset(&hl_exec_stats_counters_, 0, sizeof(hl_exec_stats_counters_));
  hl_exec_stats_counters_.live_values = live;
  hl_exec_stats_counters_.peak_live_values = live;
}

static volatile sig_atomic_t g_cancel_requested;

void hl_exec_request_cancel(void) { g_cancel_requested = 1; }
void hl_exec_clear_cancel(void) { g_cancel_requested = 0; }
bool hl_exec_cancel_requested(void) { return g_cancel_requested != 0; }

//===----------------------------------------------------------------------===//
// Plan construction
//===----------------------------------------------------------------------===//

// Defined with the dispatch table in executor.c.
hl_kernel_fn_t hl_exec_kernel_for_opcode(hl_opcode_t opcode);

void hl_plan_destroy(hl_plan_t *plan) {
  if (!plan) return;
  hl_free(plan->order);
  hl_free(plan->kernels);
  hl_free(plan->operand_start);
  hl_free(plan->operand_slots);
  hl_free(plan->release_start);
  hl_free(plan->release_slots);
  hl_free(plan->values);
  hl_free(plan->operand_buffer);
  hl_chains_destroy(plan->chains, plan->chain_count);
  hl_free(plan->chain_at);
  hl_free(plan);
}

// An edge source must be an instruction of the same computation at the
// index it claims; a loader bug or a hand-built module could break that.
static hl_status_t check_edge(const hl_computation_t *c, const hl_instruction_t *user,
                              const hl_instruction_t *dep, const char *what, int k) {
  if (!dep || dep->parent != c || dep->index < 0 || dep->index >= c->instruction_count ||
      c->instructions[dep->index] != dep)
    return HL_INVALID("%s: %s %d is not an instruction of computation '%s'",
                      hl_instruction_location(user), what, k, c->name);
  return NULL;
}

static hl_status_t check_instruction(const hl_computation_t *c, const hl_instruction_t *inst,
                                     int index) {
  if (!inst || inst->parent != c || inst->index != index)
    return HL_INVALID("computation '%s': instruction %d is malformed (wrong parent or index)",
                      c->name, index);
  if ((int)inst->opcode < 0 || inst->opcode >= HL_OP_COUNT_)
    return HL_INVALID("%s: invalid opcode %d", hl_instruction_location(inst), (int)inst->opcode);
  int arity = hl_opcode_arity(inst->opcode);
  if (arity >= 0 && inst->operand_count != arity)
    return HL_INVALID("%s: expected %d operand%s, got %d", hl_instruction_location(inst), arity,
                      arity == 1 ? "" : "s", inst->operand_count);
  if (inst->operand_count < 0 || inst->control_predecessor_count < 0)
    return HL_INVALID("%s: negative operand count", hl_instruction_location(inst));
  for (int k = 0; k < inst->operand_count; k++)
    HL_RETURN_IF_ERROR(check_edge(c, inst, inst->operands[k], "operand", k));
  for (int k = 0; k < inst->control_predecessor_count; k++)
    HL_RETURN_IF_ERROR(check_edge(c, inst, inst->control_predecessors[k],
                                  "control predecessor", k));
  return NULL;
}

static const hl_instruction_t *dependency(const hl_instruction_t *inst, int k) {
  return k < inst->operand_count ? inst->operands[k]
                                 : inst->control_predecessors[k - inst->operand_count];
}

// Topological order: depth-first post-order, starting points and edges taken
// in IR order, so a module whose IR order is already valid keeps it. Iterative
// because chains of many thousands of instructions are normal.
static hl_status_t compute_order(const hl_computation_t *c, const hl_instruction_t **order) {
  int n = c->instruction_count;
  bool in_ir_order = true;
  for (int i = 0; i < n && in_ir_order; i++) {
    const hl_instruction_t *inst = c->instructions[i];
    int deps = inst->operand_count + inst->control_predecessor_count;
    for (int k = 0; k < deps; k++)
      if (dependency(inst, k)->index >= i) {
        in_ir_order = false;
        break;
      }
  }
  if (in_ir_order) {
    for (int i = 0; i < n; i++) order[i] = c->instructions[i];
    return NULL;
  }
  uint8_t *state = hl_calloc((size_t)n, 1);  // 0 new, 1 on the stack, 2 placed
  int *cursor = hl_calloc((size_t)n, sizeof(int));
  int *stack = hl_malloc((size_t)n * sizeof(int));
  hl_status_t st = (state && cursor && stack) ? NULL : HL_OOM();
  int placed = 0;
  for (int s = 0; s < n && !st; s++) {
    if (state[s]) continue;
    int top = 0;
    stack[top++] = s;
    state[s] = 1;
    while (top > 0 && !st) {
      int t = stack[top - 1];
      const hl_instruction_t *inst = c->instructions[t];
      int deps = inst->operand_count + inst->control_predecessor_count;
      if (cursor[t] < deps) {
        int d = dependency(inst, cursor[t]++)->index;
        if (state[d] == 1)
          st = HL_INVALID("%s: dependency cycle through '%s' (operands or control predecessors)",
                          hl_instruction_location(inst), c->instructions[d]->name);
        else if (state[d] == 0) {
          state[d] = 1;
          stack[top++] = d;
        }
        continue;
      }
      state[t] = 2;
      order[placed++] = inst;
      top--;
    }
  }
  hl_free(state);
  hl_free(cursor);
  hl_free(stack);
  return st;
}

hl_status_t hl_plan_create(const hl_computation_t *c, hl_plan_t **out) {
  *out = NULL;
  int n = c->instruction_count;
  if (n <= 0 || !c->instructions) return HL_INVALID("computation '%s' has no instructions", c->name);
  if (!c->root || c->root->parent != c || c->root->index < 0 || c->root->index >= n ||
      c->instructions[c->root->index] != c->root)
    return HL_INVALID("computation '%s' has no valid root instruction", c->name);
  for (int i = 0; i < n; i++) HL_RETURN_IF_ERROR(check_instruction(c, c->instructions[i], i));

  hl_plan_t *p = hl_calloc(1, sizeof(*p));
  if (!p) return HL_OOM();
  p->computation = c;
  p->count = n;
  p->root_slot = c->root->index;
  int total_operands = 0;
  for (int i = 0; i < n; i++) {
    int k = c->instructions[i]->operand_count;
    total_operands += k;
    if (k > p->max_operands) p->max_operands = k;
  }
  int *position = NULL, *last = NULL;
  hl_status_t st = NULL;
  p->order = hl_malloc((size_t)n * sizeof(*p->order));
  p->kernels = hl_malloc((size_t)n * sizeof(*p->kernels));
  p->operand_start = hl_malloc((size_t)(n + 1) * sizeof(int));
  p->operand_slots = hl_malloc((size_t)total_operands * sizeof(int));
  p->release_start = hl_calloc((size_t)(n + 1), sizeof(int));
  p->release_slots = hl_malloc((size_t)n * sizeof(int));  // each value dies at most once
  p->values = hl_calloc((size_t)n, sizeof(hl_literal_t *));
  p->operand_buffer = hl_calloc((size_t)p->max_operands, sizeof(hl_literal_t *));
  position = hl_malloc((size_t)n * sizeof(int));
  last = hl_malloc((size_t)n * sizeof(int));
  if (!p->order || !p->kernels || !p->operand_start || !p->operand_slots || !p->release_start ||
      !p->release_slots || !p->values || !p->operand_buffer || !position || !last)
    st = HL_OOM();
  if (!st) st = compute_order(c, p->order);
  if (!st) st = hl_channel_order(c, p->order);  // channel starts before waits
  if (!st) st = hl_chains_find(c, p->order, n, &p->chains, &p->chain_count, &p->chain_at);
  if (!st) {
    // A chain member's use of an outside value counts at the chain's root
    // (where the blocked walk reads it); uses inside a chain stay where they are.
    for (int q = 0; q < n; q++) position[p->order[q]->index] = q;
    int *use_at = last;  // per position first: where a use by order[q] counts
    for (int q = 0; q < n; q++) use_at[q] = q;
    for (int i = 0; i < p->chain_count; i++)
      for (int m = 0; m < p->chains[i].member_count; m++)
        use_at[position[p->chains[i].members[m]->index]] = p->chains[i].root_position;
    int *at_of_slot = hl_malloc((size_t)n * sizeof(int));
    if (!at_of_slot) st = HL_OOM();
    for (int s = 0; !st && s < n; s++) at_of_slot[s] = use_at[position[s]];
    for (int q = 0; !st && q < n; q++) last[p->order[q]->index] = q;  // now per slot
    int o = 0;
    for (int q = 0; !st && q < n; q++) {
      const hl_instruction_t *inst = p->order[q];
      p->kernels[q] = hl_exec_kernel_for_opcode(inst->opcode);
      p->operand_start[q] = o;
      for (int k = 0; k < inst->operand_count; k++) {
        int slot = inst->operands[k]->index;
        p->operand_slots[o++] = slot;
        // An interior member's value dies at its one user, inside the chain.
        bool interior = p->chain_at && p->chain_at[position[slot]] == -2;
        int at = interior ? q : at_of_slot[inst->index];
        if (at > last[slot]) last[slot] = at;
      }
    }
    p->operand_start[n] = o;
    hl_free(at_of_slot);
  }
  if (!st) {
    last[p->root_slot] = -1;
    // Counting sort of the slots by the position where they die.
    for (int s = 0; s < n; s++)
      if (last[s] >= 0) p->release_start[last[s] + 1]++;
    for (int q = 0; q < n; q++) p->release_start[q + 1] += p->release_start[q];
    int *fill = position;  // reused as per-position write cursors
    for (int q = 0; q < n; q++) fill[q] = p->release_start[q];
    for (int s = 0; s < n; s++)
      if (last[s] >= 0) p->release_slots[fill[last[s]]++] = s;
  }
  hl_free(position);
  hl_free(last);
  if (st) {
    hl_plan_destroy(p);
    return st;
  }
  hl_exec_stats_counters_.plans_built++;
  *out = p;
  return NULL;
}

int hl_plan_last_use(const hl_plan_t *p, int slot) {
  for (int q = 0; q < p->count; q++)
    for (int r = p->release_start[q]; r < p->release_start[q + 1]; r++)
      if (p->release_slots[r] == slot) return q;
  return -1;
}

//===----------------------------------------------------------------------===//
// Plan cache: open addressing on the computation pointer
//===----------------------------------------------------------------------===//

struct hl_plan_cache {
  const hl_computation_t **keys;
  hl_plan_t **plans;
  size_t capacity;  // power of two
  size_t used;
};

static size_t hash_ptr(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(x ^ (x >> 29));
}

static hl_status_t cache_alloc(hl_plan_cache_t *c, size_t capacity) {
  c->keys = hl_calloc(capacity, sizeof(*c->keys));
  c->plans = hl_calloc(capacity, sizeof(*c->plans));
  c->capacity = capacity;
  c->used = 0;
  if (!c->keys || !c->plans) {
    hl_free(c->keys);
    hl_free(c->plans);
    c->keys = NULL;
    c->plans = NULL;
    return HL_OOM();
  }
  return NULL;
}

hl_status_t hl_plan_cache_create(int hint, hl_plan_cache_t **out) {
  *out = NULL;
  hl_plan_cache_t *c = hl_calloc(1, sizeof(*c));
  if (!c) return HL_OOM();
  size_t cap = 8;
  while (cap < (size_t)(hint > 0 ? hint : 1) * 2) cap *= 2;
  hl_status_t st = cache_alloc(c, cap);
  if (st) {
    hl_free(c);
    return st;
  }
  *out = c;
  return NULL;
}

void hl_plan_cache_destroy(hl_plan_cache_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->capacity; i++) hl_plan_destroy(c->plans[i]);
  hl_free(c->keys);
  hl_free(c->plans);
  hl_free(c);
}

static size_t cache_slot(const hl_plan_cache_t *c, const hl_computation_t *key) {
  size_t mask = c->capacity - 1, i = hash_ptr(key) & mask;
  while (c->keys[i] && c->keys[i] != key) i = (i + 1) & mask;
  return i;
}

static hl_status_t cache_grow(hl_plan_cache_t *c) {
  hl_plan_cache_t fresh = {0};
  HL_RETURN_IF_ERROR(cache_alloc(&fresh, c->capacity * 2));
  for (size_t i = 0; i < c->capacity; i++) {
    if (!c->keys[i]) continue;
    size_t j = cache_slot(&fresh, c->keys[i]);
    fresh.keys[j] = c->keys[i];
    fresh.plans[j] = c->plans[i];
    fresh.used++;
  }
  hl_free(c->keys);
  hl_free(c->plans);
  *c = fresh;
  return NULL;
}

hl_status_t hl_plan_cache_get(hl_plan_cache_t *c, const hl_computation_t *comp,
                              hl_plan_t **out) {
  size_t i = cache_slot(c, comp);
  if (c->keys[i]) {
    *out = c->plans[i];
    return NULL;
  }
  *out = NULL;
  if ((c->used + 1) * 2 > c->capacity) {
    HL_RETURN_IF_ERROR(cache_grow(c));
    i = cache_slot(c, comp);
  }
  hl_plan_t *plan;
  HL_RETURN_IF_ERROR(hl_plan_create(comp, &plan));
  c->keys[i] = comp;
  c->plans[i] = plan;
  c->used++;
  *out = plan;
  return NULL;
}
