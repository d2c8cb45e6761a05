// The static pre-run check of collective sequences (see collective_check.h).
#include "runtime/debug/collective_check.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "channels/channel_pairing.h"
#include "collectives/groups.h"
#include "runtime/base/alloc.h"

// One entry of a rank's sequence: a collective, or "unknown from here".
typedef struct step {
  const hl_instruction_t *inst;  // NULL: undecidable from here on
  int *group;                    // this rank's group (sorted), owned
  int group_size;
} step_t;

// How often a rank sends to (or receives from) one peer on one channel.
typedef struct tally {
  int64_t channel_id;
  int peer;
  bool send;
  int64_t count;
  const hl_instruction_t *first;  // for the error message
} tally_t;

typedef struct sequence {
  step_t *steps;
  int count, cap;
  bool open_ended;  // ends in an undecidable step
  tally_t *tallies;  // messages per (channel, peer, direction)
  int tally_count, tally_cap;
  bool channels_unknown;  // a send / recv in an undecided branch or loop
  // A send / recv this rank certainly reaches whose channel has no
  // instruction of the other direction anywhere in the program.
  const hl_instruction_t *orphan;
} sequence_t;

typedef struct checker {
  const hl_module_t *module;
  int64_t R, P;
  hl_status_t error;  // an error resolving groups (the verifier's job; reported as is)
} checker_t;

//===----------------------------------------------------------------------===//
// Per-rank static values: replica-id, partition-id, constants and the
// integer / predicate ops that combine them
//===----------------------------------------------------------------------===//

static bool eval_scalar(const hl_instruction_t *inst, int rank, const checker_t *c,
                        int64_t *out, int depth) {
  if (depth > 64 || !hl_shape_is_array(&inst->shape) || inst->shape.rank != 0) return false;
  int64_t a = 0, b = 0;
  const hl_instruction_t *const *op = (const hl_instruction_t *const *)inst->operands;
  switch (inst->opcode) {
    case HL_OP_CONSTANT:
      if (!inst->attrs.literal || hl_dtype_is_float(inst->shape.dtype) ||
          hl_dtype_is_complex(inst->shape.dtype))
        return false;
      *out = hl_literal_get_s64(inst->attrs.literal, 0);
      return true;
    case HL_OP_REPLICA_ID: *out = rank / c->P; return true;
    case HL_OP_PARTITION_ID: *out = rank % c->P; return true;
    case HL_OP_CONVERT: case HL_OP_COPY: case HL_OP_BITCAST: case HL_OP_RESHAPE:
      if (hl_dtype_is_float(inst->shape.dtype) || hl_dtype_is_complex(inst->shape.dtype) ||
          inst->operand_count != 1)
        return false;
      if (!eval_scalar(op[0], rank, c, &a, depth + 1)) return false;
      if (inst->shape.dtype == HL_PRED) a = a != 0;
      *out = a;
      return true;
    case HL_OP_NOT:
      if (!eval_scalar(op[0], rank, c, &a, depth + 1)) return false;
      *out = inst->shape.dtype == HL_PRED ? !a : ~a;
      return true;
    case HL_OP_NEGATE:
      if (!eval_scalar(op[0], rank, c, &a, depth + 1)) return false;
      *out = -a;
      return true;
    case HL_OP_ADD: case HL_OP_SUBTRACT: case HL_OP_MULTIPLY: case HL_OP_AND: case HL_OP_OR:
    case HL_OP_XOR: case HL_OP_COMPARE:
      if (inst->operand_count != 2 || !eval_scalar(op[0], rank, c, &a, depth + 1) ||
          !eval_scalar(op[1], rank, c, &b, depth + 1))
        return false;
      switch (inst->opcode) {
        case HL_OP_ADD: *out = a + b; return true;
        case HL_OP_SUBTRACT: *out = a - b; return true;
        case HL_OP_MULTIPLY: *out = a * b; return true;
        case HL_OP_AND: *out = a & b; return true;
        case HL_OP_OR: *out = a | b; return true;
        case HL_OP_XOR: *out = a ^ b; return true;
        default: break;
      }
      // Unsigned comparisons would need the unsigned view; values here
      // (ids, small constants) are non-negative, so signed order agrees.
      switch (inst->attrs.comparison_direction) {
        case HL_CMP_EQ: *out = a == b; return true;
        case HL_CMP_NE: *out = a != b; return true;
        case HL_CMP_LT: *out = a < b; return true;
        case HL_CMP_LE: *out = a <= b; return true;
        case HL_CMP_GT: *out = a > b; return true;
        case HL_CMP_GE: *out = a >= b; return true;
        default: return false;
      }
    case HL_OP_SELECT:
      if (inst->operand_count != 3 || !eval_scalar(op[0], rank, c, &a, depth + 1)) return false;
      return eval_scalar(op[a ? 1 : 2], rank, c, out, depth + 1);
    default:
      return false;
  }
}

