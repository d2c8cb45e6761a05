// The strided copy engine of the kernels: a copy between two strided views
// of the same element size. Both source and destination have a stride per
// dimension (in elements; negative walks backwards, a source stride of 0
// repeats an element), so one routine serves broadcast / transpose / slice
// (data_movement.c: dense destination) and pad, reverse, dynamic-slice,
// dynamic-update-slice and gather (a block placed into or read out of a
// larger array).
//
// Dimensions contiguous on both sides are merged so the inner run is as long
// as possible; a run is a memcpy, a fill (source stride 0), or a typed loop
// specialised for a dense destination. A transpose (dense destination whose
// inner source stride is not 1 while an outer dimension has source stride 1)
// is copied in cache-sized tiles.
//
// Private to runtime/kernels; header-only so callers inline the typed runs.
#ifndef HL_RUNTIME_KERNELS_STRIDED_COPY_H_
#define HL_RUNTIME_KERNELS_STRIDED_COPY_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/shape.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// Writes n copies of the es-byte element `elem` to dst: typed stores for
// the common sizes, otherwise doubling the copied span with each memcpy.
#define HL_SC_FILL_(T)                                    \
  do {                                                    \
    T v_;                                                 \
    memcpy(&v_, elem, sizeof(T));                         \
    T *d_ = (T *)(void *)dst;                             \
    for (int64_t i_ = 0; i_ < n; i_++) d_[i_] = v_;       \
  } while (0)

static inline void hl_fill_elements(void *dst_v, const void *elem, size_t es, int64_t n) {
  char *dst = dst_v;
  if (n <= 0) return;
  switch (es) {
    case 1: memset(dst, *(const unsigned char *)elem, (size_t)n); return;
    case 2: HL_SC_FILL_(uint16_t); return;
    case 4: HL_SC_FILL_(uint32_t); return;
    case 8: HL_SC_FILL_(uint64_t); return;
    default: break;
  }
  size_t total = (size_t)n * es, done = es;
  memcpy(dst, elem, es);
  while (done < total) {
    size_t chunk = done < total - done ? done : total - done;
    memcpy(dst + done, dst, chunk);
    done += chunk;
  }
}
#undef HL_SC_FILL_

// The dense-destination loop is its own case: it is the hot path of
// broadcast / transpose / slice and vectorises better without a dst stride.
#define HL_SC_DENSE_(T)                                                      \
  do {                                                                       \
    T *d_ = (T *)(void *)dst;                                                \
    const T *s_ = (const T *)(const void *)src;                              \
    for (int64_t i_ = 0; i_ < n; i_++) d_[i_] = s_[i_ * ss];                 \
  } while (0)
#define HL_SC_RUN_(T)                                                        \
  do {                                                                       \
    T *d_ = (T *)(void *)dst;                                                \
    const T *s_ = (const T *)(const void *)src;                              \
    for (int64_t i_ = 0; i_ < n; i_++) d_[i_ * ds] = s_[i_ * ss];            \
  } while (0)

// dst[i * ds] = src[i * ss] for i < n, es-byte elements.
static inline void hl_sc_run(char *dst, int64_t ds, const char *src, int64_t ss, size_t es,
                             int64_t n) {
  if (ds == 1) {
    if (ss == 1) {
      memcpy(dst, src, (size_t)n * es);
      return;
    }
    if (ss == 0) {
      hl_fill_elements(dst, src, es, n);
      return;
    }
    switch (es) {
      case 1: HL_SC_DENSE_(uint8_t); return;
      case 2: HL_SC_DENSE_(uint16_t); return;
      case 4: HL_SC_DENSE_(uint32_t); return;
      case 8: HL_SC_DENSE_(uint64_t); return;
      default:
        for (int64_t i = 0; i < n; i++) memcpy(dst + i * (int64_t)es, src + i * ss * (int64_t)es, es);
        return;
    }
  }
  switch (es) {
    case 1: HL_SC_RUN_(uint8_t); break;
    case 2: HL_SC_RUN_(uint16_t); break;
    case 4: HL_SC_RUN_(uint32_t); break;
    case 8: HL_SC_RUN_(uint64_t); break;
    default:
      for (int64_t i = 0; i < n; i++)
        memcpy(dst + i * ds * (int64_t)es, src + i * ss * (int64_t)es, es);
  }
}
#undef HL_SC_DENSE_
#undef HL_SC_RUN_

enum { kHlScTile = 32 };

