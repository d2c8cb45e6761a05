// HLO text printer: modules built by hand with the module API; expected text
// is written from XLA's printing rules (HLO_FORMAT_FACTS.md §3 and XLA's
// ExtraAttributesToString), not from this printer's output.
#include <stdarg.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/ir/module.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"
#include "test_util.h"
#include "tests/unit/hlo_run_util.h"
#include "tests/unit/ir_build_util.h"

// Row-major array shape with its layout, as loaders store it.
static hl_shape_t arr(hl_dtype_t t, int rank, ...) {
  int64_t dims[HL_MAX_RANK];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) dims[i] = va_arg(ap, int64_t);
  va_end(ap);
  hl_shape_t s = hl_shape_array(t, rank, dims);
  s.has_layout = true;
  for (int i = 0; i < rank; i++) s.minor_to_major[i] = rank - 1 - i;
  return s;
}


static void expect_line(const hl_instruction_t *inst, const char *want) {
  hl_strbuf_t sb;
  hl_strbuf_init(&sb);
  hl_print_instruction(inst, &sb);
  if (strcmp(hl_strbuf_cstr(&sb), want) != 0) {
    fprintf(stderr, "\n  got:  %s\n  want: %s\n", hl_strbuf_cstr(&sb), want);
    CU_FAIL("instruction text");
  }
  hl_strbuf_deinit(&sb);
}

// A reducer `add` (f32[], f32[]) -> f32[].
static hl_computation_t *make_add(hl_module_t *m, const char *name) {
  hl_computation_t *c = NULL;
  HL_ASSERT_OK(hl_module_add_computation(m, name, &c));
  hl_instruction_t *x = ir_param(c, "x", 0, arr(HL_F32, 0));
  hl_instruction_t *y = ir_param(c, "y", 1, arr(HL_F32, 0));
  c->root = ir_add(c, "sum", HL_OP_ADD, arr(HL_F32, 0), 2, x, y);
  HL_ASSERT_OK(hl_computation_index_parameters(c));
  return c;
}

// The reference module of the tests below (also the fixed-point input).
static const char kModuleText[] =
    "HloModule test, replica_count=2, num_partitions=4\n"
    "\n"
    "add {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT sum = f32[] add(x, y)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  p = f32[2,2]{1,0} parameter(0)\n"
    "  c = f32[2,2]{1,0} constant({ { 1, 2.5 }, { -3, inf } })\n"
    "  m = f32[2,2]{1,0} multiply(p, c)\n"
    "  init = f32[] constant(0)\n"
    "  ROOT r = f32[2]{0} reduce(m, init), dimensions={1}, to_apply=add\n"
    "}\n";

static hl_module_t *build_reference_module(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_module_create("test", &m));
  m->replica_count = 2;
  m->num_partitions = 4;
  hl_computation_t *sum = make_add(m, "add");
  hl_computation_t *e = NULL;
  HL_ASSERT_OK(hl_module_add_computation(m, "main", &e));
  m->entry = e;
  hl_instruction_t *p = ir_param(e, "p", 0, arr(HL_F32, 2, (int64_t)2, (int64_t)2));
  hl_instruction_t *c = ir_add(e, "c", HL_OP_CONSTANT, arr(HL_F32, 2, (int64_t)2, (int64_t)2), 0);
  HL_ASSERT_OK(hl_literal_create(&c->shape, &c->attrs.literal));
  float v[] = {1, 2.5f, -3, 1.0f / 0.0f};
  memcpy(c->attrs.literal->data, v, sizeof(v));
  hl_instruction_t *mul = ir_add(e, "m", HL_OP_MULTIPLY, arr(HL_F32, 2, (int64_t)2, (int64_t)2), 2, p, c);
  hl_instruction_t *init = ir_add(e, "init", HL_OP_CONSTANT, arr(HL_F32, 0), 0);
  HL_ASSERT_OK(hl_literal_create(&init->shape, &init->attrs.literal));
  hl_instruction_t *r = ir_add(e, "r", HL_OP_REDUCE, arr(HL_F32, 1, (int64_t)2), 2, mul, init);
  ir_set_list(&r->attrs.dimensions, 1, (int64_t)1);
  HL_ASSERT_OK(hl_instruction_set_called(r, &sum, 1));
  e->root = r;
  HL_ASSERT_OK(hl_computation_index_parameters(e));
  return m;
}

static void test_module_text(void) {
  hl_module_t *m = build_reference_module();
  char *text = hr_print_module(m);
  CU_ASSERT_STRING_EQUAL(text, kModuleText);
  if (strcmp(text, kModuleText) != 0) fprintf(stderr, "\n%s\n", text);
  hl_free(text);
  m->is_scheduled = true;
  m->replica_count = 1;
  m->num_partitions = 0;
  m->computations[0]->execution_thread = hl_strdup("host");
  text = hr_print_module(m);
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "HloModule test, is_scheduled=true\n\nadd {"));
  CU_ASSERT_PTR_NOT_NULL(strstr(text, "}, execution_thread=\"host\"\n"));
  hl_free(text);
  hl_module_destroy(m);
  HL_ASSERT_ERROR_CONTAINS(hl_print_hlo_module(NULL, NULL), "no module");
}

