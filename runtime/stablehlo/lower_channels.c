// stablehlo.send / recv / infeed and what interpreter.run_parallel adds for
// them (docs/STABLEHLO.md "Channels and infeed").
//
//  - send(inputs..., token) -> token is HLO send + send-done, and
//    recv(token) -> (results..., token) is HLO recv + recv-done, on channel
//    channel_handle.handle with is_host_transfer as written (so outside
//    run_parallel a host transfer writes --outfeed-dir / reads the infeed
//    queue, as HLO's does); source_target_pairs become XLA's
//    _xla_send_recv_source_target_pairs frontend attribute.
//  - infeed(token) -> (results..., token) is HLO infeed.
//  - Inside interpreter.run_parallel, StableHLO's interpreter moves every
//    send / recv through its process grid's channel queues, host transfer or
//    not (Process::send / recv by channel id). So the programs' send / recv
//    become process-to-process transfers: for each channel, the one process
//    whose program sends on it and the one whose program receives give the
//    pair {sender, receiver} (ids within the grid's replica, as the channel
//    rendezvous reads them; channels/channel_pairing.h). More senders or
//    receivers on a channel would make the interpreter's queue order the
//    answer, so that is an error, as is a pair across replicas of a grid
//    with partitions.
//  - run_parallel's infeed = [@f, ...]: the interpreter's infeed op pops the
//    next function of that list and returns its results. Here every rank
//    calls the functions before the programs run and appends their results,
//    in order, to its infeed queue (custom-call interpreter.infeed_enqueue,
//    runtime/kernels/infeed_enqueue.c); the programs' infeed ops then take
//    them as HLO infeed does. The interpreter's queue is shared by the
//    processes; with infeed ops in more than one process's program the
//    order between them is not defined, which is an error here.
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/stablehlo/lower_internal.h"
#include "runtime/stablehlo/mlir_dense.h"

static const char kPairsKey[] = "_xla_send_recv_source_target_pairs";

static hl_status_t add_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                          hl_opcode_t opcode, const hl_shape_t *shape, hl_instruction_t *const *ops,
                          int n, hl_instruction_t **out) {
  return hl_lower_add(L, env->computation, op, opcode, shape, ops, n, out);
}

static bool flag(const hl_mlir_op_t *op, const char *name) {
  const hl_mlir_attr_t *a = hl_mlir_op_attr(op, name);
  return a && (a->kind == HL_MATTR_UNIT || (a->kind == HL_MATTR_BOOL && a->b));
}

// channel_handle = #stablehlo.channel_handle<handle = 1, type = 2>.
static hl_status_t channel_of(hl_lower_t *L, const hl_mlir_op_t *op, int64_t *out) {
  const hl_mlir_attr_t *ch = hl_mlir_op_attr(op, "channel_handle");
  const hl_mlir_attr_t *h = ch ? hl_mlir_attr_member(ch, "handle") : NULL;
  if (!h || h->kind != HL_MATTR_INT || h->i <= 0)
    return hl_lower_op_error(L, op, "needs channel_handle = #stablehlo.channel_handle<handle = "
                             "N, ...> with N > 0");
  *out = h->i;
  return NULL;
}

static void set_channel(hl_instruction_t *inst, int64_t channel, bool host) {
  inst->attrs.channel_id = channel;
  inst->attrs.is_host_transfer = host;
}

