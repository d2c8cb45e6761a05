// Binary proto decoding and kind detection (runtime/proto/proto_loader.c).
// Expected values come from the fixture's README (XLA's own encoding) and
// from messages built here with the generated protobuf-c structs.
// hl-test-libs: hl_proto
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.pb-c.h"
#include "runtime/base/alloc.h"
#include "runtime/proto/proto_io.h"
#include "proto_test_util.h"
#include "test_util.h"

#define SHARED_FIXTURE HL_SOURCE_DIR "/../shared/reference/xla-encoded/wire_fixture.hlo.pb"

static hl_instruction_t *find(hl_module_t *m, const char *comp, const char *name) {
  hl_computation_t *c = hl_module_find_computation(m, comp);
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  hl_instruction_t *i = hl_computation_find_instruction(c, name);
  CU_ASSERT_PTR_NOT_NULL_FATAL(i);
  return i;
}

//===----------------------------------------------------------------------===//
// The XLA-encoded fixture
//===----------------------------------------------------------------------===//

static void test_fixture_module(void) {
  hl_module_t *m = load_fixture();
  CU_ASSERT_STRING_EQUAL(m->name, "wire_fixture");
  CU_ASSERT_EQUAL(m->id, 5);
  CU_ASSERT_EQUAL(m->computation_count, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m->entry);
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  CU_ASSERT_EQUAL(m->entry->id, 2);
  CU_ASSERT_EQUAL(m->replica_count, 0);  // no device assignment in the file
  CU_ASSERT_EQUAL(m->num_partitions, 0);
  CU_ASSERT_STRING_EQUAL(m->source_path, "wire_fixture.hlo.pb");
  CU_ASSERT_EQUAL(m->entry->instruction_count, 17);
  CU_ASSERT_STRING_EQUAL(m->entry->root->name, "out");
  CU_ASSERT_EQUAL(m->entry->root->id, 116);
  CU_ASSERT_EQUAL(m->entry->parameter_count, 1);
  hl_computation_t *sum = hl_module_find_computation(m, "sum");
  CU_ASSERT_EQUAL(sum->id, 1);
  CU_ASSERT_EQUAL(sum->parameter_count, 2);
  CU_ASSERT_STRING_EQUAL(sum->root->name, "s");
  CU_ASSERT_EQUAL(sum->root->operand_count, 2);
  CU_ASSERT_PTR_EQUAL(sum->root->operands[0], sum->parameters[0]);
  CU_ASSERT_PTR_EQUAL(sum->root->operands[1], sum->parameters[1]);
  // Non-dense ids resolve to the right operands.
  hl_instruction_t *out = m->entry->root;
  CU_ASSERT_EQUAL(out->operand_count, 10);
  const char *names[] = {"x", "c_bf16", "c_s8", "c_pred", "c_c64", "c_u64", "c_f64",
                         "ar_old", "ag_list", "ar_iota"};
  for (int i = 0; i < 10; i++) CU_ASSERT_STRING_EQUAL(out->operands[i]->name, names[i]);
  hl_instruction_t *add1 = find(m, "main", "add1");
  CU_ASSERT_EQUAL(add1->opcode, HL_OP_ADD);
  CU_ASSERT_STRING_EQUAL(add1->operands[0]->name, "c_s32");
  CU_ASSERT_STRING_EQUAL(add1->operands[1]->name, "rb");
  // Operands precede users.
  for (int i = 0; i < m->entry->instruction_count; i++) {
    hl_instruction_t *inst = m->entry->instructions[i];
    CU_ASSERT_EQUAL(inst->index, i);
    for (int k = 0; k < inst->operand_count; k++) CU_ASSERT(inst->operands[k]->index < i);
  }
  hl_module_destroy(m);
}

