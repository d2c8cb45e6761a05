// Module IR -> HloProto (runtime/proto/proto_writer.c). The encoded bytes are
// checked with protobuf-c's own unpacker (independent of the loader) and by
// round trips through the loader.
// hl-test-libs: hl_proto hl_text
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.pb-c.h"
#include "runtime/base/alloc.h"
#include "runtime/proto/proto_io.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"
#include "proto_test_util.h"
#include "test_util.h"


static hl_module_t *round_trip(const hl_module_t *m, uint8_t **bytes, size_t *n) {
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(m, bytes, n));
  hl_module_t *back = NULL;
  HL_ASSERT_OK(hl_proto_decode(*bytes, *n, HL_PROTO_HLO_PROTO, "rt", &back, NULL, NULL));
  return back;
}

static void test_fixture_round_trip_is_stable(void) {
  hl_module_t *m = load_fixture();
  uint8_t *a, *b, *c;
  size_t an, bn, cn;
  hl_module_t *back = round_trip(m, &a, &an);
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(back, &b, &bn));
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(m, &c, &cn));
  CU_ASSERT_EQUAL(an, bn);
  CU_ASSERT(an == bn && memcmp(a, b, an) == 0);  // decode(encode(m)) re-encodes identically
  CU_ASSERT(an == cn && memcmp(a, c, an) == 0);  // deterministic
  hl_proto_kind_t kind;
  HL_ASSERT_OK(hl_proto_detect_kind(a, an, &kind));
  CU_ASSERT_EQUAL(kind, HL_PROTO_HLO_PROTO);

  // The round-tripped module carries the same program.
  CU_ASSERT_STRING_EQUAL(back->name, "wire_fixture");
  CU_ASSERT_EQUAL(back->id, 5);
  CU_ASSERT_STRING_EQUAL(back->entry->name, "main");
  CU_ASSERT_EQUAL(back->entry->id, 2);
  CU_ASSERT_EQUAL(back->replica_count, 0);
  hl_instruction_t *x = hl_computation_find_instruction(back->entry, "x");
  CU_ASSERT(x->shape.has_layout && x->shape.minor_to_major[0] == 0);
  CU_ASSERT_STRING_EQUAL(x->attrs.metadata.op_name, "x_input");
  hl_instruction_t *cs = hl_computation_find_instruction(back->entry, "c_s32");
  const int32_t *v = cs->attrs.literal->data;
  CU_ASSERT(v[0] == 1 && v[1] == 2 && v[2] == 3 && v[3] == 4);
  hl_instruction_t *iota = hl_computation_find_instruction(back->entry, "ar_iota");
  CU_ASSERT_EQUAL(iota->attrs.replica_groups.kind, HL_GROUPS_IOTA);
  CU_ASSERT_EQUAL(iota->attrs.replica_groups.iota_group_size, 2);
  hl_instruction_t *ag = hl_computation_find_instruction(back->entry, "ag_list");
  CU_ASSERT_EQUAL(ag->attrs.replica_groups.kind, HL_GROUPS_LIST);
  for (int i = 0; i < back->entry->instruction_count; i++) {
    CU_ASSERT_EQUAL(back->entry->instructions[i]->id, m->entry->instructions[i]->id);
    CU_ASSERT_STRING_EQUAL(back->entry->instructions[i]->name, m->entry->instructions[i]->name);
    CU_ASSERT(hl_shape_equal(&back->entry->instructions[i]->shape,
                             &m->entry->instructions[i]->shape));
  }
  for (int i = 0; i < 7; i++) {
    hl_instruction_t *orig = m->entry->root->operands[i];
    hl_instruction_t *now = back->entry->root->operands[i];
    if (orig->attrs.literal) CU_ASSERT(hl_literal_equal(orig->attrs.literal, now->attrs.literal));
  }
  hl_module_destroy(back);
  hl_module_destroy(m);
  free(a);
  free(b);
  free(c);
}

