// Shared state of the StableHLO -> module IR lowering (stablehlo_lower.c for
// functions, regions and values; lower_ops.c for the per-op attribute mapping).
#ifndef HL_RUNTIME_STABLEHLO_LOWER_INTERNAL_H_
#define HL_RUNTIME_STABLEHLO_LOWER_INTERNAL_H_

#include "runtime/ir/module.h"
#include "runtime/stablehlo/mlir_ast.h"

typedef struct hl_lower_func {
  const hl_mlir_op_t *op;         // the func.func
  hl_computation_t *computation;  // NULL until lowered
  bool lowering;                  // on the stack (recursion is an error)
} hl_lower_func_t;

// Values a region reads from enclosing computations, shared by the
// computations that take them as extra tuple elements (while: cond and body).
typedef struct hl_lower_captures {
  hl_instruction_t **outer;  // the value in the enclosing computation
  int count;
} hl_lower_captures_t;

typedef struct hl_lower_binding {
  char *name;
  hl_instruction_t **values;
  int count;
} hl_lower_binding_t;

typedef struct hl_lower_env hl_lower_env_t;
struct hl_lower_env {
  hl_lower_env_t *parent;
  hl_computation_t *computation;
  hl_lower_binding_t *bindings;
  int binding_count;
  // Capturing regions: captured value k is element base + k of `param`.
  hl_lower_captures_t *captures;  // NULL: a region that cannot capture (reducers)
  hl_instruction_t *param;
  int base;
  hl_instruction_t **inner;       // per capture, its get-tuple-element here (or NULL)
  int inner_count;
};

typedef struct hl_lower {
  const hl_mlir_file_t *file;
  hl_module_t *module;
  hl_lower_func_t *funcs;
  int func_count;
  int64_t next_id;
  int region_counter;
  const char *func_name;  // function being lowered (check messages)
  // interpreter.run_parallel's programs grid (0 when the file has none).
  int64_t parallel_replicas, parallel_partitions;
  int64_t next_channel;   // channel ids of the collectives run_parallel adds
  // Quantization id (hl_mlir_quant_type_t) of each lowered instruction, by its
  // id (0: not quantized; the instruction holds the storage type): quant_lower.c.
  int *quant_by_id;
  int64_t quant_by_id_size;
  // Shape refinement (refine_shapes.c), on for a program with dynamic shapes:
  // the entry's arguments (shapes and values), calls inlined, and the integer
  // values folded so far (by instruction id).
  bool refining;
  hl_literal_t *const *refine_args;
  int refine_arg_count;
  const hl_mlir_op_t *refine_entry_op;    // the entry's func.func
  hl_computation_t *refine_entry;         // its computation (parameters with known values)
  struct hl_refine_value **folded;
  int64_t folded_size;
} hl_lower_t;

typedef struct hl_refine_value hl_refine_value_t;

// An error at an op's position: "file:line:col: error: '<op>' ...".
hl_status_t hl_lower_op_error(const hl_lower_t *L, const hl_mlir_op_t *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

// Appends an instruction with operands and shape (copied), numbered and
// positioned at `op`.
hl_status_t hl_lower_add(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                         hl_opcode_t opcode, const hl_shape_t *shape, hl_instruction_t *const *ops,
                         int n, hl_instruction_t **out);
hl_status_t hl_lower_add_gte(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                             hl_instruction_t *tuple, int index, hl_instruction_t **out);
hl_status_t hl_lower_add_tuple(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                               hl_instruction_t *const *ops, int n, hl_instruction_t **out);

// Lowers one region into a new computation whose parameters are the block
// arguments (reducers, comparators, map / scatter bodies). No captures.
hl_status_t hl_lower_scalar_region(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                   int region_index, hl_computation_t **out);
// A computation of two scalar parameters applying `opname` (pretty reduce
// "applies stablehlo.add").
hl_status_t hl_lower_binary_computation(hl_lower_t *L, const hl_mlir_op_t *op,
                                        const char *opname, const hl_shape_t *scalar,
                                        hl_computation_t **out);
// The computation of func.func @name (lowered on first use).
hl_status_t hl_lower_function(hl_lower_t *L, const char *name, const hl_mlir_op_t *at,
                              hl_computation_t **out);

// Lowers one op (not func.return) into env's computation; its results are
// bound in env.
hl_status_t hl_lower_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op);
// A custom_call's api_version, backend_config (string or typed-FFI
// dictionary), operand_layouts / result_layouts, output_operand_aliases and
// called_computations into inst's attributes and shape, as the HLO path
// stores them (lower_custom_call.c).
hl_status_t hl_lower_custom_call_attrs(hl_lower_t *L, const hl_mlir_op_t *op,
                                       hl_instruction_t *inst);
