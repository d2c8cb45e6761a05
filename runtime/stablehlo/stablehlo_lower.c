// StableHLO syntax tree -> module IR: functions become computations, regions
// become called computations (values a region reads from outside become extra
// tuple elements of its parameter), result groups become get-tuple-elements.
// The per-op attribute mapping lives in lower_ops.c.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/lower_internal.h"
#include "runtime/stablehlo/mlir_lexer.h"
#include "runtime/stablehlo/mlir_parser.h"
#include "runtime/stablehlo/sharding_attrs.h"
#include "runtime/stablehlo/stablehlo.h"

hl_status_t hl_lower_op_error(const hl_lower_t *L, const hl_mlir_op_t *op, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (op && op->location)  // from bytecode: the source location the artifact kept
    return hl_mlir_error_pos(L->file->path, 0, 0, "'%s' (at %s) %s", op->name ? op->name : "?",
                             op->location, msg);
  return hl_mlir_error_pos(L->file->path, op ? op->line : 0, op ? op->column : 0, "'%s' %s",
                           op && op->name ? op->name : "?", msg);
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

hl_status_t hl_lower_add(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                         hl_opcode_t opcode, const hl_shape_t *shape, hl_instruction_t *const *ops,
                         int n, hl_instruction_t **out) {
  char name[64];
  int64_t id = ++L->next_id;
  snprintf(name, sizeof(name), "%s.%lld", hl_opcode_name(opcode), (long long)id);
  hl_instruction_t *inst;
  HL_RETURN_IF_ERROR(hl_computation_add_instruction(c, name, opcode, &inst));
  inst->id = id;
  if (op) {
    inst->line = op->line;
    inst->column = op->column;
  }
  if (shape) HL_RETURN_IF_ERROR(hl_shape_copy(shape, &inst->shape));
  if (n) HL_RETURN_IF_ERROR(hl_instruction_set_operands(inst, ops, n));
  *out = inst;
  return NULL;
}

hl_status_t hl_lower_add_gte(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                             hl_instruction_t *tuple, int index, hl_instruction_t **out) {
  if (tuple->shape.dtype != HL_TUPLE || index >= tuple->shape.tuple_count)
    return hl_lower_op_error(L, op, "has no result %d", index);
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_GET_TUPLE_ELEMENT, &tuple->shape.tuple[index],
                                  &tuple, 1, out));
  (*out)->attrs.tuple_index = index;
  return NULL;
}

hl_status_t hl_lower_add_tuple(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                               hl_instruction_t *const *ops, int n, hl_instruction_t **out) {
  hl_shape_t *el = hl_calloc((size_t)(n ? n : 1), sizeof(hl_shape_t));
  if (!el) return HL_OOM();
  for (int i = 0; i < n; i++) el[i] = ops[i]->shape;  // shallow: hl_shape_tuple deep-copies
  hl_shape_t t;
  hl_status_t st = hl_shape_tuple(el, n, &t);
  hl_free(el);
  if (st) return st;
  st = hl_lower_add(L, c, op, HL_OP_TUPLE, NULL, ops, n, out);
  if (st) {
    hl_shape_deinit(&t);
    return st;
  }
  (*out)->shape = t;
  return NULL;
}

static hl_status_t add_parameter(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                                 int number, const hl_shape_t *shape, hl_instruction_t **out) {
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_PARAMETER, shape, NULL, 0, out));
  (*out)->attrs.parameter_number = number;
  return NULL;
}

