// Module verifier: the shape and attribute rules of XLA's ShapeVerifier /
// ShapeInference for the foundation op set, plus generic structure checks
// for every op. Every problem is collected (one line each) so a user fixes a
// program in one pass; checks never trust an attribute before bounding it.
// The op rules are in op_rules.c and the family files it dispatches to
// (verifier_internal.h).
#include "runtime/verifier/verifier.h"

#include <stdarg.h>

#include "runtime/base/layout.h"
#include "runtime/base/strbuf.h"
#include "runtime/verifier/verifier_internal.h"

void hl_verify_reportv(verifier_t *v, const hl_instruction_t *inst, const hl_computation_t *c,
                       const char *fmt, va_list ap) {
  hl_strbuf_t *out = &v->problems;
  if (v->count++) hl_strbuf_append_char(out, '\n');
  if (inst && inst->line > 0) {
    const char *file = v->module->source_path ? v->module->source_path : "<text>";
    hl_strbuf_appendf(out, "%s:%d:%d: instruction '%s' (%s): ", file, inst->line, inst->column,
                      inst->name ? inst->name : "?", hl_opcode_name(inst->opcode));
  } else if (inst) {
    hl_strbuf_appendf(out, "computation '%s', instruction '%s' (%s): ",
                      c && c->name ? c->name : "?", inst->name ? inst->name : "?",
                      hl_opcode_name(inst->opcode));
  } else if (c) {
    hl_strbuf_appendf(out, "computation '%s': ", c->name ? c->name : "?");
  } else {
    hl_strbuf_appendf(out, "module '%s': ", v->module->name ? v->module->name : "?");
  }
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  hl_strbuf_append(out, buf);
}

