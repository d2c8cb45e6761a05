// The shared-memory collectives (collectives/shm/) against the MPI backend
// on the same data: two communicators side by side, one plain MPI, one with
// the shared-memory layer forced on (HL_COLLECTIVES_SHM), and every
// collective, element type and reduction compared bit for bit. The data are
// chosen so that every association order gives the same bits (small
// integers, powers of two, NaN / -0 / +0 for min / max), so float sums must
// match exactly too; integer sums are also checked against their closed
// form. HL_SHM_SLOT_BYTES=4096 makes every call run many rounds. Run by
// tests/integration/test_shm_backend.py under mpiexec with 2, 4 and 8 ranks
// (ctest also runs it as one process, where no group reaches the layer).
// hl-test-libs: hl_collectives hl_text hl_exec hl_ir hl_base
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectives/mpi_comm.h"
#include "collectives/shm/shm_layer.h"
#include "collectives/shm/shm_tuning.h"
#include "runtime/base/alloc.h"
#include "runtime/base/dtype.h"
#include "runtime/base/strbuf.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

static int g_rank, g_size;

enum { kMaxShapes = 4 };
static int g_shape_count;

// replica_groups of group shape k on N ranks: all, pairs, strided, reversed.
static void shape_groups(int k, hl_strbuf_t *sb) {
  int n = g_size;
  if (k == 0) {
    hl_strbuf_append(sb, "{}");
    return;
  }
  hl_strbuf_append(sb, "{");
  if (k == 1) {  // reversed: member index != node rank
    hl_strbuf_append(sb, "{");
    for (int i = n - 1; i >= 0; i--) hl_strbuf_appendf(sb, i < n - 1 ? ",%d" : "%d", i);
    hl_strbuf_append(sb, "}");
  } else if (k == 2) {  // pairs {0,1},{2,3},...
    for (int i = 0; i < n; i += 2) hl_strbuf_appendf(sb, "%s{%d,%d}", i ? "," : "", i, i + 1);
  } else {  // strided {0,2,..},{1,3,..}
    for (int o = 0; o < 2; o++) {
      hl_strbuf_append(sb, o ? ",{" : "{");
      for (int i = o; i < n; i += 2) hl_strbuf_appendf(sb, i > o ? ",%d" : "%d", i);
      hl_strbuf_append(sb, "}");
    }
  }
  hl_strbuf_append(sb, "}");
}

static hl_module_t *make_module(void) {
  int n = g_size;
  g_shape_count = n >= 4 && n % 2 == 0 ? 4 : 2;
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_appendf(&sb, "HloModule shm\nsum {\n  a = f32[] parameter(0)\n"
                         "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
                         "ENTRY e {\n  p = f32[8] parameter(0)\n");
  for (int k = 0; k < g_shape_count; k++) {
    static const char *const kOps[4] = {"ar", "rs", "ag", "a2a"};
    for (int o = 0; o < 4; o++) {
      hl_strbuf_appendf(&sb, "  %s%d = f32[8] %s(p), replica_groups=", kOps[o], k,
                        o == 0 ? "all-reduce" : o == 1 ? "reduce-scatter"
                                : o == 2 ? "all-gather" : "all-to-all");
      shape_groups(k, &sb);
      hl_strbuf_append(&sb, o < 2 ? ", to_apply=sum" : "");
      hl_strbuf_append(&sb, o > 0 ? ", dimensions={0}\n" : "\n");
    }
  }
  hl_strbuf_append(&sb, "  ring = f32[8] collective-permute(p), source_target_pairs={");
  for (int i = 0; i < n; i++) hl_strbuf_appendf(&sb, "%s{%d,%d}", i ? "," : "", i, (i + 1) % n);
  hl_strbuf_append(&sb, "}\n  part = f32[8] collective-permute(p), source_target_pairs={");
  for (int i = 0; i + 1 < n; i++) hl_strbuf_appendf(&sb, "%s{%d,%d}", i ? "," : "", i + 1, i);
  hl_strbuf_append(&sb, "}\n  cb = f32[8] collective-broadcast(p), replica_groups={{");
  for (int i = 0; i < n; i++) hl_strbuf_appendf(&sb, i ? ",%d" : "%d", (i + n - 1) % n);
  hl_strbuf_append(&sb, "}}\n  ROOT t = (f32[8]) tuple(p)\n}\n");
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(hl_strbuf_cstr(&sb), sb.length, "shm", &m);
  if (st) {
    fprintf(stderr, "parse: %s\n%s\n", hl_status_message(st), hl_strbuf_cstr(&sb));
    hl_status_free(st);
  }
  hl_strbuf_deinit(&sb);
  return m;
}