static void test_fixture_parameter_and_attrs(void) {
  hl_module_t *m = load_fixture();
  hl_instruction_t *x = find(m, "main", "x");
  CU_ASSERT_EQUAL(x->opcode, HL_OP_PARAMETER);
  CU_ASSERT_EQUAL(x->id, 100);
  CU_ASSERT_EQUAL(x->shape.dtype, HL_F32);
  CU_ASSERT_EQUAL(x->shape.rank, 2);
  CU_ASSERT_EQUAL(x->shape.dims[0], 2);
  CU_ASSERT_EQUAL(x->shape.dims[1], 3);
  CU_ASSERT(x->shape.has_layout);
  CU_ASSERT_EQUAL(x->shape.minor_to_major[0], 0);  // column-major {0,1}
  CU_ASSERT_EQUAL(x->shape.minor_to_major[1], 1);
  CU_ASSERT(x->attrs.metadata.present);
  CU_ASSERT_STRING_EQUAL(x->attrs.metadata.op_name, "x_input");
  CU_ASSERT_PTR_NULL(x->attrs.metadata.op_type);

  hl_instruction_t *add1 = find(m, "main", "add1");
  CU_ASSERT_STRING_EQUAL(hl_instruction_frontend_attribute(add1, "_example_key"),
                         "example value");
  CU_ASSERT_EQUAL(add1->attrs.frontend_attributes.n, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(add1->attrs.sharding);
  CU_ASSERT_EQUAL(add1->attrs.sharding->type, HL_SHARDING_REPLICATED);
  CU_ASSERT_PTR_NULL(find(m, "main", "rb")->attrs.sharding);

  hl_instruction_t *rb = find(m, "main", "rb");
  CU_ASSERT_EQUAL(rb->opcode, HL_OP_BROADCAST);
  CU_ASSERT_EQUAL(rb->attrs.dimensions.n, 0);
  CU_ASSERT_EQUAL(find(m, "main", "r")->opcode, HL_OP_REPLICA_ID);
  CU_ASSERT_EQUAL(find(m, "main", "rs")->opcode, HL_OP_CONVERT);
  hl_module_destroy(m);
}

static void test_fixture_replica_groups(void) {
  hl_module_t *m = load_fixture();
  hl_computation_t *sum = hl_module_find_computation(m, "sum");
  // Field 49.
  hl_instruction_t *ar_old = find(m, "main", "ar_old");
  CU_ASSERT_EQUAL(ar_old->opcode, HL_OP_ALL_REDUCE);
  CU_ASSERT_EQUAL(ar_old->called_count, 1);
  CU_ASSERT_PTR_EQUAL(hl_instruction_to_apply(ar_old), sum);
  CU_ASSERT_EQUAL(ar_old->attrs.replica_groups.kind, HL_GROUPS_LIST);
  CU_ASSERT_EQUAL_FATAL(ar_old->attrs.replica_groups.group_count, 1);
  CU_ASSERT_EQUAL_FATAL(ar_old->attrs.replica_groups.groups[0].n, 2);
  CU_ASSERT_EQUAL(ar_old->attrs.replica_groups.groups[0].v[0], 0);
  CU_ASSERT_EQUAL(ar_old->attrs.replica_groups.groups[0].v[1], 1);
  CU_ASSERT_EQUAL(ar_old->attrs.channel_id, 0);
  // Field 87.
  hl_instruction_t *ag = find(m, "main", "ag_list");
  CU_ASSERT_EQUAL(ag->opcode, HL_OP_ALL_GATHER);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.kind, HL_GROUPS_LIST);
  CU_ASSERT_EQUAL_FATAL(ag->attrs.replica_groups.group_count, 1);
  CU_ASSERT_EQUAL_FATAL(ag->attrs.replica_groups.groups[0].n, 2);
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.groups[0].v[1], 1);
  CU_ASSERT_EQUAL_FATAL(ag->attrs.dimensions.n, 1);
  CU_ASSERT_EQUAL(ag->attrs.dimensions.v[0], 0);
  // Field 92: [1,2]<=[2].
  hl_instruction_t *ar_iota = find(m, "main", "ar_iota");
  const hl_replica_groups_t *g = &ar_iota->attrs.replica_groups;
  CU_ASSERT_EQUAL(g->kind, HL_GROUPS_IOTA);
  CU_ASSERT_EQUAL(g->iota_num_groups, 1);
  CU_ASSERT_EQUAL(g->iota_group_size, 2);
  CU_ASSERT_EQUAL_FATAL(g->iota_reshape_dims.n, 1);
  CU_ASSERT_EQUAL(g->iota_reshape_dims.v[0], 2);
  CU_ASSERT_EQUAL(g->iota_transpose_perm.n, 0);
  CU_ASSERT_PTR_EQUAL(hl_instruction_to_apply(ar_iota), sum);
  hl_module_destroy(m);
}

