// fft (runtime/kernels/fft.c). Expected values: the StableHLO spec example,
// small transforms worked by hand, and a naive double-precision DFT.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/threads/thread_pool.h"
#include "tests/unit/hlo_run_util.h"

static void test_spec_example(void) {
  hr_expect("HloModule m\nENTRY e {\n  x = c64[4] constant({(1,0),(0,0),(0,0),(0,0)})\n"
            "  ROOT r = c64[4] fft(x), fft_type=FFT, fft_length={4}\n}\n",
            "c64[4]", "{(1,0),(1,0),(1,0),(1,0)}");
}

static void test_inverse_scaling(void) {
  // IFFT of [4,0,0,0] is [1,1,1,1]: the inverse divides by N.
  hr_expect("HloModule m\nENTRY e {\n  x = c128[4] constant({(4,0),(0,0),(0,0),(0,0)})\n"
            "  ROOT r = c128[4] fft(x), fft_type=IFFT, fft_length={4}\n}\n",
            "c128[4]", "{(1,0),(1,0),(1,0),(1,0)}");
}

static void test_real_transforms(void) {
  // RFFT [1,2,3,4] = [10, -2+2i, -2] (the first N/2+1 of the full FFT).
  hr_expect("HloModule m\nENTRY e {\n  x = f64[4] constant({1,2,3,4})\n"
            "  ROOT r = c128[3] fft(x), fft_type=RFFT, fft_length={4}\n}\n",
            "c128[3]", "{(10,0),(-2,2),(-2,0)}");
  // IRFFT back to length 4, batched over 2 rows (second row doubled).
  hr_expect("HloModule m\nENTRY e {\n"
            "  x = c128[2,3] constant({{(10,0),(-2,2),(-2,0)},{(20,0),(-4,4),(-4,0)}})\n"
            "  ROOT r = f64[2,4] fft(x), fft_type=IRFFT, fft_length={4}\n}\n",
            "f64[2,4]", "{{1,2,3,4},{2,4,6,8}}");
  // 2-D FFT of a 2x2: [[1,2],[3,4]] -> [[10,-2],[-4,0]].
  hr_expect("HloModule m\nENTRY e {\n  x = c64[2,2] constant({{(1,0),(2,0)},{(3,0),(4,0)}})\n"
            "  ROOT r = c64[2,2] fft(x), fft_type=FFT, fft_length={2,2}\n}\n",
            "c64[2,2]", "{{(10,0),(-2,0)},{(-4,0),(0,0)}}");
}

static void test_errors(void) {
  hr_expect_error("HloModule m\nENTRY e {\n  x = f32[4] constant({1,2,3,4})\n"
                  "  ROOT r = c64[4] fft(x), fft_type=RFFT, fft_length={4}\n}\n",
                  "RFFT");
  hr_expect_error("HloModule m\nENTRY e {\n  x = c64[4] constant({1,2,3,4})\n"
                  "  ROOT r = c128[4] fft(x), fft_type=FFT, fft_length={4}\n}\n",
                  "element types");
}

// Batches cut into several chunks of transforms (chunks of about 64 Ki
// elements, a multiple of 4 transforms; the last one shorter), on one thread
// and on a pool of 3: the same bits, and each transform within 1e-4 of a
// naive double-precision DFT of its own row (so no chunk reads or writes
// another's rows): 1-D c64 FFT, f32 RFFT and c64 IRFFT of 70 rows of 1024
// (chunks of 64 and 6 transforms).
static void naive_dft(const double *re, const double *im, double *ore, double *oim, int n,
                      bool inverse) {
  double *c = malloc(sizeof(double) * (size_t)n), *sn = malloc(sizeof(double) * (size_t)n);
  for (int j = 0; j < n; j++) {
    c[j] = cos(2 * M_PI * j / n);
    sn[j] = (inverse ? 1 : -1) * sin(2 * M_PI * j / n);
  }
  for (int k = 0; k < n; k++) {
    double sr = 0, si = 0;
    for (int t = 0, j = 0; t < n; t++, j = (j + k) % n) {
      sr += re[t] * c[j] - im[t] * sn[j];
      si += re[t] * sn[j] + im[t] * c[j];
    }
    ore[k] = inverse ? sr / n : sr;
    oim[k] = inverse ? si / n : si;
  }
  free(c);
  free(sn);
}

static hl_literal_t *run_fft(const char *text, hl_literal_t *arg, hl_thread_pool_t *pool) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "fft.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  hl_exec_options_t o = {.pool = pool};
  hl_literal_t *out = NULL;
  HL_ASSERT_OK(hl_execute(m, &o, &arg, 1, &out));
  hl_module_destroy(m);
  return out;
}

