// Blocked fusion programs: compile (instructions -> nodes with their index
// maps resolved) and run (per block, each output pulls its operands through
// eval(), which memoizes contiguous evaluations and allocates from a
// per-worker bump arena reset after every block).
#include "runtime/fusion/fusion_program.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_rows.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/kernels/elementwise_arrays.h"
#include "runtime/kernels/reduce_fast.h"
#include "runtime/kernels/reducer_match.h"
#include "runtime/kernels/strided_copy.h"

// Target elements per block: 4 KiB of f32 per intermediate keeps a chain of
// a dozen intermediates within L2 while the per-block overhead stays small.
#define BLOCK_ELEMS 1024
// Target elements per block of a program with row reduces read inside
// (whole rows each): its per-block work (the row values' chain, a few
// elements long, evaluated node by node) is amortized over more rows; a
// layer norm over rows of 1024 ran 2.5x faster with 4 rows per block than
// with 1, and 16 KiB of f32 per intermediate still stays in L2.
#define ROW_BLOCK_ELEMS 4096
// Longest reduced row kept whole in one block (the fold must see the row
// contiguously to visit it in the reduce kernel's order).
#define MAX_RUN (INT64_C(1) << 22)
// Largest arena per worker.
#define MAX_ARENA ((size_t)256 << 20)
#define MAX_WORKERS 64
// Outputs of a program whose overlapping reductions run on several threads.
#define MAX_ORDERED_OUTPUTS 16
// Arithmetic nodes from which such a program runs on several threads: its
// blocks combine one after another into the same output row, which moves
// between cores each block, so a column sum of a convert (1 node, 128 Ki
// elements) ran 2.5x slower on 2 threads than on 1, while a GELU gradient
// (about 40 nodes) ran 2x faster.
#define MIN_ORDERED_NODES 8

typedef enum kind {
  K_PARAM,
  K_CONST,
  K_UNARY,
  K_BINARY,
  K_COMPARE,
  K_SELECT,
  K_CLAMP,
  K_CONVERT,
  K_IOTA,
  K_SAME,   // same elements in the same row-major order (reshape, bitcast, copy)
  K_MAP,    // operand index = offset + sum_d idx[d] * stride[d]
  K_SPLAT,  // broadcast of a one-element operand
  K_REDUCE, // a row reduce read inside the program (fusion_rows.h): ops[0] folded per row
} kind_t;

typedef struct node {
  kind_t kind;
  hl_opcode_t op;
  hl_dtype_t dtype, in_dtype;
  size_t es;
  int nops;
  int ops[3];
  bool scalar_op[3];  // select pred / clamp bounds given as one element
  int rank;
  int64_t dims[HL_MAX_RANK];
  int64_t count;
  int64_t stride[HL_MAX_RANK], offset;  // K_MAP
  bool contiguous;                      // K_MAP: stride[] are the row-major strides
  hl_comparison_direction_t dir;        // K_COMPARE
  hl_comparison_type_t ctype;
  int64_t iota_inner, iota_size;  // K_IOTA
  int param;                      // K_PARAM
  const void *data;               // K_CONST
  bool single_use;                // one operand edge in the program and not an output:
                                  // its block value dies when that user has run
  struct jit_region *jit;         // compiled loop rooted here (see JIT regions), or NULL
  int64_t row;                    // K_REDUCE: elements per row of ops[0]
  hl_reduce_run_fn fold;          // K_REDUCE: the reduce kernel's fold
} node_t;

typedef struct output {
  int node;  // array output: the node; reduce: its input node
  bool reduce;
  int init;  // reduce: the init node (one element)
  hl_reduce_run_fn fold, combine;
  const hl_shape_t *shape;
} output_t;

typedef struct segment {
  int64_t size;
  bool reduced;
  int64_t out_stride;
} segment_t;

typedef struct workspace {
  char *arena;
  size_t used, cap;
  void **extra;  // blocks beyond the arena (see arena_alloc), freed per block
  int extra_count, extra_cap;
  uint64_t gen;
  uint64_t *memo_gen;
  int64_t *memo_start, *memo_m;
  const void **memo_ptr;
  bool *memo_owned;  // memo_ptr is an arena buffer this node's evaluation allocated
  // Arena buffers whose values died in this block (see release_operands), so
  // a chain of element-wise ops cycles through a few L1-resident buffers
  // instead of one fresh buffer per op.
  struct {
    void *ptr;
    size_t bytes;
  } free_list[32];
  int free_count;
  bool stream;  // this run's array outputs are written with streaming stores
  size_t extra_bytes;  // bytes of `extra` this block
  int memo_cap;        // nodes the memo arrays hold
} workspace_t;

// One workspace per worker, shared by the programs that use the set (an
// executable's: its instructions run one at a time, so its programs never
// run at once). A workspace holds an arena of what the largest block of
// any of them took, not an upper bound per program.
struct hl_fusion_workspaces {
  workspace_t *ws[MAX_WORKERS];
};

struct hl_fusion_program {
  node_t *nodes;
  int count;
  int param_count;
  output_t *outs;
  int out_count;
  bool tuple;
  // Iteration space: the dimensions of the array outputs / the reduce input.
  int64_t total;
  bool has_reduce;
  segment_t seg[HL_MAX_RANK + 1];
  int nseg;
  int64_t run_len;     // elements per run (reduce: the merged minor segment)
  int64_t block_runs;  // runs per block (1 run = 1 element without reduce)
  bool parallel;       // blocks write disjoint outputs
  // Overlapping reductions (!parallel) are worth threads: enough arithmetic
  // per element to outweigh handing the accumulator row between cores.
  bool ordered_pays;
  size_t arena_bytes;
  // > 0: the program moves a parameter's elements and computes nothing (its
  // one output an index map of a parameter: a transpose, broadcast or slice,
  // such as XLA's layout-copy fusions in front of dots). Its blocks are then
  // whole output rows of copy_row elements, each copied by the kernels'
  // strided copy engine (tiled register transposes), not gathered element
  // by element through the index map.
  int64_t copy_row;
  hl_fusion_workspaces_t *set;  // the workspaces runs use: own, or shared
  hl_fusion_workspaces_t *own;  // made at the first run unless shared before
  // > 0: row reduces read inside the program (K_REDUCE nodes) fold rows of
  // this many elements; blocks are whole rows (fusion_rows.h).
  int64_t row;
};

//===----------------------------------------------------------------------===//
// Compile
//===----------------------------------------------------------------------===//

static bool real_type(hl_dtype_t t) {
  return hl_dtype_is_integer(t) || t == HL_PRED || hl_dtype_is_float(t);
}

// Row-major strides of dims.
static void strides_of(int rank, const int64_t *dims, int64_t *str) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    str[d] = s;
    s *= dims[d];
  }
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

//===----------------------------------------------------------------------===//
// JIT regions (runtime/fusion/jit)
//
// Covered (jit_body.h): f32 / f64 / bf16 / f16 add, subtract, multiply,
// divide, maximum, minimum, negate, abs, sqrt, floor, ceil (f32 also
// rsqrt), and the transcendentals vmath runs (exp, log, tanh, pow, atan2,
// ...: its SLEEF routine called from the loop); integers of every width,
// signed and unsigned: add, subtract, multiply, divide, remainder, maximum,
// minimum, negate, abs, and, or, xor, not, the three shifts; compare (FLOAT
// for floats, SIGNED / UNSIGNED as the integer type is) feeding select;
// clamp (a bound given as one element read once); converts between any two
// of those types; iota; and reshape-like aliases.
// A covered node whose value leaves the covered set (an output, or read by
// any other node) roots a region: one compiled loop over the covered nodes
// only it reads, whose leaves (any other node) the interpreter evaluates as
// before, except a broadcast scalar (read as its one element) and index
// maps that repeat long rows (jit_row_leaf: read in place per row). Where a
// region does not compile, its nodes run interpreted.
//===----------------------------------------------------------------------===//

// How the loop reads a leaf: its values over the block; one element (the
// operand of a K_SPLAT); or, for an index map that repeats rows (a
// broadcast of a row or column vector, a slice: see jit_row_leaf), per row
// of the block: a contiguous run of its operand, or one element of it.
enum { LEAF_BLOCK, LEAF_SCALAR, LEAF_ROW, LEAF_COL };

