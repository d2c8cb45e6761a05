// The verifier's rules of collectives: all-reduce, all-gather,
// reduce-scatter, all-to-all, collective-broadcast / -permute,
// collective-reduce, shuffle.
#include "runtime/verifier/verifier_internal.h"

// Collectives (issue 4). Grid-independent checks only: the group size is
// known here when the groups are written and the mode does not multiply
// them by the partition count (cross_replica_and_partition); groups
// themselves are validated against the grid by collectives/groups.c.
static int64_t written_group_size(const hl_instruction_t *inst) {
  const hl_replica_groups_t *g = &inst->attrs.replica_groups;
  bool crp = inst->attrs.channel_id > 0 && !inst->attrs.use_global_device_ids &&
             (inst->opcode == HL_OP_ALL_GATHER || inst->opcode == HL_OP_ALL_GATHER_START ||
              inst->opcode == HL_OP_REDUCE_SCATTER);
  if (crp) return 0;
  if (g->kind == HL_GROUPS_LIST && g->group_count > 0 && g->groups) return g->groups[0].n;
  if (g->kind == HL_GROUPS_IOTA) return g->iota_group_size;
  return 0;
}

// Result element k of a variadic collective (array, or tuple of arrays).
static const hl_shape_t *collective_result(check_t *k, const hl_shape_t *r, int i, int n) {
  if (n == 1 && r->dtype != HL_TUPLE) return r;
  if (r->dtype != HL_TUPLE || r->tuple_count != n) {
    report(k, "result shape %s must be a tuple of %d arrays, one per operand", shape_str(r, 0), n);
    return NULL;
  }
  return &r->tuple[i];
}

void hl_verify_collective(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  hl_opcode_t op = inst->opcode;
  int n = inst->operand_count;
  const hl_shape_t *r = &inst->shape;
  if (n < 1) {
    report(k, "needs at least one operand");
    return;
  }
  if (op == HL_OP_ALL_GATHER_START || op == HL_OP_COLLECTIVE_PERMUTE_START) {
    if (r->dtype != HL_TUPLE || r->tuple_count < 2) {
      report(k, "result shape %s must be a tuple (operands, results%s)", shape_str(r, 0),
             op == HL_OP_COLLECTIVE_PERMUTE_START ? ", contexts..." : "");
      return;
    }
    r = &r->tuple[1];
  }
  int64_t g = written_group_size(inst);
  bool has_dim = inst->attrs.dimensions.n > 0;
  int64_t d = has_dim ? inst->attrs.dimensions.v[0] : -1;
  if ((op == HL_OP_ALL_REDUCE || op == HL_OP_ALL_REDUCE_START || op == HL_OP_REDUCE_SCATTER) &&
      !hl_instruction_to_apply(inst)) {
    report(k, "needs a reducer computation (to_apply)");
    return;
  }
  if (op == HL_OP_ALL_TO_ALL && !has_dim) {  // tuple form: one operand per member
    if (r->dtype != HL_TUPLE || r->tuple_count != n)
      report(k, "without dimensions, the result %s must be a tuple of the %d operands' shape",
             shape_str(r, 0), n);
    else if (g > 0 && g != n)
      report(k, "without dimensions, the %d operands must equal the group size %lld", n,
             (long long)g);
    for (int i = 0; i < n && r->dtype == HL_TUPLE && r->tuple_count == n; i++)
      if (!hl_shape_equal(operand_shape(inst, i), operand_shape(inst, 0)) ||
          !hl_shape_equal(&r->tuple[i], operand_shape(inst, 0))) {
        report(k, "the tuple form needs operands and results of one shape");
        break;
      }
    return;
  }
  for (int i = 0; i < n; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    const hl_shape_t *y = collective_result(k, r, i, n);
    if (!y || !expect_array(k, x, "operand")) return;
    bool gathers = op == HL_OP_ALL_GATHER || op == HL_OP_ALL_GATHER_START;
    if (gathers || op == HL_OP_REDUCE_SCATTER || op == HL_OP_ALL_TO_ALL) {
      if (inst->attrs.dimensions.n != 1 || d < 0 || d >= x->rank) {
        report(k, "attribute dimensions must name one dimension of operand %s", shape_str(x, 0));
        return;
      }
      bool ok = y->rank == x->rank && y->dtype == x->dtype;
      for (int j = 0; ok && j < x->rank; j++) ok = j == d || y->dims[j] == x->dims[j];
      int64_t big = gathers ? y->dims[d] : x->dims[d], small = gathers ? x->dims[d] : y->dims[d];
      if (op == HL_OP_ALL_TO_ALL) {
        ok = ok && hl_shape_equal(x, y);
        if (ok && g > 0 && x->dims[d] % g != 0) {
          report(k, "dimension %lld (%lld) of operand %s cannot be split among %lld processes",
                 (long long)d, (long long)x->dims[d], shape_str(x, 0), (long long)g);
          return;
        }
      } else if (ok && g > 0) {
        ok = big == small * g;
      } else if (ok) {
        ok = small == 0 ? big == 0 : big % small == 0;
      }
      if (!ok) {
        report(k, "result %s does not fit operand %s %s along dimension %lld%s", shape_str(y, 0),
               shape_str(x, 1), gathers ? "gathered" : op == HL_OP_ALL_TO_ALL ? "exchanged"
                                                                             : "scattered",
               (long long)d, g > 0 ? " by the group size" : "");
        return;
      }
    } else if (!hl_shape_equal(x, y)) {
      report(k, "result %s differs from operand %d %s", shape_str(y, 0), i, shape_str(x, 1));
      return;
    }
  }
}