//===----------------------------------------------------------------------===//
// Sequences
//===----------------------------------------------------------------------===//

static void sequence_deinit(sequence_t *s) {
  for (int i = 0; i < s->count; i++) hl_free(s->steps[i].group);
  hl_free(s->steps);
  hl_free(s->tallies);
  memset(s, 0, sizeof(*s));
}

static const char kPairsKey[] = "_xla_send_recv_source_target_pairs";

// Loops counted with more trips are not counted; counts past kMaxCount
// (nested loops) make the rank's channels unknown.
enum { kMaxTrips = 1 << 20 };
static const int64_t kMaxCount = (int64_t)1 << 40;

static bool is_channel_op(const hl_instruction_t *inst) {
  return (inst->opcode == HL_OP_SEND || inst->opcode == HL_OP_RECV) &&
         !inst->attrs.is_host_transfer;
}

// True when some send / recv of the module (not a host transfer) uses
// inst's channel in the other direction.
static bool channel_has_opposite(const hl_module_t *m, const hl_instruction_t *inst) {
  hl_opcode_t want = inst->opcode == HL_OP_SEND ? HL_OP_RECV : HL_OP_SEND;
  for (int k = 0; k < m->computation_count; k++) {
    const hl_computation_t *comp = m->computations[k];
    for (int i = 0; i < comp->instruction_count; i++) {
      const hl_instruction_t *o = comp->instructions[i];
      if (o->opcode == want && !o->attrs.is_host_transfer &&
          o->attrs.channel_id == inst->attrs.channel_id)
        return true;
    }
  }
  return false;
}

// One more message of `inst` (a send / recv) between this rank and `peer`.
static void tally_add(sequence_t *out, const hl_instruction_t *inst, int peer, bool send) {
  int k = 0;
  while (k < out->tally_count &&
         !(out->tallies[k].channel_id == inst->attrs.channel_id && out->tallies[k].peer == peer &&
           out->tallies[k].send == send))
    k++;
  if (k == out->tally_count) {
    if (out->tally_count == out->tally_cap) {
      int cap = out->tally_cap ? 2 * out->tally_cap : 8;
      tally_t *grown = hl_realloc(out->tallies, (size_t)cap * sizeof(tally_t));
      if (!grown) {
        out->channels_unknown = true;
        return;
      }
      out->tallies = grown;
      out->tally_cap = cap;
    }
    out->tallies[k] = (tally_t){.channel_id = inst->attrs.channel_id, .peer = peer,
                                .send = send, .first = inst};
    out->tally_count++;
  }
  out->tallies[k].count++;
}

