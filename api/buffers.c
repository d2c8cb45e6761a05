#include "api/buffers.h"

#include <string.h>

#include "runtime/base/strbuf.h"
#include "runtime/kernels/array_copy.h"

// hlo_dtype_t is numbered as XLA's PrimitiveType, as hl_dtype_t is.
_Static_assert((int)HLO_PRED == (int)HL_PRED && (int)HLO_S32 == (int)HL_S32 &&
                   (int)HLO_U64 == (int)HL_U64 && (int)HLO_F16 == (int)HL_F16 &&
                   (int)HLO_F32 == (int)HL_F32 && (int)HLO_F64 == (int)HL_F64 &&
                   (int)HLO_C64 == (int)HL_C64 && (int)HLO_BF16 == (int)HL_BF16 &&
                   (int)HLO_C128 == (int)HL_C128 && (int)HLO_F8E5M2 == (int)HL_F8E5M2 &&
                   (int)HLO_F8E4M3FN == (int)HL_F8E4M3FN,
               "hlo_dtype_t follows XLA's PrimitiveType numbers");
_Static_assert(HLO_MAX_RANK == HL_MAX_RANK, "one rank limit");

bool hl_api_dtype_supported(hl_dtype_t dtype) {
  switch (dtype) {
    case HL_PRED: case HL_S8: case HL_S16: case HL_S32: case HL_S64:
    case HL_U8: case HL_U16: case HL_U32: case HL_U64:
    case HL_F16: case HL_F32: case HL_F64: case HL_C64: case HL_BF16: case HL_C128:
    case HL_F8E5M2: case HL_F8E4M3FN:
      return true;
    default:
      return false;
  }
}

static void print_buffer_shape(const hlo_buffer_t *b, hl_strbuf_t *sb) {
  hl_strbuf_appendf(sb, "%s[", hl_dtype_name((hl_dtype_t)b->dtype));
  for (int i = 0; i < b->rank && b->dims; i++) hl_strbuf_appendf(sb, i ? ",%lld" : "%lld",
                                                                 (long long)b->dims[i]);
  hl_strbuf_appendf(sb, "]");
}

hl_status_t hl_api_check_buffer(const hlo_buffer_t *b, const hl_shape_t *want,
                                const char *what) {
  bool same = (int)b->dtype == (int)want->dtype && b->rank == want->rank &&
              (b->rank == 0 || b->dims);
  for (int i = 0; same && i < b->rank; i++) same = b->dims[i] == want->dims[i];
  if (b->order != HLO_ROW_MAJOR && b->order != HLO_COLUMN_MAJOR)
    return HL_INVALID("%s: order %d is neither HLO_ROW_MAJOR nor HLO_COLUMN_MAJOR", what,
                      (int)b->order);
  if (same) return NULL;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  if (b->rank < 0 || b->rank > HL_MAX_RANK)
    hl_strbuf_appendf(&sb, "rank %d", (int)b->rank);
  else
    print_buffer_shape(b, &sb);
  hl_strbuf_appendf(&sb, ", but the program's is ");
  hl_shape_print(want, false, &sb);
  hl_status_t st = HL_INVALID("%s is %s", what, sb.failed ? "(out of memory)" : hl_strbuf_cstr(&sb));
  hl_strbuf_deinit(&sb);
  return st;
}

void hl_api_wrap(const hl_shape_t *shape, void *data, hl_literal_t *out) {
  memset(out, 0, sizeof(*out));
  out->refcount = 1;
  out->shape = hl_shape_array(shape->dtype, shape->rank, shape->dims);
  out->data = data;
  out->byte_size = (size_t)hl_shape_byte_size(&out->shape);
}

void hl_api_reorder(const void *src, void *dst, int rank, const int64_t *dims, size_t size,
                    bool from_column_major) {
  // Strides in elements of the row-major and the column-major layouts; the
  // kernels' strided copy tiles the transpose.
  int64_t row[HL_MAX_RANK], col[HL_MAX_RANK];
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    row[i] = stride;
    stride *= dims[i];
  }
  stride = 1;
  for (int i = 0; i < rank; i++) {
    col[i] = stride;
    stride *= dims[i];
  }
  if (from_column_major) {
    hl_array_copy_strided(dst, row, src, col, rank, dims, size);
    return;
  }
  // Walked in reversed dimension order, so the destination is the dense
  // side again (the engine's tiled transpose is for a dense destination).
  int64_t rdims[HL_MAX_RANK], rrow[HL_MAX_RANK], rcol[HL_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    rdims[i] = dims[rank - 1 - i];
    rrow[i] = row[rank - 1 - i];
    rcol[i] = col[rank - 1 - i];
  }
  hl_array_copy_strided(dst, rcol, src, rrow, rank, rdims, size);
}