// Shared fixture for single-instruction checks.
typedef struct fixture {
  hl_module_t *m;
  hl_computation_t *c;
  hl_instruction_t *p2x3;   // f32[2,3]
  hl_instruction_t *s;      // f32[]
} fixture_t;

static fixture_t fixture(void) {
  fixture_t f;
  HL_ASSERT_OK(hl_module_create("f", &f.m));
  HL_ASSERT_OK(hl_module_add_computation(f.m, "main", &f.c));
  f.m->entry = f.c;
  f.p2x3 = ir_param(f.c, "a", 0, arr(HL_F32, 2, (int64_t)2, (int64_t)3));
  f.s = ir_param(f.c, "s", 1, arr(HL_F32, 0));
  return f;
}

static void test_shape_attributes(void) {
  fixture_t f = fixture();
  hl_instruction_t *b = ir_add(f.c, "b", HL_OP_BROADCAST,
                            arr(HL_F32, 3, (int64_t)4, (int64_t)2, (int64_t)3), 1, f.p2x3);
  ir_set_list(&b->attrs.dimensions, 2, (int64_t)1, (int64_t)2);
  expect_line(b, "b = f32[4,2,3]{2,1,0} broadcast(a), dimensions={1,2}");

  hl_instruction_t *t = ir_add(f.c, "t", HL_OP_TRANSPOSE, arr(HL_F32, 2, (int64_t)3, (int64_t)2), 1,
                            f.p2x3);
  ir_set_list(&t->attrs.dimensions, 2, (int64_t)1, (int64_t)0);
  t->shape.minor_to_major[0] = 0;
  t->shape.minor_to_major[1] = 1;
  expect_line(t, "t = f32[3,2]{0,1} transpose(a), dimensions={1,0}");

  hl_instruction_t *sl = ir_add(f.c, "sl", HL_OP_SLICE, arr(HL_F32, 2, (int64_t)1, (int64_t)2), 1,
                             f.p2x3);
  sl->attrs.slice_dimensions = hl_calloc(2, sizeof(hl_slice_dim_t));
  sl->attrs.slice_count = 2;
  sl->attrs.slice_dimensions[0] = (hl_slice_dim_t){1, 2, 1};
  sl->attrs.slice_dimensions[1] = (hl_slice_dim_t){0, 3, 1};
  expect_line(sl, "sl = f32[1,2]{1,0} slice(a), slice={[1:2], [0:3]}");
  sl->attrs.slice_dimensions[1].stride = 2;
  expect_line(sl, "sl = f32[1,2]{1,0} slice(a), slice={[1:2:1], [0:3:2]}");

  hl_instruction_t *pd = ir_add(f.c, "pd", HL_OP_PAD, arr(HL_F32, 2, (int64_t)4, (int64_t)4), 2,
                             f.p2x3, f.s);
  pd->attrs.padding_config = hl_calloc(2, sizeof(hl_padding_dim_t));
  pd->attrs.padding_count = 2;
  pd->attrs.padding_config[0] = (hl_padding_dim_t){1, 1, 0};
  pd->attrs.padding_config[1] = (hl_padding_dim_t){0, -1, 0};
  expect_line(pd, "pd = f32[4,4]{1,0} pad(a, s), padding=1_1x0_-1");
  pd->attrs.padding_config[1].interior_padding = 1;
  expect_line(pd, "pd = f32[4,4]{1,0} pad(a, s), padding=1_1_0x0_-1_1");

  hl_instruction_t *io = ir_add(f.c, "io", HL_OP_IOTA, arr(HL_S32, 1, (int64_t)5), 0);
  ir_set_list(&io->attrs.dimensions, 1, (int64_t)0);
  expect_line(io, "io = s32[5]{0} iota(), iota_dimension=0");

  hl_instruction_t *cmp = ir_add(f.c, "cmp", HL_OP_COMPARE, arr(HL_PRED, 0), 2, f.s, f.s);
  cmp->attrs.comparison_direction = HL_CMP_LT;
  cmp->attrs.comparison_type = HL_CMPTYPE_FLOAT;  // the default for f32: not printed
  expect_line(cmp, "cmp = pred[] compare(s, s), direction=LT");
  cmp->attrs.comparison_type = HL_CMPTYPE_TOTALORDER;
  expect_line(cmp, "cmp = pred[] compare(s, s), direction=LT, type=TOTALORDER");

  hl_instruction_t *tup = ir_add(f.c, "tup", HL_OP_TUPLE, arr(HL_F32, 0), 2, f.p2x3, f.s);
  hl_shape_t elems[2] = {f.p2x3->shape, f.s->shape};
  HL_ASSERT_OK(hl_shape_tuple(elems, 2, &tup->shape));
  expect_line(tup, "tup = (f32[2,3]{1,0}, f32[]) tuple(a, s)");
  hl_instruction_t *g = ir_add(f.c, "g", HL_OP_GET_TUPLE_ELEMENT, arr(HL_F32, 0), 1, tup);
  g->attrs.tuple_index = 1;
  f.c->root = g;
  expect_line(g, "ROOT g = f32[] get-tuple-element(tup), index=1");
  expect_line(f.p2x3, "a = f32[2,3]{1,0} parameter(0)");

  // Operand index comments every 5 operands, as XLA prints them.
  hl_instruction_t *big = ir_add(f.c, "big", HL_OP_TUPLE, arr(HL_F32, 0), 6, f.s, f.s, f.s, f.s,
                              f.s, f.s);
  hl_shape_t six[6] = {f.s->shape, f.s->shape, f.s->shape, f.s->shape, f.s->shape, f.s->shape};
  HL_ASSERT_OK(hl_shape_tuple(six, 6, &big->shape));
  expect_line(big, "big = (f32[], f32[], f32[], f32[], f32[], f32[]) tuple(s, s, s, s, s, "
                   "/*index=5*/s)");
  hl_module_destroy(f.m);
}