// Counts a send / recv of `rank` towards its peer from the pairs (read as
// partition ids within the replica, or replica ids on a one-partition grid,
// as channels/channel_pairing.h reads them). Without pairs the channel
// setup pairs the channel's one sending process with its one receiving
// process. A one-process job is both: its own peer, counted so. In an SPMD
// job of more processes every process holds this instruction, so the
// channel has that many senders (or receivers), which the setup refuses at
// start-up on every rank before any instruction runs ("channel 4 has 2
// senders"): no rank can block on it, nothing to count, and the rank's
// other channels are still judged.
static void count_channel_op(checker_t *c, const hl_instruction_t *inst, int rank,
                             sequence_t *out) {
  if (!out->orphan && !channel_has_opposite(c->module, inst)) out->orphan = inst;
  bool send = inst->opcode == HL_OP_SEND;
  const char *text = hl_instruction_frontend_attribute(inst, kPairsKey);
  if (!text) {
    if (c->R * c->P == 1) tally_add(out, inst, rank, send);
    return;
  }
  hl_source_target_t *pairs = NULL;
  int n = 0;
  hl_status_t st = hl_channel_parse_pairs(text, &pairs, &n);
  if (st) {
    hl_status_free(st);
    out->channels_unknown = true;  // a parse error is the channel setup's to report
    return;
  }
  int64_t me = c->P > 1 ? rank % c->P : rank / c->P;
  int64_t base = c->P > 1 ? (rank / c->P) * c->P : 0, stride = c->P > 1 ? 1 : c->P;
  for (int i = 0; i < n && !out->channels_unknown; i++) {
    int64_t from = send ? pairs[i].source : pairs[i].target;
    int64_t to = send ? pairs[i].target : pairs[i].source;
    int64_t limit = c->P > 1 ? c->P : c->R;
    if (from != me || to < 0 || to >= limit) continue;
    tally_add(out, inst, (int)(base + to * stride), send);
  }
  hl_free(pairs);
}

// Adds `from`'s channel counts, `times` over, to `to` (a loop's body or
// condition, run that often).
static void add_tallies(sequence_t *to, const sequence_t *from, int64_t times) {
  // An open-ended walk stopped early: the sends after that point are missing.
  if (from->channels_unknown || from->open_ended) to->channels_unknown = true;
  if (times > 0 && from->orphan && !to->orphan) to->orphan = from->orphan;
  for (int j = 0; j < from->tally_count && !to->channels_unknown; j++) {
    const tally_t *t = &from->tallies[j];
    if (t->count * times == 0) continue;  // a loop that never runs sends nothing
    int k = 0;
    while (k < to->tally_count &&
           !(to->tallies[k].channel_id == t->channel_id && to->tallies[k].peer == t->peer &&
             to->tallies[k].send == t->send))
      k++;
    if (k == to->tally_count) {
      if (to->tally_count == to->tally_cap) {
        int cap = to->tally_cap ? 2 * to->tally_cap : 8;
        tally_t *grown = hl_realloc(to->tallies, (size_t)cap * sizeof(tally_t));
        if (!grown) {
          to->channels_unknown = true;
          return;
        }
        to->tallies = grown;
        to->tally_cap = cap;
      }
      to->tallies[k] = *t;
      to->tallies[k].count = 0;
      to->tally_count++;
    }
    to->tallies[k].count += t->count * times;
    if (to->tallies[k].count > kMaxCount) to->channels_unknown = true;
  }
}

static bool has_channel_op(const hl_computation_t *comp, int depth) {
  if (!comp || depth > 32) return false;
  for (int i = 0; i < comp->instruction_count; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    if (is_channel_op(inst)) return true;
    for (int k = 0; k < inst->called_count; k++)
      if (has_channel_op(inst->called_computations[k], depth + 1)) return true;
  }
  return false;
}

static bool push(sequence_t *s, step_t step) {
  if (s->count == s->cap) {
    int cap = s->cap ? 2 * s->cap : 16;
    step_t *grown = hl_realloc(s->steps, (size_t)cap * sizeof(step_t));
    if (!grown) return false;
    s->steps = grown;
    s->cap = cap;
  }
  s->steps[s->count++] = step;
  return true;
}

static int compare_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