static hl_status_t new_computation(hl_lower_t *L, const char *base, hl_computation_t **out) {
  char name[160];
  snprintf(name, sizeof(name), "%s.region.%d", base ? base : "fn", ++L->region_counter);
  return hl_module_add_computation(L->module, name, out);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

hl_status_t hl_lower_bind(hl_lower_env_t *env, const char *name, hl_instruction_t *const *values,
                          int count) {
  hl_lower_binding_t *nb =
      hl_realloc(env->bindings, (size_t)(env->binding_count + 1) * sizeof(*nb));
  if (!nb) return HL_OOM();
  env->bindings = nb;
  hl_lower_binding_t *b = &nb[env->binding_count];
  memset(b, 0, sizeof(*b));
  b->name = hl_strdup(name);
  b->values = hl_malloc((size_t)(count ? count : 1) * sizeof(hl_instruction_t *));
  if (!b->name || !b->values) {
    hl_free(b->name);
    hl_free(b->values);
    return HL_OOM();
  }
  memcpy(b->values, values, (size_t)count * sizeof(hl_instruction_t *));
  b->count = count;
  env->binding_count++;
  return NULL;
}

static void env_deinit(hl_lower_env_t *env) {
  for (int i = 0; i < env->binding_count; i++) {
    hl_free(env->bindings[i].name);
    hl_free(env->bindings[i].values);
  }
  hl_free(env->bindings);
  hl_free(env->inner);
}

static hl_lower_binding_t *find_binding(hl_lower_env_t *env, const char *name) {
  // Latest binding wins (MLIR names are unique per scope, but cases may reuse).
  for (int i = env->binding_count - 1; i >= 0; i--)
    if (strcmp(env->bindings[i].name, name) == 0) return &env->bindings[i];
  return NULL;
}

static hl_status_t lookup_in(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_value_ref_t *ref,
                             hl_instruction_t **out) {
  hl_lower_binding_t *b = find_binding(env, ref->name);
  if (b) {
    if (ref->index < 0 || ref->index >= b->count)
      return hl_mlir_error_pos(L->file->path, ref->line, ref->column,
                               "%%%s has %d result(s), #%d does not exist", ref->name, b->count,
                               ref->index);
    *out = b->values[ref->index];
    return NULL;
  }
  if (!env->parent)
    return hl_mlir_error_pos(L->file->path, ref->line, ref->column,
                             "use of undefined value %%%s", ref->name);
  hl_instruction_t *outer;
  HL_RETURN_IF_ERROR(lookup_in(L, env->parent, ref, &outer));
  if (!env->captures)
    return hl_mlir_error_pos(L->file->path, ref->line, ref->column,
                             "%%%s is defined outside this region, which cannot read outer "
                             "values (reducer / comparator bodies)", ref->name);
  hl_lower_captures_t *cap = env->captures;
  int k = 0;
  while (k < cap->count && cap->outer[k] != outer) k++;
  if (k == cap->count) {
    hl_instruction_t **no = hl_realloc(cap->outer, (size_t)(k + 1) * sizeof(*no));
    if (!no) return HL_OOM();
    cap->outer = no;
    no[k] = outer;
    cap->count++;
  }
  if (k >= env->inner_count) {
    hl_instruction_t **ni = hl_realloc(env->inner, (size_t)(k + 1) * sizeof(*ni));
    if (!ni) return HL_OOM();
    for (int i = env->inner_count; i <= k; i++) ni[i] = NULL;
    env->inner = ni;
    env->inner_count = k + 1;
  }
  if (!env->inner[k]) {
    // The parameter's tuple shape is completed later; the element is known now.
    hl_instruction_t *g;
    HL_RETURN_IF_ERROR(hl_lower_add(L, env->computation, NULL, HL_OP_GET_TUPLE_ELEMENT,
                                    &outer->shape, &env->param, 1, &g));
    g->attrs.tuple_index = env->base + k;
    HL_RETURN_IF_ERROR(hl_quant_note(L, g, hl_quant_of(L, outer)));
    env->inner[k] = g;
  }
  *out = env->inner[k];
  return NULL;
}

hl_status_t hl_lower_lookup(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_value_ref_t *ref,
                            hl_instruction_t **out) {
  return lookup_in(L, env, ref, out);
}

hl_status_t hl_lower_bind_results(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *values, int count) {
  if (count != op->result_count)
    return hl_lower_op_error(L, op, "produces %d result(s) but %d name(s) are bound", count,
                             op->result_count);
  int at = 0;
  for (int g = 0; g < op->result_group_count; g++) {
    HL_RETURN_IF_ERROR(hl_lower_bind(env, op->result_names[g], values + at, op->result_counts[g]));
    at += op->result_counts[g];
  }
  return hl_quant_note_results(L, op, values, count);
}

//===----------------------------------------------------------------------===//
// Blocks and regions
//===----------------------------------------------------------------------===//

static bool is_return(const hl_mlir_op_t *op) {
  return strcmp(op->name, "func.return") == 0 || strcmp(op->name, "stablehlo.return") == 0 ||
         strcmp(op->name, "return") == 0 || strcmp(op->name, "mhlo.return") == 0 ||
         strcmp(op->name, "sdy.return") == 0;
}

// Lowers the ops of `b` into env; *out_returned / *out_count: the returned values.
static hl_status_t lower_block(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_block_t *b,
                               const hl_mlir_op_t *owner, hl_instruction_t ***out_returned,
                               int *out_count) {
  *out_returned = NULL;
  *out_count = 0;
  for (int i = 0; i < b->op_count; i++) {
    const hl_mlir_op_t *op = &b->ops[i];
    if (is_return(op)) {
      if (i != b->op_count - 1) return hl_lower_op_error(L, op, "is not the last op of its block");
      hl_instruction_t **vals = hl_calloc((size_t)(op->operand_count + 1), sizeof(*vals));
      if (!vals) return HL_OOM();
      for (int k = 0; k < op->operand_count; k++) {
        hl_status_t st = hl_lower_lookup(L, env, &op->operands[k], &vals[k]);
        if (st) {
          hl_free(vals);
          return st;
        }
      }
      *out_returned = vals;
      *out_count = op->operand_count;
      return NULL;
    }
    HL_RETURN_IF_ERROR(hl_lower_op(L, env, op));
  }
  return hl_lower_op_error(L, owner, "has a block without a terminator (return)");
}

static hl_status_t set_root(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                            hl_instruction_t **vals, int n, bool tuple_single) {
  if (n == 1 && !tuple_single) {
    c->root = vals[0];
    return NULL;
  }
  return hl_lower_add_tuple(L, c, op, vals, n, &c->root);
}

hl_status_t hl_lower_scalar_region(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                   int region_index, hl_computation_t **out) {
  if (region_index >= op->region_count) return hl_lower_op_error(L, op, "needs a region");
  const hl_mlir_region_t *r = &op->regions[region_index];
  const hl_mlir_block_t *b = &r->blocks[0];
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(new_computation(L, L->func_name, &c));
  hl_lower_env_t sub = {.parent = env, .computation = c};
  hl_status_t st = NULL;
  for (int i = 0; !st && i < b->arg_count; i++) {
    hl_instruction_t *p;
    st = add_parameter(L, c, op, i, &b->arg_types[i], &p);
    if (!st) st = hl_quant_note(L, p, hl_mlir_quant_id(&b->arg_quant, i));
    if (!st) st = hl_lower_bind(&sub, b->arg_names[i], &p, 1);
  }
  hl_instruction_t **vals = NULL;
  int n = 0;
  if (!st) st = lower_block(L, &sub, b, op, &vals, &n);
  if (!st) st = set_root(L, c, op, vals, n, false);
  if (!st) st = hl_computation_index_parameters(c);
  hl_free(vals);
  env_deinit(&sub);
  if (st) return st;
  *out = c;
  return NULL;
}

hl_status_t hl_lower_binary_computation(hl_lower_t *L, const hl_mlir_op_t *op,
                                        const char *opname, const hl_shape_t *scalar,
                                        hl_computation_t **out) {
  static const struct {
    const char *name;
    hl_opcode_t opcode;
  } kOps[] = {{"stablehlo.add", HL_OP_ADD},         {"stablehlo.multiply", HL_OP_MULTIPLY},
              {"stablehlo.maximum", HL_OP_MAXIMUM}, {"stablehlo.minimum", HL_OP_MINIMUM},
              {"stablehlo.and", HL_OP_AND},         {"stablehlo.or", HL_OP_OR},
              {"stablehlo.xor", HL_OP_XOR},         {"stablehlo.subtract", HL_OP_SUBTRACT}};
  int k = -1;
  for (int i = 0; i < (int)(sizeof(kOps) / sizeof(kOps[0])); i++)
    if (strcmp(kOps[i].name, opname) == 0) k = i;
  if (k < 0) return hl_lower_op_error(L, op, "cannot apply '%s' as a reducer", opname);
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(new_computation(L, L->func_name, &c));
  hl_instruction_t *p[2];
  HL_RETURN_IF_ERROR(add_parameter(L, c, op, 0, scalar, &p[0]));
  HL_RETURN_IF_ERROR(add_parameter(L, c, op, 1, scalar, &p[1]));
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, kOps[k].opcode, scalar, p, 2, &c->root));
  HL_RETURN_IF_ERROR(hl_computation_index_parameters(c));
  *out = c;
  return NULL;
}

// A capturing region: one tuple parameter (leading elements: `lead` block
// arguments of the given shapes, then the captures). Returns the computation
// and its returned values; the parameter's shape is completed by finish_capturing.
typedef struct capturing {
  hl_computation_t *computation;
  hl_lower_env_t env;
  hl_instruction_t **returned;
  int returned_count;
} capturing_t;

static hl_status_t lower_capturing(hl_lower_t *L, hl_lower_env_t *outer, const hl_mlir_op_t *op,
                                   const hl_mlir_region_t *r, char *const *arg_names,
                                   const hl_shape_t *arg_shapes, int lead,
                                   hl_lower_captures_t *caps, capturing_t *out) {
  memset(out, 0, sizeof(*out));
  HL_RETURN_IF_ERROR(new_computation(L, L->func_name, &out->computation));
  hl_computation_t *c = out->computation;
  out->env = (hl_lower_env_t){.parent = outer, .computation = c, .captures = caps, .base = lead};
  HL_RETURN_IF_ERROR(add_parameter(L, c, op, 0, NULL, &out->env.param));
  const hl_mlir_block_t *b = &r->blocks[0];
  int nargs = b->arg_count ? b->arg_count : (arg_names ? lead : 0);
  if (nargs != lead) return hl_lower_op_error(L, op, "region takes %d arguments, expected %d", nargs, lead);
  for (int i = 0; i < lead; i++) {
    hl_instruction_t *g;
    HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_GET_TUPLE_ELEMENT, &arg_shapes[i],
                                    &out->env.param, 1, &g));
    g->attrs.tuple_index = i;
    // A quantized loop value: its block argument's type (pretty while: the op's types).
    int quant = b->arg_count ? hl_mlir_quant_id(&b->arg_quant, i)
                             : hl_mlir_quant_id(&op->operand_type_quant, i);
    HL_RETURN_IF_ERROR(hl_quant_note(L, g, quant));
    HL_RETURN_IF_ERROR(
        hl_lower_bind(&out->env, b->arg_count ? b->arg_names[i] : arg_names[i], &g, 1));
  }
  return lower_block(L, &out->env, b, op, &out->returned, &out->returned_count);
}

static void capturing_deinit(capturing_t *c) {
  env_deinit(&c->env);
  hl_free(c->returned);
}

// Sets the parameter shape: lead shapes then every capture's shape.
static hl_status_t finish_param(capturing_t *cr, const hl_shape_t *lead, int n,
                                const hl_lower_captures_t *caps) {
  int total = n + caps->count;
  hl_shape_t *el = hl_calloc((size_t)(total ? total : 1), sizeof(hl_shape_t));
  if (!el) return HL_OOM();
  for (int i = 0; i < n; i++) el[i] = lead[i];
  for (int i = 0; i < caps->count; i++) el[n + i] = caps->outer[i]->shape;
  hl_shape_t t;
  hl_status_t st = hl_shape_tuple(el, total, &t);
  hl_free(el);
  if (st) return st;
  hl_shape_deinit(&cr->env.param->shape);
  cr->env.param->shape = t;
  return hl_computation_index_parameters(cr->computation);
}