static void test_fixture_constants(void) {
  hl_module_t *m = load_fixture();
  hl_literal_t *l = find(m, "main", "c_bf16")->attrs.literal;
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  CU_ASSERT_EQUAL(l->shape.dtype, HL_BF16);
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 0), 1.0);
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 1), -2.5);
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 2), 0.15625);

  l = find(m, "main", "c_s8")->attrs.literal;
  CU_ASSERT_EQUAL(l->shape.dtype, HL_S8);
  int64_t s8[] = {-1, 2, -128, 127};
  for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(hl_literal_get_s64(l, i), s8[i]);

  l = find(m, "main", "c_pred")->attrs.literal;
  CU_ASSERT_EQUAL(l->shape.dtype, HL_PRED);
  CU_ASSERT_EQUAL(l->byte_size, 3);
  const uint8_t *pb = l->data;
  CU_ASSERT(pb[0] == 1 && pb[1] == 0 && pb[2] == 1);

  l = find(m, "main", "c_c64")->attrs.literal;
  CU_ASSERT_EQUAL(l->shape.dtype, HL_C64);
  const float *cf = l->data;
  CU_ASSERT(cf[0] == 1.0f && cf[1] == 2.0f && cf[2] == 3.0f && cf[3] == -4.0f);

  l = find(m, "main", "c_u64")->attrs.literal;
  CU_ASSERT_EQUAL(hl_literal_get_u64(l, 0), UINT64_MAX);

  l = find(m, "main", "c_f64")->attrs.literal;
  CU_ASSERT_EQUAL(((const double *)l->data)[0], 0.1);
  CU_ASSERT_EQUAL(((const double *)l->data)[1], -1e300);

  // Stored column-major (1,3,2,4); row-major in memory.
  l = find(m, "main", "c_s32")->attrs.literal;
  CU_ASSERT_EQUAL(l->shape.dtype, HL_S32);
  const int32_t *s32 = l->data;
  CU_ASSERT(s32[0] == 1 && s32[1] == 2 && s32[2] == 3 && s32[3] == 4);
  hl_module_destroy(m);
}

static void test_fixture_shared_copy_matches(void) {
  size_t a_n, b_n;
  uint8_t *a = hl_test_read_file(FIXTURE, &a_n);
  uint8_t *b = hl_test_read_file(SHARED_FIXTURE, &b_n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a);
  if (b) {  // shared/ is beside the repo in CI; skip the comparison otherwise
    CU_ASSERT_EQUAL(a_n, b_n);
    CU_ASSERT(a_n == b_n && memcmp(a, b, a_n) == 0);
  }
  free(a);
  free(b);
}

//===----------------------------------------------------------------------===//
// Built messages
//===----------------------------------------------------------------------===//

// A small module: computation "main" (id 7): p0 = f32[2] parameter(0),
// p1 = f32[2] parameter(1), add = add(p0, p1); ids are large and non-dense.
typedef struct built {
  Xla__HloModuleProto module;
  Xla__HloComputationProto comp, comp2;
  Xla__HloComputationProto *comps[2];
  Xla__HloInstructionProto inst[4];
  Xla__HloInstructionProto *insts[4];
  Xla__ShapeProto shape;
  Xla__LayoutProto layout;
  int64_t dims[1];
  int64_t m2m[1];
  int64_t add_ops[2];
} built_t;

static void build(built_t *b) {
  memset(b, 0, sizeof(*b));
  xla__hlo_module_proto__init(&b->module);
  xla__hlo_computation_proto__init(&b->comp);
  xla__shape_proto__init(&b->shape);
  xla__layout_proto__init(&b->layout);
  b->dims[0] = 2;
  b->m2m[0] = 0;
  b->shape.element_type = XLA__PRIMITIVE_TYPE__F32;
  b->shape.n_dimensions = 1;
  b->shape.dimensions = b->dims;
  b->layout.n_minor_to_major = 1;
  b->layout.minor_to_major = b->m2m;
  b->shape.layout = &b->layout;
  const char *names[] = {"p0", "p1", "add.3"};
  const char *ops[] = {"parameter", "parameter", "add"};
  int64_t ids[] = {1000, 2000000000000LL, 42};
  for (int i = 0; i < 3; i++) {
    xla__hlo_instruction_proto__init(&b->inst[i]);
    b->inst[i].name = (char *)names[i];
    b->inst[i].opcode = (char *)ops[i];
    b->inst[i].shape = &b->shape;
    b->inst[i].id = ids[i];
    b->insts[i] = &b->inst[i];
  }
  b->inst[1].parameter_number = 1;
  b->add_ops[0] = 1000;
  b->add_ops[1] = 2000000000000LL;
  b->inst[2].n_operand_ids = 2;
  b->inst[2].operand_ids = b->add_ops;
  b->comp.name = "main";
  b->comp.id = 7;
  b->comp.root_id = 42;
  b->comp.n_instructions = 3;
  b->comp.instructions = b->insts;
  b->comps[0] = &b->comp;
  b->module.name = "built";
  b->module.n_computations = 1;
  b->module.computations = b->comps;
  b->module.entry_computation_id = 7;
}

static uint8_t *pack_module(const Xla__HloModuleProto *m, size_t *n) {
  *n = xla__hlo_module_proto__get_packed_size(m);
  uint8_t *buf = malloc(*n ? *n : 1);
  xla__hlo_module_proto__pack(m, buf);
  return buf;
}