// source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64> as the
// frontend attribute "{{0,1},{1,2}}" on `inst`.
static hl_status_t copy_pairs(hl_lower_t *L, const hl_mlir_op_t *op, hl_instruction_t *inst) {
  const hl_mlir_attr_t *p = hl_mlir_op_attr(op, "source_target_pairs");
  if (!p) return NULL;
  if (p->kind != HL_MATTR_DENSE || !p->has_type || p->type.rank != 2 || p->type.dims[1] != 2)
    return hl_lower_op_error(L, op, "needs source_target_pairs as an Nx2 dense<...> tensor");
  hl_literal_t *lit;
  HL_RETURN_IF_ERROR(hl_mlir_dense_literal(L->file, p, &p->type, &lit));
  int64_t n = p->type.dims[0];
  size_t cap = (size_t)n * 48 + 8, used = 0;
  char *text = hl_malloc(cap);
  hl_status_t st = text ? NULL : HL_OOM();
  if (!st) {
    used += (size_t)snprintf(text + used, cap - used, "{");
    for (int64_t i = 0; i < n; i++)
      used += (size_t)snprintf(text + used, cap - used, "%s{%lld,%lld}", i ? "," : "",
                               (long long)hl_literal_get_s64(lit, 2 * i),
                               (long long)hl_literal_get_s64(lit, 2 * i + 1));
    snprintf(text + used, cap - used, "}");
    st = hl_frontend_attributes_add(&inst->attrs.frontend_attributes, kPairsKey, text);
  }
  hl_free(text);
  hl_literal_release(lit);
  return st;
}

// The data of a send / recv: the one array, or a tuple of several (host
// transfers only; the channel kernels refuse tuples between processes).
static hl_status_t data_shape(const hl_shape_t *parts, int n, hl_shape_t *out) {
  if (n == 1) return hl_shape_copy(&parts[0], out);
  return hl_shape_tuple(parts, n, out);
}

static hl_status_t lower_send(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                              hl_instruction_t *const *operands, int n) {
  if (n < 2 || operands[n - 1]->shape.dtype != HL_TOKEN)
    return hl_lower_op_error(L, op, "needs its inputs and a token");
  int64_t channel = 0;
  HL_RETURN_IF_ERROR(channel_of(L, op, &channel));
  bool host = flag(op, "is_host_transfer");
  hl_instruction_t *data = operands[0];
  if (n > 2) HL_RETURN_IF_ERROR(hl_lower_add_tuple(L, env->computation, op, operands, n - 1, &data));
  hl_shape_t parts[3] = {data->shape, hl_shape_scalar(HL_U32), hl_shape_token()}, start_shape;
  HL_RETURN_IF_ERROR(hl_shape_tuple(parts, 3, &start_shape));
  hl_instruction_t *ops2[2] = {data, operands[n - 1]}, *send, *done;
  hl_shape_t tok = hl_shape_token();
  hl_status_t st = add_op(L, env, op, HL_OP_SEND, &start_shape, ops2, 2, &send);
  hl_shape_deinit(&start_shape);
  HL_RETURN_IF_ERROR(st);
  set_channel(send, channel, host);
  HL_RETURN_IF_ERROR(copy_pairs(L, op, send));
  HL_RETURN_IF_ERROR(add_op(L, env, op, HL_OP_SEND_DONE, &tok, &send, 1, &done));
  set_channel(done, channel, host);
  return hl_lower_bind_results(L, env, op, &done, 1);
}

// The op's result types but the last (the token), from its function type.
static hl_status_t data_results(hl_lower_t *L, const hl_mlir_op_t *op, int *out_n) {
  int n = op->result_type_count;
  if (!op->has_function_type || n < 2 || n != op->result_count ||
      op->result_types[n - 1].dtype != HL_TOKEN)
    return hl_lower_op_error(L, op, "needs results (data..., token) with their types");
  *out_n = n - 1;
  return NULL;
}

// Binds results (data..., token) from `value` (data, token), data being the
// one array or a tuple of them.
static hl_status_t bind_data_token(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                   hl_instruction_t *value, int ndata) {
  hl_instruction_t **res = hl_calloc((size_t)ndata + 2, sizeof(*res));
  if (!res) return HL_OOM();
  hl_instruction_t *data = NULL;
  hl_status_t st = hl_lower_add_gte(L, env->computation, op, value, 0, &data);
  for (int i = 0; !st && i < ndata; i++)
    st = ndata == 1 ? (res[0] = data, NULL)
                    : hl_lower_add_gte(L, env->computation, op, data, i, &res[i]);
  if (!st) st = hl_lower_add_gte(L, env->computation, op, value, 1, &res[ndata]);
  if (!st) st = hl_lower_bind_results(L, env, op, res, ndata + 1);
  hl_free(res);
  return st;
}

