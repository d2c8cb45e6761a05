// Loads a program file whatever its format, detected by content, not name:
// gzip is inflated first; then a StableHLO portable artifact (MLIR bytecode),
// StableHLO (MLIR) text, HLO text, or a binary HloProto /
// HloModuleProto / HloSnapshot.
#ifndef HL_RUNTIME_LOADER_PROGRAM_LOADER_H_
#define HL_RUNTIME_LOADER_PROGRAM_LOADER_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

typedef enum hl_program_format {
  HL_FORMAT_HLO_TEXT,
  HL_FORMAT_HLO_PROTO,
  HL_FORMAT_MODULE_PROTO,
  HL_FORMAT_SNAPSHOT,
  HL_FORMAT_STABLEHLO,  // MLIR text (runtime/stablehlo/)
  HL_FORMAT_STABLEHLO_BYTECODE,  // portable artifact: MLIR bytecode of VHLO (runtime/bytecode/)
  HL_FORMAT_JAX_EXPORT,          // jax.export's flatbuffer around a portable artifact
} hl_program_format_t;

typedef struct hl_program {
  hl_module_t *module;
  hl_program_format_t format;
  bool gzipped;
  hl_literal_t **arguments;  // HloSnapshot arguments (owned), else NULL
  int argument_count;
  // A StableHLO program (text or portable artifact) with dynamic shapes
  // loaded with defer_dynamic_shapes: module is NULL and its bytes kept until
  // hl_program_refine (owned; NUL-terminated).
  char *dynamic_text;
  size_t dynamic_length;
  char *dynamic_name;
  // What the container says about its origin (hlo-launch --describe); zero
  // / empty where the format has no such field. A failed load keeps these,
  // format and gzipped (nothing else).
  uint64_t bytecode_version;          // MLIR bytecode version (portable artifact)
  char producer[64];                  // its producer, e.g. "StableHLO_v1.3.0"
  bool has_jax_export;                // the fields below are set
  uint16_t jax_serialization_version;
  uint16_t jax_calling_convention_version;
  int jax_nr_devices;
  char jax_function_name[128];
  char jax_platforms[256];            // comma-separated, in the export's order
} hl_program_t;

hl_status_t hl_program_load_file(const char *path, hl_program_t *out_program);
// Same, for bytes already in memory (`name` is used in messages).
hl_status_t hl_program_load_bytes(const uint8_t *data, size_t size, const char *name,
                                  hl_program_t *out_program);
void hl_program_deinit(hl_program_t *program);

// Loading choices; a NULL or zeroed struct means the defaults.
typedef struct hl_program_load_options {
  // Most bytes gzip'd input may inflate to (a gzip bomb stops there with an
  // error naming --max-inflated-size); 0: hl_program_default_inflate_limit().
  uint64_t max_inflated_bytes;
  // A StableHLO program (text or portable artifact) with dynamic shapes ('?')
  // loads without its module
  // (program->dynamic_text set) rather than failing; the caller reads the
  // arguments and calls hl_program_refine.
  bool defer_dynamic_shapes;
} hl_program_load_options_t;

// The whole file at `path` into a new buffer (hl_free), NUL-terminated
// after its `*out_size` bytes; the read hl_program_load_file does.
hl_status_t hl_program_read_file(const char *path, uint8_t **out, size_t *out_size);

hl_status_t hl_program_load_file_with(const char *path, const hl_program_load_options_t *options,
                                      hl_program_t *out_program);
hl_status_t hl_program_load_bytes_with(const uint8_t *data, size_t size, const char *name,
                                       const hl_program_load_options_t *options,
                                       hl_program_t *out_program);
// Parses a --max-inflated-size value: bytes, or K / M / G / T (KiB, MiB, ...).
hl_status_t hl_program_parse_size(const char *flag, const char *text, uint64_t *out_bytes);
// Half the memory available now (MemAvailable), at least 64 MiB.
uint64_t hl_program_default_inflate_limit(void);
const char *hl_program_format_name(hl_program_format_t format);

// A program loaded with defer_dynamic_shapes whose module is still to be made:
// lowers it with its dynamic shapes refined from the entry's arguments
// (shapes, and the values its shape computations read). No-op otherwise.
hl_status_t hl_program_refine(hl_program_t *program, hl_literal_t *const *args, int arg_count);
// Such a program's declared entry parameter types (hl_stablehlo_entry_types).
hl_status_t hl_program_dynamic_entry_types(const hl_program_t *program, hl_shape_t **out_types,
                                           int *out_count);

#endif  // HL_RUNTIME_LOADER_PROGRAM_LOADER_H_