static void test_dot_and_convolution(void) {
  fixture_t f = fixture();
  hl_instruction_t *l = ir_param(f.c, "l", 2, arr(HL_F32, 3, (int64_t)4, (int64_t)2, (int64_t)3));
  hl_instruction_t *d = ir_add(f.c, "d", HL_OP_DOT, arr(HL_F32, 3, (int64_t)4, (int64_t)2,
                                                     (int64_t)2), 2, l, l);
  d->attrs.has_dot_dimension_numbers = true;
  ir_set_list(&d->attrs.dot_dimension_numbers.lhs_batch_dimensions, 1, (int64_t)0);
  ir_set_list(&d->attrs.dot_dimension_numbers.rhs_batch_dimensions, 1, (int64_t)0);
  ir_set_list(&d->attrs.dot_dimension_numbers.lhs_contracting_dimensions, 1, (int64_t)2);
  ir_set_list(&d->attrs.dot_dimension_numbers.rhs_contracting_dimensions, 1, (int64_t)2);
  expect_line(d, "d = f32[4,2,2]{2,1,0} dot(l, l), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                 "rhs_batch_dims={0}, rhs_contracting_dims={2}");
  ir_set_list(&d->attrs.operand_precision, 2, (int64_t)1, (int64_t)0);
  d->attrs.precision_algorithm = 7;
  expect_line(d, "d = f32[4,2,2]{2,1,0} dot(l, l), lhs_batch_dims={0}, lhs_contracting_dims={2}, "
                 "rhs_batch_dims={0}, rhs_contracting_dims={2}, operand_precision={high,default}, "
                 "algorithm=dot_bf16_bf16_f32_x3");

  hl_instruction_t *in = ir_param(f.c, "in", 3,
                               arr(HL_F32, 4, (int64_t)1, (int64_t)8, (int64_t)8, (int64_t)3));
  hl_instruction_t *k = ir_param(f.c, "k", 4,
                              arr(HL_F32, 4, (int64_t)3, (int64_t)3, (int64_t)3, (int64_t)5));
  hl_instruction_t *cv = ir_add(f.c, "cv", HL_OP_CONVOLUTION,
                             arr(HL_F32, 4, (int64_t)1, (int64_t)4, (int64_t)4, (int64_t)5), 2,
                             in, k);
  cv->attrs.has_window = true;
  cv->attrs.window.n = 2;
  cv->attrs.window.dims = hl_calloc(2, sizeof(hl_window_dim_t));
  for (int i = 0; i < 2; i++)
    cv->attrs.window.dims[i] = (hl_window_dim_t){3, 2, 1, 1, 1, 1, false};
  cv->attrs.window.dims[1].window_dilation = 2;
  cv->attrs.has_convolution_dimension_numbers = true;
  hl_conv_dims_t *cd = &cv->attrs.convolution_dimension_numbers;
  cd->input_batch_dimension = 0;
  cd->input_feature_dimension = 3;
  ir_set_list(&cd->input_spatial_dimensions, 2, (int64_t)1, (int64_t)2);
  cd->kernel_input_feature_dimension = 2;
  cd->kernel_output_feature_dimension = 3;
  ir_set_list(&cd->kernel_spatial_dimensions, 2, (int64_t)0, (int64_t)1);
  cd->output_batch_dimension = 0;
  cd->output_feature_dimension = 3;
  ir_set_list(&cd->output_spatial_dimensions, 2, (int64_t)1, (int64_t)2);
  cv->attrs.feature_group_count = 1;
  expect_line(cv, "cv = f32[1,4,4,5]{3,2,1,0} convolution(in, k), window={size=3x3 stride=2x2 "
                  "pad=1_1x1_1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f");
  cv->attrs.feature_group_count = 3;
  cv->attrs.window.dims[0].window_reversal = true;
  expect_line(cv, "cv = f32[1,4,4,5]{3,2,1,0} convolution(in, k), window={size=3x3 stride=2x2 "
                  "pad=1_1x1_1 rhs_dilate=1x2 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f, "
                  "feature_group_count=3");
  hl_module_destroy(f.m);
}

static void test_collectives(void) {
  fixture_t f = fixture();
  hl_computation_t *sum = make_add(f.m, "sum");
  hl_instruction_t *ar = ir_add(f.c, "ar", HL_OP_ALL_REDUCE, arr(HL_F32, 2, (int64_t)2, (int64_t)3),
                             1, f.p2x3);
  HL_ASSERT_OK(hl_instruction_set_called(ar, &sum, 1));
  expect_line(ar, "ar = f32[2,3]{1,0} all-reduce(a), replica_groups={}, to_apply=sum");
  hl_replica_groups_t *g = &ar->attrs.replica_groups;
  g->kind = HL_GROUPS_LIST;
  g->group_count = 2;
  g->groups = hl_calloc(2, sizeof(hl_i64_list_t));
  ir_set_list(&g->groups[0], 2, (int64_t)0, (int64_t)2);
  ir_set_list(&g->groups[1], 2, (int64_t)1, (int64_t)3);
  ar->attrs.channel_id = 5;
  ar->attrs.use_global_device_ids = true;
  expect_line(ar, "ar = f32[2,3]{1,0} all-reduce(a), channel_id=5, replica_groups={{0,2},{1,3}}, "
                  "use_global_device_ids=true, to_apply=sum");

  hl_instruction_t *ag = ir_add(f.c, "ag", HL_OP_ALL_GATHER, arr(HL_F32, 2, (int64_t)8, (int64_t)3),
                             1, f.p2x3);
  ir_set_list(&ag->attrs.dimensions, 1, (int64_t)0);
  hl_replica_groups_t *ig = &ag->attrs.replica_groups;
  ig->kind = HL_GROUPS_IOTA;
  ig->iota_num_groups = 1;
  ig->iota_group_size = 4;
  ir_set_list(&ig->iota_reshape_dims, 1, (int64_t)4);
  expect_line(ag, "ag = f32[8,3]{1,0} all-gather(a), replica_groups=[1,4]<=[4], dimensions={0}");
  ig->iota_num_groups = 2;
  ig->iota_group_size = 2;
  ir_set_list(&ig->iota_reshape_dims, 2, (int64_t)2, (int64_t)2);
  ir_set_list(&ig->iota_transpose_perm, 2, (int64_t)1, (int64_t)0);
  expect_line(ag, "ag = f32[8,3]{1,0} all-gather(a), replica_groups=[2,2]<=[2,2]T(1,0), "
                  "dimensions={0}");

  hl_instruction_t *cp = ir_add(f.c, "cp", HL_OP_COLLECTIVE_PERMUTE,
                             arr(HL_F32, 2, (int64_t)2, (int64_t)3), 1, f.p2x3);
  cp->attrs.source_target_pairs = hl_calloc(2, sizeof(hl_source_target_t));
  cp->attrs.source_target_count = 2;
  cp->attrs.source_target_pairs[0] = (hl_source_target_t){0, 1};
  cp->attrs.source_target_pairs[1] = (hl_source_target_t){1, 0};
  cp->attrs.channel_id = 2;
  expect_line(cp, "cp = f32[2,3]{1,0} collective-permute(a), channel_id=2, "
                  "source_target_pairs={{0,1},{1,0}}");

  hl_instruction_t *rid = ir_add(f.c, "rid", HL_OP_REPLICA_ID, arr(HL_U32, 0), 0);
  expect_line(rid, "rid = u32[] replica-id()");
  hl_module_destroy(f.m);
}

static void test_control_flow(void) {
  fixture_t f = fixture();
  hl_computation_t *body = NULL, *cond = NULL, *br = NULL;
  HL_ASSERT_OK(hl_module_add_computation(f.m, "body", &body));
  HL_ASSERT_OK(hl_module_add_computation(f.m, "cond", &cond));
  HL_ASSERT_OK(hl_module_add_computation(f.m, "br", &br));
  hl_instruction_t *w = ir_add(f.c, "w", HL_OP_WHILE, arr(HL_F32, 0), 1, f.s);
  hl_computation_t *wc[2] = {body, cond};  // proto order: body first
  HL_ASSERT_OK(hl_instruction_set_called(w, wc, 2));
  expect_line(w, "w = f32[] while(s), condition=cond, body=body");

  hl_instruction_t *pr = ir_param(f.c, "pr", 2, arr(HL_PRED, 0));
  hl_instruction_t *cd = ir_add(f.c, "cd", HL_OP_CONDITIONAL, arr(HL_F32, 0), 3, pr, f.s, f.s);
  hl_computation_t *two[2] = {body, br};
  HL_ASSERT_OK(hl_instruction_set_called(cd, two, 2));
  expect_line(cd, "cd = f32[] conditional(pr, s, s), true_computation=body, false_computation=br");
  hl_instruction_t *ix = ir_param(f.c, "ix", 3, arr(HL_S32, 0));
  hl_instruction_t *cs = ir_add(f.c, "cs", HL_OP_CONDITIONAL, arr(HL_F32, 0), 3, ix, f.s, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(cs, two, 2));
  expect_line(cs, "cs = f32[] conditional(ix, s, s), branch_computations={body, br}");

  hl_instruction_t *cl = ir_add(f.c, "cl", HL_OP_CALL, arr(HL_F32, 0), 1, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(cl, &br, 1));
  expect_line(cl, "cl = f32[] call(s), to_apply=br");
  cl->attrs.is_composite = true;
  expect_line(cl, "cl = f32[] call(s), is_composite=true, to_apply=br");

  hl_instruction_t *fu = ir_add(f.c, "fu", HL_OP_FUSION, arr(HL_F32, 0), 1, f.s);
  HL_ASSERT_OK(hl_instruction_set_called(fu, &br, 1));
  fu->attrs.fusion_kind = hl_strdup("kLoop");
  expect_line(fu, "fu = f32[] fusion(s), kind=kLoop, calls=br");

  hl_instruction_t *cc = ir_add(f.c, "cc", HL_OP_CUSTOM_CALL, arr(HL_F32, 0), 1, f.s);
  cc->attrs.custom_call_target = hl_strdup("my\"target");
  cc->attrs.custom_call_has_side_effect = true;
  cc->attrs.custom_call_api_version = 2;
  cc->attrs.backend_config = hl_strdup("{\"a\":1}\n");
  expect_line(cc, "cc = f32[] custom-call(s), custom_call_target=\"my\\\"target\", "
                  "custom_call_has_side_effect=true, api_version=API_VERSION_STATUS_RETURNING, "
                  "backend_config=\"{\\\"a\\\":1}\\n\"");
  hl_module_destroy(f.m);
}

static void test_generic_attributes(void) {
  fixture_t f = fixture();
  hl_instruction_t *n = ir_add(f.c, "n", HL_OP_NEGATE, arr(HL_F32, 0), 1, f.s);
  HL_ASSERT_OK(hl_frontend_attributes_add(&n->attrs.frontend_attributes, "zeta", "1"));
  HL_ASSERT_OK(hl_frontend_attributes_add(&n->attrs.frontend_attributes, "alpha", "{{0,1}}"));
  n->attrs.metadata.present = true;
  n->attrs.metadata.op_type = hl_strdup("Neg");
  n->attrs.metadata.op_name = hl_strdup("jit(f)/neg");
  n->attrs.metadata.source_file = hl_strdup("f.py");
  n->attrs.metadata.source_line = 3;
  HL_ASSERT_OK(hl_instruction_set_control_predecessors(n, &f.p2x3, 1));
  n->attrs.sharding = hl_calloc(1, sizeof(hl_sharding_t));
  n->attrs.sharding->type = HL_SHARDING_REPLICATED;
  expect_line(n, "n = f32[] negate(s), sharding={replicated}, "
                 "frontend_attributes={alpha=\"{{0,1}}\",zeta=\"1\"}, control-predecessors={a}, "
                 "metadata={op_type=\"Neg\" op_name=\"jit(f)/neg\" source_file=\"f.py\" "
                 "source_line=3}");
  hl_module_destroy(f.m);
}

static void sharding_line(hl_sharding_t *sh, const char *want) {
  hl_module_t *m = NULL;
  hl_computation_t *c = NULL;
  HL_ASSERT_OK(hl_module_create("s", &m));
  HL_ASSERT_OK(hl_module_add_computation(m, "main", &c));
  hl_instruction_t *p = ir_param(c, "p", 0, arr(HL_F32, 0));
  p->attrs.sharding = sh;
  char line[256];
  snprintf(line, sizeof(line), "p = f32[] parameter(0), sharding=%s", want);
  expect_line(p, line);
  hl_module_destroy(m);
}

static hl_sharding_t *new_sharding(hl_sharding_type_t type) {
  hl_sharding_t *s = hl_calloc(1, sizeof(*s));
  s->type = type;
  return s;
}

static void test_sharding_forms(void) {
  sharding_line(new_sharding(HL_SHARDING_MANUAL), "{manual}");
  sharding_line(new_sharding(HL_SHARDING_UNKNOWN), "{unknown}");
  sharding_line(new_sharding(HL_SHARDING_UNREDUCED), "{unreduced}");
  hl_sharding_t *mx = new_sharding(HL_SHARDING_MAXIMAL);
  ir_set_list(&mx->tile_assignment_devices, 1, (int64_t)1);
  sharding_line(mx, "{maximal device=1}");
  hl_sharding_t *t = new_sharding(HL_SHARDING_OTHER);
  ir_set_list(&t->tile_assignment_dimensions, 2, (int64_t)2, (int64_t)1);
  ir_set_list(&t->tile_assignment_devices, 2, (int64_t)0, (int64_t)1);
  sharding_line(t, "{devices=[2,1]0,1}");
  hl_sharding_t *io = new_sharding(HL_SHARDING_OTHER);
  ir_set_list(&io->tile_assignment_dimensions, 3, (int64_t)2, (int64_t)1, (int64_t)2);
  ir_set_list(&io->iota_reshape_dims, 1, (int64_t)4);
  io->replicate_on_last_tile_dim = true;
  sharding_line(io, "{devices=[2,1,2]<=[4] last_tile_dim_replicate}");
  hl_sharding_t *lt = new_sharding(HL_SHARDING_OTHER);
  ir_set_list(&lt->tile_assignment_dimensions, 3, (int64_t)2, (int64_t)2, (int64_t)1);
  ir_set_list(&lt->iota_reshape_dims, 2, (int64_t)2, (int64_t)2);
  ir_set_list(&lt->iota_transpose_perm, 2, (int64_t)1, (int64_t)0);
  ir_set_list(&lt->last_tile_dims, 1, (int64_t)HL_SHARDING_MANUAL);
  sharding_line(lt, "{devices=[2,2,1]<=[2,2]T(1,0) last_tile_dims={manual}}");
  hl_sharding_t *tu = new_sharding(HL_SHARDING_TUPLE);
  tu->tuple_count = 2;
  tu->tuple_shardings = hl_calloc(2, sizeof(hl_sharding_t));
  tu->tuple_shardings[0].type = HL_SHARDING_REPLICATED;
  tu->tuple_shardings[1].type = HL_SHARDING_MAXIMAL;
  ir_set_list(&tu->tuple_shardings[1].tile_assignment_devices, 1, (int64_t)0);
  sharding_line(tu, "{{replicated}, {maximal device=0}}");
}

static void test_misc_ops(void) {
  fixture_t f = fixture();
  hl_computation_t *cmp = make_add(f.m, "lt");
  hl_instruction_t *so = ir_add(f.c, "so", HL_OP_SORT, arr(HL_F32, 2, (int64_t)2, (int64_t)3), 1,
                             f.p2x3);
  ir_set_list(&so->attrs.dimensions, 1, (int64_t)1);
  so->attrs.is_stable = true;
  HL_ASSERT_OK(hl_instruction_set_called(so, &cmp, 1));
  expect_line(so, "so = f32[2,3]{1,0} sort(a), dimensions={1}, is_stable=true, to_apply=lt");

  hl_instruction_t *rp = ir_add(f.c, "rp", HL_OP_REDUCE_PRECISION, arr(HL_F32, 0), 1, f.s);
  rp->attrs.exponent_bits = 5;
  rp->attrs.mantissa_bits = 10;
  expect_line(rp, "rp = f32[] reduce-precision(s), exponent_bits=5, mantissa_bits=10");

  hl_instruction_t *ds = ir_add(f.c, "ds", HL_OP_DYNAMIC_SLICE, arr(HL_F32, 2, (int64_t)1,
                                                                 (int64_t)3), 3, f.p2x3, f.s, f.s);
  ir_set_list(&ds->attrs.dynamic_slice_sizes, 2, (int64_t)1, (int64_t)3);
  expect_line(ds, "ds = f32[1,3]{1,0} dynamic-slice(a, s, s), dynamic_slice_sizes={1,3}");

  hl_instruction_t *sr = ir_add(f.c, "sr", HL_OP_SEND, arr(HL_F32, 0), 2, f.s, f.s);
  sr->attrs.channel_id = 7;
  sr->attrs.is_host_transfer = true;
  expect_line(sr, "sr = f32[] send(s, s), channel_id=7, is_host_transfer=true");

  hl_instruction_t *bn = ir_add(f.c, "bn", HL_OP_BATCH_NORM_TRAINING, arr(HL_F32, 0), 3, f.s, f.s,
                             f.s);
  bn->attrs.epsilon = 0.001f;
  bn->attrs.feature_index = 1;
  expect_line(bn, "bn = f32[] batch-norm-training(s, s, s), epsilon=0.001, feature_index=1");

  hl_instruction_t *tk = ir_add(f.c, "tk", HL_OP_TOPK, arr(HL_F32, 0), 1, f.p2x3);
  tk->attrs.k = 2;
  tk->attrs.largest = true;
  expect_line(tk, "tk = f32[] topk(a), k=2, largest=true");

  hl_instruction_t *pr = ir_param(f.c, "pr", 2, arr(HL_F32, 0));
  pr->attrs.parameter_replication = hl_calloc(2, sizeof(bool));
  pr->attrs.parameter_replication_count = 2;
  pr->attrs.parameter_replication[0] = true;
  expect_line(pr, "pr = f32[] parameter(2), parameter_replication={true,false}");

  hl_instruction_t *ts = ir_add(f.c, "ts", HL_OP_TRIANGULAR_SOLVE, arr(HL_F32, 0), 2, f.s, f.s);
  ts->attrs.triangular_left_side = true;
  ts->attrs.triangular_lower = true;
  ts->attrs.triangular_transpose_a = HL_TRANSPOSE;
  expect_line(ts, "ts = f32[] triangular-solve(s, s), left_side=true, lower=true, "
                  "transpose_a=TRANSPOSE");

  hl_instruction_t *g = ir_add(f.c, "g", HL_OP_GATHER, arr(HL_F32, 2, (int64_t)1, (int64_t)3), 2,
                            f.p2x3, f.s);
  g->attrs.has_gather_dimension_numbers = true;
  ir_set_list(&g->attrs.gather_dimension_numbers.offset_dims, 1, (int64_t)1);
  ir_set_list(&g->attrs.gather_dimension_numbers.collapsed_slice_dims, 1, (int64_t)0);
  ir_set_list(&g->attrs.gather_dimension_numbers.start_index_map, 1, (int64_t)0);
  g->attrs.gather_dimension_numbers.index_vector_dim = 1;
  ir_set_list(&g->attrs.gather_slice_sizes, 2, (int64_t)1, (int64_t)3);
  expect_line(g, "g = f32[1,3]{1,0} gather(a, s), offset_dims={1}, collapsed_slice_dims={0}, "
                 "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}");
  hl_module_destroy(f.m);
}

// print -> parse -> print is a fixed point (needs the text parser).
static void test_fixed_point(void) {
  hl_module_t *m = build_reference_module();
  char *first = hr_print_module(m);
  hl_module_destroy(m);
  hl_module_t *parsed = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(first, strlen(first), "first.hlo", &parsed));
  char *second = hr_print_module(parsed);
  CU_ASSERT_STRING_EQUAL(second, first);
  hl_module_destroy(parsed);
  hl_free(first);
  hl_free(second);
}