static hl_status_t lower_recv(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                              hl_instruction_t *const *operands, int n) {
  if (n != 1 || operands[0]->shape.dtype != HL_TOKEN)
    return hl_lower_op_error(L, op, "takes one token operand");
  int64_t channel = 0;
  int ndata = 0;
  HL_RETURN_IF_ERROR(channel_of(L, op, &channel));
  HL_RETURN_IF_ERROR(data_results(L, op, &ndata));
  bool host = flag(op, "is_host_transfer");
  hl_shape_t parts[3] = {{0}, hl_shape_scalar(HL_U32), hl_shape_token()}, start_shape, done_shape;
  HL_RETURN_IF_ERROR(data_shape(op->result_types, ndata, &parts[0]));
  hl_status_t st = hl_shape_tuple(parts, 3, &start_shape);
  parts[1] = hl_shape_token();
  if (!st) st = hl_shape_tuple(parts, 2, &done_shape);
  hl_shape_deinit(&parts[0]);
  if (st) {
    hl_shape_deinit(&start_shape);
    return st;
  }
  hl_instruction_t *recv = NULL, *done = NULL;
  st = add_op(L, env, op, HL_OP_RECV, &start_shape, operands, 1, &recv);
  if (!st) {
    set_channel(recv, channel, host);
    st = copy_pairs(L, op, recv);
  }
  if (!st) st = add_op(L, env, op, HL_OP_RECV_DONE, &done_shape, &recv, 1, &done);
  if (!st) set_channel(done, channel, host);
  hl_shape_deinit(&start_shape);
  hl_shape_deinit(&done_shape);
  HL_RETURN_IF_ERROR(st);
  return bind_data_token(L, env, op, done, ndata);
}

static hl_status_t lower_infeed(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                hl_instruction_t *const *operands, int n) {
  if (n != 1 || operands[0]->shape.dtype != HL_TOKEN)
    return hl_lower_op_error(L, op, "takes one token operand");
  int ndata = 0;
  HL_RETURN_IF_ERROR(data_results(L, op, &ndata));
  hl_shape_t parts[2] = {{0}, hl_shape_token()}, shape;
  HL_RETURN_IF_ERROR(data_shape(op->result_types, ndata, &parts[0]));
  hl_status_t st = hl_shape_tuple(parts, 2, &shape);
  hl_shape_deinit(&parts[0]);
  HL_RETURN_IF_ERROR(st);
  hl_instruction_t *inf = NULL;
  st = add_op(L, env, op, HL_OP_INFEED, &shape, operands, 1, &inf);
  hl_shape_deinit(&shape);
  HL_RETURN_IF_ERROR(st);
  return bind_data_token(L, env, op, inf, ndata);
}

hl_status_t hl_lower_channel_op(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                hl_instruction_t *const *operands, int n, bool *out_handled) {
  *out_handled = true;
  if (strcmp(op->name, "stablehlo.send") == 0) return lower_send(L, env, op, operands, n);
  if (strcmp(op->name, "stablehlo.recv") == 0) return lower_recv(L, env, op, operands, n);
  if (strcmp(op->name, "stablehlo.infeed") == 0) return lower_infeed(L, env, op, operands, n);
  *out_handled = false;
  return NULL;
}

//===----------------------------------------------------------------------===//
// interpreter.run_parallel
//===----------------------------------------------------------------------===//

