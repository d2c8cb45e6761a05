// Sharding propagation over the entry computation: annotated parameters,
// Sharding custom-calls and the root's annotation are fixed; every other
// instruction takes its sharding from its operands (forward, in program
// order) or, where none has one, from its users (backward, in reverse
// order), repeated until nothing changes. Element-wise ops follow their most
// split operand, broadcast / transpose / reshape / reduce map dimensions,
// dots take their operands' batch and free dimensions by the plan that moves
// the fewest bytes (dot_plan.c). Deterministic: the order of instructions
// decides every tie. What stays unknown is replicated.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/spmd/spmd_internal.h"

bool spmd_is_elementwise(hl_opcode_t op) {
  switch (op) {
    case HL_OP_ABS: case HL_OP_ACOS: case HL_OP_ACOSH: case HL_OP_ADD: case HL_OP_AND:
    case HL_OP_ASIN: case HL_OP_ASINH: case HL_OP_ATAN: case HL_OP_ATAN2: case HL_OP_ATANH:
    case HL_OP_CBRT: case HL_OP_CEIL: case HL_OP_CLAMP: case HL_OP_CLZ: case HL_OP_COMPARE:
    case HL_OP_COMPLEX: case HL_OP_CONVERT: case HL_OP_COPY: case HL_OP_COS: case HL_OP_COSH:
    case HL_OP_DIVIDE: case HL_OP_ERF: case HL_OP_EXP: case HL_OP_EXPM1: case HL_OP_FLOOR:
    case HL_OP_IMAG: case HL_OP_IS_FINITE: case HL_OP_LOG: case HL_OP_LOG1P: case HL_OP_LOGISTIC:
    case HL_OP_MAXIMUM: case HL_OP_MINIMUM: case HL_OP_MULTIPLY: case HL_OP_NEGATE: case HL_OP_NOT:
    case HL_OP_OR: case HL_OP_POPCNT: case HL_OP_POWER: case HL_OP_REAL: case HL_OP_REDUCE_PRECISION:
    case HL_OP_REMAINDER: case HL_OP_ROUND_NEAREST_AFZ: case HL_OP_ROUND_NEAREST_EVEN:
    case HL_OP_RSQRT: case HL_OP_SELECT: case HL_OP_SHIFT_LEFT: case HL_OP_SHIFT_RIGHT_ARITHMETIC:
    case HL_OP_SHIFT_RIGHT_LOGICAL: case HL_OP_SIGN: case HL_OP_SIN: case HL_OP_SINH: case HL_OP_SQRT:
    case HL_OP_SUBTRACT: case HL_OP_TAN: case HL_OP_TANH: case HL_OP_XOR:
    case HL_OP_BESSEL_I1E: case HL_OP_DIGAMMA: case HL_OP_ERF_INV: case HL_OP_ERFC:
    case HL_OP_LGAMMA: case HL_OP_NEXT_AFTER: case HL_OP_POLYGAMMA: case HL_OP_ZETA:
      return true;
    default:
      return false;
  }
}

bool spmd_is_data_movement(hl_opcode_t op) {
  return op == HL_OP_SLICE || op == HL_OP_PAD || op == HL_OP_CONCATENATE || op == HL_OP_REVERSE ||
         op == HL_OP_DYNAMIC_SLICE || op == HL_OP_DYNAMIC_UPDATE_SLICE || op == HL_OP_SORT ||
         op == HL_OP_REDUCE_WINDOW;
}

