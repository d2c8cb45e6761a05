// while with its loop state sharded: the state keeps one sharding on every
// trip, the fixed point of the init tuple's shardings through the body
// (settle_state). The body is partitioned as a program of its own
// whose parameters (the state's elements) carry those shardings and whose
// root tuple is annotated with them, so wherever the body's propagated root
// sharding differs, the body ends by resharding to the state's. The condition is partitioned
// the same way with its root pred replicated (a reduce over a split dimension
// gets its all-reduce by the ordinary rules). The partitioned computations
// join the per-partition module; their collectives take channel ids after
// the entry's so far. Anything the nested partitioning refuses, and states
// that are not a tuple instruction of arrays, fall back (noted).
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/dtype.h"
#include "runtime/spmd/spmd_internal.h"
#include "runtime/text/hlo_parser.h"
#include "runtime/text/hlo_printer.h"

// A state that is an array has one element (S[0]).
static void print_state_shape(const hl_shape_t *state, const hl_spmd_sharding_t *S, hl_strbuf_t *out) {
  if (!hl_shape_is_tuple(state)) {
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(state, &S[0], dims);
    spmd_shape_text(state->dtype, state->rank, dims, out);
    return;
  }
  hl_strbuf_append(out, "(");
  for (int k = 0; k < state->tuple_count; k++) {
    int64_t dims[HL_MAX_RANK];
    spmd_local_dims(&state->tuple[k], &S[k], dims);
    if (k) hl_strbuf_append(out, ", ");
    spmd_shape_text(state->tuple[k].dtype, state->tuple[k].rank, dims, out);
  }
  hl_strbuf_append(out, ")");
}

static bool is_program_computation(const spmd_ctx_t *c, const char *name) {
  for (int k = 0; k < c->module->computation_count; k++)
    if (strcmp(c->module->computations[k]->name, name) == 0) return true;
  return false;
}

// A global program whose entry is `comp` run on the loop state (elements as
// array parameters with shardings S), its root annotated `root_sharding`
// (NULL: left to propagation).
static hl_status_t sub_module(spmd_ctx_t *c, const hl_computation_t *comp, const hl_shape_t *state,
                              const hl_spmd_sharding_t *S, const char *root_sharding, hl_module_t **out) {
  hl_strbuf_t t;
  hl_strbuf_init(&t);
  hl_strbuf_appendf(&t, "HloModule spmd.%s\n\n", comp->name);
  for (int k = 0; k < c->module->computation_count; k++) {
    const hl_computation_t *f = c->module->computations[k];
    if (f == c->entry) continue;
    hl_strbuf_appendf(&t, "%s {\n", f->name);
    for (int i = 0; i < f->instruction_count; i++) {
      hl_strbuf_append(&t, "  ");
      hl_print_instruction(f->instructions[i], &t);
      hl_strbuf_append(&t, "\n");
    }
    hl_strbuf_append(&t, "}\n\n");
  }
  hl_strbuf_appendf(&t, "ENTRY spmd.%s {\n", comp->name);
  bool array = !hl_shape_is_tuple(state);
  for (int k = 0; k < (array ? 1 : state->tuple_count); k++) {
    hl_strbuf_appendf(&t, "  spmd.state.%d = ", k);
    hl_shape_print(array ? state : &state->tuple[k], false, &t);
    hl_strbuf_appendf(&t, " parameter(%d), sharding=", k);
    hl_spmd_print(&S[k], &t);
    hl_strbuf_append(&t, "\n");
  }
  for (int i = 0; i < comp->instruction_count; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    if (inst->opcode == HL_OP_PARAMETER) {  // the state, rebuilt from its elements
      hl_strbuf_appendf(&t, "  %s%s = ", inst == comp->root ? "ROOT " : "", inst->name);
      hl_shape_print(&inst->shape, false, &t);
      hl_strbuf_append(&t, array ? " copy(" : " tuple(");
      for (int k = 0; k < (array ? 1 : state->tuple_count); k++)
        hl_strbuf_appendf(&t, "%sspmd.state.%d", k ? ", " : "", k);
      hl_strbuf_append(&t, ")");
    } else {
      hl_instruction_t copy = *inst;
      if (inst == comp->root) copy.attrs.sharding = NULL;
      hl_strbuf_append(&t, "  ");
      hl_print_instruction(&copy, &t);
    }
    if (inst == comp->root && root_sharding) hl_strbuf_appendf(&t, ", sharding=%s", root_sharding);
    hl_strbuf_append(&t, "\n");
  }
  hl_strbuf_append(&t, "}\n");
  hl_status_t st = t.failed ? HL_OOM() : NULL;
  if (!st) st = hl_parse_hlo_module(hl_strbuf_cstr(&t), t.length, "<loop computation>", out);
  if (st) st = hl_status_annotate(st, "building the loop computation %s for partitioning", comp->name);
  hl_strbuf_deinit(&t);
  return st;
}