// The ranks that must issue `inst` together with `rank` (sorted). For a
// permute: every rank of its mode takes part (the executor runs it on all).
static hl_status_t group_of(checker_t *c, const hl_instruction_t *inst, int rank, int **out,
                            int *out_size) {
  *out = NULL;
  *out_size = 0;
  hl_process_groups_t g;
  HL_RETURN_IF_ERROR(hl_process_groups_resolve(inst, c->R, c->P, &g));
  int n = 0;
  int *members = hl_calloc((size_t)(c->R * c->P), sizeof(int));
  if (!members) {
    hl_process_groups_deinit(&g);
    return HL_OOM();
  }
  if (g.is_permute || inst->opcode == HL_OP_COLLECTIVE_BROADCAST) {
    // Every process executes it; pairs / group members only decide data.
    for (int64_t r = 0; r < c->R * c->P; r++) members[n++] = (int)r;
  } else {
    int k = hl_process_groups_find(&g, rank, NULL);
    for (int i = k >= 0 ? g.offsets[k] : 0; k >= 0 && i < g.offsets[k + 1]; i++)
      members[n++] = g.ranks[i];
  }
  hl_process_groups_deinit(&g);
  qsort(members, (size_t)n, sizeof(int), compare_ints);
  *out = members;
  *out_size = n;
  return NULL;
}

// Collectives pair up at run time by kind, shape and group, not by name.
static bool steps_match(const step_t *a, const step_t *b) {
  if (a->inst->opcode != b->inst->opcode || !hl_shape_equal(&a->inst->shape, &b->inst->shape))
    return false;
  return a->group_size == b->group_size &&
         memcmp(a->group, b->group, sizeof(int) * (size_t)a->group_size) == 0;
}

static bool same_steps(const sequence_t *a, const sequence_t *b) {
  if (a->count != b->count || a->open_ended != b->open_ended) return false;
  for (int i = 0; i < a->count; i++)
    if (!steps_match(&a->steps[i], &b->steps[i])) return false;
  return true;
}

static void append_sequence(sequence_t *to, sequence_t *from) {
  for (int i = 0; i < from->count; i++) {
    if (!push(to, from->steps[i])) hl_free(from->steps[i].group);
    from->steps[i].group = NULL;
  }
  to->open_ended = from->open_ended;
  from->count = 0;
}

static bool has_collective(const hl_computation_t *comp, int depth);

// The loop certainly runs its body once: the condition is compare(gte(p, k),
// constant N) with LT / LE / NE / GT / GE and the init's element k a
// constant that passes it. Otherwise, its collectives cannot be counted.
static bool first_trip_certain(const hl_instruction_t *w, int rank, const checker_t *c) {
  const hl_computation_t *cond = hl_instruction_while_condition(w);
  if (!cond || !cond->root || cond->root->opcode != HL_OP_COMPARE || w->operand_count != 1)
    return false;
  const hl_instruction_t *cmp = cond->root, *init = w->operands[0];
  const hl_instruction_t *lhs = cmp->operands[0];
  int64_t bound = 0, start = 0;
  if (lhs->opcode != HL_OP_GET_TUPLE_ELEMENT || lhs->operands[0]->opcode != HL_OP_PARAMETER ||
      !eval_scalar(cmp->operands[1], rank, c, &bound, 0) || init->opcode != HL_OP_TUPLE)
    return false;
  int64_t k = lhs->attrs.tuple_index;
  if (k < 0 || k >= init->operand_count || !eval_scalar(init->operands[k], rank, c, &start, 0))
    return false;
  switch (cmp->attrs.comparison_direction) {
    case HL_CMP_LT: return start < bound;
    case HL_CMP_LE: return start <= bound;
    case HL_CMP_GT: return start > bound;
    case HL_CMP_GE: return start >= bound;
    case HL_CMP_NE: return start != bound;
    default: return false;
  }
}

