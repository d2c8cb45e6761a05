// Lowering: every entry instruction becomes its per-partition form by its
// rule, then its result moves to the sharding propagation chose for it.
// Rules: parameters arrive as shards; element-wise, broadcast, transpose and
// reshape (dimensions that keep their size) run on matching local blocks;
// reduce runs locally and an all-reduce sums over split reduced dimensions;
// dot follows its plan (dot_plan.c). Anything else is the fallback: its
// operands are all-gathered to the full value, it runs unchanged, and its
// result is replicated (noted in the explanation).
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/dtype.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_printer.h"

static bool is_target(const hl_instruction_t *inst, const char *target) {
  return inst->opcode == HL_OP_CUSTOM_CALL && inst->attrs.custom_call_target &&
         strcmp(inst->attrs.custom_call_target, target) == 0;
}

// Lowered instructions keep shardings only where no value moves: maximal
// targets become replicated (every device then holds the value).
static void as_target(const hl_spmd_sharding_t *s, int rank, int n, hl_spmd_sharding_t *out) {
  if (s->kind == HL_SPMD_MAXIMAL) hl_spmd_replicated(rank, n, out);
  else *out = *s;
}

// Prints `inst` under a new name with the given operand names and, when
// dims is not NULL, local result dimensions.
static hl_status_t emit_like(spmd_ctx_t *c, const hl_instruction_t *inst, const char *name,
                             const int64_t *dims, const char *const *ops) {
  hl_instruction_t copy = *inst;
  int n = inst->operand_count;
  hl_instruction_t *fake = n ? hl_calloc((size_t)n, sizeof(*fake)) : NULL;
  hl_instruction_t **ptrs = n ? hl_calloc((size_t)n, sizeof(*ptrs)) : NULL;
  if (n && (!fake || !ptrs)) {
    hl_free(fake);
    hl_free(ptrs);
    return HL_OOM();
  }
  for (int k = 0; k < n; k++) {
    fake[k] = *inst->operands[k];
    fake[k].name = (char *)ops[k];
    ptrs[k] = &fake[k];
  }
  copy.name = (char *)name;
  copy.parent = NULL;
  copy.operands = ptrs;
  copy.control_predecessor_count = 0;
  copy.attrs.sharding = NULL;
  if (dims)
    for (int d = 0; d < copy.shape.rank; d++) copy.shape.dims[d] = dims[d];
  hl_strbuf_append(&c->body, "  ");
  hl_print_instruction(&copy, &c->body);
  hl_strbuf_append(&c->body, "\n");
  hl_free(fake);
  hl_free(ptrs);
  return NULL;
}

// An operand moved to `want`, once per (operand, sharding): a value two
// users need in the same sharding is gathered once.
static hl_status_t operand_to(spmd_ctx_t *c, const hl_instruction_t *inst, int k,
                              const hl_spmd_sharding_t *want, const char **out) {
  const hl_instruction_t *op = inst->operands[k];
  for (int m = 0; m < c->moved_count; m++)
    if (c->moved[m].inst == op->index && hl_spmd_equal(&c->moved[m].sh, want)) {
      *out = c->moved[m].name;
      return NULL;
    }
  HL_RETURN_IF_ERROR(spmd_reshard(c, c->local[op->index], &op->shape, &c->val[op->index].sh, want, out));
  if (*out == c->local[op->index]) return NULL;
  if (c->moved_count == c->moved_cap) {
    int cap = c->moved_cap ? 2 * c->moved_cap : 16;
    spmd_moved_t *v = hl_realloc(c->moved, (size_t)cap * sizeof(*v));
    if (!v) return HL_OOM();
    c->moved = v;
    c->moved_cap = cap;
  }
  c->moved[c->moved_count++] = (spmd_moved_t){op->index, *want, *out};
  return NULL;
}

hl_status_t spmd_operand_to(spmd_ctx_t *c, const hl_instruction_t *inst, int k, const hl_spmd_sharding_t *want,
                            const char **out) {
  return operand_to(c, inst, k, want, out);
}

hl_status_t spmd_emit_like(spmd_ctx_t *c, const hl_instruction_t *inst, const char *name, const int64_t *dims,
                           const char *const *ops) {
  return emit_like(c, inst, name, dims, ops);
}

static hl_status_t set_local(spmd_ctx_t *c, int i, const char *name) {
  c->local[i] = hl_malloc(strlen(name) + 1);
  if (!c->local[i]) return HL_OOM();
  strcpy(c->local[i], name);
  return NULL;
}

