// HLO text modules -> IR: module structure, operands, ids/order, legacy
// opcodes, async sugar, shape inference, errors with positions, and
// robustness (every truncated prefix, random byte flips, allocation failure).
// Attribute decoding has its own suite (test_hlo_attr_parser.c).
#include "runtime/base/alloc.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

// A dump in the style of XLA's --xla_dump_to .txt files (no '%', no
// signatures, metadata, backend_config, /*index=N*/, stack-frame tables),
// modelled on openxla/xla dumps and the collective test modules.
static const char kDump[] =
    "HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8,4]{1,0}, "
    "f32[4]{0})->(f32[8,4]{1,0}, f32[])}, allow_spmd_sharding_propagation_to_output={true}, "
    "replica_count=2, num_partitions=4, frontend_attributes={fingerprint=\"abc\"}, "
    "input_output_alias={ {0}: (0, {}, may-alias) }\n"
    "\n"
    "FileNames\n"
    "1 \"/tmp/f.py\"\n"
    "2 \"/usr/lib/jax/_src/core.py\"\n"
    "\n"
    "FunctionNames\n"
    "1 \"f\"\n"
    "2 \"<lambda>\"\n"
    "\n"
    "FileLocations\n"
    "1 {file_name_id=1 function_name_id=1 line=5 end_line=5 column=4 end_column=20}\n"
    "\n"
    "StackFrames\n"
    "1 {file_location_id=1 parent_frame_id=0}\n"
    "\n"
    "region_0.5 {\n"
    "  Arg_0.6 = f32[] parameter(0)\n"
    "  Arg_1.7 = f32[] parameter(1)\n"
    "  ROOT add.8 = f32[] add(Arg_0.6, Arg_1.7), metadata={op_name=\"jit(f)/reduce_sum\" "
    "source_file=\"/tmp/f.py\" source_line=5}\n"
    "}\n"
    "\n"
    "fused_computation {\n"
    "  param_0.1 = f32[8,4]{1,0} parameter(0)\n"
    "  param_1.2 = f32[4]{0} parameter(1)\n"
    "  broadcast.3 = f32[8,4]{1,0} broadcast(param_1.2), dimensions={1}\n"
    "  ROOT multiply.4 = f32[8,4]{1,0} multiply(param_0.1, broadcast.3)\n"
    "}\n"
    "\n"
    "ENTRY main.12 {\n"
    "  Arg_0.1 = f32[8,4]{1,0} parameter(0), sharding={devices=[4,1]<=[4]}, "
    "metadata={op_name=\"x\"}\n"
    "  Arg_1.2 = f32[4]{0} parameter(1), sharding={replicated}\n"
    "  fusion = f32[8,4]{1,0} fusion(Arg_0.1, Arg_1.2), kind=kLoop, calls=fused_computation, "
    "metadata={op_type=\"mul\" op_name=\"jit(f)/mul\" source_file=\"/tmp/f.py\" source_line=4 "
    "stack_frame_id=1}\n"
    "  constant.9 = f32[] constant(0)\n"
    "  reduce.10 = f32[] reduce(fusion, constant.9), dimensions={0,1}, to_apply=region_0.5, "
    "backend_config={\"outer_dimension_partitions\":[\"2\"],\"k\":{\"x\":\"}\"}}\n"
    "  all-reduce = f32[] all-reduce(reduce.10), channel_id=1, replica_groups={{0,1},{2,3}}, "
    "use_global_device_ids=true, to_apply=region_0.5\n"
    "  custom-call.1 = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) "
    "custom-call(all-reduce, all-reduce, all-reduce, all-reduce, all-reduce, "
    "/*index=5*/all-reduce), custom_call_target=\"Sharding\", custom_call_has_side_effect=true, "
    "some_future_attr={a=[1,2] b={c}}, frontend_attributes={_xla_compute_type=\"dense\"}\n"
    "  ROOT tuple.11 = (f32[8,4]{1,0}, f32[]) tuple(fusion, all-reduce), "
    "control-predecessors={custom-call.1}\n"
    "} // main.12\n"
    "\n";

// Line and column (1-based) of the first occurrence of `needle` in `text`:
// an independent computation of the positions the parser should report.
static void position_of(const char *text, const char *needle, int *line, int *col) {
  const char *at = strstr(text, needle);
  CU_ASSERT_PTR_NOT_NULL_FATAL(at);
  *line = 1;
  const char *ls = text;
  for (const char *q = text; q < at; q++)
    if (*q == '\n') {
      (*line)++;
      ls = q + 1;
    }
  *col = (int)(at - ls) + 1;
}