// The bound a loop condition compares its counter with: an expression of
// constants and ids, or an element of the loop state that the body passes
// through unchanged (JAX's fori_loop carries its upper bound so), whose
// init is such an expression.
static bool loop_bound(const hl_instruction_t *b, const hl_instruction_t *init,
                       const hl_computation_t *body, int rank, const checker_t *c,
                       int64_t *out) {
  if (eval_scalar(b, rank, c, out, 0)) return true;
  if (b->opcode != HL_OP_GET_TUPLE_ELEMENT || b->operands[0]->opcode != HL_OP_PARAMETER)
    return false;
  int64_t j = b->attrs.tuple_index;
  if (j < 0 || j >= init->operand_count || j >= body->root->operand_count) return false;
  const hl_instruction_t *next = body->root->operands[j];
  if (next->opcode != HL_OP_GET_TUPLE_ELEMENT || next->attrs.tuple_index != j ||
      next->operands[0]->opcode != HL_OP_PARAMETER || next->operands[0]->parent != body)
    return false;
  return eval_scalar(init->operands[j], rank, c, out, 0);
}

// The body of `w` runs a statically known number of times: the condition is
// compare(get-tuple-element(param, k), N) (N: a constant or an expression of
// replica-id / partition-id and constants, or a loop-invariant element of
// the state initialised so: loop_bound), the init's element k is such an
// expression too, and the body's ROOT is a tuple whose element k is that
// same element plus or minus such a constant step. The trips are then
// counted by running the counter (at most kMaxTrips; 32- or 64-bit integers).
static bool static_trip_count(const hl_instruction_t *w, int rank, const checker_t *c,
                              int64_t *out_trips) {
  const hl_computation_t *cond = hl_instruction_while_condition(w);
  const hl_computation_t *body = hl_instruction_while_body(w);
  if (!cond || !body || !cond->root || cond->root->opcode != HL_OP_COMPARE ||
      !body->root || body->root->opcode != HL_OP_TUPLE || w->operand_count != 1)
    return false;
  const hl_instruction_t *cmp = cond->root, *init = w->operands[0];
  const hl_instruction_t *lhs = cmp->operands[0];
  int64_t bound = 0, start = 0, step = 0;
  if (lhs->opcode != HL_OP_GET_TUPLE_ELEMENT || lhs->operands[0]->opcode != HL_OP_PARAMETER ||
      init->opcode != HL_OP_TUPLE || !loop_bound(cmp->operands[1], init, body, rank, c, &bound))
    return false;
  int64_t k = lhs->attrs.tuple_index;
  hl_dtype_t dt = lhs->shape.dtype;
  if (hl_dtype_is_float(dt) || hl_dtype_is_complex(dt) || dt == HL_PRED ||
      hl_dtype_size(dt) < 4 || k < 0 || k >= init->operand_count ||
      k >= body->root->operand_count || !eval_scalar(init->operands[k], rank, c, &start, 0))
    return false;
  // The update: add(gte(p, k), step), add(step, gte(p, k)) or subtract(gte(p, k), step).
  const hl_instruction_t *upd = body->root->operands[k];
  if ((upd->opcode != HL_OP_ADD && upd->opcode != HL_OP_SUBTRACT) || upd->operand_count != 2)
    return false;
  int counter_side = -1;
  for (int side = 0; side < 2; side++) {
    const hl_instruction_t *g = upd->operands[side];
    if (g->opcode == HL_OP_GET_TUPLE_ELEMENT && g->attrs.tuple_index == k &&
        g->operands[0]->opcode == HL_OP_PARAMETER && g->operands[0]->parent == body)
      counter_side = side;
  }
  if (counter_side < 0 || (upd->opcode == HL_OP_SUBTRACT && counter_side != 0) ||
      !eval_scalar(upd->operands[1 - counter_side], rank, c, &step, 0))
    return false;
  if (upd->opcode == HL_OP_SUBTRACT) step = -step;
  bool is_unsigned = hl_dtype_is_unsigned_int(dt);
  int64_t lo = is_unsigned ? 0 : hl_dtype_size(dt) == 4 ? INT32_MIN : INT64_MIN / 2;
  int64_t hi = hl_dtype_size(dt) == 4 ? (is_unsigned ? UINT32_MAX : INT32_MAX) : INT64_MAX / 2;
  int64_t i = start, trips = 0;
  for (;;) {
    if (i < lo || i > hi) return false;  // would wrap: not counted here
    bool go;
    switch (cmp->attrs.comparison_direction) {
      case HL_CMP_LT: go = i < bound; break;
      case HL_CMP_LE: go = i <= bound; break;
      case HL_CMP_GT: go = i > bound; break;
      case HL_CMP_GE: go = i >= bound; break;
      case HL_CMP_NE: go = i != bound; break;
      default: return false;
    }
    if (!go) break;
    if (++trips > kMaxTrips) return false;
    i += step;
  }
  *out_trips = trips;
  return true;
}