static const hl_instruction_t *find(const hl_module_t *m, const char *name, int k) {
  char full[32];
  snprintf(full, sizeof full, k >= 0 ? "%s%d" : "%s", name, k);
  return hl_computation_find_instruction(m->entry, full);
}

typedef struct {
  hl_module_t *m;
  hl_comm_t *mpi, *shm;
} fixture_t;

static bool setup(fixture_t *f) {
  memset(f, 0, sizeof *f);
  f->m = make_module();
  if (!f->m) return false;
  setenv("HL_SHM_SLOT_BYTES", "4096", 1);
  setenv("HL_SHM_DIRECT_MIN_BYTES", "0", 1);  // the direct path at every size
  hl_status_t st = hl_mpi_comm_create(MPI_COMM_WORLD, &f->mpi);
  if (!st) st = f->mpi->vtable->prepare(f->mpi, f->m, g_size, 1);
  if (!st) st = hl_mpi_comm_create(MPI_COMM_WORLD, &f->shm);
  if (!st) st = hl_shm_layer_install(f->shm, HL_COLLECTIVES_SHM);
  if (!st) st = f->shm->vtable->prepare(f->shm, f->m, g_size, 1);
  // HL_SHM_DIRECT=0 / 1 (tests/integration/test_shm_backend.py): the path
  // the layer must have taken on a node of more than one rank.
  const char *direct = getenv("HL_SHM_DIRECT");
  if (!st && direct && g_size > 1 && hl_shm_layer_direct(f->shm) != !strcmp(direct, "1"))
    st = HL_INTERNAL_ERROR("HL_SHM_DIRECT=%s, but the layer's direct path is %s", direct,
                           hl_shm_layer_direct(f->shm) ? "on" : "off");
  if (st) {
    fprintf(stderr, "setup: %s\n", hl_status_message(st));
    hl_status_free(st);
    return false;
  }
  return true;
}

static void teardown(fixture_t *f) {
  hl_comm_destroy(f->shm);
  hl_comm_destroy(f->mpi);
  hl_module_destroy(f->m);
}

static uint64_t mix(uint64_t x) {
  x += UINT64_C(0x9E3779B97F4A7C15);
  x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
  return x ^ (x >> 31);
}

// A value whose reductions are exact in any order: small integers for add,
// +-1 / +-2 / 0.5 for multiply, with NaN, -0, +0 and inf among min / max data.
static double float_value(hl_comm_reduce_op_t op, uint64_t h) {
  if (op == HL_COMM_REDUCE_MUL) {
    static const double kMul[5] = {1, -1, 2, -2, 0.5};
    return kMul[h % 5];
  }
  if (op == HL_COMM_REDUCE_MIN || op == HL_COMM_REDUCE_MAX) {
    switch (h % 16) {
      case 0: return NAN;
      case 1: return -0.0;
      case 2: return 0.0;
      case 3: return INFINITY;
      default: break;
    }
  }
  return (double)((int64_t)(h >> 8) % 9 - 4);
}

