// The module IR: what every loader produces and every later stage reads.
//
// Attributes mirror HloInstructionProto's fields (same names, decoded into C
// types), so the proto loader and writer are field-by-field copies and the
// text parser maps each text attribute onto the field XLA stores it in
// (e.g. text `iota_dimension=1` -> dimensions {1}; `index=2` -> tuple_index).
// Kernels read these decoded attributes and never see parser or proto nodes.
//
// Ownership: the module owns every computation, instruction, string, list and
// literal reachable from it; hl_module_destroy frees them all. All memory is
// from hl_malloc/hl_calloc.
#ifndef HL_RUNTIME_IR_MODULE_H_
#define HL_RUNTIME_IR_MODULE_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/ir/opcode.h"

typedef struct hl_module hl_module_t;
typedef struct hl_computation hl_computation_t;
typedef struct hl_instruction hl_instruction_t;

//===----------------------------------------------------------------------===//
// Attribute value types
//===----------------------------------------------------------------------===//

typedef struct hl_i64_list {
  int64_t *v;  // owned; NULL when n == 0
  int n;
} hl_i64_list_t;

// Comparison (compare's direction= / type=; proto fields 63 / 72 as strings).
typedef enum hl_comparison_direction {
  HL_CMP_NONE = 0,
  HL_CMP_EQ, HL_CMP_NE, HL_CMP_GE, HL_CMP_GT, HL_CMP_LE, HL_CMP_LT,
} hl_comparison_direction_t;

typedef enum hl_comparison_type {
  HL_CMPTYPE_DEFAULT = 0,  // absent: follows the operand type (see hl_comparison_type_default)
  HL_CMPTYPE_FLOAT, HL_CMPTYPE_TOTALORDER, HL_CMPTYPE_SIGNED, HL_CMPTYPE_UNSIGNED,
} hl_comparison_type_t;

typedef struct hl_window_dim {
  int64_t size, stride, padding_low, padding_high, window_dilation, base_dilation;
  bool window_reversal;
} hl_window_dim_t;  // stride/dilations: loaders store 1 when absent or 0

typedef struct hl_window {
  hl_window_dim_t *dims;  // owned
  int n;
} hl_window_t;

typedef struct hl_slice_dim {
  int64_t start, limit, stride;  // stride 1 when absent or 0
} hl_slice_dim_t;

typedef struct hl_padding_dim {
  int64_t edge_padding_low, edge_padding_high, interior_padding;
} hl_padding_dim_t;

typedef struct hl_conv_dims {
  int64_t input_batch_dimension, input_feature_dimension;
  hl_i64_list_t input_spatial_dimensions;
  int64_t kernel_input_feature_dimension, kernel_output_feature_dimension;
  hl_i64_list_t kernel_spatial_dimensions;
  int64_t output_batch_dimension, output_feature_dimension;
  hl_i64_list_t output_spatial_dimensions;
} hl_conv_dims_t;

typedef struct hl_dot_dims {
  hl_i64_list_t lhs_contracting_dimensions, rhs_contracting_dimensions;
  hl_i64_list_t lhs_batch_dimensions, rhs_batch_dimensions;
} hl_dot_dims_t;

typedef struct hl_gather_dims {
  hl_i64_list_t offset_dims, collapsed_slice_dims, start_index_map;
  int64_t index_vector_dim;
  hl_i64_list_t operand_batching_dims, start_indices_batching_dims;
} hl_gather_dims_t;

typedef struct hl_scatter_dims {
  hl_i64_list_t update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim;
  hl_i64_list_t input_batching_dims, scatter_indices_batching_dims;
} hl_scatter_dims_t;

// Replica groups in the form they were written: an explicit list of groups
// (text `{{0,1},{2,3}}`, proto fields 49 / 87) or the iota form
// (`[G,S]<=[dims]T(perm)`, proto 92 or 87.iota_replica_group_list).
// HL_GROUPS_NONE (and an explicit list with zero groups) means "empty":
// one group of all participants of the op's group mode.
typedef enum hl_groups_kind {
  HL_GROUPS_NONE = 0,
  HL_GROUPS_LIST,
  HL_GROUPS_IOTA,
} hl_groups_kind_t;

typedef struct hl_replica_groups {
  hl_groups_kind_t kind;
  int group_count;           // HL_GROUPS_LIST
  hl_i64_list_t *groups;     // owned array of group_count lists
  int64_t iota_num_groups;   // HL_GROUPS_IOTA
  int64_t iota_group_size;
  hl_i64_list_t iota_reshape_dims;
  hl_i64_list_t iota_transpose_perm;  // empty = identity
} hl_replica_groups_t;

