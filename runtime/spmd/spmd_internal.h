// Shared state of the partitioner's passes (not installed).
#ifndef HL_RUNTIME_SPMD_SPMD_INTERNAL_H_
#define HL_RUNTIME_SPMD_SPMD_INTERNAL_H_

#include "runtime/base/strbuf.h"
#include "runtime/ir/module.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/spmd/spmd_sharding.h"

#define SPMD_MAX_TUPLE 64

typedef struct spmd_moved {
  int inst;
  hl_spmd_sharding_t sh;
  const char *name;
} spmd_moved_t;

// The sharding decided for one entry instruction's value.
typedef struct spmd_value {
  bool known;
  bool fixed;  // from an annotation: propagation never changes it
  bool manual; // inside a manual region (SPMDFullToShardShape .. SPMDShardToFullShape): already per partition
  hl_spmd_sharding_t *held;  // a tuple lowered locally: how its elements are held (owned, elem_count)
  hl_spmd_sharding_t sh;  // array values
  int elem_count;         // tuple values (one level of arrays)
  hl_spmd_sharding_t *elems;  // owned
} spmd_value_t;

typedef struct spmd_ctx {
  const hl_module_t *module;
  const hl_computation_t *entry;
  int n;                 // partitions
  int replicas;          // the grid's replicas (each runs the partitioned program on its own copy)
  spmd_value_t *val;     // per entry instruction (by index)
  char **local;          // per entry instruction: name of its local value (owned)
  hl_strbuf_t body;      // emitted entry lines
  hl_strbuf_t explain;
  hl_strbuf_t reducers;  // emitted reducer computations
  bool reducer_done[64]; // by dtype
  int64_t counter, channel;
  int64_t inserted;      // collectives inserted
  int64_t bytes;         // collectives' bytes per partition (emitted or, when dry, estimated)
  bool dry;              // cost estimate only: emit nothing
  bool have_pid;
  struct spmd_moved *moved;  // values already moved: (instruction, sharding) -> name
  int moved_count, moved_cap;
  char **names;          // every generated name (owned)
  int name_count, name_cap;
} spmd_ctx_t;

// propagate.c
bool spmd_is_custom_call(const hl_instruction_t *inst, const char *target);
hl_status_t spmd_propagate(spmd_ctx_t *c);
bool spmd_is_elementwise(hl_opcode_t op);
// Sharding of a broadcast / transpose / reshape result from its operand's (and back).
void spmd_broadcast_forward(const hl_instruction_t *b, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out);
void spmd_broadcast_backward(const hl_instruction_t *b, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in);
void spmd_transpose_forward(const hl_instruction_t *t, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out);
void spmd_transpose_backward(const hl_instruction_t *t, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in);
// Reshape: the dims split into groups whose sizes multiply alike; in each
// group the most major dims of size > 1 correspond (out dim j <-> in dim
// map[j], -1: none). A split of t tiles carries over when both dims have the
// same size (padding stays at the end) or t divides both sizes (every tile
// is one contiguous chunk of the group on both sides).
void spmd_reshape_map(const hl_shape_t *in, const hl_shape_t *out, int *out_to_in);
bool spmd_reshape_split_ok(const hl_shape_t *in, const hl_shape_t *out, int i, int j, int64_t t);
// Result sharding from the operand's, and the operand's from the result's
// (dims that cannot carry their split are unsplit).
void spmd_reshape_forward(const hl_instruction_t *r, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out);
void spmd_reshape_backward(const hl_instruction_t *r, const hl_spmd_sharding_t *out, hl_spmd_sharding_t *in);
// Maps `src` (of rank src_rank) to rank dst_rank: dst dim j takes src dim map[j]'s tiling (-1: unsplit).
void spmd_map_dims(const hl_spmd_sharding_t *src, int dst_rank, const int *map, hl_spmd_sharding_t *dst);
// Dimensions slice / pad / concatenate / reverse move data along (bit mask);
// the others they leave as they are, so a split there stays local.
uint32_t spmd_touched_dims(const hl_instruction_t *inst);
bool spmd_is_data_movement(hl_opcode_t op);
void spmd_reduce_forward(const hl_instruction_t *r, const hl_spmd_sharding_t *in, hl_spmd_sharding_t *out);
// Tuple-valued sort (several operands) and variadic reduce: from operand 0's
// sharding, the one its array operands run in (the sort / reduced dims
// unsplit) and every result element's. False for other instructions.
bool spmd_tuple_rule(const hl_instruction_t *inst, const hl_spmd_sharding_t *op0, hl_spmd_sharding_t *in,
                     hl_spmd_sharding_t *elem);