// Element i of `rank`'s operand for (dtype, op), `salt` telling calls apart.
static void fill(hl_dtype_t t, hl_comm_reduce_op_t op, int rank, int salt, void *buf,
                 int64_t n) {
  size_t es = hl_dtype_size(t);
  for (int64_t i = 0; i < n; i++) {
    uint64_t h = mix(((uint64_t)rank << 40) ^ ((uint64_t)salt << 32) ^ (uint64_t)i);
    char *e = (char *)buf + (size_t)i * es;
    double v = float_value(op, h), w = float_value(op, mix(h));
    switch (t) {
      case HL_PRED: *(uint8_t *)e = h & 1; break;
      case HL_F16: *(uint16_t *)e = hl_f64_to_f16(v); break;
      case HL_BF16: *(uint16_t *)e = hl_f64_to_bf16(v); break;
      case HL_F32: *(float *)e = (float)v; break;
      case HL_F64: *(double *)e = v; break;
      case HL_C64: *(float complex *)e = (float)v + (float)w * I; break;
      case HL_C128: *(double complex *)e = v + w * I; break;
      default: memcpy(e, &h, es); break;
    }
  }
}

static int64_t g_errors;

static void expect_same(const char *what, const void *want, const void *got, size_t bytes) {
  if (memcmp(want, got, bytes) == 0) return;
  size_t at = 0;
  while (((const char *)want)[at] == ((const char *)got)[at]) at++;
  if (g_errors++ < 10)
    fprintf(stderr, "rank %d: %s differs from the MPI path at byte %zu of %zu\n", g_rank, what,
            at, bytes);
}

// Float sums and products: the same values (exact data), but the sign of a
// zero result may depend on the association order (x*y - z*w in complex
// products), so -0 and +0 count as equal here.
static double element(hl_dtype_t t, const void *buf, int64_t i, int part) {
  switch (t) {
    case HL_F16: return hl_f16_to_f32(((const uint16_t *)buf)[i]);
    case HL_BF16: return hl_bf16_to_f32(((const uint16_t *)buf)[i]);
    case HL_F32: return ((const float *)buf)[i];
    case HL_F64: return ((const double *)buf)[i];
    case HL_C64: return ((const float *)buf)[2 * i + part];
    default: return ((const double *)buf)[2 * i + part];
  }
}

static void expect_same_values(const char *what, hl_dtype_t t, const void *want,
                               const void *got, int64_t n) {
  int parts = hl_dtype_is_complex(t) ? 2 : 1;
  for (int64_t i = 0; i < n; i++)
    for (int part = 0; part < parts; part++) {
      double x = element(t, want, i, part), y = element(t, got, i, part);
      if (x == y || (x != x && y != y)) continue;
      if (g_errors++ < 10)
        fprintf(stderr, "rank %d: %s: element %lld is %g, the MPI path's %g\n", g_rank, what,
                (long long)i, y, x);
      return;
    }
}

static void expect_reduced(const char *what, hl_dtype_t t, hl_comm_reduce_op_t op,
                           const void *want, const void *got, int64_t n) {
  bool arith = op == HL_COMM_REDUCE_ADD || op == HL_COMM_REDUCE_MUL;
  if (arith && (hl_dtype_is_float(t) || hl_dtype_is_complex(t)))
    expect_same_values(what, t, want, got, n);
  else
    expect_same(what, want, got, (size_t)n * hl_dtype_size(t));
}

static hl_status_t first_combine(void *state, hl_dtype_t t, const void *in, void *inout,
                                 int64_t n) {
  (void)state;
  memcpy(inout, in, (size_t)n * hl_dtype_size(t));  // x (op) y = x: keeps rank order visible
  return NULL;
}

static bool group_of(fixture_t *f, const hl_instruction_t *inst, int *size, int *index) {
  hl_status_t st = f->mpi->vtable->group_of(f->mpi, inst, size, index);
  hl_status_free(st);
  return st == NULL;
}

static const hl_dtype_t kTypes[] = {HL_PRED, HL_S8, HL_S16, HL_S32, HL_S64, HL_U8, HL_U16,
                                    HL_U32, HL_U64, HL_F16, HL_BF16, HL_F32, HL_F64, HL_C64,
                                    HL_C128};

static bool op_applies(hl_dtype_t t, hl_comm_reduce_op_t op) {
  bool bitwise = op == HL_COMM_REDUCE_AND || op == HL_COMM_REDUCE_OR || op == HL_COMM_REDUCE_XOR;
  if (hl_dtype_is_complex(t)) return op == HL_COMM_REDUCE_ADD || op == HL_COMM_REDUCE_MUL;
  if (hl_dtype_is_float(t)) return !bitwise;
  return true;
}