// A realistic module in this printer's canonical form: parsing and printing
// it must give back the same text, and it must pass the verifier.
static const char kRealisticText[] =
    "HloModule realistic, is_scheduled=true, replica_count=2, num_partitions=2\n"
    "\n"
    "sum {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT add = f32[] add(x, y)\n"
    "}\n"
    "\n"
    "cond {\n"
    "  p = (s32[], f32[4]{0}) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  n = s32[] constant(10)\n"
    "  ROOT lt = pred[] compare(i, n), direction=LT\n"
    "}\n"
    "\n"
    "body {\n"
    "  p = (s32[], f32[4]{0}) parameter(0)\n"
    "  i = s32[] get-tuple-element(p), index=0\n"
    "  v = f32[4]{0} get-tuple-element(p), index=1\n"
    "  one = s32[] constant(1)\n"
    "  next = s32[] add(i, one)\n"
    "  ar = f32[4]{0} all-reduce(v), channel_id=1, replica_groups={{0,1},{2,3}}, "
    "use_global_device_ids=true, to_apply=sum\n"
    "  ROOT t = (s32[], f32[4]{0}) tuple(next, ar)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  a = f32[4]{0} parameter(0), sharding={devices=[2,1]0,1}\n"
    "  zero = s32[] constant(0)\n"
    "  init = (s32[], f32[4]{0}) tuple(zero, a)\n"
    "  w = (s32[], f32[4]{0}) while(init), condition=cond, body=body, "
    "metadata={op_type=\"While\" op_name=\"jit(f)/while\" source_file=\"f.py\" source_line=7}\n"
    "  r = f32[4]{0} get-tuple-element(w), index=1\n"
    "  c = f32[2,2]{1,0} constant({ { 1, -2.5 }, { inf, 0.1 } })\n"
    "  rs = f32[2,2]{1,0} reshape(r)\n"
    "  d = f32[2,2]{1,0} dot(rs, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
    "operand_precision={highest,default}\n"
    "  b = f32[2,2,3]{2,1,0} broadcast(d), dimensions={0,1}\n"
    "  sl = f32[1,2,3]{2,1,0} slice(b), slice={[1:2], [0:2], [0:3]}\n"
    "  io = s32[3]{0} iota(), iota_dimension=0\n"
    "  pid = u32[] partition-id(), control-predecessors={io}\n"
    "  ROOT out = (f32[1,2,3]{2,1,0}, s32[3]{0}, u32[]) tuple(sl, io, pid), "
    "frontend_attributes={_xla_key=\"v\\\"q\",alpha=\"1\"}\n"
    "}\n";

