// collective-reduce (runtime/kernels/collective_reduce.c) in one process
// (1x1 grid, no communicator): the only group is the process itself, so it
// is the root and the reduction of one value is that value (hand-worked).
// Shape and root errors, the parser's has_dynamic_root and the printer are
// checked here; multi-process results in
// tests/integration/test_collective_reduce.py.
// hl-test-libs: hl_exec hl_verifier hl_proto hl_text hl_ir hl_base
#include "runtime/proto/proto_io.h"
#include "runtime/text/hlo_printer.h"
#include "tests/unit/hlo_run_util.h"

#define MODULE(body)                                                             \
  "HloModule m\nsum {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n"     \
  "  ROOT s = s32[] add(a, b)\n}\nENTRY e {\n  c = s32[2,3] constant({{1, 2, 3}, " \
  "{4, 5, 6}})\n" body "\n}\n"

static void test_single_process(void) {
  hr_expect(MODULE("  ROOT r = s32[2,3] collective-reduce(c), replica_groups={}, to_apply=sum"),
            "s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}");
  hr_expect(MODULE("  d = s32[2] constant({7, 8})\n"
                   "  ROOT r = (s32[2,3], s32[2]) collective-reduce(c, d), "
                   "replica_groups={{0}}, to_apply=sum"),
            "(s32[2,3], s32[2])", "({{1, 2, 3}, {4, 5, 6}}, {7, 8})");
  // A dynamic root of 0 is the only position in a group of one.
  hr_expect(MODULE("  roots = s32[1] constant({0})\n"
                   "  ROOT r = s32[2,3] collective-reduce(c, roots), has_dynamic_root=true, "
                   "to_apply=sum"),
            "s32[2,3]", "{{1, 2, 3}, {4, 5, 6}}");
}

static void test_errors(void) {
  hr_expect_error(MODULE("  roots = s32[1] constant({1})\n"
                         "  ROOT r = s32[2,3] collective-reduce(c, roots), has_dynamic_root=true, "
                         "to_apply=sum"),
                  "dynamic root 1 of operand 0 is out of range [0, 1)");
  hr_expect_error(MODULE("  roots = s32[1] constant({0})\n"
                         "  ROOT r = s32[2,3] collective-reduce(roots), has_dynamic_root=true, "
                         "to_apply=sum"),
                  "besides the roots operand");
  hr_expect_error(MODULE("  roots = s64[1] constant({0})\n"
                         "  ROOT r = s32[2,3] collective-reduce(c, roots), has_dynamic_root=true, "
                         "to_apply=sum"),
                  "must be s32[1]");
  hr_expect_error(MODULE("  ROOT r = s32[3,2] collective-reduce(c), to_apply=sum"),
                  "differs from operand 0");
  hr_expect_error(MODULE("  ROOT r = s32[2,3] collective-reduce(c)"), "to_apply");
  // collective-broadcast reads has_dynamic_root too
  // (runtime/kernels/collective_broadcast_root.c); its roots are checked alike.
  hr_expect_error(MODULE("  roots = s64[1] constant({0})\n"
                         "  ROOT r = s32[2,3] collective-broadcast(c, roots), "
                         "replica_groups={{0}}, has_dynamic_root=true"),
                  "must be s32[1] (one root per broadcast operand)");
  // A 2x1 grid without a communicator cannot run a collective.
  const char *text = MODULE("  ROOT r = s32[2,3] collective-reduce(c), to_apply=sum");
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  hl_exec_options_t o = {.num_replicas = 2, .num_partitions = 1};
  hl_literal_t *out = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_execute(m, &o, NULL, 0, &out), "needs a communicator");
  hl_module_destroy(m);
}

static void test_attributes(void) {
  const char *text = MODULE("  roots = s32[1] constant({0})\n"
                            "  ROOT r = s32[2,3] collective-reduce(c, roots), channel_id=2, "
                            "replica_groups={{0}}, use_global_device_ids=true, "
                            "has_dynamic_root=true, to_apply=sum");
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m));
  const hl_instruction_t *r = m->entry->root;
  CU_ASSERT_TRUE(r->attrs.has_dynamic_root);
  CU_ASSERT_EQUAL(r->attrs.channel_id, 2);
  CU_ASSERT_TRUE(r->attrs.use_global_device_ids);
  CU_ASSERT_PTR_NOT_NULL(hl_instruction_to_apply(r));
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  HL_ASSERT_OK(hl_print_hlo_module(m, &sb));
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&sb), "use_global_device_ids=true, "
                                                     "has_dynamic_root=true"));
  hl_strbuf_deinit(&sb);
  // No proto field is known for has_dynamic_root: writing one is refused.
  uint8_t *data = NULL;
  size_t size = 0;
  HL_ASSERT_ERROR_CONTAINS(hl_proto_encode_hlo_proto(m, &data, &size),
                           "has_dynamic_root cannot be written as a proto");
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"single process", test_single_process},
    {"errors", test_errors},
    {"attributes", test_attributes},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("collective_reduce", tests)
