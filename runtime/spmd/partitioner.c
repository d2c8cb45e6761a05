// The partitioner's driver: propagation, lowering, and the per-partition
// module assembled as HLO text (the global program's other computations
// unchanged, the reducers the inserted all-reduces need, the new entry) and
// parsed and verified like any program.
#include "runtime/spmd/partitioner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"
#include "runtime/verifier/verifier.h"

static bool is_collective(hl_opcode_t op) {
  switch (op) {
    case HL_OP_ALL_GATHER: case HL_OP_ALL_GATHER_START: case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START:
    case HL_OP_ALL_TO_ALL: case HL_OP_REDUCE_SCATTER: case HL_OP_COLLECTIVE_PERMUTE:
    case HL_OP_COLLECTIVE_PERMUTE_START: case HL_OP_COLLECTIVE_BROADCAST: case HL_OP_COLLECTIVE_REDUCE:
    case HL_OP_RAGGED_ALL_TO_ALL: case HL_OP_PARTITION_ID:
      return true;
    default:
      return false;
  }
}

bool hl_spmd_module_may_be_global(const hl_module_t *m) {
  if (!m || !m->entry) return false;
  bool annotated = false;
  const hl_computation_t *e = m->entry;
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *inst = e->instructions[i];
    const hl_sharding_t *s = inst->attrs.sharding;
    bool nontrivial = s && s->type != HL_SHARDING_REPLICATED;
    if ((inst->opcode == HL_OP_PARAMETER || inst == e->root) && nontrivial) annotated = true;
  }
  // Sharding constraints and manual regions (shard_map bodies, whose
  // collectives are per partition already) count wherever they are: JAX's
  // older exports keep them in a function the entry calls.
  bool manual = false;
  for (int c = 0; c < m->computation_count; c++)
    for (int i = 0; i < m->computations[c]->instruction_count; i++) {
      const hl_instruction_t *inst = m->computations[c]->instructions[i];
      const char *t = inst->opcode == HL_OP_CUSTOM_CALL ? inst->attrs.custom_call_target : NULL;
      if (t && strcmp(t, "Sharding") == 0) annotated = true;
      if (t && strcmp(t, "SPMDFullToShardShape") == 0) manual = true;
    }
  if (!annotated) return false;
  if (manual) return true;
  for (int c = 0; c < m->computation_count; c++)
    for (int i = 0; i < m->computations[c]->instruction_count; i++)
      if (is_collective(m->computations[c]->instructions[i]->opcode)) return false;
  return true;
}

bool hl_spmd_module_has_sharding_constraint(const hl_module_t *m) {
  if (!m || !m->entry) return false;
  for (int i = 0; i < m->entry->instruction_count; i++) {
    const hl_instruction_t *inst = m->entry->instructions[i];
    if (inst->opcode == HL_OP_CUSTOM_CALL && inst->attrs.custom_call_target &&
        strcmp(inst->attrs.custom_call_target, "Sharding") == 0)
      return true;
  }
  return false;
}

bool hl_spmd_module_has_manual_region(const hl_module_t *m) {
  if (!m || !m->entry) return false;
  for (int i = 0; i < m->entry->instruction_count; i++) {
    const hl_instruction_t *inst = m->entry->instructions[i];
    if (inst->opcode == HL_OP_CUSTOM_CALL && inst->attrs.custom_call_target &&
        strcmp(inst->attrs.custom_call_target, "SPMDFullToShardShape") == 0)
      return true;
  }
  return false;
}

static void print_computation(const hl_computation_t *comp, hl_strbuf_t *out) {
  hl_strbuf_appendf(out, "%s {\n", comp->name);
  for (int i = 0; i < comp->instruction_count; i++) {
    hl_strbuf_append(out, "  ");
    hl_print_instruction(comp->instructions[i], out);
    hl_strbuf_append(out, "\n");
  }
  hl_strbuf_append(out, "}\n\n");
}

static void ctx_deinit(spmd_ctx_t *c) {
  if (c->val)
    for (int i = 0; i < c->entry->instruction_count; i++) {
      hl_free(c->val[i].elems);
      hl_free(c->val[i].held);
    }
  if (c->local)
    for (int i = 0; i < c->entry->instruction_count; i++) hl_free(c->local[i]);
  for (int i = 0; i < c->name_count; i++) hl_free(c->names[i]);
  hl_free(c->names);
  hl_free(c->moved);
  hl_free(c->val);
  hl_free(c->local);
  hl_strbuf_deinit(&c->body);
  hl_strbuf_deinit(&c->explain);
  hl_strbuf_deinit(&c->reducers);
}

hl_status_t hl_spmd_partition(const hl_module_t *global, int num_partitions, hl_spmd_result_t *out) {
  return hl_spmd_partition_grid(global, 1, num_partitions, out);
}

hl_status_t hl_spmd_partition_grid(const hl_module_t *global, int num_replicas, int num_partitions,
                                   hl_spmd_result_t *out) {
  int64_t channel = 0;
  return spmd_partition_nested(global, num_replicas, num_partitions, &channel, out);
}