// The all-reduce that finishes a local reduce, when the reducer is one
// binary op of its two parameters and the init value cannot be counted
// twice (max/min/and/or are idempotent; add and multiply need their
// identity as the init). NULL when the rule does not apply.
static const char *combiner_for_reduce(const hl_instruction_t *r) {
  const hl_computation_t *f = hl_instruction_to_apply(r);
  if (!f || r->operand_count != 2 || !f->root || f->root->operand_count != 2) return NULL;
  const hl_instruction_t *a = f->root->operands[0], *b = f->root->operands[1];
  if (a->opcode != HL_OP_PARAMETER || b->opcode != HL_OP_PARAMETER || a == b) return NULL;
  const hl_instruction_t *init = r->operands[1];
  switch (f->root->opcode) {
    case HL_OP_MAXIMUM: case HL_OP_MINIMUM: case HL_OP_AND: case HL_OP_OR:
      return f->name;
    case HL_OP_ADD: case HL_OP_MULTIPLY: {
      if (init->opcode != HL_OP_CONSTANT || !init->attrs.literal || hl_dtype_is_complex(init->shape.dtype) ||
          init->shape.dtype == HL_PRED)
        return NULL;
      double v = hl_literal_get_f64(init->attrs.literal, 0);
      return v == (f->root->opcode == HL_OP_ADD ? 0.0 : 1.0) ? f->name : NULL;
    }
    default:
      return NULL;
  }
}

static hl_status_t lower_fallback(spmd_ctx_t *c, int i, hl_spmd_sharding_t *res, const char **out,
                                  const char *why) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  switch (inst->opcode) {
    case HL_OP_ALL_GATHER: case HL_OP_ALL_REDUCE: case HL_OP_ALL_TO_ALL: case HL_OP_REDUCE_SCATTER:
    case HL_OP_COLLECTIVE_PERMUTE: case HL_OP_COLLECTIVE_BROADCAST: case HL_OP_PARTITION_ID:
    case HL_OP_REPLICA_ID: case HL_OP_SEND: case HL_OP_RECV: case HL_OP_ALL_GATHER_START:
    case HL_OP_ALL_REDUCE_START: case HL_OP_COLLECTIVE_PERMUTE_START: case HL_OP_RAGGED_ALL_TO_ALL:
    case HL_OP_COLLECTIVE_REDUCE: case HL_OP_ASYNC_START: case HL_OP_INFEED: case HL_OP_OUTFEED:
      return HL_UNIMPL("%s: %s in a global program is not partitioned", hl_instruction_location(inst),
                       hl_opcode_name(inst->opcode));
    default: break;
  }
  if (is_target(inst, "SPMDFullToShardShape") || is_target(inst, "SPMDShardToFullShape"))
    return HL_UNIMPL("%s: manual regions (%s) are not partitioned yet", hl_instruction_location(inst),
                     inst->attrs.custom_call_target);
  const char **ops = inst->operand_count ? hl_calloc((size_t)inst->operand_count, sizeof(*ops)) : NULL;
  if (inst->operand_count && !ops) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; k < inst->operand_count && !st; k++) {
    const hl_instruction_t *op = inst->operands[k];
    const spmd_value_t *ov = &c->val[op->index];
    if (hl_shape_is_tuple(&op->shape)) {
      if (op->opcode != HL_OP_TUPLE) {  // a fallback's tuple: already replicated
        ops[k] = c->local[op->index];
        continue;
      }
      // Rebuild the tuple from replicated elements.
      hl_strbuf_t elems;
      hl_strbuf_init(&elems);
      for (int e = 0; e < op->operand_count && !st; e++) {
        const hl_instruction_t *eo = op->operands[e];
        hl_spmd_sharding_t repl;
        hl_spmd_replicated(eo->shape.rank, c->n, &repl);
        const char *v;
        st = spmd_reshard(c, c->local[eo->index], &eo->shape, &c->val[eo->index].sh, &repl, &v);
        if (!st) hl_strbuf_appendf(&elems, "%s%s", e ? ", " : "", v);
      }
      const char *t = spmd_name(c, "tuple");
      if (!st && !t) st = HL_OOM();
      if (!st) {
        hl_strbuf_appendf(&c->body, "  %s = ", t);
        hl_shape_print(&op->shape, false, &c->body);
        hl_strbuf_appendf(&c->body, " tuple(%s)\n", hl_strbuf_cstr(&elems));
        ops[k] = t;
      }
      hl_strbuf_deinit(&elems);
      continue;
    }
    hl_spmd_sharding_t repl;
    hl_spmd_replicated(op->shape.rank, c->n, &repl);
    st = spmd_reshard(c, c->local[op->index], &op->shape, &ov->sh, &repl, &ops[k]);
  }
  const char *name = st ? NULL : spmd_name(c, inst->name);
  if (!st && !name) st = HL_OOM();
  if (!st) st = emit_like(c, inst, name, NULL, ops);
  hl_free(ops);
  if (st) return st;
  hl_spmd_replicated(hl_shape_is_tuple(&inst->shape) ? 0 : inst->shape.rank, c->n, res);
  hl_strbuf_appendf(&c->explain, "      fallback: %s runs on the replicated value (%s)\n",
                    hl_opcode_name(inst->opcode), why);
  *out = name;
  return NULL;
}

// Runs `inst` on its operands moved to `want[k]` with local result dims of `res`.
static hl_status_t lower_local_as(spmd_ctx_t *c, const hl_instruction_t *inst, const hl_spmd_sharding_t *want,
                                  const hl_spmd_sharding_t *res, const char **out) {
  const char *ops[8];
  if (inst->operand_count > 8) return HL_INTERNAL_ERROR("too many operands for a local rule");
  for (int k = 0; k < inst->operand_count; k++) HL_RETURN_IF_ERROR(operand_to(c, inst, k, &want[k], &ops[k]));
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(&inst->shape, res, dims);
  const char *name = spmd_name(c, inst->name);
  if (!name) return HL_OOM();
  HL_RETURN_IF_ERROR(emit_like(c, inst, name, dims, ops));
  *out = name;
  return NULL;
}

