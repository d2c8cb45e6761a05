// .npy reading and writing, checked against NumPy itself: /usr/bin/python3
// writes the files this code reads and reads (and checks) the files it writes.
#include "runtime/base/npy.h"

#include <complex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/alloc.h"
#include "tests/unit/test_util.h"

static char g_dir[256];

static const char *path_in_dir(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof(buf), "%s/%s", g_dir, name);
  return buf;
}

// Runs a Python snippet with numpy imported as np and D set to the temp dir;
// returns its exit status.
static int run_python(const char *code) {
  char script[4096];
  snprintf(script, sizeof(script), "%s/script.py", g_dir);
  FILE *f = fopen(script, "w");
  if (!f) return -1;
  fprintf(f, "import numpy as np, sys\nD = %s%s%s\n%s\n", "'", g_dir, "'", code);
  fclose(f);
  char cmd[4400];
  snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s", script);
  return system(cmd);
}

static int suite_init(void) { return hl_test_make_dir(g_dir, sizeof(g_dir), "npy"); }

static int suite_clean(void) { return hl_test_remove_dir(g_dir); }

static hl_shape_t shape2(hl_dtype_t t, int64_t a, int64_t b) {
  int64_t d[2] = {a, b};
  return hl_shape_array(t, 2, d);
}

// Every dtype NumPy has: numpy writes arange(6).reshape(2,3) in it (bool:
// arange % 2; complex: k + 2k*1j); element k must read back as that value.
static void test_read_every_native_dtype(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python("for t in ['bool','int8','int16','int32','int64','uint8','uint16',"
                 "'uint32','uint64','float16','float32','float64']:\n"
                 "  a = np.arange(6).reshape(2,3)\n"
                 "  if t == 'bool': a = a % 2\n"
                 "  np.save(D + '/' + t + '.npy', a.astype(t))\n"
                 "for t in ['complex64','complex128']:\n"
                 "  k = np.arange(6).reshape(2,3)\n"
                 "  np.save(D + '/' + t + '.npy', (k + 2j*k).astype(t))\n"),
      0);
  struct {
    const char *name;
    hl_dtype_t dtype;
  } cases[] = {{"bool", HL_PRED},       {"int8", HL_S8},       {"int16", HL_S16},
               {"int32", HL_S32},       {"int64", HL_S64},     {"uint8", HL_U8},
               {"uint16", HL_U16},      {"uint32", HL_U32},    {"uint64", HL_U64},
               {"float16", HL_F16},     {"float32", HL_F32},   {"float64", HL_F64},
               {"complex64", HL_C64},   {"complex128", HL_C128}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    char file[64];
    snprintf(file, sizeof(file), "%s.npy", cases[c].name);
    hl_literal_t *lit = NULL;
    HL_ASSERT_OK(hl_npy_read_file(path_in_dir(file), NULL, NULL, &lit));
    CU_ASSERT_EQUAL(lit->shape.dtype, cases[c].dtype);
    CU_ASSERT_EQUAL(lit->shape.rank, 2);
    CU_ASSERT_EQUAL(lit->shape.dims[0], 2);
    CU_ASSERT_EQUAL(lit->shape.dims[1], 3);
    for (int k = 0; k < 6; k++) {
      double want = cases[c].dtype == HL_PRED ? k % 2 : k;
      CU_ASSERT_EQUAL(hl_literal_get_f64(lit, k), want);
      if (cases[c].dtype == HL_C64) CU_ASSERT_EQUAL(((float *)lit->data)[2 * k + 1], 2.0f * k);
      if (cases[c].dtype == HL_C128) CU_ASSERT_EQUAL(((double *)lit->data)[2 * k + 1], 2.0 * k);
    }
    hl_literal_release(lit);
  }
}