static hl_module_t *parse_ok(const char *text) {
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(text, strlen(text), "t.hlo", &m);
  if (st) fprintf(stderr, "\n  parse failed: %s\n", hl_status_message(st));
  CU_ASSERT_PTR_NULL_FATAL(st);
  return m;
}

static void expect_error(const char *text, const char *needle) {
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_parse_hlo_module(text, strlen(text), "t.hlo", &m), needle);
  CU_ASSERT_PTR_NULL(m);
}

static hl_instruction_t *find(hl_module_t *m, const char *comp, const char *name) {
  hl_computation_t *c = hl_module_find_computation(m, comp);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  hl_instruction_t *inst = hl_computation_find_instruction(c, name);
  if (!inst) fprintf(stderr, "\n  no instruction %s in %s\n", name, comp);
  CU_ASSERT_PTR_NOT_NULL_FATAL(inst);
  return inst;
}

static void test_realistic_dump(void) {
  hl_module_t *m = parse_ok(kDump);
  CU_ASSERT_STRING_EQUAL(m->name, "jit_f");
  CU_ASSERT_STRING_EQUAL(m->source_path, "t.hlo");
  CU_ASSERT_EQUAL(m->replica_count, 2);
  CU_ASSERT_EQUAL(m->num_partitions, 4);
  CU_ASSERT_TRUE(m->is_scheduled);
  CU_ASSERT_EQUAL(m->frontend_attributes.n, 1);
  CU_ASSERT_STRING_EQUAL(m->frontend_attributes.entries[0].value, "abc");
  CU_ASSERT_EQUAL_FATAL(m->computation_count, 3);
  CU_ASSERT_STRING_EQUAL(m->computations[0]->name, "region_0.5");
  CU_ASSERT_STRING_EQUAL(m->computations[1]->name, "fused_computation");
  CU_ASSERT_STRING_EQUAL(m->computations[2]->name, "main.12");
  CU_ASSERT_PTR_EQUAL(m->entry, m->computations[2]);
  for (int i = 0; i < 3; i++) CU_ASSERT_EQUAL(m->computations[i]->id, i);

  // Ids: module-wide, text order, from 1 (3 + 4 instructions before the entry).
  hl_computation_t *e = m->entry;
  CU_ASSERT_EQUAL_FATAL(e->instruction_count, 8);
  for (int i = 0; i < 8; i++) CU_ASSERT_EQUAL(e->instructions[i]->id, 8 + i);
  CU_ASSERT_STRING_EQUAL(e->root->name, "tuple.11");
  CU_ASSERT_EQUAL(e->parameter_count, 2);
  CU_ASSERT_STRING_EQUAL(e->parameters[1]->name, "Arg_1.2");

  hl_instruction_t *add = find(m, "region_0.5", "add.8");
  int line, col;
  position_of(kDump, "add.8 =", &line, &col);
  CU_ASSERT_EQUAL(add->line, line);
  CU_ASSERT_EQUAL(add->column, col);
  CU_ASSERT_TRUE(add->attrs.metadata.present);
  CU_ASSERT_STRING_EQUAL(add->attrs.metadata.op_name, "jit(f)/reduce_sum");
  CU_ASSERT_STRING_EQUAL(add->attrs.metadata.source_file, "/tmp/f.py");
  CU_ASSERT_EQUAL(add->attrs.metadata.source_line, 5);
  CU_ASSERT_PTR_NULL(add->attrs.metadata.op_type);

  hl_instruction_t *fusion = find(m, "main.12", "fusion");
  CU_ASSERT_STRING_EQUAL(fusion->attrs.fusion_kind, "kLoop");
  CU_ASSERT_EQUAL_FATAL(fusion->called_count, 1);
  CU_ASSERT_PTR_EQUAL(fusion->called_computations[0], m->computations[1]);
  CU_ASSERT_STRING_EQUAL(fusion->attrs.metadata.op_type, "mul");

  hl_instruction_t *reduce = find(m, "main.12", "reduce.10");
  CU_ASSERT_STRING_EQUAL(reduce->attrs.backend_config,
                         "{\"outer_dimension_partitions\":[\"2\"],\"k\":{\"x\":\"}\"}}");
  CU_ASSERT_EQUAL(reduce->attrs.dimensions.n, 2);
  CU_ASSERT_PTR_EQUAL(hl_instruction_to_apply(reduce), m->computations[0]);

  hl_instruction_t *ar = find(m, "main.12", "all-reduce");
  CU_ASSERT_EQUAL(ar->attrs.channel_id, 1);
  CU_ASSERT_TRUE(ar->attrs.use_global_device_ids);
  CU_ASSERT_EQUAL(ar->attrs.replica_groups.kind, HL_GROUPS_LIST);
  CU_ASSERT_EQUAL_FATAL(ar->attrs.replica_groups.group_count, 2);
  CU_ASSERT_EQUAL(ar->attrs.replica_groups.groups[1].v[0], 2);
  CU_ASSERT_EQUAL(ar->attrs.replica_groups.groups[1].v[1], 3);

  hl_instruction_t *cc = find(m, "main.12", "custom-call.1");
  CU_ASSERT_EQUAL(cc->operand_count, 6);
  CU_ASSERT_EQUAL(cc->shape.tuple_count, 6);
  CU_ASSERT_STRING_EQUAL(cc->attrs.custom_call_target, "Sharding");
  CU_ASSERT_TRUE(cc->attrs.custom_call_has_side_effect);
  CU_ASSERT_STRING_EQUAL(hl_instruction_frontend_attribute(cc, "_xla_compute_type"), "dense");

  hl_instruction_t *root = e->root;
  CU_ASSERT_EQUAL_FATAL(root->control_predecessor_count, 1);
  CU_ASSERT_PTR_EQUAL(root->control_predecessors[0], cc);
  CU_ASSERT_PTR_EQUAL(root->operands[0], fusion);

  hl_instruction_t *arg0 = find(m, "main.12", "Arg_0.1");
  CU_ASSERT_PTR_NOT_NULL_FATAL(arg0->attrs.sharding);
  CU_ASSERT_EQUAL(arg0->attrs.sharding->type, HL_SHARDING_OTHER);
  hl_module_destroy(m);
}

