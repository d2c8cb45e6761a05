// The fusion pass (fusion_pass.h): per computation, groups are formed
// walking consumers before producers (XLA's InstructionFusion order), then
// merged into multi-output fusions, then each group is built as a fusion
// computation, compiled by the blocked executor (kept only if it runs it),
// and the computation is rewritten around the kept fusions.
#include "runtime/fusion/fusion_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_program.h"
#include "runtime/fusion/fusion_rows.h"
#include "runtime/kernels/elementwise_arrays.h"

// Groups an op may be duplicated into (a cheap producer read by several
// fusions): past this it is materialized once instead.
#define MAX_DUPLICATES 8

typedef struct group {
  int *members;  // instruction indices, no repeats
  int count, cap;
  int root;      // first root (the instruction that started the group)
  bool has_reduce;      // a reduce output (kInput)
  bool has_row_reduce;  // a row reduce read back inside (fusion_rows.h)
  bool alive;    // not merged into another group
  bool committed;
  hl_instruction_t *fusion;
} group_t;

typedef struct pass {
  hl_module_t *m;
  hl_computation_t *c;
  int n;
  int *user_start, *user_list;  // users of i: user_list[user_start[i] .. user_start[i + 1])
  bool *pinned;                 // control dependencies: stays as it is
  int **mem;                    // groups holding instruction i
  int *mem_n, *mem_cap;
  const char **why;             // reason i is not fused (or how it was)
  bool *row_fused;              // a reduce placed in its consumer's fusion (fusion_rows.h)
  const char **row_why;         // why a reduce was not (explain), or NULL
  const char **row_rejected;    // the blocked executor's reason it refused such a fusion
  group_t *g;
  int gn, gcap;
  int64_t next_id;
  hl_strbuf_t *explain;
  hl_fusion_pass_stats_t *stats;
  int *scratch;  // n ints
  bool *mark;    // n bools
} pass_t;

//===----------------------------------------------------------------------===//
// What may be fused
//===----------------------------------------------------------------------===//

// Ops fused into consumers: those the blocked executor evaluates per block.
static bool loop_fusible(const hl_instruction_t *inst) {
  const hl_shape_t *s = &inst->shape;
  if (!hl_shape_is_array(s) || s->dynamic_mask) return false;
  switch (inst->opcode) {
    case HL_OP_COMPARE:
    case HL_OP_SELECT:
    case HL_OP_CLAMP:
    case HL_OP_CONVERT:
    case HL_OP_BROADCAST:
    case HL_OP_RESHAPE:
    case HL_OP_BITCAST:
    case HL_OP_COPY:
    case HL_OP_TRANSPOSE:
    case HL_OP_SLICE:
    case HL_OP_REVERSE:
    case HL_OP_IOTA:
    case HL_OP_CONSTANT:
      return true;
    default:
      break;
  }
  return hl_ew_instruction_supported(inst);
}

static bool reduce_fusible(const hl_instruction_t *inst) {
  return inst->opcode == HL_OP_REDUCE && inst->operand_count == 2 &&
         hl_shape_is_array(&inst->shape) && !inst->shape.dynamic_mask;
}

// XLA's InstructionFusion::IsExpensive for floating-point element types:
// not worth computing twice.
static bool expensive(const hl_instruction_t *inst) {
  if (!hl_dtype_is_float(inst->shape.dtype) && inst->opcode != HL_OP_DIVIDE &&
      inst->opcode != HL_OP_REMAINDER)
    return false;
  switch (inst->opcode) {
    case HL_OP_ATAN2: case HL_OP_DIVIDE: case HL_OP_POWER: case HL_OP_REMAINDER:
    case HL_OP_SQRT: case HL_OP_RSQRT: case HL_OP_CBRT: case HL_OP_EXP: case HL_OP_EXPM1:
    case HL_OP_LOG: case HL_OP_LOG1P: case HL_OP_LOGISTIC: case HL_OP_SIN: case HL_OP_COS:
    case HL_OP_TAN: case HL_OP_TANH: case HL_OP_ERF: case HL_OP_ERF_INV: case HL_OP_ERFC:
    case HL_OP_ACOS: case HL_OP_ASIN: case HL_OP_ATAN: case HL_OP_ACOSH: case HL_OP_ASINH:
    case HL_OP_ATANH: case HL_OP_COSH: case HL_OP_SINH: case HL_OP_LGAMMA:
    case HL_OP_DIGAMMA:
      return true;
    default:
      return false;
  }
}

// A broadcast that repeats elements (XLA's ReusesOperandElements).
static bool reuses_operand(const hl_instruction_t *inst) {
  return inst->opcode == HL_OP_BROADCAST &&
         hl_shape_element_count(&inst->shape) > hl_shape_element_count(&inst->operands[0]->shape);
}

//===----------------------------------------------------------------------===//
// Groups
//===----------------------------------------------------------------------===//

static hl_status_t push_int(int **v, int *n, int *cap, int x) {
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 4;
    int *nv = hl_realloc(*v, sizeof(int) * (size_t)c);
    if (!nv) return HL_OOM();
    *v = nv;
    *cap = c;
  }
  (*v)[(*n)++] = x;
  return NULL;
}

static bool in_group(const pass_t *p, int i, int g) {
  for (int k = 0; k < p->mem_n[i]; k++)
    if (p->mem[i][k] == g) return true;
  return false;
}