// Adds the partitioned `inner` entry to the module as computation `name`
// taking the local state tuple, and the reducers it brought along.
static void emit_computation(spmd_ctx_t *c, const hl_module_t *inner, const char *name, const hl_shape_t *state,
                             const hl_spmd_sharding_t *S) {
  for (int k = 0; k < inner->computation_count; k++) {
    const hl_computation_t *f = inner->computations[k];
    if (f == inner->entry || is_program_computation(c, f->name)) continue;
    hl_strbuf_t head;
    hl_strbuf_init(&head);
    hl_strbuf_appendf(&head, "%s {\n", f->name);
    const char *have = hl_strbuf_cstr(&c->reducers);
    bool present = strncmp(have, hl_strbuf_cstr(&head), head.length) == 0;
    hl_strbuf_t nl;
    hl_strbuf_init(&nl);
    hl_strbuf_appendf(&nl, "\n%s", hl_strbuf_cstr(&head));
    present |= strstr(have, hl_strbuf_cstr(&nl)) != NULL;
    hl_strbuf_deinit(&nl);
    if (!present) {
      hl_strbuf_append(&c->reducers, hl_strbuf_cstr(&head));
      for (int i = 0; i < f->instruction_count; i++) {
        hl_strbuf_append(&c->reducers, "  ");
        hl_print_instruction(f->instructions[i], &c->reducers);
        hl_strbuf_append(&c->reducers, "\n");
      }
      hl_strbuf_append(&c->reducers, "}\n\n");
    }
    hl_strbuf_deinit(&head);
    for (int dt = 0; dt < 64; dt++) {  // spmd_add_reducer must not emit it again
      char add[64];
      snprintf(add, sizeof(add), "spmd.add.%s", hl_dtype_name((hl_dtype_t)dt));
      if (strcmp(add, f->name) == 0) c->reducer_done[dt] = true;
    }
  }
  hl_strbuf_appendf(&c->reducers, "%s {\n  spmd.state = ", name);
  print_state_shape(state, S, &c->reducers);
  hl_strbuf_append(&c->reducers, " parameter(0)\n");
  const hl_computation_t *e = inner->entry;
  for (int i = 0; i < e->instruction_count; i++) {
    const hl_instruction_t *inst = e->instructions[i];
    hl_strbuf_append(&c->reducers, "  ");
    if (inst->opcode == HL_OP_PARAMETER) {
      hl_strbuf_appendf(&c->reducers, "%s = ", inst->name);
      hl_shape_print(&inst->shape, false, &c->reducers);
      if (hl_shape_is_tuple(state)) hl_strbuf_appendf(&c->reducers, " get-tuple-element(spmd.state), index=%lld",
                                                      (long long)inst->attrs.parameter_number);
      else hl_strbuf_append(&c->reducers, " copy(spmd.state)");
    } else {
      hl_print_instruction(inst, &c->reducers);
    }
    hl_strbuf_append(&c->reducers, "\n");
  }
  hl_strbuf_append(&c->reducers, "}\n\n");
}

static void append_indented(hl_strbuf_t *out, const char *title, const char *text) {
  hl_strbuf_appendf(out, "      %s:\n", title);
  while (*text) {
    const char *nl = strchr(text, '\n');
    size_t len = nl ? (size_t)(nl - text) : strlen(text);
    hl_strbuf_appendf(out, "      | %.*s\n", (int)len, text);
    text += len + (nl ? 1 : 0);
  }
}