// Every attribute spelling the printer emits, in canonical form: parse then
// print must give the text back unchanged.
static const char kAttributeZooText[] =
    "HloModule zoo\n"
    "\n"
    "max {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT m = f32[] maximum(x, y)\n"
    "}\n"
    "\n"
    "less {\n"
    "  x = f32[] parameter(0)\n"
    "  y = f32[] parameter(1)\n"
    "  ROOT lt = pred[] compare(x, y), direction=LT, type=TOTALORDER\n"
    "}\n"
    "\n"
    "fused {\n"
    "  x = f32[4]{0} parameter(0)\n"
    "  ROOT n = f32[4]{0} negate(x)\n"
    "}\n"
    "\n"
    "ENTRY main {\n"
    "  a = f32[4]{0} parameter(0), sharding={maximal device=1}\n"
    "  img = f32[1,8,8,3]{3,2,1,0} parameter(1), sharding={devices=[2,1,1,2]<=[4] last_tile_dim_replicate}\n"
    "  ker = f32[3,3,3,5]{3,2,1,0} parameter(2), sharding={devices=[2,2,1,1]<=[2,2]T(1,0)}\n"
    "  idx = s32[2,1]{1,0} parameter(3), sharding={{replicated}, {manual}}\n"
    "  p = pred[] parameter(4), parameter_replication={true}\n"
    "  z = f32[] constant(0)\n"
    "  conv = f32[1,4,4,5]{3,2,1,0} convolution(img, ker), window={size=3x3 stride=2x2 pad=1_1x1_1 "
    "rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f\n"
    "  rw = f32[2]{0} reduce-window(a, z), window={size=2 stride=2}, to_apply=max\n"
    "  pad = f32[9]{0} pad(a, z), padding=1_0_1\n"
    "  g = f32[2,2]{1,0} gather(a, idx), offset_dims={1}, collapsed_slice_dims={}, "
    "start_index_map={0}, index_vector_dim=1, slice_sizes={2}, indices_are_sorted=true\n"
    "  so = f32[4]{0} sort(a), dimensions={0}, is_stable=true, to_apply=less\n"
    "  ag = f32[16]{0} all-gather(a), channel_id=3, replica_groups=[2,2]<=[2,2]T(1,0), "
    "dimensions={0}, use_global_device_ids=true\n"
    "  a2a = f32[4]{0} all-to-all(a), replica_groups=[1,4]<=[4], dimensions={0}\n"
    "  rsc = f32[1]{0} reduce-scatter(a), replica_groups={{0,1,2,3}}, dimensions={0}, "
    "to_apply=max\n"
    "  cp = f32[4]{0} collective-permute(a), channel_id=4, source_target_pairs={{0,1},{1,2},{2,3}}\n"
    "  rv = f32[4]{0} reverse(a), dimensions={0}\n"
    "  ds = f32[2]{0} dynamic-slice(a, z), dynamic_slice_sizes={2}\n"
    "  cd = f32[4]{0} conditional(p, a, a), true_computation=fused, false_computation=fused\n"
    "  fu = f32[4]{0} fusion(a), kind=kLoop, calls=fused\n"
    "  cc = f32[4]{0} custom-call(a), custom_call_target=\"my_op\", "
    "custom_call_has_side_effect=true, api_version=API_VERSION_STATUS_RETURNING, "
    "backend_config=\"{\\\"x\\\":1}\"\n"
    "  rp = f32[4]{0} reduce-precision(a), exponent_bits=5, mantissa_bits=10\n"
    "  cv = bf16[4]{0} convert(a)\n"
    "  ROOT t = (f32[1,4,4,5]{3,2,1,0}, f32[2]{0}, f32[9]{0}, f32[2,2]{1,0}, f32[4]{0}, "
    "f32[16]{0}, f32[4]{0}, f32[1]{0}, f32[4]{0}, f32[4]{0}, f32[2]{0}, "
    "f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, bf16[4]{0}) tuple(conv, rw, pad, g, "
    "so, /*index=5*/ag, a2a, rsc, cp, rv, /*index=10*/ds, cd, fu, cc, rp, /*index=15*/cv)\n"
    "}\n";