#if defined(__SSE2__)
// 8x8 / 4x4 / 2x2 register transposes of 2-, 4- and 8-byte elements (SSE2,
// baseline on x86-64; integer shuffles, so every bit pattern, NaN payloads
// included, moves unchanged): dst row a (stride dst_a) gets src column a,
// src row b at stride src_b.
static inline void hl_sc_t8x8_u16(uint16_t *d, int64_t dst_a, const uint16_t *s, int64_t src_b) {
  __m128i r0 = _mm_loadu_si128((const __m128i *)(const void *)(s + 0 * src_b));
  __m128i r1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 1 * src_b));
  __m128i r2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * src_b));
  __m128i r3 = _mm_loadu_si128((const __m128i *)(const void *)(s + 3 * src_b));
  __m128i r4 = _mm_loadu_si128((const __m128i *)(const void *)(s + 4 * src_b));
  __m128i r5 = _mm_loadu_si128((const __m128i *)(const void *)(s + 5 * src_b));
  __m128i r6 = _mm_loadu_si128((const __m128i *)(const void *)(s + 6 * src_b));
  __m128i r7 = _mm_loadu_si128((const __m128i *)(const void *)(s + 7 * src_b));
  __m128i t0 = _mm_unpacklo_epi16(r0, r1), t1 = _mm_unpackhi_epi16(r0, r1);
  __m128i t2 = _mm_unpacklo_epi16(r2, r3), t3 = _mm_unpackhi_epi16(r2, r3);
  __m128i t4 = _mm_unpacklo_epi16(r4, r5), t5 = _mm_unpackhi_epi16(r4, r5);
  __m128i t6 = _mm_unpacklo_epi16(r6, r7), t7 = _mm_unpackhi_epi16(r6, r7);
  __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
  __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
  __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
  __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
  _mm_storeu_si128((__m128i *)(void *)(d + 0 * dst_a), _mm_unpacklo_epi64(u0, u4));
  _mm_storeu_si128((__m128i *)(void *)(d + 1 * dst_a), _mm_unpackhi_epi64(u0, u4));
  _mm_storeu_si128((__m128i *)(void *)(d + 2 * dst_a), _mm_unpacklo_epi64(u1, u5));
  _mm_storeu_si128((__m128i *)(void *)(d + 3 * dst_a), _mm_unpackhi_epi64(u1, u5));
  _mm_storeu_si128((__m128i *)(void *)(d + 4 * dst_a), _mm_unpacklo_epi64(u2, u6));
  _mm_storeu_si128((__m128i *)(void *)(d + 5 * dst_a), _mm_unpackhi_epi64(u2, u6));
  _mm_storeu_si128((__m128i *)(void *)(d + 6 * dst_a), _mm_unpacklo_epi64(u3, u7));
  _mm_storeu_si128((__m128i *)(void *)(d + 7 * dst_a), _mm_unpackhi_epi64(u3, u7));
}

static inline void hl_sc_t4x4_u32(uint32_t *d, int64_t dst_a, const uint32_t *s, int64_t src_b) {
  __m128i r0 = _mm_loadu_si128((const __m128i *)(const void *)(s + 0 * src_b));
  __m128i r1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 1 * src_b));
  __m128i r2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * src_b));
  __m128i r3 = _mm_loadu_si128((const __m128i *)(const void *)(s + 3 * src_b));
  __m128i t0 = _mm_unpacklo_epi32(r0, r1), t1 = _mm_unpackhi_epi32(r0, r1);
  __m128i t2 = _mm_unpacklo_epi32(r2, r3), t3 = _mm_unpackhi_epi32(r2, r3);
  _mm_storeu_si128((__m128i *)(void *)(d + 0 * dst_a), _mm_unpacklo_epi64(t0, t2));
  _mm_storeu_si128((__m128i *)(void *)(d + 1 * dst_a), _mm_unpackhi_epi64(t0, t2));
  _mm_storeu_si128((__m128i *)(void *)(d + 2 * dst_a), _mm_unpacklo_epi64(t1, t3));
  _mm_storeu_si128((__m128i *)(void *)(d + 3 * dst_a), _mm_unpackhi_epi64(t1, t3));
}

static inline void hl_sc_t2x2_u64(uint64_t *d, int64_t dst_a, const uint64_t *s, int64_t src_b) {
  __m128i r0 = _mm_loadu_si128((const __m128i *)(const void *)s);
  __m128i r1 = _mm_loadu_si128((const __m128i *)(const void *)(s + src_b));
  _mm_storeu_si128((__m128i *)(void *)d, _mm_unpacklo_epi64(r0, r1));
  _mm_storeu_si128((__m128i *)(void *)(d + dst_a), _mm_unpackhi_epi64(r0, r1));
}

#endif

// One element: the 1 x 1 "square" of the element sizes without a register
// transpose (and of every size without SSE2).
#define HL_SC_T1X1_(d, dst_a, s, src_b) (*(d) = *(s))