typedef struct hl_source_target {
  int64_t source, target;
} hl_source_target_t;

typedef struct hl_key_value {
  char *key, *value;  // owned
} hl_key_value_t;

typedef struct hl_frontend_attributes {
  hl_key_value_t *entries;  // owned, in the order given
  int n;
} hl_frontend_attributes_t;

typedef struct hl_metadata {
  char *op_type, *op_name, *source_file;  // owned, NULL when absent
  int32_t source_line;
  bool present;
} hl_metadata_t;

// OpSharding. type values equal the proto enum.
typedef enum hl_sharding_type {
  HL_SHARDING_REPLICATED = 0, HL_SHARDING_MAXIMAL = 1, HL_SHARDING_TUPLE = 2,
  HL_SHARDING_OTHER = 3, HL_SHARDING_MANUAL = 4, HL_SHARDING_UNKNOWN = 5,
  HL_SHARDING_UNREDUCED = 6,
} hl_sharding_type_t;

typedef struct hl_sharding {
  hl_sharding_type_t type;
  hl_i64_list_t tile_assignment_dimensions;  // OTHER: tile grid (incl. last replicated dim)
  hl_i64_list_t tile_assignment_devices;     // explicit device list (or maximal device)
  hl_i64_list_t iota_reshape_dims;           // iota device list form instead
  hl_i64_list_t iota_transpose_perm;
  bool replicate_on_last_tile_dim;
  hl_i64_list_t last_tile_dims;              // hl_sharding_type_t values
  struct hl_sharding *tuple_shardings;       // owned array (TUPLE)
  int tuple_count;
} hl_sharding_t;

// shuffle's mode (newest XLA's xla/shuffle.h ShuffleMode; text `mode=`).
typedef enum hl_shuffle_mode {
  HL_SHUFFLE_NONE = 0, HL_SHUFFLE_ROTATE = 1, HL_SHUFFLE_PERMUTE = 2,
} hl_shuffle_mode_t;

typedef enum hl_triangular_transpose {
  HL_TRANSPOSE_INVALID = 0, HL_NO_TRANSPOSE = 1, HL_TRANSPOSE = 2, HL_ADJOINT = 3,
} hl_triangular_transpose_t;

//===----------------------------------------------------------------------===//
// Instruction attributes (decoded HloInstructionProto fields)
//===----------------------------------------------------------------------===//

typedef struct hl_output_operand_alias {
  int output, operand;
} hl_output_operand_alias_t;