uint32_t spmd_touched_dims(const hl_instruction_t *inst) {
  uint32_t mask = 0;
  const hl_shape_t *in = inst->operand_count ? &inst->operands[0]->shape : &inst->shape;
  switch (inst->opcode) {
    case HL_OP_SLICE:
      for (int d = 0; d < inst->attrs.slice_count && d < in->rank; d++) {
        const hl_slice_dim_t *s = &inst->attrs.slice_dimensions[d];
        if (s->start != 0 || s->limit != in->dims[d] || s->stride != 1) mask |= 1u << d;
      }
      return mask;
    case HL_OP_PAD:
      for (int d = 0; d < inst->attrs.padding_count; d++) {
        const hl_padding_dim_t *p = &inst->attrs.padding_config[d];
        if (p->edge_padding_low || p->edge_padding_high || p->interior_padding) mask |= 1u << d;
      }
      return mask;
    case HL_OP_CONCATENATE:
    case HL_OP_REVERSE:
    case HL_OP_SORT:  // the sort dimension
      for (int k = 0; k < inst->attrs.dimensions.n; k++) mask |= 1u << inst->attrs.dimensions.v[k];
      return mask;
    case HL_OP_DYNAMIC_SLICE:  // a dimension sliced whole has its start clamped to 0
      for (int d = 0; d < in->rank && d < inst->attrs.dynamic_slice_sizes.n; d++)
        if (inst->attrs.dynamic_slice_sizes.v[d] != in->dims[d]) mask |= 1u << d;
      return mask;
    case HL_OP_DYNAMIC_UPDATE_SLICE:  // likewise an update covering a whole dimension
      for (int d = 0; d < in->rank && inst->operand_count > 1; d++)
        if (inst->operands[1]->shape.dims[d] != in->dims[d]) mask |= 1u << d;
      return mask;
    case HL_OP_REDUCE_WINDOW:  // dimensions with a window other than one element
      for (int d = 0; d < in->rank; d++) {
        const hl_window_dim_t *w = d < inst->attrs.window.n ? &inst->attrs.window.dims[d] : NULL;
        if (!w || w->size != 1 || w->stride != 1 || w->padding_low || w->padding_high ||
            w->window_dilation != 1 || w->base_dilation != 1)
          mask |= 1u << d;
      }
      return mask;
    default:
      return 0;
  }
}

static void unsplit_mask(hl_spmd_sharding_t *s, uint32_t mask) {
  for (int d = 0; d < s->rank; d++)
    if (mask >> d & 1) hl_spmd_unsplit(s, d);
}

void spmd_map_dims(const hl_spmd_sharding_t *src, int dst_rank, const int *map, hl_spmd_sharding_t *dst) {
  hl_spmd_replicated(dst_rank, src->num_devices, dst);
  if (src->kind != HL_SPMD_TILED) return;
  for (int j = 0; j < dst_rank; j++) {
    if (map[j] < 0) continue;
    dst->tiles[j] = src->tiles[map[j]];
    for (int p = 0; p < src->num_devices; p++) dst->coords[p][j] = src->coords[p][map[j]];
  }
}

void spmd_broadcast_forward(const hl_instruction_t *b, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out) {
  int map[HL_MAX_RANK];
  for (int j = 0; j < b->shape.rank; j++) map[j] = -1;
  for (int i = 0; i < b->attrs.dimensions.n; i++) map[b->attrs.dimensions.v[i]] = i;
  spmd_map_dims(in, b->shape.rank, map, out);
}

void spmd_broadcast_backward(const hl_instruction_t *b, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in) {
  int map[HL_MAX_RANK];
  for (int i = 0; i < b->attrs.dimensions.n; i++) map[i] = (int)b->attrs.dimensions.v[i];
  spmd_map_dims(out, b->operands[0]->shape.rank, map, in);
}

void spmd_transpose_forward(const hl_instruction_t *t, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out) {
  int map[HL_MAX_RANK];
  for (int i = 0; i < t->shape.rank; i++) map[i] = (int)t->attrs.dimensions.v[i];
  spmd_map_dims(in, t->shape.rank, map, out);
}

void spmd_transpose_backward(const hl_instruction_t *t, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in) {
  int map[HL_MAX_RANK];
  for (int i = 0; i < t->shape.rank; i++) map[t->attrs.dimensions.v[i]] = i;
  spmd_map_dims(out, t->shape.rank, map, in);
}

void spmd_reshape_map(const hl_shape_t *in, const hl_shape_t *out, int *out_to_in) {
  for (int j = 0; j < out->rank; j++) out_to_in[j] = -1;
  int i = 0, j = 0;
  while (i < in->rank && j < out->rank) {
    // One group: the fewest dims on each side whose sizes multiply alike.
    int i0 = i, j0 = j;
    int64_t pin = in->dims[i++], pout = out->dims[j++];
    while (pin != pout) {
      if (pin < pout && i < in->rank) pin *= in->dims[i++];
      else if (pout < pin && j < out->rank) pout *= out->dims[j++];
      else return;  // not a reshape of the same element count
    }
    int mi = i0, mj = j0;  // the group's most major dims of size > 1
    while (mi < i - 1 && in->dims[mi] == 1) mi++;
    while (mj < j - 1 && out->dims[mj] == 1) mj++;
    if (in->dims[mi] > 1 && out->dims[mj] > 1) out_to_in[mj] = mi;
  }
}

