// The MPI backend's collective-reduce (collectives/mpi_reduce.c) through the
// communicator interface. ctest runs it as one process (MPI singleton);
// tests/integration/test_collective_reduce.py runs it under mpiexec with 2
// and 3 ranks. Messages are limited to 12 bytes (HL_MPI_MAX_MESSAGE_BYTES,
// set before the first MPI call) so five-element operands travel in two
// chunks. Expected values are closed forms of the rank count N worked out
// by hand: the sum over ranks r of (r + 1) * (i + 1) is N(N+1)/2 * (i + 1).
// hl-test-libs: hl_collectives hl_text hl_exec hl_ir hl_base
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "collectives/mpi_comm.h"
#include "runtime/base/strbuf.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/mpi_test_util.h"
#include "tests/unit/test_util.h"

static int g_rank, g_size;

// cr: the whole job in rank order; rev: the job in reverse order (group
// position k is rank N-1-k).
static hl_module_t *make_module(void) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_strbuf_append(&sb, "HloModule t\n"
                        "sum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"
                        "  ROOT s = s32[] add(a, b)\n}\n"
                        "ENTRY e {\n  p = s32[5] parameter(0)\n"
                        "  cr = s32[5] collective-reduce(p), replica_groups={}, to_apply=sum\n"
                        "  ROOT rev = s32[5] collective-reduce(cr), replica_groups={{");
  for (int r = g_size - 1; r >= 0; r--) hl_strbuf_appendf(&sb, r ? "%d," : "%d", r);
  hl_strbuf_append(&sb, "}}, to_apply=sum\n}\n");
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(hl_strbuf_cstr(&sb), sb.length, "t", &m);
  if (st) {
    fprintf(stderr, "parse: %s\n", hl_status_message(st));
    hl_status_free(st);
  }
  hl_strbuf_deinit(&sb);
  return m;
}

typedef struct fixture {
  hl_module_t *m;
  hl_comm_t *c;
} fixture_t;

static bool setup(fixture_t *f) {
  f->m = make_module();
  f->c = NULL;
  if (!f->m) return false;
  return hl_mpi_test_comm(f->m, g_size, &f->c);
}

static void teardown(fixture_t *f) {
  hl_comm_destroy(f->c);
  hl_module_destroy(f->m);
}

static const hl_instruction_t *find(const hl_module_t *m, const char *name) {
  return hl_computation_find_instruction(m->entry, name);
}

// Every root in turn: the root gets the sum, the others' recv stays as it was.
static void test_each_root(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  hl_comm_reducer_t add = {.op = HL_COMM_REDUCE_ADD};
  for (int root = 0; root < g_size; root++) {
    int32_t x[5], y[5];
    for (int i = 0; i < 5; i++) {
      x[i] = (g_rank + 1) * (i + 1);
      y[i] = -77;
    }
    HL_ASSERT_OK(f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, y, 5, root, &add, NULL));
    for (int i = 0; i < 5; i++)
      CU_ASSERT_EQUAL(y[i], g_rank == root ? g_size * (g_size + 1) / 2 * (i + 1) : -77);
  }
  teardown(&f);
}

// In place on the root, a request completed by wait, and zero elements.
static void test_in_place_async_empty(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  hl_comm_reducer_t mx = {.op = HL_COMM_REDUCE_MAX};
  int32_t x[5];
  for (int i = 0; i < 5; i++) x[i] = g_rank * 10 + i;
  HL_ASSERT_OK(f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, x, 5, 0, &mx, NULL));
  if (g_rank == 0)
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(x[i], (g_size - 1) * 10 + i);
  int32_t y[5] = {0};
  for (int i = 0; i < 5; i++) x[i] = g_rank == 0 ? 7 : 1 << g_rank;
  hl_comm_reducer_t bor = {.op = HL_COMM_REDUCE_OR};
  hl_comm_request_t *req = NULL;
  int last = g_size - 1;
  HL_ASSERT_OK(f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, y, 5, last, &bor, &req));
  CU_ASSERT_PTR_NOT_NULL(req);
  HL_ASSERT_OK(f.c->vtable->wait(f.c, req));
  int32_t want = 7;
  for (int r = 1; r < g_size; r++) want |= 1 << r;
  if (g_rank == last)
    for (int i = 0; i < 5; i++) CU_ASSERT_EQUAL(y[i], want);
  HL_ASSERT_OK(f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, y, 0, 0, &bor, NULL));
  teardown(&f);
}

// Root position 0 of the reversed group is rank N-1.
static void test_group_order(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  int size = -1, index = -1;
  HL_ASSERT_OK(f.c->vtable->group_of(f.c, find(f.m, "rev"), &size, &index));
  CU_ASSERT_EQUAL(size, g_size);
  CU_ASSERT_EQUAL(index, g_size - 1 - g_rank);
  hl_comm_reducer_t add = {.op = HL_COMM_REDUCE_ADD};
  int32_t x[5], y[5] = {0};
  for (int i = 0; i < 5; i++) x[i] = g_rank + 1;
  HL_ASSERT_OK(f.c->vtable->reduce(f.c, find(f.m, "rev"), HL_S32, x, y, 5, 0, &add, NULL));
  for (int i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(y[i], g_rank == g_size - 1 ? g_size * (g_size + 1) / 2 : 0);
  teardown(&f);
}

static void test_bad_root(void) {
  fixture_t f;
  CU_ASSERT_FATAL(setup(&f));
  hl_comm_reducer_t add = {.op = HL_COMM_REDUCE_ADD};
  int32_t x[5] = {0}, y[5];
  HL_ASSERT_ERROR_CONTAINS(
      f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, y, 5, g_size, &add, NULL),
      "is not a position in its group");
  HL_ASSERT_ERROR_CONTAINS(
      f.c->vtable->reduce(f.c, find(f.m, "cr"), HL_S32, x, y, 5, -1, &add, NULL),
      "is not a position in its group");
  teardown(&f);
}

static CU_TestInfo tests[] = {
    {"each root", test_each_root},
    {"in place / async / empty", test_in_place_async_empty},
    {"group order", test_group_order},
    {"bad root", test_bad_root},
    CU_TEST_INFO_NULL,
};

int main(int argc, char **argv) {
  setenv("HL_MPI_MAX_MESSAGE_BYTES", "12", 0);
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  return hl_mpi_test_run("mpi_reduce", tests);
}