//===----------------------------------------------------------------------===//
// Control flow: while, if, case, func.call
//===----------------------------------------------------------------------===//

static hl_status_t lower_while(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                               hl_instruction_t *const *operands) {
  int n = op->operand_count;
  if (op->region_count != 2) return hl_lower_op_error(L, op, "needs cond and body regions");
  hl_shape_t *shapes = hl_calloc((size_t)(n ? n : 1), sizeof(hl_shape_t));
  if (!shapes) return HL_OOM();
  for (int i = 0; i < n; i++) shapes[i] = operands[i]->shape;
  hl_lower_captures_t caps = {0};
  capturing_t cond, body;
  memset(&body, 0, sizeof(body));
  hl_status_t st = lower_capturing(L, env, op, &op->regions[0], op->iter_arg_names, shapes, n,
                                   &caps, &cond);
  if (!st) st = lower_capturing(L, env, op, &op->regions[1], op->iter_arg_names, shapes, n, &caps,
                                &body);
  if (!st && (cond.returned_count != 1 || body.returned_count != n))
    st = hl_lower_op_error(L, op, "cond must return 1 value and body %d, got %d and %d", n,
                           cond.returned_count, body.returned_count);
  // Body root: the new loop values, then every capture passed through.
  hl_instruction_t **root_vals = NULL;
  if (!st) {
    root_vals = hl_calloc((size_t)(n + caps.count + 1), sizeof(*root_vals));
    if (!root_vals) st = HL_OOM();
  }
  for (int i = 0; !st && i < n; i++) root_vals[i] = body.returned[i];
  for (int k = 0; !st && k < caps.count; k++) {
    hl_instruction_t *g = k < body.env.inner_count ? body.env.inner[k] : NULL;
    if (!g) {
      st = hl_lower_add(L, body.computation, op, HL_OP_GET_TUPLE_ELEMENT, &caps.outer[k]->shape,
                        &body.env.param, 1, &g);
      if (!st) g->attrs.tuple_index = n + k;
    }
    root_vals[n + k] = g;
  }
  if (!st) st = hl_lower_add_tuple(L, body.computation, op, root_vals, n + caps.count,
                                   &body.computation->root);
  if (!st) cond.computation->root = cond.returned[0];
  if (!st) st = finish_param(&cond, shapes, n, &caps);
  if (!st) st = finish_param(&body, shapes, n, &caps);
  // The loop: tuple(inits..., captures...) -> while -> get-tuple-element per result.
  hl_instruction_t *init = NULL, *loop = NULL;
  hl_instruction_t **init_vals = NULL, **results = NULL;
  if (!st) {
    init_vals = hl_calloc((size_t)(n + caps.count + 1), sizeof(*init_vals));
    results = hl_calloc((size_t)(n + 1), sizeof(*results));
    if (!init_vals || !results) st = HL_OOM();
  }
  for (int i = 0; !st && i < n; i++) init_vals[i] = operands[i];
  for (int k = 0; !st && k < caps.count; k++) init_vals[n + k] = caps.outer[k];
  if (!st) st = hl_lower_add_tuple(L, env->computation, op, init_vals, n + caps.count, &init);
  if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_WHILE, &init->shape, &init, 1, &loop);
  if (!st) {
    hl_computation_t *called[2] = {body.computation, cond.computation};
    st = hl_instruction_set_called(loop, called, 2);
  }
  for (int i = 0; !st && i < n; i++) st = hl_lower_add_gte(L, env->computation, op, loop, i, &results[i]);
  if (!st) st = hl_lower_bind_results(L, env, op, results, n);
  hl_free(init_vals);
  hl_free(results);
  hl_free(root_vals);
  capturing_deinit(&cond);
  capturing_deinit(&body);
  hl_free(caps.outer);
  hl_free(shapes);
  return st;
}

// if / case: each branch a computation taking the tuple of its captures.
static hl_status_t lower_branches(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *selector) {
  int nb = op->region_count;
  if (nb < 1) return hl_lower_op_error(L, op, "needs at least one branch region");
  capturing_t *br = hl_calloc((size_t)nb, sizeof(*br));
  hl_lower_captures_t *caps = hl_calloc((size_t)nb, sizeof(*caps));
  hl_instruction_t **ops = hl_calloc((size_t)nb + 1, sizeof(*ops));
  hl_computation_t **comps = hl_calloc((size_t)nb, sizeof(*comps));
  hl_status_t st = br && caps && ops && comps ? NULL : HL_OOM();
  int nres = op->result_count;
  for (int b = 0; !st && b < nb; b++) {
    st = lower_capturing(L, env, op, &op->regions[b], NULL, NULL, 0, &caps[b], &br[b]);
    if (!st && br[b].returned_count != nres)
      st = hl_lower_op_error(L, op, "branch %d returns %d values, expected %d", b,
                             br[b].returned_count, nres);
    if (!st) st = set_root(L, br[b].computation, op, br[b].returned, nres, nres != 1);
    if (!st) st = finish_param(&br[b], NULL, 0, &caps[b]);
    if (!st) st = hl_lower_add_tuple(L, env->computation, op, caps[b].outer, caps[b].count, &ops[b + 1]);
    if (!st) comps[b] = br[b].computation;
  }
  hl_instruction_t *cond = NULL;
  if (!st) {
    ops[0] = selector;
    st = hl_lower_add(L, env->computation, op, HL_OP_CONDITIONAL, &br[0].computation->root->shape,
                      ops, nb + 1, &cond);
  }
  if (!st) st = hl_instruction_set_called(cond, comps, nb);
  if (!st) {
    if (nres == 1) {
      st = hl_lower_bind_results(L, env, op, &cond, 1);
    } else {
      hl_instruction_t **res = hl_calloc((size_t)nres + 1, sizeof(*res));
      if (!res) st = HL_OOM();
      for (int i = 0; !st && i < nres; i++)
        st = hl_lower_add_gte(L, env->computation, op, cond, i, &res[i]);
      if (!st) st = hl_lower_bind_results(L, env, op, res, nres);
      hl_free(res);
    }
  }
  for (int b = 0; br && b < nb; b++) {
    capturing_deinit(&br[b]);
    if (caps) hl_free(caps[b].outer);
  }
  hl_free(br);
  hl_free(caps);
  hl_free(ops);
  hl_free(comps);
  return st;
}

static const char *symbol_item(const hl_mlir_op_t *op, const char *attr_name) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(op, attr_name);
  if (a && a->kind == HL_MATTR_SYMBOL) return a->s;
  for (int i = 0; i < op->item_count; i++)
    if (op->items[i].kind == HL_MATTR_SYMBOL) return op->items[i].s;
  return NULL;
}