typedef struct jit_region {
  hl_jit_kernel_t *kernel;
  int leaf_count;
  int leaf[HL_JIT_MAX_INPUTS];     // nodes evaluated over the block (scalar: one element)
  bool scalar[HL_JIT_MAX_INPUTS];  // the operand of a K_SPLAT, read once
  unsigned char kind[HL_JIT_MAX_INPUTS];  // LEAF_*
  // > 0: leaves read per row (LEAF_ROW / LEAF_COL): the loop runs once per
  // piece of a row of row_len elements in the block.
  int64_t row_len;
  // The loop calls vmath's vector routines: its pieces must keep their
  // 8-lane groups where the interpreter has them (from the block's start).
  bool calls;
} jit_region_t;

// Rows at least this long are read per row (map_runs' rule: shorter rows
// cost more in calls than materializing the leaf).
#define JIT_MIN_ROW 64

static void jit_region_destroy(jit_region_t *r) {
  if (!r) return;
  hl_jit_kernel_destroy(r->kernel);
  hl_free(r);
}

static bool jit_type_of(hl_dtype_t t, hl_jit_type_t *out) {
  switch (t) {
    case HL_F32: *out = HL_JIT_F32; return true;
    case HL_F64: *out = HL_JIT_F64; return true;
    case HL_BF16: *out = HL_JIT_BF16; return true;
    case HL_F16: *out = HL_JIT_F16; return true;
    case HL_S8: *out = HL_JIT_S8; return true;
    case HL_S16: *out = HL_JIT_S16; return true;
    case HL_S32: *out = HL_JIT_S32; return true;
    case HL_S64: *out = HL_JIT_S64; return true;
    case HL_U8: *out = HL_JIT_U8; return true;
    case HL_U16: *out = HL_JIT_U16; return true;
    case HL_U32: *out = HL_JIT_U32; return true;
    case HL_U64: *out = HL_JIT_U64; return true;
    default: return false;
  }
}

// The vmath routine of a transcendental in the loop: SLEEF's vector routine
// the array loops call (f32's for the 16-bit types, as they compute there),
// or their scalar one; name[] identifies it in the generated code.
static bool jit_routine(hl_opcode_t op, hl_jit_type_t t, hl_jit_value_t *v, char *name,
                        size_t cap) {
  hl_vmath_fn_t vf = hl_ew_vmath_fn(op);
  if (!vf) return false;
  bool f64 = t == HL_JIT_F64, binary = vf == HL_VM_POW || vf == HL_VM_ATAN2;
  if (binary) {
    v->fn = f64 ? hl_vmath_binary_vector_f64(vf) : hl_vmath_binary_vector_f32(vf);
    v->scalar_fn = v->fn ? NULL : f64 ? hl_vmath_binary_scalar_f64(vf)
                                      : hl_vmath_binary_scalar_f32(vf);
  } else {
    v->fn = f64 ? hl_vmath_unary_vector_f64(vf) : hl_vmath_unary_vector_f32(vf);
    v->scalar_fn = v->fn ? NULL : f64 ? hl_vmath_unary_scalar_f64(vf)
                                      : hl_vmath_unary_scalar_f32(vf);
  }
  if (!v->fn && !v->scalar_fn) return false;
  snprintf(name, cap, "hl_vmath_%d_%s_%s", (int)vf, f64 ? "f64" : "f32",
           v->fn ? "vector" : "scalar");
  v->fn_name = name;
  v->op = binary ? HL_JIT_CALL2 : HL_JIT_CALL;
  return true;
}

// The operation (*v: op, routine) and lane type of node n when the JIT
// covers it (op HL_JIT_LOAD for an alias).
static bool jit_covers(const node_t *n, hl_jit_value_t *v, hl_jit_type_t *type, char *name,
                       size_t cap) {
  hl_dtype_t t = n->kind == K_COMPARE ? n->in_dtype : n->dtype;
  if (!jit_type_of(t, type)) return false;
  bool fl = hl_jit_type_is_float(*type);
  bool sgn = *type >= HL_JIT_S8 && *type <= HL_JIT_S64;
  memset(v, 0, sizeof(*v));
  switch (n->kind) {
    case K_SAME: v->op = HL_JIT_LOAD; return true;
    case K_SELECT: v->op = HL_JIT_SELECT; return !n->scalar_op[0];
    case K_UNARY:
      if (n->in_dtype != n->dtype) return false;
      if (fl && jit_routine(n->op, *type, v, name, cap)) return true;
      switch (n->op) {
        case HL_OP_NEGATE: v->op = HL_JIT_NEG; return true;
        case HL_OP_ABS: v->op = HL_JIT_ABS; return true;
        case HL_OP_SQRT: v->op = HL_JIT_SQRT; return fl;
        // The kernels' f64 floor / ceil go through double (the same bits).
        case HL_OP_FLOOR: v->op = HL_JIT_FLOOR; return fl;
        case HL_OP_CEIL: v->op = HL_JIT_CEIL; return fl;
        case HL_OP_RSQRT: v->op = HL_JIT_RSQRT; return *type == HL_JIT_F32;
        case HL_OP_NOT: v->op = HL_JIT_NOT; return !fl;
        default: return false;
      }
    case K_BINARY:
      if (n->in_dtype != n->dtype) return false;
      if (fl && jit_routine(n->op, *type, v, name, cap)) return true;  // pow, atan2
      switch (n->op) {
        case HL_OP_ADD: v->op = HL_JIT_ADD; return true;
        case HL_OP_SUBTRACT: v->op = HL_JIT_SUB; return true;
        case HL_OP_MULTIPLY: v->op = HL_JIT_MUL; return true;
        case HL_OP_DIVIDE: v->op = HL_JIT_DIV; return true;
        case HL_OP_MAXIMUM: v->op = HL_JIT_MAX; return true;
        case HL_OP_MINIMUM: v->op = HL_JIT_MIN; return true;
        case HL_OP_REMAINDER: v->op = HL_JIT_REM; return !fl;
        case HL_OP_AND: v->op = HL_JIT_AND; return !fl;
        case HL_OP_OR: v->op = HL_JIT_OR; return !fl;
        case HL_OP_XOR: v->op = HL_JIT_XOR; return !fl;
        case HL_OP_SHIFT_LEFT: v->op = HL_JIT_SHL; return !fl;
        case HL_OP_SHIFT_RIGHT_ARITHMETIC: v->op = HL_JIT_SRA; return !fl;
        case HL_OP_SHIFT_RIGHT_LOGICAL: v->op = HL_JIT_SRL; return !fl;
        default: return false;
      }
    case K_COMPARE:
      if (fl ? n->ctype != HL_CMPTYPE_FLOAT
             : n->ctype != (sgn ? HL_CMPTYPE_SIGNED : HL_CMPTYPE_UNSIGNED))
        return false;
      switch (n->dir) {
        case HL_CMP_EQ: v->op = HL_JIT_CMP_EQ; return true;
        case HL_CMP_NE: v->op = HL_JIT_CMP_NE; return true;
        case HL_CMP_LT: v->op = HL_JIT_CMP_LT; return true;
        case HL_CMP_LE: v->op = HL_JIT_CMP_LE; return true;
        case HL_CMP_GT: v->op = HL_JIT_CMP_GT; return true;
        case HL_CMP_GE: v->op = HL_JIT_CMP_GE; return true;
        default: return false;
      }
    case K_CONVERT: {
      hl_jit_type_t from;
      v->op = HL_JIT_CONVERT;
      return jit_type_of(n->in_dtype, &from);
    }
    case K_CLAMP: v->op = HL_JIT_CLAMP; return true;
    case K_IOTA:
      v->op = HL_JIT_IOTA;
      v->iota_size = n->iota_size;
      v->iota_inner = n->iota_inner;
      return true;
    default: return false;
  }
}

// The type node u's loop reads its operands in (a convert: its source's).
static hl_jit_type_t jit_operand_type(const node_t *n, const hl_jit_type_t *type, int u) {
  hl_jit_type_t t = type[u];
  if (n->kind == K_CONVERT) jit_type_of(n->in_dtype, &t);
  return t;
}