hl_status_t hl_lower_parallel_infeed(hl_lower_t *L, hl_lower_env_t *env, const hl_mlir_op_t *op,
                                     hl_instruction_t **out_token) {
  *out_token = NULL;
  const hl_mlir_attr_t *feeds = hl_mlir_op_attr(op, "infeed");
  if (!feeds) return NULL;
  if (feeds->kind != HL_MATTR_ARRAY)
    return hl_lower_op_error(L, op, "needs infeed = [@f, ...]");
  hl_instruction_t **values = hl_calloc((size_t)feeds->n * 8 + 1, sizeof(*values));
  if (!values) return HL_OOM();
  int nv = 0, cap = feeds->n * 8;
  hl_status_t st = NULL;
  for (int i = 0; !st && i < feeds->n; i++) {
    const hl_mlir_attr_t *sym = &feeds->items[i];
    hl_computation_t *fn;
    hl_instruction_t *call;
    if (sym->kind != HL_MATTR_SYMBOL) {
      st = hl_lower_op_error(L, op, "infeed must hold @function symbols");
      break;
    }
    st = hl_lower_function(L, sym->s, op, &fn);
    if (!st && fn->parameter_count != 0)
      st = hl_lower_op_error(L, op, "infeed function @%s must take no arguments", sym->s);
    if (!st) st = add_op(L, env, op, HL_OP_CALL, &fn->root->shape, NULL, 0, &call);
    if (!st) st = hl_instruction_set_called(call, &fn, 1);
    if (st) break;
    // Its results, one queue entry each (array leaves of a tuple root).
    const hl_shape_t *s = &call->shape;
    int k = s->dtype == HL_TUPLE ? s->tuple_count : 1;
    if (nv + k > cap) {
      st = hl_lower_op_error(L, op, "infeed function @%s returns too many values", sym->s);
      break;
    }
    for (int j = 0; !st && j < k; j++) {
      const hl_shape_t *leaf = s->dtype == HL_TUPLE ? &s->tuple[j] : s;
      if (!hl_shape_is_array(leaf)) {
        st = hl_lower_op_error(L, op, "infeed function @%s returns %s (only arrays)", sym->s,
                               hl_shape_debug_string(leaf));
        break;
      }
      if (s->dtype == HL_TUPLE)
        st = hl_lower_add_gte(L, env->computation, op, call, j, &values[nv++]);
      else
        values[nv++] = call;
    }
  }
  hl_shape_t tok = hl_shape_token();
  hl_instruction_t *cc = NULL;
  if (!st) st = add_op(L, env, op, HL_OP_CUSTOM_CALL, &tok, values, nv, &cc);
  if (!st) {
    cc->attrs.custom_call_target = hl_strdup("interpreter.infeed_enqueue");
    cc->attrs.custom_call_has_side_effect = true;
    if (!cc->attrs.custom_call_target) st = HL_OOM();
  }
  hl_free(values);
  if (!st) *out_token = cc;
  return st;
}

// The send / recv / infeed instructions one process's program reaches.
typedef struct reached {
  hl_instruction_t **v;
  int n, cap;
} reached_t;

static hl_status_t reach(const hl_computation_t *c, reached_t *r, int depth) {
  if (depth > 64) return HL_INVALID("computations nest too deeply");
  for (int i = 0; i < c->instruction_count; i++) {
    hl_instruction_t *inst = c->instructions[i];
    if (inst->opcode == HL_OP_SEND || inst->opcode == HL_OP_RECV ||
        inst->opcode == HL_OP_SEND_DONE || inst->opcode == HL_OP_RECV_DONE ||
        inst->opcode == HL_OP_INFEED) {
      bool seen = false;
      for (int k = 0; k < r->n && !seen; k++) seen = r->v[k] == inst;
      if (seen) continue;
      if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        hl_instruction_t **g = hl_realloc(r->v, (size_t)cap * sizeof(*g));
        if (!g) return HL_OOM();
        r->v = g;
        r->cap = cap;
      }
      r->v[r->n++] = inst;
    }
    for (int k = 0; k < inst->called_count; k++)
      HL_RETURN_IF_ERROR(reach(inst->called_computations[k], r, depth + 1));
  }
  return NULL;
}

// The one process of `procs` (per process: whether it has the endpoint), or
// -1 with *out_count the number that have it.
static int only_process(const bool *procs, int nproc, int *out_count) {
  int who = -1, count = 0;
  for (int k = 0; k < nproc; k++)
    if (procs[k]) {
      who = k;
      count++;
    }
  *out_count = count;
  return count == 1 ? who : -1;
}

