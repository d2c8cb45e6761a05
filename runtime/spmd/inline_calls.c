// Call inlining before partitioning: each `call` in the entry is replaced by
// its callee's instructions (named "<call>.<name>", the callee's parameters
// read as the call's operands, the callee's root named like the call and
// carrying the call's sharding), recursively. The partitioner then sees one
// entry computation, so the callee runs with the shardings of its operands at
// the call site and the call's result has the callee root's sharding: every
// rule applies inside the callee as it does in the entry.
// Calls are kept (fallback) when the callee's root is a parameter and, in
// programs with manual regions, everywhere (a shard_map body is a call that
// must run per partition as written).
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"

#define SPMD_MAX_INLINE_DEPTH 32

typedef struct inliner {
  hl_strbuf_t body;
  hl_strbuf_t *note;
  int inlined;
} inliner_t;

static char *dup_name(const char *prefix, const char *name) {
  size_t n = (prefix ? strlen(prefix) + 1 : 0) + strlen(name) + 1;
  char *s = hl_malloc(n);
  if (!s) return NULL;
  if (prefix) snprintf(s, n, "%s.%s", prefix, name);
  else snprintf(s, n, "%s", name);
  return s;
}

static bool can_inline(const hl_instruction_t *inst) {
  if (inst->opcode != HL_OP_CALL) return false;
  const hl_computation_t *f = hl_instruction_to_apply(inst);
  return f && f->root && f->root->opcode != HL_OP_PARAMETER;
}

// Emits `comp`'s instructions. `args` (NULL for the entry): the names its
// parameters read. `root_name` / `root_sharding`: the name and sharding its
// root takes (the call's); `is_root`: whether that root is the entry's ROOT.
static hl_status_t emit_comp(inliner_t *in, const hl_computation_t *comp, const char *prefix, char **args,
                             const char *root_name, const hl_sharding_t *root_sharding, bool is_root, int depth) {
  if (depth > SPMD_MAX_INLINE_DEPTH) return HL_UNIMPL("calls nested more than %d deep", SPMD_MAX_INLINE_DEPTH);
  int count = comp->instruction_count;
  char **names = hl_calloc((size_t)count + 1, sizeof(*names));
  if (!names) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; i < count && !st; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    bool root = inst == comp->root;
    if (inst->opcode == HL_OP_PARAMETER && args) {
      names[i] = dup_name(NULL, args[inst->attrs.parameter_number]);
      if (!names[i]) st = HL_OOM();
      continue;
    }
    names[i] = root && root_name ? dup_name(NULL, root_name) : dup_name(prefix, inst->name);
    if (!names[i]) {
      st = HL_OOM();
      break;
    }
    char **ops = inst->operand_count ? hl_calloc((size_t)inst->operand_count, sizeof(*ops)) : NULL;
    if (inst->operand_count && !ops) {
      st = HL_OOM();
      break;
    }
    for (int k = 0; k < inst->operand_count; k++) ops[k] = names[inst->operands[k]->index];
    const hl_sharding_t *sh = root && root_sharding ? root_sharding : inst->attrs.sharding;
    if (can_inline(inst)) {
      const hl_computation_t *f = hl_instruction_to_apply(inst);
      hl_strbuf_appendf(in->note, "  %s = call: %s inlined (the callee runs with its operands' shardings, the "
                                  "result takes its root's)\n", names[i], f->name);
      in->inlined++;
      st = emit_comp(in, f, names[i], ops, names[i], sh, root && is_root, depth + 1);
      hl_free(ops);
      continue;
    }
    hl_instruction_t copy = *inst;
    hl_instruction_t *fake = inst->operand_count ? hl_calloc((size_t)inst->operand_count, sizeof(*fake)) : NULL;
    hl_instruction_t **ptrs = inst->operand_count ? hl_calloc((size_t)inst->operand_count, sizeof(*ptrs)) : NULL;
    if (inst->operand_count && (!fake || !ptrs)) st = HL_OOM();
    for (int k = 0; k < inst->operand_count && !st; k++) {
      fake[k] = *inst->operands[k];
      fake[k].name = ops[k];
      ptrs[k] = &fake[k];
    }
    if (!st) {
      copy.name = names[i];
      copy.parent = NULL;
      copy.operands = ptrs;
      copy.control_predecessor_count = 0;
      copy.attrs.sharding = (hl_sharding_t *)sh;
      hl_strbuf_append(&in->body, root && is_root ? "  ROOT " : "  ");
      hl_print_instruction(&copy, &in->body);
      hl_strbuf_append(&in->body, "\n");
    }
    hl_free(fake);
    hl_free(ptrs);
    hl_free(ops);
  }
  for (int i = 0; i < count; i++) hl_free(names[i]);
  hl_free(names);
  return st;
}

hl_status_t spmd_inline_calls(const hl_module_t *m, hl_module_t **out, hl_strbuf_t *note) {
  *out = NULL;
  bool any = false;
  for (int i = 0; i < m->entry->instruction_count; i++) any |= can_inline(m->entry->instructions[i]);
  if (!any || hl_spmd_module_has_manual_region(m)) return NULL;
  inliner_t in = {.note = note};
  hl_strbuf_init(&in.body);
  hl_strbuf_appendf(&in.body, "HloModule %s\n\n", m->name ? m->name : "module");
  for (int c = 0; c < m->computation_count; c++) {
    const hl_computation_t *comp = m->computations[c];
    if (comp == m->entry) continue;
    hl_strbuf_appendf(&in.body, "%s {\n", comp->name);
    for (int i = 0; i < comp->instruction_count; i++) {
      hl_strbuf_append(&in.body, "  ");
      hl_print_instruction(comp->instructions[i], &in.body);
      hl_strbuf_append(&in.body, "\n");
    }
    hl_strbuf_append(&in.body, "}\n\n");
  }
  hl_strbuf_appendf(&in.body, "ENTRY %s {\n", m->entry->name);
  hl_status_t st = emit_comp(&in, m->entry, NULL, NULL, NULL, NULL, true, 0);
  hl_strbuf_append(&in.body, "}\n");
  if (!st && in.body.failed) st = HL_OOM();
  if (!st) {
    st = hl_parse_hlo_module(hl_strbuf_cstr(&in.body), in.body.length, "<module with calls inlined>", out);
    if (st) st = hl_status_annotate(st, "inlining calls produced an invalid module (a bug in runtime/spmd)");
  }
  hl_strbuf_deinit(&in.body);
  return st;
}