// One all-reduce or reduce-scatter on both paths; count per member block
// for reduce-scatter.
static void reduce_both(fixture_t *f, bool scatter, int k, hl_dtype_t t,
                        const hl_comm_reducer_t *red, int64_t count, int salt, bool async) {
  const hl_instruction_t *inst = find(f->m, scatter ? "rs" : "ar", k);
  int size, index;
  CU_ASSERT_FATAL(group_of(f, inst, &size, &index));
  size_t es = hl_dtype_size(t);
  int64_t in_n = scatter ? count * size : count;
  char *in = hl_malloc((size_t)in_n * es + 1), *a = hl_malloc((size_t)count * es + 1),
       *b = hl_malloc((size_t)count * es + 1);
  fill(t, red->op, g_rank, salt, in, in_n);
  memset(a, 0x5a, (size_t)count * es);
  memset(b, 0xa5, (size_t)count * es);
  const hl_comm_vtable_t *vm = f->mpi->vtable, *vs = f->shm->vtable;
  hl_comm_request_t *req = NULL;
  if (scatter) {
    HL_ASSERT_OK(vm->reduce_scatter(f->mpi, inst, t, in, a, count, red, NULL));
    HL_ASSERT_OK(vs->reduce_scatter(f->shm, inst, t, in, b, count, red, async ? &req : NULL));
  } else {
    HL_ASSERT_OK(vm->all_reduce(f->mpi, inst, t, in, a, count, red, NULL));
    HL_ASSERT_OK(vs->all_reduce(f->shm, inst, t, in, b, count, red, async ? &req : NULL));
  }
  if (req) HL_ASSERT_OK(vs->wait(f->shm, req));
  char what[96];
  snprintf(what, sizeof what, "%s shape %d %s op %d count %lld", scatter ? "reduce-scatter"
           : "all-reduce", k, hl_dtype_name(t), (int)red->op, (long long)count);
  expect_reduced(what, t, red->op, a, b, count);
  // In place: the same result in the operand's buffer (reduce-scatter: at
  // its start).
  if (!scatter) {
    HL_ASSERT_OK(vs->all_reduce(f->shm, inst, t, in, in, count, red, NULL));
  } else {
    HL_ASSERT_OK(vs->reduce_scatter(f->shm, inst, t, in, in, count, red, NULL));
  }
  expect_reduced(what, t, red->op, a, in, count);
  hl_free(in);
  hl_free(a);
  hl_free(b);
}

static void test_reductions(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  int64_t before = hl_shm_layer_call_count(f.shm);
  static const int64_t kCounts[] = {1, 37, 3001};
  int salt = 0;
  for (int k = 0; k < g_shape_count; k++)
    for (size_t ti = 0; ti < sizeof kTypes / sizeof kTypes[0]; ti++)
      for (int op = HL_COMM_REDUCE_ADD; op <= HL_COMM_REDUCE_XOR; op++) {
        hl_dtype_t t = kTypes[ti];
        if (!op_applies(t, (hl_comm_reduce_op_t)op)) continue;
        // combine is the MPI path's fallback only; the native ops never call it.
        hl_comm_reducer_t red = {(hl_comm_reduce_op_t)op, first_combine, NULL};
        for (size_t c = 0; c < sizeof kCounts / sizeof kCounts[0]; c++) {
          reduce_both(&f, false, k, t, &red, kCounts[c], ++salt, c == 1);
          reduce_both(&f, true, k, t, &red, kCounts[c] / 4 + 1, ++salt, c == 2);
        }
      }
  // Custom reducers (the executor's path on MPI): x (op) y = x gives member 0's
  // operand when the order is the group's.
  hl_comm_reducer_t first = {HL_COMM_REDUCE_CUSTOM, first_combine, NULL};
  for (int k = 0; k < g_shape_count; k++) {
    reduce_both(&f, false, k, HL_F8E4M3FN, &first, 5000, ++salt, false);
    reduce_both(&f, true, k, HL_S32, &first, 999, ++salt, true);
  }
  // Errors stay those of the MPI path.
  hl_comm_reducer_t cmax = {HL_COMM_REDUCE_MAX, NULL, NULL};
  double complex z[64] = {0};
  HL_ASSERT_ERROR_CONTAINS(f.shm->vtable->all_reduce(f.shm, find(f.m, "ar", 0), HL_C128, z, z,
                                                     64, &cmax, NULL),
                           "complex");
  if (g_size > 1) CU_ASSERT(hl_shm_layer_call_count(f.shm) > before);
  CU_ASSERT_EQUAL(g_errors, 0);
  teardown(&f);
}