// gather_rule.c: per output dimension, the operand dimension it passes
// through whole (or -1) and the indices dimension it is a batch of (or -1).
// False for gathers without a rule (batching dimensions).
bool spmd_gather_maps(const hl_instruction_t *g, int *out_to_operand, int *out_to_indices);

// scatter_rule.c: per operand dimension, the update window dimension that
// covers it whole (it can stay split), or -1. False for scatters without a
// rule (several operands, batching dimensions).
bool spmd_scatter_maps(const hl_instruction_t *s, int *operand_to_update);

// dot_plan.c: the iteration-space sharding of a dot, picked by bytes moved.
typedef struct spmd_dot_plan {
  hl_spmd_sharding_t lhs, rhs;  // operand shardings the local dot needs
  hl_spmd_sharding_t result;    // sharding of the result after the all-reduce
  uint32_t contract_split;      // non-zero: an all-reduce over the contracting split follows
  hl_spmd_sharding_t iter;      // iteration space [batch, lhs free, rhs free, contracting]
  int64_t cost;
} spmd_dot_plan_t;
hl_status_t spmd_dot_plan(spmd_ctx_t *c, const hl_instruction_t *dot, const hl_spmd_sharding_t *lhs,
                          const hl_spmd_sharding_t *rhs, const hl_spmd_sharding_t *want_out,
                          spmd_dot_plan_t *plan, bool *found);

// Whether a contracting-split dot's all-reduce (groups of `iter` along
// `cmask`) followed by the move from `result` to `target` is one
// reduce-scatter: the target splits one result dimension (evenly, unsplit
// in `result`) over exactly those groups, each member holding its slot's
// chunk, and agrees with `result` elsewhere. *out_dim: that dimension.
bool spmd_reduce_scatter_dim(const hl_instruction_t *dot, const hl_spmd_sharding_t *iter, uint32_t cmask,
                             const hl_spmd_sharding_t *result, const hl_spmd_sharding_t *target, int *out_dim);

// reshard.c
const char *spmd_name(spmd_ctx_t *c, const char *base);
void spmd_local_dims(const hl_shape_t *global, const hl_spmd_sharding_t *s, int64_t *dims);
void spmd_shape_text(hl_dtype_t dt, int rank, const int64_t *dims, hl_strbuf_t *out);
int64_t spmd_local_bytes(const hl_shape_t *global, const hl_spmd_sharding_t *s);
// Emits the move of `name` (global shape `g`, held as `from`) to `to`; *out is the new name.
hl_status_t spmd_reshard(spmd_ctx_t *c, const char *name, const hl_shape_t *g,
                         const hl_spmd_sharding_t *from, const hl_spmd_sharding_t *to,
                         const char **out);
// Emits an all-reduce of `name` (local shape `dt`/`dims`) over the groups of
// `s` along the dimensions in `dims_mask`, with reducer computation `reducer`.
hl_status_t spmd_all_reduce(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank,
                            const int64_t *dims, const hl_spmd_sharding_t *s, uint32_t dims_mask,
                            const char *reducer, const char **out);
// Emits a reduce-scatter of `name` (local dims `dims`) over the same groups,
// each member keeping its slot's chunk of dimension `scatter_dim` (even).
hl_status_t spmd_reduce_scatter(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank, const int64_t *dims,
                                const hl_spmd_sharding_t *s, uint32_t dims_mask, int scatter_dim,
                                const char *reducer, const char **out);
