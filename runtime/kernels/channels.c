// Channel kernels: send / recv start a transfer, send-done / recv-done wait
// for it; infeed / outfeed and host transfers (is_host_transfer=true) read
// and write the files the launcher named (runtime/comm/channels.h).
//
// Results follow the facts sheet: send -> (data, u32 context, token),
// recv -> (data, u32 context, token), send-done -> token,
// recv-done -> (data, token). The u32 context is the handle of the pending
// transfer in the execution's table, so a -done finds its start even when
// the start's value crossed a while loop's state. Older modules whose send /
// recv results have no u32 element are matched by channel id, oldest first.
//
// recv's buffer is shared by its result tuple and the pending table while
// the receive is in flight. Nothing may read it before recv-done, which only
// the recv-done's own operand reaches, so the in-flight write is not seen.
#include <stdio.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/npy.h"
#include "runtime/comm/channels.h"
#include "runtime/kernels/channels.h"
#include "runtime/kernels/kernel.h"

typedef struct pending_entry {
  uint32_t handle;  // 0: free slot
  hl_comm_request_t *request;
  hl_literal_t *buffer;  // kept alive until the transfer completed
  int64_t channel_id;
  hl_channel_dir_t dir;
} pending_entry_t;

struct hl_channel_pending {
  pending_entry_t *entries;
  int count, capacity;
  uint32_t next_handle;
};

static hl_status_t pending_add(hl_kernel_context_t *ctx, hl_comm_request_t *request,
                               hl_literal_t *buffer, int64_t channel_id, hl_channel_dir_t dir,
                               uint32_t *out_handle) {
  hl_channel_pending_t **slot = hl_kernel_channel_pending(ctx);
  if (!*slot) {
    *slot = hl_calloc(1, sizeof(**slot));
    if (!*slot) return HL_OOM();
  }
  hl_channel_pending_t *p = *slot;
  if (p->count == p->capacity) {
    int cap = p->capacity ? 2 * p->capacity : 8;
    pending_entry_t *grown = hl_realloc(p->entries, (size_t)cap * sizeof(*grown));
    if (!grown) return HL_OOM();
    p->entries = grown;
    p->capacity = cap;
  }
  if (++p->next_handle == 0) p->next_handle = 1;  // 0 means "nothing to wait for"
  p->entries[p->count++] = (pending_entry_t){p->next_handle, request,
                                             hl_literal_retain(buffer), channel_id, dir};
  *out_handle = p->next_handle;
  return NULL;
}

// Takes the entry out of the table; *out_found is false when none matches.
static bool pending_take(hl_kernel_context_t *ctx, bool by_handle, uint32_t handle,
                         int64_t channel_id, hl_channel_dir_t dir, pending_entry_t *out) {
  hl_channel_pending_t *p = *hl_kernel_channel_pending(ctx);
  if (!p) return false;
  for (int i = 0; i < p->count; i++) {
    pending_entry_t *e = &p->entries[i];
    bool match = by_handle ? e->handle == handle : (e->channel_id == channel_id && e->dir == dir);
    if (!match) continue;
    *out = *e;
    memmove(e, e + 1, (size_t)(p->count - i - 1) * sizeof(*e));
    p->count--;
    return true;
  }
  return false;
}

static hl_status_t wait_entry(hl_comm_t *comm, pending_entry_t *e) {
  hl_status_t st = comm->vtable->channel_wait(comm, e->request);
  hl_literal_release(e->buffer);
  if (st)
    st = hl_status_annotate(st, "channel %lld: %s", (long long)e->channel_id,
                            e->dir == HL_CHANNEL_SEND ? "send" : "recv");
  return st;
}