// Shape refinement inlines every call: the callee's dimension arguments (JAX
// passes them from get_dimension_size) then fold like the caller's values,
// and each call site refines the callee's dynamic types from its own
// arguments (stablehlo-refine-shapes specializes callees the same way).
static hl_status_t inline_call(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                               const char *callee, hl_instruction_t *const *operands) {
  hl_lower_func_t *f = NULL;
  for (int i = 0; i < L->func_count && !f; i++)
    if (strcmp(L->funcs[i].op->symbol, callee) == 0) f = &L->funcs[i];
  if (!f) return hl_lower_op_error(L, op, "refers to an undefined function @%s", callee);
  if (f->lowering) return hl_lower_op_error(L, op, "calls @%s recursively", callee);
  const hl_mlir_op_t *fn = f->op;
  if (fn->region_count < 1 || fn->regions[0].block_count < 1)
    return hl_lower_op_error(L, op, "calls @%s, which has no body", callee);
  const hl_mlir_block_t *b = &fn->regions[0].blocks[0];
  if (b->arg_count != op->operand_count)
    return hl_lower_op_error(L, op, "passes %d arguments to @%s, which takes %d",
                             op->operand_count, callee, b->arg_count);
  hl_lower_env_t inner = {.computation = env->computation};
  hl_status_t st = NULL;
  for (int i = 0; !st && i < b->arg_count; i++) {
    if (!hl_refine_compatible(&b->arg_types[i], &operands[i]->shape)) {
      char got[256];
      snprintf(got, sizeof(got), "%s", hl_shape_debug_string(&operands[i]->shape));
      st = hl_lower_op_error(L, op, "passes %s as argument %d of @%s, whose type is %s", got, i,
                             callee, hl_shape_debug_string(&b->arg_types[i]));
    }
    if (!st) st = hl_lower_bind(&inner, b->arg_names[i], &operands[i], 1);
  }
  hl_instruction_t **vals = NULL;
  int n = 0;
  const char *saved_name = L->func_name;
  L->func_name = fn->symbol;
  f->lowering = true;
  if (!st) st = lower_block(L, &inner, b, fn, &vals, &n);
  f->lowering = false;
  L->func_name = saved_name;
  if (!st && n != fn->result_type_count)
    st = hl_lower_op_error(L, fn, "@%s returns %d values but its signature has %d", fn->symbol, n,
                           fn->result_type_count);
  for (int i = 0; !st && i < n; i++)
    if (!hl_refine_compatible(&fn->result_types[i], &vals[i]->shape))
      st = hl_lower_op_error(L, fn, "@%s returns %s as result %d, its signature says %s",
                             fn->symbol, hl_shape_debug_string(&vals[i]->shape), i,
                             hl_shape_debug_string(&fn->result_types[i]));
  if (!st) st = hl_lower_bind_results(L, env, op, vals, n);
  hl_free(vals);
  env_deinit(&inner);
  return st;
}

// func.call @f, and stablehlo.composite, which runs its decomposition = @f.
static hl_status_t lower_call(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                              hl_instruction_t *const *operands) {
  bool composite = strcmp(op->name, "stablehlo.composite") == 0;
  const char *callee = symbol_item(op, composite ? "decomposition" : "callee");
  if (!callee) return hl_lower_op_error(L, op, "needs a callee @name");
  if (L->refining) return inline_call(L, env, op, callee, operands);
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(hl_lower_function(L, callee, op, &c));
  if (c->parameter_count != op->operand_count)
    return hl_lower_op_error(L, op, "passes %d arguments to @%s, which takes %d",
                             op->operand_count, callee, c->parameter_count);
  hl_instruction_t *call;
  HL_RETURN_IF_ERROR(hl_lower_add(L, env->computation, op, HL_OP_CALL, &c->root->shape, operands,
                                  op->operand_count, &call));
  HL_RETURN_IF_ERROR(hl_instruction_set_called(call, &c, 1));
  const hl_lower_func_t *f = NULL;
  for (int i = 0; i < L->func_count; i++)
    if (L->funcs[i].computation == c) f = &L->funcs[i];
  int nres = f ? f->op->result_type_count : 1;
  if (nres == 1) return hl_lower_bind_results(L, env, op, &call, 1);
  hl_instruction_t **res = hl_calloc((size_t)nres + 1, sizeof(*res));
  if (!res) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < nres; i++) st = hl_lower_add_gte(L, env->computation, op, call, i, &res[i]);
  if (!st) st = hl_lower_bind_results(L, env, op, res, nres);
  hl_free(res);
  return st;
}

//===----------------------------------------------------------------------===//
// interpreter.run_parallel: the programs grid on the job's ranks
//===----------------------------------------------------------------------===//

// The results of every process, on every rank: each rank runs its own
// program (a conditional on its flat id replica * P + partition); then, for
// each result, an all-gather over all ranks (flattened ids) brings process
// k's value (zeros elsewhere) to every rank, which keeps row k. Tokens are
// local (after-all).
typedef struct parallel {
  hl_lower_t *L;
  const hl_mlir_op_t *op;
  hl_computation_t *outer;
  int nproc;
  hl_lower_func_t **fns;  // per process
  int *arg_start, *res_start;
  int nargs, nres;
  hl_shape_t *res_shapes;  // all results, process-major (owned by the func ops)
} parallel_t;

static hl_status_t zero_of(hl_lower_t *L, hl_computation_t *c, const hl_mlir_op_t *op,
                           const hl_shape_t *s, hl_instruction_t **out) {
  if (s->dtype == HL_TOKEN) return hl_lower_add(L, c, op, HL_OP_AFTER_ALL, s, NULL, 0, out);
  if (s->dtype == HL_TUPLE) {  // a tuple of the elements' zeros
    hl_instruction_t **parts = hl_calloc((size_t)s->tuple_count + 1, sizeof(*parts));
    if (!parts) return HL_OOM();
    hl_status_t st = NULL;
    for (int i = 0; !st && i < s->tuple_count; i++) st = zero_of(L, c, op, &s->tuple[i], &parts[i]);
    if (!st) st = hl_lower_add_tuple(L, c, op, parts, s->tuple_count, out);
    hl_free(parts);
    return st;
  }
  hl_shape_t scalar = hl_shape_scalar(s->dtype);
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_literal_create(&scalar, &lit));
  hl_instruction_t *z;
  hl_status_t st = hl_lower_add(L, c, op, HL_OP_CONSTANT, &scalar, NULL, 0, &z);
  if (st) {
    hl_literal_release(lit);
    return st;
  }
  z->attrs.literal = lit;
  return hl_lower_add(L, c, op, HL_OP_BROADCAST, s, &z, 1, out);
}

static hl_status_t parallel_branch(parallel_t *pp, int k, const hl_shape_t *args_shape,
                                   const hl_shape_t *all_shape, hl_computation_t **out) {
  hl_lower_t *L = pp->L;
  const hl_mlir_op_t *op = pp->op;
  hl_computation_t *c, *fn;
  HL_RETURN_IF_ERROR(new_computation(L, L->func_name, &c));
  HL_RETURN_IF_ERROR(hl_lower_function(L, pp->fns[k]->op->symbol, op, &fn));
  hl_instruction_t *param;
  HL_RETURN_IF_ERROR(add_parameter(L, c, op, 0, args_shape, &param));
  int na = pp->fns[k]->op->operand_type_count, nr = pp->fns[k]->op->result_type_count;
  hl_instruction_t **args = hl_calloc((size_t)na + 1, sizeof(*args));
  hl_instruction_t **slots = hl_calloc((size_t)pp->nres + 1, sizeof(*slots));
  hl_status_t st = args && slots ? NULL : HL_OOM();
  for (int i = 0; !st && i < na; i++) st = hl_lower_add_gte(L, c, op, param, pp->arg_start[k] + i, &args[i]);
  hl_instruction_t *call = NULL;
  if (!st) st = hl_lower_add(L, c, op, HL_OP_CALL, &fn->root->shape, args, na, &call);
  if (!st) st = hl_instruction_set_called(call, &fn, 1);
  for (int j = 0; !st && j < pp->nres; j++) {
    int own = j - pp->res_start[k];
    if (own >= 0 && own < nr)
      st = nr == 1 ? (slots[j] = call, NULL) : hl_lower_add_gte(L, c, op, call, own, &slots[j]);
    else
      st = zero_of(L, c, op, &all_shape->tuple[j], &slots[j]);
  }
  if (!st) st = hl_lower_add_tuple(L, c, op, slots, pp->nres, &c->root);
  if (!st) st = hl_computation_index_parameters(c);
  hl_free(args);
  hl_free(slots);
  if (!st) *out = c;
  return st;
}