// Fortran order, big-endian and format versions 2.0 / 3.0 all read as the
// row-major little-endian array [[0,1,2],[3,4,5]] (+0.5).
static void test_read_layout_variants(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python("a = np.arange(6, dtype=np.float32).reshape(2,3) + 0.5\n"
                 "np.save(D + '/fortran.npy', np.asfortranarray(a))\n"
                 "assert np.load(D + '/fortran.npy').flags.f_contiguous\n"
                 "np.save(D + '/big.npy', a.astype('>f4'))\n"
                 "np.save(D + '/bigc.npy', (a + 1j*a).astype('>c8'))\n"
                 "for v in [(2,0),(3,0)]:\n"
                 "  with open(D + '/v%d.npy' % v[0], 'wb') as f:\n"
                 "    np.lib.format.write_array(f, a, version=v)\n"
                 "b = np.arange(24, dtype=np.int16).reshape(2,3,4)\n"
                 "np.save(D + '/fortran3.npy', np.asfortranarray(b).astype('>i2'))\n"),
      0);
  const char *files[] = {"fortran.npy", "big.npy", "v2.npy", "v3.npy"};
  for (int f = 0; f < 4; f++) {
    hl_literal_t *lit = NULL;
    hl_shape_t want = shape2(HL_F32, 2, 3);
    HL_ASSERT_OK(hl_npy_read_file(path_in_dir(files[f]), &want, "parameter 0", &lit));
    for (int k = 0; k < 6; k++) CU_ASSERT_EQUAL(((float *)lit->data)[k], k + 0.5f);
    hl_literal_release(lit);
  }
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("bigc.npy"), NULL, NULL, &lit));
  CU_ASSERT_EQUAL(lit->shape.dtype, HL_C64);
  for (int k = 0; k < 6; k++) {
    CU_ASSERT_EQUAL(((float *)lit->data)[2 * k], k + 0.5f);
    CU_ASSERT_EQUAL(((float *)lit->data)[2 * k + 1], k + 0.5f);
  }
  hl_literal_release(lit);
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("fortran3.npy"), NULL, NULL, &lit));
  CU_ASSERT_EQUAL(lit->shape.rank, 3);
  for (int k = 0; k < 24; k++) CU_ASSERT_EQUAL(((int16_t *)lit->data)[k], k);
  hl_literal_release(lit);
}

static void test_read_scalar_empty_vector(void) {
  CU_ASSERT_EQUAL_FATAL(run_python("np.save(D + '/scalar.npy', np.float64(2.25))\n"
                                   "np.save(D + '/empty.npy', np.zeros((0, 4), np.int32))\n"
                                   "np.save(D + '/vec.npy', np.array([7, -8], np.int64))\n"),
                        0);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("scalar.npy"), NULL, NULL, &lit));
  CU_ASSERT_EQUAL(lit->shape.rank, 0);
  CU_ASSERT_EQUAL(hl_literal_get_f64(lit, 0), 2.25);
  hl_literal_release(lit);
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("empty.npy"), NULL, NULL, &lit));
  CU_ASSERT_EQUAL(lit->shape.rank, 2);
  CU_ASSERT_EQUAL(lit->shape.dims[0], 0);
  CU_ASSERT_EQUAL(lit->shape.dims[1], 4);
  hl_literal_release(lit);
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("vec.npy"), NULL, NULL, &lit));
  CU_ASSERT_EQUAL(hl_literal_get_s64(lit, 0), 7);
  CU_ASSERT_EQUAL(hl_literal_get_s64(lit, 1), -8);
  hl_literal_release(lit);
}

static void test_mismatch_messages(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python("np.save(D + '/f64.npy', np.zeros((3, 2)))\n"
                 "np.save(D + '/vec3.npy', np.zeros(3, np.float32))\n"),
      0);
  char want[600];
  hl_shape_t s = shape2(HL_F32, 2, 3);
  hl_literal_t *lit = NULL;
  snprintf(want, sizeof(want), "%s: expected f32[2,3] for parameter 0, file has float64 (3, 2)",
           path_in_dir("f64.npy"));
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("f64.npy"), &s, "parameter 0", &lit),
                           want);
  CU_ASSERT_PTR_NULL(lit);
  // Same type, other dims.
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("vec3.npy"), &s, NULL, &lit),
                           "expected f32[2,3], file has float32 (3,)");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("missing.npy"), &s, NULL, &lit),
                           "missing.npy: cannot open");
}

// np.save of an ml_dtypes bfloat16 array writes descr '<V2' (the type is
// lost); numpy writes the same for a uint16 array viewed as V2.
static void test_untyped_void(void) {
  CU_ASSERT_EQUAL_FATAL(
      run_python("bits = np.array([0x3f80, 0xc000, 0x7f80], np.uint16)\n"  // 1, -2, inf
                 "v = bits.view('V2')\n"
                 "np.save(D + '/bf16.npy', v)\n"
                 "h = open(D + '/bf16.npy','rb').read(80)\n"
                 "assert b\"'descr': '|V2'\" in h or b\"'descr': '<V2'\" in h, h\n"),
      0);
  int64_t d3 = 3;
  hl_shape_t bf = hl_shape_array(HL_BF16, 1, &d3);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_npy_read_file(path_in_dir("bf16.npy"), &bf, "parameter 1", &lit));
  CU_ASSERT_EQUAL(lit->shape.dtype, HL_BF16);
  CU_ASSERT_EQUAL(hl_literal_get_f64(lit, 0), 1.0);
  CU_ASSERT_EQUAL(hl_literal_get_f64(lit, 1), -2.0);
  hl_literal_release(lit);
  hl_shape_t f16 = hl_shape_array(HL_F16, 1, &d3);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("bf16.npy"), &f16, "parameter 1", &lit),
                           "expected f16[3] for parameter 1, file has void16 (3,)");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("bf16.npy"), NULL, NULL, &lit),
                           "does not say what it holds");
  hl_shape_t s4 = hl_shape_array(HL_S4, 1, &d3);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("bf16.npy"), &s4, NULL, &lit),
                           "expected s4[3], file has void16 (3,)");
}