// One 32 x 32 tile at a time: K x K squares through `kernel` where they fit,
// element by element at the tile's ragged edges (none when K is 1).
#define HL_SC_TILE_(T, K, kernel)                                                        \
  do {                                                                                   \
    T *d_ = (T *)(void *)dst;                                                            \
    const T *s_ = (const T *)(const void *)src;                                          \
    for (int64_t a0 = 0; a0 < A; a0 += kHlScTile)                                        \
      for (int64_t b0 = 0; b0 < B; b0 += kHlScTile) {                                    \
        int64_t ae = a0 + kHlScTile < A ? a0 + kHlScTile : A;                            \
        int64_t be = b0 + kHlScTile < B ? b0 + kHlScTile : B;                            \
        int64_t ak = a0 + (ae - a0) / (K) * (K), bk = b0 + (be - b0) / (K) * (K);        \
        for (int64_t a = a0; a < ak; a += (K))                                           \
          for (int64_t b = b0; b < bk; b += (K))                                         \
            kernel(d_ + a * dst_a + b, dst_a, s_ + a + b * src_b, src_b);                \
        for (int64_t a = a0; a < ae; a++)                                                \
          for (int64_t b = a < ak ? bk : b0; b < be; b++)                                \
            d_[a * dst_a + b] = s_[a + b * src_b];                                       \
      }                                                                                  \
  } while (0)

// A 2-d transpose block: dst[a * dst_a + b] = src[a + b * src_b], tiled so
// both sides stay in cache.
static inline void hl_sc_tile(char *dst, const char *src, size_t es, int64_t A, int64_t B,
                              int64_t dst_a, int64_t src_b) {
  switch (es) {
    case 1: HL_SC_TILE_(uint8_t, 1, HL_SC_T1X1_); break;
#if defined(__SSE2__)
    case 2: HL_SC_TILE_(uint16_t, 8, hl_sc_t8x8_u16); break;
    case 4: HL_SC_TILE_(uint32_t, 4, hl_sc_t4x4_u32); break;
    case 8: HL_SC_TILE_(uint64_t, 2, hl_sc_t2x2_u64); break;
#else
    case 2: HL_SC_TILE_(uint16_t, 1, HL_SC_T1X1_); break;
    case 4: HL_SC_TILE_(uint32_t, 1, HL_SC_T1X1_); break;
    case 8: HL_SC_TILE_(uint64_t, 1, HL_SC_T1X1_); break;
#endif
    default:
      for (int64_t a = 0; a < A; a++)
        for (int64_t b = 0; b < B; b++)
          memcpy(dst + (a * dst_a + b) * (int64_t)es, src + (a + b * src_b) * (int64_t)es, es);
  }
}
#undef HL_SC_TILE_
#undef HL_SC_T1X1_

// For every index I of `dims` (rank dimensions):
//   dst[sum I[d] * dst_strides[d]] = src[sum I[d] * src_strides[d]]
// (pointers already at the block origins).
static inline void hl_strided_copy(void *dst_v, const int64_t *dst_strides, const void *src_v,
                                   const int64_t *src_strides, int rank, const int64_t *dims_in,
                                   size_t es) {
  char *dst = dst_v;
  const char *src = src_v;
  int64_t dims[HL_MAX_RANK], dstr[HL_MAX_RANK], sstr[HL_MAX_RANK];
  int r = 0;
  for (int d = 0; d < rank; d++) {
    if (dims_in[d] <= 0) return;
    if (dims_in[d] == 1) continue;
    if (r > 0 && dstr[r - 1] == dst_strides[d] * dims_in[d] &&
        sstr[r - 1] == src_strides[d] * dims_in[d]) {
      dims[r - 1] *= dims_in[d];
      dstr[r - 1] = dst_strides[d];
      sstr[r - 1] = src_strides[d];
    } else {
      dims[r] = dims_in[d];
      dstr[r] = dst_strides[d];
      sstr[r] = src_strides[d];
      r++;
    }
  }
  if (r == 0) {
    memcpy(dst, src, es);
    return;
  }
  int64_t n = dims[r - 1], ds = dstr[r - 1], ss = sstr[r - 1], ies = (int64_t)es;
  // Tiled transpose: the outer dimension j that is unit-stride in the source.
  int j = -1;
  if (ds == 1 && ss > 1 && n >= 8)
    for (int d = r - 2; d >= 0; d--)
      if (sstr[d] == 1 && dims[d] >= 8) {
        j = d;
        break;
      }
  // Odometer over the dimensions the inner copy does not cover.
  int outer[HL_MAX_RANK], no = 0;
  for (int d = 0; d < r - 1; d++)
    if (d != j) outer[no++] = d;
  int64_t idx[HL_MAX_RANK] = {0};
  int64_t doff = 0, soff = 0;
  for (;;) {
    if (j >= 0)
      hl_sc_tile(dst + doff * ies, src + soff * ies, es, dims[j], n, dstr[j], ss);
    else
      hl_sc_run(dst + doff * ies, ds, src + soff * ies, ss, es, n);
    int k = no - 1;
    for (; k >= 0; k--) {
      int d = outer[k];
      doff += dstr[d];
      soff += sstr[d];
      if (++idx[k] < dims[d]) break;
      doff -= dstr[d] * dims[d];
      soff -= sstr[d] * dims[d];
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

#endif  // HL_RUNTIME_KERNELS_STRIDED_COPY_H_
