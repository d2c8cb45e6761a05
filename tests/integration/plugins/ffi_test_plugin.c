// A custom-call plugin written in plain C against XLA's typed FFI C ABI
// (runtime/custom_calls/xla_ffi_api.h mirrors xla/ffi/api/c_api.h). Built by
// test_custom_call_plugins.py and loaded with --custom-call-library.
#include <stdint.h>
#include <string.h>

#include "runtime/custom_calls/xla_ffi_api.h"

static XLA_FFI_Error *fail(const XLA_FFI_Api *api, XLA_FFI_Error_Code code, const char *msg) {
  XLA_FFI_Error_Create_Args a;
  memset(&a, 0, sizeof(a));
  a.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
  a.message = msg;
  a.errc = code;
  return api->XLA_FFI_Error_Create(&a);
}

static int64_t count(const XLA_FFI_Buffer *b) {
  int64_t n = 1;
  for (int64_t i = 0; i < b->rank; i++) n *= b->dims[i];
  return n;
}

static int find_attr(const XLA_FFI_Attrs *a, const char *name) {
  for (int64_t i = 0; i < a->size; i++)
    if (a->names[i]->len == strlen(name) && memcmp(a->names[i]->ptr, name, a->names[i]->len) == 0)
      return (int)i;
  return -1;
}

// out = alpha * x + y (f32, any shape); alpha an f32 scalar attribute.
static XLA_FFI_Error *scale_add(XLA_FFI_CallFrame *f) {
  if (f->args.size != 2 || f->rets.size != 1)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_add: 2 args, 1 result");
  XLA_FFI_Buffer *x = f->args.args[0], *y = f->args.args[1], *o = f->rets.rets[0];
  if (x->dtype != XLA_FFI_DataType_F32 || count(x) != count(y) || count(x) != count(o))
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_add: f32 buffers of one size");
  int k = find_attr(&f->attrs, "alpha");
  if (k < 0 || f->attrs.types[k] != XLA_FFI_AttrType_SCALAR)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_add: no alpha scalar");
  XLA_FFI_Scalar *s = f->attrs.attrs[k];
  if (s->dtype != XLA_FFI_DataType_F32)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "scale_add: alpha must be f32");
  float alpha = *(float *)s->value;
  for (int64_t i = 0; i < count(x); i++)
    ((float *)o->data)[i] = alpha * ((float *)x->data)[i] + ((float *)y->data)[i];
  return NULL;
}

// Sums each column of an f32[m, n] handed over column-major (operand layout
// {0,1}): the memory holds column after column, so column j is data[j*m ..].
// The result, f32[n], is the same in any layout.
XLA_FFI_Error *ColumnSums(XLA_FFI_CallFrame *f) {
  XLA_FFI_Buffer *x = f->args.args[0], *o = f->rets.rets[0];
  if (x->rank != 2 || o->rank != 1 || o->dims[0] != x->dims[1])
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "ColumnSums: f32[m,n] -> f32[n]");
  int64_t m = x->dims[0], n = x->dims[1];
  for (int64_t j = 0; j < n; j++) {
    float s = 0;
    for (int64_t i = 0; i < m; i++) s += ((float *)x->data)[j * m + i];
    ((float *)o->data)[j] = s;
  }
  return NULL;
}

// Fails with the handler's own message when an input element is negative.
XLA_FFI_Error *RejectNegative(XLA_FFI_CallFrame *f) {
  XLA_FFI_Buffer *x = f->args.args[0], *o = f->rets.rets[0];
  for (int64_t i = 0; i < count(x); i++) {
    if (((float *)x->data)[i] < 0)
      return fail(f->api, XLA_FFI_Error_Code_OUT_OF_RANGE, "RejectNegative: negative input");
    ((float *)o->data)[i] = ((float *)x->data)[i];
  }
  return NULL;
}

struct sum_task {
  const int64_t *values;
  size_t n;
  int64_t total;
};

static void sum_values(void *data) {
  struct sum_task *t = data;
  for (size_t i = 0; i < t->n; i++) t->total += t->values[i];
}