static hl_status_t add_member(pass_t *p, int g, int i) {
  if (in_group(p, i, g)) return NULL;
  HL_RETURN_IF_ERROR(push_int(&p->g[g].members, &p->g[g].count, &p->g[g].cap, i));
  if (p->c->instructions[i]->opcode == HL_OP_REDUCE) {
    if (p->row_fused[i]) p->g[g].has_row_reduce = true;
    else p->g[g].has_reduce = true;
  }
  return push_int(&p->mem[i], &p->mem_n[i], &p->mem_cap[i], g);
}

static hl_status_t new_group(pass_t *p, int root, int *out) {
  if (p->gn == p->gcap) {
    int c = p->gcap ? 2 * p->gcap : 8;
    group_t *ng = hl_realloc(p->g, sizeof(group_t) * (size_t)c);
    if (!ng) return HL_OOM();
    p->g = ng;
    p->gcap = c;
  }
  int g = p->gn++;
  memset(&p->g[g], 0, sizeof(group_t));
  p->g[g].root = root;
  p->g[g].alive = true;
  *out = g;
  return add_member(p, g, root);
}

// NULL when reduce i joins the fusion of its users (*g), which reads its
// rows back in the same pass over them (fusion_rows.h); otherwise why not.
static const char *row_fusion_why(const pass_t *p, int i, int *g) {
  const hl_instruction_t *inst = p->c->instructions[i];
  if (inst == p->c->root) return "the computation's root";
  int64_t row;
  const char *why = hl_fusion_row_reduce_why(inst, &row);
  if (why) return why;
  *g = -1;
  for (int k = p->user_start[i]; k < p->user_start[i + 1]; k++) {
    int u = p->user_list[k];
    if (p->mem_n[u] == 0) return "read by an op that is not fused";
    for (int j = 0; j < p->mem_n[u]; j++) {
      if (*g >= 0 && p->mem[u][j] != *g) return "read by several fusions";
      *g = p->mem[u][j];
    }
  }
  return *g >= 0 ? NULL : "no users";
}

// Decides instruction i given its users' decisions (users come later).
static hl_status_t place(pass_t *p, int i) {
  const hl_instruction_t *inst = p->c->instructions[i];
  bool loop = loop_fusible(inst), reduce = reduce_fusible(inst);
  if (inst->opcode == HL_OP_PARAMETER) {
    p->why[i] = "a parameter";
    return NULL;
  }
  if (p->pinned[i]) {
    p->why[i] = "control dependencies";
    return NULL;
  }
  if (!loop && !reduce) {
    p->why[i] = inst->opcode == HL_OP_REDUCE ? "a variadic or tuple reduce"
                                             : "not an op the pass fuses";
    return NULL;
  }
  int g;
  if (reduce) {
    p->row_why[i] = p->row_rejected[i] ? p->row_rejected[i] : row_fusion_why(p, i, &g);
    if (!p->row_why[i]) {
      p->row_fused[i] = true;
      p->why[i] = "read back by its consumer in the same pass over rows";
      return add_member(p, g, i);
    }
    p->why[i] = "root of a reduce fusion";
    return new_group(p, i, &g);
  }
  // A loop op joins its users' fusions when all of them are in fusions.
  const char *materialize = NULL;
  if (inst == p->c->root) materialize = "the computation's root";
  int groups[MAX_DUPLICATES + 1], ng = 0;
  for (int k = p->user_start[i]; k < p->user_start[i + 1] && !materialize; k++) {
    int u = p->user_list[k];
    if (p->mem_n[u] == 0) {
      materialize = "read by an op that is not fused";
      break;
    }
    if (expensive(inst) && reuses_operand(p->c->instructions[u]) &&
        !hl_fusion_broadcast_splats(p->c->instructions[u])) {
      materialize = "expensive and repeated by a broadcast: computed once";
      break;
    }
    for (int j = 0; j < p->mem_n[u] && !materialize; j++) {
      int gu = p->mem[u][j];
      bool seen = false;
      for (int t = 0; t < ng; t++) seen |= groups[t] == gu;
      if (seen) continue;
      if (ng == MAX_DUPLICATES) materialize = "read by too many fusions to duplicate";
      else groups[ng++] = gu;
    }
  }
  // An expensive op read by a reduce's fusion and one other fusion (softmax's
  // exp) is computed in both: XLA's CPU compiler writes it out once, which
  // costs a full-size array written and read back (peak memory 1.5x inputs
  // + outputs for softmax); computing it twice costs less time than that
  // traffic here (bench/bench_fusion_pass).
  bool recompute = ng == 2 && (p->g[groups[0]].has_reduce || p->g[groups[1]].has_reduce);
  if (!materialize && ng > 1 && expensive(inst) && !recompute)
    materialize = "expensive and read by several fusions: computed once";
  if (!materialize && ng == 0) materialize = "no users";
  if (materialize) {
    p->why[i] = materialize;
    return new_group(p, i, &g);
  }
  p->why[i] = ng == 1          ? "fused into its consumer"
             : expensive(inst) ? "computed in both the reduce's fusion and its other reader's"
                               : "duplicated into the fusions that read it";
  for (int t = 0; t < ng; t++) HL_RETURN_IF_ERROR(add_member(p, groups[t], i));
  return NULL;
}