bool spmd_reshape_split_ok(const hl_shape_t *in, const hl_shape_t *out, int i, int j, int64_t t) {
  if (t <= 1) return true;
  if (in->dims[i] == out->dims[j]) return true;  // the same dim: padding stays at its end
  return in->dims[i] % t == 0 && out->dims[j] % t == 0;  // contiguous equal chunks
}

void spmd_reshape_forward(const hl_instruction_t *r, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out) {
  const hl_shape_t *is = &r->operands[0]->shape, *os = &r->shape;
  int map[HL_MAX_RANK];
  spmd_reshape_map(is, os, map);
  spmd_map_dims(in, os->rank, map, out);
  for (int j = 0; j < os->rank; j++)
    if (map[j] >= 0 && !spmd_reshape_split_ok(is, os, map[j], j, out->tiles[j])) hl_spmd_unsplit(out, j);
}

void spmd_reshape_backward(const hl_instruction_t *r, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in) {
  const hl_shape_t *is = &r->operands[0]->shape, *os = &r->shape;
  int map[HL_MAX_RANK], back[HL_MAX_RANK];
  spmd_reshape_map(is, os, map);
  for (int d = 0; d < is->rank; d++) back[d] = -1;
  for (int j = 0; j < os->rank; j++)
    if (map[j] >= 0 && spmd_reshape_split_ok(is, os, map[j], j, out->tiles[j])) back[map[j]] = j;
  spmd_map_dims(out, is->rank, back, in);
}

void spmd_reduce_forward(const hl_instruction_t *r, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out) {
  int map[HL_MAX_RANK], j = 0;
  const hl_shape_t *is = &r->operands[0]->shape;
  for (int i = 0; i < is->rank; i++) {
    bool reduced = false;
    for (int k = 0; k < r->attrs.dimensions.n; k++) reduced |= r->attrs.dimensions.v[k] == i;
    if (!reduced) map[j++] = i;
  }
  spmd_map_dims(in, j, map, out);
}

bool spmd_is_custom_call(const hl_instruction_t *inst, const char *target) {
  return inst->opcode == HL_OP_CUSTOM_CALL && inst->attrs.custom_call_target &&
         strcmp(inst->attrs.custom_call_target, target) == 0;
}

static bool is_sharding_call(const hl_instruction_t *inst) { return spmd_is_custom_call(inst, "Sharding"); }

static void set(spmd_value_t *v, const hl_spmd_sharding_t *s, bool *changed) {
  v->sh = *s;
  v->known = true;
  *changed = true;
}

// Shardings of a dot's operand from its result's (contracting dims unsplit).
static void dot_operand_backward(const hl_instruction_t *dot, int which, const hl_spmd_sharding_t *out,
                                 hl_spmd_sharding_t *in) {
  const hl_dot_dims_t *dd = &dot->attrs.dot_dimension_numbers;
  const hl_shape_t *ls = &dot->operands[0]->shape, *rs = &dot->operands[1]->shape;
  const hl_i64_list_t *batch = which ? &dd->rhs_batch_dimensions : &dd->lhs_batch_dimensions;
  const hl_i64_list_t *contr = which ? &dd->rhs_contracting_dimensions : &dd->lhs_contracting_dimensions;
  const hl_shape_t *s = which ? rs : ls;
  int map[HL_MAX_RANK];
  int nb = batch->n;
  int lfree = ls->rank - nb - dd->lhs_contracting_dimensions.n;
  int next = which ? nb + lfree : nb;
  for (int d = 0; d < s->rank; d++) {
    map[d] = -2;
    for (int k = 0; k < batch->n; k++)
      if (batch->v[k] == d) map[d] = k;
    for (int k = 0; k < contr->n; k++)
      if (contr->v[k] == d) map[d] = -1;
    if (map[d] == -2) map[d] = next++;
  }
  spmd_map_dims(out, s->rank, map, in);
}

