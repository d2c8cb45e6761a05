// fft (XLA Fft; StableHLO fft): FFT, IFFT, RFFT, IRFFT over the last
// size(fft_length) (1..3) dimensions through FFTW (fftwf for c64 / f32,
// fftw for c128 / f64), batched over the leading dimensions.
//
// Normalisation as XLA and numpy: forward transforms unscaled, IFFT and IRFFT
// scaled by 1 / prod(fft_length). RFFT keeps fft_length[-1] / 2 + 1 entries
// of the last axis; IRFFT reads that many and, like numpy's irfftn and
// FFTW's c2r, takes the spectrum as Hermitian (the imaginary parts that a
// real signal cannot have are ignored).
//
// Threads: the batch is cut into chunks of transforms whose size depends
// only on the shape (about 64 Ki elements, a multiple of 4 transforms so
// every chunk has the first one's alignment), each chunk one FFTW
// new-array execute of one plan (FFTW's execute calls are thread-safe), the
// chunks spread over the rank's pool. Every transform sees the same plan on
// any thread count, so results keep their bits; FFTW's own threaded plans
// would not (docs/ARCHITECTURE.md, "Blocked fusions, vector math,
// threads").
#include <fftw3.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"
#include "runtime/kernels/kernel_scratch.h"
#include "runtime/threads/thread_pool.h"

enum { FFT_C2C = 0, FFT_INVERSE = 1, FFT_R2C = 2, FFT_C2R = 3 };

static const char *fft_type_name(int t) {
  switch (t) {
    case FFT_C2C: return "FFT";
    case FFT_INVERSE: return "IFFT";
    case FFT_R2C: return "RFFT";
    case FFT_C2R: return "IRFFT";
    default: return "?";
  }
}

// Checks types and shapes against fft_type / fft_length. *double_prec tells
// fftw from fftwf.
static hl_status_t fft_check(const hl_instruction_t *inst, const hl_shape_t *xs,
                             bool *double_prec) {
  const char *loc = hl_instruction_location(inst);
  const hl_shape_t *ys = &inst->shape;
  int type = inst->attrs.fft_type;
  const hl_i64_list_t *len = &inst->attrs.fft_length;
  if (type < FFT_C2C || type > FFT_C2R)
    return HL_INVALID("%s: unknown fft_type %d", loc, type);
  if (len->n < 1 || len->n > 3 || len->n > xs->rank)
    return HL_INVALID("%s: fft_length has %d entries; needs 1..3 and at most the rank of %s",
                      loc, len->n, HL_SHAPE_STR(xs));
  hl_dtype_t it = xs->dtype, ot = ys->dtype;
  bool types_ok;
  switch (type) {
    case FFT_C2C: case FFT_INVERSE: types_ok = (it == HL_C64 || it == HL_C128) && ot == it; break;
    case FFT_R2C:
      types_ok = (it == HL_F32 && ot == HL_C64) || (it == HL_F64 && ot == HL_C128);
      break;
    default: types_ok = (it == HL_C64 && ot == HL_F32) || (it == HL_C128 && ot == HL_F64); break;
  }
  if (!types_ok)
    return HL_INVALID("%s: %s of %s into %s: element types do not fit (c64/c128, f32->c64, "
                      "f64->c128, c64->f32, c128->f64)", loc, fft_type_name(type),
                      hl_dtype_name(it), hl_dtype_name(ot));
  *double_prec = it == HL_C128 || it == HL_F64;
  bool ok = hl_shape_is_array(ys) && ys->rank == xs->rank;
  int r = xs->rank, first = r - len->n;
  for (int d = 0; ok && d < r; d++) {
    int64_t want_in = xs->dims[d], want_out = xs->dims[d];
    if (d >= first) {
      int64_t n = len->v[d - first];
      if (n < 0) ok = false;
      want_in = want_out = n;
      if (d == r - 1 && type == FFT_R2C) want_out = n == 0 ? 0 : n / 2 + 1;
      if (d == r - 1 && type == FFT_C2R) want_in = n == 0 ? 0 : n / 2 + 1;
    }
    ok = ok && xs->dims[d] == want_in && ys->dims[d] == want_out;
  }
  if (!ok)
    return HL_INVALID("%s: %s with fft_length of %d entries does not map %s to %s", loc,
                      fft_type_name(type), len->n, HL_SHAPE_STR(xs), HL_SHAPE_STR(ys));
  for (int i = 0; i < len->n; i++)
    if (len->v[i] > INT_MAX) return HL_UNIMPL("%s: fft_length too large for FFTW", loc);
  return NULL;
}