//===----------------------------------------------------------------------===//
// Building a group as a fusion computation
//===----------------------------------------------------------------------===//

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static hl_status_t clone_attrs(const hl_instruction_t *src, hl_instruction_t *x) {
  const hl_attrs_t *a = &src->attrs;
  x->attrs.literal = hl_literal_retain(a->literal);
  x->attrs.comparison_direction = a->comparison_direction;
  x->attrs.comparison_type = a->comparison_type;
  x->attrs.parameter_number = a->parameter_number;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&x->attrs.dimensions, a->dimensions.v, a->dimensions.n));
  if (a->slice_count) {
    x->attrs.slice_dimensions = hl_malloc(sizeof(hl_slice_dim_t) * (size_t)a->slice_count);
    if (!x->attrs.slice_dimensions) return HL_OOM();
    memcpy(x->attrs.slice_dimensions, a->slice_dimensions, sizeof(hl_slice_dim_t) * (size_t)a->slice_count);
    x->attrs.slice_count = a->slice_count;
  }
  if (src->called_count)
    HL_RETURN_IF_ERROR(hl_instruction_set_called(x, src->called_computations, src->called_count));
  return NULL;
}

static hl_status_t add_inst(pass_t *p, hl_computation_t *c, const char *name, hl_opcode_t op,
                            const hl_shape_t *shape, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(hl_computation_add_instruction(c, name, op, out));
  (*out)->id = p->next_id++;
  return hl_shape_copy(shape, &(*out)->shape);
}

// Whether member i is read as a value of its own (an output of the
// fusions holding it): by the root, or by a user in no fusion that holds a
// copy of i.
static bool is_output(const pass_t *p, int i) {
  if (p->c->instructions[i] == p->c->root) return true;
  for (int k = p->user_start[i]; k < p->user_start[i + 1]; k++) {
    int u = p->user_list[k];
    bool shared = false;
    for (int j = 0; j < p->mem_n[u] && !shared; j++) shared = in_group(p, i, p->mem[u][j]);
    if (!shared) return true;
  }
  return false;
}

typedef struct built {
  hl_computation_t *f;
  int *params;  // instruction indices of the external operands, in parameter order
  int param_count;
  int *outs;    // member indices of the outputs, in tuple order
  int out_count;
} built_t;

static void built_free(built_t *b) {
  hl_free(b->params);
  hl_free(b->outs);
  memset(b, 0, sizeof(*b));
}

// Builds group g as a fusion computation and compiles it; *why non-NULL
// (and b->f removed again) when the blocked executor does not run it.
static hl_status_t build(pass_t *p, int g, built_t *b, const char **why) {
  memset(b, 0, sizeof(*b));
  *why = NULL;
  group_t *gr = &p->g[g];
  qsort(gr->members, (size_t)gr->count, sizeof(int), cmp_int);
  int *param_of = p->scratch;  // instruction -> parameter number, -1
  hl_instruction_t **clone = hl_calloc((size_t)p->n, sizeof(*clone));
  b->params = hl_malloc(sizeof(int) * (size_t)(p->n ? p->n : 1));
  b->outs = hl_malloc(sizeof(int) * (size_t)gr->count);
  if (!clone || !b->params || !b->outs) {
    hl_free(clone);
    built_free(b);
    return HL_OOM();
  }
  for (int i = 0; i < p->n; i++) param_of[i] = -1;
  for (int k = 0; k < gr->count; k++) {
    const hl_instruction_t *inst = p->c->instructions[gr->members[k]];
    for (int j = 0; j < inst->operand_count; j++) {
      int o = inst->operands[j]->index;
      if (!in_group(p, o, g) && param_of[o] < 0) {
        param_of[o] = b->param_count;
        b->params[b->param_count++] = o;
      }
    }
    if (is_output(p, gr->members[k])) b->outs[b->out_count++] = gr->members[k];
  }
  if (b->out_count == 0) {
    hl_free(clone);
    built_free(b);
    *why = "nothing reads it";
    return NULL;
  }
  char name[96];
  snprintf(name, sizeof(name), "fused_%.80s", p->c->instructions[gr->root]->name);
  hl_status_t st = hl_module_add_computation(p->m, name, &b->f);
  hl_computation_t *f = b->f;
  if (!st) {
    f->is_fusion_computation = true;
    f->id = p->next_id++;
  }
  hl_instruction_t *ops[8];
  for (int k = 0; !st && k < b->param_count; k++) {
    const hl_instruction_t *src = p->c->instructions[b->params[k]];
    char pname[32];
    snprintf(pname, sizeof(pname), "param_%d", k);
    hl_instruction_t *x = NULL;
    st = add_inst(p, f, pname, HL_OP_PARAMETER, &src->shape, &x);
    if (!st) x->attrs.parameter_number = k;
    clone[b->params[k]] = x;
  }
  for (int k = 0; !st && k < gr->count; k++) {
    const hl_instruction_t *src = p->c->instructions[gr->members[k]];
    hl_instruction_t *x = NULL;
    if (src->operand_count > 8) {
      st = HL_INTERNAL_ERROR("fusion pass: %s has too many operands", src->name);
      break;
    }
    for (int j = 0; j < src->operand_count; j++) ops[j] = clone[src->operands[j]->index];
    st = add_inst(p, f, src->name, src->opcode, &src->shape, &x);
    if (!st) st = hl_instruction_set_operands(x, ops, src->operand_count);
    if (!st) st = clone_attrs(src, x);
    clone[gr->members[k]] = x;
  }
  if (!st && b->out_count == 1) {
    f->root = clone[b->outs[0]];
  } else if (!st) {
    hl_shape_t *shapes = hl_calloc((size_t)b->out_count, sizeof(hl_shape_t));
    hl_instruction_t **elems = hl_calloc((size_t)b->out_count, sizeof(*elems));
    hl_shape_t tuple = {0};
    st = shapes && elems ? NULL : HL_OOM();
    for (int k = 0; !st && k < b->out_count; k++) {
      shapes[k] = clone[b->outs[k]]->shape;
      elems[k] = clone[b->outs[k]];
    }
    if (!st) st = hl_shape_tuple(shapes, b->out_count, &tuple);
    hl_instruction_t *t = NULL;
    if (!st) st = add_inst(p, f, "tuple", HL_OP_TUPLE, &tuple, &t);
    if (!st) st = hl_instruction_set_operands(t, elems, b->out_count);
    if (!st) f->root = t;
    hl_shape_deinit(&tuple);
    hl_free(shapes);
    hl_free(elems);
  }
  hl_free(clone);
  if (!st) st = hl_computation_index_parameters(f);
  hl_fusion_program_t *prog = NULL;
  if (!st) st = hl_fusion_program_compile(f, &prog, why);
  hl_fusion_program_destroy(prog);
  if (!st && !prog && !*why) *why = "the blocked executor does not run it";
  if (st || *why) {
    if (f) hl_module_remove_computation(p->m, f);
    built_free(b);
  }
  return st;
}