// Row `k` of an all-gather of v over every rank of the grid.
static hl_status_t value_of_process(parallel_t *pp, hl_instruction_t *v, int k,
                                    hl_instruction_t **out) {
  hl_lower_t *L = pp->L;
  const hl_mlir_op_t *op = pp->op;
  hl_computation_t *c = pp->outer;
  const hl_shape_t *s = &v->shape;
  if (s->rank + 1 > HL_MAX_RANK) return hl_lower_op_error(L, op, "result rank too high");
  int64_t dims[HL_MAX_RANK];
  dims[0] = 1;
  for (int d = 0; d < s->rank; d++) dims[d + 1] = s->dims[d];
  hl_shape_t one = hl_shape_array(s->dtype, s->rank + 1, dims);
  hl_instruction_t *r, *g, *sl;
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_RESHAPE, &one, &v, 1, &r));
  dims[0] = pp->nproc;
  hl_shape_t all = hl_shape_array(s->dtype, s->rank + 1, dims);
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_ALL_GATHER, &all, &r, 1, &g));
  int64_t zero = 0;
  HL_RETURN_IF_ERROR(hl_i64_list_set(&g->attrs.dimensions, &zero, 1));
  g->attrs.channel_id = ++L->next_channel;
  g->attrs.use_global_device_ids = true;
  hl_attrs_t *a = &g->attrs;
  a->replica_groups.kind = HL_GROUPS_LIST;
  a->replica_groups.groups = hl_calloc(1, sizeof(hl_i64_list_t));
  int64_t *ids = hl_calloc((size_t)pp->nproc, sizeof(int64_t));
  if (!a->replica_groups.groups || !ids) {
    hl_free(ids);
    return HL_OOM();
  }
  a->replica_groups.group_count = 1;
  for (int i = 0; i < pp->nproc; i++) ids[i] = i;
  hl_status_t st = hl_i64_list_set(&a->replica_groups.groups[0], ids, pp->nproc);
  hl_free(ids);
  HL_RETURN_IF_ERROR(st);
  dims[0] = 1;
  HL_RETURN_IF_ERROR(hl_lower_add(L, c, op, HL_OP_SLICE, &one, &g, 1, &sl));
  sl->attrs.slice_dimensions = hl_calloc((size_t)s->rank + 1, sizeof(hl_slice_dim_t));
  if (!sl->attrs.slice_dimensions) return HL_OOM();
  sl->attrs.slice_count = s->rank + 1;
  sl->attrs.slice_dimensions[0] = (hl_slice_dim_t){k, k + 1, 1};
  for (int d = 0; d < s->rank; d++) sl->attrs.slice_dimensions[d + 1] = (hl_slice_dim_t){0, s->dims[d], 1};
  return hl_lower_add(L, c, op, HL_OP_RESHAPE, s, &sl, 1, out);
}

// The programs' send / recv / infeed (lower_channels.c).
static hl_status_t parallel_channels(parallel_t *pp) {
  hl_computation_t **programs = hl_calloc((size_t)pp->nproc, sizeof(*programs));
  if (!programs) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; !st && k < pp->nproc; k++)
    st = hl_lower_function(pp->L, pp->fns[k]->op->symbol, pp->op, &programs[k]);
  if (!st)
    st = hl_lower_parallel_channels(pp->L, pp->op, programs, pp->nproc,
                                    (int)pp->L->parallel_partitions);
  hl_free(programs);
  return st;
}

// value_of_process through a tuple result: each array leaf from process k,
// tokens local.
static hl_status_t tuple_of_process(parallel_t *pp, hl_instruction_t *v, int k, int depth,
                                    hl_instruction_t **out) {
  const hl_shape_t *s = &v->shape;
  if (s->dtype == HL_TOKEN) {
    *out = v;
    return NULL;
  }
  if (s->dtype != HL_TUPLE) return value_of_process(pp, v, k, out);
  if (depth > 32) return hl_lower_op_error(pp->L, pp->op, "result tuples nest too deeply");
  hl_instruction_t **parts = hl_calloc((size_t)s->tuple_count + 1, sizeof(*parts));
  if (!parts) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < s->tuple_count; i++) {
    hl_instruction_t *e;
    st = hl_lower_add_gte(pp->L, pp->outer, pp->op, v, i, &e);
    if (!st) st = tuple_of_process(pp, e, k, depth + 1, &parts[i]);
  }
  if (!st) st = hl_lower_add_tuple(pp->L, pp->outer, pp->op, parts, s->tuple_count, out);
  hl_free(parts);
  return st;
}

static hl_status_t lower_run_parallel(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                      hl_instruction_t *const *operands) {
  const hl_mlir_attr_t *progs = hl_mlir_op_attr(op, "programs");
  if (!progs || progs->kind != HL_MATTR_ARRAY || progs->n < 1)
    return hl_lower_op_error(L, op, "needs programs = [[@f, ...], ...]");
  int R = progs->n, P = progs->items[0].n;
  for (int r = 0; r < R; r++)
    if (progs->items[r].kind != HL_MATTR_ARRAY || progs->items[r].n != P || P < 1)
      return hl_lower_op_error(L, op, "programs must be R lists of P function symbols each");
  if ((L->parallel_replicas && L->parallel_replicas != R) ||
      (L->parallel_partitions && L->parallel_partitions != P))
    return hl_lower_op_error(L, op, "uses a %dx%d grid, an earlier run_parallel %lldx%lld", R, P,
                             (long long)L->parallel_replicas, (long long)L->parallel_partitions);
  L->parallel_replicas = R;
  L->parallel_partitions = P;
  parallel_t pp = {.L = L, .op = op, .outer = env->computation, .nproc = R * P};
  pp.fns = hl_calloc((size_t)pp.nproc, sizeof(*pp.fns));
  pp.arg_start = hl_calloc((size_t)pp.nproc + 1, sizeof(int));
  pp.res_start = hl_calloc((size_t)pp.nproc + 1, sizeof(int));
  hl_computation_t **branches = hl_calloc((size_t)pp.nproc, sizeof(*branches));
  hl_instruction_t **cond_ops = hl_calloc((size_t)pp.nproc + 1, sizeof(*cond_ops));
  hl_shape_t *res = NULL;
  hl_shape_t args_shape = {0}, all_shape = {0};
  hl_instruction_t **results = NULL;
  hl_status_t st = pp.fns && pp.arg_start && pp.res_start && branches && cond_ops ? NULL : HL_OOM();
  for (int k = 0; !st && k < pp.nproc; k++) {
    const hl_mlir_attr_t *sym = &progs->items[k / P].items[k % P];
    if (sym->kind != HL_MATTR_SYMBOL) {
      st = hl_lower_op_error(L, op, "programs must hold @function symbols");
      break;
    }
    for (int i = 0; i < L->func_count; i++)
      if (strcmp(L->funcs[i].op->symbol, sym->s) == 0) pp.fns[k] = &L->funcs[i];
    if (!pp.fns[k]) {
      st = hl_lower_op_error(L, op, "refers to an undefined function @%s", sym->s);
      break;
    }
    pp.arg_start[k + 1] = pp.arg_start[k] + pp.fns[k]->op->operand_type_count;
    pp.res_start[k + 1] = pp.res_start[k] + pp.fns[k]->op->result_type_count;
  }
  if (!st) {
    pp.nargs = pp.arg_start[pp.nproc];
    pp.nres = pp.res_start[pp.nproc];
    if (pp.nargs != op->operand_count || pp.nres != op->result_count)
      st = hl_lower_op_error(L, op, "has %d operands and %d results; its programs take %d and "
                             "return %d", op->operand_count, op->result_count, pp.nargs, pp.nres);
  }
  if (!st) {
    res = hl_calloc((size_t)pp.nres + 1, sizeof(*res));
    results = hl_calloc((size_t)pp.nres + 1, sizeof(*results));
    if (!res || !results) st = HL_OOM();
  }
  for (int k = 0; !st && k < pp.nproc; k++)
    for (int j = 0; j < pp.fns[k]->op->result_type_count; j++)
      res[pp.res_start[k] + j] = pp.fns[k]->op->result_types[j];  // shallow
  hl_instruction_t *arg_tuple = NULL, *cond = NULL, *id = NULL;
  if (!st) st = hl_shape_tuple(res, pp.nres, &all_shape);
  // infeed functions enqueue first; their token, an extra last element of
  // the arguments tuple that no program reads, orders them before the programs.
  hl_instruction_t *feed = NULL, **args = NULL;
  if (!st) st = hl_lower_parallel_infeed(L, env, op, &feed);
  if (!st && !(args = hl_calloc((size_t)op->operand_count + 2, sizeof(*args)))) st = HL_OOM();
  if (!st) {
    memcpy(args, operands, (size_t)op->operand_count * sizeof(*args));
    if (feed) args[op->operand_count] = feed;
    st = hl_lower_add_tuple(L, env->computation, op, args, op->operand_count + (feed != NULL),
                            &arg_tuple);
  }
  hl_free(args);
  if (!st) st = hl_shape_copy(&arg_tuple->shape, &args_shape);
  for (int k = 0; !st && k < pp.nproc; k++) st = parallel_branch(&pp, k, &args_shape, &all_shape, &branches[k]);
  if (!st) st = parallel_channels(&pp);
  // id = replica_id * P + partition_id, as s32.
  if (!st) {
    hl_shape_t u32 = hl_shape_scalar(HL_U32), s32 = hl_shape_scalar(HL_S32);
    hl_instruction_t *rid, *pid, *pc, *mul, *sum;
    hl_literal_t *lit = NULL;
    st = hl_lower_add(L, env->computation, op, HL_OP_REPLICA_ID, &u32, NULL, 0, &rid);
    if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_PARTITION_ID, &u32, NULL, 0, &pid);
    if (!st) st = hl_literal_create(&u32, &lit);
    if (!st) {
      *(uint32_t *)lit->data = (uint32_t)P;
      st = hl_lower_add(L, env->computation, op, HL_OP_CONSTANT, &u32, NULL, 0, &pc);
      if (st) hl_literal_release(lit);
      else pc->attrs.literal = lit;
    }
    hl_instruction_t *ops2[2];
    if (!st) {
      ops2[0] = rid;
      ops2[1] = pc;
      st = hl_lower_add(L, env->computation, op, HL_OP_MULTIPLY, &u32, ops2, 2, &mul);
    }
    if (!st) {
      ops2[0] = mul;
      ops2[1] = pid;
      st = hl_lower_add(L, env->computation, op, HL_OP_ADD, &u32, ops2, 2, &sum);
    }
    if (!st) st = hl_lower_add(L, env->computation, op, HL_OP_CONVERT, &s32, &sum, 1, &id);
  }
  if (!st) {
    cond_ops[0] = id;
    for (int k = 0; k < pp.nproc; k++) cond_ops[k + 1] = arg_tuple;
    st = hl_lower_add(L, env->computation, op, HL_OP_CONDITIONAL, &all_shape, cond_ops,
                      pp.nproc + 1, &cond);
  }
  if (!st) st = hl_instruction_set_called(cond, branches, pp.nproc);
  for (int k = 0; !st && k < pp.nproc; k++)
    for (int j = pp.res_start[k]; !st && j < pp.res_start[k + 1]; j++) {
      hl_instruction_t *g;
      st = hl_lower_add_gte(L, env->computation, op, cond, j, &g);
      if (st) break;
      if (res[j].dtype == HL_TOKEN) results[j] = g;
      else st = tuple_of_process(&pp, g, k, 0, &results[j]);
    }
  if (!st) st = hl_lower_bind_results(L, env, op, results, pp.nres);
  hl_shape_deinit(&args_shape);
  hl_shape_deinit(&all_shape);
  hl_free(res);
  hl_free(results);
  hl_free(pp.fns);
  hl_free(pp.arg_start);
  hl_free(pp.res_start);
  hl_free(branches);
  hl_free(cond_ops);
  return st;
}

