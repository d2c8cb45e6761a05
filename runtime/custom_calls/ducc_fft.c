// jaxlib's old CPU FFT targets, replayed with FFTW's guru interface:
//   ducc_fft          (descriptor u8[N], x) -> y
//   dynamic_ducc_fft  (descriptor u8[N], x, shape u32[r], strides_in u32[r],
//                      strides_out u32[r], scale f64[]) -> y
// The descriptor is a flatbuffer (jaxlib/cpu/ducc_fft.fbs: DuccFftDescriptor
// {dtype, fft_type, shape:[u64], strides_in:[u64], strides_out:[u64],
// axes:[u32], forward, scale}; DynamicDuccFftDescriptor {ndims, dtype,
// fft_type, axes:[u32], forward}). As ducc0's c2c / r2c / c2r in
// jaxlib/cpu/ducc_fft_kernels.cc: strides count elements of the buffers as
// the instruction lays them out, the transform runs over `axes` (the last one
// halved on the complex side of r2c / c2r) and the result is multiplied by
// `scale`.
#include <complex.h>
#include <fftw3.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/custom_calls/frame.h"
#include "runtime/kernels/element_access.h"

enum { C2C = 0, C2R = 1, R2C = 2 };

// A bounds-checked flatbuffer table reader (little-endian, memcpy reads).
typedef struct fb {
  const uint8_t *p;
  size_t n;
  size_t table;      // table position
  size_t vtable;     // vtable position
  uint16_t vt_size;
} fb_t;

static bool rd(const fb_t *b, size_t at, void *out, size_t size) {
  if (at > b->n || size > b->n - at) return false;
  memcpy(out, b->p + at, size);
  return true;
}

static bool fb_open(fb_t *b, const uint8_t *p, size_t n) {
  b->p = p;
  b->n = n;
  uint32_t root;
  int32_t soff;
  if (!rd(b, 0, &root, 4) || !rd(b, root, &soff, 4)) return false;
  b->table = root;
  int64_t vt = (int64_t)root - soff;
  if (vt < 0 || (size_t)vt >= n) return false;
  b->vtable = (size_t)vt;
  return rd(b, b->vtable, &b->vt_size, 2);
}

// The position of field `id`, 0 when absent.
static size_t fb_field(const fb_t *b, int id) {
  size_t slot = 4 + 2 * (size_t)id;
  uint16_t off = 0;
  if (slot + 2 > b->vt_size || !rd(b, b->vtable + slot, &off, 2) || off == 0) return 0;
  return b->table + off;
}

static bool fb_scalar(const fb_t *b, int id, void *out, size_t size) {
  size_t at = fb_field(b, id);
  if (!at) return true;  // the schema's default (zero)
  return rd(b, at, out, size);
}

// A vector of `elem`-byte integers, widened to int64.
static bool fb_vector(const fb_t *b, int id, size_t elem, int64_t *out, int max, int *count) {
  *count = 0;
  size_t at = fb_field(b, id);
  if (!at) return true;
  uint32_t rel, len;
  if (!rd(b, at, &rel, 4) || !rd(b, at + rel, &len, 4) || len > (uint32_t)max) return false;
  for (uint32_t i = 0; i < len; i++) {
    uint64_t v = 0;
    if (!rd(b, at + rel + 4 + i * elem, &v, elem)) return false;
    out[i] = (int64_t)v;
  }
  *count = (int)len;
  return true;
}

typedef struct fft_desc {
  int dtype, type, rank, naxes;
  bool forward;
  double scale;
  int64_t shape[HL_MAX_RANK], in_strides[HL_MAX_RANK], out_strides[HL_MAX_RANK];
  int64_t axes[HL_MAX_RANK];
} fft_desc_t;

static int64_t u32_at(const hl_cc_buffer_t *b, int i) { return ((const uint32_t *)b->data)[i]; }