// openxla/xla xla/tools/multihost_hlo_runner/test_data/test_hlo.txt
// (@ce80a7a): '%' names, a signature, inline operand shapes.
static const char kOldStyle[] =
    "HloModule hlo_runner_test_0.1\n\n"
    "ENTRY %hlo_runner_test_0.1 (lhs: f32[32,24,64,128], rhs: f32[32,1024,64,128]) -> "
    "f32[32,24,1024,1] {\n"
    "  %lhs = f32[32,24,64,128]{3,2,1,0} parameter(0)\n"
    "  %rhs = f32[32,1024,64,128]{3,2,1,0} parameter(1)\n"
    "  ROOT %conv = f32[32,24,1024,1]{3,2,1,0} convolution(f32[32,24,64,128]{3,2,1,0} %lhs, "
    "f32[32,1024,64,128]{3,2,1,0} %rhs), window={size=32x128 stride=31x1 lhs_dilate=32x1}, "
    "dim_labels=0bf1_0oi1->0bf1\n"
    "}\n\n";

static void test_old_style_dump(void) {
  hl_module_t *m = parse_ok(kOldStyle);
  CU_ASSERT_STRING_EQUAL(m->name, "hlo_runner_test_0.1");
  CU_ASSERT_EQUAL(m->replica_count, 0);  // not given
  hl_instruction_t *conv = m->entry->root;
  CU_ASSERT_STRING_EQUAL(conv->name, "conv");
  CU_ASSERT_EQUAL(conv->opcode, HL_OP_CONVOLUTION);
  CU_ASSERT_EQUAL(conv->operand_count, 2);
  CU_ASSERT_STRING_EQUAL(conv->operands[1]->name, "rhs");
  CU_ASSERT_TRUE(conv->shape.has_layout);
  hl_module_destroy(m);
  // An inline operand shape must match the operand.
  expect_error("HloModule m\nENTRY e {\n  %p = f32[2]{0} parameter(0)\n"
               "  ROOT %n = f32[2]{0} negate(f32[3]{0} %p)\n}\n",
               "t.hlo:4:30: operand 'p' has shape f32[2] but the text says f32[3] near 'f32'");
}

// openxla/xla xla/tools/hlo_opt/tests/gpu_hlo_collective_cse.hlo (@3af6a0d),
// lines 3-14, comments included.
static const char kCollectives[] =
    "// RUN: hlo-opt %s --platform=gpu | FileCheck %s\n\n"
    "HloModule m\n\n"
    "// CHECK: %custom-call.1 = s32[32]{0} custom-call(s32[32]{0} %all-gather.1)\n\n"
    "ENTRY e {\n"
    "  param0 = s32[4] parameter(0)\n"
    "  all-gather.1 = s32[32] all-gather(param0), dimensions={0}, replica_groups=[1,8]<=[8], "
    "channel_id=1\n"
    "  all-gather.2 = s32[32] all-gather(param0), dimensions={0}, replica_groups=[1,8]<=[8], "
    "channel_id=2\n"
    "  all-gather.3 = s32[32] all-gather(param0), dimensions={0}, replica_groups=[1,8]<=[8], "
    "channel_id=3\n"
    "  custom-call.1 = s32[32] custom-call(all-gather.3), custom_call_target=\"my_custom_call1\"\n"
    "  ROOT tuple = (s32[32]) tuple(custom-call.1)\n"
    "}\n";