//===----------------------------------------------------------------------===//
// Multi-output merges
//===----------------------------------------------------------------------===//

// Whether fusing groups a and b into one would close a cycle: some
// instruction outside both is reached from them and reaches them. Walks
// operands back from the merged set's external operands; an instruction in
// other groups stands for its whole group (its fusion reads all their
// operands).
static bool merge_cycles(pass_t *p, int a, int b) {
  bool *seen = p->mark;
  int *stack = p->scratch, sp = 0;
  memset(seen, 0, sizeof(bool) * (size_t)p->n);
  for (int s = 0; s < 2; s++) {
    const group_t *gr = &p->g[s ? b : a];
    for (int k = 0; k < gr->count; k++) {
      const hl_instruction_t *inst = p->c->instructions[gr->members[k]];
      for (int j = 0; j < inst->operand_count; j++) {
        int o = inst->operands[j]->index;
        if (!in_group(p, o, a) && !in_group(p, o, b) && !seen[o]) {
          seen[o] = true;
          stack[sp++] = o;
        }
      }
    }
  }
  while (sp > 0) {
    int x = stack[--sp];
    if (in_group(p, x, a) || in_group(p, x, b)) return true;
    // x's operands, or for an x in fusions those that its fusions read
    // (a member's operands inside its own fusion are no separate values).
    for (int gi = p->mem_n[x] ? 0 : -1; gi < p->mem_n[x]; gi++) {
      const group_t *gr = gi < 0 ? NULL : &p->g[p->mem[x][gi]];
      int cnt = gr ? gr->count : 1;
      for (int k = 0; k < cnt; k++) {
        const hl_instruction_t *y = p->c->instructions[gr ? gr->members[k] : x];
        for (int j = 0; j < y->operand_count; j++) {
          int o = y->operands[j]->index;
          if (gr && in_group(p, o, p->mem[x][gi])) continue;  // inside that fusion
          if (!seen[o]) {
            seen[o] = true;
            if (sp >= p->n) return true;  // cannot happen (each pushed once); be safe
            stack[sp++] = o;
          }
        }
      }
    }
  }
  return false;
}

static hl_status_t merge_into(pass_t *p, int dst, int src) {
  group_t *s = &p->g[src];
  for (int k = 0; k < s->count; k++) {
    int i = s->members[k];
    // Drop src from i's groups, add dst.
    for (int j = 0; j < p->mem_n[i]; j++)
      if (p->mem[i][j] == src) p->mem[i][j] = p->mem[i][--p->mem_n[i]];
    HL_RETURN_IF_ERROR(add_member(p, dst, i));
  }
  s->alive = false;
  s->count = 0;
  return NULL;
}

// Reduce input dims and reduced dims of the reduce that roots group g.
static bool same_reduction(const hl_instruction_t *r1, const hl_instruction_t *r2) {
  const hl_i64_list_t *d1 = &r1->attrs.dimensions, *d2 = &r2->attrs.dimensions;
  if (!hl_shape_same_dims(&r1->operands[0]->shape, &r2->operands[0]->shape) || d1->n != d2->n)
    return false;
  for (int k = 0; k < d1->n; k++) {
    bool found = false;
    for (int j = 0; j < d2->n; j++) found |= d1->v[k] == d2->v[j];
    if (!found) return false;
  }
  return true;
}

// Tries a merge: kept when acyclic and the blocked executor runs the result.
static hl_status_t try_merge(pass_t *p, int dst, int src, const char *what, bool *merged) {
  *merged = false;
  if (merge_cycles(p, dst, src)) return NULL;
  // Build on a copy of the groups' state: undo by rebuilding membership.
  int *saved_dst = hl_malloc(sizeof(int) * (size_t)(p->g[dst].count + 1));
  int saved_count = p->g[dst].count;
  int *saved_src = hl_malloc(sizeof(int) * (size_t)(p->g[src].count + 1));
  int src_count = p->g[src].count;
  if (!saved_dst || !saved_src) {
    hl_free(saved_dst);
    hl_free(saved_src);
    return HL_OOM();
  }
  memcpy(saved_dst, p->g[dst].members, sizeof(int) * (size_t)saved_count);
  memcpy(saved_src, p->g[src].members, sizeof(int) * (size_t)src_count);
  bool dst_reduce = p->g[dst].has_reduce, dst_rows = p->g[dst].has_row_reduce;
  hl_status_t st = merge_into(p, dst, src);
  built_t b;
  const char *why = NULL;
  if (!st) st = build(p, dst, &b, &why);
  if (!st && !why) {
    hl_module_remove_computation(p->m, b.f);
    built_free(&b);
    *merged = true;
    p->why[p->g[src].root] = what;
  } else if (!st) {
    // Undo: src's members back to src, dst's extra members out of dst.
    for (int k = 0; k < p->g[dst].count; k++) {
      int i = p->g[dst].members[k];
      bool was = false;
      for (int j = 0; j < saved_count; j++) was |= saved_dst[j] == i;
      if (!was)
        for (int j = 0; j < p->mem_n[i]; j++)
          if (p->mem[i][j] == dst) p->mem[i][j] = p->mem[i][--p->mem_n[i]];
    }
    memcpy(p->g[dst].members, saved_dst, sizeof(int) * (size_t)saved_count);
    p->g[dst].count = saved_count;
    p->g[dst].has_reduce = dst_reduce;
    p->g[dst].has_row_reduce = dst_rows;
    p->g[src].alive = true;
    for (int k = 0; k < src_count; k++) st = st ? st : add_member(p, src, saved_src[k]);
  }
  hl_free(saved_dst);
  hl_free(saved_src);
  return st;
}

