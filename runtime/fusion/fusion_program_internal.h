// Private to runtime/fusion's blocked executor: the program's nodes, its
// workspaces, and the functions its files share (fusion_program.c compiles,
// fusion_program_run.c runs, fusion_program_jit.c plans and runs the JIT
// regions). Not an API: fusion_program.h is.
#ifndef HL_FUSION_PROGRAM_INTERNAL_H
#define HL_FUSION_PROGRAM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/fusion/fusion_program.h"
#include "runtime/kernels/reduce_fast.h"

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
  void **extra;  // blocks beyond the arena (see hl_fp_arena_alloc), freed per block
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

// A compiled loop rooted at a node (fusion_program_jit.c).
struct jit_region;

// Row-major strides of dims.
static inline void strides_of(int rank, const int64_t *dims, int64_t *str) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    str[d] = s;
    s *= dims[d];
  }
}

// Run (fusion_program_run.c).
void *hl_fp_arena_alloc(workspace_t *w, size_t bytes);
void hl_fp_map_indices(const node_t *n, int64_t start, const int64_t *idx, int64_t m,
                       int64_t *oi);
const void *hl_fp_eval_to(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                          int k, int64_t start, const int64_t *idx, int64_t m, void *dst);

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
  return hl_fp_eval_to(p, w, params, k, start, idx, m, NULL);
}

// JIT regions (fusion_program_jit.c).
hl_status_t hl_fp_plan_jit_regions(hl_fusion_program_t *p);
void hl_fp_jit_region_destroy(struct jit_region *r);
bool hl_fp_jit_region_runs(const struct jit_region *r, int64_t start);
void hl_fp_jit_region_run(const hl_fusion_program_t *p, workspace_t *w, const void **params,
                          const struct jit_region *r, size_t es, int64_t start, int64_t m, void *y,
                          bool stream);

#endif