hl_status_t hl_lower_control_flow(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                  hl_instruction_t *const *operands, bool *out_handled) {
  *out_handled = true;
  const char *n = op->name;
  if (strcmp(n, "stablehlo.while") == 0) return lower_while(L, env, op, operands);
  if (strcmp(n, "stablehlo.if") == 0 || strcmp(n, "stablehlo.case") == 0) {
    if (op->operand_count != 1) return hl_lower_op_error(L, op, "takes one selector operand");
    hl_instruction_t *sel = operands[0];
    if (strcmp(n, "stablehlo.case") == 0 && sel->shape.dtype != HL_S32) {
      hl_shape_t s32 = hl_shape_scalar(HL_S32);
      HL_RETURN_IF_ERROR(hl_lower_add(L, env->computation, op, HL_OP_CONVERT, &s32, &sel, 1, &sel));
    }
    if (strcmp(n, "stablehlo.if") == 0 && op->region_count != 2)
      return hl_lower_op_error(L, op, "needs a true and a false region");
    return lower_branches(L, env, op, sel);
  }
  if (strcmp(n, "func.call") == 0 || strcmp(n, "call") == 0 ||
      strcmp(n, "stablehlo.composite") == 0)
    return lower_call(L, env, op, operands);
  if (strcmp(n, "interpreter.run_parallel") == 0) return lower_run_parallel(L, env, op, operands);
  return hl_lower_sdy_op(L, env, op, operands, out_handled);  // sdy.* (sharding_attrs.c)
}

//===----------------------------------------------------------------------===//
// Functions and the module
//===----------------------------------------------------------------------===//

static hl_status_t lower_function_body(hl_lower_t *L, hl_lower_func_t *f) {
  const hl_mlir_op_t *fn = f->op;
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(hl_module_add_computation(L->module, fn->symbol, &c));
  const char *saved_name = L->func_name;
  L->func_name = fn->symbol;
  hl_lower_env_t env = {.computation = c};
  const hl_mlir_block_t *b = &fn->regions[0].blocks[0];
  hl_status_t st = NULL;
  bool refined_entry = L->refining && fn == L->refine_entry_op;
  if (refined_entry) L->refine_entry = c;
  for (int i = 0; !st && i < b->arg_count; i++) {
    hl_instruction_t *p;
    hl_shape_t given = {0};
    if (refined_entry) st = hl_refine_parameter(L, fn, i, &b->arg_types[i], &given);
    if (!st) st = add_parameter(L, c, fn, i, refined_entry ? &given : &b->arg_types[i], &p);
    hl_shape_deinit(&given);
    if (!st) st = hl_quant_note(L, p, hl_mlir_quant_id(&b->arg_quant, i));
    if (!st) st = hl_lower_bind(&env, b->arg_names[i], &p, 1);
  }
  hl_instruction_t **vals = NULL;
  int n = 0;
  if (!st) st = lower_block(L, &env, b, fn, &vals, &n);
  if (!st && n != fn->result_type_count)
    st = hl_lower_op_error(L, fn, "@%s returns %d values but its signature has %d", fn->symbol, n,
                           fn->result_type_count);
  for (int i = 0; !st && i < n; i++)
    if (L->refining ? !hl_refine_compatible(&fn->result_types[i], &vals[i]->shape)
                    : !hl_shape_equal(&vals[i]->shape, &fn->result_types[i]))
      st = hl_lower_op_error(L, fn, "@%s returns %s as result %d, its signature says %s",
                             fn->symbol, hl_shape_debug_string(&vals[i]->shape), i,
                             hl_shape_debug_string(&fn->result_types[i]));
  if (!st) st = set_root(L, c, fn, vals, n, false);
  if (!st) st = hl_computation_index_parameters(c);
  hl_free(vals);
  env_deinit(&env);
  L->func_name = saved_name;
  if (!st) f->computation = c;
  return st;
}

hl_status_t hl_lower_function(hl_lower_t *L, const char *name, const hl_mlir_op_t *at,
                              hl_computation_t **out) {
  for (int i = 0; i < L->func_count; i++) {
    hl_lower_func_t *f = &L->funcs[i];
    if (strcmp(f->op->symbol, name) != 0) continue;
    if (!f->computation) {
      if (f->lowering) return hl_lower_op_error(L, at, "calls @%s recursively", name);
      f->lowering = true;
      hl_status_t st = lower_function_body(L, f);
      f->lowering = false;
      if (st) return st;
    }
    *out = f->computation;
    return NULL;
  }
  return hl_lower_op_error(L, at, "refers to an undefined function @%s", name);
}