// Reports what it received as s64[8]: the i32 attribute `count`, the sum of
// the array<i64> `dims` (through a thread-pool task), the length of the
// string `label`, the bool `flag`, the number of attributes, whether the names
// arrive sorted, a ui8 attribute `mode`, and a device-memory round trip.
static XLA_FFI_Error *describe(XLA_FFI_CallFrame *f) {
  const XLA_FFI_Attrs *a = &f->attrs;
  int64_t *out = ((XLA_FFI_Buffer *)f->rets.rets[0])->data;
  int c = find_attr(a, "count"), d = find_attr(a, "dims"), l = find_attr(a, "label"),
      b = find_attr(a, "flag"), m = find_attr(a, "mode");
  if (c < 0 || d < 0 || l < 0 || b < 0 || m < 0 || a->types[c] != XLA_FFI_AttrType_SCALAR ||
      a->types[d] != XLA_FFI_AttrType_ARRAY || a->types[l] != XLA_FFI_AttrType_STRING ||
      a->types[b] != XLA_FFI_AttrType_SCALAR || a->types[m] != XLA_FFI_AttrType_SCALAR)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "describe: attribute kinds");
  XLA_FFI_Scalar *cs = a->attrs[c], *bs = a->attrs[b], *ms = a->attrs[m];
  XLA_FFI_Array *arr = a->attrs[d];
  if (cs->dtype != XLA_FFI_DataType_S32 || bs->dtype != XLA_FFI_DataType_PRED ||
      ms->dtype != XLA_FFI_DataType_U8 || arr->dtype != XLA_FFI_DataType_S64)
    return fail(f->api, XLA_FFI_Error_Code_INVALID_ARGUMENT, "describe: attribute types");
  struct sum_task task = {arr->data, arr->size, 0};
  XLA_FFI_ThreadPool_Schedule_Args sa = {XLA_FFI_ThreadPool_Schedule_Args_STRUCT_SIZE, NULL,
                                         f->ctx, sum_values, &task};
  XLA_FFI_Error *e = f->api->XLA_FFI_ThreadPool_Schedule(&sa);
  if (e) return e;
  int sorted = 1;
  for (int64_t i = 1; i < a->size; i++) {
    const XLA_FFI_ByteSpan *p = a->names[i - 1], *q = a->names[i];
    size_t n = p->len < q->len ? p->len : q->len;
    int cmp = memcmp(p->ptr, q->ptr, n);
    if (cmp > 0 || (cmp == 0 && p->len > q->len)) sorted = 0;
  }
  XLA_FFI_DeviceMemory_Allocate_Args al = {XLA_FFI_DeviceMemory_Allocate_Args_STRUCT_SIZE, NULL,
                                           f->ctx, 64, 64, NULL};
  e = f->api->XLA_FFI_DeviceMemory_Allocate(&al);
  if (e) return e;
  int aligned = ((uintptr_t)al.data % 64) == 0;
  XLA_FFI_DeviceMemory_Free_Args fr = {XLA_FFI_DeviceMemory_Free_Args_STRUCT_SIZE, NULL, f->ctx,
                                       64, al.data};
  e = f->api->XLA_FFI_DeviceMemory_Free(&fr);
  if (e) return e;
  out[0] = *(int32_t *)cs->value;
  out[1] = task.total;
  out[2] = (int64_t)((XLA_FFI_ByteSpan *)a->attrs[l])->len;
  out[3] = *(uint8_t *)bs->value;
  out[4] = a->size;
  out[5] = sorted;
  out[6] = *(uint8_t *)ms->value;
  out[7] = aligned;
  return NULL;
}

static double scalar_value(XLA_FFI_DataType t, const void *v) {
  switch (t) {
    case XLA_FFI_DataType_PRED: case XLA_FFI_DataType_U8: return *(const uint8_t *)v;
    case XLA_FFI_DataType_S8: return *(const int8_t *)v;
    case XLA_FFI_DataType_S16: return *(const int16_t *)v;
    case XLA_FFI_DataType_U16: return *(const uint16_t *)v;
    case XLA_FFI_DataType_S32: return *(const int32_t *)v;
    case XLA_FFI_DataType_U32: return *(const uint32_t *)v;
    case XLA_FFI_DataType_S64: return (double)*(const int64_t *)v;
    case XLA_FFI_DataType_U64: return (double)*(const uint64_t *)v;
    case XLA_FFI_DataType_F32: return *(const float *)v;
    case XLA_FFI_DataType_F64: return *(const double *)v;
    default: return -1e300;
  }
}