static hl_status_t read_descriptor(const hl_custom_call_t *call, const hl_cc_frame_t *f,
                                   bool dynamic, fft_desc_t *d) {
  const char *loc = hl_instruction_location(call->inst);
  memset(d, 0, sizeof(*d));
  const hl_cc_buffer_t *db = &f->args[0];
  fb_t b;
  if (db->dtype != HL_U8 || db->rank != 1 || !fb_open(&b, db->data, (size_t)db->count))
    return HL_INVALID("%s: custom-call \"%s\" operand 0 is not a flatbuffer descriptor (u8[N])",
                      loc, call->name);
  int8_t dtype = 0, type = 0;
  uint8_t forward = 0;
  bool ok;
  if (!dynamic) {
    int n1, n2;
    ok = fb_scalar(&b, 0, &dtype, 1) && fb_scalar(&b, 1, &type, 1) &&
         fb_vector(&b, 2, 8, d->shape, HL_MAX_RANK, &d->rank) &&
         fb_vector(&b, 3, 8, d->in_strides, HL_MAX_RANK, &n1) &&
         fb_vector(&b, 4, 8, d->out_strides, HL_MAX_RANK, &n2) &&
         fb_vector(&b, 5, 4, d->axes, HL_MAX_RANK, &d->naxes) && fb_scalar(&b, 6, &forward, 1) &&
         fb_scalar(&b, 7, &d->scale, 8) && n1 == d->rank && n2 == d->rank;
  } else {
    uint32_t ndims = 0;
    ok = fb_scalar(&b, 0, &ndims, 4) && fb_scalar(&b, 1, &dtype, 1) &&
         fb_scalar(&b, 2, &type, 1) && fb_vector(&b, 3, 4, d->axes, HL_MAX_RANK, &d->naxes) &&
         fb_scalar(&b, 4, &forward, 1) && ndims <= HL_MAX_RANK;
    d->rank = (int)ndims;
    for (int i = 2; ok && i < 5; i++)
      ok = f->args[i].dtype == HL_U32 && f->args[i].count == d->rank;
    ok = ok && f->args[5].dtype == HL_F64 && f->args[5].count == 1;
    for (int i = 0; ok && i < d->rank; i++) {
      d->shape[i] = u32_at(&f->args[2], i);
      d->in_strides[i] = u32_at(&f->args[3], i);
      d->out_strides[i] = u32_at(&f->args[4], i);
    }
    if (ok) d->scale = *(const double *)f->args[5].data;
  }
  if (!ok)
    return HL_INVALID("%s: custom-call \"%s\": malformed descriptor (jaxlib's ducc_fft.fbs) or "
                      "shape / stride / scale operands", loc, call->name);
  d->dtype = dtype;
  d->type = type;
  d->forward = forward != 0;
  if (d->dtype < 0 || d->dtype > 1 || d->type < 0 || d->type > 2 || d->naxes < 1)
    return HL_INVALID("%s: custom-call \"%s\": descriptor dtype %d / fft_type %d / %d axes",
                      loc, call->name, d->dtype, d->type, d->naxes);
  for (int i = 0; i < d->naxes; i++)
    if (d->axes[i] < 0 || d->axes[i] >= d->rank)
      return HL_INVALID("%s: custom-call \"%s\": axis %lld outside rank %d", loc, call->name,
                        (long long)d->axes[i], d->rank);
  if ((d->type == R2C && !d->forward) || (d->type == C2R && d->forward))
    return HL_UNIMPL("%s: custom-call \"%s\": a %s transform with forward=%d (FFTW's real "
                     "transforms have one direction each)", loc, call->name,
                     d->type == R2C ? "r2c" : "c2r", d->forward);
  return NULL;
}

// Checks that every strided access of `count`-element buffer stays inside.
static bool fits(const fft_desc_t *d, const int64_t *shape, const int64_t *strides,
                 int64_t count) {
  int64_t last = 0;
  for (int i = 0; i < d->rank; i++) {
    if (shape[i] <= 0) return true;
    if (strides[i] < 0) return false;
    last += (shape[i] - 1) * strides[i];
  }
  return last < count;
}