static void test_fixture_encoding_at_wire_level(void) {
  hl_module_t *m = load_fixture();
  uint8_t *a;
  size_t an;
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(m, &a, &an));
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, an, a);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
  const Xla__HloModuleProto *mp = hp->hlo_module;
  CU_ASSERT_PTR_NOT_NULL_FATAL(mp);
  CU_ASSERT_STRING_EQUAL(mp->name, "wire_fixture");
  CU_ASSERT_STRING_EQUAL(mp->entry_computation_name, "main");
  CU_ASSERT_EQUAL(mp->entry_computation_id, 2);
  CU_ASSERT_PTR_NULL(mp->device_assignment);  // counts unknown: nothing written
  CU_ASSERT_PTR_NULL(mp->schedule);
  // host_program_shape: f32[2,3]{0,1} -> 10-tuple.
  CU_ASSERT_PTR_NOT_NULL_FATAL(mp->host_program_shape);
  CU_ASSERT_EQUAL_FATAL(mp->host_program_shape->n_parameters, 1);
  const Xla__ShapeProto *p0 = mp->host_program_shape->parameters[0];
  CU_ASSERT_EQUAL(p0->element_type, XLA__PRIMITIVE_TYPE__F32);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p0->layout);
  CU_ASSERT(p0->layout->n_minor_to_major == 2 && p0->layout->minor_to_major[0] == 0);
  CU_ASSERT_STRING_EQUAL(mp->host_program_shape->parameter_names[0], "x");
  CU_ASSERT_EQUAL(mp->host_program_shape->result->element_type, XLA__PRIMITIVE_TYPE__TUPLE);
  CU_ASSERT_EQUAL(mp->host_program_shape->result->n_tuple_shapes, 10);
  CU_ASSERT_EQUAL_FATAL(mp->n_computations, 2);
  CU_ASSERT_EQUAL(mp->computations[1]->root_id, 116);
  CU_ASSERT_EQUAL(mp->computations[0]->program_shape->n_parameters, 2);
  // The column-major constant is written row-major with the default layout.
  const Xla__HloInstructionProto *cs = hl_test_find_instruction_proto(mp, "c_s32");
  CU_ASSERT_PTR_NOT_NULL_FATAL(cs);
  CU_ASSERT_PTR_NOT_NULL_FATAL(cs->literal);
  const Xla__LiteralProto *lit = cs->literal;
  CU_ASSERT_EQUAL_FATAL(lit->n_s32s, 4);
  CU_ASSERT(lit->s32s[0] == 1 && lit->s32s[1] == 2 && lit->s32s[2] == 3 && lit->s32s[3] == 4);
  CU_ASSERT_PTR_NOT_NULL_FATAL(lit->shape->layout);
  CU_ASSERT(lit->shape->layout->minor_to_major[0] == 1 && lit->shape->layout->minor_to_major[1] == 0);
  // The instruction shape keeps its own layout.
  CU_ASSERT(cs->shape->layout->minor_to_major[0] == 0);
  // bf16 in a bytes field, little-endian.
  const Xla__HloInstructionProto *cb = hl_test_find_instruction_proto(mp, "c_bf16");
  CU_ASSERT_EQUAL_FATAL(cb->literal->bf16s.len, 6);
  CU_ASSERT(memcmp(cb->literal->bf16s.data, "\x80\x3f\x20\xc0\x20\x3e", 6) == 0);
  // preds as repeated bools.
  const Xla__HloInstructionProto *cp = hl_test_find_instruction_proto(mp, "c_pred");
  CU_ASSERT(cp->literal->n_preds == 3 && cp->literal->preds[0] && !cp->literal->preds[1]);
  // Scalar literal shapes carry an (empty) layout; explicit groups go to 49,
  // iota groups into 87.2, operands by id.
  const Xla__HloInstructionProto *ar = hl_test_find_instruction_proto(mp, "ar_old");
  CU_ASSERT_EQUAL(ar->n_replica_groups, 1);
  CU_ASSERT_PTR_NULL(ar->collective_device_list);
  CU_ASSERT_EQUAL(ar->n_called_computation_ids, 1);
  CU_ASSERT_EQUAL(ar->called_computation_ids[0], 1);
  const Xla__HloInstructionProto *ai = hl_test_find_instruction_proto(mp, "ar_iota");
  CU_ASSERT_PTR_NOT_NULL_FATAL(ai->collective_device_list);
  CU_ASSERT_PTR_NOT_NULL_FATAL(ai->collective_device_list->iota_replica_group_list);
  CU_ASSERT_EQUAL(ai->collective_device_list->iota_replica_group_list->num_devices_per_group, 2);
  const Xla__HloInstructionProto *add1 = hl_test_find_instruction_proto(mp, "add1");
  CU_ASSERT(add1->n_operand_ids == 2 && add1->operand_ids[0] == 107 && add1->operand_ids[1] == 110);
  CU_ASSERT_PTR_NOT_NULL_FATAL(add1->frontend_attributes);
  CU_ASSERT_STRING_EQUAL(add1->frontend_attributes->map[0]->key, "_example_key");
  CU_ASSERT_PTR_NOT_NULL(add1->sharding);
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(a);
  hl_module_destroy(m);
}

