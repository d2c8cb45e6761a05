// Entry arguments: random values checked bit for bit against an independent
// Python implementation of the algorithm documented in --help; .npy files
// from --args / --args-dir (both layouts) with their error messages.
#include "launcher/inputs.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

static char g_dir[256];

static const char *in_dir(const char *name) {
  static char buf[4][512];
  static int next;
  char *b = buf[next++ % 4];
  snprintf(b, sizeof(buf[0]), "%s/%s", g_dir, name);
  return b;
}

static int run_python(const char *code) {
  char script[512];
  snprintf(script, sizeof(script), "%s/script.py", g_dir);
  FILE *f = fopen(script, "w");
  if (!f) return -1;
  fprintf(f,
          "import numpy as np, os\n"
          "D = '%s'\n"
          "M = (1 << 64) - 1\n"
          "def stream(seed, k):\n"
          "  st = (seed + (k + 1) * 0xD1B54A32D192ED03) & M\n"
          "  while True:\n"
          "    st = (st + 0x9E3779B97F4A7C15) & M\n"
          "    z = st\n"
          "    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M\n"
          "    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M\n"
          "    yield z ^ (z >> 31)\n"
          "def floats(g, n): return np.array([2.0 * ((next(g) >> 11) * 2.0**-53) - 1.0 "
          "for _ in range(n)])\n"
          "def ints(g, n, lo, hi): return np.array([lo + next(g) %% (hi - lo + 1) "
          "for _ in range(n)])\n"
          "def bf16_bits(x):\n"  // round-to-nearest-even from f64 straight to 8 bits of mantissa
          "  b = np.asarray(x, np.float64).view(np.uint64)\n"
          "  b = ((b + np.uint64((1 << 44) - 1) + ((b >> np.uint64(45)) & np.uint64(1))) "
          ">> np.uint64(45)) << np.uint64(45)\n"
          "  return (b.view(np.float64).astype(np.float32).view(np.uint32) >> 16)"
          ".astype(np.uint16)\n"
          "%s\n",
          g_dir, code);
  fclose(f);
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s", script);
  return system(cmd);
}

static int suite_init(void) { return hl_test_make_dir(g_dir, sizeof(g_dir), "inputs"); }

static int suite_clean(void) { return hl_test_remove_dir(g_dir); }

static hl_shape_t parse_shape(const char *text) {
  hl_shape_t s;
  memset(&s, 0, sizeof(s));
  HL_ASSERT_OK(hl_parse_shape(text, &s));
  return s;
}

// Compares a literal's bytes with a .npy file the oracle wrote (bf16 as its
// uint16 bits, sub-byte ints one per byte as they are in memory).
static void expect_bytes_like(const hl_literal_t *lit, const char *file) {
  hl_literal_t *want = NULL;
  HL_ASSERT_OK(hl_npy_read_file(in_dir(file), NULL, NULL, &want));
  CU_ASSERT_EQUAL_FATAL(want->byte_size, lit->byte_size);
  if (memcmp(want->data, lit->data, lit->byte_size) != 0) {
    fprintf(stderr, "\n  random %s differs from %s\n", hl_shape_debug_string(&lit->shape), file);
    CU_FAIL("random values differ from the Python oracle");
  }
  hl_literal_release(want);
}