static void test_collective_module(void) {
  hl_module_t *m = parse_ok(kCollectives);
  hl_instruction_t *ag = find(m, "e", "all-gather.3");
  CU_ASSERT_EQUAL(ag->attrs.channel_id, 3);
  CU_ASSERT_EQUAL(ag->attrs.dimensions.n, 1);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.kind, HL_GROUPS_IOTA);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.iota_num_groups, 1);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.iota_group_size, 8);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.iota_reshape_dims.n, 1);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.iota_transpose_perm.n, 0);
  CU_ASSERT_FALSE(ag->shape.has_layout);
  CU_ASSERT_EQUAL(m->entry->root->shape.tuple_count, 1);
  hl_module_destroy(m);
}

static void test_no_header_entry_and_root_defaults(void) {
  hl_module_t *m = parse_ok(
      "c1 {\n  a = f32[] constant(1)\n}\n"
      "c2 {\n  first = f32[1]{0} constant({12345})\n  last = f32[1]{0} constant({67890})\n}\n");
  CU_ASSERT_STRING_EQUAL(m->name, "module_c2");
  CU_ASSERT_STRING_EQUAL(m->entry->name, "c2");
  CU_ASSERT_STRING_EQUAL(m->entry->root->name, "last");
  CU_ASSERT_EQUAL(m->computation_count, 2);
  CU_ASSERT_PTR_EQUAL(m->computations[1], m->entry);  // unreferenced c1 kept, before the entry
  CU_ASSERT_EQUAL(hl_literal_get_f64(m->entry->root->attrs.literal, 0), 67890.0);
  hl_module_destroy(m);
  m = parse_ok("ENTRY e {\n  ROOT r = s32[] constant(7)\n  x = s32[] constant(8)\n}\n");
  CU_ASSERT_STRING_EQUAL(m->entry->root->name, "r");
  CU_ASSERT_STRING_EQUAL(m->name, "module_e");
  hl_module_destroy(m);
}

static void test_entry_not_last_and_post_order(void) {
  // Entry first in the text is still stored last; callees precede callers.
  hl_module_t *m = parse_ok(
      "HloModule m\n"
      "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY main {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
      "  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n"
      "unused {\n  ROOT k = f32[] constant(1)\n}\n");
  CU_ASSERT_EQUAL_FATAL(m->computation_count, 3);
  CU_ASSERT_STRING_EQUAL(m->computations[0]->name, "add");
  CU_ASSERT_STRING_EQUAL(m->computations[1]->name, "unused");
  CU_ASSERT_STRING_EQUAL(m->computations[2]->name, "main");
  CU_ASSERT_EQUAL(m->computations[1]->id, 2);  // ids stay in definition order
  hl_module_destroy(m);
}

static void test_tuples_and_nested_operands(void) {
  hl_module_t *m = parse_ok(
      "HloModule m\nENTRY e {\n"
      "  p = (f32[2], (s32[], token[])) parameter(0)\n"
      "  a = f32[2] get-tuple-element(p), index=0\n"
      "  b = f32[2] parameter(1)\n"
      "  c = f32[2] parameter(2)\n"
      "  ROOT r = f32[2] add(f32[2] multiply(a, b), c)\n"
      "  e = () tuple()\n"
      "}\n");
  hl_instruction_t *r = find(m, "e", "r");
  CU_ASSERT_STRING_EQUAL(m->entry->root->name, "r");
  hl_instruction_t *mul = find(m, "e", "multiply.anon");
  CU_ASSERT_PTR_EQUAL(r->operands[0], mul);
  CU_ASSERT_EQUAL(mul->opcode, HL_OP_MULTIPLY);
  CU_ASSERT_EQUAL(mul->operand_count, 2);
  CU_ASSERT_TRUE(mul->index < r->index);  // operands precede users
  CU_ASSERT_TRUE(mul->id < r->id);
  hl_instruction_t *p = find(m, "e", "p");
  CU_ASSERT_EQUAL(p->shape.tuple[1].tuple[1].dtype, HL_TOKEN);
  CU_ASSERT_EQUAL(find(m, "e", "e")->shape.tuple_count, 0);
  hl_module_destroy(m);
  // Two anonymous operands of the same opcode get distinct names.
  m = parse_ok("ENTRY e {\n  a = f32[] parameter(0)\n"
               "  ROOT r = f32[] add(f32[] negate(a), f32[] negate(a))\n}\n");
  CU_ASSERT_PTR_NOT_NULL(hl_computation_find_instruction(m->entry, "negate.anon"));
  CU_ASSERT_PTR_NOT_NULL(hl_computation_find_instruction(m->entry, "negate.anon.1"));
  hl_module_destroy(m);
}