static void test_device_assignment(void) {
  hl_module_t *m = load_fixture();
  m->replica_count = 2;
  m->num_partitions = 3;
  uint8_t *a;
  size_t an;
  hl_module_t *back = round_trip(m, &a, &an);
  CU_ASSERT_EQUAL(back->replica_count, 2);
  CU_ASSERT_EQUAL(back->num_partitions, 3);
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, an, a);
  const Xla__DeviceAssignmentProto *da = hp->hlo_module->device_assignment;
  CU_ASSERT_PTR_NOT_NULL_FATAL(da);
  CU_ASSERT_EQUAL(da->replica_count, 2);
  CU_ASSERT_EQUAL(da->computation_count, 3);
  CU_ASSERT_EQUAL_FATAL(da->n_computation_devices, 3);
  // device of replica r, partition p = r * 3 + p
  for (int p = 0; p < 3; p++) {
    CU_ASSERT_EQUAL_FATAL(da->computation_devices[p]->n_replica_device_ids, 2);
    for (int r = 0; r < 2; r++)
      CU_ASSERT_EQUAL(da->computation_devices[p]->replica_device_ids[r], r * 3 + p);
  }
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(a);
  hl_module_destroy(back);
  // Only replicas > 1: partitions become 1 and the round trip is stable.
  m->num_partitions = 0;
  back = round_trip(m, &a, &an);
  CU_ASSERT_EQUAL(back->replica_count, 2);
  CU_ASSERT_EQUAL(back->num_partitions, 1);
  uint8_t *b;
  size_t bn;
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(back, &b, &bn));
  CU_ASSERT(an == bn && memcmp(a, b, an) == 0);
  free(a);
  free(b);
  hl_module_destroy(back);
  // Counts of 1 write nothing.
  m->replica_count = 1;
  m->num_partitions = 1;
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(m, &a, &an));
  hp = xla__hlo_proto__unpack(NULL, an, a);
  CU_ASSERT_PTR_NULL(hp->hlo_module->device_assignment);
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(a);
  hl_module_destroy(m);
}

//===----------------------------------------------------------------------===//
// A hand-built module exercising every attribute the IR keeps
//===----------------------------------------------------------------------===//

static int64_t L2[2] = {4, 5};

