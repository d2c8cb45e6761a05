// The parsed form of an MLIR (StableHLO) text file: a syntax tree of generic
// operations, before lowering into the module IR. Both the pretty (custom
// assembly) and generic op forms parse into the same node: operands, named
// attributes, positional items (keywords and values the pretty form writes
// without a name, in order), regions, and the types after ':'. The lowering
// (stablehlo_lower.c) gives the positional items their meaning per op.
#ifndef HL_RUNTIME_STABLEHLO_MLIR_AST_H_
#define HL_RUNTIME_STABLEHLO_MLIR_AST_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/shape.h"

// A `!quant.uniform<...>` element type (parsed by quant_type.c). A tensor of
// it is parsed with the storage type as its dtype (what buffers and .npy files
// hold); the quantization travels beside the type as an id: 1 + index into
// hl_mlir_file_t.quant_types, 0 for a type that is not quantized.
typedef struct hl_mlir_quant_type {
  hl_dtype_t storage;                    // S2..S32 / U2..U32
  int64_t storage_min, storage_max;      // `i8<-127:127>`, else the storage type's range
  hl_dtype_t expressed;                  // F16, BF16, F32, F64
  int axis;                              // quantization_dimension; -1: per-tensor
  double *scales;                        // owned; count entries
  int64_t *zero_points;                  // owned; count entries
  int count;
  int line, column;
} hl_mlir_quant_type_t;

// Quantization ids of a list of types, by index (entries past n are 0).
typedef struct hl_mlir_quant_ids {
  int *ids;
  int n;
} hl_mlir_quant_ids_t;

int hl_mlir_quant_id(const hl_mlir_quant_ids_t *q, int k);

typedef enum hl_mlir_attr_kind {
  HL_MATTR_UNIT = 0,  // a name without value: `{is_stable}`
  HL_MATTR_INT,       // 3, 3 : i64, 0x1F
  HL_MATTR_FLOAT,     // 0.5 : f64
  HL_MATTR_BOOL,      // true / false
  HL_MATTR_STRING,    // "text" (s holds the unescaped bytes)
  HL_MATTR_SYMBOL,    // @name
  HL_MATTR_WORD,      // a bare keyword: GT, b, f, DEFAULT, ->
  HL_MATTR_ARRAY,     // [a, b], array<i64: 1, 2>, slices [0:2, 1:3] (each dim an ARRAY)
  HL_MATTR_DICT,      // {k = v, ...}
  HL_MATTR_DENSE,     // dense<...>: raw body kept, decoded once the type is known
  HL_MATTR_RESOURCE,  // dense_resource<name>
  HL_MATTR_DIALECT,   // #dialect.name<items> / #dialect<items>: s = "dialect.name"
  HL_MATTR_TYPE,      // a type used as an attribute value
  HL_MATTR_FUNCTION_TYPE,  // (t, ...) -> (t, ...): items = [inputs, results], ARRAYs of TYPE
  HL_MATTR_RAW,       // Shardy (sdy.*) syntax or a loc(...) kept as text: raw / raw_len, s = dialect name or "loc"
} hl_mlir_attr_kind_t;

typedef struct hl_mlir_attr hl_mlir_attr_t;
struct hl_mlir_attr {
  hl_mlir_attr_kind_t kind;
  int line, column;
  int64_t i;           // INT value; WORD in a pretty op: operands written before it
  uint64_t u;          // INT: the bits as written (hex float patterns, ui64)
  double f;
  bool b;
  char *s;             // STRING / SYMBOL / WORD / RESOURCE name / DIALECT name (owned)
  size_t s_len;        // STRING: byte length (may hold NULs)
  bool has_type;       // `: type` followed (INT, FLOAT, DENSE, ...)
  hl_shape_t type;     // owned
  int type_quant;      // quantization id of `type` (see hl_mlir_quant_type_t)
  hl_mlir_attr_t *items;  // ARRAY elements, DICT / DIALECT values (owned)
  char **keys;            // DICT / DIALECT keys; NULL entry for a positional item
  int n;
  const char *raw;     // DENSE: body text between '<' and '>'; RAW: the text (both point into the source)
  size_t raw_len;
  // DENSE read from bytecode: the elements' raw little-endian bytes (as
  // MLIR's DenseElementsAttr keeps them; one element's worth is a splat),
  // instead of a text body. Points into the input unless blob_owned. (A RAW
  // attribute printed from bytecode keeps its text here too: raw == blob.)
  const uint8_t *blob;
  size_t blob_len;
  bool blob_owned;
};