static void test_malformed(void) {
  hl_literal_t *lit = NULL;
  const uint8_t not_npy[] = "PK\003\004 something else";
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_bytes(not_npy, sizeof(not_npy), "x.npy", NULL, NULL, &lit),
                           "x.npy: not a .npy file");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_bytes(not_npy, 0, "e.npy", NULL, NULL, &lit),
                           "e.npy: empty file");
  CU_ASSERT_EQUAL_FATAL(
      run_python("np.save(D + '/ok.npy', np.arange(10, dtype=np.int32))\n"
                 "b = open(D + '/ok.npy','rb').read()\n"
                 "open(D + '/trunc.npy','wb').write(b[:-3])\n"
                 "open(D + '/trunchead.npy','wb').write(b[:30])\n"
                 "np.save(D + '/struct.npy', np.zeros(2, dtype=[('a','<i4'),('b','<f4')]))\n"
                 "np.save(D + '/str.npy', np.array(['ab','c']))\n"
                 "open(D + '/v9.npy','wb').write(b[:6] + bytes([9,0]) + b[8:])\n"),
      0);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("trunc.npy"), NULL, NULL, &lit),
                           "truncated data: int32 (10,) needs 40 bytes after the header, "
                           "the file has 37");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("trunchead.npy"), NULL, NULL, &lit),
                           "truncated .npy header");
  // A 128-byte file declaring 15 GB: the data is checked before the array is
  // allocated (only the header buffer may be; a second allocation fails).
  CU_ASSERT_EQUAL_FATAL(
      run_python("h = b\"{'descr': '<f4', 'fortran_order': False, 'shape': (3750000000,), }\"\n"
                 "h = h + b' ' * (117 - len(h)) + b'\\n'\n"
                 "b = b'\\x93NUMPY\\x01\\x00' + bytes([len(h), 0]) + h\n"
                 "assert len(b) == 128\n"
                 "open(D + '/huge.npy','wb').write(b)\n"),
      0);
  size_t huge_size = 0;
  uint8_t *huge = hl_test_read_file(path_in_dir("huge.npy"), &huge_size);
  CU_ASSERT_EQUAL_FATAL(huge_size, 128);
  hl_alloc_fail_after(1);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("huge.npy"), NULL, NULL, &lit),
                           "huge.npy: truncated data: float32 (3750000000,) needs 15000000000 "
                           "bytes after the header, the file has 0");
  hl_alloc_fail_after(1);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_bytes(huge, huge_size, "huge.npy", NULL, NULL, &lit),
                           "truncated data");
  hl_alloc_fail_after(-1);
  free(huge);
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("struct.npy"), NULL, NULL, &lit),
                           "structured arrays");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("str.npy"), NULL, NULL, &lit),
                           "element type '<U2' is not supported");
  HL_ASSERT_ERROR_CONTAINS(hl_npy_read_file(path_in_dir("v9.npy"), NULL, NULL, &lit),
                           "format version 9.0 is not supported");
  const char bad_dicts[][80] = {
      "{'descr': '<f4', 'fortran_order': False}",
      "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
      "['descr']",
  };
  for (int i = 0; i < 5; i++) {
    uint8_t buf[128] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    size_t n = strlen(bad_dicts[i]);
    buf[8] = (uint8_t)n;
    memcpy(buf + 10, bad_dicts[i], n);
    HL_ASSERT_ERROR_CONTAINS(hl_npy_read_bytes(buf, 10 + n, "d.npy", NULL, NULL, &lit),
                             "d.npy: bad header");
  }
}