static void test_fixed_point_realistic(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kRealisticText, strlen(kRealisticText), "real.hlo", &m));
  HL_ASSERT_OK(hl_verify_module(m));
  char *text = hr_print_module(m);
  CU_ASSERT_STRING_EQUAL(text, kRealisticText);
  if (strcmp(text, kRealisticText) != 0) fprintf(stderr, "\n%s\n", text);
  hl_module_destroy(m);
  hl_free(text);
}

static void test_fixed_point_attributes(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kAttributeZooText, strlen(kAttributeZooText), "zoo.hlo", &m));
  char *text = hr_print_module(m);
  CU_ASSERT_STRING_EQUAL(text, kAttributeZooText);
  if (strcmp(text, kAttributeZooText) != 0) fprintf(stderr, "\n%s\n", text);
  hl_module_destroy(m);
  hl_free(text);
}

// Allocation failure at any point gives HL_OUT_OF_MEMORY, never a crash.
static void test_out_of_memory(void) {
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kRealisticText, strlen(kRealisticText), "real.hlo", &m));
  bool saw_oom = false, saw_ok = false;
  for (long n = 0; n < 64 && !saw_ok; n++) {
    hl_strbuf_t sb;
    hl_strbuf_init(&sb);
    hl_alloc_fail_after(n);
    hl_status_t st = hl_print_hlo_module(m, &sb);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      saw_oom = true;
      hl_status_free(st);
    } else {
      CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&sb), kRealisticText);
      saw_ok = true;
    }
    hl_strbuf_deinit(&sb);
  }
  CU_ASSERT(saw_oom);
  CU_ASSERT(saw_ok);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"module_text", test_module_text},
    {"shape_attributes", test_shape_attributes},
    {"dot_and_convolution", test_dot_and_convolution},
    {"collectives", test_collectives},
    {"control_flow", test_control_flow},
    {"generic_attributes", test_generic_attributes},
    {"sharding_forms", test_sharding_forms},
    {"misc_ops", test_misc_ops},
    {"fixed_point", test_fixed_point},
    {"fixed_point_realistic", test_fixed_point_realistic},
    {"fixed_point_attributes", test_fixed_point_attributes},
    {"out_of_memory", test_out_of_memory},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("hlo_printer", tests)