const char *spmd_add_reducer(spmd_ctx_t *c, hl_dtype_t dt);

// inline_calls.c: `m` with the entry's calls inlined (*out, owned), or
// *out = NULL when there is none to inline; one line per inlined call to `note`.
hl_status_t spmd_inline_calls(const hl_module_t *m, hl_module_t **out, hl_strbuf_t *note);

// partitioner.c: hl_spmd_partition_grid with channel ids from *channel on
// (updated past the ones it used): a loop body partitioned on its own.
hl_status_t spmd_partition_nested(const hl_module_t *global, int num_replicas, int num_partitions,
                                  int64_t *channel, hl_spmd_result_t *out);

// control_flow.c: a while whose loop state keeps one sharding (the fixed point from its init tuple's)
// (body and condition partitioned as programs of their own). *out NULL:
// no rule applies (the caller falls back), with the reason in *why.
hl_status_t spmd_lower_while(spmd_ctx_t *c, int i, const char **out, const char **why);
// For propagation: the shardings the loop state of while i keeps (that
// fixed point from its init's element shardings); false in *ok while the
// init's are unknown or the loop has no rule.
hl_status_t spmd_while_state(spmd_ctx_t *c, int i, hl_spmd_sharding_t *S, bool *ok);
// A conditional whose branches run on their operands' shardings and return
// one common sharding (*res for an array result; a tuple's is held).
hl_status_t spmd_lower_conditional(spmd_ctx_t *c, int i, hl_spmd_sharding_t *res, const char **out,
                                   const char **why);
// For propagation: the result sharding(s) spmd_lower_conditional will give
// conditional i (one per tuple element); false in *ok while a branch
// operand's is unknown or the conditional has no rule.
hl_status_t spmd_conditional_result(spmd_ctx_t *c, int i, hl_spmd_sharding_t *R, bool *ok);

// lower.c
hl_status_t spmd_lower(spmd_ctx_t *c);
// Operand k of inst moved to `want` (once per operand and sharding).
hl_status_t spmd_operand_to(spmd_ctx_t *c, const hl_instruction_t *inst, int k, const hl_spmd_sharding_t *want,
                            const char **out);
// Prints inst under `name` with operand names `ops` and local result dims (NULL: global).
hl_status_t spmd_emit_like(spmd_ctx_t *c, const hl_instruction_t *inst, const char *name, const int64_t *dims,
                           const char *const *ops);

// reshard.c: this partition's entry of table[0..n) (a constant looked up by partition-id).
const char *spmd_partition_lookup(spmd_ctx_t *c, const int64_t *table);

// halo.c: slice / pad / reduce-window / convolution along split dimensions
// with halo exchanges (collective-permute of the neighbours' edges).
// Result dimensions whose split (as `out` tiles them) a halo exchange serves.
uint32_t spmd_halo_dims(const hl_instruction_t *inst, const hl_spmd_sharding_t *out);
// The operand (lhs) dimension result dimension j reads through its window, or -1.
int spmd_halo_operand_dim(const hl_instruction_t *inst, int j);
// Lowers instruction i to the target's tiling with halo exchanges where they
// apply (*res: the result's sharding); *out NULL when no split dimension
// needs one (the caller's rule applies).
hl_status_t spmd_lower_halo(spmd_ctx_t *c, int i, const hl_spmd_sharding_t *target, hl_spmd_sharding_t *res,
                            const char **out);
// A roll: concatenate(slice x[k:N], slice x[0:k]) along one dimension (*dim, *k); x, else NULL.
const hl_instruction_t *spmd_roll_source(const hl_instruction_t *cat, int *dim, int64_t *k);
// Whether the roll rule lowers this concatenate (its target splits the roll dimension
// evenly, the wrap-around edge at most a shard): its slices are then not computed.
bool spmd_roll_applies(spmd_ctx_t *c, const hl_instruction_t *cat);

#endif  // HL_RUNTIME_SPMD_SPMD_INTERNAL_H_