static hl_status_t merge_groups(pass_t *p) {
  hl_status_t st = NULL;
  // Producer: a loop fusion whose root is a reduce fusion's input and is
  // read elsewhere too (softmax's exp): one pass computes both.
  for (int r = 0; r < p->gn && !st; r++) {
    if (!p->g[r].alive || !p->g[r].has_reduce) continue;
    const hl_instruction_t *red = p->c->instructions[p->g[r].root];
    int v = red->operands[0]->index;
    for (int j = 0; j < p->mem_n[v] && !st; j++) {
      int gv = p->mem[v][j];
      if (gv == r || !p->g[gv].alive || p->g[gv].has_reduce || p->g[gv].root != v) continue;
      bool merged;
      st = try_merge(p, r, gv, "an output of its consumer reduce's fusion (multi-output)", &merged);
      break;
    }
  }
  // Siblings: reduces of one shape and dimensions that read a common operand.
  for (int a = 0; a < p->gn && !st; a++) {
    if (!p->g[a].alive || !p->g[a].has_reduce) continue;
    for (int b = a + 1; b < p->gn && !st; b++) {
      if (!p->g[b].alive || !p->g[b].has_reduce) continue;
      const hl_instruction_t *ra = p->c->instructions[p->g[a].root],
                             *rb = p->c->instructions[p->g[b].root];
      if (!same_reduction(ra, rb)) continue;
      bool share = false;
      for (int k = 0; k < p->g[b].count && !share; k++) {
        const hl_instruction_t *y = p->c->instructions[p->g[b].members[k]];
        for (int j = 0; j < y->operand_count && !share; j++) {
          int o = y->operands[j]->index;
          if (in_group(p, o, b)) continue;
          for (int t = 0; t < p->g[a].count && !share; t++) {
            const hl_instruction_t *z = p->c->instructions[p->g[a].members[t]];
            for (int q = 0; q < z->operand_count; q++) share |= z->operands[q]->index == o;
          }
        }
      }
      bool merged = false;
      if (share) st = try_merge(p, a, b, "a sibling reduce's fusion (multi-output)", &merged);
    }
  }
  // Producer and consumer loop fusions of one shape: the producer's value,
  // written out for another reader (the result tuple, a dot), is also an
  // output of the fusion that reads it (an optimizer update's m' and v' with
  // W's update: one pass over m, v, g and W instead of writing m' and v'
  // and reading them back). XLA's CPU compiler forms the same fusion.
  for (int pg = 0; pg < p->gn && !st; pg++) {
    if (!p->g[pg].alive || p->g[pg].has_reduce) continue;
    int v = p->g[pg].root;
    const hl_shape_t *vs = &p->c->instructions[v]->shape;
    bool merged = false;
    for (int k = p->user_start[v]; k < p->user_start[v + 1] && !st && !merged; k++) {
      int u = p->user_list[k];
      for (int j = 0; j < p->mem_n[u] && !st && !merged; j++) {
        int cg = p->mem[u][j];
        if (cg == pg || !p->g[cg].alive || p->g[cg].has_reduce || in_group(p, v, cg) ||
            !hl_shape_same_dims(&p->c->instructions[p->g[cg].root]->shape, vs))
          continue;
        st = try_merge(p, cg, pg, "an output of the loop fusion that reads it (multi-output)",
                       &merged);
      }
    }
  }
  return st;
}

//===----------------------------------------------------------------------===//
// Rewriting the computation
//===----------------------------------------------------------------------===//