static bool same_local_shape(const hl_shape_t *got, const hl_shape_t *global, const hl_spmd_sharding_t *s) {
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(global, s, dims);
  if (hl_shape_is_tuple(got) || got->rank != global->rank || got->dtype != global->dtype) return false;
  for (int d = 0; d < got->rank; d++)
    if (got->dims[d] != dims[d]) return false;
  return true;
}

// Partitions `comp` on the state; false in *ok (the reason in the
// explanation) when the nested partitioning refuses it.
static hl_status_t partition_part(spmd_ctx_t *c, const hl_computation_t *comp, const hl_shape_t *state,
                                  const hl_spmd_sharding_t *S, const char *root_sharding, const char *title,
                                  hl_spmd_result_t *res, bool *ok) {
  hl_module_t *sub = NULL;
  HL_RETURN_IF_ERROR(sub_module(c, comp, state, S, root_sharding, &sub));
  hl_status_t st = spmd_partition_nested(sub, c->replicas, c->n, &c->channel, res);
  hl_module_destroy(sub);
  *ok = st == NULL;
  if (st) {
    hl_strbuf_appendf(&c->explain, "      %s not partitioned: %s\n", title, hl_status_message(st));
    hl_status_free(st);
    return NULL;
  }
  append_indented(&c->explain, title, res->explanation);
  return NULL;
}

#define SPMD_LOOP_ROUNDS 4

// The fixed point of the loop state's shardings: from the init's, an
// element held replicated takes the split the body's propagation gives its
// root element (a split is never given up, so this settles); repeated until
// nothing changes. Not settled within SPMD_LOOP_ROUNDS rounds (or the body
// refused): S stays the init's, noted.
static hl_status_t settle_state(spmd_ctx_t *c, const hl_computation_t *body, const hl_shape_t *state,
                                hl_spmd_sharding_t *S, hl_strbuf_t *note) {
  static _Thread_local hl_spmd_sharding_t cur[SPMD_MAX_TUPLE];
  for (int k = 0; k < state->tuple_count; k++) cur[k] = S[k];
  for (int round = 1; round <= SPMD_LOOP_ROUNDS; round++) {
    hl_module_t *sub = NULL;
    HL_RETURN_IF_ERROR(sub_module(c, body, state, cur, NULL, &sub));
    hl_spmd_result_t res;
    int64_t channel = c->channel;  // a trial: its channel ids are not kept
    hl_status_t st = spmd_partition_nested(sub, c->replicas, c->n, &channel, &res);
    hl_module_destroy(sub);
    if (st) {
      hl_status_free(st);
      if (note) hl_strbuf_append(note, "      loop state: the body's propagation failed; the init's shardings\n");
      return NULL;
    }
    const hl_instruction_t *root = res.module->entry->root;
    const hl_sharding_t *rs = root->attrs.sharding;
    bool changed = false, usable = rs && rs->tuple_count == state->tuple_count;
    for (int k = 0; usable && k < state->tuple_count; k++) {
      hl_spmd_sharding_t r;
      hl_status_t e = hl_spmd_from_ir(&rs->tuple_shardings[k], state->tuple[k].rank, c->n, &r);
      if (e) {
        hl_status_free(e);
        continue;
      }
      if (hl_spmd_is_replicated(&cur[k]) && r.kind == HL_SPMD_TILED && !hl_spmd_is_replicated(&r)) {
        cur[k] = r;
        changed = true;
      }
    }
    hl_spmd_result_deinit(&res);
    if (!usable) break;
    if (!changed) {
      for (int k = 0; k < state->tuple_count; k++) S[k] = cur[k];
      if (note) hl_strbuf_appendf(note, "      loop state: fixed point after %d round%s\n", round, round > 1 ? "s" : "");
      return NULL;
    }
  }
  if (note) hl_strbuf_appendf(note, "      loop state: no fixed point in %d rounds; the init's shardings\n",
                              SPMD_LOOP_ROUNDS);
  return NULL;
}

