// Private to runtime/proto: helpers shared by the loader, the writer and the
// literal conversion. The generated protobuf-c code is seen only here.
#ifndef HL_RUNTIME_PROTO_PROTO_INTERNAL_H_
#define HL_RUNTIME_PROTO_PROTO_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo.pb-c.h"
#include "runtime/base/literal.h"
#include "runtime/base/shape.h"
#include "runtime/base/status.h"

// XLA's marker for an unbounded dynamic dimension ('?'); hl_shape_t uses -1.
#define HL_PROTO_UNBOUNDED_DIM INT64_MIN

// protobuf-c allocator backed by hl_malloc / hl_free, so unpacking honours the
// project's allocation-failure injection.
extern ProtobufCAllocator hl_proto_allocator;

//===----------------------------------------------------------------------===//
// Wire walking (proto_support.c)
//===----------------------------------------------------------------------===//

// Walks `data` as an encoded message of type `desc` without unpacking it:
// every tag, varint and length must be well formed and fit the buffer, every
// known field must use a wire type its declared type allows, and messages
// may nest at most HL_PROTO_MAX_DEPTH deep (protobuf-c recurses without a
// limit, so this bounds its stack use on hostile input). Unknown fields are
// skipped. The message says what is wrong and at which byte offset.
#define HL_PROTO_MAX_DEPTH 100
hl_status_t hl_proto_wire_check(const uint8_t *data, size_t size,
                                const ProtobufCMessageDescriptor *desc);

// Finds the last occurrence of length-delimited field `field_number` at the top
// level of `data` (no validation beyond bounds). Returns false if absent or if
// the buffer is malformed before it is found.
bool hl_proto_wire_find_bytes(const uint8_t *data, size_t size, uint32_t field_number,
                              const uint8_t **out_data, size_t *out_size);
// Counts top-level occurrences of a length-delimited field (-1 if malformed).
int hl_proto_wire_count_field(const uint8_t *data, size_t size, uint32_t field_number);

//===----------------------------------------------------------------------===//
// Arena for building messages to pack (proto_support.c)
//===----------------------------------------------------------------------===//

// Messages built for encoding live in an arena and are freed all at once,
// so error paths need no per-node cleanup. Allocation returns zeroed memory.
typedef struct hl_proto_arena hl_proto_arena_t;
hl_status_t hl_proto_arena_create(hl_proto_arena_t **out_arena);
void hl_proto_arena_destroy(hl_proto_arena_t *arena);  // NULL-safe
void *hl_proto_arena_alloc(hl_proto_arena_t *arena, size_t size);  // NULL on OOM
char *hl_proto_arena_strdup(hl_proto_arena_t *arena, const char *s);  // "" for NULL
// Copies n int64s; returns NULL for n == 0 (and on OOM, with *oom set).
int64_t *hl_proto_arena_i64(hl_proto_arena_t *arena, const int64_t *v, size_t n, bool *oom);

// Packs a built message into an hl_malloc'd buffer.
hl_status_t hl_proto_pack(const ProtobufCMessage *msg, uint8_t **out_data, size_t *out_size);

//===----------------------------------------------------------------------===//
// Shapes and literals (literal_proto.c)
//===----------------------------------------------------------------------===//

// ShapeProto -> hl_shape_t: checks element types, ranks <= HL_MAX_RANK,
// dimension sizes and that a layout is a permutation. Errors carry no
// location; callers add it.
hl_status_t hl_proto_shape_from_message(const Xla__ShapeProto *msg, hl_shape_t *out_shape);
// hl_shape_t -> ShapeProto (layout written only when the shape has one).
// The same, for a shape nested `depth` deep (a layout's physical shape).
hl_status_t hl_proto_shape_from_message_at_depth(const Xla__ShapeProto *msg, hl_shape_t *out_shape,
                                                 int depth);
// A LayoutProto into `out`'s layout fields (its rank already set) and back.
hl_status_t hl_proto_layout_from_message(const Xla__LayoutProto *msg, hl_shape_t *out, int depth);
hl_status_t hl_proto_layout_to_message(hl_proto_arena_t *arena, const hl_shape_t *shape,
                                       Xla__LayoutProto *msg);
hl_status_t hl_proto_shape_to_message(hl_proto_arena_t *arena, const hl_shape_t *shape,
                                      Xla__ShapeProto **out_msg);
// Same, but arrays always get a layout (the default row-major one when the
// shape has none), as XLA expects of literal and program shapes.
hl_status_t hl_proto_shape_to_message_with_layout(hl_proto_arena_t *arena,
                                                  const hl_shape_t *shape,
                                                  Xla__ShapeProto **out_msg);

// LiteralProto -> literal (row-major in memory, whatever the proto layout).
hl_status_t hl_proto_literal_from_message(const Xla__LiteralProto *msg,
                                          hl_literal_t **out_literal);
// Literal -> LiteralProto with the default layout and row-major data.
hl_status_t hl_proto_literal_to_message(hl_proto_arena_t *arena, const hl_literal_t *literal,
                                        Xla__LiteralProto **out_msg);

#endif  // HL_RUNTIME_PROTO_PROTO_INTERNAL_H_