static void test_legacy_opcodes(void) {
  hl_module_t *m = parse_ok(
      "HloModule m\nsum {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n"
      "  lt = pred[2] less-than(a, b)\n  ge = pred[2] greater-than-or-equal-to(a, b)\n"
      "  ROOT crs = f32[2] cross-replica-sum(a), to_apply=sum\n}\n");
  hl_instruction_t *lt = find(m, "e", "lt");
  CU_ASSERT_EQUAL(lt->opcode, HL_OP_COMPARE);
  CU_ASSERT_EQUAL(lt->attrs.comparison_direction, HL_CMP_LT);
  CU_ASSERT_EQUAL(find(m, "e", "ge")->attrs.comparison_direction, HL_CMP_GE);
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_ALL_REDUCE);
  hl_module_destroy(m);
}

static void test_shape_inference(void) {
  hl_module_t *m = parse_ok(
      "ENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n  t = (f32[2,3], s32[]) parameter(1)\n"
      "  n = negate(a)\n  s = add(a, n)\n  c = compare(a, s), direction=LT\n"
      "  g = get-tuple-element(t), index=1\n  tu = tuple(a, g)\n  tok = after-all()\n"
      "  r = replica-id()\n  pid = partition-id()\n  sel = select(c, a, s)\n"
      "  ROOT out = tuple(tu, r)\n}\n");
  hl_instruction_t *n = find(m, "e", "n");
  CU_ASSERT_EQUAL(n->shape.dtype, HL_F32);
  CU_ASSERT_EQUAL(n->shape.dims[1], 3);
  CU_ASSERT_EQUAL(find(m, "e", "c")->shape.dtype, HL_PRED);
  CU_ASSERT_EQUAL(find(m, "e", "c")->shape.rank, 2);
  CU_ASSERT_EQUAL(find(m, "e", "g")->shape.dtype, HL_S32);
  CU_ASSERT_EQUAL(find(m, "e", "tu")->shape.tuple_count, 2);
  CU_ASSERT_EQUAL(find(m, "e", "tok")->shape.dtype, HL_TOKEN);
  CU_ASSERT_EQUAL(find(m, "e", "r")->shape.dtype, HL_U32);
  CU_ASSERT_EQUAL(find(m, "e", "pid")->shape.rank, 0);
  CU_ASSERT_EQUAL(find(m, "e", "sel")->shape.dtype, HL_F32);
  hl_module_destroy(m);
  expect_error("ENTRY e {\n  a = f32[2] parameter(0)\n  ROOT b = reshape(a)\n}\n",
               "t.hlo:3:12: shape required for 'b'");
}

static void test_async_sugar(void) {
  hl_module_t *m = parse_ok(
      "HloModule m\nadd {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(x, y)\n}\n"
      "ENTRY e {\n  p = f32[8] parameter(0)\n"
      "  rs-start = ((f32[8]), f32[2]) reduce-scatter-start(p), replica_groups={}, "
      "dimensions={0}, to_apply=add\n"
      "  ROOT rs-done = f32[2] reduce-scatter-done(rs-start)\n"
      "  ar-start = f32[8] all-reduce-start(p), to_apply=add\n"
      "  ar-done = f32[8] all-reduce-done(ar-start)\n}\n");
  hl_instruction_t *start = find(m, "e", "rs-start");
  CU_ASSERT_EQUAL(start->opcode, HL_OP_ASYNC_START);
  CU_ASSERT_EQUAL_FATAL(start->called_count, 1);
  hl_computation_t *w = start->called_computations[0];
  CU_ASSERT_EQUAL(w->root->opcode, HL_OP_REDUCE_SCATTER);
  CU_ASSERT_EQUAL(w->parameter_count, 1);
  CU_ASSERT_EQUAL(w->root->shape.dims[0], 2);
  CU_ASSERT_EQUAL(w->root->attrs.dimensions.n, 1);  // attributes went to the wrapped op
  CU_ASSERT_PTR_EQUAL(hl_instruction_to_apply(w->root), hl_module_find_computation(m, "add"));
  hl_instruction_t *done = find(m, "e", "rs-done");
  CU_ASSERT_EQUAL(done->opcode, HL_OP_ASYNC_DONE);
  CU_ASSERT_EQUAL_FATAL(done->called_count, 1);
  CU_ASSERT_PTR_EQUAL(done->called_computations[0], w);
  // Real opcodes win over the sugar.
  CU_ASSERT_EQUAL(find(m, "e", "ar-start")->opcode, HL_OP_ALL_REDUCE_START);
  // The wrapped computation comes before the entry.
  CU_ASSERT_PTR_EQUAL(m->computations[m->computation_count - 1], m->entry);
  hl_module_destroy(m);
}

