#include "runtime/fusion/jit/jit_body.h"

size_t hl_jit_type_size(hl_jit_type_t t) {
  switch (t) {
    case HL_JIT_F64:
    case HL_JIT_S64:
    case HL_JIT_U64:
      return 8;
    case HL_JIT_F32:
    case HL_JIT_S32:
    case HL_JIT_U32:
      return 4;
    case HL_JIT_BF16:
    case HL_JIT_F16:
    case HL_JIT_S16:
    case HL_JIT_U16:
      return 2;
    default:
      return 1;
  }
}

bool hl_jit_type_is_float(hl_jit_type_t t) {
  return t == HL_JIT_F32 || t == HL_JIT_F64 || t == HL_JIT_BF16 || t == HL_JIT_F16;
}

bool hl_jit_is_mask_op(hl_jit_op_t op) { return op >= HL_JIT_CMP_EQ && op <= HL_JIT_CMP_GE; }

bool hl_jit_is_call(hl_jit_op_t op) { return op == HL_JIT_CALL || op == HL_JIT_CALL2; }

bool hl_jit_type_is_signed(hl_jit_type_t t) { return t >= HL_JIT_S8 && t <= HL_JIT_S64; }

hl_jit_type_t hl_jit_value_type(const hl_jit_body_t *b, int i) {
  hl_jit_type_t t = b->values[i].type;
  return t == HL_JIT_BODY_TYPE ? b->type : t;
}

hl_jit_type_t hl_jit_input_type(const hl_jit_body_t *b, int i) {
  for (int k = 0; k < b->count; k++) {
    const hl_jit_value_t *v = &b->values[k];
    if ((v->op == HL_JIT_LOAD || v->op == HL_JIT_BROADCAST) && v->a == i)
      return hl_jit_value_type(b, k);
  }
  return b->type;
}

int hl_jit_arity(hl_jit_op_t op) {
  switch (op) {
    case HL_JIT_LOAD:
    case HL_JIT_BROADCAST:
    case HL_JIT_IOTA:
      return 0;
    case HL_JIT_NEG:
    case HL_JIT_ABS:
    case HL_JIT_SQRT:
    case HL_JIT_CALL:
    case HL_JIT_FLOOR:
    case HL_JIT_CEIL:
    case HL_JIT_RSQRT:
    case HL_JIT_NOT:
    case HL_JIT_CONVERT:
      return 1;
    case HL_JIT_SELECT:
    case HL_JIT_CLAMP:
      return 3;
    default:
      return 2;
  }
}

// Whether op is defined on the type's family.
static bool op_of_type(hl_jit_op_t op, hl_jit_type_t t) {
  bool fl = hl_jit_type_is_float(t);
  switch (op) {
    case HL_JIT_SQRT:
    case HL_JIT_CALL:
    case HL_JIT_CALL2:
    case HL_JIT_FLOOR:
    case HL_JIT_CEIL:
      return fl;
    case HL_JIT_RSQRT:
      return t == HL_JIT_F32;
    case HL_JIT_IOTA:
      return !fl || t == HL_JIT_F32 || t == HL_JIT_F64;
    case HL_JIT_REM:
    case HL_JIT_AND:
    case HL_JIT_OR:
    case HL_JIT_XOR:
    case HL_JIT_NOT:
    case HL_JIT_SHL:
    case HL_JIT_SRA:
    case HL_JIT_SRL:
      return !fl;
    default:
      return op >= HL_JIT_LOAD && op < HL_JIT_OP_COUNT_;
  }
}

const char *hl_jit_body_check(const hl_jit_body_t *b) {
  if (b->type <= HL_JIT_BODY_TYPE || b->type >= HL_JIT_TYPE_COUNT_)
    return "a JIT body of an unknown type";
  if (b->count < 1 || b->count > HL_JIT_MAX_VALUES) return "a JIT body of too many values";
  if (b->input_count < 0 || b->input_count > HL_JIT_MAX_INPUTS)
    return "a JIT body of too many inputs";
  for (int i = 0; i < b->count; i++) {
    const hl_jit_value_t *v = &b->values[i];
    hl_jit_type_t t = hl_jit_value_type(b, i);
    if (t < HL_JIT_BODY_TYPE || t >= HL_JIT_TYPE_COUNT_) return "a JIT value of an unknown type";
    if (!op_of_type(v->op, t)) return "a JIT operation not defined on its type";
    if (v->op == HL_JIT_IOTA && (v->iota_size < 1 || v->iota_inner < 1))
      return "a JIT iota of no dimension";
    if (hl_jit_is_call(v->op) && (!v->fn == !v->scalar_fn || !v->fn_name))
      return "a JIT call of no function";
    if (v->op == HL_JIT_LOAD || v->op == HL_JIT_BROADCAST) {
      if (v->a < 0 || v->a >= b->input_count ||
          b->input_scalar[v->a] != (v->op == HL_JIT_BROADCAST) ||
          hl_jit_input_type(b, v->a) != t)
        return "a JIT load of a bad input";
      continue;
    }
    const int ops[3] = {v->a, v->b, v->c};
    for (int k = 0; k < hl_jit_arity(v->op); k++) {
      if (ops[k] < 0 || ops[k] >= i) return "a JIT operand that is not an earlier value";
      bool want_mask = v->op == HL_JIT_SELECT && k == 0;
      if (hl_jit_is_mask_op(b->values[ops[k]].op) != want_mask)
        return "a JIT operand of the wrong kind";
      if (!want_mask && v->op != HL_JIT_CONVERT && hl_jit_value_type(b, ops[k]) != t)
        return "a JIT operand of another type";
    }
  }
  if (hl_jit_is_mask_op(b->values[b->count - 1].op)) return "a JIT result that is a mask";
  return NULL;
}