static hl_status_t lower_local(spmd_ctx_t *c, int i, const hl_spmd_sharding_t *want,
                               const hl_spmd_sharding_t *res, const char **out) {
  return lower_local_as(c, c->entry->instructions[i], want, res, out);
}

// slice / pad / concatenate / reverse on the target's tiling with the
// dimensions they move data along unsplit: the other dimensions' shards
// stay where they are (a slice keeps them whole: limit = the local size).
static hl_status_t lower_data_movement(spmd_ctx_t *c, int i, const hl_spmd_sharding_t *target,
                                       hl_spmd_sharding_t *want, hl_spmd_sharding_t *res, const char **out) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  uint32_t touched = spmd_touched_dims(inst);
  *res = *target;
  for (int d = 0; d < inst->shape.rank; d++)
    if (touched >> d & 1) hl_spmd_unsplit(res, d);
  for (int k = 0; k < inst->operand_count; k++) {
    if (inst->operands[k]->shape.rank == inst->shape.rank) want[k] = *res;
    else hl_spmd_replicated(inst->operands[k]->shape.rank, c->n, &want[k]);
  }
  hl_instruction_t local = *inst;
  hl_slice_dim_t dims[HL_MAX_RANK];
  if (inst->opcode == HL_OP_SLICE) {
    int64_t shard[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, res, shard);
    for (int d = 0; d < inst->attrs.slice_count && d < HL_MAX_RANK; d++) {
      dims[d] = inst->attrs.slice_dimensions[d];
      if (!(touched >> d & 1)) dims[d].limit = shard[d];  // untouched: the whole local shard
    }
    local.attrs.slice_dimensions = dims;
  }
  int64_t sizes[HL_MAX_RANK];
  if (inst->opcode == HL_OP_DYNAMIC_SLICE) {  // a whole dimension stays whole: its local size
    int64_t shard[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, res, shard);
    for (int d = 0; d < inst->attrs.dynamic_slice_sizes.n && d < HL_MAX_RANK; d++)
      sizes[d] = touched >> d & 1 ? inst->attrs.dynamic_slice_sizes.v[d] : shard[d];
    local.attrs.dynamic_slice_sizes.v = sizes;
  }
  hl_strbuf_appendf(&c->explain, "      rule: %s on the split dimensions it leaves untouched, locally\n",
                    hl_opcode_name(inst->opcode));
  return lower_local_as(c, &local, want, res, out);
}

static bool same_dims(const hl_shape_t *s, const int64_t *dims) {
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] != dims[d]) return false;
  return true;
}

// Manual regions run per partition unchanged: SPMDFullToShardShape hands on
// its operand's shard (its operand is moved to the custom-call's operand
// sharding, normally a Sharding custom-call right before it); every other
// instruction computed from it is emitted as written, with operands from
// outside the region replicated.
static hl_status_t lower_manual(spmd_ctx_t *c, int i) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  hl_strbuf_append(&c->explain, "(manual)\n");
  if (spmd_is_custom_call(inst, "SPMDFullToShardShape")) {
    const hl_instruction_t *op = inst->operands[0];
    const spmd_value_t *ov = &c->val[op->index];
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&op->shape, &ov->sh, dims);
    if (inst->shape.rank != op->shape.rank || !same_dims(&inst->shape, dims))
      return HL_INVALID("%s: the manual shape %s is not the shard of its operand's sharding",
                        hl_instruction_location(inst), hl_shape_debug_string(&inst->shape));
    hl_strbuf_append(&c->explain, "      manual region: each partition's shard\n");
    return set_local(c, i, c->local[op->index]);
  }
  if (spmd_is_custom_call(inst, "Sharding"))  // {manual} annotation: the value itself
    return set_local(c, i, c->local[inst->operands[0]->index]);
  const char **ops = inst->operand_count ? hl_calloc((size_t)inst->operand_count, sizeof(*ops)) : NULL;
  if (inst->operand_count && !ops) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; k < inst->operand_count && !st; k++) {
    const hl_instruction_t *op = inst->operands[k];
    if (c->val[op->index].manual || hl_shape_is_tuple(&op->shape)) {
      ops[k] = c->local[op->index];
    } else {
      hl_spmd_sharding_t repl;
      hl_spmd_replicated(op->shape.rank, c->n, &repl);
      st = operand_to(c, inst, k, &repl, &ops[k]);
    }
  }
  const char *name = st ? NULL : spmd_name(c, inst->name);
  if (!st && !name) st = HL_OOM();
  if (!st) st = emit_like(c, inst, name, NULL, ops);
  hl_free(ops);
  if (!st) st = set_local(c, i, name);
  return st;
}

static int op0_index(const hl_instruction_t *inst) { return inst->operands[0]->index; }