// Appends rank's collectives of `comp` (in instruction order: every rank
// runs the same plan, so any fixed order compares them alike).
static void collect(checker_t *c, const hl_computation_t *comp, int rank, sequence_t *out,
                    int depth) {
  if (!comp || depth > 32 || out->open_ended || c->error) return;
  for (int i = 0; i < comp->instruction_count && !out->open_ended && !c->error; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    if (is_channel_op(inst)) {
      count_channel_op(c, inst, rank, out);
      continue;
    }
    if (hl_opcode_is_collective(inst->opcode)) {
      step_t s = {.inst = inst};
      c->error = group_of(c, inst, rank, &s.group, &s.group_size);
      if (c->error || !push(out, s)) {
        hl_free(s.group);
        return;
      }
      continue;
    }
    if (inst->opcode == HL_OP_CONDITIONAL) {
      int64_t sel = 0;
      int branches = inst->called_count;
      if (branches > 0 && eval_scalar(inst->operands[0], rank, c, &sel, 0)) {
        int pick = inst->operands[0]->shape.dtype == HL_PRED ? (sel ? 0 : 1)
                   : (sel < 0 || sel >= branches) ? branches - 1 : (int)sel;
        if (pick < branches) collect(c, inst->called_computations[pick], rank, out, depth + 1);
        continue;
      }
      // Data-dependent: fine when every branch issues the same collectives.
      // Channel counts are not compared across branches.
      for (int b = 0; b < branches; b++)
        if (has_channel_op(inst->called_computations[b], 0)) out->channels_unknown = true;
      sequence_t first = {0};
      bool same = true;
      collect(c, branches ? inst->called_computations[0] : NULL, rank, &first, depth + 1);
      for (int b = 1; b < branches && same; b++) {
        sequence_t other = {0};
        collect(c, inst->called_computations[b], rank, &other, depth + 1);
        same = same_steps(&first, &other);
        sequence_deinit(&other);
      }
      if (same) append_sequence(out, &first);
      else out->open_ended = true;
      sequence_deinit(&first);
      continue;
    }
    if (inst->opcode == HL_OP_WHILE) {
      const hl_computation_t *body = hl_instruction_while_body(inst);
      const hl_computation_t *cond = hl_instruction_while_condition(inst);
      if (has_channel_op(body, 0) || has_channel_op(cond, 0)) {
        // Sends / recvs count once per trip (the condition once more): only
        // when the trip count is known here; else this rank's channels are
        // not judged.
        int64_t trips = 0;
        if (!static_trip_count(inst, rank, c, &trips)) {
          out->channels_unknown = true;
        } else {
          sequence_t in_cond = {0}, in_body = {0};
          collect(c, cond, rank, &in_cond, depth + 1);
          collect(c, body, rank, &in_body, depth + 1);
          add_tallies(out, &in_cond, trips + 1);
          add_tallies(out, &in_body, trips);
          sequence_deinit(&in_cond);
          sequence_deinit(&in_body);
        }
      }
      if (!has_collective(body, 0) && !has_collective(cond, 0)) continue;
      if (!first_trip_certain(inst, rank, c)) {
        out->open_ended = true;
        continue;
      }
      // One trip stands for all: every rank runs the same trip count when
      // the body's collectives do not depend on the rank (checked here).
      // Its channels were counted above.
      sequence_t trip = {0};
      collect(c, cond, rank, &trip, depth + 1);
      collect(c, body, rank, &trip, depth + 1);
      append_sequence(out, &trip);
      sequence_deinit(&trip);
      continue;
    }
    // call, fusion, async wrappers, map / reduce bodies: their collectives
    // (if any) run in place.
    for (int k = 0; k < inst->called_count; k++)
      if (has_collective(inst->called_computations[k], 0) ||
          has_channel_op(inst->called_computations[k], 0))
        collect(c, inst->called_computations[k], rank, out, depth + 1);
  }
}