typedef struct jit_builder {
  const hl_fusion_program_t *p;
  const bool *covered, *leaves_set;  // leaves_set: value read outside the covered set
  const hl_jit_value_t *tmpl;  // per node: its operation (jit_covers)
  const hl_jit_type_t *type;   // per covered node: its lane type
  int root;
  int *value_of;  // node -> value, -1
  hl_jit_value_t *values;
  hl_jit_body_t body;
  jit_region_t *region;
  bool full;
  bool no_rows;  // read every index map over the block
} jit_builder_t;

// HL_FUSION_JIT_ROWS=0 in the environment materializes every index map
// over the block, as before leaves were read per row (benchmarks compare).
static bool jit_rows_enabled(void) {
  static _Atomic int on = -1;
  int v = atomic_load_explicit(&on, memory_order_relaxed);
  if (v < 0) {
    const char *e = getenv("HL_FUSION_JIT_ROWS");
    v = !(e && strcmp(e, "0") == 0);
    atomic_store_explicit(&on, v, memory_order_relaxed);
  }
  return v;
}

// LEAF_ROW / LEAF_COL when node n is an index map whose rows are long
// and, along a row, either a contiguous run of its operand (stride 1: a
// broadcast of a row vector, a slice of columns) or one element (stride 0:
// a broadcast of a column vector); else LEAF_BLOCK.
static int jit_row_leaf(const node_t *n) {
  if (n->kind != K_MAP || n->contiguous || n->rank < 1) return LEAF_BLOCK;
  int64_t inner = n->dims[n->rank - 1], s = n->stride[n->rank - 1];
  if (inner < JIT_MIN_ROW || (s != 0 && s != 1)) return LEAF_BLOCK;
  return s == 0 ? LEAF_COL : LEAF_ROW;
}

static int jit_push(jit_builder_t *b, hl_jit_value_t v) {
  if (b->body.count == HL_JIT_MAX_VALUES) {
    b->full = true;
    return 0;
  }
  b->values[b->body.count] = v;
  return b->body.count++;
}

// A clamp's bound given as one element (node k of rank 0): an input read
// once, as the interpreter reads it.
static int jit_scalar_leaf(jit_builder_t *b, int k) {
  jit_region_t *r = b->region;
  if (r->leaf_count == HL_JIT_MAX_INPUTS) {
    b->full = true;
    return 0;
  }
  hl_jit_type_t t = HL_JIT_BODY_TYPE;
  jit_type_of(b->p->nodes[k].dtype, &t);
  int i = r->leaf_count++;
  r->leaf[i] = k;
  r->scalar[i] = true;
  r->kind[i] = LEAF_SCALAR;
  b->body.input_scalar[i] = true;
  b->body.input_count = r->leaf_count;
  return jit_push(b, (hl_jit_value_t){.op = HL_JIT_BROADCAST, .a = i, .type = t});
}

// Values in operand-first order, so a leaf is read just before its first use.
static int jit_build(jit_builder_t *b, int k) {
  if (b->value_of[k] >= 0 || b->full) return b->value_of[k] >= 0 ? b->value_of[k] : 0;
  const node_t *n = &b->p->nodes[k];
  int v;
  if (b->covered[k] && (k == b->root || !b->leaves_set[k])) {
    if (n->kind == K_SAME) {
      v = jit_build(b, n->ops[0]);
    } else {
      int o[3] = {0, 0, 0};
      for (int i = 0; i < n->nops; i++)
        o[i] = n->kind == K_CLAMP && n->scalar_op[i] ? jit_scalar_leaf(b, n->ops[i])
                                                     : jit_build(b, n->ops[i]);
      hl_jit_value_t x = b->tmpl[k];
      x.type = b->type[k];
      x.a = o[0];
      x.b = o[1];
      x.c = o[2];
      v = jit_push(b, x);
    }
  } else {
    jit_region_t *r = b->region;
    if (r->leaf_count == HL_JIT_MAX_INPUTS) {
      b->full = true;
      return 0;
    }
    int kind = n->kind == K_SPLAT ? LEAF_SCALAR : b->no_rows ? LEAF_BLOCK : jit_row_leaf(n);
    if ((kind == LEAF_ROW || kind == LEAF_COL) && !jit_rows_enabled()) kind = LEAF_BLOCK;
    if ((kind == LEAF_ROW || kind == LEAF_COL) && r->row_len &&
        r->row_len != n->dims[n->rank - 1])
      kind = LEAF_BLOCK;  // rows of another length: materialized
    if (kind == LEAF_ROW || kind == LEAF_COL) r->row_len = n->dims[n->rank - 1];
    bool scalar = kind == LEAF_SCALAR || kind == LEAF_COL;
    int i = r->leaf_count++;
    r->leaf[i] = kind == LEAF_SCALAR ? n->ops[0] : k;
    r->scalar[i] = kind == LEAF_SCALAR;
    r->kind[i] = (unsigned char)kind;
    b->body.input_scalar[i] = scalar;
    b->body.input_count = r->leaf_count;
    hl_jit_type_t t = HL_JIT_BODY_TYPE;
    jit_type_of(n->dtype, &t);  // read by a covered node: one of the JIT's types
    v = jit_push(b, (hl_jit_value_t){.op = scalar ? HL_JIT_BROADCAST : HL_JIT_LOAD, .a = i,
                                     .type = t});
  }
  b->value_of[k] = v;
  return v;
}

static hl_status_t plan_jit_regions(hl_fusion_program_t *p) {
  if (!hl_jit_enabled() || p->count == 0) return NULL;
  int c = p->count;
  bool *covered = hl_calloc((size_t)c, sizeof(bool)), *leaves = hl_calloc((size_t)c, sizeof(bool));
  hl_jit_value_t *tmpl = hl_calloc((size_t)c, sizeof(hl_jit_value_t));
  hl_jit_type_t *type = hl_calloc((size_t)c, sizeof(hl_jit_type_t));
  char(*names)[40] = hl_calloc((size_t)c, sizeof(*names));
  int *value_of = hl_malloc(sizeof(int) * (size_t)c);
  hl_jit_value_t *values = hl_malloc(sizeof(hl_jit_value_t) * HL_JIT_MAX_VALUES);
  hl_status_t st = NULL;
  if (!covered || !leaves || !tmpl || !type || !names || !value_of || !values) st = HL_OOM();
  for (int k = 0; !st && k < c; k++)
    covered[k] = jit_covers(&p->nodes[k], &tmpl[k], &type[k], names[k], sizeof(names[k]));
  // A node's value leaves the covered set when an output or a reduce reads
  // it, or a node of another kind or lane type; a compare's lane mask can
  // only feed a covered select, so such a compare (and then its select)
  // drops out, until nothing changes.
  for (bool changed = !st; changed;) {
    changed = false;
    memset(leaves, 0, sizeof(bool) * (size_t)c);
    for (int i = 0; i < p->out_count; i++) {
      leaves[p->outs[i].node] = true;
      if (p->outs[i].reduce) leaves[p->outs[i].init] = true;
    }
    for (int u = 0; u < c; u++) {
      const node_t *n = &p->nodes[u];
      if (covered[u] && n->kind == K_SELECT &&
          !(covered[n->ops[0]] && p->nodes[n->ops[0]].kind == K_COMPARE)) {
        covered[u] = false;
        changed = true;
      }
      for (int i = 0; i < n->nops; i++) {
        int o = n->ops[i];
        bool mask_edge = n->kind == K_SELECT && i == 0;
        bool scalar_edge = n->kind == K_CLAMP && n->scalar_op[i];  // read as one element
        if (!covered[u] || scalar_edge || jit_operand_type(n, type, u) != type[o] ||
            mask_edge != (p->nodes[o].kind == K_COMPARE))
          leaves[o] = true;
      }
    }
    for (int k = 0; k < c; k++)
      if (covered[k] && p->nodes[k].kind == K_COMPARE && leaves[k]) {
        covered[k] = false;
        changed = true;
      }
  }
  for (int k = 0; !st && k < c; k++) {
    if (!covered[k] || !leaves[k] || p->nodes[k].kind == K_COMPARE) continue;
    jit_region_t *r = hl_calloc(1, sizeof(*r));
    if (!r) {
      st = HL_OOM();
      break;
    }
    jit_builder_t b;
    for (bool no_rows = false;; no_rows = true) {
      for (int i = 0; i < c; i++) value_of[i] = -1;
      memset(r, 0, sizeof(*r));
      b = (jit_builder_t){.p = p, .covered = covered, .leaves_set = leaves, .tmpl = tmpl,
                          .type = type, .root = k, .value_of = value_of, .values = values,
                          .region = r, .no_rows = no_rows};
      b.body.type = type[k];
      b.body.values = values;
      jit_build(&b, k);
      for (int i = 0; i < b.body.count; i++)
        r->calls |= hl_jit_is_call(values[i].op) && values[i].fn;
      // Rows split the vector routines' 8-lane groups unless they are
      // whole groups (then the pieces keep the interpreter's groups).
      if (no_rows || !r->row_len || !r->calls || r->row_len % 8 == 0) break;
    }
    hl_jit_op_t last = b.body.count ? values[b.body.count - 1].op : HL_JIT_LOAD;
    const char *why = NULL;
    if (!b.full && last != HL_JIT_LOAD && last != HL_JIT_BROADCAST)
      st = hl_jit_kernel_create_background(&b.body, &r->kernel, &why);
    if (r->kernel)
      p->nodes[k].jit = r;
    else
      jit_region_destroy(r);  // not covered after all (why): interpreted
  }
  hl_free(covered);
  hl_free(leaves);
  hl_free(tmpl);
  hl_free(type);
  hl_free(names);
  hl_free(value_of);
  hl_free(values);
  return st;
}