static hl_module_t *build_rich_module(void) {
  hl_module_t *m;
  HL_ASSERT_OK(hl_module_create("rich", &m));
  m->id = 77;
  m->is_scheduled = true;
  HL_ASSERT_OK(hl_frontend_attributes_add(&m->frontend_attributes, "mod_key", "mod value"));
  hl_computation_t *red, *main_c;
  HL_ASSERT_OK(hl_module_add_computation(m, "red", &red));
  red->id = 900000000001LL;
  hl_instruction_t *ra, *rb, *rs;
  HL_ASSERT_OK(hl_computation_add_instruction(red, "a", HL_OP_PARAMETER, &ra));
  HL_ASSERT_OK(hl_computation_add_instruction(red, "b", HL_OP_PARAMETER, &rb));
  HL_ASSERT_OK(hl_computation_add_instruction(red, "s", HL_OP_ADD, &rs));
  ra->shape = rb->shape = rs->shape = hl_shape_scalar(HL_F32);
  ra->id = 3;
  rb->id = 4;
  rb->attrs.parameter_number = 1;
  rs->id = 5;
  hl_instruction_t *ops[2] = {ra, rb};
  HL_ASSERT_OK(hl_instruction_set_operands(rs, ops, 2));
  red->root = rs;
  HL_ASSERT_OK(hl_computation_index_parameters(red));

  HL_ASSERT_OK(hl_module_add_computation(m, "main", &main_c));
  main_c->id = 11;
  main_c->execution_thread = hl_strdup("main");
  int64_t d2[2] = {2, 3};
  hl_instruction_t *p, *cst, *x;
  HL_ASSERT_OK(hl_computation_add_instruction(main_c, "p", HL_OP_PARAMETER, &p));
  p->shape = hl_shape_array(HL_F32, 2, d2);
  p->id = 1LL << 40;
  p->attrs.parameter_replication = hl_calloc(1, sizeof(bool));
  p->attrs.parameter_replication[0] = true;
  p->attrs.parameter_replication_count = 1;
  HL_ASSERT_OK(hl_computation_add_instruction(main_c, "c", HL_OP_CONSTANT, &cst));
  cst->shape = hl_shape_scalar(HL_F32);
  cst->id = 2;
  HL_ASSERT_OK(hl_literal_create(&cst->shape, &cst->attrs.literal));
  hl_literal_set_f64(cst->attrs.literal, 0, 0.5);
  HL_ASSERT_OK(hl_computation_add_instruction(main_c, "x", HL_OP_CUSTOM_CALL, &x));
  x->shape = hl_shape_array(HL_F32, 2, d2);
  x->shape.has_layout = true;
  x->shape.minor_to_major[0] = 0;
  x->shape.minor_to_major[1] = 1;
  x->id = 99;
  hl_instruction_t *xops[2] = {p, cst};
  HL_ASSERT_OK(hl_instruction_set_operands(x, xops, 2));
  HL_ASSERT_OK(hl_instruction_set_called(x, &red, 1));
  HL_ASSERT_OK(hl_instruction_set_control_predecessors(x, &cst, 1));
  main_c->root = x;
  HL_ASSERT_OK(hl_computation_index_parameters(main_c));
  m->entry = main_c;

  hl_attrs_t *a = &x->attrs;
  a->fusion_kind = hl_strdup("kLoop");
  a->tuple_index = 3;
  HL_ASSERT_OK(hl_i64_list_set(&a->dimensions, L2, 2));
  a->has_window = true;
  a->window.dims = hl_calloc(1, sizeof(hl_window_dim_t));
  a->window.n = 1;
  a->window.dims[0] = (hl_window_dim_t){3, 2, -1, 4, 5, 6, true};
  a->has_convolution_dimension_numbers = true;
  a->convolution_dimension_numbers.input_batch_dimension = 1;
  a->convolution_dimension_numbers.kernel_output_feature_dimension = 7;
  HL_ASSERT_OK(hl_i64_list_set(&a->convolution_dimension_numbers.output_spatial_dimensions, L2, 2));
  a->slice_dimensions = hl_calloc(1, sizeof(hl_slice_dim_t));
  a->slice_count = 1;
  a->slice_dimensions[0] = (hl_slice_dim_t){1, 9, 3};
  a->exponent_bits = 5;
  a->mantissa_bits = 10;
  HL_ASSERT_OK(hl_i64_list_set(&a->dynamic_slice_sizes, L2, 1));
  a->padding_config = hl_calloc(1, sizeof(hl_padding_dim_t));
  a->padding_count = 1;
  a->padding_config[0] = (hl_padding_dim_t){-2, 3, 1};
  a->outfeed_config = hl_strdup("ocfg");
  a->distribution = 2;
  a->epsilon = 0.25f;
  a->feature_index = 1;
  a->channel_id = 8;
  a->infeed_config = hl_strdup("icfg");
  a->custom_call_target = hl_strdup("my_target");
  a->outfeed_shape = hl_calloc(1, sizeof(hl_shape_t));
  *a->outfeed_shape = hl_shape_scalar(HL_S32);
  a->has_dot_dimension_numbers = true;
  HL_ASSERT_OK(hl_i64_list_set(&a->dot_dimension_numbers.rhs_batch_dimensions, L2, 2));
  a->fft_type = 3;
  HL_ASSERT_OK(hl_i64_list_set(&a->fft_length, L2, 2));
  a->has_gather_dimension_numbers = true;
  a->gather_dimension_numbers.index_vector_dim = 2;
  HL_ASSERT_OK(hl_i64_list_set(&a->gather_dimension_numbers.start_indices_batching_dims, L2, 1));
  HL_ASSERT_OK(hl_i64_list_set(&a->gather_slice_sizes, L2, 2));
  a->sharding = hl_calloc(1, sizeof(hl_sharding_t));
  a->sharding->type = HL_SHARDING_TUPLE;
  a->sharding->tuple_shardings = hl_calloc(2, sizeof(hl_sharding_t));
  a->sharding->tuple_count = 2;
  a->sharding->tuple_shardings[0].type = HL_SHARDING_MAXIMAL;
  HL_ASSERT_OK(hl_i64_list_set(&a->sharding->tuple_shardings[0].tile_assignment_devices, L2, 1));
  a->sharding->tuple_shardings[1].type = HL_SHARDING_OTHER;
  HL_ASSERT_OK(hl_i64_list_set(&a->sharding->tuple_shardings[1].iota_reshape_dims, L2, 2));
  HL_ASSERT_OK(hl_i64_list_set(&a->sharding->tuple_shardings[1].iota_transpose_perm,
                               (int64_t[]){1, 0}, 2));
  a->sharding->tuple_shardings[1].replicate_on_last_tile_dim = true;
  a->backend_config = hl_strdup("{\"k\":1}");
  a->is_host_transfer = true;
  a->has_scatter_dimension_numbers = true;
  a->scatter_dimension_numbers.index_vector_dim = 4;
  HL_ASSERT_OK(hl_i64_list_set(&a->scatter_dimension_numbers.inserted_window_dims, L2, 2));
  a->replica_groups.kind = HL_GROUPS_LIST;
  a->replica_groups.groups = hl_calloc(2, sizeof(hl_i64_list_t));
  a->replica_groups.group_count = 2;
  HL_ASSERT_OK(hl_i64_list_set(&a->replica_groups.groups[0], (int64_t[]){0, 2}, 2));
  HL_ASSERT_OK(hl_i64_list_set(&a->replica_groups.groups[1], (int64_t[]){1, 3}, 2));
  a->feature_group_count = 2;
  a->batch_group_count = 3;
  HL_ASSERT_OK(hl_i64_list_set(&a->operand_precision, (int64_t[]){2, 1}, 2));
  a->precision_algorithm = 7;
  a->source_target_pairs = hl_calloc(2, sizeof(hl_source_target_t));
  a->source_target_count = 2;
  a->source_target_pairs[0] = (hl_source_target_t){0, 1};
  a->source_target_pairs[1] = (hl_source_target_t){1, 0};
  a->constrain_layout = true;
  a->triangular_left_side = true;
  a->triangular_unit_diagonal = true;
  a->triangular_transpose_a = HL_ADJOINT;
  a->is_stable = true;
  a->cholesky_lower = true;
  a->comparison_direction = HL_CMP_NE;
  a->custom_call_has_side_effect = true;
  a->delta = 16;
  a->indices_are_sorted = true;
  HL_ASSERT_OK(hl_frontend_attributes_add(&a->frontend_attributes, "k1", "v1"));
  HL_ASSERT_OK(hl_frontend_attributes_add(&a->frontend_attributes, "k0", "v0"));
  a->unique_indices = true;
  a->rng_algorithm = 2;
  a->use_global_device_ids = true;
  a->comparison_type = HL_CMPTYPE_UNSIGNED;
  a->custom_call_api_version = 4;
  a->async_execution_thread = hl_strdup("side");
  a->k = 12;
  a->largest = true;
  a->is_composite = true;
  a->metadata.present = true;
  a->metadata.op_type = hl_strdup("Foo");
  a->metadata.source_file = hl_strdup("f.py");
  a->metadata.source_line = 42;
  return m;
}