// The data operands of collective-reduce / dynamic-root collective-broadcast
// (newest XLA): their shapes are the result's (a tuple for several); with
// has_dynamic_root the last operand is s32[number of data operands]. `verb`
// names what the instruction does with them ("reduce", "broadcast").
static void check_rooted_collective_operands(check_t *k, const char *verb) {
  const hl_instruction_t *inst = k->inst;
  int n = inst->operand_count, data = inst->attrs.has_dynamic_root ? n - 1 : n;
  if (data < 1) {
    report(k, "needs at least one operand to %s%s", verb,
           inst->attrs.has_dynamic_root ? " besides the roots operand" : "");
    return;
  }
  if (inst->attrs.has_dynamic_root) {
    const hl_shape_t *r = operand_shape(inst, n - 1);
    if (r->dtype != HL_S32 || r->rank != 1 || r->dims[0] != data)
      report(k, "with has_dynamic_root=true the last operand %s must be s32[%d] (one root per "
             "%s operand)", shape_str(r, 0), data, verb[0] == 'r' ? "reduced" : "broadcast");
  }
  for (int i = 0; i < data; i++) {
    const hl_shape_t *x = operand_shape(inst, i);
    const hl_shape_t *y = collective_result(k, &inst->shape, i, data);
    if (!y || !expect_array(k, x, "operand")) return;
    if (!hl_shape_equal(x, y)) {
      report(k, "result %s differs from operand %d %s", shape_str(y, 0), i, shape_str(x, 1));
      return;
    }
  }
}

// collective-reduce (runtime/kernels/collective_reduce.c).
void hl_verify_collective_reduce(check_t *k) {
  if (!hl_instruction_to_apply(k->inst)) {
    report(k, "needs a reducer computation (to_apply)");
    return;
  }
  check_rooted_collective_operands(k, "reduce");
}

// collective-broadcast with has_dynamic_root
// (runtime/kernels/collective_broadcast_root.c).
void hl_verify_dynamic_root_broadcast(check_t *k) {
  check_rooted_collective_operands(k, "broadcast");
}

// shuffle (newest XLA; runtime/kernels/shuffle.c): result = operand shape,
// distinct in-range dimensions, a mode with its attribute.
void hl_verify_shuffle(check_t *k) {
  const hl_instruction_t *inst = k->inst;
  const hl_attrs_t *a = &inst->attrs;
  if (inst->operand_count != 1) return;
  const hl_shape_t *x = operand_shape(inst, 0);
  if (!expect_array(k, x, "operand")) return;
  expect_result(k, x, "operand shape");
  if (!hl_verify_dim_set(k, "dimensions", &a->dimensions, x->rank, NULL)) return;
  if (a->shuffle_mode == HL_SHUFFLE_ROTATE) {
    if (a->shuffle_shifts.n != a->dimensions.n)
      report(k, "mode=rotate needs one shift per dimension (%d), has %d", a->dimensions.n,
             a->shuffle_shifts.n);
  } else if (a->shuffle_mode == HL_SHUFFLE_PERMUTE) {
    if (!a->shuffle_indices) report(k, "mode=permute needs indices=<literal>");
  } else {
    report(k, "needs mode=rotate or mode=permute");
  }
}