// Sharding of element k of a tuple-valued operand: a tuple instruction's
// operand's, a locally computed tuple's (how it is held, when lowering) or
// what propagation gave it (elems), as held (maximal included). False when
// unknown or a nested tuple.
static bool element_sharding(const spmd_ctx_t *c, const hl_instruction_t *op, int k, bool lowering,
                             hl_spmd_sharding_t *s) {
  const spmd_value_t *v = &c->val[op->index];
  if (k >= op->shape.tuple_count || hl_shape_is_tuple(&op->shape.tuple[k]) || v->manual) return false;
  if (op->opcode == HL_OP_TUPLE) {
    const spmd_value_t *e = &c->val[op->operands[k]->index];
    if (!e->known || e->elem_count) return false;
    *s = e->sh;
  } else if (lowering) {
    if (!v->held) return false;
    *s = v->held[k];
  } else {
    if (!v->known || v->elem_count != op->shape.tuple_count) return false;
    *s = v->elems[k];
  }
  return true;
}

// The local value of element k (element_sharding's, when lowering): a tuple
// instruction's operand, or a get-tuple-element of the local tuple.
static hl_status_t element_local(spmd_ctx_t *c, const hl_instruction_t *op, int k, const char **out) {
  if (op->opcode == HL_OP_TUPLE) {
    *out = c->local[op->operands[k]->index];
    return NULL;
  }
  const char *name = spmd_name(c, "element");
  if (!name) return HL_OOM();
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(&op->shape.tuple[k], &c->val[op->index].held[k], dims);
  hl_strbuf_appendf(&c->body, "  %s = ", name);
  spmd_shape_text(op->shape.tuple[k].dtype, op->shape.tuple[k].rank, dims, &c->body);
  hl_strbuf_appendf(&c->body, " get-tuple-element(%s), index=%d\n", c->local[op->index], k);
  *out = name;
  return NULL;
}

// The init's element shardings as held (I) and as the loop state starts
// from (S: maximal ones replicated); false in *ok when the state is not a
// tuple of arrays with known shardings.
static void init_shardings(const spmd_ctx_t *c, const hl_instruction_t *inst, bool lowering, hl_spmd_sharding_t *I,
                           hl_spmd_sharding_t *S, bool *ok) {
  const hl_instruction_t *init = inst->operands[0];
  *ok = hl_shape_is_tuple(&inst->shape) && inst->shape.tuple_count <= SPMD_MAX_TUPLE;
  for (int k = 0; *ok && k < inst->shape.tuple_count; k++) {
    *ok = element_sharding(c, init, k, lowering, &I[k]);
    S[k] = I[k];
    if (S[k].kind == HL_SPMD_MAXIMAL) hl_spmd_replicated(inst->shape.tuple[k].rank, c->n, &S[k]);
  }
}

hl_status_t spmd_while_state(spmd_ctx_t *c, int i, hl_spmd_sharding_t *S, bool *ok) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const hl_computation_t *body = hl_instruction_while_body(inst);
  static _Thread_local hl_spmd_sharding_t I[SPMD_MAX_TUPLE];
  init_shardings(c, inst, false, I, S, ok);
  if (!*ok || !body || !hl_instruction_while_condition(inst) || !body->root || body->root->opcode != HL_OP_TUPLE) {
    *ok = false;
    return NULL;
  }
  return settle_state(c, body, &inst->shape, S, NULL);
}