static hl_status_t decode_module(const Xla__HloModuleProto *mp, hl_module_t **out) {
  size_t n = 0;
  uint8_t *buf = pack_module(mp, &n);
  hl_status_t st = hl_proto_decode(buf, n, HL_PROTO_MODULE_PROTO, "built.pb", out, NULL, NULL);
  free(buf);
  return st;
}

static void test_built_module_decodes(void) {
  built_t b;
  build(&b);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  CU_ASSERT_EQUAL(m->entry->instruction_count, 3);
  hl_instruction_t *add = m->entry->root;
  CU_ASSERT_STRING_EQUAL(add->name, "add.3");
  CU_ASSERT_EQUAL(add->attrs.feature_group_count, 1);
  CU_ASSERT_EQUAL(add->attrs.batch_group_count, 1);
  CU_ASSERT_EQUAL(m->entry->parameters[1]->id, 2000000000000LL);
  CU_ASSERT_PTR_EQUAL(add->operands[1], m->entry->parameters[1]);
  hl_module_destroy(m);
}

static void test_unknown_operand_id(void) {
  built_t b;
  build(&b);
  b.add_ops[1] = 77;
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m),
                           "computation 'main', instruction 'add.3': operand_ids[1] = 77 names "
                           "no instruction of this computation");
  CU_ASSERT_PTR_NULL(m);
}

static void test_unknown_control_and_called_ids(void) {
  built_t b;
  build(&b);
  int64_t pred = 5;
  b.inst[2].n_control_predecessor_ids = 1;
  b.inst[2].control_predecessor_ids = &pred;
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "control_predecessor_ids[0] = 5");
  build(&b);
  int64_t callee = 99;
  b.inst[2].n_called_computation_ids = 1;
  b.inst[2].called_computation_ids = &callee;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "called_computation_ids[0] = 99");
  build(&b);
  b.comp.root_id = 12345;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "root_id (field 6) = 12345");
}

static void test_out_of_order_instructions_are_sorted(void) {
  built_t b;
  build(&b);
  // add first, then its operands, plus a control edge p1 -> p0.
  b.insts[0] = &b.inst[2];
  b.insts[1] = &b.inst[1];
  b.insts[2] = &b.inst[0];
  int64_t pred = 2000000000000LL;
  b.inst[0].n_control_predecessor_ids = 1;
  b.inst[0].control_predecessor_ids = &pred;
  hl_module_t *m = NULL;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  hl_computation_t *c = m->entry;
  CU_ASSERT_STRING_EQUAL(c->instructions[0]->name, "p1");
  CU_ASSERT_STRING_EQUAL(c->instructions[1]->name, "p0");
  CU_ASSERT_STRING_EQUAL(c->instructions[2]->name, "add.3");
  CU_ASSERT_EQUAL(c->instructions[1]->control_predecessor_count, 1);
  CU_ASSERT_PTR_EQUAL(c->instructions[1]->control_predecessors[0], c->instructions[0]);
  hl_module_destroy(m);
  // A cycle p0 -> add -> p0 is an error.
  int64_t add_id = 42;
  b.inst[0].control_predecessor_ids = &add_id;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "cycle");
}

static void test_entry_selection(void) {
  built_t b;
  build(&b);
  // A second computation "other" (id 9) placed last, a copy of main.
  b.comp2 = b.comp;
  b.comp2.name = "other";
  b.comp2.id = 9;
  b.comps[1] = &b.comp2;
  b.module.n_computations = 2;
  hl_module_t *m = NULL;
  // By id, even though "other" is last and the name says "other".
  b.module.entry_computation_id = 7;
  b.module.entry_computation_name = "other";
  HL_ASSERT_OK(decode_module(&b.module, &m));
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  hl_module_destroy(m);
  // Unknown id: by name.
  b.module.entry_computation_id = 1234;
  b.module.entry_computation_name = "main";
  HL_ASSERT_OK(decode_module(&b.module, &m));
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  hl_module_destroy(m);
  // Neither: the last computation.
  b.module.entry_computation_name = "";
  HL_ASSERT_OK(decode_module(&b.module, &m));
  CU_ASSERT_STRING_EQUAL(m->entry->name, "other");
  hl_module_destroy(m);
  // Duplicate computation ids are an error.
  b.comp2.id = 7;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "share id 7");
}