hl_status_t spmd_partition_nested(const hl_module_t *global, int num_replicas, int num_partitions,
                                  int64_t *channel, hl_spmd_result_t *out) {
  memset(out, 0, sizeof(*out));
  if (num_replicas < 1 || (int64_t)num_replicas * num_partitions > 65536)
    return HL_UNIMPL("partitioning on a grid of %d replicas x %d partitions", num_replicas, num_partitions);
  if (!global || !global->entry) return HL_INVALID("partitioning: no entry computation");
  if (num_partitions < 1 || num_partitions > HL_SPMD_MAX_DEVICES)
    return HL_UNIMPL("partitioning over %d partitions (1 to %d)", num_partitions, HL_SPMD_MAX_DEVICES);
  // Calls are inlined first: the callee is partitioned with its operands' shardings.
  hl_strbuf_t inline_note;
  hl_strbuf_init(&inline_note);
  hl_module_t *inlined = NULL;
  hl_status_t ist = spmd_inline_calls(global, &inlined, &inline_note);
  if (ist) {
    hl_strbuf_deinit(&inline_note);
    return ist;
  }
  if (inlined) global = inlined;
  spmd_ctx_t c;
  memset(&c, 0, sizeof(c));
  c.module = global;
  c.entry = global->entry;
  c.n = num_partitions;
  c.replicas = num_replicas;
  c.channel = *channel;
  for (int k = 0; k < global->computation_count; k++)  // new channel ids start past the program's own
    for (int i = 0; i < global->computations[k]->instruction_count; i++)
      if (global->computations[k]->instructions[i]->attrs.channel_id > c.channel)
        c.channel = global->computations[k]->instructions[i]->attrs.channel_id;
  hl_strbuf_init(&c.body);
  hl_strbuf_init(&c.explain);
  hl_strbuf_init(&c.reducers);
  int count = c.entry->instruction_count;
  c.val = hl_calloc((size_t)count + 1, sizeof(*c.val));
  c.local = hl_calloc((size_t)count + 1, sizeof(*c.local));
  hl_status_t st = c.val && c.local ? NULL : HL_OOM();
  if (!st) st = spmd_propagate(&c);
  if (!st) {
    hl_strbuf_appendf(&c.explain, "partitioning %s over %d partitions", global->name ? global->name : "module",
                      num_partitions);
    if (num_replicas > 1)
      hl_strbuf_appendf(&c.explain, " (each of %d replicas; groups shown for replica 0)", num_replicas);
    hl_strbuf_append(&c.explain, "\n");
    hl_strbuf_append(&c.explain, hl_strbuf_cstr(&inline_note));
    st = spmd_lower(&c);
  }
  hl_strbuf_t text;
  hl_strbuf_init(&text);
  if (!st) {
    hl_strbuf_appendf(&text, "HloModule %s.spmd, num_partitions=%d", global->name ? global->name : "module",
                      num_partitions);
    if (num_replicas > 1) hl_strbuf_appendf(&text, ", replica_count=%d", num_replicas);
    hl_strbuf_append(&text, "\n\n");
    for (int i = 0; i < global->computation_count; i++)
      if (global->computations[i] != global->entry) print_computation(global->computations[i], &text);
    hl_strbuf_append(&text, hl_strbuf_cstr(&c.reducers));
    hl_strbuf_appendf(&text, "ENTRY %s {\n%s}\n", c.entry->name, hl_strbuf_cstr(&c.body));
    hl_strbuf_appendf(&c.explain, "total: %lld channel collectives, %lld bytes per partition\n",
                      (long long)c.inserted, (long long)c.bytes);
    if (text.failed || c.explain.failed) st = HL_OOM();
  }
  if (!st) {
    st = hl_parse_hlo_module(hl_strbuf_cstr(&text), text.length, "<partitioned module>", &out->module);
    if (!st) st = hl_verify_module(out->module);
    if (st) {
      if (getenv("HL_SPMD_DEBUG")) fputs(hl_strbuf_cstr(&text), stderr);
      st = hl_status_annotate(st, "the partitioner produced an invalid module (a bug in runtime/spmd)");
    }
  }
  if (!st) {
    out->text = hl_strbuf_take(&text);
    out->explanation = hl_strbuf_take(&c.explain);
    out->bytes_per_partition = c.bytes;
    out->collectives = c.inserted;
    *channel = c.channel;
    if (!out->text || !out->explanation) st = HL_OOM();
  }
  hl_strbuf_deinit(&text);
  ctx_deinit(&c);
  hl_strbuf_deinit(&inline_note);
  hl_module_destroy(inlined);
  if (st) hl_spmd_result_deinit(out);
  return st;
}

void hl_spmd_result_deinit(hl_spmd_result_t *r) {
  hl_module_destroy(r->module);
  hl_free(r->text);
  hl_free(r->explanation);
  memset(r, 0, sizeof(*r));
}