bool spmd_tuple_rule(const hl_instruction_t *inst, const hl_spmd_sharding_t *op0, hl_spmd_sharding_t *in,
                     hl_spmd_sharding_t *elem) {
  if (!hl_shape_is_tuple(&inst->shape) || op0->kind != HL_SPMD_TILED || inst->operand_count < 1) return false;
  int inputs = inst->opcode == HL_OP_SORT ? inst->operand_count
               : inst->opcode == HL_OP_REDUCE && inst->operand_count % 2 == 0 ? inst->operand_count / 2 : 0;
  if (inputs < 1 || inst->shape.tuple_count != inputs) return false;
  const hl_shape_t *s0 = &inst->operands[0]->shape;
  for (int k = 0; k < inst->operand_count; k++) {
    const hl_shape_t *sk = &inst->operands[k]->shape;
    if (hl_shape_is_tuple(sk)) return false;
    if (k < inputs && !hl_shape_same_dims(sk, s0)) return false;
    if (k >= inputs && sk->rank != 0) return false;
  }
  *in = *op0;
  if (inst->opcode == HL_OP_SORT) {
    unsplit_mask(in, spmd_touched_dims(inst));
    *elem = *in;
  } else {
    for (int k = 0; k < inst->attrs.dimensions.n; k++) hl_spmd_unsplit(in, (int)inst->attrs.dimensions.v[k]);
    spmd_reduce_forward(inst, in, elem);
  }
  return true;
}