static void test_every_attribute_round_trips(void) {
  hl_module_t *m = build_rich_module();
  uint8_t *bytes, *again;
  size_t n, an;
  hl_module_t *back = round_trip(m, &bytes, &n);
  HL_ASSERT_OK(hl_proto_encode_hlo_proto(back, &again, &an));
  CU_ASSERT(n == an && memcmp(bytes, again, n) == 0);
  CU_ASSERT_STRING_EQUAL(back->name, "rich");
  CU_ASSERT_EQUAL(back->id, 77);
  CU_ASSERT(back->is_scheduled);
  CU_ASSERT_STRING_EQUAL(back->frontend_attributes.entries[0].value, "mod value");
  CU_ASSERT_STRING_EQUAL(back->entry->name, "main");
  CU_ASSERT_STRING_EQUAL(back->entry->execution_thread, "main");
  hl_computation_t *red = hl_module_find_computation(back, "red");
  CU_ASSERT_EQUAL(red->id, 900000000001LL);
  hl_instruction_t *x = back->entry->root;
  CU_ASSERT_EQUAL(x->opcode, HL_OP_CUSTOM_CALL);
  CU_ASSERT_EQUAL(x->id, 99);
  CU_ASSERT(x->shape.has_layout && x->shape.minor_to_major[0] == 0);
  CU_ASSERT_EQUAL_FATAL(x->operand_count, 2);
  CU_ASSERT_EQUAL(x->operands[0]->id, 1LL << 40);
  CU_ASSERT_PTR_EQUAL(x->called_computations[0], red);
  CU_ASSERT_EQUAL_FATAL(x->control_predecessor_count, 1);
  CU_ASSERT_STRING_EQUAL(x->control_predecessors[0]->name, "c");
  CU_ASSERT_EQUAL(hl_literal_get_f64(x->operands[1]->attrs.literal, 0), 0.5);
  CU_ASSERT(back->entry->parameters[0]->attrs.parameter_replication_count == 1 &&
            back->entry->parameters[0]->attrs.parameter_replication[0]);

  const hl_attrs_t *a = &x->attrs;
  CU_ASSERT_STRING_EQUAL(a->fusion_kind, "kLoop");
  CU_ASSERT_EQUAL(a->tuple_index, 3);
  CU_ASSERT(a->dimensions.n == 2 && a->dimensions.v[1] == 5);
  CU_ASSERT(a->has_window && a->window.n == 1);
  hl_window_dim_t wd = a->window.dims[0];
  CU_ASSERT(wd.size == 3 && wd.stride == 2 && wd.padding_low == -1 && wd.padding_high == 4 &&
            wd.window_dilation == 5 && wd.base_dilation == 6 && wd.window_reversal);
  CU_ASSERT(a->has_convolution_dimension_numbers);
  CU_ASSERT_EQUAL(a->convolution_dimension_numbers.input_batch_dimension, 1);
  CU_ASSERT_EQUAL(a->convolution_dimension_numbers.kernel_output_feature_dimension, 7);
  CU_ASSERT_EQUAL(a->convolution_dimension_numbers.output_spatial_dimensions.n, 2);
  CU_ASSERT(a->slice_count == 1 && a->slice_dimensions[0].limit == 9 &&
            a->slice_dimensions[0].stride == 3);
  CU_ASSERT(a->exponent_bits == 5 && a->mantissa_bits == 10);
  CU_ASSERT(a->dynamic_slice_sizes.n == 1 && a->dynamic_slice_sizes.v[0] == 4);
  CU_ASSERT(a->padding_count == 1 && a->padding_config[0].edge_padding_low == -2 &&
            a->padding_config[0].interior_padding == 1);
  CU_ASSERT_STRING_EQUAL(a->outfeed_config, "ocfg");
  CU_ASSERT_EQUAL(a->distribution, 2);
  CU_ASSERT_EQUAL(a->epsilon, 0.25f);
  CU_ASSERT_EQUAL(a->feature_index, 1);
  CU_ASSERT_EQUAL(a->channel_id, 8);
  CU_ASSERT_STRING_EQUAL(a->infeed_config, "icfg");
  CU_ASSERT_STRING_EQUAL(a->custom_call_target, "my_target");
  CU_ASSERT(a->outfeed_shape && a->outfeed_shape->dtype == HL_S32);
  CU_ASSERT(a->has_dot_dimension_numbers && a->dot_dimension_numbers.rhs_batch_dimensions.n == 2);
  CU_ASSERT_EQUAL(a->fft_type, 3);
  CU_ASSERT_EQUAL(a->fft_length.n, 2);
  CU_ASSERT(a->has_gather_dimension_numbers && a->gather_dimension_numbers.index_vector_dim == 2 &&
            a->gather_dimension_numbers.start_indices_batching_dims.n == 1);
  CU_ASSERT_EQUAL(a->gather_slice_sizes.n, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL(a->sharding);
  CU_ASSERT_EQUAL(a->sharding->type, HL_SHARDING_TUPLE);
  CU_ASSERT_EQUAL_FATAL(a->sharding->tuple_count, 2);
  CU_ASSERT_EQUAL(a->sharding->tuple_shardings[0].type, HL_SHARDING_MAXIMAL);
  CU_ASSERT_EQUAL(a->sharding->tuple_shardings[0].tile_assignment_devices.v[0], 4);
  CU_ASSERT(a->sharding->tuple_shardings[1].iota_transpose_perm.n == 2 &&
            a->sharding->tuple_shardings[1].iota_transpose_perm.v[0] == 1);
  CU_ASSERT(a->sharding->tuple_shardings[1].replicate_on_last_tile_dim);
  CU_ASSERT_STRING_EQUAL(a->backend_config, "{\"k\":1}");
  CU_ASSERT(a->is_host_transfer);
  CU_ASSERT(a->has_scatter_dimension_numbers &&
            a->scatter_dimension_numbers.index_vector_dim == 4 &&
            a->scatter_dimension_numbers.inserted_window_dims.n == 2);
  CU_ASSERT(a->replica_groups.kind == HL_GROUPS_LIST && a->replica_groups.group_count == 2 &&
            a->replica_groups.groups[1].v[0] == 1);
  CU_ASSERT(a->feature_group_count == 2 && a->batch_group_count == 3);
  CU_ASSERT(a->operand_precision.n == 2 && a->operand_precision.v[0] == 2);
  CU_ASSERT_EQUAL(a->precision_algorithm, 7);
  CU_ASSERT(a->source_target_count == 2 && a->source_target_pairs[1].source == 1 &&
            a->source_target_pairs[1].target == 0);
  CU_ASSERT(a->constrain_layout && a->triangular_left_side && !a->triangular_lower &&
            a->triangular_unit_diagonal && a->triangular_transpose_a == HL_ADJOINT);
  CU_ASSERT(a->is_stable && a->cholesky_lower);
  CU_ASSERT_EQUAL(a->comparison_direction, HL_CMP_NE);
  CU_ASSERT_EQUAL(a->comparison_type, HL_CMPTYPE_UNSIGNED);
  CU_ASSERT(a->custom_call_has_side_effect && a->delta == 16 && a->indices_are_sorted);
  CU_ASSERT_EQUAL_FATAL(a->frontend_attributes.n, 2);
  CU_ASSERT_STRING_EQUAL(a->frontend_attributes.entries[0].key, "k1");  // order kept
  CU_ASSERT(a->unique_indices && a->rng_algorithm == 2 && a->use_global_device_ids);
  CU_ASSERT_EQUAL(a->custom_call_api_version, 4);
  CU_ASSERT_STRING_EQUAL(a->async_execution_thread, "side");
  CU_ASSERT(a->k == 12 && a->largest && a->is_composite);
  CU_ASSERT(a->metadata.present && a->metadata.source_line == 42);
  CU_ASSERT_STRING_EQUAL(a->metadata.op_type, "Foo");
  CU_ASSERT_PTR_NULL(a->metadata.op_name);

  // The schedule lists main and red in instruction order.
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, n, bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp->hlo_module->schedule);
  CU_ASSERT_EQUAL_FATAL(hp->hlo_module->schedule->n_sequences, 2);
  const Xla__HloScheduleProto__SequencesEntry *e = hp->hlo_module->schedule->sequences[1];
  CU_ASSERT_EQUAL(e->key, 11);
  CU_ASSERT(e->value->n_instruction_ids == 3 && e->value->instruction_ids[2] == 99);
  xla__hlo_proto__free_unpacked(hp, NULL);
  free(bytes);
  free(again);
  hl_module_destroy(back);
  hl_module_destroy(m);
}