// One fft instruction's transforms: `per` to a chunk, the last chunk
// possibly shorter (plan_rest), each chunk's input and output at its
// transforms' offsets.
typedef struct fft_job {
  bool dp;
  int type;
  const char *x;
  char *y, *scratch;           // scratch: c2r's copy of the input
  size_t in_bytes, out_bytes;  // per transform
  int64_t per, howmany, total, out_scalars;
  void *plan_full, *plan_rest;  // fftw_plan / fftwf_plan
} fft_job_t;

// The buffers chunk c reads and writes.
static void fft_buffers(const fft_job_t *j, int64_t c, void **in, void **out) {
  size_t t0 = (size_t)(c * j->per);
  *out = j->y + t0 * j->out_bytes;
  switch (j->type) {
    case FFT_C2C: case FFT_INVERSE: *in = *out; break;  // in place
    case FFT_R2C: *in = (void *)(j->x + t0 * j->in_bytes); break;
    default: *in = j->scratch + t0 * j->in_bytes; break;
  }
}

// Plans `count` transforms on chunk c's buffers (FFTW_ESTIMATE leaves them
// untouched). False when FFTW cannot.
static bool fft_plan(const fft_job_t *j, int count, int64_t c, void **plan, int rank,
                     const int *n, int64_t idist, int64_t odist) {
  void *in, *out;
  fft_buffers(j, c, &in, &out);
  int id = (int)idist, od = (int)odist;
  unsigned flags = FFTW_ESTIMATE;
  int sign = j->type == FFT_C2C ? FFTW_FORWARD : FFTW_BACKWARD;
  // The same calls through fftw_ (double) or fftwf_ (single precision).
#define FFT_PLAN_(P)                                                                         \
  switch (j->type) {                                                                         \
    case FFT_C2C: case FFT_INVERSE:                                                          \
      *plan = P##plan_many_dft(rank, n, count, in, NULL, 1, id, out, NULL, 1, od, sign,      \
                               flags);                                                       \
      break;                                                                                 \
    case FFT_R2C:                                                                            \
      *plan = P##plan_many_dft_r2c(rank, n, count, in, NULL, 1, id, out, NULL, 1, od,        \
                                   flags | FFTW_PRESERVE_INPUT);                             \
      break;                                                                                 \
    default:                                                                                 \
      *plan = P##plan_many_dft_c2r(rank, n, count, in, NULL, 1, id, out, NULL, 1, od, flags); \
      break;                                                                                 \
  }
  if (j->dp) {
    FFT_PLAN_(fftw_)
  } else {
    FFT_PLAN_(fftwf_)
  }
#undef FFT_PLAN_
  return *plan != NULL;
}

static void fft_destroy(const fft_job_t *j, void *plan) {
  if (!plan) return;
  if (j->dp)
    fftw_destroy_plan(plan);
  else
    fftwf_destroy_plan(plan);
}

// Chunk c: copy its input where the plan wants it, transform, scale inverses
// by 1 / prod(fft_length).
static void fft_chunk(void *arg, int64_t c, int worker) {
  (void)worker;
  const fft_job_t *j = arg;
  int64_t t0 = c * j->per, count = j->howmany - t0 < j->per ? j->howmany - t0 : j->per;
  void *plan = count == j->per ? j->plan_full : j->plan_rest;
  void *in, *out;
  fft_buffers(j, c, &in, &out);
  if (j->type == FFT_C2C || j->type == FFT_INVERSE || j->type == FFT_C2R)
    memcpy(in, j->x + (size_t)t0 * j->in_bytes, (size_t)count * j->in_bytes);
#define FFT_EXECUTE_(P)                                              \
  switch (j->type) {                                                 \
    case FFT_C2C: case FFT_INVERSE: P##execute_dft(plan, in, out); break; \
    case FFT_R2C: P##execute_dft_r2c(plan, in, out); break;          \
    default: P##execute_dft_c2r(plan, in, out); break;               \
  }
  if (j->dp) {
    FFT_EXECUTE_(fftw_)
  } else {
    FFT_EXECUTE_(fftwf_)
  }
#undef FFT_EXECUTE_
  if (j->type != FFT_INVERSE && j->type != FFT_C2R) return;
  int64_t scalars = count * j->out_scalars;
  if (j->dp) {
    double *d = out, s = (double)j->total;
    for (int64_t i = 0; i < scalars; i++) d[i] /= s;
  } else {
    float *f = out, s = (float)j->total;
    for (int64_t i = 0; i < scalars; i++) f[i] /= s;
  }
}

