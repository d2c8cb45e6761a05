// Blocked fusion programs: compile (instructions -> nodes with their index
// maps resolved) and plan (blocks, arena bound, JIT regions, copy programs).
// Running them: fusion_program_run.c; the JIT regions: fusion_program_jit.c.
#include "runtime/fusion/fusion_program.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_program_internal.h"
#include "runtime/fusion/fusion_rows.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/reducer_match.h"

//===----------------------------------------------------------------------===//
// Compile
//===----------------------------------------------------------------------===//

static bool real_type(hl_dtype_t t) {
  return hl_dtype_is_integer(t) || t == HL_PRED || hl_dtype_is_float(t);
}

static bool iota_type(hl_dtype_t t) { return hl_dtype_is_integer(t) || t == HL_F32 || t == HL_F64; }

// Fills node n for instruction inst (operand nodes already mapped in
// index_of); returns the reason when not covered.
static const char *compile_node(const hl_instruction_t *inst, const int *index_of,
                                const node_t *nodes, node_t *n) {
  const hl_shape_t *s = &inst->shape;
  if (!hl_shape_is_array(s) || !real_type(s->dtype)) return "a non-real or non-array value";
  memset(n, 0, sizeof(*n));
  n->op = inst->opcode;
  n->dtype = s->dtype;
  n->es = hl_dtype_size(s->dtype);
  n->rank = s->rank;
  memcpy(n->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
  n->count = hl_shape_element_count(s);
  if (s->dynamic_mask) return "a dynamic shape";
  n->nops = inst->operand_count;
  if (n->nops > 3) return "an instruction with more than 3 operands";
  for (int i = 0; i < n->nops; i++) {
    n->ops[i] = index_of[inst->operands[i]->index];
    if (n->ops[i] < 0) return "an operand outside the covered set";
  }
  const hl_shape_t *o0 = n->nops > 0 ? &inst->operands[0]->shape : NULL;
  const node_t *x = n->nops > 0 ? &nodes[n->ops[0]] : NULL;
  switch (inst->opcode) {
    case HL_OP_PARAMETER:
      n->kind = K_PARAM;
      n->param = (int)inst->attrs.parameter_number;
      return NULL;
    case HL_OP_CONSTANT: {
      const hl_literal_t *lit = inst->attrs.literal;
      if (!lit || !hl_shape_is_array(&lit->shape) || lit->shape.dtype != s->dtype ||
          !hl_shape_same_dims(&lit->shape, s))
        return "a constant whose literal does not match its shape";
      n->kind = K_CONST;
      n->data = lit->data;
      return NULL;
    }
    case HL_OP_CONVERT:
      if (!hl_shape_same_dims(o0, s)) return "convert with other dimensions";
      if (o0->dtype != s->dtype && !hl_convert_supported(o0->dtype, s->dtype))
        return "convert between these types";
      n->kind = o0->dtype == s->dtype ? K_SAME : K_CONVERT;
      n->in_dtype = o0->dtype;
      return NULL;
    case HL_OP_COMPARE: {
      const hl_shape_t *o1 = &inst->operands[1]->shape;
      if (!hl_shape_equal(o0, o1) || !hl_shape_same_dims(o0, s) || s->dtype != HL_PRED)
        return "compare with mismatched shapes";
      hl_comparison_type_t type = inst->attrs.comparison_type;
      if (type == HL_CMPTYPE_DEFAULT) type = hl_comparison_type_default(o0->dtype);
      if (!hl_compare_supported(inst->attrs.comparison_direction, type, o0->dtype))
        return "compare of this type";
      n->kind = K_COMPARE;
      n->dir = inst->attrs.comparison_direction;
      n->ctype = type;
      n->in_dtype = o0->dtype;
      return NULL;
    }
    case HL_OP_SELECT: {
      bool scalar_pred = o0->rank == 0;
      if (o0->dtype != HL_PRED || (!scalar_pred && !hl_shape_same_dims(o0, s)) ||
          !hl_shape_equal(&inst->operands[1]->shape, s) ||
          !hl_shape_equal(&inst->operands[2]->shape, s))
        return "select with mismatched shapes";
      n->kind = K_SELECT;
      n->scalar_op[0] = scalar_pred;
      return NULL;
    }
    case HL_OP_CLAMP: {
      const hl_shape_t *xs = &inst->operands[1]->shape, *hs = &inst->operands[2]->shape;
      if (!hl_shape_equal(xs, s) || o0->dtype != s->dtype || hs->dtype != s->dtype ||
          (o0->rank != 0 && !hl_shape_same_dims(o0, xs)) ||
          (hs->rank != 0 && !hl_shape_same_dims(hs, xs)) || !hl_clamp_supported(s->dtype))
        return "clamp with mismatched shapes";
      n->kind = K_CLAMP;
      n->scalar_op[0] = o0->rank == 0;
      n->scalar_op[2] = hs->rank == 0;
      return NULL;
    }
    case HL_OP_IOTA: {
      if (inst->attrs.dimensions.n != 1 || !iota_type(s->dtype)) return "iota of this type";
      int64_t id = inst->attrs.dimensions.v[0];
      if (id < 0 || id >= s->rank) return "iota with a bad dimension";
      n->kind = K_IOTA;
      n->iota_size = s->dims[id];
      n->iota_inner = 1;
      for (int d = (int)id + 1; d < s->rank; d++) n->iota_inner *= s->dims[d];
      return NULL;
    }
    case HL_OP_RESHAPE:
      if (o0->dtype != s->dtype || x->count != n->count) return "reshape with another size";
      n->kind = K_SAME;
      return NULL;
    case HL_OP_BITCAST:
    case HL_OP_COPY:
      // Between default layouts only: otherwise a layout change is a
      // transpose of the physical order, which the op-by-op path decides.
      if (o0->dtype != s->dtype || x->count != n->count || !hl_shape_has_default_layout(o0) ||
          !hl_shape_has_default_layout(s) ||
          (inst->opcode == HL_OP_COPY && !hl_shape_same_dims(o0, s)))
        return "bitcast or copy between layouts";
      n->kind = K_SAME;
      return NULL;
    case HL_OP_BROADCAST: {
      const hl_i64_list_t *dm = &inst->attrs.dimensions;
      if (o0->dtype != s->dtype || dm->n != o0->rank) return "broadcast with bad dimensions";
      if (x->count == 1 && n->count > 0) {
        n->kind = K_SPLAT;
        return NULL;
      }
      int64_t ostr[HL_MAX_RANK];
      strides_of(o0->rank, o0->dims, ostr);
      bool used[HL_MAX_RANK] = {false};
      for (int i = 0; i < dm->n; i++) {
        int64_t d = dm->v[i];
        if (d < 0 || d >= s->rank || used[d]) return "broadcast with bad dimensions";
        used[d] = true;
        if (o0->dims[i] == s->dims[d])
          n->stride[d] = ostr[i];
        else if (o0->dims[i] != 1)
          return "broadcast with bad dimensions";
      }
      n->kind = K_MAP;
      break;
    }
    case HL_OP_TRANSPOSE: {
      const hl_i64_list_t *perm = &inst->attrs.dimensions;
      if (o0->dtype != s->dtype || perm->n != o0->rank || s->rank != o0->rank)
        return "transpose with bad dimensions";
      int64_t ostr[HL_MAX_RANK];
      strides_of(o0->rank, o0->dims, ostr);
      bool seen[HL_MAX_RANK] = {false};
      for (int i = 0; i < perm->n; i++) {
        int64_t p = perm->v[i];
        if (p < 0 || p >= o0->rank || seen[p] || s->dims[i] != o0->dims[p])
          return "transpose with bad dimensions";
        seen[p] = true;
        n->stride[i] = ostr[p];
      }
      n->kind = K_MAP;
      break;
    }
    case HL_OP_SLICE: {
      if (o0->dtype != s->dtype || inst->attrs.slice_count != o0->rank || s->rank != o0->rank)
        return "slice with bad dimensions";
      int64_t ostr[HL_MAX_RANK];
      strides_of(o0->rank, o0->dims, ostr);
      for (int d = 0; d < o0->rank; d++) {
        const hl_slice_dim_t *sd = &inst->attrs.slice_dimensions[d];
        if (sd->start < 0 || sd->limit < sd->start || sd->limit > o0->dims[d] || sd->stride < 1)
          return "slice out of bounds";
        int64_t cnt = sd->limit == sd->start ? 0 : (sd->limit - sd->start - 1) / sd->stride + 1;
        if (cnt != s->dims[d]) return "slice with bad dimensions";
        n->offset += sd->start * ostr[d];
        n->stride[d] = ostr[d] * sd->stride;
      }
      n->kind = K_MAP;
      break;
    }
    case HL_OP_REVERSE: {
      if (o0->dtype != s->dtype || !hl_shape_same_dims(o0, s)) return "reverse with bad shapes";
      int64_t ostr[HL_MAX_RANK];
      strides_of(o0->rank, o0->dims, ostr);
      for (int d = 0; d < s->rank; d++) n->stride[d] = ostr[d];
      const hl_i64_list_t *dm = &inst->attrs.dimensions;
      bool seen[HL_MAX_RANK] = {false};
      for (int i = 0; i < dm->n; i++) {
        int64_t d = dm->v[i];
        if (d < 0 || d >= s->rank || seen[d]) return "reverse with bad dimensions";
        seen[d] = true;
        n->offset += (s->dims[d] - 1) * ostr[d];
        n->stride[d] = -ostr[d];
      }
      n->kind = K_MAP;
      break;
    }
    default:
      if (n->nops == 1 && hl_ew_unary_supported(inst->opcode, o0->dtype, s->dtype) &&
          hl_shape_same_dims(o0, s) && hl_opcode_arity(inst->opcode) == 1 &&
          inst->opcode != HL_OP_CONVERT) {
        n->kind = K_UNARY;
        n->in_dtype = o0->dtype;
        return NULL;
      }
      if (n->nops == 2 && hl_ew_binary_supported(inst->opcode, o0->dtype, s->dtype) &&
          inst->operands[1]->shape.dtype == o0->dtype && hl_shape_same_dims(o0, s) &&
          hl_shape_same_dims(&inst->operands[1]->shape, s)) {
        n->kind = K_BINARY;
        n->in_dtype = o0->dtype;
        return NULL;
      }
      return "an instruction the blocked path does not cover";
  }
  // K_MAP: is it the identity on linear indices plus an offset?
  int64_t rstr[HL_MAX_RANK];
  strides_of(s->rank, s->dims, rstr);
  n->contiguous = true;
  for (int d = 0; d < s->rank; d++)
    if (s->dims[d] > 1 && n->stride[d] != rstr[d]) n->contiguous = false;
  return NULL;
}

// A reduce root: single input, fast-path reducer, result of the kept dims.
static const char *compile_reduce(const hl_instruction_t *r, const int *index_of,
                                  const node_t *nodes, output_t *o, bool *reduced) {
  if (r->operand_count != 2) return "a variadic reduce";
  const hl_instruction_t *in = r->operands[0], *init = r->operands[1];
  int xi = index_of[in->index], ii = index_of[init->index];
  if (xi < 0 || ii < 0) return "a reduce of an uncovered operand";
  hl_dtype_t t = in->shape.dtype;
  if (init->shape.rank != 0 || init->shape.dtype != t || r->shape.dtype != t ||
      !hl_shape_is_array(&r->shape))
    return "a reduce with mismatched types";
  const hl_computation_t *reducer = hl_instruction_to_apply(r);
  if (!reducer || !hl_reduce_fast_fns(t, hl_simple_reducer_op(reducer, t), &o->fold, &o->combine))
    return "a reduce whose reducer is not a simple op";
  memset(reduced, 0, sizeof(bool) * HL_MAX_RANK);
  const hl_i64_list_t *dims = &r->attrs.dimensions;
  for (int i = 0; i < dims->n; i++) {
    int64_t d = dims->v[i];
    if (d < 0 || d >= in->shape.rank || reduced[d]) return "a reduce with bad dimensions";
    reduced[d] = true;
  }
  if (r->shape.rank != in->shape.rank - dims->n) return "a reduce with a bad result";
  for (int d = 0, j = 0; d < in->shape.rank; d++)
    if (!reduced[d] && r->shape.dims[j++] != in->shape.dims[d]) return "a reduce with a bad result";
  o->node = xi;
  o->init = ii;
  o->reduce = true;
  o->shape = &r->shape;
  return NULL;
}

// A row reduce read by other nodes of the program (fusion_rows.h): its
// values are the rows of its input folded with the reduce kernel's loop.
static const char *compile_row_reduce(const hl_instruction_t *r, const int *index_of,
                                      const node_t *nodes, node_t *n) {
  int64_t row;
  const char *why = hl_fusion_row_reduce_why(r, &row);
  if (why) return why;
  const hl_instruction_t *in = r->operands[0], *init = r->operands[1];
  int xi = index_of[in->index], ii = index_of[init->index];
  if (xi < 0 || ii < 0) return "a reduce of an uncovered operand";
  hl_dtype_t t = in->shape.dtype;
  if (init->shape.rank != 0 || init->shape.dtype != t) return "a reduce with mismatched types";
  memset(n, 0, sizeof(*n));
  n->kind = K_REDUCE;
  n->op = HL_OP_REDUCE;
  n->dtype = t;
  n->es = hl_dtype_size(t);
  n->rank = r->shape.rank;
  memcpy(n->dims, r->shape.dims, sizeof(int64_t) * (size_t)r->shape.rank);
  n->count = hl_shape_element_count(&r->shape);
  if (n->count * row != nodes[xi].count) return "a reduce with a bad result";
  n->nops = 2;
  n->ops[0] = xi;
  n->ops[1] = ii;
  n->scalar_op[1] = true;
  n->row = row;
  hl_reduce_run_fn combine;
  hl_reduce_fast_fns(t, hl_simple_reducer_op(hl_instruction_to_apply(r), t), &n->fold, &combine);
  return NULL;
}

// Programs with row reduces read inside: blocks of whole rows, each row
// reduce read only at the block's rows (fusion_rows.h).
static hl_status_t plan_rows(hl_fusion_program_t *p, const char **why) {
  int64_t row = 0;
  *why = NULL;
  for (int k = 0; k < p->count && !*why; k++) {
    const node_t *n = &p->nodes[k];
    if (n->kind != K_REDUCE) continue;
    if (row && n->row != row) *why = "row reduces of different row lengths";
    row = n->row;
  }
  if (!row || *why) return NULL;
  hl_rows_value_t *v = hl_calloc((size_t)p->count, sizeof(*v));
  int *outs = hl_malloc(sizeof(int) * (size_t)(p->out_count ? p->out_count : 1));
  if (!v || !outs) {
    hl_free(v);
    hl_free(outs);
    return HL_OOM();
  }
  for (int k = 0; k < p->count; k++) {
    const node_t *n = &p->nodes[k];
    v[k].nops = n->nops;
    v[k].ops = n->ops;
    for (int i = 0; i < n->nops; i++) {
      hl_rows_edge_t e = n->scalar_op[i] ? HL_ROWS_ONE : HL_ROWS_SAME;
      int64_t f = 0;
      if (n->kind == K_SPLAT) {
        e = HL_ROWS_ONE;
      } else if (n->kind == K_REDUCE) {
        e = i == 0 ? HL_ROWS_GATHER : HL_ROWS_ONE;
        f = n->row;
      } else if (n->kind == K_MAP && !(n->contiguous && n->offset == 0)) {
        f = hl_fusion_row_broadcast(n->rank, n->dims, n->stride, n->offset,
                                    p->nodes[n->ops[0]].count);
        e = f ? HL_ROWS_SPREAD : HL_ROWS_OTHER;
      }
      v[k].edge[i] = e;
      v[k].factor[i] = f;
    }
    v[k].row_reduce = n->kind == K_REDUCE;
  }
  for (int i = 0; i < p->out_count; i++) outs[i] = p->outs[i].node;
  *why = hl_fusion_rows_plan(v, p->count, outs, p->out_count, p->total, row);
  hl_free(v);
  hl_free(outs);
  // Blocks of whole rows: with reduce outputs, their runs (each its own
  // output) must be these rows.
  if (!*why && p->has_reduce && (!p->parallel || p->run_len != row))
    *why = "reduce outputs over other rows than the row reduces read inside";
  if (!*why && !p->has_reduce && p->total % row) *why = "outputs not made of whole rows";
  if (!*why) p->row = row;
  return NULL;
}

// Arena bytes one evaluation of node k over m elements may take.
static size_t eval_bytes(const node_t *n, int64_t m) {
  // Values, an index array, and per-run pieces of map_runs (runs of >= 8
  // elements: two index entries per run, 128 bytes of rounding per call, at
  // most four nested levels).
  return (size_t)m * (n->es + sizeof(int64_t) + 16) + 256;
}

// Evaluations per block: a node reached through element-wise edges from an
// output at the block's own range is evaluated once (memoized); through an
// index map, once per path.
static bool size_arena(hl_fusion_program_t *p, int64_t m) {
  int c = p->count;
  bool *at_root = hl_calloc((size_t)c, sizeof(bool));
  double *other = hl_calloc((size_t)c, sizeof(double));
  if (!at_root || !other) {
    hl_free(at_root);
    hl_free(other);
    return false;
  }
  for (int i = 0; i < p->out_count; i++) {
    at_root[p->outs[i].node] = true;
    if (p->outs[i].reduce) other[p->outs[i].init] += 1;
  }
  for (int k = c - 1; k >= 0; k--) {
    const node_t *n = &p->nodes[k];
    bool elementwise = n->kind != K_MAP && n->kind != K_SPLAT;
    for (int i = 0; i < n->nops; i++) {
      int o = n->ops[i];
      bool scalar = n->scalar_op[i] || n->kind == K_SPLAT;
      if (n->kind == K_REDUCE && !scalar) {
        at_root[o] = true;  // plan_rows: evaluated over the block's own range, once
      } else if (scalar) {
        other[o] += (at_root[k] ? 1 : 0) + other[k];
      } else if (elementwise) {
        if (at_root[k]) at_root[o] = true;
        other[o] += other[k];
      } else {
        other[o] += (at_root[k] ? 1 : 0) + other[k];
      }
    }
  }
  double total = 0;
  for (int k = 0; k < c; k++)
    total += ((at_root[k] ? 1 : 0) + other[k]) * (double)eval_bytes(&p->nodes[k], m);
  hl_free(at_root);
  hl_free(other);
  if (total > (double)MAX_ARENA) return false;
  p->arena_bytes = (size_t)total + 4096;
  return true;
}

// Nodes with one operand edge in the whole program that are not outputs
// (nor reduce inits): their user may release their block buffer.
static void mark_single_use(hl_fusion_program_t *p) {
  int uses_local[256];
  int *uses = p->count <= 256 ? uses_local : hl_calloc((size_t)p->count, sizeof(int));
  if (!uses) return;  // no reuse: every value keeps its buffer until the block ends
  memset(uses, 0, sizeof(int) * (size_t)(p->count <= 256 ? 256 : 0));
  for (int k = 0; k < p->count; k++)
    for (int i = 0; i < p->nodes[k].nops; i++) uses[p->nodes[k].ops[i]]++;
  for (int i = 0; i < p->out_count; i++) {
    uses[p->outs[i].node] += 2;
    if (p->outs[i].reduce) uses[p->outs[i].init] += 2;
  }
  for (int k = 0; k < p->count; k++) p->nodes[k].single_use = uses[k] == 1;
  if (uses != uses_local) hl_free(uses);
}

// The reduce kernel's segments of the input dims (reduce.c reduce_fast).
static void make_segments(hl_fusion_program_t *p, const hl_shape_t *xs, const bool *reduced) {
  int ns = 0;
  for (int d = 0; d < xs->rank; d++) {
    if (xs->dims[d] == 1) continue;
    if (ns > 0 && p->seg[ns - 1].reduced == reduced[d])
      p->seg[ns - 1].size *= xs->dims[d];
    else
      p->seg[ns++] = (segment_t){xs->dims[d], reduced[d], 0};
  }
  if (ns == 0) p->seg[ns++] = (segment_t){1, false, 0};
  int64_t stride = 1;
  for (int k = ns - 1; k >= 0; k--) {
    if (p->seg[k].reduced) continue;
    p->seg[k].out_stride = stride;
    stride *= p->seg[k].size;
  }
  p->nseg = ns;
  p->run_len = p->seg[ns - 1].size;
  // Runs land on distinct outputs when only the minor segment is reduced.
  bool parallel = true;
  for (int k = 0; k < ns - 1; k++)
    if (p->seg[k].reduced) parallel = false;
  if (!p->seg[ns - 1].reduced && ns > 1) parallel = false;
  p->parallel = parallel;
}

// Nodes that compute values (not parameters, constants or index maps).
static int arithmetic_nodes(const hl_fusion_program_t *p) {
  int n = 0;
  for (int k = 0; k < p->count; k++) {
    kind_t kd = p->nodes[k].kind;
    n += kd == K_UNARY || kd == K_BINARY || kd == K_COMPARE || kd == K_SELECT ||
         kd == K_CLAMP || kd == K_CONVERT || kd == K_IOTA;
  }
  return n;
}

// Blocks of a program that only moves a parameter: about this many
// elements, and at least 32 whole rows (the strided copy engine's tile).
enum { COPY_BLOCK_ELEMS = 16384, COPY_MIN_ROWS = 32 };

// A program whose one array output is an index map of a parameter copies
// blocks of whole rows (hl_fusion_program_t.copy_row): a transpose in cache
// tiles with register transposes runs several times faster than blocks of
// the output that gather a strided column each.
static void plan_copy(hl_fusion_program_t *p) {
  if (p->has_reduce || p->tuple || p->out_count != 1 || p->outs[0].reduce) return;
  const node_t *n = &p->nodes[p->outs[0].node];
  if (n->kind != K_MAP || n->nops != 1 || p->nodes[n->ops[0]].kind != K_PARAM || n->rank < 2 ||
      n->dims[0] <= 0)
    return;
  int64_t row = n->count / n->dims[0];
  if (row <= 0) return;
  int64_t rows = COPY_BLOCK_ELEMS / row;
  if (rows < COPY_MIN_ROWS) rows = COPY_MIN_ROWS;
  p->copy_row = row;
  p->block_runs = rows * row;  // run_len is 1: a run is an element
}

hl_status_t hl_fusion_program_compile(const hl_computation_t *c, hl_fusion_program_t **out,
                                      const char **why) {
  *out = NULL;
  *why = NULL;
  int n = c->instruction_count;
  hl_fusion_program_t *p = hl_calloc(1, sizeof(*p));
  int *index_of = hl_malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (p) p->nodes = hl_calloc((size_t)(n ? n : 1), sizeof(node_t));
  if (p)
    p->outs = hl_calloc(
        (size_t)(c->root && c->root->shape.dtype == HL_TUPLE ? c->root->operand_count + 1 : 1),
        sizeof(output_t));
  if (!p || !index_of || !p->nodes || !p->outs) {
    hl_free(index_of);
    hl_fusion_program_destroy(p);
    return HL_OOM();
  }
  const char *reason = NULL;
  const hl_instruction_t *root = c->root;
  bool tuple_root = root && root->opcode == HL_OP_TUPLE;
  // Reduces read by other instructions than the root tuple: row reduces
  // read back inside the program (compile_row_reduce), not outputs.
  bool *inside = hl_calloc((size_t)(n ? n : 1), sizeof(bool));
  if (!inside) {
    hl_free(index_of);
    hl_fusion_program_destroy(p);
    return HL_OOM();
  }
  for (int i = 0; i < n; i++) {
    const hl_instruction_t *inst = c->instructions[i];
    for (int j = 0; j < inst->operand_count && !(inst == root && tuple_root); j++)
      if (inst->operands[j]->opcode == HL_OP_REDUCE && inst->operands[j]->parent == c)
        inside[inst->operands[j]->index] = true;
  }
  for (int i = 0; i < n && !reason; i++) {
    const hl_instruction_t *inst = c->instructions[i];
    index_of[i] = -1;
    if (inst->control_predecessor_count)
      reason = "control dependencies";
    else if ((inst->opcode == HL_OP_REDUCE && !inside[i]) || (inst == root && tuple_root))
      continue;
    else if (inst->opcode == HL_OP_REDUCE)
      reason = compile_row_reduce(inst, index_of, p->nodes, &p->nodes[p->count]);
    else
      reason = compile_node(inst, index_of, p->nodes, &p->nodes[p->count]);
    if (!reason) index_of[i] = p->count++;
  }
  if (!reason && !root) reason = "no root";
  // Outputs: arrays of one shape, reduces of one input shape (a reduce read
  // inside is a row reduce node, not an output).
  bool reduced[HL_MAX_RANK] = {false}, reduced0[HL_MAX_RANK] = {false};
  const hl_shape_t *space = NULL;
  int outs = tuple_root ? root->operand_count : 1;
  for (int i = 0; i < outs && !reason; i++) {
    const hl_instruction_t *o = tuple_root ? root->operands[i] : root;
    output_t *po = &p->outs[p->out_count];
    if (o->opcode == HL_OP_REDUCE && inside[o->index]) {
      reason = "a reduce both read inside the fusion and an output";
      break;
    }
    if (o->opcode == HL_OP_REDUCE) {
      reason = compile_reduce(o, index_of, p->nodes, po, reduced);
      if (reason) break;
      const hl_shape_t *xs = &o->operands[0]->shape;
      if (!p->has_reduce) {
        memcpy(reduced0, reduced, sizeof(reduced));
        if (space && !hl_shape_same_dims(space, xs)) reason = "outputs of different shapes";
        space = xs;
        p->has_reduce = true;
      } else if (!hl_shape_same_dims(space, xs) || memcmp(reduced, reduced0, sizeof(reduced))) {
        reason = "reduces of different shapes";
      }
    } else {
      int k = index_of[o->index];
      if (k < 0) {
        reason = "an uncovered output";
        break;
      }
      *po = (output_t){.node = k, .shape = &o->shape};
      if (space && !hl_shape_same_dims(space, &o->shape)) reason = "outputs of different shapes";
      if (!space) space = &o->shape;
    }
    p->out_count++;
  }
  for (int i = 0; i < n && !reason; i++)
    if (c->instructions[i]->opcode == HL_OP_TUPLE && c->instructions[i] != root)
      reason = "a tuple inside the fusion";
  for (int i = 0; i < c->parameter_count && !reason; i++)
    if (!c->parameters[i] || index_of[c->parameters[i]->index] < 0) reason = "a parameter";
  hl_free(index_of);
  hl_free(inside);
  if (reason) {
    hl_fusion_program_destroy(p);
    *why = reason;
    return NULL;
  }
  p->tuple = tuple_root;
  p->param_count = c->parameter_count;
  p->total = hl_shape_element_count(space);
  if (p->has_reduce) {
    make_segments(p, space, reduced0);
    if (p->run_len > MAX_RUN) {
      hl_fusion_program_destroy(p);
      *why = "a reduced row too long for one block";
      return NULL;
    }
  } else {
    p->run_len = 1;
    p->parallel = true;
  }
  hl_status_t st = plan_rows(p, why);
  if (st || *why) {
    hl_fusion_program_destroy(p);
    return st;
  }
  p->block_runs = p->run_len >= BLOCK_ELEMS ? 1 : BLOCK_ELEMS / p->run_len;
  // Row reduces read inside, no reduce output: blocks of whole rows.
  if (p->row && !p->has_reduce)
    p->block_runs = p->row * (p->row >= ROW_BLOCK_ELEMS ? 1 : ROW_BLOCK_ELEMS / p->row);
  p->ordered_pays = arithmetic_nodes(p) >= MIN_ORDERED_NODES;
  mark_single_use(p);
  if (!size_arena(p, p->block_runs * p->run_len)) {
    hl_fusion_program_destroy(p);
    *why = "too many re-evaluations through index maps";
    return NULL;
  }
  st = hl_fp_plan_jit_regions(p);
  if (st) {
    hl_fusion_program_destroy(p);
    return st;
  }
  plan_copy(p);  // after the arena: a copy program's blocks use none
  *out = p;
  return NULL;
}

hl_status_t hl_fusion_program_compile_chain(const hl_computation_t *c,
                                            const hl_instruction_t *const *members,
                                            int member_count,
                                            const hl_instruction_t *const *inputs,
                                            int input_count, hl_fusion_program_t **out,
                                            const char **why) {
  *out = NULL;
  *why = NULL;
  int n = c->instruction_count;
  hl_fusion_program_t *p = hl_calloc(1, sizeof(*p));
  int *index_of = hl_malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (p) p->nodes = hl_calloc((size_t)(input_count + member_count), sizeof(node_t));
  if (p) p->outs = hl_calloc(1, sizeof(output_t));
  if (!p || !index_of || !p->nodes || !p->outs) {
    hl_free(index_of);
    hl_fusion_program_destroy(p);
    return HL_OOM();
  }
  for (int i = 0; i < n; i++) index_of[i] = -1;
  const char *reason = member_count > 0 ? NULL : "an empty chain";
  // Inputs are the program's parameters, in the caller's order.
  for (int i = 0; i < input_count && !reason; i++) {
    const hl_shape_t *s = &inputs[i]->shape;
    if (!hl_shape_is_array(s) || !real_type(s->dtype) || s->dynamic_mask) {
      reason = "an input that is not a real array";
      break;
    }
    node_t *nd = &p->nodes[p->count];
    memset(nd, 0, sizeof(*nd));
    nd->kind = K_PARAM;
    nd->op = HL_OP_PARAMETER;
    nd->dtype = s->dtype;
    nd->es = hl_dtype_size(s->dtype);
    nd->rank = s->rank;
    memcpy(nd->dims, s->dims, sizeof(int64_t) * (size_t)s->rank);
    nd->count = hl_shape_element_count(s);
    nd->param = i;
    index_of[inputs[i]->index] = p->count++;
  }
  for (int i = 0; i < member_count && !reason; i++) {
    const hl_instruction_t *inst = members[i];
    if (inst->opcode == HL_OP_PARAMETER || inst->opcode == HL_OP_REDUCE)
      reason = "a parameter or reduce in a chain";
    else if ((reason = compile_node(inst, index_of, p->nodes, &p->nodes[p->count])) == NULL)
      index_of[inst->index] = p->count++;
  }
  const hl_instruction_t *root = member_count > 0 ? members[member_count - 1] : NULL;
  if (!reason) {
    p->outs[0] = (output_t){.node = index_of[root->index], .shape = &root->shape};
    p->out_count = 1;
  }
  hl_free(index_of);
  if (reason) {
    hl_fusion_program_destroy(p);
    *why = reason;
    return NULL;
  }
  p->param_count = input_count;
  p->total = hl_shape_element_count(&root->shape);
  p->run_len = 1;
  p->parallel = true;
  p->block_runs = BLOCK_ELEMS;
  mark_single_use(p);
  if (!size_arena(p, p->block_runs)) {
    hl_fusion_program_destroy(p);
    *why = "too many re-evaluations through index maps";
    return NULL;
  }
  hl_status_t st = hl_fp_plan_jit_regions(p);
  if (st) {
    hl_fusion_program_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

void hl_fusion_program_destroy(hl_fusion_program_t *p) {
  if (!p) return;
  hl_fusion_workspaces_destroy(p->own);
  for (int k = 0; p->nodes && k < p->count; k++) hl_fp_jit_region_destroy(p->nodes[k].jit);
  hl_free(p->nodes);
  hl_free(p->outs);
  hl_free(p);
}

int64_t hl_fusion_program_block_elements(const hl_fusion_program_t *p) {
  return p->block_runs * p->run_len;
}