typedef struct hl_attrs {
  hl_literal_t *literal;                // 8: constant (owned reference)
  int64_t parameter_number;             // 9
  char *fusion_kind;                    // 11: "kLoop", ... (owned)
  int64_t tuple_index;                  // 13
  hl_i64_list_t dimensions;             // 14 (see facts sheet for per-op meaning)
  bool has_window;
  hl_window_t window;                   // 15
  bool has_convolution_dimension_numbers;
  hl_conv_dims_t convolution_dimension_numbers;  // 16
  hl_slice_dim_t *slice_dimensions;     // 17 (owned array)
  int slice_count;
  int32_t exponent_bits, mantissa_bits; // 18, 19
  hl_i64_list_t dynamic_slice_sizes;    // 20 (also combined collective-permute slice_sizes)
  hl_padding_dim_t *padding_config;     // 21 (owned array)
  int padding_count;
  char *outfeed_config;                 // 22
  int distribution;                     // 23: RandomDistribution
  float epsilon;                        // 24
  int64_t feature_index;                // 25
  int64_t channel_id;                   // 26: <= 0 means none
  char *infeed_config;                  // 27
  char *custom_call_target;             // 28
  hl_shape_t *outfeed_shape;            // 29 (owned, NULL when absent)
  bool has_dot_dimension_numbers;
  hl_dot_dims_t dot_dimension_numbers;  // 30
  // 90 (ragged-dot): its inner dot dims live in dot_dimension_numbers.
  bool has_ragged_dot_dimension_numbers;
  hl_i64_list_t lhs_ragged_dimensions, rhs_group_dimensions;
  int fft_type;                         // 31: FFT=0, IFFT=1, RFFT=2, IRFFT=3
  hl_i64_list_t fft_length;             // 32
  bool has_gather_dimension_numbers;
  hl_gather_dims_t gather_dimension_numbers;  // 33
  hl_i64_list_t gather_slice_sizes;     // 34
  hl_sharding_t *sharding;              // 40 (owned, NULL when absent)
  char *backend_config;                 // 43 (raw text, owned)
  bool is_host_transfer;                // 47
  bool has_scatter_dimension_numbers;
  hl_scatter_dims_t scatter_dimension_numbers;  // 48
  hl_replica_groups_t replica_groups;   // 49 / 87 / 92 merged
  int64_t feature_group_count;          // 50: 1 when absent
  hl_i64_list_t operand_precision;      // 51: PrecisionConfig.operand_precision
  int precision_algorithm;              // 51: PrecisionConfig.algorithm
  hl_source_target_t *source_target_pairs;  // 52 (owned array)
  int source_target_count;
  bool constrain_layout;                // 56
  int64_t batch_group_count;            // 58: 1 when absent
  bool triangular_left_side, triangular_lower, triangular_unit_diagonal;  // 59
  hl_triangular_transpose_t triangular_transpose_a;
  bool is_stable;                       // 60
  bool *parameter_replication;          // 61 (owned array)
  int parameter_replication_count;
  bool cholesky_lower;                  // 62
  hl_comparison_direction_t comparison_direction;  // 63
  bool custom_call_has_side_effect;     // 65
  int64_t delta;                        // 66
  bool indices_are_sorted;              // 67
  hl_frontend_attributes_t frontend_attributes;  // 68
  bool unique_indices;                  // 69
  int rng_algorithm;                    // 70: DEFAULT=0, THREE_FRY=1, PHILOX=2
  bool use_global_device_ids;           // 71
  hl_comparison_type_t comparison_type; // 72
  int custom_call_api_version;          // 77
  // 57: custom-call operand_layout_constraints (owned array of shapes with layouts; 0 = none)
  hl_shape_t *operand_shapes_with_layout;
  int operand_shapes_with_layout_count;
  // 74: custom-call output_to_operand_aliasing (owned array; 0 = none). output is
  // the result's tuple index (0 for an array result); operand tuple indices
  // are not supported (operands are arrays).
  hl_output_operand_alias_t *output_operand_aliases;
  int output_operand_alias_count;
  char *async_execution_thread;         // 79
  int64_t k;                            // 81
  bool largest;                         // 85
  bool is_composite;                    // 89
  bool is_reverse;                      // 94: scan
  int64_t num_carries;                  // 95: scan
  int is_associative;                   // 96: scan; TriState UNSPECIFIED=0, TRUE=1, FALSE=2
  // Newest XLA only, text form only (their proto fields are not known here):
  bool has_dynamic_root;                // collective-reduce / -broadcast: last operand = roots
  hl_shuffle_mode_t shuffle_mode;       // shuffle: mode=rotate|permute
  hl_i64_list_t shuffle_shifts;         // shuffle mode=rotate: shifts={...}
  hl_literal_t *shuffle_indices;        // shuffle mode=permute: indices=<literal> (owned ref)
  hl_metadata_t metadata;               // 7
} hl_attrs_t;

//===----------------------------------------------------------------------===//
// Instructions, computations, modules
//===----------------------------------------------------------------------===//

struct hl_instruction {
  char *name;                 // without '%'
  hl_opcode_t opcode;
  hl_shape_t shape;           // result shape
  int64_t id;                 // unique within the module (proto id; parser numbers them)
  hl_instruction_t **operands;
  int operand_count;
  hl_computation_t **called_computations;  // proto order (while: [body, condition])
  int called_count;
  hl_instruction_t **control_predecessors;
  int control_predecessor_count;
  hl_attrs_t attrs;
  hl_computation_t *parent;
  int index;                  // position in parent->instructions
  int line, column;           // text source position (0 for proto)
};

struct hl_computation {
  char *name;
  int64_t id;
  hl_instruction_t **instructions;  // every operand precedes its users
  int instruction_count;
  hl_instruction_t *root;
  hl_instruction_t **parameters;    // indexed by parameter_number
  int parameter_count;
  bool is_fusion_computation;
  char *execution_thread;           // NULL or "main" = main thread
  hl_module_t *module;
};

struct hl_module {
  char *name;
  int64_t id;
  hl_computation_t **computations;  // callees before callers; entry normally last
  int computation_count;
  hl_computation_t *entry;
  int64_t replica_count;            // 0 when the program does not say
  int64_t num_partitions;           // 0 when the program does not say
  bool is_scheduled;
  hl_frontend_attributes_t frontend_attributes;
  char *source_path;                // file it came from (for messages), owned
  // What the SPMD partitioner recorded for the entry's result and parameters
  // (HloModuleProto fields 12 and 14; JAX's output sharding lives only
  // here). NULL / 0 when absent. Owned.
  hl_sharding_t *spmd_output_sharding;
  hl_sharding_t *spmd_parameters_shardings;
  int spmd_parameters_sharding_count;
};

