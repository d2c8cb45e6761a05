// Binary XLA protos <-> module IR, through the project's wire-compatible
// schema in proto/ (generated C is used only in runtime/proto/).
#ifndef HL_RUNTIME_PROTO_PROTO_IO_H_
#define HL_RUNTIME_PROTO_PROTO_IO_H_

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/literal.h"
#include "runtime/base/status.h"
#include "runtime/ir/module.h"

typedef enum hl_proto_kind {
  HL_PROTO_HLO_PROTO,        // xla.HloProto (--xla_dump_hlo_as_proto)
  HL_PROTO_MODULE_PROTO,     // bare xla.HloModuleProto
  HL_PROTO_SNAPSHOT,         // xla.HloSnapshot (arguments become inputs)
} hl_proto_kind_t;

// Decodes an (uncompressed) binary message of the given kind. For a
// snapshot, *out_arguments / *out_argument_count receive its arguments
// (owned by the caller: release each, then hl_free the array); pass NULL
// for other kinds. `source_name` is used in messages and stored as
// module->source_path. Errors name the computation / instruction and field.
hl_status_t hl_proto_decode(const uint8_t *data, size_t size, hl_proto_kind_t kind,
                            const char *source_name, hl_module_t **out_module,
                            hl_literal_t ***out_arguments, int *out_argument_count);

// Guesses which of the three messages `data` holds (by walking its wire
// structure, without trusting the file name). Error if none fits.
hl_status_t hl_proto_detect_kind(const uint8_t *data, size_t size, hl_proto_kind_t *out_kind);

// Encodes the module as an xla.HloProto (what XLA's dumps hold). The output
// is deterministic. *out_data is owned by the caller (hl_free).
hl_status_t hl_proto_encode_hlo_proto(const hl_module_t *module, uint8_t **out_data,
                                      size_t *out_size);

// Literal conversion used by snapshots and constants (exposed for tests):
// decodes an encoded xla.LiteralProto.
hl_status_t hl_proto_decode_literal(const uint8_t *data, size_t size, hl_literal_t **out_literal);
hl_status_t hl_proto_encode_literal(const hl_literal_t *literal, uint8_t **out_data,
                                    size_t *out_size);

// Decodes an encoded xla.OpSharding (jax.export keeps its argument and result
// shardings so). Release with hl_sharding_deinit.
hl_status_t hl_proto_decode_op_sharding(const uint8_t *data, size_t size,
                                        hl_sharding_t *out_sharding);

#endif  // HL_RUNTIME_PROTO_PROTO_IO_H_