// openxla/xla xla/service/convert_async_collectives_to_sync_test.cc
// (@cc0e654): explicit async-start/done with calls=, an attribute list
// continued on the next line, spaces inside dimensions, real -start ops.
static void test_xla_async_collective_modules(void) {
  hl_module_t *m = parse_ok(
      "  HloModule test, is_scheduled=true\n\n"
      "  add {\n    lhs = u32[] parameter(0)\n    rhs = u32[] parameter(1)\n"
      "    ROOT add = u32[] add(lhs, rhs)\n  }\n\n"
      "  reduce_scatter {\n    p0 = u32[8] parameter(0)\n"
      "    ROOT result = u32[4] reduce-scatter(p0), replica_groups={{0,3}, {1,2}},\n"
      "                      dimensions={0}, to_apply=add\n  }\n\n"
      "  ENTRY main {\n    data = u32[8] parameter(0)\n"
      "    rs-start = ((u32[8]{0}), u32[4]{0}) async-start(u32[8]{0} %data), "
      "calls=reduce_scatter\n"
      "    ROOT %ars = u32[4]{0} async-done(((u32[8]{0}), u32[4]{0}) %rs-start), "
      "calls=reduce_scatter\n  }\n  ");
  hl_instruction_t *rs = hl_module_find_computation(m, "reduce_scatter")->root;
  CU_ASSERT_EQUAL(rs->opcode, HL_OP_REDUCE_SCATTER);
  CU_ASSERT_EQUAL(rs->attrs.dimensions.n, 1);
  CU_ASSERT_EQUAL(rs->attrs.replica_groups.groups[0].v[1], 3);
  hl_instruction_t *done = m->entry->root;
  CU_ASSERT_EQUAL(done->opcode, HL_OP_ASYNC_DONE);
  CU_ASSERT_EQUAL(done->operands[0]->opcode, HL_OP_ASYNC_START);
  CU_ASSERT_PTR_EQUAL(done->called_computations[0], hl_module_find_computation(m, "reduce_scatter"));
  CU_ASSERT_STRING_EQUAL(m->computations[0]->name, "add");
  CU_ASSERT_STRING_EQUAL(m->computations[1]->name, "reduce_scatter");
  hl_module_destroy(m);
  m = parse_ok(
      "  HloModule test, is_scheduled=true\n  ENTRY test_computation {\n"
      "    a1 = u32[1, 2] parameter(0)\n"
      "    ags = (u32[1, 2], u32[2, 2]) all-gather-start(a1), dimensions={0}, channel_id=3\n"
      "    ROOT allgather = u32[2,2] all-gather-done(ags)\n"
      "    p = u32[2] parameter(1)\n"
      "    start = (u32[2], u32[2], u32[], u32[]) collective-permute-start(p), "
      "source_target_pairs={{0,1}, {1,0}}\n"
      "    done = u32[2] collective-permute-done(start)\n  }");
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_ALL_GATHER_DONE);
  CU_ASSERT_EQUAL(find(m, "test_computation", "ags")->attrs.channel_id, 3);
  CU_ASSERT_EQUAL(find(m, "test_computation", "start")->attrs.source_target_count, 2);
  hl_module_destroy(m);
}

static void test_execution_thread_and_signature(void) {
  hl_module_t *m = parse_ok(
      "HloModule m\n%comp (p0: f32[2], p1: (f32[], s32[])) -> f32[2] {\n"
      "  %p0 = f32[2] parameter(0)\n  %p1 = (f32[], s32[]) parameter(1)\n"
      "  ROOT %n = f32[2] negate(%p0)\n}, execution_thread=\"host\"\n"
      "ENTRY %e () -> f32[] {\n  ROOT %c = f32[] constant(1)\n}\n");
  CU_ASSERT_STRING_EQUAL(hl_module_find_computation(m, "comp")->execution_thread, "host");
  CU_ASSERT_STRING_EQUAL(m->entry->name, "e");
  hl_module_destroy(m);
}