static hl_status_t run(const hl_custom_call_t *call, bool dynamic, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(call->inst);
  hl_cc_frame_t f;
  HL_RETURN_IF_ERROR(hl_cc_frame_init(call, &f));
  hl_status_t st = NULL;
  if (f.arg_count != (dynamic ? 6 : 2) || f.ret_count != 1)
    st = HL_INVALID("%s: custom-call \"%s\" takes %d operands and 1 result", loc, call->name,
                    dynamic ? 6 : 2);
  fft_desc_t d;
  if (!st) st = read_descriptor(call, &f, dynamic, &d);
  hl_cc_buffer_t *x = &f.args[1], *y = &f.rets[0];
  bool dbl = !st && d.dtype == 1;
  hl_dtype_t ct = dbl ? HL_C128 : HL_C64, rt = dbl ? HL_F64 : HL_F32;
  hl_dtype_t want_in = !st && d.type == R2C ? rt : ct, want_out = !st && d.type == C2R ? rt : ct;
  if (!st && (x->dtype != want_in || y->dtype != want_out))
    st = HL_INVALID("%s: custom-call \"%s\" moves %s to %s; the descriptor says %s to %s", loc,
                    call->name, hl_dtype_name(x->dtype), hl_dtype_name(y->dtype),
                    hl_dtype_name(want_in), hl_dtype_name(want_out));
  int64_t in_shape[HL_MAX_RANK], out_shape[HL_MAX_RANK];
  if (!st) {
    memcpy(in_shape, d.shape, sizeof(in_shape));
    memcpy(out_shape, d.shape, sizeof(out_shape));
    int64_t last = d.axes[d.naxes - 1];
    if (d.type == C2R) in_shape[last] = d.shape[last] / 2 + 1;
    if (d.type == R2C) out_shape[last] = d.shape[last] / 2 + 1;
    if (!fits(&d, in_shape, d.in_strides, x->count) || !fits(&d, out_shape, d.out_strides, y->count))
      st = HL_INVALID("%s: custom-call \"%s\": the descriptor's shape and strides reach outside "
                      "the operand or result", loc, call->name);
  }
  if (!st) {
    // Transform dims (the axes) and loop dims (the rest), in elements.
    fftw_iodim dims[HL_MAX_RANK], loops[HL_MAX_RANK];
    int nl = 0;
    bool is_axis[HL_MAX_RANK] = {false};
    for (int i = 0; i < d.naxes; i++) {
      int64_t a = d.axes[i];
      is_axis[a] = true;
      dims[i] = (fftw_iodim){(int)d.shape[a], (int)d.in_strides[a], (int)d.out_strides[a]};
    }
    for (int i = 0; i < d.rank; i++)
      if (!is_axis[i]) loops[nl++] = (fftw_iodim){(int)d.shape[i], (int)d.in_strides[i],
                                                   (int)d.out_strides[i]};
    // c2r destroys its input: work on a copy.
    size_t in_bytes = (size_t)x->count * hl_dtype_size(x->dtype);
    void *in = hl_malloc(in_bytes ? in_bytes : 1);
    if (!in) st = HL_OOM();
    if (!st) memcpy(in, x->data, in_bytes);
    int sign = d.forward ? FFTW_FORWARD : FFTW_BACKWARD;
    unsigned flags = FFTW_ESTIMATE;
    if (!st && dbl) {
      fftw_plan p = d.type == C2C ? fftw_plan_guru_dft(d.naxes, dims, nl, loops, in, y->data, sign, flags)
                  : d.type == R2C ? fftw_plan_guru_dft_r2c(d.naxes, dims, nl, loops, in, y->data, flags)
                                  : fftw_plan_guru_dft_c2r(d.naxes, dims, nl, loops, in, y->data, flags);
      if (!p) st = HL_UNIMPL("%s: custom-call \"%s\": FFTW has no plan for this layout", loc, call->name);
      else {
        fftw_execute(p);
        fftw_destroy_plan(p);
      }
    } else if (!st) {
      fftwf_plan p = d.type == C2C ? fftwf_plan_guru_dft(d.naxes, (fftwf_iodim *)dims, nl, (fftwf_iodim *)loops, in, y->data, sign, flags)
                   : d.type == R2C ? fftwf_plan_guru_dft_r2c(d.naxes, (fftwf_iodim *)dims, nl, (fftwf_iodim *)loops, in, y->data, flags)
                                   : fftwf_plan_guru_dft_c2r(d.naxes, (fftwf_iodim *)dims, nl, (fftwf_iodim *)loops, in, y->data, flags);
      if (!p) st = HL_UNIMPL("%s: custom-call \"%s\": FFTW has no plan for this layout", loc, call->name);
      else {
        fftwf_execute(p);
        fftwf_destroy_plan(p);
      }
    }
    hl_free(in);
    if (!st && d.scale != 1) {
      int64_t n = y->count * (y->dtype == HL_C64 || y->dtype == HL_C128 ? 2 : 1);
      if (dbl)
        for (int64_t i = 0; i < n; i++) ((double *)y->data)[i] *= d.scale;
      else
        for (int64_t i = 0; i < n; i++) ((float *)y->data)[i] *= (float)d.scale;
    }
  }
  if (!st) st = hl_cc_frame_finish(call, &f, out);
  hl_cc_frame_deinit(&f);
  return st;
}

static hl_status_t ducc_fft(const hl_custom_call_t *call, hl_literal_t **out) {
  return run(call, false, out);
}
static hl_status_t dynamic_ducc_fft(const hl_custom_call_t *call, hl_literal_t **out) {
  return run(call, true, out);
}

const hl_custom_call_target_t hl_custom_calls_ducc_fft[] = {
    {"ducc_fft", ducc_fft, NULL},
    {"dynamic_ducc_fft", dynamic_ducc_fft, NULL},
    {NULL, NULL, NULL},
};