hl_status_t hl_lower_parallel_channels(hl_lower_t *L, const hl_mlir_op_t *op,
                                       hl_computation_t *const *programs, int nproc, int P) {
  reached_t *per = hl_calloc((size_t)nproc, sizeof(*per));
  if (!per) return HL_OOM();
  hl_status_t st = NULL;
  for (int k = 0; !st && k < nproc; k++) st = reach(programs[k], &per[k], 0);
  // Infeed ops in at most one process's program.
  int infeed_procs = 0;
  for (int k = 0; !st && k < nproc; k++) {
    bool has = false;
    for (int i = 0; i < per[k].n; i++) has = has || per[k].v[i]->opcode == HL_OP_INFEED;
    infeed_procs += has;
  }
  if (!st && infeed_procs > 1)
    st = hl_lower_op_error(L, op, "runs infeed ops in %d processes' programs; the interpreter's "
                           "shared infeed queue gives no order between processes (one process "
                           "is supported)", infeed_procs);
  bool *sends = hl_calloc((size_t)nproc + 1, sizeof(bool));
  bool *recvs = hl_calloc((size_t)nproc + 1, sizeof(bool));
  if (!st && (!sends || !recvs)) st = HL_OOM();
  // Each channel of a program's send / recv (those without explicit pairs).
  for (int k0 = 0; !st && k0 < nproc; k0++)
    for (int i0 = 0; !st && i0 < per[k0].n; i0++) {
      const hl_instruction_t *first = per[k0].v[i0];
      if ((first->opcode != HL_OP_SEND && first->opcode != HL_OP_RECV) ||
          hl_instruction_frontend_attribute(first, kPairsKey))
        continue;
      int64_t ch = first->attrs.channel_id;
      memset(sends, 0, (size_t)nproc * sizeof(bool));
      memset(recvs, 0, (size_t)nproc * sizeof(bool));
      for (int k = 0; k < nproc; k++)
        for (int i = 0; i < per[k].n; i++) {
          const hl_instruction_t *x = per[k].v[i];
          if (x->attrs.channel_id != ch || x->opcode == HL_OP_INFEED) continue;
          if (x->opcode == HL_OP_SEND) sends[k] = true;
          if (x->opcode == HL_OP_RECV) recvs[k] = true;
        }
      int ns, nr;
      int s = only_process(sends, nproc, &ns), r = only_process(recvs, nproc, &nr);
      if (s < 0 || r < 0) {
        st = hl_lower_op_error(L, op, "channel %lld: the programs of %d processes send on it "
                               "and %d receive; one sending and one receiving process are "
                               "supported", (long long)ch, ns, nr);
        break;
      }
      if (P > 1 && s / P != r / P) {
        st = hl_lower_op_error(L, op, "channel %lld: processes %d and %d are in different "
                               "replicas; channels run between the partitions of one replica",
                               (long long)ch, s, r);
        break;
      }
      char pairs[64];
      snprintf(pairs, sizeof(pairs), "{{%d,%d}}", P > 1 ? s % P : s, P > 1 ? r % P : r);
      for (int k = 0; !st && k < nproc; k++)
        for (int i = 0; !st && i < per[k].n; i++) {
          hl_instruction_t *x = per[k].v[i];
          if (x->attrs.channel_id != ch || x->opcode == HL_OP_INFEED) continue;
          x->attrs.is_host_transfer = false;  // the interpreter's queue is between processes
          if ((x->opcode == HL_OP_SEND || x->opcode == HL_OP_RECV) &&
              !hl_instruction_frontend_attribute(x, kPairsKey))
            st = hl_frontend_attributes_add(&x->attrs.frontend_attributes, kPairsKey, pairs);
        }
    }
  for (int k = 0; k < nproc; k++) hl_free(per[k].v);
  hl_free(per);
  hl_free(sends);
  hl_free(recvs);
  return st;
}