static const void *eval(const hl_fusion_program_t *p, workspace_t *w, const void **params, int k,
                        int64_t start, const int64_t *idx, int64_t m);
static void release(const hl_fusion_program_t *p, workspace_t *w, int k, const void *v, int64_t m);

static void map_indices(const node_t *n, int64_t start, const int64_t *idx, int64_t m,
                        int64_t *oi);
static void *arena_alloc(workspace_t *w, size_t bytes);

// Whether the region's loop runs this block: pieces of rows keep the
// vector routines' lane groups only from a block start on a group.
static bool jit_region_runs(const jit_region_t *r, int64_t start) {
  return hl_jit_kernel_ready(r->kernel) && !(r->row_len && r->calls && start % 8 != 0);
}

// The region's leaves over the block, then its loop into y: once, or once
// per piece of a row with the row leaves read there.
static void jit_region_run(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                           const jit_region_t *r, size_t es, int64_t start, int64_t m, void *y,
                           bool stream) {
  const void *in[HL_JIT_MAX_INPUTS];
  for (int i = 0; i < r->leaf_count; i++)
    in[i] = r->kind[i] == LEAF_SCALAR  ? eval(p, w, params, r->leaf[i], 0, NULL, 1)
            : r->kind[i] == LEAF_BLOCK ? eval(p, w, params, r->leaf[i], start, NULL, m)
                                       : NULL;
  if (!r->row_len) {
    hl_jit_kernel_run_at(r->kernel, in, y, m, start, stream);
  } else {
    // Column leaves: their operand at every piece's first element, evaluated
    // at once (as map_runs does: a row reduce read back folds the block's
    // rows once, its input memoized over the block).
    int64_t first = start % r->row_len, pieces = (first + m + r->row_len - 1) / r->row_len;
    int64_t *heads = arena_alloc(w, (size_t)pieces * sizeof(int64_t));
    int64_t *at_op = arena_alloc(w, (size_t)pieces * sizeof(int64_t));
    for (int64_t j = 0; j < pieces; j++) heads[j] = j == 0 ? start : start - first + j * r->row_len;
    for (int i = 0; i < r->leaf_count; i++) {
      if (r->kind[i] != LEAF_COL) continue;
      const node_t *n = &p->nodes[r->leaf[i]];
      map_indices(n, 0, heads, pieces, at_op);
      in[i] = eval(p, w, params, n->ops[0], 0, at_op, pieces);
    }
    const void *piece[HL_JIT_MAX_INPUTS];
    for (int64_t done = 0, j = 0; done < m; j++) {
      int64_t at = start + done, len = r->row_len - at % r->row_len;
      if (len > m - done) len = m - done;
      for (int i = 0; i < r->leaf_count; i++) {
        const node_t *n = &p->nodes[r->leaf[i]];
        if (r->kind[i] == LEAF_SCALAR) {
          piece[i] = in[i];
        } else if (r->kind[i] == LEAF_BLOCK) {
          piece[i] = (const char *)in[i] + (size_t)done * n->es;
        } else if (r->kind[i] == LEAF_COL) {
          piece[i] = (const char *)in[i] + (size_t)j * n->es;
        } else {
          int64_t head;  // the operand element at the piece's first element
          map_indices(n, 0, &at, 1, &head);
          piece[i] = eval(p, w, params, n->ops[0], head, NULL, len);
        }
      }
      hl_jit_kernel_run_at(r->kernel, piece, (char *)y + (size_t)done * es, len, at, stream);
      done += len;
    }
  }
  // The leaves' buffers are not handed back to the arena here: with row
  // reduces read back in the block (fusion_rows.h) a layer norm on rows of
  // 32 got a live leaf's buffer reused (wrong bits against --no-fusion-jit);
  // the interpreter's own element-wise paths still release theirs.
}

int hl_fusion_program_jit_regions(const hl_fusion_program_t *p) {
  int n = 0;
  for (int k = 0; k < p->count; k++) n += p->nodes[k].jit != NULL;
  return n;
}

int hl_fusion_program_jit_regions_ready(const hl_fusion_program_t *p) {
  int n = 0;
  for (int k = 0; k < p->count; k++)
    n += p->nodes[k].jit && hl_jit_kernel_ready(p->nodes[k].jit->kernel);
  return n;
}