// A tuple-valued sort / variadic reduce (spmd_tuple_rule): array operands
// moved to `in`, scalars replicated, the op run on the local blocks; every
// element of the local tuple is held as `elem` says.
static hl_status_t lower_tuple_local(spmd_ctx_t *c, int i, const hl_spmd_sharding_t *in,
                                     const hl_spmd_sharding_t *elem) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  spmd_value_t *v = &c->val[i];
  const char *ops[8];
  for (int k = 0; k < inst->operand_count; k++) {
    hl_spmd_sharding_t want;
    if (inst->operands[k]->shape.rank == 0) hl_spmd_replicated(0, c->n, &want);
    else want = *in;
    HL_RETURN_IF_ERROR(operand_to(c, inst, k, &want, &ops[k]));
  }
  hl_instruction_t copy = *inst;
  hl_shape_t elems[8];
  for (int k = 0; k < inst->shape.tuple_count; k++) {
    elems[k] = inst->shape.tuple[k];
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&inst->shape.tuple[k], elem, dims);
    for (int d = 0; d < elems[k].rank; d++) elems[k].dims[d] = dims[d];
  }
  copy.shape.tuple = elems;
  const char *name = spmd_name(c, inst->name);
  if (!name) return HL_OOM();
  hl_strbuf_appendf(&c->explain, "      rule: %s along unsplit dimensions, locally; elements ",
                    hl_opcode_name(inst->opcode));
  hl_spmd_print(elem, &c->explain);
  hl_strbuf_append(&c->explain, "\n");
  HL_RETURN_IF_ERROR(emit_like(c, &copy, name, NULL, ops));
  v->held = hl_calloc((size_t)inst->shape.tuple_count, sizeof(*v->held));
  if (!v->held) return HL_OOM();
  for (int k = 0; k < inst->shape.tuple_count; k++) v->held[k] = *elem;
  return set_local(c, i, name);
}

// Whether every user of instruction i is a concatenate the roll rule
// lowers (which reads the slices' operand directly), and i is not the root.
static bool only_feeds_rolls(spmd_ctx_t *c, int i) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  bool used = false;
  if (inst == c->entry->root) return false;
  for (int j = i + 1; j < c->entry->instruction_count; j++) {
    const hl_instruction_t *u = c->entry->instructions[j];
    for (int k = 0; k < u->operand_count; k++) {
      if (u->operands[k] != inst) continue;
      if (!spmd_roll_applies(c, u)) return false;
      used = true;
    }
  }
  return used;
}