hl_status_t spmd_lower_while(spmd_ctx_t *c, int i, const char **out, const char **why) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const hl_instruction_t *init = inst->operands[0];
  const hl_shape_t *state = &inst->shape;
  const hl_computation_t *body = hl_instruction_while_body(inst), *cond = hl_instruction_while_condition(inst);
  *out = NULL;
  if (!hl_shape_is_tuple(&init->shape) || c->val[init->index].manual || !body || !cond) {
    *why = "the loop state is not a tuple";
    return NULL;
  }
  if (state->tuple_count > SPMD_MAX_TUPLE || !body->root || body->root->opcode != HL_OP_TUPLE) {
    *why = "the loop body's root is not a tuple instruction";
    return NULL;
  }
  static _Thread_local hl_spmd_sharding_t S[SPMD_MAX_TUPLE], I[SPMD_MAX_TUPLE];
  bool known;
  init_shardings(c, inst, true, I, S, &known);
  if (!known) {
    *why = init->opcode == HL_OP_TUPLE ? "the loop state has a nested tuple"
                                       : "the loop state is neither a tuple instruction nor a partitioned tuple";
    return NULL;
  }
  HL_RETURN_IF_ERROR(settle_state(c, body, state, S, &c->explain));
  hl_strbuf_t root_sh;
  hl_strbuf_init(&root_sh);
  hl_strbuf_append(&root_sh, "{");
  for (int k = 0; k < state->tuple_count; k++) {
    if (k) hl_strbuf_append(&root_sh, ", ");
    hl_spmd_print(&S[k], &root_sh);
  }
  hl_strbuf_append(&root_sh, "}");
  hl_strbuf_appendf(&c->explain, "      rule: while, the loop state keeps the shardings %s on every trip "
                                 "(the init and the body's root are moved to them)\n", hl_strbuf_cstr(&root_sh));
  hl_spmd_result_t rb, rc;
  memset(&rb, 0, sizeof(rb));
  memset(&rc, 0, sizeof(rc));
  bool ok_body = false, ok_cond = false;
  hl_status_t st = partition_part(c, body, state, S, hl_strbuf_cstr(&root_sh), "loop body", &rb, &ok_body);
  if (!st && ok_body) st = partition_part(c, cond, state, S, "{replicated}", "loop condition", &rc, &ok_cond);
  hl_strbuf_deinit(&root_sh);
  bool ok = !st && ok_body && ok_cond;
  if (ok) {  // the per-partition computations must keep the state's local shapes
    const hl_instruction_t *br = rb.module->entry->root, *cr = rc.module->entry->root;
    ok = br->shape.tuple_count == state->tuple_count && !hl_shape_is_tuple(&cr->shape) && cr->shape.rank == 0;
    for (int k = 0; ok && k < state->tuple_count; k++)
      ok = same_local_shape(&br->shape.tuple[k], &state->tuple[k], &S[k]);
    if (!ok) *why = "the partitioned loop computations do not keep the state's shardings";
  } else if (!st) {
    *why = "the loop computations could not be partitioned with the state's shardings";
  }
  if (ok) {
    // The init tuple in the state's shardings (maximal elements gathered).
    hl_strbuf_t ops;
    hl_strbuf_init(&ops);
    for (int k = 0; k < state->tuple_count && !st; k++) {
      const char *e = NULL, *v;
      st = element_local(c, init, k, &e);
      if (!st) st = spmd_reshard(c, e, &state->tuple[k], &I[k], &S[k], &v);
      if (!st) hl_strbuf_appendf(&ops, "%s%s", k ? ", " : "", v);
    }
    const char *tup = st ? NULL : spmd_name(c, "state");
    const char *bname = tup ? spmd_name(c, "body") : NULL, *cname = bname ? spmd_name(c, "condition") : NULL;
    const char *name = cname ? spmd_name(c, inst->name) : NULL;
    spmd_value_t *v = &c->val[i];
    v->held = name ? hl_calloc((size_t)state->tuple_count + 1, sizeof(*v->held)) : NULL;
    if (!st && !v->held) st = HL_OOM();
    if (!st) {
      emit_computation(c, rb.module, bname, state, S);
      emit_computation(c, rc.module, cname, state, S);
      hl_strbuf_appendf(&c->body, "  %s = ", tup);
      print_state_shape(state, S, &c->body);
      hl_strbuf_appendf(&c->body, " tuple(%s)\n  %s = ", hl_strbuf_cstr(&ops), name);
      print_state_shape(state, S, &c->body);
      hl_strbuf_appendf(&c->body, " while(%s), condition=%s, body=%s\n", tup, cname, bname);
      for (int k = 0; k < state->tuple_count; k++) v->held[k] = S[k];
      c->bytes += rb.bytes_per_partition + rc.bytes_per_partition;
      c->inserted += rb.collectives + rc.collectives;
      hl_strbuf_appendf(&c->explain, "      loop collectives per trip: %lld, %lld bytes per partition\n",
                        (long long)(rb.collectives + rc.collectives),
                        (long long)(rb.bytes_per_partition + rc.bytes_per_partition));
      *out = name;
    }
    hl_strbuf_deinit(&ops);
  }
  hl_spmd_result_deinit(&rb);
  hl_spmd_result_deinit(&rc);
  return st;
}