// Symbols the functions refer to (calls, run_parallel programs, ...), to
// find the entry when there is no @main.
static bool refers_to(const hl_mlir_attr_t *a, const char *sym) {
  if (a->kind == HL_MATTR_SYMBOL) return strcmp(a->s, sym) == 0;
  for (int i = 0; i < a->n; i++)
    if (refers_to(&a->items[i], sym)) return true;
  return false;
}

static bool op_refers_to(const hl_mlir_op_t *op, const char *sym) {
  for (int i = 0; i < op->attr_count; i++)
    if (refers_to(&op->attrs[i], sym)) return true;
  for (int i = 0; i < op->item_count; i++)
    if (refers_to(&op->items[i], sym)) return true;
  for (int r = 0; r < op->region_count; r++)
    for (int b = 0; b < op->regions[r].block_count; b++)
      for (int k = 0; k < op->regions[r].blocks[b].op_count; k++)
        if (op_refers_to(&op->regions[r].blocks[b].ops[k], sym)) return true;
  return false;
}

// The entry: @main; else the one function nothing refers to; else (a test
// file's case with several) a computation calling each of those in turn,
// all of which must take no arguments.
static hl_status_t pick_entry(hl_lower_t *L, hl_computation_t **out) {
  *out = NULL;
  for (int i = 0; i < L->func_count; i++)
    if (strcmp(L->funcs[i].op->symbol, "main") == 0)
      return hl_lower_function(L, "main", L->funcs[i].op, out);
  hl_instruction_t **calls = hl_calloc((size_t)L->func_count + 1, sizeof(*calls));
  if (!calls) return HL_OOM();
  int n = 0, only = -1;
  hl_status_t st = NULL;
  for (int i = 0; i < L->func_count; i++) {
    bool referenced = false;
    for (int j = 0; j < L->func_count && !referenced; j++)
      referenced = j != i && op_refers_to(L->funcs[j].op, L->funcs[i].op->symbol);
    if (!referenced) calls[n++] = NULL, only = only < 0 ? i : -2;
  }
  if (n == 0) st = hl_mlir_error_pos(L->file->path, 1, 1, "no function to run");
  if (!st && only >= 0) st = hl_lower_function(L, L->funcs[only].op->symbol, L->funcs[only].op, out);
  if (st || only >= 0) {
    hl_free(calls);
    return st;
  }
  hl_computation_t *entry;
  st = hl_module_add_computation(L->module, "run_all_functions", &entry);
  n = 0;
  for (int i = 0; !st && i < L->func_count; i++) {
    const hl_mlir_op_t *fn = L->funcs[i].op;
    bool referenced = false;
    for (int j = 0; j < L->func_count && !referenced; j++)
      referenced = j != i && op_refers_to(L->funcs[j].op, fn->symbol);
    if (referenced) continue;
    if (fn->operand_type_count)
      st = hl_lower_op_error(L, fn, "@%s takes arguments but is one of several entry candidates "
                             "(no @main)", fn->symbol);
    hl_computation_t *c;
    if (!st) st = hl_lower_function(L, fn->symbol, fn, &c);
    if (!st) st = hl_lower_add(L, entry, fn, HL_OP_CALL, &c->root->shape, NULL, 0, &calls[n]);
    if (!st) st = hl_instruction_set_called(calls[n++], &c, 1);
  }
  if (!st) st = hl_lower_add_tuple(L, entry, NULL, NULL, 0, &entry->root);
  hl_free(calls);
  if (!st) *out = entry;
  return st;
}

// Callees before callers, entry last (as the HLO text parser stores them).
static void visit(hl_computation_t *c, bool *seen, hl_computation_t **order, int *n) {
  if (seen[c->id]) return;
  seen[c->id] = true;
  for (int i = 0; i < c->instruction_count; i++)
    for (int j = 0; j < c->instructions[i]->called_count; j++)
      visit(c->instructions[i]->called_computations[j], seen, order, n);
  order[(*n)++] = c;
}

static hl_status_t order_computations(hl_module_t *m) {
  int n = m->computation_count, k = 0;
  bool *seen = hl_calloc((size_t)n + 1, sizeof(bool));
  hl_computation_t **order = hl_calloc((size_t)n + 1, sizeof(*order));
  if (!seen || !order) {
    hl_free(seen);
    hl_free(order);
    return HL_OOM();
  }
  for (int i = 0; i < n; i++)
    if (m->computations[i] != m->entry) visit(m->computations[i], seen, order, &k);
  visit(m->entry, seen, order, &k);
  memcpy(m->computations, order, (size_t)n * sizeof(*order));
  hl_free(seen);
  hl_free(order);
  return NULL;
}

static int64_t module_int_attr(const hl_mlir_file_t *f, const char *name) {
  for (int i = 0; i < f->module_attr_count; i++)
    if (strcmp(f->module_attr_names[i], name) == 0 && f->module_attrs[i].kind == HL_MATTR_INT)
      return f->module_attrs[i].i;
  return 0;
}

// After refinement no shape may be dynamic: a value left so (through an op
// that keeps the declared type) is an error naming it.
static hl_status_t check_refined(hl_lower_t *L) {
  for (int k = 0; k < L->module->computation_count; k++) {
    const hl_computation_t *c = L->module->computations[k];
    for (int i = 0; i < c->instruction_count; i++) {
      const hl_instruction_t *inst = c->instructions[i];
      if (hl_refine_shape_is_dynamic(&inst->shape))
        return hl_mlir_error_pos(L->file->path, inst->line, inst->column,
                                 "the %s here has the type %s, whose dynamic dimensions cannot be "
                                 "refined from the argument shapes",
                                 hl_opcode_name(inst->opcode), hl_shape_debug_string(&inst->shape));
    }
  }
  return NULL;
}

static hl_status_t lower_file(hl_lower_t *L) {
  const hl_mlir_file_t *f = L->file;
  if (f->op_count == 0) return hl_mlir_error_pos(f->path, 1, 1, "no func.func in the file");
  L->funcs = hl_calloc((size_t)f->op_count, sizeof(*L->funcs));
  if (!L->funcs) return HL_OOM();
  for (int i = 0; i < f->op_count; i++) {
    for (int j = 0; j < i; j++)
      if (strcmp(f->ops[j].symbol, f->ops[i].symbol) == 0)
        return hl_mlir_error_pos(f->path, f->ops[i].line, f->ops[i].column,
                                 "redefinition of @%s", f->ops[i].symbol);
    L->funcs[L->func_count++].op = &f->ops[i];
  }
  if (L->refining) {
    for (int i = 0; i < L->func_count && !L->refine_entry_op; i++)
      if (strcmp(L->funcs[i].op->symbol, "main") == 0) L->refine_entry_op = L->funcs[i].op;
    if (!L->refine_entry_op)
      return hl_mlir_error_pos(f->path, 1, 1, "a program with dynamic shapes needs an entry "
                               "function @main (its arguments refine them)");
  }
  hl_computation_t *c;
  HL_RETURN_IF_ERROR(pick_entry(L, &c));
  L->module->entry = c;
  if (L->refining) HL_RETURN_IF_ERROR(check_refined(L));
  HL_RETURN_IF_ERROR(hl_lower_entry_shardings(L));  // argument / result shardings (sharding_attrs.c)
  L->module->replica_count = module_int_attr(f, "mhlo.num_replicas");
  L->module->num_partitions = module_int_attr(f, "mhlo.num_partitions");
  if (L->parallel_replicas) {  // run_parallel's programs grid
    if ((L->module->replica_count && L->module->replica_count != L->parallel_replicas) ||
        (L->module->num_partitions && L->module->num_partitions != L->parallel_partitions))
      return hl_mlir_error_pos(f->path, 1, 1, "mhlo.num_replicas / num_partitions disagree with "
                               "interpreter.run_parallel's programs grid");
    L->module->replica_count = L->parallel_replicas;
    L->module->num_partitions = L->parallel_partitions;
  }
  return order_computations(L->module);
}