static hl_status_t lower_one(spmd_ctx_t *c, int i) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  spmd_value_t *v = &c->val[i];
  int n = c->n;
  bool tuple = hl_shape_is_tuple(&inst->shape);
  hl_spmd_sharding_t target, res, want[8];
  int gmap_operand[HL_MAX_RANK], gmap_indices[HL_MAX_RANK];
  if (!tuple) as_target(&v->sh, inst->shape.rank, n, &target);
  const char *name = NULL;
  hl_strbuf_appendf(&c->explain, "  %s = %s ", inst->name, hl_opcode_name(inst->opcode));
  if (v->manual) return lower_manual(c, i);
  if (tuple) {
    hl_strbuf_append(&c->explain, "(tuple)\n");
  } else {
    hl_spmd_print(&v->sh, &c->explain);
    hl_strbuf_append(&c->explain, "\n");
  }
  if (inst->opcode == HL_OP_SLICE && only_feeds_rolls(c, i)) {  // halo.c reads their operand itself
    hl_strbuf_append(&c->explain, "      read by rolls only: not computed\n");
    return set_local(c, i, c->local[op0_index(inst)]);
  }
  if (inst->opcode == HL_OP_PARAMETER) {
    if (tuple) return HL_UNIMPL("%s: tuple-shaped entry parameters are not partitioned yet", hl_instruction_location(inst));
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, &v->sh, dims);
    hl_strbuf_appendf(&c->body, "  %s = ", inst->name);
    spmd_shape_text(inst->shape.dtype, inst->shape.rank, dims, &c->body);
    hl_strbuf_appendf(&c->body, " parameter(%lld), sharding=", (long long)inst->attrs.parameter_number);
    hl_spmd_print(&v->sh, &c->body);
    hl_strbuf_append(&c->body, "\n");
    return set_local(c, i, inst->name);
  }
  if (tuple) {
    if (inst->opcode == HL_OP_TUPLE) {
      const char *ops[SPMD_MAX_TUPLE];
      if (inst->operand_count > SPMD_MAX_TUPLE) return HL_UNIMPL("%s: tuple of more than %d elements", hl_instruction_location(inst), SPMD_MAX_TUPLE);
      hl_strbuf_t shape;
      hl_strbuf_init(&shape);
      hl_strbuf_append(&shape, "(");
      for (int k = 0; k < inst->operand_count; k++) {
        const hl_instruction_t *op = inst->operands[k];
        ops[k] = c->local[op->index];
        const hl_spmd_sharding_t *s = &c->val[op->index].sh;
        if (hl_shape_is_tuple(&op->shape)) {
          hl_strbuf_deinit(&shape);
          return HL_UNIMPL("%s: nested tuples are not partitioned yet", hl_instruction_location(inst));
        }
        int64_t dims[HL_MAX_RANK];
        spmd_local_dims(&op->shape, s, dims);
        if (k) hl_strbuf_append(&shape, ", ");
        spmd_shape_text(op->shape.dtype, op->shape.rank, dims, &shape);
      }
      hl_strbuf_append(&shape, ")");
      name = spmd_name(c, inst->name);
      if (!name) return HL_OOM();
      hl_strbuf_appendf(&c->body, "  %s = %s tuple(", name, hl_strbuf_cstr(&shape));
      for (int k = 0; k < inst->operand_count; k++) hl_strbuf_appendf(&c->body, "%s%s", k ? ", " : "", ops[k]);
      hl_strbuf_append(&c->body, ")\n");
      hl_strbuf_deinit(&shape);
      return set_local(c, i, name);
    }
    if (inst->opcode == HL_OP_WHILE) {
      const char *why = "no rule";
      HL_RETURN_IF_ERROR(spmd_lower_while(c, i, &name, &why));
      if (!name) HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, why));
      return set_local(c, i, name);
    }
    if (inst->opcode == HL_OP_CONDITIONAL) {
      const char *why = "no rule";
      HL_RETURN_IF_ERROR(spmd_lower_conditional(c, i, &res, &name, &why));
      if (!name) HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, why));
      return set_local(c, i, name);
    }
    hl_spmd_sharding_t in, elem;
    if (inst->operand_count && !c->val[op0_index(inst)].elem_count && inst->operand_count <= 8 &&
        inst->shape.tuple_count <= 8) {
      hl_spmd_sharding_t from;
      as_target(&c->val[op0_index(inst)].sh, inst->operands[0]->shape.rank, n, &from);
      if (spmd_tuple_rule(inst, &from, &in, &elem)) return lower_tuple_local(c, i, &in, &elem);
    }
    HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, "tuple result"));
    return set_local(c, i, name);
  }
  const hl_instruction_t *op0 = inst->operand_count ? inst->operands[0] : NULL;
  const char *halo_name = NULL;
  if (inst->opcode == HL_OP_SLICE || inst->opcode == HL_OP_PAD || inst->opcode == HL_OP_REDUCE_WINDOW ||
      inst->opcode == HL_OP_CONVOLUTION || inst->opcode == HL_OP_CONCATENATE)
    HL_RETURN_IF_ERROR(spmd_lower_halo(c, i, &target, &res, &halo_name));
  if (inst->opcode == HL_OP_GET_TUPLE_ELEMENT && c->val[op0->index].held &&
      inst->attrs.tuple_index < op0->shape.tuple_count) {
    res = c->val[op0->index].held[inst->attrs.tuple_index];
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, &res, dims);
    name = spmd_name(c, inst->name);
    if (!name) return HL_OOM();
    hl_strbuf_appendf(&c->body, "  %s = ", name);
    spmd_shape_text(inst->shape.dtype, inst->shape.rank, dims, &c->body);
    hl_strbuf_appendf(&c->body, " get-tuple-element(%s), index=%lld\n", c->local[op0->index],
                      (long long)inst->attrs.tuple_index);
    hl_strbuf_append(&c->explain, "      element of a locally computed tuple\n");
  } else if (inst->opcode == HL_OP_GET_TUPLE_ELEMENT && op0->opcode == HL_OP_TUPLE) {
    const hl_instruction_t *e = op0->operands[inst->attrs.tuple_index];
    res = c->val[e->index].sh;
    name = c->local[e->index];
    hl_strbuf_append(&c->explain, "      element of a partitioned tuple\n");
  } else if (is_target(inst, "SPMDShardToFullShape")) {
    // Each partition's manual value is its shard of the full value.
    res = v->sh;
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, &res, dims);
    if (!c->val[op0->index].manual || op0->shape.rank != inst->shape.rank || !same_dims(&op0->shape, dims))
      return HL_INVALID("%s: operand is not this partition's shard of %s", hl_instruction_location(inst),
                        hl_shape_debug_string(&inst->shape));
    name = c->local[op0->index];
    hl_strbuf_append(&c->explain, "      end of a manual region\n");
  } else if (is_target(inst, "Sharding")) {
    res = c->val[op0->index].sh;
    name = c->local[op0->index];
  } else if (inst->opcode == HL_OP_CONSTANT || inst->opcode == HL_OP_IOTA) {
    // Every partition builds the whole value; the move to the target slices it.
    hl_spmd_replicated(inst->shape.rank, n, &res);
    name = spmd_name(c, inst->name);
    if (!name) return HL_OOM();
    HL_RETURN_IF_ERROR(emit_like(c, inst, name, NULL, NULL));
  } else if (spmd_is_elementwise(inst->opcode)) {
    for (int k = 0; k < inst->operand_count; k++) {
      if (inst->operands[k]->shape.rank == inst->shape.rank) want[k] = target;
      else hl_spmd_replicated(inst->operands[k]->shape.rank, n, &want[k]);
    }
    res = target;
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (halo_name) {  // halo.c: split windowed dimensions with halo exchanges
    name = halo_name;
  } else if (spmd_is_data_movement(inst->opcode) && inst->operand_count <= 8) {
    HL_RETURN_IF_ERROR(lower_data_movement(c, i, &target, want, &res, &name));
  } else if (inst->opcode == HL_OP_BROADCAST) {
    spmd_broadcast_backward(inst, &target, &want[0]);
    res = target;
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_TRANSPOSE) {
    spmd_transpose_backward(inst, &target, &want[0]);
    res = target;
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_RESHAPE) {
    // The target's splits that the reshape can carry; the rest are cut
    // afterwards (a free dynamic-slice).
    int map[HL_MAX_RANK];
    spmd_reshape_map(&op0->shape, &inst->shape, map);
    res = target;
    for (int j = 0; j < inst->shape.rank; j++)
      if (map[j] < 0 || !spmd_reshape_split_ok(&op0->shape, &inst->shape, map[j], j, res.tiles[j]))
        hl_spmd_unsplit(&res, j);
    spmd_reshape_backward(inst, &res, &want[0]);
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_REDUCE && combiner_for_reduce(inst)) {
    // Keep the operand's tiling, except split reduced dims with padding.
    hl_spmd_sharding_t in;
    as_target(&c->val[op0->index].sh, op0->shape.rank, n, &in);
    uint32_t mask = 0;
    for (int k = 0; k < inst->attrs.dimensions.n; k++) {
      int d = (int)inst->attrs.dimensions.v[k];
      if (in.tiles[d] > 1 && op0->shape.dims[d] % in.tiles[d]) hl_spmd_unsplit(&in, d);
      if (in.tiles[d] > 1) mask |= 1u << d;
    }
    want[0] = in;
    hl_spmd_replicated(0, n, &want[1]);
    spmd_reduce_forward(inst, &in, &res);
    const char *local;
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &local));
    name = local;
    if (mask) {
      int64_t dims[HL_MAX_RANK];
      spmd_local_dims(&inst->shape, &res, dims);
      HL_RETURN_IF_ERROR(spmd_all_reduce(c, local, inst->shape.dtype, inst->shape.rank, dims, &in, mask,
                                         combiner_for_reduce(inst), &name));
    }
  } else if (inst->opcode == HL_OP_REDUCE && inst->operand_count == 2) {
    // Any other reducer (an init that is not its identity, a compound
    // reducer): the reduced dimensions unsplit, the rest stays local.
    hl_spmd_sharding_t in;
    as_target(&c->val[op0->index].sh, op0->shape.rank, n, &in);
    for (int k = 0; k < inst->attrs.dimensions.n; k++) hl_spmd_unsplit(&in, (int)inst->attrs.dimensions.v[k]);
    want[0] = in;
    hl_spmd_replicated(0, n, &want[1]);
    spmd_reduce_forward(inst, &in, &res);
    hl_strbuf_append(&c->explain, "      rule: reduce with its reduced dimensions unsplit, locally\n");
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_CONVOLUTION && inst->operand_count == 2 &&
             inst->attrs.feature_group_count == 1 && inst->attrs.batch_group_count == 1) {
    // Batch and output-feature splits of the target: the lhs split along its
    // batch, the kernel along its output features, everything else whole.
    const hl_conv_dims_t *cd = &inst->attrs.convolution_dimension_numbers;
    res = target;
    for (int d = 0; d < inst->shape.rank; d++)
      if (d != cd->output_batch_dimension && d != cd->output_feature_dimension) hl_spmd_unsplit(&res, d);
    int lmap[HL_MAX_RANK], rmap[HL_MAX_RANK];
    for (int d = 0; d < HL_MAX_RANK; d++) lmap[d] = rmap[d] = -1;
    lmap[cd->input_batch_dimension] = (int)cd->output_batch_dimension;
    rmap[cd->kernel_output_feature_dimension] = (int)cd->output_feature_dimension;
    spmd_map_dims(&res, op0->shape.rank, lmap, &want[0]);
    spmd_map_dims(&res, inst->operands[1]->shape.rank, rmap, &want[1]);
    hl_strbuf_append(&c->explain, "      rule: convolution split along batch / output features, locally\n");
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_GATHER && spmd_gather_maps(inst, gmap_operand, gmap_indices)) {
    // Index-parallel along batch dims, operand passthrough along whole
    // offset dims; every other dimension whole.
    const hl_instruction_t *ix = inst->operands[1];
    res = target;
    int opmap[HL_MAX_RANK], ixmap[HL_MAX_RANK];
    for (int d = 0; d < HL_MAX_RANK; d++) opmap[d] = ixmap[d] = -1;
    for (int j = 0; j < inst->shape.rank; j++) {  // batching dims: both
      if (gmap_operand[j] >= 0) opmap[gmap_operand[j]] = j;
      if (gmap_indices[j] >= 0) ixmap[gmap_indices[j]] = j;
      if (gmap_operand[j] < 0 && gmap_indices[j] < 0) hl_spmd_unsplit(&res, j);
    }
    spmd_map_dims(&res, op0->shape.rank, opmap, &want[0]);
    spmd_map_dims(&res, ix->shape.rank, ixmap, &want[1]);
    hl_instruction_t local = *inst;
    int64_t sizes[HL_MAX_RANK], shard[HL_MAX_RANK];
    spmd_local_dims(&op0->shape, &want[0], shard);
    for (int d = 0; d < op0->shape.rank; d++)
      sizes[d] = opmap[d] >= 0 && gmap_indices[opmap[d]] < 0 ? shard[d] : inst->attrs.gather_slice_sizes.v[d];
    local.attrs.gather_slice_sizes.v = sizes;
    hl_strbuf_append(&c->explain, "      rule: gather, index-parallel along batch dims (batching dims of the operand alike), operand passthrough "
                                  "along whole offset dims, locally\n");
    HL_RETURN_IF_ERROR(lower_local_as(c, &local, want, &res, &name));
  } else if (inst->opcode == HL_OP_SCATTER && spmd_scatter_maps(inst, gmap_operand)) {
    // Operand passthrough: dims the updates cover whole stay split (updates
    // alike), the indices whole, every other dim whole.
    res = target;
    for (int d = 0; d < inst->shape.rank; d++)
      if (gmap_operand[d] < 0) hl_spmd_unsplit(&res, d);
    int umap[HL_MAX_RANK];
    for (int d = 0; d < HL_MAX_RANK; d++) umap[d] = -1;
    for (int d = 0; d < inst->shape.rank; d++)
      if (gmap_operand[d] >= 0) umap[gmap_operand[d]] = d;
    want[0] = res;
    hl_spmd_replicated(inst->operands[1]->shape.rank, n, &want[1]);
    spmd_map_dims(&res, inst->operands[2]->shape.rank, umap, &want[2]);
    hl_strbuf_append(&c->explain, "      rule: scatter, operand passthrough along dims the updates cover whole, "
                                  "locally\n");
    HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &name));
  } else if (inst->opcode == HL_OP_DOT && inst->shape.dtype != HL_PRED) {
    spmd_dot_plan_t plan;
    bool found;
    const hl_instruction_t *op1 = inst->operands[1];
    HL_RETURN_IF_ERROR(spmd_dot_plan(c, inst, &c->val[op0->index].sh, &c->val[op1->index].sh, &target, &plan, &found));
    if (found) {
      want[0] = plan.lhs;
      want[1] = plan.rhs;
      res = plan.result;
      hl_strbuf_append(&c->explain, "      dot plan: iteration space [batch, lhs free, rhs free, contracting] ");
      hl_spmd_print(&plan.iter, &c->explain);
      hl_strbuf_append(&c->explain, "\n");
      const char *local;
      HL_RETURN_IF_ERROR(lower_local(c, i, want, &res, &local));
      name = local;
      int scatter_dim;
      if (plan.contract_split && spmd_reduce_scatter_dim(inst, &plan.iter, plan.contract_split, &plan.result, &target, &scatter_dim)) {
        // The target splits a result dimension over the contracting groups,
        // in their order: each partition keeps only its chunk of the sum.
        int64_t dims[HL_MAX_RANK];
        spmd_local_dims(&inst->shape, &res, dims);
        HL_RETURN_IF_ERROR(spmd_reduce_scatter(c, local, inst->shape.dtype, inst->shape.rank, dims, &plan.iter,
                                               plan.contract_split, scatter_dim,
                                               spmd_add_reducer(c, inst->shape.dtype), &name));
        res = target;
      } else if (plan.contract_split) {
        int64_t dims[HL_MAX_RANK];
        spmd_local_dims(&inst->shape, &res, dims);
        // The all-reduce's groups are the iteration space's along the contracting dims.
        HL_RETURN_IF_ERROR(spmd_all_reduce(c, local, inst->shape.dtype, inst->shape.rank, dims, &plan.iter,
                                           plan.contract_split, spmd_add_reducer(c, inst->shape.dtype), &name));
      }
    } else {
      HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, "dot with no valid plan"));
    }
  } else if (inst->opcode == HL_OP_CONDITIONAL) {
    const char *why = "no rule";
    HL_RETURN_IF_ERROR(spmd_lower_conditional(c, i, &res, &name, &why));
    if (!name) HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, why));
  } else {
    HL_RETURN_IF_ERROR(lower_fallback(c, i, &res, &name, "no partitioning rule for this op"));
  }
  const char *moved;
  HL_RETURN_IF_ERROR(spmd_reshard(c, name, &inst->shape, &res, &target, &moved));
  return set_local(c, i, moved);
}