hl_status_t hl_channel_pending_finish(hl_comm_t *comm, hl_channel_pending_t *p,
                                      hl_status_t st) {
  if (!p) return st;
  for (int i = 0; i < p->count; i++) {
    if (!st && comm) {
      st = wait_entry(comm, &p->entries[i]);
      continue;
    }
    // After a failure waiting could block on a peer that never comes. The
    // requests are withdrawn (a receive still in flight would write into
    // its buffer after it was freed); a send that cannot be recalled keeps
    // its buffer. Without a backend that withdraws, the job ends and MPI's
    // abort / finalize reclaims them.
    pending_entry_t *e = &p->entries[i];
    if (comm && comm->vtable->channel_abandon && !comm->vtable->channel_abandon(comm, e->request))
      continue;
    hl_literal_release(e->buffer);
  }
  hl_free(p->entries);
  hl_free(p);
  return st;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static hl_channel_env_t *channel_env(hl_kernel_context_t *ctx) {
  return hl_kernel_options(ctx)->channels;
}

// The u32 context element of a send / recv result type, -1 when it has none.
static int context_index(const hl_shape_t *s) {
  return s->dtype == HL_TUPLE && s->tuple_count == 3 && s->tuple[1].dtype == HL_U32 ? 1 : -1;
}

static hl_status_t check_start_shape(const hl_instruction_t *inst) {
  const hl_shape_t *s = &inst->shape;
  bool ok = s->dtype == HL_TUPLE && (s->tuple_count == 3 || s->tuple_count == 2) &&
            s->tuple[s->tuple_count - 1].dtype == HL_TOKEN &&
            (s->tuple_count == 2 || context_index(s) == 1);
  if (!ok)
    return HL_INVALID("result must be (data, u32[], token[]), got %s",
                      hl_shape_debug_string(s));
  if (!hl_shape_is_array(&s->tuple[0]) && s->tuple[0].dtype != HL_TUPLE)
    return HL_INVALID("data must be an array or tuple, got %s",
                      hl_shape_debug_string(&s->tuple[0]));
  return NULL;
}

// (data, [u32 handle,] token) in the layout of inst->shape.
static hl_status_t make_start_result(const hl_instruction_t *inst, hl_literal_t *data,
                                     uint32_t handle, hl_literal_t **out) {
  hl_literal_t *parts[3] = {data, NULL, NULL};
  int n = inst->shape.tuple_count;
  hl_shape_t u32 = hl_shape_scalar(HL_U32);
  hl_status_t st = NULL;
  if (n == 3) {
    st = hl_literal_create(&u32, &parts[1]);
    if (!st) memcpy(parts[1]->data, &handle, sizeof(handle));
  }
  if (!st) st = hl_literal_create_token(&parts[n - 1]);
  if (!st) st = hl_literal_create_tuple(parts, n, out);
  hl_literal_release(parts[1]);
  hl_literal_release(parts[2]);
  return st;
}

static hl_status_t token_result(hl_literal_t **out) { return hl_literal_create_token(out); }

//===----------------------------------------------------------------------===//
// Host transfers: infeed queue and outfeed files
//===----------------------------------------------------------------------===//

// Fills a value of `shape` from the infeed queue, one queued literal per
// array leaf.
static hl_status_t infeed_take(hl_channel_env_t *env, const hl_shape_t *shape, const char *what,
                               hl_literal_t **out) {
  *out = NULL;
  if (shape->dtype == HL_TUPLE) {
    int n = shape->tuple_count;
    hl_literal_t **parts = hl_calloc((size_t)(n ? n : 1), sizeof(*parts));
    if (!parts) return HL_OOM();
    hl_status_t st = NULL;
    for (int i = 0; i < n && !st; i++) st = infeed_take(env, &shape->tuple[i], what, &parts[i]);
    if (!st) st = hl_literal_create_tuple(parts, n, out);
    for (int i = 0; i < n; i++) hl_literal_release(parts[i]);
    hl_free(parts);
    return st;
  }
  if (shape->dtype == HL_TOKEN) return hl_literal_create_token(out);
  if (!env || env->infeed_next >= env->infeed_count)
    return HL_INVALID("%s needs infeed value %d (%s), but %s", what,
                      env ? env->infeed_next : 0, hl_shape_debug_string(shape),
                      env && env->infeed_count
                          ? "the --infeed files are used up"
                          : "no --infeed files were given");
  hl_literal_t *lit = env->infeed[env->infeed_next];
  if (!hl_shape_equal(&lit->shape, shape)) {
    char want[256];
    snprintf(want, sizeof(want), "%s", hl_shape_debug_string(shape));
    return HL_INVALID("%s expects %s, but infeed value %d is %s", what, want, env->infeed_next,
                      hl_shape_debug_string(&lit->shape));
  }
  env->infeed_next++;
  *out = hl_literal_retain(lit);
  return NULL;
}

static hl_status_t outfeed_put(hl_channel_env_t *env, const hl_literal_t *lit, const char *what) {
  if (lit->shape.dtype == HL_TUPLE) {
    for (int i = 0; i < lit->shape.tuple_count; i++)
      HL_RETURN_IF_ERROR(outfeed_put(env, lit->elements[i], what));
    return NULL;
  }
  if (lit->shape.dtype == HL_TOKEN) return NULL;
  if (!env || !env->outfeed_dir)
    return HL_INVALID("%s writes to the host, but no --outfeed-dir was given", what);
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/outfeed%d.npy", env->outfeed_dir, env->outfeed_next);
  if (n < 0 || n >= (int)sizeof(path)) return HL_INVALID("outfeed path too long");
  HL_RETURN_IF_ERROR(hl_npy_write_file(path, lit));
  env->outfeed_next++;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

static hl_status_t network_route(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_channel_dir_t dir, int *out_peer) {
  const hl_channel_route_t *r = hl_channel_env_route(channel_env(ctx), inst->attrs.channel_id, dir);
  if (!r)
    return HL_INVALID("channel %lld: no %s route (the channel rendezvous did not see it)",
                      (long long)inst->attrs.channel_id, dir == HL_CHANNEL_SEND ? "send" : "recv");
  if (r->peer >= 0 && !hl_kernel_options(ctx)->comm)
    return HL_INVALID("channel %lld: a transfer to another process needs a communicator",
                      (long long)inst->attrs.channel_id);
  *out_peer = r->peer;
  return NULL;
}

hl_status_t hl_kernel_send(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(check_start_shape(inst));
  hl_literal_t *data = operands[0];
  if (!hl_shape_equal(&data->shape, &inst->shape.tuple[0]))
    return HL_INVALID("operand is %s but the result says %s", hl_shape_debug_string(&data->shape),
                      hl_shape_debug_string(&inst->shape.tuple[0]));
  if (inst->attrs.is_host_transfer) {
    char what[64];
    snprintf(what, sizeof(what), "host send on channel %lld", (long long)inst->attrs.channel_id);
    HL_RETURN_IF_ERROR(outfeed_put(channel_env(ctx), data, what));
    return make_start_result(inst, data, 0, out);
  }
  if (!hl_shape_is_array(&data->shape))
    return HL_UNIMPL("channel %lld: sending a %s (only arrays go over channels)",
                     (long long)inst->attrs.channel_id, hl_shape_debug_string(&data->shape));
  int peer;
  HL_RETURN_IF_ERROR(network_route(ctx, inst, HL_CHANNEL_SEND, &peer));
  uint32_t handle = 0;
  if (peer >= 0) {
    hl_comm_t *comm = hl_kernel_options(ctx)->comm;
    hl_comm_request_t *req = NULL;
    HL_RETURN_IF_ERROR_CTX(comm->vtable->send(comm, peer, inst->attrs.channel_id, data->data,
                                              data->byte_size, &req),
                           "channel %lld: send to process %d", (long long)inst->attrs.channel_id,
                           peer);
    hl_status_t st = pending_add(ctx, req, data, inst->attrs.channel_id, HL_CHANNEL_SEND, &handle);
    if (st) {
      comm->vtable->channel_wait(comm, req);
      return st;
    }
  }
  return make_start_result(inst, data, handle, out);
}

hl_status_t hl_kernel_recv(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                           hl_literal_t *const *operands, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(check_start_shape(inst));
  const hl_shape_t *shape = &inst->shape.tuple[0];
  hl_literal_t *data = NULL;
  if (inst->attrs.is_host_transfer) {
    char what[64];
    snprintf(what, sizeof(what), "host recv on channel %lld", (long long)inst->attrs.channel_id);
    HL_RETURN_IF_ERROR(infeed_take(channel_env(ctx), shape, what, &data));
    hl_status_t st = make_start_result(inst, data, 0, out);
    hl_literal_release(data);
    return st;
  }
  if (!hl_shape_is_array(shape))
    return HL_UNIMPL("channel %lld: receiving a %s (only arrays go over channels)",
                     (long long)inst->attrs.channel_id, hl_shape_debug_string(shape));
  int peer;
  HL_RETURN_IF_ERROR(network_route(ctx, inst, HL_CHANNEL_RECV, &peer));
  // Zeros stay when no process sends to this one (as for collective-permute).
  HL_RETURN_IF_ERROR(hl_literal_create(shape, &data));
  uint32_t handle = 0;
  hl_status_t st = NULL;
  if (peer >= 0) {
    hl_comm_t *comm = hl_kernel_options(ctx)->comm;
    hl_comm_request_t *req = NULL;
    st = comm->vtable->recv(comm, peer, inst->attrs.channel_id, data->data, data->byte_size, &req);
    if (st)
      st = hl_status_annotate(st, "channel %lld: recv from process %d",
                              (long long)inst->attrs.channel_id, peer);
    if (!st) {
      st = pending_add(ctx, req, data, inst->attrs.channel_id, HL_CHANNEL_RECV, &handle);
      if (st) comm->vtable->channel_wait(comm, req);
    }
  }
  if (!st) st = make_start_result(inst, data, handle, out);
  hl_literal_release(data);
  return st;
}

// Waits for the transfer that `start` (a send / recv result) stands for.
static hl_status_t wait_for(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                            const hl_literal_t *start, hl_channel_dir_t dir) {
  const char *op = dir == HL_CHANNEL_SEND ? "send" : "recv";
  if (start->shape.dtype != HL_TUPLE || start->shape.tuple_count < 2)
    return HL_INVALID("operand must be a %s result, got %s", op,
                      hl_shape_debug_string(&start->shape));
  if (inst->attrs.is_host_transfer) return NULL;  // host transfers finish at their start
  int ci = context_index(&start->shape);
  uint32_t handle = 0;
  if (ci >= 0) {
    memcpy(&handle, start->elements[ci]->data, sizeof(handle));
    if (handle == 0) return NULL;  // no peer: nothing was started
  }
  pending_entry_t e;
  if (!pending_take(ctx, ci >= 0, handle, inst->attrs.channel_id, dir, &e)) {
    if (ci < 0) return NULL;  // matched by channel id: a start without a peer
    return HL_INVALID("channel %lld: %s-done for a %s that is not pending (already waited for?)",
                      (long long)inst->attrs.channel_id, op, op);
  }
  return wait_entry(hl_kernel_options(ctx)->comm, &e);
}

hl_status_t hl_kernel_send_done(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(wait_for(ctx, inst, operands[0], HL_CHANNEL_SEND));
  return token_result(out);
}

hl_status_t hl_kernel_recv_done(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                hl_literal_t *const *operands, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(wait_for(ctx, inst, operands[0], HL_CHANNEL_RECV));
  hl_literal_t *parts[2] = {operands[0]->elements[0], NULL};
  HL_RETURN_IF_ERROR(hl_literal_create_token(&parts[1]));
  hl_status_t st = hl_literal_create_tuple(parts, 2, out);
  hl_literal_release(parts[1]);
  return st;
}

// infeed: (token) -> (data, token), data from the next --infeed files.
hl_status_t hl_kernel_infeed(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                             hl_literal_t *const *operands, hl_literal_t **out) {
  const hl_shape_t *s = &inst->shape;
  if (s->dtype != HL_TUPLE || s->tuple_count != 2 || s->tuple[1].dtype != HL_TOKEN)
    return HL_INVALID("result must be (data, token[]), got %s", hl_shape_debug_string(s));
  hl_literal_t *parts[2] = {NULL, NULL};
  hl_status_t st = infeed_take(channel_env(ctx), &s->tuple[0], "infeed", &parts[0]);
  if (!st) st = hl_literal_create_token(&parts[1]);
  if (!st) st = hl_literal_create_tuple(parts, 2, out);
  hl_literal_release(parts[0]);
  hl_literal_release(parts[1]);
  return st;
}

// outfeed: (data, token) -> token; data goes to the next outfeed<i>.npy.
hl_status_t hl_kernel_outfeed(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                              hl_literal_t *const *operands, hl_literal_t **out) {
  HL_RETURN_IF_ERROR(outfeed_put(channel_env(ctx), operands[0], "outfeed"));
  return token_result(out);
}