// Lowers a parsed file; with dynamic shapes, refined from args (refine_shapes.c).
static hl_status_t lower_parsed(const hl_mlir_file_t *file, const char *path,
                                hl_literal_t *const *args, int arg_count,
                                hl_module_t **out_module) {
  *out_module = NULL;
  hl_lower_t L;
  memset(&L, 0, sizeof(L));
  L.file = file;
  L.refining = file->has_dynamic_shapes;
  L.refine_args = args;
  L.refine_arg_count = arg_count;
  hl_status_t st = hl_module_create(file->module_name ? file->module_name : "stablehlo", &L.module);
  if (!st) {
    L.module->source_path = hl_strdup(path);
    if (!L.module->source_path) st = HL_OOM();
  }
  if (!st) st = lower_file(&L);
  hl_free(L.funcs);
  hl_free(L.quant_by_id);
  hl_refine_release(&L);
  if (st) {
    hl_module_destroy(L.module);
    return st;
  }
  *out_module = L.module;
  return NULL;
}

static hl_status_t needs_arguments(const char *path) {
  return HL_INVALID("%s: the program has dynamic shapes ('?' dimensions): they are refined from "
                    "the arguments, so it needs them as .npy files (--args, --args-dir or "
                    "--global-args)", path);
}

hl_status_t hl_stablehlo_lower_file(const hl_mlir_file_t *file, const char *path,
                                    hl_module_t **out_module) {
  *out_module = NULL;
  if (file->has_dynamic_shapes) return needs_arguments(path);
  return lower_parsed(file, path, NULL, -1, out_module);
}

hl_status_t hl_stablehlo_load(const char *text, size_t length, const char *path, int first_line,
                              hl_module_t **out_module) {
  return hl_stablehlo_load_with_args(text, length, path, first_line, NULL, -1, out_module, NULL);
}

hl_status_t hl_stablehlo_load_with_args(const char *text, size_t length, const char *path,
                                        int first_line, hl_literal_t *const *args, int arg_count,
                                        hl_module_t **out_module, bool *out_needs_args) {
  *out_module = NULL;
  if (out_needs_args) *out_needs_args = false;
  if (!path) path = "<mlir>";
  hl_mlir_file_t file;
  HL_RETURN_IF_ERROR(hl_mlir_parse(text, length, path, first_line, &file));
  hl_status_t st = NULL;
  if (file.has_dynamic_shapes && arg_count < 0) {
    if (out_needs_args) *out_needs_args = true;
    st = needs_arguments(path);
  } else {
    st = lower_parsed(&file, path, args, arg_count, out_module);
  }
  hl_mlir_file_deinit(&file);
  return st;
}

hl_status_t hl_stablehlo_lower_file_with_args(const hl_mlir_file_t *file, const char *path,
                                              hl_literal_t *const *args, int arg_count,
                                              hl_module_t **out_module) {
  *out_module = NULL;
  if (file->has_dynamic_shapes && arg_count < 0) return needs_arguments(path);
  return lower_parsed(file, path, args, arg_count, out_module);
}

hl_status_t hl_stablehlo_file_entry_types(const hl_mlir_file_t *file, const char *path,
                                          hl_shape_t **out_types, int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  const hl_mlir_op_t *main_fn = NULL;
  for (int i = 0; i < file->op_count; i++)
    if (file->ops[i].symbol && strcmp(file->ops[i].symbol, "main") == 0) main_fn = &file->ops[i];
  if (!main_fn || main_fn->region_count < 1 || main_fn->regions[0].block_count < 1)
    return HL_INVALID("%s: a program with dynamic shapes needs an entry function @main", path);
  const hl_mlir_block_t *b = &main_fn->regions[0].blocks[0];
  hl_shape_t *types = hl_calloc((size_t)b->arg_count + 1, sizeof(hl_shape_t));
  if (!types) return HL_OOM();
  hl_status_t st = NULL;
  for (int i = 0; !st && i < b->arg_count; i++) st = hl_shape_copy(&b->arg_types[i], &types[i]);
  if (st) {
    for (int i = 0; i < b->arg_count; i++) hl_shape_deinit(&types[i]);
    hl_free(types);
    return st;
  }
  *out_types = types;
  *out_count = b->arg_count;
  return NULL;
}

hl_status_t hl_stablehlo_entry_types(const char *text, size_t length, const char *path,
                                     hl_shape_t **out_types, int *out_count) {
  *out_types = NULL;
  *out_count = 0;
  if (!path) path = "<mlir>";
  hl_mlir_file_t file;
  HL_RETURN_IF_ERROR(hl_mlir_parse(text, length, path, 1, &file));
  hl_status_t st = hl_stablehlo_file_entry_types(&file, path, out_types, out_count);
  hl_mlir_file_deinit(&file);
  return st;
}

//===----------------------------------------------------------------------===//
// Format detection and --split-input-file
//===----------------------------------------------------------------------===//

bool hl_stablehlo_looks_like(const char *text, size_t n) {
  size_t i = 0;
  for (;;) {
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
    if (i + 1 < n && text[i] == '/' && text[i + 1] == '/') {
      while (i < n && text[i] != '\n') i++;
      continue;
    }
    break;
  }
  const char *s = text + i;
  size_t left = n - i;
  static const char *const kStarts[] = {"module", "func.func", "\"builtin.module\"",
                                        "\"func.func\"", NULL};
  for (int k = 0; kStarts[k]; k++) {
    size_t len = strlen(kStarts[k]);
    if (left > len && memcmp(s, kStarts[k], len) == 0 &&
        (s[len] == ' ' || s[len] == '{' || s[len] == '@' || s[len] == '(' || s[len] == '\n'))
      return true;
  }
  // #alias = ... / !alias = ...
  if (left > 2 && (s[0] == '#' || s[0] == '!')) {
    size_t k = 1;
    while (k < left && s[k] != ' ' && s[k] != '=' && s[k] != '\n') k++;
    while (k < left && s[k] == ' ') k++;
    return k < left && s[k] == '=';
  }
  return false;
}

static bool is_separator_line(const char *s, size_t len) {
  // "// -----" (optionally with trailing spaces), as mlir's splitInputFile.
  size_t i = 0;
  while (i < len && (s[i] == ' ' || s[i] == '\t')) i++;
  if (len - i < 8 || memcmp(s + i, "// -----", 8) != 0) return false;
  i += 8;
  while (i < len && (s[i] == '-' || s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
  return i == len;
}

hl_status_t hl_stablehlo_split_cases(const char *text, size_t n, hl_mlir_case_t **out_cases,
                                     int *out_count) {
  *out_cases = NULL;
  *out_count = 0;
  hl_mlir_case_t *cases = NULL;
  int count = 0;
  size_t start = 0, line_begin = 0;
  int line = 1, start_line = 1;
  for (;;) {
    size_t eol = line_begin;
    while (eol < n && text[eol] != '\n') eol++;
    bool sep = is_separator_line(text + line_begin, eol - line_begin);
    if (sep || eol >= n) {
      size_t end = sep ? line_begin : n;
      hl_mlir_case_t *nc = hl_realloc(cases, (size_t)(count + 1) * sizeof(*nc));
      if (!nc) {
        hl_free(cases);
        return HL_OOM();
      }
      cases = nc;
      cases[count++] = (hl_mlir_case_t){start, end - start, start_line};
      if (!sep) break;
      start = eol < n ? eol + 1 : n;
      start_line = line + 1;
    }
    if (eol >= n) break;
    line_begin = eol + 1;
    line++;
  }
  *out_cases = cases;
  *out_count = count;
  return NULL;
}