static void report_comp(verifier_t *v, const hl_computation_t *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void report_comp(verifier_t *v, const hl_computation_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hl_verify_reportv(v, NULL, c, fmt, ap);
  va_end(ap);
}

//===----------------------------------------------------------------------===//
// Generic checks
//===----------------------------------------------------------------------===//

static bool shape_valid(const hl_shape_t *s, int depth) {
  if (depth > 64 || !hl_dtype_is_valid(s->dtype)) return false;
  if (s->dtype == HL_TUPLE) {
    if (s->tuple_count < 0 || (s->tuple_count > 0 && !s->tuple)) return false;
    for (int i = 0; i < s->tuple_count; i++)
      if (!shape_valid(&s->tuple[i], depth + 1)) return false;
    return true;
  }
  if (s->rank < 0 || s->rank > HL_MAX_RANK) return false;
  for (int i = 0; i < s->rank; i++)
    if (s->dims[i] < 0 && !(s->dynamic_mask & (1u << i))) return false;
  return hl_layout_is_permutation(s);
}

// Number of computations an op must call; -1 when any count (or none) is fine.
static bool may_call(hl_opcode_t op) {
  switch (op) {
    case HL_OP_WHILE: case HL_OP_CONDITIONAL: case HL_OP_CALL: case HL_OP_FUSION: case HL_OP_MAP:
    case HL_OP_REDUCE: case HL_OP_REDUCE_WINDOW: case HL_OP_SCATTER: case HL_OP_SORT:
    case HL_OP_SELECT_AND_SCATTER: case HL_OP_ALL_REDUCE: case HL_OP_ALL_REDUCE_START:
    case HL_OP_REDUCE_SCATTER: case HL_OP_CUSTOM_CALL: case HL_OP_ASYNC_START:
    case HL_OP_ASYNC_UPDATE: case HL_OP_ASYNC_DONE: case HL_OP_SCAN: case HL_OP_COLLECTIVE_REDUCE:
      return true;
    default:
      return false;
  }
}

static int required_called(hl_opcode_t op) {
  switch (op) {
    case HL_OP_WHILE: case HL_OP_SELECT_AND_SCATTER:
      return 2;
    case HL_OP_CALL: case HL_OP_FUSION: case HL_OP_REDUCE: case HL_OP_MAP: case HL_OP_SORT:
    case HL_OP_REDUCE_WINDOW: case HL_OP_SCATTER: case HL_OP_ALL_REDUCE:
    case HL_OP_ALL_REDUCE_START: case HL_OP_REDUCE_SCATTER: case HL_OP_ASYNC_START:
      return 1;
    default:
      return -1;
  }
}

// Returns false when the instruction is too malformed for op-specific checks.
static bool check_generic(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  bool ok = true;
  if (inst->opcode < 0 || inst->opcode >= HL_OP_COUNT_) {
    report(k, "unknown opcode %d", (int)inst->opcode);
    return false;
  }
  if (!shape_valid(&inst->shape, 0)) {
    report(k, "result shape has an unsupported element type, bad dimensions or a layout that "
           "is not a permutation of its dimensions");
    ok = false;
  } else if (!hl_shape_size_fits(&inst->shape)) {
    report(k, "result shape %s is too large (its byte size overflows int64)",
           shape_str(&inst->shape, 0));
    ok = false;
  }
  int arity = hl_opcode_arity(inst->opcode);
  if (arity >= 0 && inst->operand_count != arity) {
    report(k, "expects %d operand%s, has %d", arity, arity == 1 ? "" : "s", inst->operand_count);
    ok = false;
  }
  for (int i = 0; i < inst->operand_count; i++) {
    const hl_instruction_t *op = inst->operands ? inst->operands[i] : NULL;
    if (!op) {
      report(k, "operand %d is missing", i);
      ok = false;
    } else if (op->parent != inst->parent) {
      report(k, "operand %d '%s' belongs to another computation", i, op->name ? op->name : "?");
      ok = false;
    } else if (!shape_valid(&op->shape, 0) || !hl_shape_size_fits(&op->shape)) {
      ok = false;  // reported on the operand itself
    }
  }
  int need = required_called(inst->opcode);
  if (need >= 0 && inst->called_count != need) {
    report(k, "expects %d called computation%s, has %d", need, need == 1 ? "" : "s",
           inst->called_count);
    ok = false;
  }
  if (!may_call(inst->opcode) && inst->called_count > 0) {
    report(k, "takes no called computations, has %d", inst->called_count);
    ok = false;
  }
  if (inst->opcode == HL_OP_CONDITIONAL && inst->called_count < 1) {
    report(k, "expects at least 1 branch computation, has %d", inst->called_count);
    ok = false;
  }
  for (int i = 0; i < inst->called_count; i++) {
    const hl_computation_t *c = inst->called_computations ? inst->called_computations[i] : NULL;
    if (!c || !c->root) {
      report(k, "called computation %d is missing or empty", i);
      ok = false;
    }
  }
  for (int i = 0; i < inst->control_predecessor_count; i++) {
    const hl_instruction_t *p = inst->control_predecessors[i];
    if (!p || p->parent != inst->parent) {
      report(k, "control predecessor %d is not in the same computation", i);
      ok = false;
    }
  }
  return ok;
}

//===----------------------------------------------------------------------===//
// Module walk
//===----------------------------------------------------------------------===//

static void verify_computation(verifier_t *v, const hl_computation_t *c) {
  if (!c->root)
    report_comp(v, c, "has no root instruction");
  else if (c->root->parent != c)
    report_comp(v, c, "root instruction '%s' belongs to another computation", c->root->name);
  for (int i = 0; i < c->instruction_count; i++) {
    const hl_instruction_t *inst = c->instructions[i];
    if (!inst) {
      report_comp(v, c, "instruction %d is missing", i);
      continue;
    }
    check_t k = {v, inst};
    if (inst->parent != c) {
      report(&k, "is listed in computation '%s' but belongs to another", c->name);
      continue;
    }
    // Operands must come first so evaluation order is the list order.
    for (int j = 0; j < inst->operand_count; j++) {
      const hl_instruction_t *op = inst->operands ? inst->operands[j] : NULL;
      if (op && op->parent == c && op->index >= i)
        report(&k, "operand %d '%s' is defined after its use", j, op->name);
    }
    if (check_generic(&k)) hl_verify_op(&k);
  }
}

hl_status_t hl_verify_module(const hl_module_t *module) {
  if (!module) return HL_INVALID("verifier: no module");
  verifier_t v = {module, {0}, 0};
  hl_strbuf_init(&v.problems);
  if (!module->entry) report_comp(&v, NULL, "has no entry computation");
  for (int i = 0; i < module->computation_count; i++) {
    const hl_computation_t *c = module->computations[i];
    if (!c) {
      v.count++;
      hl_strbuf_appendf(&v.problems, "%smodule '%s': computation %d is missing",
                        v.count > 1 ? "\n" : "", module->name ? module->name : "?", i);
      continue;
    }
    verify_computation(&v, c);
  }
  if (v.count == 0) {
    hl_strbuf_deinit(&v.problems);
    return NULL;
  }
  if (v.problems.failed) {
    hl_strbuf_deinit(&v.problems);
    return HL_OOM();
  }
  hl_status_t st = HL_INVALID("%s", hl_strbuf_cstr(&v.problems));
  hl_strbuf_deinit(&v.problems);
  return st;
}