typedef struct hl_mlir_value_ref {
  char *name;  // without '%' and without '#k'
  int index;   // result index within its group (%r#1 -> 1)
  int line, column;
} hl_mlir_value_ref_t;

typedef struct hl_mlir_op hl_mlir_op_t;

typedef struct hl_mlir_block {
  char **arg_names;   // owned, without '%'
  hl_shape_t *arg_types;
  int arg_count;
  hl_mlir_quant_ids_t arg_quant;  // quantization ids of arg_types
  hl_mlir_op_t *ops;  // owned array
  int op_count;
} hl_mlir_block_t;

typedef struct hl_mlir_region {
  hl_mlir_block_t *blocks;
  int block_count;
} hl_mlir_region_t;

struct hl_mlir_op {
  char *name;         // "stablehlo.add", "func.func", ...
  int line, column;
  bool generic;       // written as "name"(...)
  // Result groups: %a, %b:2 -> names {a, b}, counts {1, 2}.
  char **result_names;
  int *result_counts;
  int result_group_count;
  int result_count;   // sum of counts
  hl_mlir_value_ref_t *operands;
  int operand_count;
  // Named attributes (generic properties, attribute dictionary and pretty `key = value`).
  char **attr_names;
  hl_mlir_attr_t *attrs;
  int attr_count;
  // Pretty-form items without a name, in order (keywords, values, @symbols).
  hl_mlir_attr_t *items;
  int item_count;
  char **iter_arg_names;  // pretty while: (%iter = %init, ...)
  int iter_arg_count;
  hl_mlir_region_t *regions;
  int region_count;
  hl_shape_t *operand_types;  // from the ':' signature, when written
  int operand_type_count;
  hl_shape_t *result_types;
  int result_type_count;
  hl_mlir_quant_ids_t operand_type_quant;  // quantization ids of operand_types
  hl_mlir_quant_ids_t result_type_quant;   // ... and of result_types
  bool has_function_type;     // ':' (...) -> (...) rather than a type list
  // func.func: symbol, visibility, signature, body.
  char *symbol;
  bool is_private;
  hl_mlir_attr_t *arg_attrs;  // one DICT (or UNIT when absent) per argument / result
  hl_mlir_attr_t *res_attrs;
  int arg_attr_count, res_attr_count;  // entries allocated (what deinit frees)
  // Read from bytecode: the op's source location as text ("f.py":12:3, a
  // name), owned, for messages (line / column stay 0); NULL otherwise.
  char *location;
};

typedef struct hl_mlir_resource {
  char *name;
  const char *hex;  // "0x..." text in the source (quotes excluded)
  size_t hex_len;
} hl_mlir_resource_t;

typedef struct hl_mlir_file {
  const char *path;   // for messages (not owned)
  // Top-level module: its attributes and the ops of its body (func.func ...).
  char *module_name;  // NULL when unnamed
  char **module_attr_names;
  hl_mlir_attr_t *module_attrs;
  int module_attr_count;
  hl_mlir_op_t *ops;
  int op_count;
  hl_mlir_resource_t *resources;
  int resource_count;
  hl_mlir_quant_type_t *quant_types;  // every !quant.uniform parsed (ids index it)
  int quant_type_count;
  // Shardy meshes (`sdy.mesh @name = <...>` at module level): symbol in
  // items[0], the raw `<...>` body in items[1] (see sharding_attrs.c).
  hl_mlir_op_t *meshes;
  int mesh_count;
  // Some tensor type has a dynamic dimension ('?', held as -1 with its bit in
  // hl_shape_t.dynamic_mask): the lowering refines them from the arguments
  // (refine_shapes.c).
  bool has_dynamic_shapes;
} hl_mlir_file_t;

void hl_mlir_attr_deinit(hl_mlir_attr_t *a);
void hl_mlir_op_deinit(hl_mlir_op_t *op);
void hl_mlir_file_deinit(hl_mlir_file_t *f);

// Named attribute lookup (NULL when absent).
const hl_mlir_attr_t *hl_mlir_op_attr(const hl_mlir_op_t *op, const char *name);
// DICT / DIALECT member lookup (NULL when absent).
const hl_mlir_attr_t *hl_mlir_attr_member(const hl_mlir_attr_t *a, const char *key);

#endif  // HL_RUNTIME_STABLEHLO_MLIR_AST_H_