// conditional: every branch partitioned with its operand's shardings, all
// returning one common sharding (the first branch's propagated root
// sharding when every branch's agrees, else replicated), so every branch has
// the same per-partition result shape. The branch index is replicated.

#define SPMD_MAX_BRANCHES 16

// Shardings of a branch operand as held (H) and as its branch runs on
// them (P: maximal ones replicated): an array's, or a tuple of arrays'
// (element_sharding). False otherwise.
static bool operand_shardings(const spmd_ctx_t *c, const hl_instruction_t *op, bool lowering, hl_spmd_sharding_t *H,
                              hl_spmd_sharding_t *P) {
  bool tuple = hl_shape_is_tuple(&op->shape);
  int count = tuple ? op->shape.tuple_count : 1;
  const spmd_value_t *v = &c->val[op->index];
  if (count > SPMD_MAX_TUPLE || v->manual || (!tuple && !lowering && !v->known)) return false;
  for (int k = 0; k < count; k++) {
    if (tuple && !element_sharding(c, op, k, lowering, &H[k])) return false;
    if (!tuple) H[k] = v->sh;
    P[k] = H[k];
    if (P[k].kind == HL_SPMD_MAXIMAL) hl_spmd_replicated(tuple ? op->shape.tuple[k].rank : op->shape.rank, c->n, &P[k]);
  }
  return true;
}

// The root shardings propagation gave a partitioned computation (one per
// tuple element, or one for an array). False when it has none.
static bool root_shardings(const spmd_ctx_t *c, const hl_module_t *m, const hl_shape_t *shape,
                           hl_spmd_sharding_t *R) {
  const hl_sharding_t *rs = m->entry->root->attrs.sharding;
  bool tuple = hl_shape_is_tuple(shape);
  int count = tuple ? shape->tuple_count : 1;
  if (!rs || (tuple && rs->tuple_count != count)) return false;
  for (int k = 0; k < count; k++) {
    hl_status_t e = hl_spmd_from_ir(tuple ? &rs->tuple_shardings[k] : rs, tuple ? shape->tuple[k].rank : shape->rank,
                                    c->n, &R[k]);
    if (e) {
      hl_status_free(e);
      return false;
    }
    if (R[k].kind == HL_SPMD_MAXIMAL) return false;
  }
  return true;
}

static void print_shardings(const hl_shape_t *shape, const hl_spmd_sharding_t *S, hl_strbuf_t *out) {
  if (!hl_shape_is_tuple(shape)) {
    hl_spmd_print(&S[0], out);
    return;
  }
  hl_strbuf_append(out, "{");
  for (int k = 0; k < shape->tuple_count; k++) {
    if (k) hl_strbuf_append(out, ", ");
    hl_spmd_print(&S[k], out);
  }
  hl_strbuf_append(out, "}");
}