static bool has_collective(const hl_computation_t *comp, int depth) {
  if (!comp || depth > 32) return false;
  for (int i = 0; i < comp->instruction_count; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    if (hl_opcode_is_collective(inst->opcode)) return true;
    for (int k = 0; k < inst->called_count; k++)
      if (has_collective(inst->called_computations[k], depth + 1)) return true;
  }
  return false;
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

static void append_group(hl_strbuf_t *sb, const step_t *s) {
  hl_strbuf_append(sb, "{");
  for (int i = 0; i < s->group_size; i++) hl_strbuf_appendf(sb, i ? ",%d" : "%d", s->group[i]);
  hl_strbuf_append(sb, "}");
}

static hl_status_t mismatch(const checker_t *c, int r, const step_t *a, int q, const step_t *b,
                            int index_r, int index_q) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb, "collective check: the ranks would deadlock: rank %d's collective #%d "
                    "is %s, shape %s, group ", r, index_r + 1, hl_instruction_location(a->inst),
                    hl_shape_debug_string(&a->inst->shape));
  append_group(&sb, a);
  if (b) {
    hl_strbuf_appendf(&sb, ", but rank %d's collective #%d is %s, shape %s, group ", q,
                      index_q + 1, hl_instruction_location(b->inst),
                      hl_shape_debug_string(&b->inst->shape));
    append_group(&sb, b);
  } else {
    hl_strbuf_appendf(&sb, ", but rank %d ends the program after %d collective%s", q, index_q,
                      index_q == 1 ? "" : "s");
  }
  hl_strbuf_appendf(&sb, " (grid %lld x %lld; --no-collective-check runs it anyway)",
                    (long long)c->R, (long long)c->P);
  hl_status_t st = sb.failed ? HL_OOM() : HL_INVALID("%s", hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return st;
}

static int64_t tally_of(const sequence_t *s, int64_t channel_id, int peer, bool send) {
  for (int k = 0; k < s->tally_count; k++)
    if (s->tallies[k].channel_id == channel_id && s->tallies[k].peer == peer &&
        s->tallies[k].send == send)
      return s->tallies[k].count;
  return 0;
}

