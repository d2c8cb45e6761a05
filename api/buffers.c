#include "api/buffers.h"

#include <string.h>

#include "runtime/base/strbuf.h"

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

// Element moves by size, so the compiler emits one load and store each.
#define HL_REORDER_LOOP(T)                                                   \
  do {                                                                       \
    const T *s = src;                                                        \
    T *d = dst;                                                              \
    for (int64_t n = 0; n < total; n += inner) {                             \
      int64_t off = 0;                                                       \
      for (int i = 0; i < rank - 1; i++) off += idx[i] * cstride[i];         \
      if (from_column_major)                                                 \
        for (int64_t k = 0; k < inner; k++) d[n + k] = s[off + k * cstride[rank - 1]]; \
      else                                                                   \
        for (int64_t k = 0; k < inner; k++) d[off + k * cstride[rank - 1]] = s[n + k]; \
      for (int i = rank - 2; i >= 0; i--) {                                  \
        if (++idx[i] < dims[i]) break;                                       \
        idx[i] = 0;                                                          \
      }                                                                      \
    }                                                                        \
  } while (0)

typedef struct { uint64_t lo, hi; } hl_u128_t;

void hl_api_reorder(const void *src, void *dst, int rank, const int64_t *dims, size_t size,
                    bool from_column_major) {
  int64_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];
  if (total == 0) return;
  if (rank <= 1) {
    memcpy(dst, src, (size_t)total * size);
    return;
  }
  // Walk the row-major order; cstride[i] is dimension i's stride in the
  // column-major array (the first dimension varies fastest there).
  int64_t cstride[HL_MAX_RANK], idx[HL_MAX_RANK] = {0};
  cstride[0] = 1;
  for (int i = 1; i < rank; i++) cstride[i] = cstride[i - 1] * dims[i - 1];
  int64_t inner = dims[rank - 1];
  switch (size) {
    case 1: HL_REORDER_LOOP(uint8_t); break;
    case 2: HL_REORDER_LOOP(uint16_t); break;
    case 4: HL_REORDER_LOOP(uint32_t); break;
    case 8: HL_REORDER_LOOP(uint64_t); break;
    default: HL_REORDER_LOOP(hl_u128_t); break;  // 16: c128
  }
}