// Every dtype this code writes is read by numpy with the intended values.
static void test_write_read_by_numpy(void) {
  hl_dtype_t types[] = {HL_PRED, HL_S8,  HL_S16, HL_S32, HL_S64, HL_U8,  HL_U16,
                        HL_U32,  HL_U64, HL_F16, HL_F32, HL_F64, HL_C64, HL_C128, HL_BF16};
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
    hl_shape_t s = shape2(types[t], 2, 3);
    hl_literal_t *lit = NULL;
    HL_ASSERT_OK(hl_literal_create(&s, &lit));
    for (int k = 0; k < 6; k++) hl_literal_set_f64(lit, k, types[t] == HL_PRED ? k % 2 : k);
    char file[64];
    snprintf(file, sizeof(file), "w_%s.npy", hl_dtype_name(types[t]));
    HL_ASSERT_OK(hl_npy_write_file(path_in_dir(file), lit));
    hl_literal_release(lit);
  }
  hl_shape_t scalar = hl_shape_scalar(HL_F32);
  hl_literal_t *lit = NULL;
  HL_ASSERT_OK(hl_literal_create(&scalar, &lit));
  hl_literal_set_f64(lit, 0, -1.5);
  HL_ASSERT_OK(hl_npy_write_file(path_in_dir("w_scalar.npy"), lit));
  hl_literal_release(lit);
  int64_t d1 = 4;
  hl_shape_t vec = hl_shape_array(HL_S32, 1, &d1);
  HL_ASSERT_OK(hl_literal_create(&vec, &lit));
  HL_ASSERT_OK(hl_npy_write_file(path_in_dir("w_vec.npy"), lit));
  hl_literal_release(lit);
  CU_ASSERT_EQUAL(
      run_python(
          "names = {'pred':'bool','s8':'int8','s16':'int16','s32':'int32','s64':'int64',"
          "'u8':'uint8','u16':'uint16','u32':'uint32','u64':'uint64','f16':'float16',"
          "'f32':'float32','f64':'float64','c64':'complex64','c128':'complex128'}\n"
          "for k, t in names.items():\n"
          "  a = np.load(D + '/w_%s.npy' % k)\n"
          "  want = np.arange(6).reshape(2,3)\n"
          "  if t == 'bool': want = want % 2\n"
          "  assert a.dtype == np.dtype(t) and a.shape == (2,3), (k, a.dtype, a.shape)\n"
          "  assert (a == want.astype(t)).all(), (k, a)\n"
          "  h = open(D + '/w_%s.npy' % k, 'rb').read(128)\n"
          "  assert h[6] == 1 and (10 + h[8] + 256*h[9]) % 64 == 0, k\n"
          "b = np.load(D + '/w_bf16.npy')\n"
          "assert b.dtype == np.dtype('V2') and b.shape == (2,3)\n"
          "assert (b.view(np.uint16).ravel() == "
          "[0, 0x3f80, 0x4000, 0x4040, 0x4080, 0x40a0]).all()\n"
          "s = np.load(D + '/w_scalar.npy'); assert s.shape == () and s == -1.5\n"
          "v = np.load(D + '/w_vec.npy'); assert v.shape == (4,) and v.dtype == np.int32\n"),
      0);
}

static void test_write_rejects_tuples_and_roundtrips_bytes(void) {
  hl_shape_t e = hl_shape_scalar(HL_F32);
  hl_shape_t t;
  HL_ASSERT_OK(hl_shape_tuple(&e, 1, &t));
  hl_literal_t *tuple = NULL;
  HL_ASSERT_OK(hl_literal_create(&t, &tuple));
  uint8_t *data = NULL;
  size_t size = 0;
  HL_ASSERT_ERROR_CONTAINS(hl_npy_write_bytes(tuple, &data, &size), "cannot be written as .npy");
  hl_literal_release(tuple);
  hl_shape_deinit(&t);

  hl_shape_t s = shape2(HL_BF16, 1, 2);
  hl_literal_t *lit = NULL, *back = NULL;
  HL_ASSERT_OK(hl_literal_create(&s, &lit));
  hl_literal_set_f64(lit, 0, 3.0);
  hl_literal_set_f64(lit, 1, -0.5);
  HL_ASSERT_OK(hl_npy_write_bytes(lit, &data, &size));
  HL_ASSERT_OK(hl_npy_read_bytes(data, size, "mem", &s, NULL, &back));
  CU_ASSERT(hl_literal_equal(lit, back));
  hl_literal_release(back);
  // Allocation failure at every step is reported, never a crash.
  for (long n = 0; n < 10; n++) {
    hl_alloc_fail_after(n);
    back = NULL;
    hl_status_t st = hl_npy_read_bytes(data, size, "mem", &s, NULL, &back);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      hl_status_free(st);
    } else {
      hl_literal_release(back);
    }
  }
  hl_free(data);
  hl_literal_release(lit);
}

static CU_TestInfo tests[] = {
    {"read_every_native_dtype", test_read_every_native_dtype},
    {"read_layout_variants", test_read_layout_variants},
    {"read_scalar_empty_vector", test_read_scalar_empty_vector},
    {"mismatch_messages", test_mismatch_messages},
    {"untyped_void", test_untyped_void},
    {"malformed", test_malformed},
    {"write_read_by_numpy", test_write_read_by_numpy},
    {"write_rejects_tuples_and_roundtrips_bytes", test_write_rejects_tuples_and_roundtrips_bytes},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN_WITH_FIXTURES("npy", suite_init, suite_clean, tests)