// Integer sums against their closed form: element i of rank r is r * 1000 + i.
// 6 MiB operands (in place too) cover the direct path's huge pages
// (shm_pages.c: buffers of whole 2 MiB pages) and its block-by-block
// copy-out over many blocks.
static void test_sum_closed_form(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  static const int64_t kCounts[] = {10007, (6 << 20) / 4 + 13};
  for (size_t c = 0; c < sizeof kCounts / sizeof kCounts[0]; c++)
    for (int in_place = 0; in_place < 2; in_place++) {
      int64_t n = kCounts[c];
      int32_t *x = hl_malloc((size_t)n * 4), *y = in_place ? x : hl_malloc((size_t)n * 4);
      // Twice on the same buffers: the second call exposes them again,
      // which is when shm_pages.c collapses them.
      for (int rep = 0; rep < 2; rep++) {
        for (int64_t i = 0; i < n; i++) x[i] = g_rank * 1000 + (int32_t)i;
        hl_comm_reducer_t add = {HL_COMM_REDUCE_ADD, first_combine, NULL};
        HL_ASSERT_OK(f.shm->vtable->all_reduce(f.shm, find(f.m, "ar", 0), HL_S32, x, y, n, &add,
                                               NULL));
        int64_t bad = 0, base = 1000LL * g_size * (g_size - 1) / 2;
        for (int64_t i = 0; i < n; i++) bad += y[i] != (int32_t)(base + (int64_t)g_size * i);
        CU_ASSERT_EQUAL(bad, 0);
      }
      hl_free(x);
      if (!in_place) hl_free(y);
    }
  teardown(&f);
}