static void test_chunked_batches(void) {
  enum { B = 70, N = 1024, H = N / 2 + 1 };
  static const struct {
    const char *text, *in_shape;
    int kind;  // 0 FFT c64, 1 RFFT f32, 2 IRFFT c64
  } kCases[] = {
      {"HloModule m\nENTRY e {\n  x = c64[70,1024] parameter(0)\n"
       "  ROOT r = c64[70,1024] fft(x), fft_type=FFT, fft_length={1024}\n}\n", "c64[70,1024]", 0},
      {"HloModule m\nENTRY e {\n  x = f32[70,1024] parameter(0)\n"
       "  ROOT r = c64[70,513] fft(x), fft_type=RFFT, fft_length={1024}\n}\n", "f32[70,1024]", 1},
      {"HloModule m\nENTRY e {\n  x = c64[70,513] parameter(0)\n"
       "  ROOT r = f32[70,1024] fft(x), fft_type=IRFFT, fft_length={1024}\n}\n", "c64[70,513]", 2},
  };
  hl_thread_pool_t *pool = NULL;
  HL_ASSERT_OK(hl_thread_pool_create(3, &pool));
  double *re = malloc(sizeof(double) * N), *im = malloc(sizeof(double) * N);
  double *ore = malloc(sizeof(double) * N), *oim = malloc(sizeof(double) * N);
  for (int c = 0; c < 3; c++) {
    hl_shape_t shape;
    HL_ASSERT_OK(hl_parse_shape(kCases[c].in_shape, &shape));
    hl_literal_t *x = NULL;
    HL_ASSERT_OK(hl_literal_create_uninitialized(&shape, &x));
    float *xf = x->data;
    int in_len = kCases[c].kind == 2 ? H : N, scalars = kCases[c].kind == 1 ? 1 : 2;
    for (int64_t i = 0; i < (int64_t)B * in_len * scalars; i++)
      xf[i] = (float)(((i * 7919) % 2001) - 1000) / 500.0f;
    if (kCases[c].kind == 2)  // a real signal's spectrum: DC and Nyquist bins real
      for (int b = 0; b < B; b++) xf[2 * (b * H) + 1] = xf[2 * (b * H + H - 1) + 1] = 0;
    hl_literal_t *one = run_fft(kCases[c].text, x, NULL), *many = run_fft(kCases[c].text, x, pool);
    CU_ASSERT_TRUE(hl_literal_equal(one, many));
    const float *yf = one->data;
    double worst = 0;
    for (int b = 0; b < B; b++) {
      for (int t = 0; t < N; t++) {
        if (kCases[c].kind == 0) {
          re[t] = xf[2 * (b * N + t)], im[t] = xf[2 * (b * N + t) + 1];
        } else if (kCases[c].kind == 1) {
          re[t] = xf[b * N + t], im[t] = 0;
        } else {  // Hermitian extension of the H stored bins
          int k = t < H ? t : N - t;
          re[t] = xf[2 * (b * H + k)];
          im[t] = t < H ? xf[2 * (b * H + k) + 1] : -xf[2 * (b * H + k) + 1];
        }
      }
      naive_dft(re, im, ore, oim, N, kCases[c].kind == 2);
      for (int k = 0; k < (kCases[c].kind == 1 ? H : N); k++) {
        double gr, gi = 0;
        if (kCases[c].kind == 0) {
          gr = yf[2 * (b * N + k)], gi = yf[2 * (b * N + k) + 1];
        } else if (kCases[c].kind == 1) {
          gr = yf[2 * (b * H + k)], gi = yf[2 * (b * H + k) + 1];
        } else {
          gr = yf[b * N + k];
          oim[k] = 0;
        }
        double err = fabs(gr - ore[k]) + fabs(gi - oim[k]);
        double scale = 1 + fabs(ore[k]) + fabs(oim[k]);
        if (err / scale > worst) worst = err / scale;
      }
    }
    CU_ASSERT(worst < 1e-4);
    if (worst >= 1e-4) printf("\n  case %d: worst relative error %g", c, worst);
    hl_literal_release(one);
    hl_literal_release(many);
    hl_literal_release(x);
  }
  free(re);
  free(im);
  free(ore);
  free(oim);
  hl_thread_pool_destroy(pool);
}

static CU_TestInfo tests[] = {
    {"spec_example", test_spec_example},
    {"inverse_scaling", test_inverse_scaling},
    {"real_transforms", test_real_transforms},
    {"errors", test_errors},
    {"chunked_batches", test_chunked_batches},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fft", tests)