// Every layout part XLA's Layout::ToProto writes goes into LayoutProto
// (checked with protobuf-c's unpacker) and back, so text -> proto -> text is
// unchanged.
static void test_layout_parts_round_trip(void) {
  static const char kText[] =
      "HloModule lay\n\n"
      "ENTRY main {\n"
      "  p = s4[8,128]{1,0:E(4)} parameter(0)\n"
      "  c = s4[8,128]{0,1:D(D,C+~)T(8,128)(2,*)L(4)#(s32)*(u64)E(4)S(1)SC(0:1,2)(1:3)"
      "P(s4[1024]{0})M(8)} copy(p)\n"
      "  ROOT s = f32[]{:S(2)} constant(1)\n"
      "}\n";
  hl_module_t *m = NULL;
  HL_ASSERT_OK(hl_parse_hlo_module(kText, strlen(kText), "lay.hlo", &m));
  uint8_t *bytes;
  size_t n;
  hl_module_t *back = round_trip(m, &bytes, &n);
  Xla__HloProto *hp = xla__hlo_proto__unpack(NULL, n, bytes);
  CU_ASSERT_PTR_NOT_NULL_FATAL(hp);
  const Xla__HloInstructionProto *c = hl_test_find_instruction_proto(hp->hlo_module, "c");
  CU_ASSERT_PTR_NOT_NULL_FATAL(c);
  const Xla__LayoutProto *l = c->shape->layout;
  CU_ASSERT_PTR_NOT_NULL_FATAL(l);
  CU_ASSERT(l->n_minor_to_major == 2 && l->minor_to_major[0] == 0);
  CU_ASSERT(l->n_dim_level_types == 2 && l->dim_level_types[1] == XLA__DIM_LEVEL_TYPE__DIM_COMPRESSED);
  CU_ASSERT(l->n_dim_unique == 2 && !l->dim_unique[1] && l->dim_unique[0]);
  CU_ASSERT(l->n_tiles == 2 && l->tiles[0]->dimensions[1] == 128);
  CU_ASSERT(l->tiles[1]->n_dimensions == 2 && l->tiles[1]->dimensions[1] == INT64_MIN);
  CU_ASSERT_EQUAL(l->tail_padding_alignment_in_elements, 4);
  CU_ASSERT_EQUAL(l->index_primitive_type, XLA__PRIMITIVE_TYPE__S32);
  CU_ASSERT_EQUAL(l->pointer_primitive_type, XLA__PRIMITIVE_TYPE__U64);
  CU_ASSERT_EQUAL(l->element_size_in_bits, 4);
  CU_ASSERT_EQUAL(l->memory_space, 1);
  CU_ASSERT(l->n_split_configs == 2 && l->split_configs[0]->n_split_indices == 2);
  CU_ASSERT(l->physical_shape && l->physical_shape->dimensions[0] == 1024);
  CU_ASSERT_EQUAL(l->dynamic_shape_metadata_prefix_bytes, 8);
  const Xla__HloInstructionProto *s = hl_test_find_instruction_proto(hp->hlo_module, "s");
  CU_ASSERT(s->shape->layout && s->shape->layout->memory_space == 2);
  xla__hlo_proto__free_unpacked(hp, NULL);
  hl_strbuf_t a, b;
  hl_strbuf_init(&a);
  hl_strbuf_init(&b);
  HL_ASSERT_OK(hl_print_hlo_module(m, &a));
  HL_ASSERT_OK(hl_print_hlo_module(back, &b));
  CU_ASSERT_STRING_EQUAL(hl_strbuf_cstr(&a), hl_strbuf_cstr(&b));
  CU_ASSERT_PTR_NOT_NULL(strstr(hl_strbuf_cstr(&b), "P(s4[1024]{0})M(8)}"));
  hl_strbuf_deinit(&a);
  hl_strbuf_deinit(&b);
  hl_module_destroy(back);
  hl_module_destroy(m);
  free(bytes);
}

static void test_encode_allocation_failures(void) {
  hl_module_t *m = build_rich_module();
  bool ok = false;
  for (long k = 0; k < 1000 && !ok; k++) {
    uint8_t *d = NULL;
    size_t n = 0;
    hl_alloc_fail_after(k);
    hl_status_t st = hl_proto_encode_hlo_proto(m, &d, &n);
    hl_alloc_fail_after(-1);
    if (st) {
      CU_ASSERT_PTR_NULL(d);
      CU_ASSERT_EQUAL(hl_status_code(st), HL_OUT_OF_MEMORY);
      hl_status_free(st);
    } else {
      ok = true;
      hl_free(d);
    }
  }
  CU_ASSERT(ok);
  hl_module_destroy(m);
}

static CU_TestInfo tests[] = {
    {"fixture_round_trip_is_stable", test_fixture_round_trip_is_stable},
    {"fixture_encoding_at_wire_level", test_fixture_encoding_at_wire_level},
    {"device_assignment", test_device_assignment},
    {"every_attribute_round_trips", test_every_attribute_round_trips},
    {"layout_parts_round_trip", test_layout_parts_round_trip},
    {"encode_allocation_failures", test_encode_allocation_failures},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("proto_writer", tests)