int hl_fusion_program_jit_row_leaves(const hl_fusion_program_t *p) {
  int n = 0;
  for (int k = 0; k < p->count; k++)
    for (int i = 0; p->nodes[k].jit && i < p->nodes[k].jit->leaf_count; i++)
      n += p->nodes[k].jit->kind[i] == LEAF_ROW || p->nodes[k].jit->kind[i] == LEAF_COL;
  return n;
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

// One block of a copy program: output rows [start / row, + m / row).
static void copy_block(const hl_fusion_program_t *p, const void *const *params, char *out,
                       int64_t start, int64_t m) {
  const node_t *n = &p->nodes[p->outs[0].node];
  int64_t r0 = start / p->copy_row, dims[HL_MAX_RANK], dst_strides[HL_MAX_RANK];
  memcpy(dims, n->dims, sizeof(int64_t) * (size_t)n->rank);
  dims[0] = m / p->copy_row;
  strides_of(n->rank, n->dims, dst_strides);
  const char *src = (const char *)params[p->nodes[n->ops[0]].param] +
                    (n->offset + r0 * n->stride[0]) * (int64_t)n->es;
  hl_strided_copy(out + (size_t)start * n->es, dst_strides, src, n->stride, n->rank, dims, n->es);
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
  st = plan_jit_regions(p);
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
  hl_status_t st = plan_jit_regions(p);
  if (st) {
    hl_fusion_program_destroy(p);
    return st;
  }
  *out = p;
  return NULL;
}

static void free_extras(workspace_t *w);

static void workspace_destroy(workspace_t *w) {
  if (!w) return;
  free_extras(w);
  hl_free(w->extra);
  hl_free(w->arena);
  hl_free(w->memo_gen);
  hl_free(w->memo_start);
  hl_free(w->memo_m);
  hl_free(w->memo_ptr);
  hl_free(w->memo_owned);
  hl_free(w);
}

void hl_fusion_program_destroy(hl_fusion_program_t *p) {
  if (!p) return;
  hl_fusion_workspaces_destroy(p->own);
  for (int k = 0; p->nodes && k < p->count; k++) jit_region_destroy(p->nodes[k].jit);
  hl_free(p->nodes);
  hl_free(p->outs);
  hl_free(p);
}

int64_t hl_fusion_program_block_elements(const hl_fusion_program_t *p) {
  return p->block_runs * p->run_len;
}

//===----------------------------------------------------------------------===//
// Run
//===----------------------------------------------------------------------===//

typedef struct run_state {
  hl_fusion_program_t *p;
  const void **param_data;
  char **out_data;  // per output
  int64_t blocks;
  _Atomic int64_t turn;  // ordered runs: the block whose reductions combine next
} run_state_t;

static void *arena_alloc(workspace_t *w, size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  int best = -1;
  for (int i = 0; i < w->free_count; i++)
    if (w->free_list[i].bytes >= bytes && (best < 0 || w->free_list[i].bytes < w->free_list[best].bytes))
      best = i;
  if (best >= 0) {
    void *r = w->free_list[best].ptr;
    w->free_list[best] = w->free_list[--w->free_count];
    return r;
  }
  if (w->used + bytes <= w->cap) {
    void *r = w->arena + w->used;
    w->used += bytes;
    return r;
  }
  // Beyond the arena (a fresh workspace's first block, or a program that
  // takes more than those before it): a separate allocation, released when
  // the next block starts, which then grows the arena to what this block took.
  if (w->extra_count == w->extra_cap) {
    int cap = w->extra_cap ? 2 * w->extra_cap : 8;
    void **e = hl_realloc(w->extra, sizeof(void *) * (size_t)cap);
    if (!e) abort();  // out of memory in the middle of a block: nothing to unwind to
    w->extra = e;
    w->extra_cap = cap;
  }
  void *r = hl_malloc(bytes);
  if (!r) abort();
  w->extra[w->extra_count++] = r;
  w->extra_bytes += bytes;
  return r;
}

// The arena at `bytes` at least (between blocks: nothing points into it);
// false when it already was or when out of memory (blocks then take extra
// allocations as before, so a run never fails on it).
static bool grow_arena(workspace_t *w, size_t bytes) {
  if (bytes <= w->cap) return false;
  bytes = (bytes + 4095) & ~(size_t)4095;
  void *a = hl_malloc(bytes);
  if (!a) return false;
  hl_free(w->arena);
  w->arena = a;
  w->cap = bytes;
  return true;
}

static void free_extras(workspace_t *w) {
  for (int i = 0; i < w->extra_count; i++) hl_free(w->extra[i]);
  w->extra_count = 0;
  w->extra_bytes = 0;
}

// Ends a block: a block that overflowed the arena grows it to what the
// block took (the same allocations in the same order then fit: a value
// never depends on where its buffer is), so the arena settles at the
// largest block's real need of the programs sharing it.
static void workspace_settle(workspace_t *w) {
  if (!w->extra_count) return;
  size_t took = w->used + w->extra_bytes;
  free_extras(w);
  w->used = 0;
  w->free_count = 0;
  grow_arena(w, took);
}

// Starts a block: the arena is empty and memoized values are stale.
static void workspace_reset(workspace_t *w) {
  workspace_settle(w);
  w->used = 0;
  w->free_count = 0;
  w->gen++;
}

static void gather(size_t es, const char *base, const int64_t *idx, void *dst, int64_t m) {
  switch (es) {
    case 1:
      for (int64_t i = 0; i < m; i++) ((uint8_t *)dst)[i] = ((const uint8_t *)base)[idx[i]];
      break;
    case 2:
      for (int64_t i = 0; i < m; i++) ((uint16_t *)dst)[i] = ((const uint16_t *)base)[idx[i]];
      break;
    case 4:
      for (int64_t i = 0; i < m; i++) ((uint32_t *)dst)[i] = ((const uint32_t *)base)[idx[i]];
      break;
    case 8:
      for (int64_t i = 0; i < m; i++) ((uint64_t *)dst)[i] = ((const uint64_t *)base)[idx[i]];
      break;
    default:
      for (int64_t i = 0; i < m; i++)
        memcpy((char *)dst + (size_t)i * es, base + (size_t)idx[i] * es, es);
  }
}

static void splat(size_t es, const void *v, void *dst, int64_t m) {
  switch (es) {
    case 1:
      memset(dst, *(const uint8_t *)v, (size_t)m);
      break;
    case 2: {
      uint16_t x;
      memcpy(&x, v, 2);
      for (int64_t i = 0; i < m; i++) ((uint16_t *)dst)[i] = x;
      break;
    }
    case 4: {
      uint32_t x;
      memcpy(&x, v, 4);
      for (int64_t i = 0; i < m; i++) ((uint32_t *)dst)[i] = x;
      break;
    }
    case 8: {
      uint64_t x;
      memcpy(&x, v, 8);
      for (int64_t i = 0; i < m; i++) ((uint64_t *)dst)[i] = x;
      break;
    }
    default:
      for (int64_t i = 0; i < m; i++) memcpy((char *)dst + (size_t)i * es, v, es);
  }
}

// Operand indices of a K_MAP node for its elements start.. (idx NULL) or idx[].
static void map_indices(const node_t *n, int64_t start, const int64_t *idx, int64_t m,
                        int64_t *oi) {
  int r = n->rank;
  if (r == 0) {
    for (int64_t i = 0; i < m; i++) oi[i] = n->offset;
    return;
  }
  if (idx) {
    for (int64_t i = 0; i < m; i++) {
      int64_t rest = idx[i], off = n->offset;
      for (int d = r - 1; d >= 0; d--) {
        off += (rest % n->dims[d]) * n->stride[d];
        rest /= n->dims[d];
      }
      oi[i] = off;
    }
    return;
  }
  // Strided walk: one division per block, then carries.
  int64_t ctr[HL_MAX_RANK], rest = start, off = n->offset;
  for (int d = r - 1; d >= 0; d--) {
    ctr[d] = rest % n->dims[d];
    rest /= n->dims[d];
    off += ctr[d] * n->stride[d];
  }
  int64_t inner = n->dims[r - 1], s = n->stride[r - 1];
  int64_t i = 0;
  while (i < m) {
    int64_t run = inner - ctr[r - 1];
    if (run > m - i) run = m - i;
    for (int64_t j = 0; j < run; j++) oi[i + j] = off + j * s;
    i += run;
    off += run * s;
    ctr[r - 1] += run;
    for (int d = r - 1; d > 0 && ctr[d] == n->dims[d]; d--) {
      off -= n->dims[d] * n->stride[d];
      ctr[d] = 0;
      ctr[d - 1]++;
      off += n->stride[d - 1];
    }
  }
}

static void iota_values(const node_t *n, int64_t start, const int64_t *idx, int64_t m, void *y,
                        workspace_t *w) {
  int64_t *v = arena_alloc(w, (size_t)m * sizeof(int64_t));
  for (int64_t i = 0; i < m; i++)
    v[i] = ((idx ? idx[i] : start + i) / n->iota_inner) % n->iota_size;
  if (n->dtype == HL_F32) {
    for (int64_t i = 0; i < m; i++) ((float *)y)[i] = (float)(double)v[i];
  } else if (n->dtype == HL_F64) {
    for (int64_t i = 0; i < m; i++) ((double *)y)[i] = (double)v[i];
  } else {
    // Integers keep the low bits, as hl_elem_store_int does (via convert's loop).
    hl_convert_array(HL_S64, n->dtype, v, y, m);
  }
}

static const void *eval_to(const hl_fusion_program_t *p, workspace_t *w, const void **params, int k,
                           int64_t start, const int64_t *idx, int64_t m, void *dst);

// Inline: a parameter's block and a memoized value (most operand reads in
// a chain) cost no call.
static inline const void *eval(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                               int k, int64_t start, const int64_t *idx, int64_t m) {
  if (!idx) {
    const node_t *n = &p->nodes[k];
    if (n->kind == K_PARAM) return (const char *)params[n->param] + (size_t)start * n->es;
    if (w->memo_gen[k] == w->gen && w->memo_start[k] == start && w->memo_m[k] == m)
      return w->memo_ptr[k];
  }
  return eval_to(p, w, params, k, start, idx, m, NULL);
}

// Where a node's values go: dst when the caller gave one (an output), else
// the arena.
static void *result_buffer(workspace_t *w, void *dst, size_t bytes) {
  return dst ? dst : arena_alloc(w, bytes);
}

// A K_MAP over a contiguous range whose innermost dimension maps to stride
// 0 (a broadcast along the minor dimension: runs of one value, at least
// HL_FUSION_SPLAT_RUN long) or to stride 1 (contiguous runs of the operand,
// at least 64 long): evaluates the operand once per distinct value / per
// run instead of per element.
static bool map_runs(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                     const node_t *n, int64_t start, int64_t m, void *y) {
  int r = n->rank;
  int64_t inner = r ? n->dims[r - 1] : 0, s = r ? n->stride[r - 1] : 0;
  if (r == 0 || inner < (s == 0 ? HL_FUSION_SPLAT_RUN : 64) || (s != 0 && s != 1)) return false;
  int64_t first = start % inner, nruns = (first + m + inner - 1) / inner;
  int64_t *heads = arena_alloc(w, (size_t)nruns * sizeof(int64_t));
  // Operand index of the first element of each run (the rest follow at
  // stride s): the operand of a row start, via the generic index map.
  for (int64_t j = 0; j < nruns; j++) heads[j] = j == 0 ? start : start - first + j * inner;
  int64_t *ops = arena_alloc(w, (size_t)nruns * sizeof(int64_t));
  map_indices(n, 0, heads, nruns, ops);
  char *out = y;
  if (s == 0) {
    // Consecutive operand elements (a row broadcast: one per row of the
    // block) are one contiguous evaluation, memoized like the block's own.
    bool consecutive = true;
    for (int64_t j = 1; j < nruns && consecutive; j++) consecutive = ops[j] == ops[0] + j;
    const char *v = consecutive ? eval(p, w, params, n->ops[0], ops[0], NULL, nruns)
                                : eval(p, w, params, n->ops[0], 0, ops, nruns);
    for (int64_t j = 0, done = 0; j < nruns; j++) {
      int64_t len = (j == 0 ? inner - first : inner);
      if (len > m - done) len = m - done;
      splat(n->es, v + (size_t)j * n->es, out + (size_t)done * n->es, len);
      done += len;
    }
    return true;
  }
  for (int64_t j = 0, done = 0; j < nruns; j++) {
    int64_t len = (j == 0 ? inner - first : inner);
    if (len > m - done) len = m - done;
    const void *v = eval(p, w, params, n->ops[0], ops[j], NULL, len);
    memcpy(out + (size_t)done * n->es, v, (size_t)len * n->es);
    done += len;
  }
  return true;
}

// Operand k of an element-wise node was read as `v` over the node's own
// contiguous range: when k's block buffer has no other reader, it goes back
// to the arena for the next value (its memo is dropped with it).
static void release(const hl_fusion_program_t *p, workspace_t *w, int k, const void *v,
                    int64_t m) {
  const node_t *n = &p->nodes[k];
  if (!n->single_use || w->memo_gen[k] != w->gen || w->memo_ptr[k] != v || !w->memo_owned[k] ||
      w->free_count == (int)(sizeof(w->free_list) / sizeof(w->free_list[0])))
    return;
  w->free_list[w->free_count].ptr = (void *)v;
  w->free_list[w->free_count].bytes = ((size_t)m * n->es + 63) & ~(size_t)63;
  w->free_count++;
  w->memo_gen[k] = 0;
}

// Values of node k at its elements start..start+m (idx NULL) or idx[0..m),
// written to dst when given (the returned pointer may still differ: a
// parameter's own data or a memoized value).
static const void *eval_to(const hl_fusion_program_t *p, workspace_t *w, const void **params, int k,
                           int64_t start, const int64_t *idx, int64_t m, void *dst) {
  const node_t *n = &p->nodes[k];
  if (!idx && w->memo_gen[k] == w->gen && w->memo_start[k] == start && w->memo_m[k] == m)
    return w->memo_ptr[k];
  const void *r = NULL;
  void *y = NULL;
  // A region whose loop is still being compiled runs interpreted (same bits).
  if (n->jit && !idx && jit_region_runs(n->jit, start)) {
    r = y = result_buffer(w, dst, (size_t)m * n->es);
    jit_region_run(p, w, params, n->jit, n->es, start, m, y, dst && w->stream);
  } else switch (n->kind) {
    case K_PARAM:
    case K_CONST: {
      const char *base = n->kind == K_PARAM ? params[n->param] : n->data;
      if (!idx) return base + (size_t)start * n->es;
      y = result_buffer(w, dst, (size_t)m * n->es);
      gather(n->es, base, idx, y, m);
      return y;
    }
    case K_UNARY: {
      const void *x = eval(p, w, params, n->ops[0], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_ew_unary_array(n->op, n->in_dtype, n->dtype, x, y, m);
      release(p, w, n->ops[0], x, m);
      r = y;
      break;
    }
    case K_BINARY: {
      // A broadcast scalar operand is read once instead of repeated.
      bool sa = p->nodes[n->ops[0]].kind == K_SPLAT, sb = p->nodes[n->ops[1]].kind == K_SPLAT;
      if (sa != sb && n->in_dtype == n->dtype && (n->dtype == HL_F32 || n->dtype == HL_F64)) {
        int vk = n->ops[sa ? 1 : 0], sk = p->nodes[n->ops[sa ? 0 : 1]].ops[0];
        const void *sv = eval(p, w, params, sk, 0, NULL, 1);
        const void *v = eval(p, w, params, vk, start, idx, m);
        y = result_buffer(w, dst, (size_t)m * n->es);
        if (hl_ew_binary_array_scalar(n->op, n->dtype, sa ? sv : v, sa, sa ? v : sv, y, m)) {
          release(p, w, vk, v, m);
          r = y;
          break;
        }
      }
      const void *a = eval(p, w, params, n->ops[0], start, idx, m);
      const void *b = eval(p, w, params, n->ops[1], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_ew_binary_array(n->op, n->in_dtype, n->dtype, a, b, y, m);
      release(p, w, n->ops[0], a, m);
      release(p, w, n->ops[1], b, m);
      r = y;
      break;
    }
    case K_COMPARE: {
      const void *a = eval(p, w, params, n->ops[0], start, idx, m);
      const void *b = eval(p, w, params, n->ops[1], start, idx, m);
      y = result_buffer(w, dst, (size_t)m);
      hl_compare_array(n->dir, n->ctype, n->in_dtype, a, b, y, m);
      release(p, w, n->ops[0], a, m);
      release(p, w, n->ops[1], b, m);
      r = y;
      break;
    }
    case K_SELECT: {
      if (n->scalar_op[0]) {
        const uint8_t *pred = eval(p, w, params, n->ops[0], 0, NULL, 1);
        r = eval(p, w, params, n->ops[pred[0] ? 1 : 2], start, idx, m);
        break;
      }
      const uint8_t *pred = eval(p, w, params, n->ops[0], start, idx, m);
      const void *t = eval(p, w, params, n->ops[1], start, idx, m);
      const void *f = eval(p, w, params, n->ops[2], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_select_array(n->es, pred, t, f, y, m);
      release(p, w, n->ops[0], pred, m);
      release(p, w, n->ops[1], t, m);
      release(p, w, n->ops[2], f, m);
      r = y;
      break;
    }
    case K_CLAMP: {
      const void *lo = n->scalar_op[0] ? eval(p, w, params, n->ops[0], 0, NULL, 1)
                                       : eval(p, w, params, n->ops[0], start, idx, m);
      const void *x = eval(p, w, params, n->ops[1], start, idx, m);
      const void *hi = n->scalar_op[2] ? eval(p, w, params, n->ops[2], 0, NULL, 1)
                                       : eval(p, w, params, n->ops[2], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_clamp_array(n->dtype, lo, n->scalar_op[0], x, hi, n->scalar_op[2], y, m);
      if (!n->scalar_op[0]) release(p, w, n->ops[0], lo, m);
      release(p, w, n->ops[1], x, m);
      if (!n->scalar_op[2]) release(p, w, n->ops[2], hi, m);
      r = y;
      break;
    }
    case K_CONVERT: {
      const void *x = eval(p, w, params, n->ops[0], start, idx, m);
      y = result_buffer(w, dst, (size_t)m * n->es);
      hl_convert_array(n->in_dtype, n->dtype, x, y, m);
      release(p, w, n->ops[0], x, m);
      r = y;
      break;
    }
    case K_IOTA:
      y = result_buffer(w, dst, (size_t)m * n->es);
      iota_values(n, start, idx, m, y, w);
      r = y;
      break;
    case K_SAME:
      // Same elements: an output's buffer can take the operand's values directly.
      r = eval_to(p, w, params, n->ops[0], start, idx, m, dst);
      break;
    case K_SPLAT: {
      const void *v = eval(p, w, params, n->ops[0], 0, NULL, 1);
      y = result_buffer(w, dst, (size_t)m * n->es);
      splat(n->es, v, y, m);
      r = y;
      break;
    }
    case K_REDUCE: {
      if (idx) {
        // Rows a block reads (plan_rows: its own): folded once, gathered.
        int64_t lo = idx[0], hi = idx[0];
        for (int64_t i = 1; i < m; i++) {
          if (idx[i] < lo) lo = idx[i];
          if (idx[i] > hi) hi = idx[i];
        }
        const char *v = eval(p, w, params, k, lo, NULL, hi - lo + 1);
        int64_t *oi = arena_alloc(w, (size_t)m * sizeof(int64_t));
        for (int64_t i = 0; i < m; i++) oi[i] = idx[i] - lo;
        y = result_buffer(w, dst, (size_t)m * n->es);
        gather(n->es, v, oi, y, m);
        r = y;
        break;
      }
      // Rows start.. of the input, each folded from the init value as the
      // reduce kernel folds a run of its minor segment (the same bits).
      const char *x = eval(p, w, params, n->ops[0], start * n->row, NULL, m * n->row);
      const void *init = eval(p, w, params, n->ops[1], 0, NULL, 1);
      y = result_buffer(w, dst, (size_t)m * n->es);
      for (int64_t j = 0; j < m; j++) {
        char *acc = (char *)y + (size_t)j * n->es;
        memcpy(acc, init, n->es);
        n->fold(x + (size_t)(j * n->row) * n->es, n->row, acc);
      }
      release(p, w, n->ops[0], x, m * n->row);
      r = y;
      break;
    }
    case K_MAP:
      if (!idx && n->contiguous) {
        r = eval(p, w, params, n->ops[0], start + n->offset, NULL, m);
      } else if (!idx && map_runs(p, w, params, n, start, m,
                                  y = result_buffer(w, dst, (size_t)m * n->es))) {
        r = y;
      } else {
        int64_t *oi = arena_alloc(w, (size_t)m * sizeof(int64_t));
        map_indices(n, start, idx, m, oi);
        r = eval(p, w, params, n->ops[0], 0, oi, m);
      }
      break;
  }
  if (!idx) {
    w->memo_gen[k] = w->gen;
    w->memo_start[k] = start;
    w->memo_m[k] = m;
    w->memo_ptr[k] = r;
    w->memo_owned[k] = !dst && r == y;
  }
  return r;
}

// The output offset of run r (reduce.c's walk, as an index computation).
static int64_t run_output_offset(const hl_fusion_program_t *p, int64_t r) {
  int64_t off = 0;
  for (int k = p->nseg - 2; k >= 0; k--) {
    int64_t i = r % p->seg[k].size;
    r /= p->seg[k].size;
    if (!p->seg[k].reduced) off += i * p->seg[k].out_stride;
  }
  return off;
}

// Folds (or combines) the nr runs of output o's block values v into the
// output, in run order.
static void combine_runs(const hl_fusion_program_t *p, const output_t *o, const char *v,
                         int64_t r0, int64_t nr, char *out) {
  size_t es = p->nodes[o->node].es;
  bool fold = p->seg[p->nseg - 1].reduced;
  for (int64_t j = 0; j < nr; j++) {
    int64_t off = run_output_offset(p, r0 + j);
    (fold ? o->fold : o->combine)(v + (size_t)(j * p->run_len) * es, p->run_len,
                                  out + (size_t)off * es);
  }
}

// Waits until every block before b has combined its reductions. The pool
// hands blocks out in ascending order, so the smallest block not yet
// combined is always held by a worker that waits on no one.
static void wait_turn(_Atomic int64_t *turn, int64_t b) {
  for (int spins = 0; atomic_load_explicit(turn, memory_order_acquire) != b; spins++) {
    if (spins < 64) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();  // oversubscribed cores: let the holder of block b - 1 run
    }
  }
}

// One block: array outputs written in place, reduce outputs folded into
// theirs. `ordered`: the block's values are computed first and combined
// only when every earlier block has combined, so blocks whose reductions
// overlap can run on several threads and still combine in block order,
// the serial order (the same bits).
static void run_block_impl(run_state_t *s, int64_t b, int worker, bool ordered) {
  hl_fusion_program_t *p = s->p;
  workspace_t *w = p->set->ws[worker];
  workspace_reset(w);
  int64_t runs = p->total / p->run_len;
  int64_t r0 = b * p->block_runs, nr = runs - r0 < p->block_runs ? runs - r0 : p->block_runs;
  int64_t start = r0 * p->run_len, m = nr * p->run_len;
  if (p->copy_row) {
    copy_block(p, s->param_data, s->out_data[0], start, m);
    return;
  }
  const char *vals[MAX_ORDERED_OUTPUTS];
  for (int i = 0; i < p->out_count; i++) {
    const output_t *o = &p->outs[i];
    const node_t *n = &p->nodes[o->node];
    if (!o->reduce) {
      char *dst = s->out_data[i] + (size_t)start * n->es;
      const void *v = eval_to(p, w, s->param_data, o->node, start, NULL, m, dst);
      if (v != dst) memcpy(dst, v, (size_t)m * n->es);
      continue;
    }
    const char *v = eval(p, w, s->param_data, o->node, start, NULL, m);
    if (ordered) vals[i] = v;
    else combine_runs(p, o, v, r0, nr, s->out_data[i]);
  }
  if (!ordered) return;
  wait_turn(&s->turn, b);
  for (int i = 0; i < p->out_count; i++)
    if (p->outs[i].reduce) combine_runs(p, &p->outs[i], vals[i], r0, nr, s->out_data[i]);
  atomic_store_explicit(&s->turn, b + 1, memory_order_release);
}

static void run_block(void *arg, int64_t b, int worker) {
  run_block_impl(arg, b, worker, false);
}

static void run_block_ordered(void *arg, int64_t b, int worker) {
  run_block_impl(arg, b, worker, true);
}

// The L3 size in bytes as Linux reports it for cpu0 (what lscpu shows), 0
// when unknown. Not sysconf(_SC_LEVEL3_CACHE_SIZE): under KVM glibc's CPUID
// reading gave 320 MiB for a 32 MiB L3.
static size_t l3_bytes(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (!f) return 0;
  unsigned long v = 0;
  char unit = 0;
  int got = fscanf(f, "%lu%c", &v, &unit);
  fclose(f);
  if (got < 1) return 0;
  return (size_t)v << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
}

// Bytes of array outputs from which a run streams them: the last-level
// cache's size (32 MiB when the system does not say), or
// HL_FUSION_STREAM_BYTES from the environment (tests force it low).
static size_t streaming_threshold(void) {
  static _Atomic size_t bytes;
  size_t b = atomic_load_explicit(&bytes, memory_order_relaxed);
  if (!b) {
    const char *env = getenv("HL_FUSION_STREAM_BYTES");
    char *end = NULL;
    unsigned long long v = env ? strtoull(env, &end, 10) : 0;
    if (env && end != env && !*end && v > 0) b = (size_t)v;
    if (!b) b = l3_bytes();
    if (!b) b = (size_t)32 << 20;
    atomic_store_explicit(&bytes, b, memory_order_relaxed);
  }
  return b;
}

hl_fusion_workspaces_t *hl_fusion_workspaces_create(void) {
  return hl_calloc(1, sizeof(hl_fusion_workspaces_t));
}

void hl_fusion_workspaces_destroy(hl_fusion_workspaces_t *set) {
  if (!set) return;
  for (int i = 0; i < MAX_WORKERS; i++) workspace_destroy(set->ws[i]);
  hl_free(set);
}

size_t hl_fusion_workspaces_arena_bytes(const hl_fusion_workspaces_t *set) {
  size_t b = 0;
  for (int i = 0; set && i < MAX_WORKERS; i++)
    if (set->ws[i]) b += set->ws[i]->cap;
  return b;
}

void hl_fusion_program_use_workspaces(hl_fusion_program_t *p, hl_fusion_workspaces_t *set) {
  if (!set || p->set == set) return;
  hl_fusion_workspaces_destroy(p->own);
  p->own = NULL;
  p->set = set;
}

size_t hl_fusion_program_workspace_bytes(const hl_fusion_program_t *p) {
  return hl_fusion_workspaces_arena_bytes(p->set);
}

size_t hl_fusion_program_arena_bound(const hl_fusion_program_t *p) { return p->arena_bytes; }

static hl_status_t workspaces_of(hl_fusion_program_t *p, hl_fusion_workspaces_t **out) {
  if (!p->set) {
    p->own = hl_fusion_workspaces_create();
    if (!p->own) return HL_OOM();
    p->set = p->own;
  }
  *out = p->set;
  return NULL;
}

// Worker `worker`'s workspace in set, its memo arrays holding `count` nodes
// at least. The arena starts empty: the first block grows it (workspace_settle).
static hl_status_t ensure_workspace(hl_fusion_workspaces_t *set, int worker, int count) {
  workspace_t *w = set->ws[worker];
  if (!w) {
    w = hl_calloc(1, sizeof(*w));
    if (!w) return HL_OOM();
    w->gen = 1;
    set->ws[worker] = w;
  }
  if (count <= w->memo_cap) return NULL;
  size_t c = (size_t)count;
  uint64_t *gen = hl_realloc(w->memo_gen, c * sizeof(uint64_t));
  if (gen) w->memo_gen = gen;
  int64_t *start = hl_realloc(w->memo_start, c * sizeof(int64_t));
  if (start) w->memo_start = start;
  int64_t *m = hl_realloc(w->memo_m, c * sizeof(int64_t));
  if (m) w->memo_m = m;
  const void **ptr = hl_realloc((void *)w->memo_ptr, c * sizeof(void *));
  if (ptr) w->memo_ptr = ptr;
  bool *owned = hl_realloc(w->memo_owned, c * sizeof(bool));
  if (owned) w->memo_owned = owned;
  if (!gen || !start || !m || !ptr || !owned) return HL_OOM();
  size_t old = (size_t)w->memo_cap;
  memset(w->memo_gen + old, 0, (c - old) * sizeof(uint64_t));  // never this block's gen
  memset(w->memo_owned + old, 0, (c - old) * sizeof(bool));
  w->memo_cap = count;
  return NULL;
}

// Arenas made resident ahead at the program's upper bound: only one this
// small (a large bound is mostly never touched: 44 MB for the JAX
// transformer step's largest fusion, of which a block takes a few MB).
#define WARM_ARENA_BYTES ((size_t)256 << 10)

hl_status_t hl_fusion_program_warm(hl_fusion_program_t *p) {
  (void)streaming_threshold();
  hl_fusion_workspaces_t *set = NULL;
  HL_RETURN_IF_ERROR(workspaces_of(p, &set));
  HL_RETURN_IF_ERROR(ensure_workspace(set, 0, p->count ? p->count : 1));
  workspace_t *w = set->ws[0];
  if (p->arena_bytes <= WARM_ARENA_BYTES && grow_arena(w, p->arena_bytes))
    memset(w->arena, 0, w->cap);  // its pages, before the run needs them
  return NULL;
}

hl_status_t hl_fusion_program_run(hl_fusion_program_t *p, hl_literal_t *const *args, int arg_count,
                                  hl_thread_pool_t *pool, hl_literal_t **out) {
  *out = NULL;
  if (arg_count != p->param_count)
    return HL_INTERNAL_ERROR("fusion program takes %d arguments, got %d", p->param_count,
                             arg_count);
  const void *params_local[16];
  const void **params =
      arg_count <= 16 ? params_local : hl_malloc(sizeof(void *) * (size_t)arg_count);
  hl_literal_t *outs_local[16] = {NULL}, **outs = outs_local;
  char *out_data_local[16];
  char **out_data = out_data_local;
  if (p->out_count > 16) {
    outs = hl_calloc((size_t)p->out_count, sizeof(*outs));
    out_data = hl_malloc(sizeof(char *) * (size_t)p->out_count);
  }
  hl_status_t st = (!params || !outs || !out_data) ? HL_OOM() : NULL;
  for (int i = 0; !st && i < arg_count; i++) params[i] = args[i]->data;
  for (int i = 0; !st && i < p->out_count; i++) {
    st = hl_literal_create_uninitialized(p->outs[i].shape, &outs[i]);
    if (st) break;
    out_data[i] = outs[i]->data;
  }
  // One workspace per worker: a pool larger than MAX_WORKERS runs serially.
  int workers = hl_thread_pool_size(pool);
  int64_t runs = p->total / (p->run_len ? p->run_len : 1);
  int64_t blocks = p->total ? (runs + p->block_runs - 1) / p->block_runs : 0;
  bool threaded = blocks > 1 && workers > 1 && workers <= MAX_WORKERS;
  bool parallel = threaded && p->parallel;
  // Reductions whose blocks overlap (kept minor dimensions: column sums)
  // combine in block order while the blocks' values are computed in
  // parallel.
  bool ordered = threaded && !p->parallel && p->has_reduce && p->ordered_pays &&
                 p->out_count <= MAX_ORDERED_OUTPUTS;
  hl_fusion_workspaces_t *set = NULL;
  int used_workers = parallel || ordered ? workers : 1;
  if (!st) st = workspaces_of(p, &set);
  for (int i = 0; !st && i < used_workers; i++)
    st = ensure_workspace(set, i, p->count ? p->count : 1);
  if (!st) {
    // Array outputs larger than the last-level cache would be evicted before
    // anything reads them: written around the caches (no read for ownership
    // of every line, and the inputs stay cached). Same values either way.
    size_t array_bytes = 0;
    for (int i = 0; i < p->out_count; i++)
      if (!p->outs[i].reduce) array_bytes += outs[i]->byte_size;
    bool stream = array_bytes >= streaming_threshold();
    for (int i = 0; i < MAX_WORKERS; i++)
      if (set->ws[i]) set->ws[i]->stream = stream;
    // Reduce outputs start from the init value (evaluated once).
    for (int i = 0; i < p->out_count; i++) {
      const output_t *o = &p->outs[i];
      if (!o->reduce) continue;
      workspace_t *w = set->ws[0];
      workspace_reset(w);
      const void *init = eval(p, w, params, o->init, 0, NULL, 1);
      splat(p->nodes[o->node].es, init, out_data[i], hl_literal_element_count(outs[i]));
    }
    run_state_t s = {p, params, out_data, blocks, 0};
    if (parallel)
      hl_thread_pool_run_ranges(pool, blocks, run_block, &s);
    else if (ordered)
      hl_thread_pool_run(pool, blocks, run_block_ordered, &s);  // one block a task, ascending
    else
      for (int64_t b = 0; b < blocks; b++) run_block(&s, b, 0);
    // The last blocks' extra allocations go now, not at the next run.
    for (int i = 0; i < used_workers; i++) workspace_settle(set->ws[i]);
  }
  if (!st) {
    if (p->tuple)
      st = hl_literal_create_tuple(outs, p->out_count, out);
    else
      *out = hl_literal_retain(outs[0]);
  }
  for (int i = 0; i < p->out_count; i++) hl_literal_release(outs[i]);
  if (params != params_local) hl_free(params);
  if (outs != outs_local) hl_free(outs);
  if (out_data != out_data_local) hl_free(out_data);
  return st;
}