static hl_status_t commit(pass_t *p, int g, built_t *b, hl_instruction_t **repl, int *fusion_no) {
  hl_computation_t *c = p->c;
  // The fusion computation goes before its caller (callees first).
  hl_module_t *m = p->m;
  int ci = -1, fi = m->computation_count - 1;
  for (int k = 0; k < m->computation_count; k++)
    if (m->computations[k] == c) ci = k;
  if (ci >= 0 && ci < fi) {
    hl_computation_t *f = m->computations[fi];
    memmove(&m->computations[ci + 1], &m->computations[ci],
            sizeof(*m->computations) * (size_t)(fi - ci));
    m->computations[ci] = f;
  }
  char name[32];
  do snprintf(name, sizeof(name), "fusion.%d", (*fusion_no)++);
  while (hl_computation_find_instruction(c, name));
  hl_instruction_t *fu = NULL;
  HL_RETURN_IF_ERROR(add_inst(p, c, name, HL_OP_FUSION, &b->f->root->shape, &fu));
  hl_instruction_t **ops = hl_malloc(sizeof(*ops) * (size_t)(b->param_count ? b->param_count : 1));
  if (!ops) return HL_OOM();
  for (int k = 0; k < b->param_count; k++) ops[k] = c->instructions[b->params[k]];
  hl_status_t st = hl_instruction_set_operands(fu, ops, b->param_count);
  hl_free(ops);
  HL_RETURN_IF_ERROR(st);
  HL_RETURN_IF_ERROR(hl_instruction_set_called(fu, &b->f, 1));
  // A fusion with a reduce is XLA's kInput, whether the reduce is an
  // output or read back by its consumers (a reduction epilogue).
  fu->attrs.fusion_kind =
      hl_strdup(p->g[g].has_reduce || p->g[g].has_row_reduce ? "kInput" : "kLoop");
  if (!fu->attrs.fusion_kind) return HL_OOM();
  p->g[g].fusion = fu;
  if (b->out_count == 1) {
    repl[b->outs[0]] = fu;
  } else {
    for (int k = 0; k < b->out_count; k++) {
      char gname[48];
      snprintf(gname, sizeof(gname), "%s.out%d", name, k);
      hl_instruction_t *gte = NULL;
      HL_RETURN_IF_ERROR(add_inst(p, c, gname, HL_OP_GET_TUPLE_ELEMENT,
                                  &c->instructions[b->outs[k]]->shape, &gte));
      HL_RETURN_IF_ERROR(hl_instruction_set_operands(gte, &fu, 1));
      gte->attrs.tuple_index = k;
      repl[b->outs[k]] = gte;
    }
  }
  return NULL;
}

// Emits x after its operands and control predecessors (depth first).
static hl_status_t topo_visit(hl_instruction_t *x, char *state, hl_instruction_t **order, int *n) {
  if (state[x->index] == 2) return NULL;
  if (state[x->index] == 1) return HL_INTERNAL_ERROR("fusion pass: a cycle at %s", x->name);
  state[x->index] = 1;
  for (int j = 0; j < x->operand_count; j++)
    HL_RETURN_IF_ERROR(topo_visit(x->operands[j], state, order, n));
  for (int j = 0; j < x->control_predecessor_count; j++)
    HL_RETURN_IF_ERROR(topo_visit(x->control_predecessors[j], state, order, n));
  state[x->index] = 2;
  order[(*n)++] = x;
  return NULL;
}