static void test_attribute_defaults_and_strings(void) {
  built_t b;
  build(&b);
  Xla__Window win = XLA__WINDOW__INIT;
  Xla__WindowDimension wd = XLA__WINDOW_DIMENSION__INIT, *wds[1] = {&wd};
  wd.size = 3;
  wd.padding_low = -1;  // negative padding crops
  win.n_dimensions = 1;
  win.dimensions = wds;
  b.inst[2].window = &win;
  Xla__HloInstructionProto__SliceDimensions sd = XLA__HLO_INSTRUCTION_PROTO__SLICE_DIMENSIONS__INIT;
  Xla__HloInstructionProto__SliceDimensions *sds[1] = {&sd};
  sd.start = 1;
  sd.limit = 2;
  b.inst[2].n_slice_dimensions = 1;
  b.inst[2].slice_dimensions = sds;
  b.inst[2].comparison_direction = "GE";
  b.inst[2].comparison_type = "TOTALORDER";
  b.inst[2].all_reduce_id = 6;  // legacy channel id
  b.inst[2].custom_call_target = "";
  Xla__DeviceAssignmentProto da = XLA__DEVICE_ASSIGNMENT_PROTO__INIT;
  da.replica_count = 4;
  da.computation_count = 2;
  b.module.device_assignment = &da;
  hl_module_t *m = NULL;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  const hl_attrs_t *a = &m->entry->root->attrs;
  CU_ASSERT(a->has_window);
  CU_ASSERT_EQUAL_FATAL(a->window.n, 1);
  CU_ASSERT_EQUAL(a->window.dims[0].size, 3);
  CU_ASSERT_EQUAL(a->window.dims[0].stride, 1);
  CU_ASSERT_EQUAL(a->window.dims[0].window_dilation, 1);
  CU_ASSERT_EQUAL(a->window.dims[0].base_dilation, 1);
  CU_ASSERT_EQUAL(a->window.dims[0].padding_low, -1);
  CU_ASSERT_EQUAL_FATAL(a->slice_count, 1);
  CU_ASSERT_EQUAL(a->slice_dimensions[0].stride, 1);
  CU_ASSERT_EQUAL(a->comparison_direction, HL_CMP_GE);
  CU_ASSERT_EQUAL(a->comparison_type, HL_CMPTYPE_TOTALORDER);
  CU_ASSERT_EQUAL(a->channel_id, 6);
  CU_ASSERT_PTR_NULL(a->custom_call_target);
  CU_ASSERT_EQUAL(m->replica_count, 4);
  CU_ASSERT_EQUAL(m->num_partitions, 2);
  hl_module_destroy(m);

  b.inst[2].comparison_direction = "SIDEWAYS";
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "comparison_direction (field 63)");
  b.inst[2].comparison_direction = "LT";
  b.inst[2].comparison_type = "FUZZY";
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "comparison_type (field 72)");
}

static void test_legacy_compare_opcode(void) {
  built_t b;
  build(&b);
  b.inst[2].opcode = "less-than";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  CU_ASSERT_EQUAL(m->entry->root->opcode, HL_OP_COMPARE);
  CU_ASSERT_EQUAL(m->entry->root->attrs.comparison_direction, HL_CMP_LT);
  hl_module_destroy(m);
  b.inst[2].opcode = "no-such-op";
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "opcode (field 2) 'no-such-op'");
}