static hl_status_t forward(spmd_ctx_t *c, int i, bool *changed) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  spmd_value_t *v = &c->val[i];
  hl_spmd_sharding_t tin, telem;
  if (!v->known && !v->elems && inst->operand_count && c->val[inst->operands[0]->index].known &&
      !c->val[inst->operands[0]->index].elem_count &&
      spmd_tuple_rule(inst, &c->val[inst->operands[0]->index].sh, &tin, &telem)) {
    // A tuple-valued sort / variadic reduce: every element in the same sharding.
    v->elems = hl_calloc((size_t)inst->shape.tuple_count, sizeof(*v->elems));
    if (!v->elems) return HL_OOM();
    v->elem_count = inst->shape.tuple_count;
    for (int k = 0; k < v->elem_count; k++) v->elems[k] = telem;
    v->known = *changed = true;
    return NULL;
  }
  if (v->known || hl_shape_is_tuple(&inst->shape)) return NULL;
  hl_spmd_sharding_t s;
  const spmd_value_t *op0 = inst->operand_count ? &c->val[inst->operands[0]->index] : NULL;
  int roll_dim;
  int64_t roll_k;
  const hl_instruction_t *roll_x = spmd_roll_source(inst, &roll_dim, &roll_k);
  if (roll_x && c->val[roll_x->index].known && (spmd_halo_dims(inst, &c->val[roll_x->index].sh) >> roll_dim & 1)) {
    set(v, &c->val[roll_x->index].sh, changed);  // a roll keeps its source's split (halo.c)
    return NULL;
  }
  if (spmd_is_elementwise(inst->opcode) || spmd_is_data_movement(inst->opcode)) {
    const hl_spmd_sharding_t *best = NULL;
    for (int k = 0; k < inst->operand_count; k++) {
      const spmd_value_t *o = &c->val[inst->operands[k]->index];
      if (!o->known || inst->operands[k]->shape.rank != inst->shape.rank || o->sh.kind != HL_SPMD_TILED) continue;
      if (!best || hl_spmd_tile_count(&o->sh) > hl_spmd_tile_count(best)) best = &o->sh;
    }
    if (best) {
      s = *best;
      unsplit_mask(&s, spmd_touched_dims(inst) & ~spmd_halo_dims(inst, &s));  // halo.c keeps those split
      set(v, &s, changed);
    }
    return NULL;
  }
  if (!op0 || !op0->known || op0->elem_count) {
    if (inst->opcode == HL_OP_DOT && inst->operand_count == 2 && c->val[inst->operands[1]->index].known) {
      // falls through to the dot case below with the lhs replicated
    } else if (inst->opcode == HL_OP_GET_TUPLE_ELEMENT && op0 && op0->known && op0->elem_count) {
      int k = (int)inst->attrs.tuple_index;
      if (k < op0->elem_count) set(v, &op0->elems[k], changed);
      return NULL;
    } else {
      return NULL;
    }
  }
  switch (inst->opcode) {
    case HL_OP_BROADCAST: spmd_broadcast_forward(inst, &op0->sh, &s); break;
    case HL_OP_TRANSPOSE: spmd_transpose_forward(inst, &op0->sh, &s); break;
    case HL_OP_RESHAPE: spmd_reshape_forward(inst, &op0->sh, &s); break;
    case HL_OP_REDUCE:
      if (inst->operand_count != 2) return NULL;
      spmd_reduce_forward(inst, &op0->sh, &s);
      break;
    case HL_OP_GATHER: {  // batch dims from the indices, whole offset dims from the operand
      int om[HL_MAX_RANK], im[HL_MAX_RANK];
      if (!spmd_gather_maps(inst, om, im)) return NULL;
      const spmd_value_t *ix = &c->val[inst->operands[1]->index];
      if (ix->known && ix->sh.kind == HL_SPMD_TILED) spmd_map_dims(&ix->sh, inst->shape.rank, im, &s);
      else hl_spmd_replicated(inst->shape.rank, c->n, &s);
      if (op0->sh.kind == HL_SPMD_TILED) {
        hl_spmd_sharding_t both = s;
        for (int j = 0; j < inst->shape.rank; j++) {
          if (om[j] < 0 || (im[j] >= 0 && s.tiles[j] > 1)) continue;  // a batching dim split by the indices
          both.tiles[j] = op0->sh.tiles[om[j]];
          for (int p = 0; p < c->n; p++) both.coords[p][j] = op0->sh.coords[p][om[j]];
        }
        if (hl_spmd_is_valid(&both)) s = both;
      }
      break;
    }
    case HL_OP_SCATTER: {  // the operand's passthrough dims
      int pm[HL_MAX_RANK];
      if (!spmd_scatter_maps(inst, pm) || op0->sh.kind != HL_SPMD_TILED) return NULL;
      s = op0->sh;
      for (int d = 0; d < inst->shape.rank; d++)
        if (pm[d] < 0) hl_spmd_unsplit(&s, d);
      break;
    }
    case HL_OP_CONVOLUTION: {  // batch from the lhs, output features from the kernel
      if (inst->operand_count != 2 || op0->sh.kind != HL_SPMD_TILED) return NULL;
      const hl_conv_dims_t *cd = &inst->attrs.convolution_dimension_numbers;
      int map[HL_MAX_RANK];
      for (int d = 0; d < inst->shape.rank; d++) map[d] = -1;
      map[cd->output_batch_dimension] = (int)cd->input_batch_dimension;
      spmd_map_dims(&op0->sh, inst->shape.rank, map, &s);
      for (int k = 0; k < cd->output_spatial_dimensions.n; k++) {  // spatial splits a halo exchange serves
        int j = (int)cd->output_spatial_dimensions.v[k], d = spmd_halo_operand_dim(inst, j);
        if (d < 0 || op0->sh.tiles[d] <= 1) continue;
        hl_spmd_sharding_t sp = s;
        sp.tiles[j] = op0->sh.tiles[d];
        for (int p = 0; p < c->n; p++) sp.coords[p][j] = op0->sh.coords[p][d];
        if (hl_spmd_is_valid(&sp) && (spmd_halo_dims(inst, &sp) >> j & 1)) s = sp;
      }
      const spmd_value_t *k = &c->val[inst->operands[1]->index];
      if (k->known && k->sh.kind == HL_SPMD_TILED) {
        hl_spmd_sharding_t both = s;
        int o = (int)cd->output_feature_dimension, kf = (int)cd->kernel_output_feature_dimension;
        both.tiles[o] = k->sh.tiles[kf];
        for (int p = 0; p < c->n; p++) both.coords[p][o] = k->sh.coords[p][kf];
        if (hl_spmd_is_valid(&both)) s = both;
      }
      break;
    }
    case HL_OP_DOT: {
      hl_spmd_sharding_t l, r;
      const spmd_value_t *lv = &c->val[inst->operands[0]->index], *rv = &c->val[inst->operands[1]->index];
      if (lv->known) l = lv->sh; else hl_spmd_replicated(inst->operands[0]->shape.rank, c->n, &l);
      if (rv->known) r = rv->sh; else hl_spmd_replicated(inst->operands[1]->shape.rank, c->n, &r);
      spmd_dot_plan_t plan;
      bool found;
      HL_RETURN_IF_ERROR(spmd_dot_plan(c, inst, &l, &r, NULL, &plan, &found));
      if (!found) return NULL;
      s = plan.result;
      break;
    }
    default: return NULL;
  }
  set(v, &s, changed);
  return NULL;
}

