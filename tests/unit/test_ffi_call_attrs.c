// runtime/custom_calls/ffi_call_attrs.c: an MLIR dictionary backend_config as
// the XLA_FFI_Attrs a typed-FFI handler receives.
#include <string.h>

#include "runtime/custom_calls/ffi_call_attrs.h"
#include "tests/unit/test_util.h"

static int name_is(const XLA_FFI_ByteSpan *s, const char *want) {
  return s->len == strlen(want) && memcmp(s->ptr, want, s->len) == 0;
}

static void test_kinds_and_order(void) {
  XLA_FFI_Attrs a;
  hl_ffi_attr_store_t store = {0};
  HL_ASSERT_OK(hl_ffi_attrs_build(
      "{uplo = 76 : ui8, alpha = 2.500000e+00 : f32, name = \"a\\\"b\", flag = false, "
      "dims = array<i64: 3, -4>, n = 7, inner = {k = 1 : i32}, x = -1.5}", &a, &store));
  CU_ASSERT_EQUAL_FATAL(a.size, 8);
  CU_ASSERT_EQUAL(a.struct_size, XLA_FFI_Attrs_STRUCT_SIZE);
  const char *order[] = {"alpha", "dims", "flag", "inner", "n", "name", "uplo", "x"};
  for (int i = 0; i < 8; i++) CU_ASSERT_TRUE(name_is(a.names[i], order[i]));
  XLA_FFI_Scalar *alpha = a.attrs[0];
  CU_ASSERT_EQUAL(a.types[0], XLA_FFI_AttrType_SCALAR);
  CU_ASSERT_EQUAL(alpha->dtype, XLA_FFI_DataType_F32);
  CU_ASSERT_EQUAL(*(float *)alpha->value, 2.5f);
  XLA_FFI_Array *dims = a.attrs[1];
  CU_ASSERT_EQUAL(a.types[1], XLA_FFI_AttrType_ARRAY);
  CU_ASSERT_EQUAL(dims->dtype, XLA_FFI_DataType_S64);
  CU_ASSERT_EQUAL(dims->size, 2);
  CU_ASSERT_EQUAL(((int64_t *)dims->data)[1], -4);
  XLA_FFI_Scalar *flag = a.attrs[2];
  CU_ASSERT_EQUAL(flag->dtype, XLA_FFI_DataType_PRED);
  CU_ASSERT_EQUAL(*(uint8_t *)flag->value, 0);
  CU_ASSERT_EQUAL(a.types[3], XLA_FFI_AttrType_DICTIONARY);
  XLA_FFI_Attrs *inner = a.attrs[3];
  CU_ASSERT_EQUAL(inner->size, 1);
  CU_ASSERT_EQUAL(((XLA_FFI_Scalar *)inner->attrs[0])->dtype, XLA_FFI_DataType_S32);
  XLA_FFI_Scalar *n = a.attrs[4];
  CU_ASSERT_EQUAL(n->dtype, XLA_FFI_DataType_S64);  // untyped integers are i64
  CU_ASSERT_EQUAL(*(int64_t *)n->value, 7);
  XLA_FFI_ByteSpan *s = a.attrs[5];
  CU_ASSERT_EQUAL(a.types[5], XLA_FFI_AttrType_STRING);
  CU_ASSERT_TRUE(name_is(s, "a\"b"));
  XLA_FFI_Scalar *uplo = a.attrs[6];
  CU_ASSERT_EQUAL(uplo->dtype, XLA_FFI_DataType_U8);
  CU_ASSERT_EQUAL(*(uint8_t *)uplo->value, 'L');
  XLA_FFI_Scalar *x = a.attrs[7];
  CU_ASSERT_EQUAL(x->dtype, XLA_FFI_DataType_F64);
  CU_ASSERT_EQUAL(*(double *)x->value, -1.5);
  hl_ffi_attr_store_free(&store);
}

static void test_empty_and_errors(void) {
  XLA_FFI_Attrs a;
  hl_ffi_attr_store_t store = {0};
  HL_ASSERT_OK(hl_ffi_attrs_build(NULL, &a, &store));
  CU_ASSERT_EQUAL(a.size, 0);
  HL_ASSERT_OK(hl_ffi_attrs_build("{}", &a, &store));
  CU_ASSERT_EQUAL(a.size, 0);
  HL_ASSERT_ERROR_CONTAINS(hl_ffi_attrs_build("{unit}", &a, &store), "unit attributes");
  HL_ASSERT_ERROR_CONTAINS(hl_ffi_attrs_build("{d = dense<1> : tensor<i32>}", &a, &store),
                           "a number");
  HL_ASSERT_ERROR_CONTAINS(hl_ffi_attrs_build("{k = 1.5 : i32}", &a, &store),
                           "an integer for an integer type");
  HL_ASSERT_ERROR_CONTAINS(hl_ffi_attrs_build("{k = 1 : bf16}", &a, &store), "element type");
  hl_ffi_attr_store_free(&store);
}

static CU_TestInfo tests[] = {
    {"kinds_and_order", test_kinds_and_order},
    {"empty_and_errors", test_empty_and_errors},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("ffi_call_attrs", tests)
