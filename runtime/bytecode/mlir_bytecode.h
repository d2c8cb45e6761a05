// MLIR bytecode (llvm-project mlir/docs/BytecodeFormat.md), read without
// MLIR: the container (magic `ML\xEFR`, version, producer, sections), the
// string, dialect, attribute/type-offset, properties and IR sections, into a
// generic tree of ops whose attributes and types stay indices into lazily
// decoded tables (a dialect decodes its own entries: vhlo.c). Every length,
// index and offset is checked; nothing points outside the input.
//
// Bytecode versions 0 to 6 are read (StableHLO 0.9.0 writes 1, 0.12.0 3,
// 0.14.0 4, 0.15.0 and later 6); a newer one is refused by number.
#ifndef HL_RUNTIME_BYTECODE_MLIR_BYTECODE_H_
#define HL_RUNTIME_BYTECODE_MLIR_BYTECODE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/status.h"

enum { HL_BC_MAX_VERSION = 6 };

// True when data starts with the bytecode magic.
bool hl_bc_looks_like(const uint8_t *data, size_t size);

typedef struct hl_bc_bytes {
  const uint8_t *data;
  size_t size;
} hl_bc_bytes_t;

// An attribute or type table entry: its dialect and its encoding (custom,
// else the textual assembly form, NUL-terminated).
typedef struct hl_bc_entry {
  uint32_t dialect;
  bool custom;
  hl_bc_bytes_t bytes;
} hl_bc_entry_t;

typedef struct hl_bc_op_name {
  uint32_t dialect;
  const char *name;  // without the dialect prefix (points into the input)
  bool registered;   // version >= 5; true before that
} hl_bc_op_name_t;

typedef struct hl_bc_block hl_bc_block_t;

typedef struct hl_bc_region {
  hl_bc_block_t *blocks;
  int block_count;
} hl_bc_region_t;

// Values are numbered 0.. in definition order over the whole file; a use
// refers to that number (see hl_bc_module_t.values).
typedef struct hl_bc_op {
  uint32_t name;         // index into op_names
  uint64_t location;     // attribute index
  int64_t attr_dict;     // attribute index of the DictionaryAttr; -1: none
  bool has_properties;
  bool properties_are_attr;  // an unregistered op: properties_attr holds them
  int64_t properties_attr;
  hl_bc_bytes_t properties;  // a registered op's properties, in its dialect's encoding
  uint64_t *result_types;    // type indices
  int result_count;
  uint32_t first_result;     // value number of result 0
  uint32_t *operands;        // value numbers
  int operand_count;
  uint32_t *successors;      // block indices within the parent region
  int successor_count;
  hl_bc_region_t *regions;
  int region_count;
  bool isolated;             // regions are isolated from above
} hl_bc_op_t;

struct hl_bc_block {
  uint64_t *arg_types;       // type indices
  int64_t *arg_locations;    // attribute indices; -1: unknown
  int arg_count;
  uint32_t first_arg;        // value number of argument 0
  hl_bc_op_t *ops;
  int op_count;
};

// Which op or block argument defined a value number.
typedef struct hl_bc_value {
  uint32_t group;  // value number of the first result / the argument itself
  uint32_t index;  // result index within the op
  bool defined;
} hl_bc_value_t;

typedef struct hl_bc_module {
  const char *path;          // for messages (not owned)
  uint64_t version;
  const char *producer;      // points into the input
  const char **strings;      // NUL-terminated (they are in the input)
  uint32_t *string_lengths;
  uint32_t string_count;
  const char **dialects;     // dialect names (from strings)
  hl_bc_bytes_t *dialect_versions;  // empty when a dialect has none
  uint32_t dialect_count;
  hl_bc_op_name_t *op_names;
  uint32_t op_name_count;
  hl_bc_entry_t *attrs;
  uint32_t attr_count;
  hl_bc_entry_t *types;
  uint32_t type_count;
  hl_bc_bytes_t *properties;  // the properties section's entries
  uint32_t property_count;
  hl_bc_block_t top;          // the top-level block (holds builtin.module)
  hl_bc_value_t *values;
  uint32_t value_count;
} hl_bc_module_t;

// Reads `data` (which must outlive the module: strings and blobs point into it).
hl_status_t hl_bc_read(const uint8_t *data, size_t size, const char *path, hl_bc_module_t *out);
void hl_bc_module_deinit(hl_bc_module_t *m);

// "dialect.name" of an op into buf.
const char *hl_bc_op_full_name(const hl_bc_module_t *m, const hl_bc_op_t *op, char *buf,
                               size_t cap);

// A cursor over encoded bytes (an entry, a properties blob).
typedef struct hl_bc_reader {
  const uint8_t *p, *end;
} hl_bc_reader_t;

bool hl_bc_read_varint(hl_bc_reader_t *r, uint64_t *out);
bool hl_bc_read_svarint(hl_bc_reader_t *r, int64_t *out);
bool hl_bc_read_byte(hl_bc_reader_t *r, uint8_t *out);
bool hl_bc_read_bytes(hl_bc_reader_t *r, size_t n, const uint8_t **out);

#endif  // HL_RUNTIME_BYTECODE_MLIR_BYTECODE_H_