// Gives unknown operands of instruction i a sharding from i's.
static void backward(spmd_ctx_t *c, int i, bool *changed) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const spmd_value_t *v = &c->val[i];
  if (!v->known || (v->elem_count == 0 && v->sh.kind != HL_SPMD_TILED)) return;
  for (int k = 0; k < inst->operand_count; k++) {
    const hl_instruction_t *op = inst->operands[k];
    spmd_value_t *ov = &c->val[op->index];
    if (ov->known || op->opcode == HL_OP_PARAMETER || hl_shape_is_tuple(&op->shape)) continue;
    hl_spmd_sharding_t s;
    if (inst->opcode == HL_OP_TUPLE) {
      if (v->fixed && k < v->elem_count) set(ov, &v->elems[k], changed);
      continue;
    }
    if (v->elem_count) continue;
    if (spmd_is_elementwise(inst->opcode) || is_sharding_call(inst) || spmd_is_data_movement(inst->opcode)) {
      if (op->shape.rank != inst->shape.rank) continue;
      s = v->sh;
      unsplit_mask(&s, spmd_touched_dims(inst) & ~spmd_halo_dims(inst, &s));
    } else if (inst->opcode == HL_OP_BROADCAST) {
      spmd_broadcast_backward(inst, &v->sh, &s);
    } else if (inst->opcode == HL_OP_TRANSPOSE) {
      spmd_transpose_backward(inst, &v->sh, &s);
    } else if (inst->opcode == HL_OP_RESHAPE) {
      spmd_reshape_backward(inst, &v->sh, &s);
    } else if (inst->opcode == HL_OP_DOT && k < 2) {
      dot_operand_backward(inst, k, &v->sh, &s);
    } else if (inst->opcode == HL_OP_GATHER && k == 1) {
      int om[HL_MAX_RANK], im[HL_MAX_RANK], back[HL_MAX_RANK];
      if (!spmd_gather_maps(inst, om, im)) continue;
      for (int d = 0; d < op->shape.rank; d++) back[d] = -1;
      for (int j = 0; j < inst->shape.rank; j++)
        if (im[j] >= 0) back[im[j]] = j;
      spmd_map_dims(&v->sh, op->shape.rank, back, &s);
    } else if (inst->opcode == HL_OP_CONVOLUTION && k < 2) {
      const hl_conv_dims_t *cd = &inst->attrs.convolution_dimension_numbers;
      int map[HL_MAX_RANK];
      for (int d = 0; d < op->shape.rank; d++) map[d] = -1;
      if (k == 0) map[cd->input_batch_dimension] = (int)cd->output_batch_dimension;
      else map[cd->kernel_output_feature_dimension] = (int)cd->output_feature_dimension;
      uint32_t halo = k == 0 ? spmd_halo_dims(inst, &v->sh) : 0;
      for (int j = 0; j < inst->shape.rank; j++)
        if (halo >> j & 1) map[spmd_halo_operand_dim(inst, j)] = j;
      spmd_map_dims(&v->sh, op->shape.rank, map, &s);
    } else if (inst->opcode == HL_OP_REDUCE && k == 0 && inst->operand_count == 2) {
      int map[HL_MAX_RANK], j = 0;
      for (int d = 0; d < op->shape.rank; d++) {
        bool reduced = false;
        for (int r = 0; r < inst->attrs.dimensions.n; r++) reduced |= inst->attrs.dimensions.v[r] == d;
        map[d] = reduced ? -1 : j++;
      }
      spmd_map_dims(&v->sh, op->shape.rank, map, &s);
    } else {
      continue;
    }
    set(ov, &s, changed);
  }
}