static void test_data_movement(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  static const size_t kBytes[] = {1, 100, 4096, 70001};
  const hl_comm_vtable_t *vm = f.mpi->vtable, *vs = f.shm->vtable;
  for (size_t bi = 0; bi < sizeof kBytes / sizeof kBytes[0]; bi++) {
    size_t bytes = kBytes[bi];
    size_t total = bytes * (size_t)g_size;
    char *in = hl_malloc(total), *a = hl_malloc(total), *b = hl_malloc(total);
    fill(HL_U8, HL_COMM_REDUCE_ADD, g_rank, (int)bi, in, (int64_t)total);
    char what[64];
    for (int k = 0; k < g_shape_count; k++) {
      int size, index;
      const hl_instruction_t *ag = find(f.m, "ag", k), *a2a = find(f.m, "a2a", k);
      CU_ASSERT_FATAL(group_of(&f, ag, &size, &index));
      size_t out = bytes * (size_t)size;
      memset(a, 1, total);
      memset(b, 2, total);
      HL_ASSERT_OK(vm->all_gather(f.mpi, ag, in, a, bytes, NULL));
      HL_ASSERT_OK(vs->all_gather(f.shm, ag, in, b, bytes, NULL));
      snprintf(what, sizeof what, "all-gather shape %d, %zu bytes", k, bytes);
      expect_same(what, a, b, out);
      // In place: the operand already at its own position of the result.
      memcpy(b + (size_t)index * bytes, in, bytes);
      hl_comm_request_t *req = NULL;
      HL_ASSERT_OK(vs->all_gather(f.shm, ag, b + (size_t)index * bytes, b, bytes, &req));
      HL_ASSERT_OK(vs->wait(f.shm, req));
      expect_same(what, a, b, out);
      HL_ASSERT_OK(vm->all_to_all(f.mpi, a2a, in, a, bytes, NULL));
      int64_t calls = hl_shm_layer_call_count(f.shm);
      HL_ASSERT_OK(vs->all_to_all(f.shm, a2a, in, b, bytes, NULL));
      snprintf(what, sizeof what, "all-to-all shape %d, %zu bytes", k, bytes);
      expect_same(what, a, b, out);
      // In place (send == recv): the shared-memory path's own (MPI_Alltoall
      // has no in-place form), so only where the layer takes the call.
      if (hl_shm_layer_call_count(f.shm) == calls) continue;
      memcpy(b, in, out);
      HL_ASSERT_OK(vs->all_to_all(f.shm, a2a, b, b, bytes, NULL));
      expect_same(what, a, b, out);
    }
    static const char *const kPermutes[2] = {"ring", "part"};
    for (int p = 0; p < 2; p++) {
      const hl_instruction_t *cp = find(f.m, kPermutes[p], -1);
      memset(a, 1, bytes);
      memset(b, 2, bytes);
      HL_ASSERT_OK(vm->collective_permute(f.mpi, cp, in, a, bytes, NULL));
      HL_ASSERT_OK(vs->collective_permute(f.shm, cp, in, b, bytes, NULL));
      snprintf(what, sizeof what, "permute %s, %zu bytes", kPermutes[p], bytes);
      expect_same(what, a, b, bytes);
      int src_a = -2, src_b = -2;
      memset(a, 3, bytes);
      memset(b, 3, bytes);
      HL_ASSERT_OK(vm->collective_permute_slot(f.mpi, cp, 0, 1, in, a, bytes, &src_a, NULL));
      hl_comm_request_t *req = NULL;
      int64_t calls = hl_shm_layer_call_count(f.shm);
      HL_ASSERT_OK(vs->collective_permute_slot(f.shm, cp, 0, 1, in, b, bytes, &src_b, &req));
      HL_ASSERT_OK(vs->wait(f.shm, req));
      CU_ASSERT_EQUAL(src_a, src_b);
      expect_same(what, a, b, bytes);
      // In place (send == recv; the layer's own, MPI_Sendrecv has none): the
      // operand must reach the target intact.
      if (hl_shm_layer_call_count(f.shm) == calls) continue;
      memcpy(b, in, bytes);
      HL_ASSERT_OK(vs->collective_permute_slot(f.shm, cp, 0, 1, b, b, bytes, &src_b, NULL));
      if (src_b < 0) memset(b, 3, bytes);
      expect_same(what, a, b, bytes);
    }
    const hl_instruction_t *cb = find(f.m, "cb", -1);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    HL_ASSERT_OK(vm->collective_broadcast(f.mpi, cb, in, a, bytes, NULL));
    HL_ASSERT_OK(vs->collective_broadcast(f.shm, cb, in, b, bytes, NULL));
    snprintf(what, sizeof what, "broadcast, %zu bytes", bytes);
    expect_same(what, a, b, bytes);
    memcpy(b, in, bytes);
    HL_ASSERT_OK(vs->collective_broadcast(f.shm, cb, b, b, bytes, NULL));
    expect_same(what, a, b, bytes);
    hl_free(in);
    hl_free(a);
    hl_free(b);
  }
  CU_ASSERT_EQUAL(g_errors, 0);
  teardown(&f);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs(text, f);
  fclose(f);
}

// A layer in auto mode whose thresholds come from a tuning file (only rank
// 0's copy is read: the others get its table).
static hl_status_t tuned_layer(hl_module_t *m, const char *path, hl_comm_t **out) {
  hl_status_t st = hl_mpi_comm_create(MPI_COMM_WORLD, out);
  if (!st) st = hl_shm_layer_install(*out, HL_COLLECTIVES_AUTO);
  if (!st) st = hl_shm_layer_set_tuning_file(*out, path);
  if (!st) st = (*out)->vtable->prepare(*out, m, g_size, 1);
  return st;
}