// Writes f64[3, 16]: per attribute in the order received (at most 16), its
// kind (XLA_FFI_AttrType), its element type (scalars and arrays; -1 else)
// and its value: a scalar's value, an array's sum, a string's length, a
// dictionary's entry count times 1000 plus the sum of its scalar values.
static XLA_FFI_Error *attr_dump(XLA_FFI_CallFrame *f) {
  const XLA_FFI_Attrs *a = &f->attrs;
  double *out = ((XLA_FFI_Buffer *)f->rets.rets[0])->data;
  for (int i = 0; i < 48; i++) out[i] = -7;
  for (int64_t i = 0; i < a->size && i < 16; i++) {
    out[i] = a->types[i];
    out[16 + i] = -1;
    if (a->types[i] == XLA_FFI_AttrType_SCALAR) {
      const XLA_FFI_Scalar *s = a->attrs[i];
      out[16 + i] = s->dtype;
      out[32 + i] = scalar_value(s->dtype, s->value);
    } else if (a->types[i] == XLA_FFI_AttrType_ARRAY) {
      const XLA_FFI_Array *arr = a->attrs[i];
      size_t es = arr->dtype == XLA_FFI_DataType_S64 || arr->dtype == XLA_FFI_DataType_F64 ? 8
                  : arr->dtype == XLA_FFI_DataType_S32 || arr->dtype == XLA_FFI_DataType_F32 ? 4
                  : 1;
      double sum = 0;
      for (size_t k = 0; k < arr->size; k++)
        sum += scalar_value(arr->dtype, (const char *)arr->data + k * es);
      out[16 + i] = arr->dtype;
      out[32 + i] = sum;
    } else if (a->types[i] == XLA_FFI_AttrType_STRING) {
      out[32 + i] = (double)((const XLA_FFI_ByteSpan *)a->attrs[i])->len;
    } else if (a->types[i] == XLA_FFI_AttrType_DICTIONARY) {
      const XLA_FFI_Attrs *d = a->attrs[i];
      double sum = 1000.0 * (double)d->size;
      for (int64_t k = 0; k < d->size; k++)
        if (d->types[k] == XLA_FFI_AttrType_SCALAR)
          sum += scalar_value(((const XLA_FFI_Scalar *)d->attrs[k])->dtype,
                              ((const XLA_FFI_Scalar *)d->attrs[k])->value);
      out[32 + i] = sum;
    }
  }
  return NULL;
}

static XLA_FFI_Error *reg(const XLA_FFI_Api *api, const char *name, const char *platform,
                          XLA_FFI_Handler *fn) {
  XLA_FFI_Handler_Register_Args r;
  memset(&r, 0, sizeof(r));
  r.struct_size = XLA_FFI_Handler_Register_Args_STRUCT_SIZE;
  r.name.ptr = name;
  r.name.len = strlen(name);
  r.platform.ptr = platform;
  r.platform.len = strlen(platform);
  r.bundle.execute = fn;
  return api->XLA_FFI_Handler_Register(&r);
}

XLA_FFI_Error *hlo_launch_ffi_init(const XLA_FFI_Api *api) {
  if (api->api_version.major_version != XLA_FFI_API_MAJOR)
    return fail(api, XLA_FFI_Error_Code_FAILED_PRECONDITION, "FFI major version mismatch");
  XLA_FFI_Error *e = reg(api, "my_scale_add", "Host", scale_add);
  if (!e) e = reg(api, "my_describe", "cpu", describe);
  if (!e) e = reg(api, "my_attr_dump", "Host", attr_dump);
  // A GPU-only handler: never runs on the Host platform.
  if (!e) e = reg(api, "my_gpu_only", "CUDA", scale_add);
  return e;
}