static hl_status_t annotate(spmd_ctx_t *c, const hl_instruction_t *inst, const hl_sharding_t *sh,
                            spmd_value_t *v) {
  if (hl_shape_is_tuple(&inst->shape)) {
    if (!sh || sh->type != HL_SHARDING_TUPLE) {
      if (inst->opcode == HL_OP_PARAMETER && sh && sh->type != HL_SHARDING_REPLICATED)
        return HL_UNIMPL("%s: tuple-shaped entry parameter with an array sharding", hl_instruction_location(inst));
      return NULL;
    }
    if (sh->tuple_count != inst->shape.tuple_count)
      return HL_INVALID("%s: tuple sharding has %d elements for %d", hl_instruction_location(inst),
                        sh->tuple_count, inst->shape.tuple_count);
    if (inst->opcode == HL_OP_PARAMETER)
      return HL_UNIMPL("%s: tuple-shaped entry parameters are not partitioned yet", hl_instruction_location(inst));
    v->elems = hl_calloc((size_t)sh->tuple_count, sizeof(*v->elems));
    if (!v->elems) return HL_OOM();
    v->elem_count = sh->tuple_count;
    for (int k = 0; k < sh->tuple_count; k++) {
      const hl_shape_t *es = &inst->shape.tuple[k];
      if (hl_shape_is_tuple(es)) return HL_UNIMPL("%s: nested tuple sharding", hl_instruction_location(inst));
      HL_RETURN_IF_ERROR_CTX(hl_spmd_from_ir(&sh->tuple_shardings[k], es->rank, c->n, &v->elems[k]), "%s",
                             hl_instruction_location(inst));
    }
  } else {
    HL_RETURN_IF_ERROR_CTX(hl_spmd_from_ir(sh, inst->shape.rank, c->n, &v->sh), "%s", hl_instruction_location(inst));
  }
  v->known = v->fixed = true;
  return NULL;
}