// Names spelled like type words ("f16", "token") are still names where a
// name is expected.
static void test_type_words_as_names(void) {
  hl_module_t *m = parse_ok(
      "HloModule m\nf16 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
      "  ROOT s = f32[] add(a, b)\n}\n"
      "ENTRY e {\n  token = token[] after-all()\n  x = f32[4] parameter(0)\n"
      "  z = f32[] constant(0)\n  r = f32[] reduce(x, z), dimensions={0}, to_apply=f16\n"
      "  ROOT t = (token[], f32[]) tuple(token, r)\n}\n");
  CU_ASSERT_STRING_EQUAL(hl_instruction_to_apply(find(m, "e", "r"))->name, "f16");
  CU_ASSERT_EQUAL(m->entry->root->operands[0]->opcode, HL_OP_AFTER_ALL);
  hl_module_destroy(m);
}

static void test_errors_with_positions(void) {
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[] add(x, y)\n}\n",
               "t.hlo:3:22: instruction 'x' is not defined near 'x'");
  expect_error("HloModule m\nENTRY e {\n  a = f32[] constant(1)\n  a = f32[] constant(2)\n}\n",
               "t.hlo:4:3: instruction 'a' is defined twice in computation 'e' near 'a'");
  expect_error("HloModule m\nENTRY e {\n  a = f32[2] parameter(0)\n"
               "  ROOT r = f32[] reduce(a, a), dimensions={0}, to_apply=nope\n}\n",
               "t.hlo:4:57: computation 'nope' is not defined near 'nope'");
  expect_error("HloModule m\nENTRY e {\n  a = f32[2] parameter(0), sharding={replicated}, "
               "sharding={replicated}\n}\n",
               "t.hlo:3:51: attribute 'sharding' is given more than once near 'sharding='");
  expect_error("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT n = f32[] add(a)\n}\n",
               "t.hlo:4:18: 'add' takes 2 operands but 1 is given near 'add'");
  expect_error("HloModule m\nENTRY e {\n  /* open\n  ROOT a = f32[] constant(1)\n}\n",
               "t.hlo:3:3: unterminated /* comment near '/*'");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[] custom-call(), custom_call_target=\"x\n}\n",
               "t.hlo:3:52: unterminated string");
  expect_error("HloModule m\nENTRY e {\n  ROOT big = f32[67,89]{1,0} constant({...})\n}\n",
               "t.hlo:3:39: constant 'big' is elided as {...} in this text dump; load the .pb "
               "dump (--xla_dump_hlo_as_proto) to get its value near '{'");
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[2,2] constant({{1,2},{3}})\n}\n",
               "t.hlo:3:37: expected 2 elements in dimension 1 of f32[2,2] but found 1");
  expect_error("HloModule m\nENTRY e {\n  ROOT c = f32[2] frobnicate()\n}\n",
               "t.hlo:3:19: unknown opcode 'frobnicate' near 'frobnicate'");
  expect_error("HloModule m\nENTRY a {\n  ROOT c = f32[] constant(1)\n}\n"
               "ENTRY b {\n  ROOT c = f32[] constant(1)\n}\n",
               "t.hlo:5:1: more than one ENTRY computation");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[2] parameter(0), dimensions={0,}\n}\n",
               "t.hlo:3:47: expected an integer near '}'");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[2] parameter(0)\n",
               "t.hlo:4:1: expected '}' to close computation 'e' near '<eof>'");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[2 parameter(0)\n}\n",
               "t.hlo:3:18: expected ']' to close the dimensions near 'parameter'");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[] constant(1), control-predecessors={b}\n}\n",
               "t.hlo:3:53: instruction 'b' is not defined near 'b'");
  expect_error("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(0)\n}\n",
               "parameter number 0 is used twice");
  expect_error("HloModule m\nENTRY e {\n}\n", "t.hlo:3:1: computation 'e' has no instructions");
  expect_error("HloModule m\n", "expected a computation");
  expect_error("", "t.hlo:1:1: expected a computation near '<eof>'");
  expect_error("HloModule m\nENTRY e {\n  ROOT a = f32[] constant(1.5), metadata={op_name=3}\n}\n",
               "t.hlo:3:51: expected a string near '3'");
}

// A parse of `text` either succeeds or returns a status; under ASan this
// also checks that no prefix or flip reads out of bounds or leaks.
static void parse_any(const char *text, size_t n) {
  hl_module_t *m = NULL;
  hl_status_t st = hl_parse_hlo_module(text, n, "fuzz.hlo", &m);
  if (st) {
    CU_ASSERT_PTR_NULL(m);
    bool positioned = strncmp(hl_status_message(st), "fuzz.hlo:", 9) == 0 ||
                      hl_status_code(st) != HL_INVALID_ARGUMENT;
    if (!positioned) fprintf(stderr, "\n  unpositioned: %s\n", hl_status_message(st));
    CU_ASSERT_TRUE(positioned);
    hl_status_free(st);
  } else {
    CU_ASSERT_PTR_NOT_NULL(m);
    hl_module_destroy(m);
  }
}