static void test_replica_group_precedence(void) {
  built_t b;
  build(&b);
  Xla__CollectiveDeviceListProto cdl = XLA__COLLECTIVE_DEVICE_LIST_PROTO__INIT;
  Xla__IotaReplicaGroupListProto iota = XLA__IOTA_REPLICA_GROUP_LIST_PROTO__INIT;
  int64_t rd[2] = {2, 2};
  int32_t perm[2] = {1, 0};
  iota.num_replica_groups = 2;
  iota.num_devices_per_group = 2;
  iota.n_iota_reshape_dims = 2;
  iota.iota_reshape_dims = rd;
  iota.n_iota_transpose_perm = 2;
  iota.iota_transpose_perm = perm;
  cdl.iota_replica_group_list = &iota;  // older XLA: iota inside field 87
  b.inst[2].collective_device_list = &cdl;
  hl_module_t *m = NULL;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  const hl_replica_groups_t *g = &m->entry->root->attrs.replica_groups;
  CU_ASSERT_EQUAL(g->kind, HL_GROUPS_IOTA);
  CU_ASSERT_EQUAL(g->iota_num_groups, 2);
  CU_ASSERT_EQUAL_FATAL(g->iota_transpose_perm.n, 2);
  CU_ASSERT_EQUAL(g->iota_transpose_perm.v[0], 1);
  hl_i64_list_t *groups;
  int count;
  HL_ASSERT_OK(hl_replica_groups_expand(g, &groups, &count));
  // [2,2]<=[2,2]T(1,0) = {{0,2},{1,3}}
  CU_ASSERT_EQUAL_FATAL(count, 2);
  CU_ASSERT(groups[0].v[0] == 0 && groups[0].v[1] == 2 && groups[1].v[0] == 1 &&
            groups[1].v[1] == 3);
  for (int i = 0; i < count; i++) hl_i64_list_deinit(&groups[i]);
  hl_free(groups);
  hl_module_destroy(m);

  // Field 49 wins over 87.
  Xla__ReplicaGroup rg = XLA__REPLICA_GROUP__INIT, *rgs[1] = {&rg};
  int64_t ids[3] = {3, 1, 2};
  rg.n_replica_ids = 3;
  rg.replica_ids = ids;
  b.inst[2].n_replica_groups = 1;
  b.inst[2].replica_groups = rgs;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  g = &m->entry->root->attrs.replica_groups;
  CU_ASSERT_EQUAL(g->kind, HL_GROUPS_LIST);
  CU_ASSERT_EQUAL_FATAL(g->group_count, 1);
  CU_ASSERT(g->groups[0].n == 3 && g->groups[0].v[0] == 3 && g->groups[0].v[2] == 2);
  hl_module_destroy(m);

  // Field 93 in use: a clear error.
  b.inst[2].n_replica_groups = 0;
  b.inst[2].collective_device_list = NULL;
  Xla__MeshAxesReplicaGroupListProto mesh = XLA__MESH_AXES_REPLICA_GROUP_LIST_PROTO__INIT;
  Xla__AxisRefProto axis = XLA__AXIS_REF_PROTO__INIT, *axes[1] = {&axis};
  mesh.n_axes = 1;
  mesh.axes = axes;
  b.inst[2].mesh_axes_replica_group_list = &mesh;
  hl_status_t st = decode_module(&b.module, &m);
  CU_ASSERT_EQUAL(hl_status_code(st), HL_UNIMPLEMENTED);
  HL_ASSERT_ERROR_CONTAINS(st, "mesh_axes_replica_group_list (field 93)");
}

static void test_bad_shapes(void) {
  built_t b;
  build(&b);
  hl_module_t *m = NULL;
  b.shape.element_type = (Xla__PrimitiveType)77;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "invalid element type 77");
  build(&b);
  int64_t dims[17];
  for (int i = 0; i < 17; i++) dims[i] = 1;
  b.shape.n_dimensions = 17;
  b.shape.dimensions = dims;
  b.shape.layout = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "rank 17 exceeds");
  build(&b);
  b.m2m[0] = 1;  // not a permutation of {0}
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "not a permutation");
  build(&b);
  b.dims[0] = -3;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "negative size");
  build(&b);
  int64_t huge[3] = {1LL << 40, 1LL << 40, 0};  // zero elements, but the product overflows
  b.shape.n_dimensions = 3;
  b.shape.dimensions = huge;
  b.shape.layout = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "product overflows");
  build(&b);
  b.inst[2].shape = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "instruction 'add.3': shape (field 3)");
  build(&b);
  b.inst[1].parameter_number = 5;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "parameter number 5");
}

static void test_constant_checks(void) {
  built_t b;
  build(&b);
  Xla__LiteralProto lit = XLA__LITERAL_PROTO__INIT;
  float vals[3] = {1, 2, 3};
  lit.shape = &b.shape;
  lit.n_f32s = 3;  // f32[2] needs 2
  lit.f32s = vals;
  b.inst[0].opcode = "constant";
  b.inst[0].literal = &lit;
  hl_module_t *m = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "instruction 'p0'");
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "needs 2 elements");
  lit.n_f32s = 2;
  b.inst[1].parameter_number = 0;
  HL_ASSERT_OK(decode_module(&b.module, &m));
  hl_literal_t *l = m->entry->instructions[0]->attrs.literal;
  CU_ASSERT_EQUAL(hl_literal_get_f64(l, 1), 2.0);
  hl_module_destroy(m);
  b.inst[0].literal = NULL;
  HL_ASSERT_ERROR_CONTAINS(decode_module(&b.module, &m), "constant without a literal");
}

//===----------------------------------------------------------------------===//
// Snapshots and detection
//===----------------------------------------------------------------------===//

static void decode_any(const uint8_t *d, size_t n);