static void test_tuning(void) {
  // The table itself: an exact group size wins over *; no entry: none.
  char path[96];
  snprintf(path, sizeof path, "/tmp/hl_shm_tuning_%d_%d.txt", (int)getpid(), g_rank);
  write_file(path, "# comment\nall-reduce * never\nall-reduce 3 4096  # three\n"
                   "all-gather * 1\n");
  hl_shm_tuning_t t;
  HL_ASSERT_OK(hl_shm_tuning_read(path, &t));
  int64_t min = 7;
  CU_ASSERT(hl_shm_tuning_lookup(&t, HL_SHM_TUNE_ALL_REDUCE, 3, &min) && min == 4096);
  CU_ASSERT(hl_shm_tuning_lookup(&t, HL_SHM_TUNE_ALL_REDUCE, 2, &min) && min == -1);
  CU_ASSERT(hl_shm_tuning_lookup(&t, HL_SHM_TUNE_ALL_GATHER, 8, &min) && min == 1);
  CU_ASSERT(!hl_shm_tuning_lookup(&t, HL_SHM_TUNE_ALL_TO_ALL, 2, &min));
  // Through the layer: all-reduce never on shared memory (past the built-in
  // threshold), a 4-byte all-gather on it (far below the built-in one).
  hl_module_t *m = make_module();
  hl_comm_t *c = NULL, *mpi = NULL;
  HL_ASSERT_OK(tuned_layer(m, path, &c));
  HL_ASSERT_OK(hl_mpi_comm_create(MPI_COMM_WORLD, &mpi));
  HL_ASSERT_OK(mpi->vtable->prepare(mpi, m, g_size, 1));
  int64_t n = 1 << 16, before = hl_shm_layer_call_count(c);
  float *x = hl_malloc((size_t)n * 4), *a = hl_malloc((size_t)n * 4), *b = hl_malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i + g_rank) % 5);
  hl_comm_reducer_t add = {HL_COMM_REDUCE_ADD, first_combine, NULL};
  HL_ASSERT_OK(mpi->vtable->all_reduce(mpi, find(m, "ar", 0), HL_F32, x, a, n, &add, NULL));
  HL_ASSERT_OK(c->vtable->all_reduce(c, find(m, "ar", 0), HL_F32, x, b, n, &add, NULL));
  expect_same("tuned all-reduce", a, b, (size_t)n * 4);
  CU_ASSERT_EQUAL(hl_shm_layer_call_count(c), before);
  HL_ASSERT_OK(mpi->vtable->all_gather(mpi, find(m, "ag", 0), x, a, 4, NULL));
  HL_ASSERT_OK(c->vtable->all_gather(c, find(m, "ag", 0), x, b, 4, NULL));
  expect_same("tuned all-gather", a, b, 4 * (size_t)g_size);
  // The group of all is on this node unless HL_SHM_NODE_RANKS cuts it.
  const char *cut = getenv("HL_SHM_NODE_RANKS");
  if (g_size > 1 && !(cut && *cut)) CU_ASSERT_EQUAL(hl_shm_layer_call_count(c), before + 1);
  hl_comm_destroy(c);
  // A bad file stops every rank; rank 0's error names file:line.
  write_file(path, "all-gather * 1\nall-reduce 2 lots\n");
  hl_status_t st = tuned_layer(m, path, &c);
  CU_ASSERT(st != NULL);
  if (st && g_rank == 0) CU_ASSERT(strstr(hl_status_message(st), ":2: min bytes") != NULL);
  hl_status_free(st);
  hl_comm_destroy(c);
  hl_comm_destroy(mpi);
  hl_module_destroy(m);
  hl_free(x);
  hl_free(a);
  hl_free(b);
  remove(path);
  CU_ASSERT_EQUAL(g_errors, 0);
}

static CU_TestInfo tests[] = {
    {"--collectives-tuning: the table, through the layer, a bad file", test_tuning},
    {"all-reduce / reduce-scatter: every type and op, 4 group shapes", test_reductions},
    {"integer sum closed form", test_sum_closed_form},
    {"all-gather all-to-all permute broadcast", test_data_movement},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  return hl_mpi_test_run("shm_collectives", tests);
}