hl_status_t spmd_propagate(spmd_ctx_t *c) {
  const hl_computation_t *e = c->entry;
  // Manual regions: from SPMDFullToShardShape (a per-partition view of its
  // operand) through everything computed from it, up to SPMDShardToFullShape.
  // Their values are already per partition; propagation leaves them alone.
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *inst = e->instructions[i];
    spmd_value_t *v = &c->val[i];
    bool manual = spmd_is_custom_call(inst, "SPMDFullToShardShape");
    if (!spmd_is_custom_call(inst, "SPMDShardToFullShape"))
      for (int k = 0; k < inst->operand_count; k++) manual |= c->val[inst->operands[k]->index].manual;
    if (!manual) continue;
    if (inst == e->root) return HL_UNIMPL("%s: a root inside a manual region", hl_instruction_location(inst));
    v->manual = v->known = v->fixed = true;
    hl_spmd_replicated(hl_shape_is_tuple(&inst->shape) ? 0 : inst->shape.rank, c->n, &v->sh);
  }
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *inst = e->instructions[i];
    if (c->val[i].manual) continue;
    if (inst->opcode == HL_OP_PARAMETER || is_sharding_call(inst) ||
        (inst == e->root && inst->attrs.sharding) || spmd_is_custom_call(inst, "SPMDShardToFullShape"))
      HL_RETURN_IF_ERROR(annotate(c, inst, inst->attrs.sharding, &c->val[i]));
    // A scalar is whole on every partition whatever it is given: replicated
    // from the start, so tuples holding one (a loop counter) are known as
    // soon as their arrays are.
    if (!c->val[i].known && !c->val[i].manual && !hl_shape_is_tuple(&inst->shape) && inst->shape.rank == 0) {
      hl_spmd_replicated(0, c->n, &c->val[i].sh);
      c->val[i].known = true;
    }
    if (inst->opcode == HL_OP_TUPLE && !c->val[i].known && !c->val[i].manual) {  // elements follow the operands
      c->val[i].elems = hl_calloc((size_t)inst->operand_count + 1, sizeof(hl_spmd_sharding_t));
      if (!c->val[i].elems) return HL_OOM();
      c->val[i].elem_count = inst->operand_count;
    }
  }
  for (int round = 0; round < 8; round++) {
    bool changed = false;
    for (int i = 0; i < e->instruction_count; i++) {
      HL_RETURN_IF_ERROR(forward(c, i, &changed));
      const hl_instruction_t *inst = e->instructions[i];
      spmd_value_t *v = &c->val[i];
      if (inst->opcode == HL_OP_TUPLE && !v->fixed) {
        bool all = true;
        for (int k = 0; k < inst->operand_count; k++) {
          const spmd_value_t *o = &c->val[inst->operands[k]->index];
          if (o->known && !o->elem_count) v->elems[k] = o->sh;
          else all = false;
        }
        if (all && !v->known) set(v, &v->sh, &changed);
      }
      // A while's result: the shardings its loop state keeps (the fixed
      // point over the body from the init's, as spmd_lower_while holds it).
      // A conditional's result: the branches' common root sharding
      // (spmd_lower_conditional's), once its operands' are known.
      if (inst->opcode == HL_OP_CONDITIONAL && !v->known && !v->manual) {
        static _Thread_local hl_spmd_sharding_t R[SPMD_MAX_TUPLE];
        bool ok;
        HL_RETURN_IF_ERROR(spmd_conditional_result(c, i, R, &ok));
        if (ok && hl_shape_is_tuple(&inst->shape)) {
          v->elems = hl_calloc((size_t)inst->shape.tuple_count + 1, sizeof(*v->elems));
          if (!v->elems) return HL_OOM();
          v->elem_count = inst->shape.tuple_count;
          memcpy(v->elems, R, (size_t)v->elem_count * sizeof(*R));
          set(v, &v->sh, &changed);
        } else if (ok) {
          set(v, &R[0], &changed);
        }
      }
      if (inst->opcode == HL_OP_WHILE && !v->known && !v->manual) {
        static _Thread_local hl_spmd_sharding_t S[SPMD_MAX_TUPLE];
        bool ok;
        HL_RETURN_IF_ERROR(spmd_while_state(c, i, S, &ok));
        if (ok) {
          v->elems = hl_calloc((size_t)inst->shape.tuple_count + 1, sizeof(*v->elems));
          if (!v->elems) return HL_OOM();
          v->elem_count = inst->shape.tuple_count;
          memcpy(v->elems, S, (size_t)v->elem_count * sizeof(*S));
          set(v, &v->sh, &changed);
        }
      }
    }
    for (int i = e->instruction_count - 1; i >= 0; i--) backward(c, i, &changed);
    // Settled with a loop state or a branch operand still unknown: the
    // unknown arrays in it (a tuple instruction's elements) take what they
    // get in the end anyway (replicated), so the loop's or conditional's
    // result and its users can follow.
    for (int i = 0; i < e->instruction_count && !changed; i++) {
      const hl_instruction_t *inst = e->instructions[i];
      bool loop = inst->opcode == HL_OP_WHILE, cond = inst->opcode == HL_OP_CONDITIONAL;
      if ((!loop && !cond) || c->val[i].known || c->val[i].manual) continue;
      for (int o = cond ? 1 : 0; o < (cond ? inst->operand_count : 1); o++) {
        const hl_instruction_t *op = inst->operands[o];
        int count = op->opcode == HL_OP_TUPLE ? op->operand_count : 1;
        for (int k = 0; k < count; k++) {
          const hl_instruction_t *x = op->opcode == HL_OP_TUPLE ? op->operands[k] : op;
          spmd_value_t *ov = &c->val[x->index];
          if (ov->known || hl_shape_is_tuple(&x->shape)) continue;
          hl_spmd_replicated(x->shape.rank, c->n, &ov->sh);
          set(ov, &ov->sh, &changed);
        }
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *inst = e->instructions[i];
    spmd_value_t *v = &c->val[i];
    if (!v->known && !hl_shape_is_tuple(&inst->shape)) hl_spmd_replicated(inst->shape.rank, c->n, &v->sh);
    v->known = true;
  }
  return NULL;
}