static void test_random_matches_python_oracle(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python(
          "np.save(D + '/f32.npy', floats(stream(7, 0), 6).astype(np.float32).reshape(2, 3))\n"
          "np.save(D + '/f64.npy', floats(stream(7, 1), 4))\n"
          "np.save(D + '/f16.npy', floats(stream(7, 2), 4).astype(np.float16))\n"
          "np.save(D + '/bf16.npy', bf16_bits(floats(stream(7, 3), 5)))\n"
          "np.save(D + '/s8.npy', ints(stream(7, 4), 9, -10, 10).astype(np.int8))\n"
          "np.save(D + '/u32.npy', ints(stream(7, 5), 9, 0, 10).astype(np.uint32))\n"
          "np.save(D + '/s4.npy', ints(stream(7, 6), 9, -8, 7).astype(np.int8))\n"
          "np.save(D + '/u2.npy', ints(stream(7, 7), 9, 0, 3).astype(np.uint8))\n"
          "g = stream(7, 8); np.save(D + '/pred.npy', np.array([next(g) >> 63 for _ in "
          "range(9)], np.bool_))\n"
          "v = floats(stream(7, 9), 4); np.save(D + '/c64.npy', (v[0::2] + 1j * v[1::2])"
          ".astype(np.complex64))\n"
          "g = stream(123456789012345, 0); a = floats(g, 3).astype(np.float32); "
          "b = ints(g, 2, -10, 10).astype(np.int64)\n"
          "np.save(D + '/tuple0.npy', a); np.save(D + '/tuple1.npy', b)\n"),
      0);
  struct {
    const char *shape, *file;
    int k;
  } cases[] = {
      {"f32[2,3]", "f32.npy", 0}, {"f64[4]", "f64.npy", 1},  {"f16[4]", "f16.npy", 2},
      {"bf16[5]", "bf16.npy", 3}, {"s8[9]", "s8.npy", 4},    {"u32[9]", "u32.npy", 5},
      {"s4[9]", "s4.npy", 6},     {"u2[9]", "u2.npy", 7},    {"pred[9]", "pred.npy", 8},
      {"c64[2]", "c64.npy", 9},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    hl_shape_t s = parse_shape(cases[i].shape);
    hl_literal_t *lit = NULL;
    HL_ASSERT_OK(hl_inputs_random(&s, 7, cases[i].k, &lit));
    expect_bytes_like(lit, cases[i].file);
    hl_literal_release(lit);
    hl_shape_deinit(&s);
  }
  // A tuple parameter draws its leaves depth-first from one stream.
  hl_shape_t t = parse_shape("(f32[3], (s64[2]))");
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_inputs_random(&t, 123456789012345ull, 0, &lit));
  expect_bytes_like(lit->elements[0], "tuple0.npy");
  expect_bytes_like(lit->elements[1]->elements[0], "tuple1.npy");
  hl_literal_release(lit);
  hl_shape_deinit(&t);
  // Other seeds give other values.
  hl_shape_t s = parse_shape("f32[8]");
  hl_literal_t *a = NULL, *b = NULL;
  HL_ASSERT_OK(hl_inputs_random(&s, 1, 0, &a));
  HL_ASSERT_OK(hl_inputs_random(&s, 2, 0, &b));
  CU_ASSERT_FALSE(hl_literal_equal(a, b));
  hl_literal_release(a);
  hl_literal_release(b);
  // f8 types: values in [-1, 1] rounded to the format (never NaN); e8m0fnu:
  // powers of two 2^-3 .. 2^3.
  hl_shape_t f8 = parse_shape("f8e4m3fn[16]");
  HL_ASSERT_OK(hl_inputs_random(&f8, 0, 0, &a));
  for (int i = 0; i < 16; i++) {
    double v = hl_literal_get_f64(a, i);
    CU_ASSERT(v >= -1 && v <= 1);
  }
  hl_literal_release(a);
  hl_shape_t e8 = parse_shape("f8e8m0fnu[16]");
  HL_ASSERT_OK(hl_inputs_random(&e8, 0, 0, &a));
  for (int i = 0; i < 16; i++) {
    uint8_t bits = ((const uint8_t *)a->data)[i];
    CU_ASSERT(bits >= 127 - 3 && bits <= 127 + 3);
  }
  hl_literal_release(a);
}

static const char kProgram[] =
    "HloModule m\n"
    "ENTRY main {\n"
    "  a = f32[2,3]{1,0} parameter(0)\n"
    "  b = s32[2]{0} parameter(1)\n"
    "  ROOT t = (f32[2,3]{1,0}, s32[2]{0}) tuple(a, b)\n"
    "}\n";

static void load_program(hl_program_t *p, const char *text) {
  memset(p, 0, sizeof(*p));
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "test.hlo", &p->module));
}

static void test_args_dir_layouts(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python("os.makedirs(D + '/per/replica1_partition0')\n"
                 "np.save(D + '/per/replica1_partition0/arg0.npy', np.full((2, 3), 10, np.float32))\n"
                 "np.save(D + '/per/replica1_partition0/arg1.npy', np.array([1, 2], np.int32))\n"
                 "os.makedirs(D + '/shared')\n"
                 "np.save(D + '/shared/arg0.npy', np.full((2, 3), 5, np.float32))\n"
                 "np.save(D + '/shared/arg1.npy', np.array([3, 4], np.int32))\n"
                 "os.makedirs(D + '/extra')\n"
                 "for i, a in enumerate([np.zeros((2, 3), np.float32), np.zeros(2, np.int32), "
                 "np.zeros(1)]): np.save(D + '/extra/arg%d.npy' % i, a)\n"
                 "os.makedirs(D + '/bad/replica0_partition1')\n"
                 "np.save(D + '/bad/replica0_partition1/arg0.npy', np.zeros((3, 2), np.float64))\n"
                 "np.save(D + '/bad/replica0_partition1/arg1.npy', np.zeros(2, np.int32))\n"),
      0);
  hl_program_t p;
  load_program(&p, kProgram);
  hl_launch_options_t o = {.input_source = HL_INPUT_ARGS_DIR};
  hl_inputs_t in;
  o.args_dir = in_dir("per");
  HL_ASSERT_OK(hl_inputs_build(&o, &p, 1, 0, &in));
  CU_ASSERT_EQUAL(in.count, 2);
  CU_ASSERT_EQUAL(hl_literal_get_f64(in.args[0], 5), 10.0);
  CU_ASSERT_EQUAL(hl_literal_get_s64(in.args[1], 1), 2);
  CU_ASSERT_EQUAL(in.file_count, 2);
  CU_ASSERT_PTR_NOT_NULL(strstr(in.files[1], "per/replica1_partition0/arg1.npy"));
  hl_inputs_deinit(&in);
  // Replica 0 has no directory there: DIR/arg<i>.npy, which does not exist.
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&o, &p, 0, 0, &in), "per/arg0.npy: cannot open");
  o.args_dir = in_dir("shared");
  HL_ASSERT_OK(hl_inputs_build(&o, &p, 3, 1, &in));
  CU_ASSERT_EQUAL(hl_literal_get_f64(in.args[0], 0), 5.0);
  CU_ASSERT_EQUAL(hl_literal_get_s64(in.args[1], 0), 3);
  hl_inputs_deinit(&in);
  o.args_dir = in_dir("extra");
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&o, &p, 0, 0, &in),
                           "extra/arg2.npy exists, but the entry computation 'main' has only 2 "
                           "parameters");
  o.args_dir = in_dir("bad");
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&o, &p, 0, 1, &in),
                           "bad/replica0_partition1/arg0.npy: expected f32[2,3] for parameter 0, "
                           "file has float64 (3, 2)");
  o.args_dir = in_dir("nowhere");
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&o, &p, 0, 0, &in), "is not a directory");
  hl_program_deinit(&p);
}

