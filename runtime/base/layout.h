// Physical layouts (XLA's Layout: xla/layout.h, docs/LAYOUTS.md).
//
// A layout says how XLA would store an array: `minor_to_major` (the physical
// order of the dimensions) and, after ':' in the text form, tiles T(..),
// tail padding L(n), index / pointer types #(t) *(t), element size E(n),
// memory space S(n), split configs SC(..), a physical shape P(..), dynamic
// metadata bytes M(n) and (older XLA) sparse dimension levels D(..). Buffers
// in memory stay logical row-major whatever the layout; only `bitcast`
// (which reinterprets the physical bytes) and proto literals (stored in
// physical order) depend on it. minor_to_major, E(n) and S(n) live in
// hl_shape_t itself; the rarer parts live in hl_layout_ext_t, owned by the
// shape (NULL when absent).
#ifndef HL_RUNTIME_BASE_LAYOUT_H_
#define HL_RUNTIME_BASE_LAYOUT_H_

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/shape.h"
#include "runtime/base/status.h"
#include "runtime/base/strbuf.h"

#define HL_LAYOUT_MAX_TILES 8
#define HL_LAYOUT_MAX_SPLIT_INDICES 64
// A tile dimension written '*' (XLA's Tile::kCombineDimension).
#define HL_LAYOUT_COMBINE_DIM INT64_MIN

// XLA's DimLevelType (xla_data.proto).
typedef enum hl_dim_level {
  HL_DIM_DENSE = 0,
  HL_DIM_COMPRESSED = 1,
  HL_DIM_SINGLETON = 2,
  HL_DIM_LOOSE_COMPRESSED = 3,
} hl_dim_level_t;

typedef struct hl_layout_tile {
  int rank;
  int64_t dims[HL_MAX_RANK];  // HL_LAYOUT_COMBINE_DIM for '*'
} hl_layout_tile_t;

typedef struct hl_layout_split {
  int64_t dimension;
  int count;
  int64_t indices[HL_LAYOUT_MAX_SPLIT_INDICES];
} hl_layout_split_t;

typedef struct hl_layout_ext {
  int dim_level_count;                // D(...): one per dimension, or none
  uint8_t dim_level_types[HL_MAX_RANK];
  int dim_unique_count;               // 0 (all unique) or dim_level_count
  bool dim_unique[HL_MAX_RANK];       // false prints '+'
  int dim_ordered_count;              // 0 (all ordered) or dim_level_count
  bool dim_ordered[HL_MAX_RANK];      // false prints '~'
  int tile_count;
  hl_layout_tile_t tiles[HL_LAYOUT_MAX_TILES];
  int64_t tail_padding_alignment;     // L(n); 0 and 1 both mean none
  hl_dtype_t index_type;              // #(t); HL_INVALID when absent
  hl_dtype_t pointer_type;            // *(t); HL_INVALID when absent
  int split_count;
  hl_layout_split_t splits[HL_MAX_RANK];
  hl_shape_t *physical_shape;         // P(shape); owned, NULL when absent
  int64_t dynamic_metadata_prefix_bytes;  // M(n)
} hl_layout_ext_t;

// The shape's extension, created (zeroed) on first use.
hl_status_t hl_layout_ext_ensure(hl_shape_t *s, hl_layout_ext_t **out);
hl_status_t hl_layout_ext_copy(const hl_layout_ext_t *src, hl_layout_ext_t **out);
void hl_layout_ext_free(hl_layout_ext_t *ext);
// The extension holds nothing (every field at its default).
bool hl_layout_ext_is_empty(const hl_layout_ext_t *ext);

// "{1,0}", "{1,0:T(8,128)(2,1)E(4)S(1)}", in XLA's order of the parts.
void hl_layout_print(const hl_shape_t *s, hl_strbuf_t *out);
// The layout has something to print after ':'.
bool hl_layout_has_suffix(const hl_shape_t *s);

// minor_to_major entries form a permutation of the dimensions.
bool hl_layout_is_permutation(const hl_shape_t *s);
// Dimensions from major to minor (row-major {0..rank-1} without a layout).
void hl_layout_major_to_minor(const hl_shape_t *s, int64_t *out_dims);
// Bits one element occupies physically: E(n), else the type's natural
// storage (one byte for sub-byte types, as XLA stores them unpacked).
int64_t hl_layout_element_bits(const hl_shape_t *s);
// XLA's ShapeUtil::ByteSizeOf for a dense untiled array: elements times the
// physical element size, rounded up to whole bytes.
int64_t hl_layout_physical_byte_size(const hl_shape_t *s);
// Physical order equals logical row-major order (size-1 dimensions ignored).
bool hl_layout_is_row_major_order(const hl_shape_t *s);

// The first layout part whose physical order this runtime does not
// implement (tiles, sparse levels, tail padding, split configs, a physical
// shape, dynamic metadata), described for a message; NULL when none.
// Memory space and E(n) never reorder elements.
const char *hl_layout_unimplemented_part(const hl_shape_t *s);

// Whether `bitcast` from `operand` to `result` is defined and implemented:
// equal physical byte sizes, layouts this runtime reinterprets exactly
// (no tiles, sparse levels, ...), packed elements only between equal types.
// The message does not name the instruction; callers add it.
hl_status_t hl_layout_check_bitcast(const hl_shape_t *operand, const hl_shape_t *result);

#endif  // HL_RUNTIME_BASE_LAYOUT_H_