// Points users at the fusions, drops what only fusions read now, and
// reorders the instructions so operands precede users.
static hl_status_t rewrite(pass_t *p, hl_instruction_t **repl) {
  hl_computation_t *c = p->c;
  int total = c->instruction_count, n = p->n;
  for (int i = 0; i < total; i++) {
    hl_instruction_t *x = c->instructions[i];
    if (x->opcode == HL_OP_GET_TUPLE_ELEMENT && i >= n) continue;
    for (int j = 0; j < x->operand_count; j++) {
      int o = x->operands[j]->index;
      if (x->operands[j]->parent == c && o < n && repl[o]) x->operands[j] = repl[o];
    }
  }
  if (c->root && c->root->index < n && repl[c->root->index]) {
    // The root's sharding and frontend attributes (the partitioner's
    // hl_global_shape) say how the launcher assembles a global result
    // (--global-output): the instruction that now computes it carries them.
    hl_instruction_t *old = c->root, *now = repl[old->index];
    if (old->attrs.sharding && !now->attrs.sharding) {
      now->attrs.sharding = old->attrs.sharding;
      old->attrs.sharding = NULL;
    }
    if (old->attrs.frontend_attributes.n && !now->attrs.frontend_attributes.n) {
      now->attrs.frontend_attributes = old->attrs.frontend_attributes;
      memset(&old->attrs.frontend_attributes, 0, sizeof(old->attrs.frontend_attributes));
    }
    c->root = now;
  }
  // Uses after the rewrite; committed members nobody reads are dropped.
  int *uses = hl_calloc((size_t)total, sizeof(int));
  bool *dead = hl_calloc((size_t)total, sizeof(bool));
  char *state = hl_calloc((size_t)total, 1);
  hl_instruction_t **order = hl_malloc(sizeof(*order) * (size_t)total);
  hl_status_t st = uses && dead && state && order ? NULL : HL_OOM();
  for (int i = 0; !st && i < total; i++)
    for (int j = 0; j < c->instructions[i]->operand_count; j++)
      uses[c->instructions[i]->operands[j]->index]++;
  for (int i = n - 1; !st && i >= 0; i--) {
    hl_instruction_t *x = c->instructions[i];
    bool member = false;
    for (int k = 0; k < p->mem_n[i]; k++) member |= p->g[p->mem[i][k]].committed;
    if (!member || uses[i] || x == c->root || p->pinned[i]) continue;
    dead[i] = true;
    for (int j = 0; j < x->operand_count; j++) uses[x->operands[j]->index]--;
  }
  int kept = 0;
  // Original order first (new instructions come where their operands allow).
  for (int i = 0; !st && i < total; i++)
    if (!dead[i]) st = topo_visit(c->instructions[i], state, order, &kept);
  if (!st) {
    for (int i = 0; i < total; i++)
      if (dead[i]) hl_instruction_destroy(c->instructions[i]);
    for (int i = 0; i < kept; i++) {
      c->instructions[i] = order[i];
      order[i]->index = i;
    }
    c->instruction_count = kept;
  }
  hl_free(uses);
  hl_free(dead);
  hl_free(state);
  hl_free(order);
  return st;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

// Forgets every group (placement starts again).
static void reset_groups(pass_t *p) {
  for (int g = 0; g < p->gn; g++) hl_free(p->g[g].members);
  p->gn = 0;
  for (int i = 0; i < p->n; i++) {
    p->mem_n[i] = 0;
    p->why[i] = NULL;
    p->row_fused[i] = false;
    p->row_why[i] = NULL;
  }
}

static void pass_free(pass_t *p) {
  for (int i = 0; i < p->n && p->mem; i++) hl_free(p->mem[i]);
  for (int g = 0; g < p->gn; g++) hl_free(p->g[g].members);
  hl_free(p->mem);
  hl_free(p->mem_n);
  hl_free(p->mem_cap);
  hl_free(p->why);
  hl_free(p->row_fused);
  hl_free(p->row_why);
  hl_free(p->row_rejected);
  hl_free(p->g);
  hl_free(p->user_start);
  hl_free(p->user_list);
  hl_free(p->pinned);
  hl_free(p->scratch);
  hl_free(p->mark);
}

static void explain_computation(pass_t *p, const char **status) {
  if (!p->explain) return;
  hl_strbuf_appendf(p->explain, "computation %s:\n", p->c->name);
  for (int i = 0; i < p->n; i++) {
    const hl_instruction_t *inst = p->c->instructions[i];
    hl_strbuf_appendf(p->explain, "  %s (%s): ", inst->name, hl_opcode_name(inst->opcode));
    const char *fusions = "";
    hl_strbuf_t names;
    hl_strbuf_init(&names);
    for (int k = 0; k < p->mem_n[i]; k++) {
      const group_t *gr = &p->g[p->mem[i][k]];
      if (gr->committed)
        hl_strbuf_appendf(&names, "%s%s", hl_strbuf_cstr(&names)[0] ? ", " : "", gr->fusion->name);
    }
    fusions = hl_strbuf_cstr(&names);
    // A reduce its consumers do not read back in their pass: why not.
    char rows[160] = "";
    if (inst->opcode == HL_OP_REDUCE && !p->row_fused[i] && p->row_why[i])
      snprintf(rows, sizeof(rows), "; not in its consumer's pass over rows: %s", p->row_why[i]);
    if (fusions[0])
      hl_strbuf_appendf(p->explain, "fused in %s (%s%s)\n", fusions, p->why[i], rows);
    else if (status[i])
      hl_strbuf_appendf(p->explain, "not fused: %s%s\n", status[i], rows);
    else
      hl_strbuf_appendf(p->explain, "not fused: %s%s\n", p->why[i] ? p->why[i] : "?", rows);
    hl_strbuf_deinit(&names);
  }
}

static hl_status_t fuse_computation(pass_t *p) {
  hl_computation_t *c = p->c;
  int n = c->instruction_count;
  p->n = n;
  p->user_start = hl_calloc((size_t)n + 1, sizeof(int));
  p->user_list = hl_malloc(sizeof(int) * (size_t)(n * 3 + 1));
  p->pinned = hl_calloc((size_t)n + 1, sizeof(bool));
  p->mem = hl_calloc((size_t)n + 1, sizeof(int *));
  p->mem_n = hl_calloc((size_t)n + 1, sizeof(int));
  p->mem_cap = hl_calloc((size_t)n + 1, sizeof(int));
  p->why = hl_calloc((size_t)n + 1, sizeof(char *));
  p->row_fused = hl_calloc((size_t)n + 1, sizeof(bool));
  p->row_why = hl_calloc((size_t)n + 1, sizeof(char *));
  p->row_rejected = hl_calloc((size_t)n + 1, sizeof(char *));
  p->scratch = hl_malloc(sizeof(int) * (size_t)(n + 1));
  p->mark = hl_malloc(sizeof(bool) * (size_t)(n + 1));
  const char **status = hl_calloc((size_t)n + 1, sizeof(char *));
  hl_instruction_t **repl = hl_calloc((size_t)n + 1, sizeof(*repl));
  if (!p->user_start || !p->user_list || !p->pinned || !p->mem || !p->mem_n || !p->mem_cap ||
      !p->why || !p->row_fused || !p->row_why || !p->row_rejected || !p->scratch || !p->mark ||
      !status || !repl) {
    hl_free(status);
    hl_free(repl);
    return HL_OOM();
  }
  int edges = 0;
  for (int i = 0; i < n; i++) {
    const hl_instruction_t *x = c->instructions[i];
    edges += x->operand_count;
    for (int j = 0; j < x->operand_count; j++) p->user_start[x->operands[j]->index + 1]++;
    if (x->control_predecessor_count) p->pinned[i] = true;
    for (int j = 0; j < x->control_predecessor_count; j++)
      p->pinned[x->control_predecessors[j]->index] = true;
  }
  hl_status_t st = NULL;
  if (edges > n * 3) {
    int *ul = hl_realloc(p->user_list, sizeof(int) * (size_t)edges);
    if (!ul) st = HL_OOM();
    else p->user_list = ul;
  }
  for (int i = 0; i < n; i++) p->user_start[i + 1] += p->user_start[i];
  int *fill = p->scratch;
  for (int i = 0; i < n; i++) fill[i] = p->user_start[i];
  for (int i = 0; !st && i < n; i++) {
    const hl_instruction_t *x = c->instructions[i];
    for (int j = 0; j < x->operand_count; j++) p->user_list[fill[x->operands[j]->index]++] = i;
  }
  // A fusion whose row reduces the blocked executor refuses (read other
  // than along their rows) is formed again with those reduces as fusions
  // of their own, as before there were row fusions.
  for (bool again = true; !st && again;) {
    again = false;
    for (int i = n - 1; !st && i >= 0; i--) st = place(p, i);
    if (!st) st = merge_groups(p);
    for (int g = 0; !st && g < p->gn; g++) {
      if (!p->g[g].alive || !p->g[g].has_row_reduce) continue;
      built_t b;
      const char *why = NULL;
      st = build(p, g, &b, &why);
      if (st) break;
      if (!why) {
        hl_module_remove_computation(p->m, b.f);
        built_free(&b);
        continue;
      }
      for (int k = 0; k < p->g[g].count; k++)
        if (p->row_fused[p->g[g].members[k]]) p->row_rejected[p->g[g].members[k]] = why;
      again = true;
    }
    if (!st && again) reset_groups(p);
  }
  int fusion_no = 0;
  for (int g = 0; !st && g < p->gn; g++) {
    group_t *gr = &p->g[g];
    if (!gr->alive) continue;
    int ops = 0;
    for (int k = 0; k < gr->count; k++) ops += c->instructions[gr->members[k]]->opcode != HL_OP_CONSTANT;
    if (ops < 2) {
      status[gr->root] = p->g[g].has_reduce ? "a reduce alone (the reduce kernel runs it)"
                                            : "alone: a fusion of one op gains nothing";
      for (int k = 0; k < gr->count; k++)
        if (!status[gr->members[k]]) status[gr->members[k]] = "its consumer is not fused";
      continue;
    }
    built_t b;
    const char *why = NULL;
    st = build(p, g, &b, &why);
    if (st) break;
    if (why) {
      if (p->stats) p->stats->rejected++;
      for (int k = 0; k < gr->count; k++)
        if (!status[gr->members[k]]) status[gr->members[k]] = why;
      continue;
    }
    gr->committed = true;
    st = commit(p, g, &b, repl, &fusion_no);
    if (!st && p->stats) {
      p->stats->fusions++;
      p->stats->multi_output += b.out_count > 1;
    }
    built_free(&b);
  }
  if (!st && p->stats)
    for (int i = 0; i < n; i++) {
      bool in = false;
      for (int k = 0; k < p->mem_n[i]; k++) in |= p->g[p->mem[i][k]].committed;
      p->stats->fused += in;
    }
  if (!st) explain_computation(p, status);
  if (!st && fusion_no > 0) st = rewrite(p, repl);
  hl_free(status);
  hl_free(repl);
  return st;
}

// Computations that run as sequences of ops: the entry and what while,
// call and conditional run (not reducers, comparators or fusions).
static hl_status_t sequential_computations(const hl_module_t *m, hl_computation_t ***out, int *count) {
  *count = 0;
  *out = hl_calloc((size_t)m->computation_count + 1, sizeof(**out));
  if (!*out) return HL_OOM();
  if (!m->entry) return NULL;
  (*out)[(*count)++] = m->entry;
  for (int k = 0; k < *count; k++) {
    const hl_computation_t *c = (*out)[k];
    for (int i = 0; i < c->instruction_count; i++) {
      const hl_instruction_t *x = c->instructions[i];
      if (x->opcode != HL_OP_WHILE && x->opcode != HL_OP_CALL && x->opcode != HL_OP_CONDITIONAL)
        continue;
      for (int j = 0; j < x->called_count; j++) {
        hl_computation_t *f = x->called_computations[j];
        bool have = false;
        for (int t = 0; t < *count; t++) have |= (*out)[t] == f;
        if (!have && f && !f->is_fusion_computation && *count < m->computation_count)
          (*out)[(*count)++] = f;
      }
    }
  }
  return NULL;
}

hl_status_t hl_fusion_pass_run(hl_module_t *m, hl_strbuf_t *explain, hl_fusion_pass_stats_t *stats) {
  hl_fusion_pass_stats_t local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof(*stats));
  int64_t next_id = 0;
  for (int k = 0; k < m->computation_count; k++) {
    const hl_computation_t *c = m->computations[k];
    if (c->id >= next_id) next_id = c->id + 1;
    for (int i = 0; i < c->instruction_count; i++) {
      if (c->instructions[i]->opcode == HL_OP_FUSION) stats->already_fused = true;
      if (c->instructions[i]->id >= next_id) next_id = c->instructions[i]->id + 1;
    }
  }
  if (stats->already_fused) {
    if (explain)
      hl_strbuf_append(explain, "the module already has fusions (XLA optimized it): unchanged\n");
    return NULL;
  }
  hl_computation_t **comps = NULL;
  int count = 0;
  HL_RETURN_IF_ERROR(sequential_computations(m, &comps, &count));
  hl_status_t st = NULL;
  for (int k = 0; k < count && !st; k++) {
    pass_t p = {.m = m, .c = comps[k], .next_id = next_id, .explain = explain, .stats = stats};
    st = fuse_computation(&p);
    next_id = p.next_id;
    pass_free(&p);
  }
  hl_free(comps);
  if (!st && explain)
    hl_strbuf_appendf(explain, "%d fusion%s (%d multi-output) of %d instruction%s; %d candidate%s "
                      "the blocked executor does not run\n", stats->fusions,
                      hl_plural(stats->fusions), stats->multi_output, stats->fused,
                      hl_plural(stats->fused), stats->rejected, hl_plural(stats->rejected));
  return st;
}