// Moves operand `op` (array or tuple, held as H) to the shardings P; *out its local name.
static hl_status_t operand_as(spmd_ctx_t *c, const hl_instruction_t *op, const hl_spmd_sharding_t *H,
                              const hl_spmd_sharding_t *P, const char **out) {
  if (!hl_shape_is_tuple(&op->shape))
    return spmd_reshard(c, c->local[op->index], &op->shape, &c->val[op->index].sh, &P[0], out);
  hl_strbuf_t ops;
  hl_strbuf_init(&ops);
  hl_status_t st = NULL;
  for (int k = 0; k < op->shape.tuple_count && !st; k++) {
    const char *e = NULL, *v;
    st = element_local(c, op, k, &e);
    if (!st) st = spmd_reshard(c, e, &op->shape.tuple[k], &H[k], &P[k], &v);
    if (!st) hl_strbuf_appendf(&ops, "%s%s", k ? ", " : "", v);
  }
  const char *t = st ? NULL : spmd_name(c, "operand");
  if (!st && !t) st = HL_OOM();
  if (!st) {
    hl_strbuf_appendf(&c->body, "  %s = ", t);
    print_state_shape(&op->shape, P, &c->body);
    hl_strbuf_appendf(&c->body, " tuple(%s)\n", hl_strbuf_cstr(&ops));
    *out = t;
  }
  hl_strbuf_deinit(&ops);
  return st;
}

// The conditional's common result sharding R (per tuple element): every
// branch's propagated root sharding if they agree, else replicated. *why
// set (and R untouched) when the conditional has no rule; the reason a
// branch is refused also goes to `note`.
static hl_status_t branch_results(spmd_ctx_t *c, int i, bool lowering, hl_spmd_sharding_t *R, bool *agree,
                                  hl_strbuf_t *note, const char **why) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const hl_shape_t *shape = &inst->shape;
  int nb = inst->called_count;
  bool tuple = hl_shape_is_tuple(shape);
  *why = NULL;
  if (nb < 1 || nb > SPMD_MAX_BRANCHES || inst->operand_count != nb + 1 || c->val[i].manual ||
      (tuple && shape->tuple_count > SPMD_MAX_TUPLE)) {
    *why = "a conditional of this form has no rule";
    return NULL;
  }
  for (int k = 0; tuple && k < shape->tuple_count; k++)
    if (hl_shape_is_tuple(&shape->tuple[k])) {
      *why = "the conditional's result has a nested tuple";
      return NULL;
    }
  static _Thread_local hl_spmd_sharding_t H[SPMD_MAX_TUPLE], P[SPMD_MAX_TUPLE], Rb[SPMD_MAX_TUPLE];
  int rcount = tuple ? shape->tuple_count : 1;
  *agree = true;
  for (int b = 0; b < nb; b++) {
    const hl_instruction_t *op = inst->operands[b + 1];
    if (!operand_shardings(c, op, lowering, H, P)) {
      *why = "a branch operand is neither an array nor a tuple of arrays";
      return NULL;
    }
    hl_module_t *sub = NULL;
    HL_RETURN_IF_ERROR(sub_module(c, inst->called_computations[b], &op->shape, P, NULL, &sub));
    hl_spmd_result_t trial;
    int64_t channel = c->channel;
    hl_status_t st = spmd_partition_nested(sub, c->replicas, c->n, &channel, &trial);
    hl_module_destroy(sub);
    if (st) {
      if (note) hl_strbuf_appendf(note, "      branch %d not partitioned: %s\n", b, hl_status_message(st));
      hl_status_free(st);
      *why = "a branch could not be partitioned with its operand's shardings";
      return NULL;
    }
    bool ok = root_shardings(c, trial.module, shape, b ? Rb : R);
    hl_spmd_result_deinit(&trial);
    if (!ok) *agree = false;
    for (int k = 0; ok && b && k < rcount; k++) *agree &= hl_spmd_equal(&R[k], &Rb[k]);
  }
  if (!*agree)
    for (int k = 0; k < rcount; k++) hl_spmd_replicated(tuple ? shape->tuple[k].rank : shape->rank, c->n, &R[k]);
  return NULL;
}

hl_status_t spmd_conditional_result(spmd_ctx_t *c, int i, hl_spmd_sharding_t *R, bool *ok) {
  bool agree;
  const char *why;
  HL_RETURN_IF_ERROR(branch_results(c, i, false, R, &agree, NULL, &why));
  *ok = why == NULL;
  return NULL;
}

