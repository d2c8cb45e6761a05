// JIT regions of blocked fusion programs: which nodes a compiled loop
// covers (planned at compile time) and running a region's loop over a block.
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/fusion/fusion_program_internal.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/kernels/elementwise_arrays.h"

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
// region does not compile, or is one vector routine alone (lone_routine),
// its nodes run interpreted.
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

void hl_fp_jit_region_destroy(jit_region_t *r) {
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

// A region that is one vector routine over one input read over the block,
// in its own float type (exp(x) before a row sum): the interpreter's array
// loop is already that loop, so compiling gains nothing, and the compiled
// one ran 1.14-1.2x slower (it calls vmath's wrapper and, at 16 or 64
// bytes, splits lanes around it: the row sums of exp(x) in
// bench/README.md). Left interpreted, with the same bits.
static bool lone_routine(const hl_jit_body_t *body) {
  return body->count == 2 && body->input_count == 1 && !body->input_scalar[0] &&
         body->values[0].op == HL_JIT_LOAD && body->values[1].op == HL_JIT_CALL &&
         body->values[1].fn && (body->type == HL_JIT_F32 || body->type == HL_JIT_F64);
}

hl_status_t hl_fp_plan_jit_regions(hl_fusion_program_t *p) {
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
    if (!b.full && last != HL_JIT_LOAD && last != HL_JIT_BROADCAST &&
        !lone_routine(&b.body))
      st = hl_jit_kernel_create_background(&b.body, &r->kernel, &why);
    if (r->kernel)
      p->nodes[k].jit = r;
    else
      hl_fp_jit_region_destroy(r);  // not covered after all (why): interpreted
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

// Whether the region's loop runs this block: pieces of rows keep the
// vector routines' lane groups only from a block start on a group.
bool hl_fp_jit_region_runs(const jit_region_t *r, int64_t start) {
  return hl_jit_kernel_ready(r->kernel) && !(r->row_len && r->calls && start % 8 != 0);
}

// The region's leaves over the block, then its loop into y: once, or once
// per piece of a row with the row leaves read there.
void hl_fp_jit_region_run(const hl_fusion_program_t *p, workspace_t *w, const void **params,
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
    int64_t *heads = hl_fp_arena_alloc(w, (size_t)pieces * sizeof(int64_t));
    int64_t *at_op = hl_fp_arena_alloc(w, (size_t)pieces * sizeof(int64_t));
    for (int64_t j = 0; j < pieces; j++) heads[j] = j == 0 ? start : start - first + j * r->row_len;
    for (int i = 0; i < r->leaf_count; i++) {
      if (r->kind[i] != LEAF_COL) continue;
      const node_t *n = &p->nodes[r->leaf[i]];
      hl_fp_map_indices(n, 0, heads, pieces, at_op);
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
          hl_fp_map_indices(n, 0, &at, 1, &head);
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