// A locally computed tuple as the root: each element taken out of the
// local tuple, moved to the root's annotation (else kept), tupled again.
static hl_status_t lower_held_tuple_root(spmd_ctx_t *c, const hl_instruction_t *root) {
  const spmd_value_t *rv = &c->val[root->index];
  hl_strbuf_t shape, ops, sh;
  hl_strbuf_init(&shape);
  hl_strbuf_init(&ops);
  hl_strbuf_init(&sh);
  hl_status_t st = NULL;
  for (int k = 0; k < root->shape.tuple_count && !st; k++) {
    const hl_shape_t *es = &root->shape.tuple[k];
    hl_spmd_sharding_t want = rv->held[k];
    if (rv->fixed && k < rv->elem_count) want = rv->elems[k];
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(es, &rv->held[k], dims);
    const char *e = spmd_name(c, "element");
    if (!e) {
      st = HL_OOM();
      break;
    }
    hl_strbuf_appendf(&c->body, "  %s = ", e);
    spmd_shape_text(es->dtype, es->rank, dims, &c->body);
    hl_strbuf_appendf(&c->body, " get-tuple-element(%s), index=%d\n", c->local[root->index], k);
    hl_strbuf_appendf(&c->explain, "  result element %d ", k);
    hl_spmd_print(&want, &c->explain);
    hl_strbuf_append(&c->explain, "\n");
    const char *v;
    st = spmd_reshard(c, e, es, &rv->held[k], &want, &v);
    spmd_local_dims(es, &want, dims);
    hl_strbuf_append(&shape, k ? ", " : "(");
    spmd_shape_text(es->dtype, es->rank, dims, &shape);
    hl_strbuf_appendf(&ops, "%s%s", k ? ", " : "", st ? "" : v);
    hl_strbuf_append(&sh, k ? ", " : "{");
    hl_spmd_print(&want, &sh);
  }
  if (!st)
    hl_strbuf_appendf(&c->body, "  ROOT spmd.result = %s) tuple(%s), sharding=%s}\n", hl_strbuf_cstr(&shape),
                      hl_strbuf_cstr(&ops), hl_strbuf_cstr(&sh));
  hl_strbuf_deinit(&shape);
  hl_strbuf_deinit(&ops);
  hl_strbuf_deinit(&sh);
  return st;
}