hl_status_t spmd_lower_conditional(spmd_ctx_t *c, int i, hl_spmd_sharding_t *res, const char **out,
                                   const char **why) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const hl_shape_t *shape = &inst->shape;
  int nb = inst->called_count;
  bool tuple = hl_shape_is_tuple(shape);
  *out = NULL;
  static _Thread_local hl_spmd_sharding_t H[SPMD_MAX_TUPLE], P[SPMD_MAX_TUPLE], R[SPMD_MAX_TUPLE];
  int rcount = tuple ? shape->tuple_count : 1;
  bool agree;
  HL_RETURN_IF_ERROR(branch_results(c, i, true, R, &agree, &c->explain, why));
  if (*why) return NULL;
  hl_strbuf_t root_sh;
  hl_strbuf_init(&root_sh);
  print_shardings(shape, R, &root_sh);
  hl_strbuf_appendf(&c->explain, "      rule: conditional, each branch on its operand's shardings, results moved to "
                                 "%s (%s)\n", hl_strbuf_cstr(&root_sh),
                    agree ? "the branches' common root sharding" : "replicated: the branches' root shardings differ");
  const char *names[SPMD_MAX_BRANCHES];
  hl_strbuf_t ops;
  hl_strbuf_init(&ops);
  hl_status_t st = NULL;
  const char *pred = NULL;
  hl_spmd_sharding_t repl;
  hl_spmd_replicated(inst->operands[0]->shape.rank, c->n, &repl);
  st = operand_as(c, inst->operands[0], NULL, &repl, &pred);
  if (!st) hl_strbuf_append(&ops, pred);
  bool ok = !st;
  for (int b = 0; b < nb && ok; b++) {
    const hl_instruction_t *op = inst->operands[b + 1];
    operand_shardings(c, op, true, H, P);
    hl_spmd_result_t rb;
    char title[32];
    snprintf(title, sizeof(title), "branch %d", b);
    st = partition_part(c, inst->called_computations[b], &op->shape, P, hl_strbuf_cstr(&root_sh), title, &rb, &ok);
    if (st || !ok) break;
    const hl_instruction_t *root = rb.module->entry->root;
    for (int k = 0; ok && k < rcount; k++)
      ok = same_local_shape(tuple ? &root->shape.tuple[k] : &root->shape, tuple ? &shape->tuple[k] : shape, &R[k]);
    if (ok && tuple) ok = root->shape.tuple_count == rcount;
    const char *v = NULL;
    names[b] = ok ? spmd_name(c, "branch") : NULL;
    if (ok && !names[b]) st = HL_OOM();
    if (ok && !st) {
      emit_computation(c, rb.module, names[b], &op->shape, P);
      st = operand_as(c, op, H, P, &v);
    }
    if (!st && ok) hl_strbuf_appendf(&ops, ", %s", v);
    hl_spmd_result_deinit(&rb);
  }
  if (!st && !ok) *why = "a branch could not be partitioned to the common result sharding";
  const char *name = !st && ok ? spmd_name(c, inst->name) : NULL;
  if (!st && ok && !name) st = HL_OOM();
  if (name) {
    hl_strbuf_appendf(&c->body, "  %s = ", name);
    print_state_shape(shape, R, &c->body);
    hl_strbuf_appendf(&c->body, " conditional(%s), ", hl_strbuf_cstr(&ops));
    if (inst->operands[0]->shape.dtype == HL_PRED && nb == 2) {
      hl_strbuf_appendf(&c->body, "true_computation=%s, false_computation=%s\n", names[0], names[1]);
    } else {
      hl_strbuf_append(&c->body, "branch_computations={");
      for (int b = 0; b < nb; b++) hl_strbuf_appendf(&c->body, "%s%s", b ? ", " : "", names[b]);
      hl_strbuf_append(&c->body, "}\n");
    }
    if (tuple) {
      spmd_value_t *v = &c->val[i];
      v->held = hl_calloc((size_t)rcount + 1, sizeof(*v->held));
      if (!v->held) st = HL_OOM();
      for (int k = 0; !st && k < rcount; k++) v->held[k] = R[k];
    } else {
      *res = R[0];
    }
    if (!st) *out = name;
  }
  hl_strbuf_deinit(&ops);
  hl_strbuf_deinit(&root_sh);
  return st;
}