// Region-holding control flow (stablehlo_lower.c).
hl_status_t hl_lower_control_flow(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *operands, bool *out_handled);

// CHLO ops with a lowering of their own (chlo_lower.c); *out_handled is
// false for the others (those sharing an IR op stay in lower_ops.c).
hl_status_t hl_lower_chlo(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                          hl_instruction_t *const *operands, bool *out_handled);

// Deprecated StableHLO ops, the arith ops exporters leave beside StableHLO,
// sdy.constant and the mhlo.topk custom call (lower_legacy.c); *out_handled
// is false for any other op.
hl_status_t hl_lower_legacy(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                            hl_instruction_t *const *operands, bool *out_handled);
// replica_groups / channel_handle / use_global_device_ids of `op` onto a
// collective instruction (lower_ops.c).
hl_status_t hl_lower_collective_attrs(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                      hl_instruction_t *inst);

// The instruction value %name#index visible in env (capturing through
// regions as needed).
hl_status_t hl_lower_lookup(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_value_ref_t *ref,
                            hl_instruction_t **out);
// Binds an op's results: `values` (count = op->result_count) in result order.
hl_status_t hl_lower_bind_results(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *values, int count);
hl_status_t hl_lower_bind(hl_lower_env_t *env, const char *name, hl_instruction_t *const *values,
                          int count);

// Quantized types (quant_lower.c). The quantization id of a lowered value (0:
// not quantized) and recording one; results are recorded from the op's types.
int hl_quant_of(const hl_lower_t *L, const hl_instruction_t *inst);
hl_status_t hl_quant_note(hl_lower_t *L, const hl_instruction_t *inst, int id);
hl_status_t hl_quant_note_results(hl_lower_t *L, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *values, int count);
// Lowers uniform_quantize / uniform_dequantize and ops on quantized tensors
// (dequantize -> op in the expressed type -> quantize); *out_handled false:
// the op is lowered as usual (on storage values, or not quantized at all).
hl_status_t hl_quant_lower_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                              hl_instruction_t *const *operands, bool *out_handled);
// stablehlo.send / recv / infeed (lower_channels.c); *out_handled is false
// for any other op.
hl_status_t hl_lower_channel_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                hl_instruction_t *const *operands, int n, bool *out_handled);
// interpreter.run_parallel's infeed = [@f, ...]: calls the functions and
// appends their results to the infeed queue; *out_token (NULL without
// infeed) must run before the programs.
hl_status_t hl_lower_parallel_infeed(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                     hl_instruction_t **out_token);
// Makes the send / recv reached from each process's program (programs[k],
// process k = replica * P + partition) transfers between those processes.
hl_status_t hl_lower_parallel_channels(hl_lower_t *L, const hl_mlir_op_t *op,
                                       hl_computation_t *const *programs, int nproc, int P);

// Shape refinement (refine_shapes.c). A shape with a dynamic dimension.
bool hl_refine_shape_is_dynamic(const hl_shape_t *s);
// `actual` may stand where `declared` (maybe dynamic) was written.
bool hl_refine_compatible(const hl_shape_t *declared, const hl_shape_t *actual);
// The entry's parameter i takes the given argument's shape.
hl_status_t hl_refine_parameter(hl_lower_t *L, const hl_mlir_op_t *fn, int i,
                                const hl_shape_t *declared, hl_shape_t *out);
// The values of `inst` (operand `operand` of op), folded from the argument
// shapes and values; an error naming op and what the value depends on.
hl_status_t hl_refine_values(hl_lower_t *L, const hl_mlir_op_t *op, int operand,
                             const hl_instruction_t *inst, hl_i64_list_t *out);
// dynamic_broadcast_in_dim / dynamic_iota / dynamic_reshape with a dynamic
// result type: *out is the static one their shape operand gives.
hl_status_t hl_refine_dynamic_type(hl_lower_t *L, const hl_mlir_op_t *op,
                                   hl_instruction_t *const *operands, int n,
                                   const hl_shape_t *declared, hl_shape_t *out, bool *handled);
// Makes a lowered result's dynamic dimensions static (from its operands),
// or an error naming the op.
hl_status_t hl_refine_result(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst);
// custom_call @shape_assertion and the stablehlo.dynamic_* custom calls.
hl_status_t hl_refine_custom_call(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *operands, int n, bool *out_handled);
void hl_refine_release(hl_lower_t *L);

#endif  // HL_RUNTIME_STABLEHLO_LOWER_INTERNAL_H_