static void test_args_files_and_sources(void) {
  hl_program_t p;
  load_program(&p, kProgram);
  char *files[] = {(char *)in_dir("shared/arg0.npy"), (char *)in_dir("shared/arg1.npy")};
  hl_launch_options_t o = {.input_source = HL_INPUT_ARGS, .arg_files = files, .arg_file_count = 2};
  hl_inputs_t in;
  HL_ASSERT_OK(hl_inputs_build(&o, &p, 0, 0, &in));
  CU_ASSERT_EQUAL(hl_literal_get_s64(in.args[1], 1), 4);
  hl_inputs_deinit(&in);
  o.arg_file_count = 1;
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&o, &p, 0, 0, &in),
                           "--args gives 1 argument, but the entry computation 'main' has 2 "
                           "parameters");
  hl_launch_options_t z = {.input_source = HL_INPUT_ZEROS};
  HL_ASSERT_OK(hl_inputs_build(&z, &p, 0, 0, &in));
  CU_ASSERT_EQUAL(hl_literal_get_f64(in.args[0], 3), 0.0);
  hl_inputs_deinit(&in);
  // Default for a program without snapshot arguments: random with seed 0.
  hl_launch_options_t d = {0};
  HL_ASSERT_OK(hl_inputs_build(&d, &p, 0, 0, &in));
  hl_literal_t *want = NULL;
  HL_ASSERT_OK(hl_inputs_random(&p.module->entry->parameters[0]->shape, 0, 0, &want));
  CU_ASSERT(hl_literal_equal(in.args[0], want));
  hl_literal_release(want);
  hl_inputs_deinit(&in);
  hl_program_deinit(&p);

  // Tuple parameters: not from .npy files yet.
  load_program(&p,
               "HloModule t\nENTRY main {\n  a = (f32[2]{0}, s32[]) parameter(0)\n"
               "  ROOT g = f32[2]{0} get-tuple-element(a), index=0\n}\n");
  char *one[] = {(char *)in_dir("shared/arg1.npy")};
  hl_launch_options_t t = {.input_source = HL_INPUT_ARGS, .arg_files = one, .arg_file_count = 1};
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&t, &p, 0, 0, &in),
                           "parameter 0 has the shape (f32[2], s32[]); .npy inputs for tuple");
  HL_ASSERT_OK(hl_inputs_build(&z, &p, 0, 0, &in));
  CU_ASSERT_EQUAL(in.args[0]->shape.dtype, HL_TUPLE);
  hl_inputs_deinit(&in);
  hl_program_deinit(&p);
}

static void test_snapshot_arguments(void) {
  hl_program_t p;
  load_program(&p, kProgram);
  p.arguments = hl_calloc(2, sizeof(hl_literal_t *));
  p.argument_count = 2;
  hl_shape_t s0 = parse_shape("f32[2,3]"), s1 = parse_shape("s32[3]");
  HL_ASSERT_OK(hl_literal_create(&s0, &p.arguments[0]));
  HL_ASSERT_OK(hl_literal_create(&s1, &p.arguments[1]));
  hl_launch_options_t d = {0};
  hl_inputs_t in;
  HL_ASSERT_ERROR_CONTAINS(hl_inputs_build(&d, &p, 0, 0, &in),
                           "HloSnapshot argument 1 is s32[3], but parameter 1 is s32[2]");
  hl_literal_release(p.arguments[1]);
  hl_shape_t s1ok = parse_shape("s32[2]");
  HL_ASSERT_OK(hl_literal_create(&s1ok, &p.arguments[1]));
  ((int32_t *)p.arguments[1]->data)[1] = 42;
  HL_ASSERT_OK(hl_inputs_build(&d, &p, 0, 0, &in));
  CU_ASSERT_EQUAL(hl_literal_get_s64(in.args[1], 1), 42);
  hl_inputs_deinit(&in);
  hl_program_deinit(&p);
}

static CU_TestInfo tests[] = {
    {"random_matches_python_oracle", test_random_matches_python_oracle},
    {"args_dir_layouts", test_args_dir_layouts},
    {"args_files_and_sources", test_args_files_and_sources},
    {"snapshot_arguments", test_snapshot_arguments},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN_WITH_FIXTURES("inputs", suite_init, suite_clean, tests)