static uint8_t *pack_snapshot(built_t *b, size_t *n) {
  Xla__HloProto hp = XLA__HLO_PROTO__INIT;
  hp.hlo_module = &b->module;
  Xla__HloSnapshot snap = XLA__HLO_SNAPSHOT__INIT;
  snap.hlo = &hp;
  static Xla__LiteralProto args[2];
  static Xla__LiteralProto *argp[2];
  static float a0[2] = {1.5f, -2};
  static float a1[2] = {10, 20};
  for (int i = 0; i < 2; i++) {
    xla__literal_proto__init(&args[i]);
    args[i].shape = &b->shape;
    args[i].n_f32s = 2;
    args[i].f32s = i ? a1 : a0;
    argp[i] = &args[i];
  }
  snap.n_arguments = 2;
  snap.arguments = argp;
  snap.execution_platform = "Host";
  *n = xla__hlo_snapshot__get_packed_size(&snap);
  uint8_t *buf = malloc(*n);
  xla__hlo_snapshot__pack(&snap, buf);
  return buf;
}

static void test_snapshot_arguments(void) {
  built_t b;
  build(&b);
  size_t n = 0;
  uint8_t *buf = pack_snapshot(&b, &n);
  hl_proto_kind_t kind;
  HL_ASSERT_OK(hl_proto_detect_kind(buf, n, &kind));
  CU_ASSERT_EQUAL(kind, HL_PROTO_SNAPSHOT);
  hl_module_t *m = NULL;
  hl_literal_t **args = NULL;
  int nargs = 0;
  HL_ASSERT_OK(hl_proto_decode(buf, n, HL_PROTO_SNAPSHOT, "snap.pb", &m, &args, &nargs));
  CU_ASSERT_EQUAL_FATAL(nargs, 2);
  CU_ASSERT_EQUAL(hl_literal_get_f64(args[0], 0), 1.5);
  CU_ASSERT_EQUAL(hl_literal_get_f64(args[0], 1), -2.0);
  CU_ASSERT_EQUAL(hl_literal_get_f64(args[1], 1), 20.0);
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  for (int i = 0; i < nargs; i++) hl_literal_release(args[i]);
  hl_free(args);
  hl_module_destroy(m);
  // Every prefix decodes to a status or a module without crashing.
  for (size_t len = 0; len < n; len++) {
    uint8_t *cut = malloc(len ? len : 1);
    memcpy(cut, buf, len);
    decode_any(cut, len);
    free(cut);
  }
  free(buf);
}

static void test_detect_kinds(void) {
  size_t n = 0;
  uint8_t *fix = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fix);
  hl_proto_kind_t kind;
  HL_ASSERT_OK(hl_proto_detect_kind(fix, n, &kind));
  CU_ASSERT_EQUAL(kind, HL_PROTO_HLO_PROTO);
  // The bare module inside the fixture (field 1).
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, n, fix);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
  size_t mn;
  uint8_t *mod = pack_module(hp->hlo_module, &mn);
  HL_ASSERT_OK(hl_proto_detect_kind(mod, mn, &kind));
  CU_ASSERT_EQUAL(kind, HL_PROTO_MODULE_PROTO);
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_proto_decode(mod, mn, HL_PROTO_MODULE_PROTO, "m.pb", &m, NULL, NULL));
  CU_ASSERT_STRING_EQUAL(m->entry->name, "main");
  hl_module_destroy(m);
  // Decoding as the wrong kind fails cleanly.
  hl_status_t st = hl_proto_decode(mod, mn, HL_PROTO_SNAPSHOT, "m.pb", &m, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL(st);
  hl_status_free(st);
  free(mod);
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(fix);
  // Not a proto at all.
  const char *junk = "hello, world: definitely not a protobuf";
  HL_ASSERT_ERROR_CONTAINS(hl_proto_detect_kind((const uint8_t *)junk, strlen(junk), &kind),
                           "neither");
  HL_ASSERT_ERROR_CONTAINS(hl_proto_detect_kind(NULL, 0, &kind), "neither");
}

//===----------------------------------------------------------------------===//
// Robustness
//===----------------------------------------------------------------------===//

static void decode_any(const uint8_t *d, size_t n) {
  for (int k = 0; k < 3; k++) {
    hl_module_t *m = NULL;
    hl_literal_t **args = NULL;
    int nargs = 0;
    hl_status_t st = hl_proto_decode(d, n, (hl_proto_kind_t)k, "x.pb", &m, &args, &nargs);
    if (st) {
      CU_ASSERT_PTR_NULL(m);
      hl_status_free(st);
    }
    for (int i = 0; i < nargs; i++) hl_literal_release(args[i]);
    hl_free(args);
    hl_module_destroy(m);
  }
  hl_proto_kind_t kind;
  hl_status_free(hl_proto_detect_kind(d, n, &kind));
}