// entry_computation_layout: every layout part parses; the shapes must agree
// with the entry's parameters and root (the layouts may differ: values are
// logical).
static void test_entry_computation_layout(void) {
  hl_module_t *m = parse_ok(
      "HloModule l, entry_computation_layout={(f32[2,3]{0,1:T(2,128)S(1)}, s4[4]{0:E(4)})"
      "->(f32[2,3]{1,0}, s4[4]{0})}\n\n"
      "ENTRY e {\n  a = f32[2,3]{1,0} parameter(0)\n  b = s4[4]{0} parameter(1)\n"
      "  ROOT t = (f32[2,3]{1,0}, s4[4]{0}) tuple(a, b)\n}\n");
  hl_module_destroy(m);
  expect_error("HloModule l, entry_computation_layout={(f32[3,2]{1,0})->f32[2,3]{1,0}}\n\n"
               "ENTRY e {\n  ROOT a = f32[2,3]{1,0} parameter(0)\n}\n",
               "t.hlo:1:41: entry_computation_layout gives parameter 0 the shape f32[3,2], but "
               "parameter 'a' is f32[2,3]");
  expect_error("HloModule l, entry_computation_layout={()->f32[2,3]{1,0}}\n\n"
               "ENTRY e {\n  ROOT a = f32[2,3]{1,0} parameter(0)\n}\n",
               "entry_computation_layout has 0 parameters, computation 'e' has 1");
  expect_error("HloModule l, entry_computation_layout={(f32[2,3]{1,0})->s32[2,3]{1,0}}\n\n"
               "ENTRY e {\n  ROOT a = f32[2,3]{1,0} parameter(0)\n}\n",
               "gives the result the shape s32[2,3], but the root 'a' is f32[2,3]");
}

static void test_truncated_prefixes(void) {
  const char *inputs[] = {kDump, kOldStyle, kCollectives};
  for (int k = 0; k < 3; k++) {
    size_t n = strlen(inputs[k]);
    for (size_t len = 0; len <= n; len++) {
      // Copy to an exact-size heap buffer so ASan sees any read past `len`.
      char *buf = malloc(len ? len : 1);
      memcpy(buf, inputs[k], len);
      parse_any(buf, len);
      free(buf);
    }
  }
}

static void test_random_byte_flips(void) {
  static const char alphabet[] = "{}()[],=:%\"'/*<>-?.x_0123456789abfT \n";
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  size_t n = strlen(kDump);
  char *buf = malloc(n);
  for (int iter = 0; iter < 3000; iter++) {
    memcpy(buf, kDump, n);
    int flips = 1 + (int)(rng % 4);
    for (int f = 0; f < flips; f++) {
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      size_t pos = (size_t)(rng % n);
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      buf[pos] = (rng & 1) ? alphabet[(rng >> 1) % (sizeof(alphabet) - 1)] : (char)(rng >> 8);
    }
    parse_any(buf, n);
  }
  free(buf);
}

static void test_allocation_failures(void) {
  for (long k = 0; k < 2000; k += 7) {
    hl_module_t *m = NULL;
    hl_alloc_fail_after(k);
    hl_status_t st = hl_parse_hlo_module(kDump, strlen(kDump), "t.hlo", &m);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      CU_ASSERT_PTR_NULL(m);
      hl_status_free(st);
    } else {
      hl_module_destroy(m);
      break;
    }
  }
}

static CU_TestInfo tests[] = {
    {"realistic_dump", test_realistic_dump},
    {"old_style_dump", test_old_style_dump},
    {"collective_module", test_collective_module},
    {"no_header_entry_and_root_defaults", test_no_header_entry_and_root_defaults},
    {"entry_not_last_and_post_order", test_entry_not_last_and_post_order},
    {"tuples_and_nested_operands", test_tuples_and_nested_operands},
    {"legacy_opcodes", test_legacy_opcodes},
    {"shape_inference", test_shape_inference},
    {"async_sugar", test_async_sugar},
    {"xla_async_collective_modules", test_xla_async_collective_modules},
    {"execution_thread_and_signature", test_execution_thread_and_signature},
    {"type_words_as_names", test_type_words_as_names},
    {"errors_with_positions", test_errors_with_positions},
    {"entry_computation_layout", test_entry_computation_layout},
    {"truncated_prefixes", test_truncated_prefixes},
    {"random_byte_flips", test_random_byte_flips},
    {"allocation_failures", test_allocation_failures},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("hlo_parser", tests)