hl_status_t spmd_lower(spmd_ctx_t *c) {
  const hl_computation_t *e = c->entry;
  for (int i = 0; i < e->instruction_count; i++) HL_RETURN_IF_ERROR(lower_one(c, i));
  // The root: moved to its annotated sharding, which the result then carries.
  const hl_instruction_t *root = e->root;
  const spmd_value_t *rv = &c->val[root->index];
  if (hl_shape_is_tuple(&root->shape)) {
    if (root->opcode != HL_OP_TUPLE && rv->held) return lower_held_tuple_root(c, root);
    if (root->opcode != HL_OP_TUPLE) {
      hl_strbuf_appendf(&c->body, "  ROOT spmd.result = ");
      hl_shape_print(&root->shape, false, &c->body);
      hl_strbuf_appendf(&c->body, " copy(%s)\n", c->local[root->index]);
      return NULL;
    }
    hl_strbuf_t shape, ops, sh;
    hl_strbuf_init(&shape);
    hl_strbuf_init(&ops);
    hl_strbuf_init(&sh);
    hl_status_t st = NULL;
    for (int k = 0; k < root->operand_count && !st; k++) {
      const hl_instruction_t *op = root->operands[k];
      hl_spmd_sharding_t want = c->val[op->index].sh;
      if (rv->fixed && k < rv->elem_count) want = rv->elems[k];
      const char *v;
      hl_strbuf_appendf(&c->explain, "  result element %d ", k);
      hl_spmd_print(&want, &c->explain);
      hl_strbuf_append(&c->explain, "\n");
      st = spmd_reshard(c, c->local[op->index], &op->shape, &c->val[op->index].sh, &want, &v);
      int64_t dims[HL_MAX_RANK];
      spmd_local_dims(&op->shape, &want, dims);
      hl_strbuf_append(&shape, k ? ", " : "(");
      spmd_shape_text(op->shape.dtype, op->shape.rank, dims, &shape);
      hl_strbuf_appendf(&ops, "%s%s", k ? ", " : "", st ? "" : v);
      hl_strbuf_append(&sh, k ? ", " : "{");
      hl_spmd_print(&want, &sh);
    }
    if (!st)
      hl_strbuf_appendf(&c->body, "  ROOT spmd.result = %s) tuple(%s), sharding=%s}\n",
                        root->operand_count ? hl_strbuf_cstr(&shape) : "(", hl_strbuf_cstr(&ops),
                        root->operand_count ? hl_strbuf_cstr(&sh) : "{");
    hl_strbuf_deinit(&shape);
    hl_strbuf_deinit(&ops);
    hl_strbuf_deinit(&sh);
    return st;
  }
  int64_t dims[HL_MAX_RANK];
  hl_spmd_sharding_t out;
  as_target(&rv->sh, root->shape.rank, c->n, &out);
  spmd_local_dims(&root->shape, &out, dims);
  hl_strbuf_append(&c->body, "  ROOT spmd.result = ");
  spmd_shape_text(root->shape.dtype, root->shape.rank, dims, &c->body);
  hl_strbuf_appendf(&c->body, " copy(%s), sharding=", c->local[root->index]);
  hl_spmd_print(&out, &c->body);
  // The global shape, which local x tiles overstates for uneven splits
  // (--global-output assembles to it; a frontend attribute survives hlo-convert).
  hl_strbuf_appendf(&c->body, ", frontend_attributes={%s=\"", HL_SPMD_GLOBAL_SHAPE_ATTR);
  hl_shape_print(&root->shape, false, &c->body);
  hl_strbuf_append(&c->body, "\"}\n");
  return NULL;
}