hl_status_t hl_kernel_fft(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                          hl_literal_t *const *operands, hl_literal_t **out) {
  *out = NULL;
  const char *loc = hl_instruction_location(inst);
  const hl_literal_t *x = operands[0];
  bool dp = false;
  HL_RETURN_IF_ERROR(fft_check(inst, &x->shape, &dp));
  int type = inst->attrs.fft_type, rank = inst->attrs.fft_length.n;
  int n[3];
  int64_t total = 1;
  for (int i = 0; i < rank; i++) n[i] = (int)inst->attrs.fft_length.v[i], total *= n[i];
  hl_literal_t *y;  // every element is written below (or there are none)
  HL_RETURN_IF_ERROR(hl_literal_create_uninitialized(&inst->shape, &y));
  int64_t n_in = hl_literal_element_count(x), n_out = hl_literal_element_count(y);
  if (n_in == 0 || n_out == 0 || total == 0) {
    *out = y;
    return NULL;
  }
  int64_t idist = 1, odist = 1;
  for (int d = x->shape.rank - rank; d < x->shape.rank; d++)
    idist *= x->shape.dims[d], odist *= y->shape.dims[d];
  int64_t howmany = n_in / idist;
  if (howmany > INT_MAX || idist > INT_MAX || odist > INT_MAX) {
    hl_literal_release(y);
    return HL_UNIMPL("%s: fft batch too large for FFTW", loc);
  }
  // c2c runs in place on the result; c2r destroys its input, so it gets a
  // scratch copy. Each chunk copies its own part (in parallel, while hot).
  void *scratch = NULL;
  if (type == FFT_C2R && !(scratch = hl_malloc(x->byte_size))) {
    hl_literal_release(y);
    return HL_OOM();
  }
  size_t in_es = x->byte_size / (size_t)n_in, out_es = y->byte_size / (size_t)n_out;
  fft_job_t job = {.dp = dp, .type = type, .x = x->data, .y = y->data, .scratch = scratch,
                   .in_bytes = (size_t)idist * in_es, .out_bytes = (size_t)odist * out_es,
                   .howmany = howmany, .total = total,
                   .out_scalars = odist * (type == FFT_INVERSE ? 2 : 1)};
  int64_t per = ((65536 / idist > 1 ? 65536 / idist : 1) + 3) / 4 * 4;
  job.per = per < howmany ? per : howmany;
  int64_t chunks = (howmany + job.per - 1) / job.per, rest = howmany - (chunks - 1) * job.per;
  bool planned = fft_plan(&job, (int)job.per, 0, &job.plan_full, rank, n, idist, odist);
  if (planned && rest != job.per)
    planned = fft_plan(&job, (int)rest, chunks - 1, &job.plan_rest, rank, n, idist, odist);
  if (planned) hl_thread_pool_run(hl_kernel_options(ctx)->pool, chunks, fft_chunk, &job);
  fft_destroy(&job, job.plan_full);
  fft_destroy(&job, job.plan_rest);
  hl_free(scratch);
  if (!planned) {
    hl_literal_release(y);
    return HL_INTERNAL_ERROR("%s: FFTW could not plan %s of %s", loc, fft_type_name(type),
                             HL_SHAPE_STR(&x->shape));
  }
  *out = y;
  return NULL;
}

// The c2r transform's copy of its input (it destroys what it reads;
// kernel_scratch.h).
void hl_fft_scratch(const hl_instruction_t *inst, hl_kernel_scratch_t *out) {
  out->count = 0;
  if (inst->attrs.fft_type != FFT_C2R || inst->operand_count != 1 ||
      !hl_shape_is_array(&inst->operands[0]->shape) || !hl_shape_is_array(&inst->shape))
    return;
  int64_t total = 1;
  for (int i = 0; i < inst->attrs.fft_length.n; i++) total *= inst->attrs.fft_length.v[i];
  if (total == 0 || hl_shape_element_count(&inst->shape) == 0) return;
  int64_t bytes = hl_shape_byte_size(&inst->operands[0]->shape);
  if (bytes > 0) hl_kernel_scratch_add(out, bytes);
}