static void test_every_truncated_prefix(void) {
  size_t n = 0;
  uint8_t *fix = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fix);
  int errors = 0;
  for (size_t len = 0; len < n; len++) {
    uint8_t *copy = malloc(len ? len : 1);  // exact size, so ASan sees overreads
    memcpy(copy, fix, len);
    hl_module_t *m = NULL;
    hl_status_t st = hl_proto_decode(copy, len, HL_PROTO_HLO_PROTO, "t.pb", &m, NULL, NULL);
    if (st) errors++;
    hl_status_free(st);
    hl_module_destroy(m);
    decode_any(copy, len);
    free(copy);
  }
  // A strict prefix of the fixture is never a complete program (the last
  // bytes belong to host_program_shape, the module's last field, nested
  // inside field 1), so every one fails.
  CU_ASSERT_EQUAL(errors, (int)n);
  free(fix);
}

static void test_seeded_corruptions(void) {
  size_t n = 0;
  uint8_t *fix = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fix);
  uint32_t seed = 12345;
  for (int iter = 0; iter < 400; iter++) {
    uint8_t *copy = malloc(n);
    memcpy(copy, fix, n);
    int flips = 1 + iter % 4;
    for (int k = 0; k < flips; k++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % n;
      seed = seed * 1103515245u + 12345u;
      copy[pos] = (iter & 1) ? (uint8_t)(seed >> 16) : (uint8_t)(copy[pos] ^ (1u << ((seed >> 16) % 8)));
    }
    decode_any(copy, n);
    free(copy);
  }
  free(fix);
}

static void test_deep_nesting_rejected(void) {
  // 200 nested tuple shapes inside a LiteralProto: field 1 (shape) then
  // field 4 (tuple_shapes) repeatedly. Built inside-out.
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap), *tmp = malloc(cap);
  for (int i = 0; i < 200; i++) {
    tmp[0] = 0x22;  // ShapeProto.tuple_shapes, LEN
    tmp[1] = (uint8_t)(len < 128 ? len : (len & 0x7f) | 0x80);
    size_t hdr = 2;
    if (len >= 128) tmp[hdr++] = (uint8_t)(len >> 7);
    memcpy(tmp + hdr, buf, len);
    len += hdr;
    memcpy(buf, tmp, len);
  }
  tmp[0] = 0x0a;  // LiteralProto.shape
  tmp[1] = (uint8_t)((len & 0x7f) | 0x80);
  tmp[2] = (uint8_t)(len >> 7);
  memcpy(tmp + 3, buf, len);
  hl_literal_t *lit = NULL;
  HL_ASSERT_ERROR_CONTAINS(hl_proto_decode_literal(tmp, len + 3, &lit), "nested more than");
  free(buf);
  free(tmp);
}

static void test_allocation_failures(void) {
  size_t n = 0;
  uint8_t *fix = hl_test_read_file(FIXTURE, &n);
  CU_ASSERT_PTR_NOT_NULL_FATAL(fix);
  bool succeeded = false;
  for (long k = 0; k < 5000 && !succeeded; k++) {
    hl_alloc_fail_after(k);
    hl_module_t *m = NULL;
    hl_status_t st = hl_proto_decode(fix, n, HL_PROTO_HLO_PROTO, "oom.pb", &m, NULL, NULL);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_PTR_NULL(m);
      hl_status_free(st);
    } else {
      succeeded = true;
      hl_module_destroy(m);
    }
  }
  CU_ASSERT(succeeded);
  free(fix);
}

static CU_TestInfo tests[] = {
    {"fixture_module", test_fixture_module},
    {"fixture_parameter_and_attrs", test_fixture_parameter_and_attrs},
    {"fixture_replica_groups", test_fixture_replica_groups},
    {"fixture_constants", test_fixture_constants},
    {"fixture_shared_copy_matches", test_fixture_shared_copy_matches},
    {"built_module_decodes", test_built_module_decodes},
    {"unknown_operand_id", test_unknown_operand_id},
    {"unknown_control_and_called_ids", test_unknown_control_and_called_ids},
    {"out_of_order_instructions_are_sorted", test_out_of_order_instructions_are_sorted},
    {"entry_selection", test_entry_selection},
    {"attribute_defaults_and_strings", test_attribute_defaults_and_strings},
    {"legacy_compare_opcode", test_legacy_compare_opcode},
    {"replica_group_precedence", test_replica_group_precedence},
    {"bad_shapes", test_bad_shapes},
    {"constant_checks", test_constant_checks},
    {"snapshot_arguments", test_snapshot_arguments},
    {"detect_kinds", test_detect_kinds},
    {"every_truncated_prefix", test_every_truncated_prefix},
    {"seeded_corruptions", test_seeded_corruptions},
    {"deep_nesting_rejected", test_deep_nesting_rejected},
    {"allocation_failures", test_allocation_failures},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("proto_loader", tests)
