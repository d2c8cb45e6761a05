// The strided copy engine's transpose tiles (runtime/kernels/strided_copy.h):
// for every element size, block shapes below, at and past the register
// transposes' squares (8x8 2-byte, 4x4 4-byte, 2x2 8-byte) and the 32x32
// tile, with padded row strides on both sides, every destination element is
// its source element, byte for byte, and nothing outside the block is
// written; the same through hl_strided_copy for 2-d and 3-d transposes.
// Expected values come from an element-by-element loop in this file.
// hl-test-libs: hl_base
#include "runtime/kernels/strided_copy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/test_util.h"

static uint64_t g_state = 88172645463325252ull;
static uint8_t next_byte(void) {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return (uint8_t)g_state;
}

static void test_tiles_match_element_loop(void) {
  static const int64_t kSizes[] = {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 71};
  static const size_t kElem[] = {1, 2, 4, 8, 3};
  enum { kN = sizeof(kSizes) / sizeof(kSizes[0]) };
  int bad = 0;
  for (int e = 0; e < 5; e++) {
    size_t es = kElem[e];
    for (int i = 0; i < kN; i++)
      for (int j = 0; j < kN; j++) {
        int64_t A = kSizes[i], B = kSizes[j];
        int64_t src_b = A + (int64_t)(i % 3), dst_a = B + (int64_t)(j % 2);
        size_t src_bytes = (size_t)(src_b * B) * es, dst_bytes = (size_t)(dst_a * A) * es;
        uint8_t *src = malloc(src_bytes), *got = malloc(dst_bytes), *want = malloc(dst_bytes);
        CU_ASSERT_PTR_NOT_NULL_FATAL(src);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        for (size_t k = 0; k < src_bytes; k++) src[k] = next_byte();
        memset(got, 0xA5, dst_bytes);
        memset(want, 0xA5, dst_bytes);
        for (int64_t a = 0; a < A; a++)
          for (int64_t b = 0; b < B; b++)
            memcpy(want + (size_t)(a * dst_a + b) * es, src + (size_t)(a + b * src_b) * es, es);
        hl_sc_tile((char *)got, (const char *)src, es, A, B, dst_a, src_b);
        if (memcmp(got, want, dst_bytes) != 0 && bad++ < 3)
          printf("\n  es=%zu A=%lld B=%lld differs", es, (long long)A, (long long)B);
        free(src);
        free(got);
        free(want);
      }
  }
  CU_ASSERT_EQUAL(bad, 0);
}

// hl_strided_copy of a dense destination from a transposed source view:
// [P, Q, R] -> [R, P, Q] (permutation {2, 0, 1}) and a plain 2-d one.
static void test_strided_copy_transposes(void) {
  static const int64_t kShapes[][3] = {{1, 9, 17}, {3, 8, 8}, {2, 33, 70}, {5, 16, 9}};
  for (int e = 0; e < 4; e++) {
    size_t es = (size_t)1 << e;
    for (int s = 0; s < 4; s++) {
      int64_t P = kShapes[s][0], Q = kShapes[s][1], R = kShapes[s][2];
      size_t n = (size_t)(P * Q * R);
      uint8_t *src = malloc(n * es), *got = malloc(n * es), *want = malloc(n * es);
      CU_ASSERT_PTR_NOT_NULL_FATAL(src);
      CU_ASSERT_PTR_NOT_NULL_FATAL(got);
      CU_ASSERT_PTR_NOT_NULL_FATAL(want);
      for (size_t k = 0; k < n * es; k++) src[k] = next_byte();
      // Result index (r, p, q) reads source (p, q, r) at p*Q*R + q*R + r.
      for (int64_t r = 0; r < R; r++)
        for (int64_t p = 0; p < P; p++)
          for (int64_t q = 0; q < Q; q++)
            memcpy(want + (size_t)((r * P + p) * Q + q) * es,
                   src + (size_t)(p * Q * R + q * R + r) * es, es);
      int64_t dims[3] = {R, P, Q}, dst_strides[3] = {P * Q, Q, 1};
      int64_t src_strides[3] = {1, Q * R, R};
      hl_strided_copy(got, dst_strides, src, src_strides, 3, dims, es);
      CU_ASSERT_EQUAL(memcmp(got, want, n * es), 0);
      // 2-d: [P*Q, R] -> [R, P*Q].
      int64_t dims2[2] = {R, P * Q}, dst2[2] = {P * Q, 1}, src2[2] = {1, R};
      memset(got, 0, n * es);
      hl_strided_copy(got, dst2, src, src2, 2, dims2, es);
      CU_ASSERT_EQUAL(memcmp(got, want, n * es), 0);
      free(src);
      free(got);
      free(want);
    }
  }
}

static CU_TestInfo tests[] = {
    {"tiles_match_element_loop", test_tiles_match_element_loop},
    {"strided_copy_transposes", test_strided_copy_transposes},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("strided_copy", tests)