// Every send to a peer on a channel needs one recv there, and the other way
// round, when both ranks' counts are certain (the whole program decided).
static hl_status_t check_channels(const checker_t *c, const sequence_t *seq, int n) {
  // A channel used in one direction only: whoever reaches it waits forever
  // (the channel setup would refuse it too, once the job started).
  for (int r = 0; r < n; r++) {
    const hl_instruction_t *o = seq[r].orphan;
    if (!o) continue;
    bool send = o->opcode == HL_OP_SEND;
    return HL_INVALID("channel check: channel %lld has a %s (process %d) but no %s: %s %s on "
                      "channel %lld, and no %s of the program %s on it (grid %lld x %lld; "
                      "--no-collective-check runs it anyway)",
                      (long long)o->attrs.channel_id, send ? "sender" : "receiver", r,
                      send ? "receiver" : "sender", hl_instruction_location(o),
                      send ? "sends" : "receives", (long long)o->attrs.channel_id,
                      send ? "recv" : "send", send ? "receives" : "sends", (long long)c->R,
                      (long long)c->P);
  }
  for (int r = 0; r < n; r++) {
    const sequence_t *a = &seq[r];
    if (a->open_ended || a->channels_unknown) continue;
    for (int k = 0; k < a->tally_count; k++) {
      const tally_t *t = &a->tallies[k];
      const sequence_t *b = &seq[t->peer];
      if (b->open_ended || b->channels_unknown) continue;
      int64_t other = tally_of(b, t->channel_id, r, !t->send);
      if (other == t->count) continue;
      return HL_INVALID("channel check: the ranks would deadlock: rank %d %s %lld message%s on "
                        "channel %lld %s rank %d (%s), but rank %d %s %lld (grid %lld x %lld; "
                        "--no-collective-check runs it anyway)",
                        r, t->send ? "sends" : "receives", (long long)t->count,
                        t->count == 1 ? "" : "s",
                        (long long)t->channel_id, t->send ? "to" : "from", t->peer,
                        hl_instruction_location(t->first), t->peer,
                        t->send ? "receives from it" : "sends it", (long long)other,
                        (long long)c->R,
                        (long long)c->P);
    }
  }
  return NULL;
}

hl_status_t hl_collective_check(const hl_module_t *module, int64_t R, int64_t P) {
  if (!module || !module->entry || R < 1 || P < 1 || R * P > 4096) return NULL;
  if (!has_collective(module->entry, 0) && !has_channel_op(module->entry, 0)) return NULL;
  checker_t c = {.module = module, .R = R, .P = P};
  int n = (int)(R * P);
  sequence_t *seq = hl_calloc((size_t)n, sizeof(sequence_t));
  int *pos = hl_calloc((size_t)n, sizeof(int));
  hl_status_t st = NULL;
  if (!seq || !pos) {
    st = HL_OOM();
    goto out;
  }
  for (int r = 0; r < n && !c.error; r++) collect(&c, module->entry, r, &seq[r], 0);
  if (c.error) {
    st = c.error;
    goto out;
  }
  // Advance every group whose members all stand at the same collective.
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; r++) {
      if (pos[r] >= seq[r].count) continue;
      const step_t *s = &seq[r].steps[pos[r]];
      bool all = true;
      for (int i = 0; i < s->group_size && all; i++) {
        int q = s->group[i];
        all = pos[q] < seq[q].count && steps_match(s, &seq[q].steps[pos[q]]);
      }
      if (!all) continue;
      for (int i = 0; i < s->group_size; i++) pos[s->group[i]]++;
      progress = true;
    }
  }
  // Stalled. Undecidable ranks may unblock the others: then say nothing.
  bool undecided = false;
  for (int r = 0; r < n; r++)
    if (pos[r] >= seq[r].count && seq[r].open_ended) undecided = true;
  for (int r = 0; r < n && !st && !undecided; r++) {
    if (pos[r] >= seq[r].count) continue;
    const step_t *s = &seq[r].steps[pos[r]];
    for (int i = 0; i < s->group_size && !st; i++) {
      int q = s->group[i];
      if (q == r) continue;
      if (pos[q] >= seq[q].count) st = mismatch(&c, r, s, q, NULL, pos[r], pos[q]);
      else if (!steps_match(s, &seq[q].steps[pos[q]]))
        st = mismatch(&c, r, s, q, &seq[q].steps[pos[q]], pos[r], pos[q]);
    }
  }
  if (!st) st = check_channels(&c, seq, n);
out:
  if (seq)
    for (int r = 0; r < n; r++) sequence_deinit(&seq[r]);
  hl_free(seq);
  hl_free(pos);
  return st;
}