//===----------------------------------------------------------------------===//
// Construction and lookup
//===----------------------------------------------------------------------===//

hl_status_t hl_module_create(const char *name, hl_module_t **out_module);
void hl_module_destroy(hl_module_t *module);  // NULL-safe

// Appends a new empty computation owned by `module`.
hl_status_t hl_module_add_computation(hl_module_t *module, const char *name,
                                      hl_computation_t **out_computation);
// Detaches `computation` from `module` and frees it with its instructions
// (the caller guarantees nothing calls it any more).
void hl_module_remove_computation(hl_module_t *module, hl_computation_t *computation);
hl_computation_t *hl_module_find_computation(const hl_module_t *module, const char *name);
hl_computation_t *hl_module_find_computation_by_id(const hl_module_t *module, int64_t id);

// Appends a new instruction (zeroed attrs with the "absent" defaults set:
// feature_group_count = batch_group_count = 1) owned by `computation`.
// The caller fills shape, operands and attributes.
hl_status_t hl_computation_add_instruction(hl_computation_t *computation, const char *name,
                                           hl_opcode_t opcode,
                                           hl_instruction_t **out_instruction);
// Frees an instruction the caller has taken out of its computation's array.
void hl_instruction_destroy(hl_instruction_t *inst);
hl_instruction_t *hl_computation_find_instruction(const hl_computation_t *c, const char *name);
// Fills c->parameters from the parameter instructions and checks their
// numbers are 0..n-1 without gaps or repeats.
hl_status_t hl_computation_index_parameters(hl_computation_t *c);

// Allocates the operand / called / control-predecessor arrays of `inst`.
hl_status_t hl_instruction_set_operands(hl_instruction_t *inst, hl_instruction_t *const *ops,
                                        int count);
hl_status_t hl_instruction_set_called(hl_instruction_t *inst, hl_computation_t *const *comps,
                                      int count);
hl_status_t hl_instruction_set_control_predecessors(hl_instruction_t *inst,
                                                    hl_instruction_t *const *preds, int count);

// Named accessors for called computations (NULL when absent).
hl_computation_t *hl_instruction_to_apply(const hl_instruction_t *inst);   // call/reduce/fusion/...
hl_computation_t *hl_instruction_while_body(const hl_instruction_t *inst);
hl_computation_t *hl_instruction_while_condition(const hl_instruction_t *inst);
// Combined (in-place) collective-permute with K slices per buffer (start
// indices given as a tuple of K index tuples): its source_target_pairs split
// into K equal consecutive parts, part k moving slice k. 1 otherwise.
int hl_instruction_permute_slot_count(const hl_instruction_t *inst);
// Looks up a frontend attribute; NULL when absent.
const char *hl_instruction_frontend_attribute(const hl_instruction_t *inst, const char *key);

// Attribute helpers.
hl_status_t hl_i64_list_set(hl_i64_list_t *list, const int64_t *values, int n);
void hl_i64_list_deinit(hl_i64_list_t *list);
hl_status_t hl_frontend_attributes_add(hl_frontend_attributes_t *fa, const char *key,
                                       const char *value);
void hl_attrs_deinit(hl_attrs_t *attrs);
void hl_sharding_deinit(hl_sharding_t *sharding);
void hl_replica_groups_deinit(hl_replica_groups_t *groups);

// Expands replica groups (either form) into explicit groups:
// *out_groups is an owned array of *out_count lists (free each with
// hl_i64_list_deinit, then hl_free the array). HL_GROUPS_NONE gives 0 groups.
hl_status_t hl_replica_groups_expand(const hl_replica_groups_t *groups,
                                     hl_i64_list_t **out_groups, int *out_count);

// The comparison type XLA uses when none is given: S* -> SIGNED,
// PRED/U* -> UNSIGNED, floats and complex -> FLOAT.
hl_comparison_type_t hl_comparison_type_default(hl_dtype_t operand_type);
const char *hl_comparison_direction_name(hl_comparison_direction_t d);  // "EQ"...
const char *hl_comparison_type_name(hl_comparison_type_t t);            // "FLOAT"...
hl_comparison_direction_t hl_comparison_direction_from_name(const char *s);
hl_comparison_type_t hl_comparison_type_from_name(const char *s);

// A short location for messages: "instruction 'add.3' (add) in computation 'main'"
// plus " at file:line:col" for text-loaded modules. Thread-local buffer.
const char *hl_instruction_location(const hl_instruction_t *inst);

#endif  // HL_RUNTIME_IR_MODULE_H_
