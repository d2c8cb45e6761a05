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

static void print_state_shape(const hl_shape_t *state, const hl_spmd_sharding_t *S, hl_strbuf_t *out) {
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
  for (int k = 0; k < state->tuple_count; k++) {
    hl_strbuf_appendf(&t, "  spmd.state.%d = ", k);
    hl_shape_print(&state->tuple[k], false, &t);
    hl_strbuf_appendf(&t, " parameter(%d), sharding=", k);
    hl_spmd_print(&S[k], &t);
    hl_strbuf_append(&t, "\n");
  }
  for (int i = 0; i < comp->instruction_count; i++) {
    const hl_instruction_t *inst = comp->instructions[i];
    if (inst->opcode == HL_OP_PARAMETER) {  // the state, rebuilt from its elements
      hl_strbuf_appendf(&t, "  %s%s = ", inst == comp->root ? "ROOT " : "", inst->name);
      hl_shape_print(&inst->shape, false, &t);
      hl_strbuf_append(&t, " tuple(");
      for (int k = 0; k < state->tuple_count; k++) hl_strbuf_appendf(&t, "%sspmd.state.%d", k ? ", " : "", k);
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
      hl_strbuf_appendf(&c->reducers, " get-tuple-element(spmd.state), index=%lld",
                        (long long)inst->attrs.parameter_number);
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
                                hl_spmd_sharding_t *S) {
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
      hl_strbuf_append(&c->explain, "      loop state: the body's propagation failed; the init's shardings\n");
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
      hl_strbuf_appendf(&c->explain, "      loop state: fixed point after %d round%s\n", round, round > 1 ? "s" : "");
      return NULL;
    }
  }
  hl_strbuf_appendf(&c->explain, "      loop state: no fixed point in %d rounds; the init's shardings\n",
                    SPMD_LOOP_ROUNDS);
  return NULL;
}

hl_status_t spmd_lower_while(spmd_ctx_t *c, int i, const char **out, const char **why) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  const hl_instruction_t *init = inst->operands[0];
  const hl_shape_t *state = &inst->shape;
  const hl_computation_t *body = hl_instruction_while_body(inst), *cond = hl_instruction_while_condition(inst);
  *out = NULL;
  if (init->opcode != HL_OP_TUPLE || c->val[init->index].manual || !body || !cond) {
    *why = "the loop state is not built by a tuple instruction";
    return NULL;
  }
  if (state->tuple_count > SPMD_MAX_TUPLE || !body->root || body->root->opcode != HL_OP_TUPLE) {
    *why = "the loop body's root is not a tuple instruction";
    return NULL;
  }
  static _Thread_local hl_spmd_sharding_t S[SPMD_MAX_TUPLE];
  for (int k = 0; k < state->tuple_count; k++) {
    const hl_instruction_t *e = init->operands[k];
    if (hl_shape_is_tuple(&e->shape)) {
      *why = "the loop state has a nested tuple";
      return NULL;
    }
    S[k] = c->val[e->index].sh;
    if (S[k].kind == HL_SPMD_MAXIMAL) hl_spmd_replicated(e->shape.rank, c->n, &S[k]);
  }
  HL_RETURN_IF_ERROR(settle_state(c, body, state, S));
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
      const hl_instruction_t *e = init->operands[k];
      const char *v;
      st = spmd_reshard(c, c->local[e->index], &e->shape, &c->val[e->index].sh, &S[k], &v);
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
