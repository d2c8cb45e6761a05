// Halo exchanges: windowed ops (slice, pad, reduce-window, convolution)
// along a split dimension, computed on each partition's shard plus the few
// elements next to it that its outputs read, fetched from the neighbouring
// shards by collective-permute, instead of gathering the whole dimension.
//
// Along one dimension every such op is the same pattern: output o reads the
// input elements [o * stride + offset, + extent) (positions outside the
// input are the fill value: the pad value, the reduce-window init, zero for
// a convolution). With the input split T ways (shards of si = ceil(D/T)) and
// the output split alike (so = ceil(Dout/T)), partition i's outputs read
// [i*so*stride + offset, + len) with len = (so - 1) * stride + extent, which
// is r_i = i * (so*stride - si) + offset past the start of its own shard.
// Each partition appends the last L elements of its left neighbour and the
// first H of its right one (L, H the widest need over partitions with valid
// outputs), cuts its window at r_i + L (a static slice when r_i is the same
// everywhere, else a dynamic-slice by partition-id), replaces positions
// outside [0, D) by the fill value when the op pads, and runs the op with no
// padding on it. A halo wider than a shard would need more than the
// neighbour: that dimension is gathered as before (the caller's rule).
//
// A roll (jnp.roll's concatenate(x[k:], x[:k])) is the same exchange with
// wrap-around: each shard's window is its own shard shifted by k, the edge
// coming from the cyclic neighbour.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/dtype.h"
#include "runtime/spmd/spmd_internal.h"

// Along one dimension: output o reads input [o*stride + offset, + extent).
typedef struct halo_geom {
  int64_t in_size, out_size, stride, offset, extent;
  bool pads;  // some output reads outside [0, in_size): the fill value
} halo_geom_t;

// The halo plan of one dimension split `t` ways.
typedef struct halo_plan {
  int64_t t, si, so, len, lo, hi;  // lo / hi: halo widths (elements)
  int64_t r[HL_SPMD_MAX_DEVICES];  // per tile index: window start past the shard start (clamped)
  bool uniform;                    // every r the same
} halo_plan_t;

// Operand dimension and geometry of output dimension j of a windowed op;
// false when j is not windowed in a form this rule handles (interior
// padding, base / lhs dilation) or the op has no such rule.
static bool geometry(const hl_instruction_t *inst, int j, int *in_dim, halo_geom_t *g) {
  const hl_shape_t *in = inst->operand_count ? &inst->operands[0]->shape : NULL;
  if (!in || j < 0 || j >= inst->shape.rank) return false;
  memset(g, 0, sizeof(*g));
  g->out_size = inst->shape.dims[j];
  switch (inst->opcode) {
    case HL_OP_SLICE: {
      if (j >= inst->attrs.slice_count || in->rank != inst->shape.rank) return false;
      const hl_slice_dim_t *s = &inst->attrs.slice_dimensions[j];
      *in_dim = j;
      g->stride = s->stride > 0 ? s->stride : 1;
      g->offset = s->start;
      g->extent = 1;
      break;
    }
    case HL_OP_PAD: {
      if (j >= inst->attrs.padding_count || in->rank != inst->shape.rank) return false;
      const hl_padding_dim_t *p = &inst->attrs.padding_config[j];
      if (p->interior_padding) return false;
      *in_dim = j;
      g->stride = 1;
      g->offset = -p->edge_padding_low;
      g->extent = 1;
      g->pads = p->edge_padding_low > 0 || p->edge_padding_high > 0;
      break;
    }
    case HL_OP_REDUCE_WINDOW: {
      if (inst->operand_count != 2 || j >= inst->attrs.window.n || in->rank != inst->shape.rank) return false;
      const hl_window_dim_t *w = &inst->attrs.window.dims[j];
      if (w->base_dilation != 1 || w->stride < 1 || w->window_dilation < 1) return false;
      *in_dim = j;
      g->stride = w->stride;
      g->offset = -w->padding_low;
      g->extent = (w->size - 1) * w->window_dilation + 1;
      g->pads = w->padding_low > 0 || w->padding_high > 0;
      break;
    }
    case HL_OP_CONVOLUTION: {
      if (inst->operand_count != 2 || inst->attrs.feature_group_count != 1 || inst->attrs.batch_group_count != 1)
        return false;
      const hl_conv_dims_t *cd = &inst->attrs.convolution_dimension_numbers;
      int k = -1;
      for (int s = 0; s < cd->output_spatial_dimensions.n; s++)
        if (cd->output_spatial_dimensions.v[s] == j) k = s;
      if (k < 0 || k >= inst->attrs.window.n || k >= cd->input_spatial_dimensions.n) return false;
      const hl_window_dim_t *w = &inst->attrs.window.dims[k];
      if (w->base_dilation != 1 || w->stride < 1 || w->window_dilation < 1) return false;
      *in_dim = (int)cd->input_spatial_dimensions.v[k];
      g->stride = w->stride;
      g->offset = -w->padding_low;
      g->extent = (w->size - 1) * w->window_dilation + 1;
      g->pads = w->padding_low > 0 || w->padding_high > 0;
      break;
    }
    default:
      return false;
  }
  g->in_size = in->dims[*in_dim];
  return g->extent >= 1 && g->stride >= 1;
}

// The plan for t tiles; false when some partition with valid outputs needs
// more than its neighbours' shards (or there is nothing to split).
static bool plan_for(const halo_geom_t *g, int64_t t, halo_plan_t *p) {
  if (t <= 1 || t > HL_SPMD_MAX_DEVICES || g->out_size <= 0 || g->in_size <= 0) return false;
  p->t = t;
  p->si = (g->in_size + t - 1) / t;
  p->so = (g->out_size + t - 1) / t;
  p->len = (p->so - 1) * g->stride + g->extent;
  int64_t lo = 0, hi = 0, step = p->so * g->stride - p->si;
  for (int64_t i = 0; i < t && i * p->so < g->out_size; i++) {
    int64_t r = i * step + g->offset;
    if (-r > lo) lo = -r;
    if (r + p->len - p->si > hi) hi = r + p->len - p->si;
  }
  if (lo > p->si || hi > p->si) return false;
  p->lo = lo;
  p->hi = hi;
  p->uniform = true;
  for (int64_t i = 0; i < t; i++) {
    int64_t r = i * step + g->offset;
    if (r < -lo) r = -lo;  // partitions past the valid outputs: any window inside the halo'd shard
    if (r > p->si + hi - p->len) r = p->si + hi - p->len;
    p->r[i] = r;
    if (r != p->r[0]) p->uniform = false;
  }
  return true;
}

const hl_instruction_t *spmd_roll_source(const hl_instruction_t *cat, int *dim, int64_t *k) {
  if (cat->opcode != HL_OP_CONCATENATE || cat->operand_count != 2 || cat->attrs.dimensions.n != 1) return NULL;
  const hl_instruction_t *a = cat->operands[0], *b = cat->operands[1];
  if (a->opcode != HL_OP_SLICE || b->opcode != HL_OP_SLICE || a->operands[0] != b->operands[0]) return NULL;
  const hl_instruction_t *x = a->operands[0];
  int d = (int)cat->attrs.dimensions.v[0];
  if (x->shape.rank != cat->shape.rank || a->attrs.slice_count != x->shape.rank ||
      b->attrs.slice_count != x->shape.rank || d < 0 || d >= x->shape.rank)
    return NULL;
  for (int e = 0; e < x->shape.rank; e++) {
    const hl_slice_dim_t *sa = &a->attrs.slice_dimensions[e], *sb = &b->attrs.slice_dimensions[e];
    if (sa->stride > 1 || sb->stride > 1) return NULL;
    if (e == d) continue;
    if (sa->start || sb->start || sa->limit != x->shape.dims[e] || sb->limit != x->shape.dims[e]) return NULL;
  }
  const hl_slice_dim_t *sa = &a->attrs.slice_dimensions[d], *sb = &b->attrs.slice_dimensions[d];
  int64_t n = x->shape.dims[d];
  if (sa->limit != n || sb->start != 0 || sb->limit != sa->start || sa->start <= 0 || sa->start >= n) return NULL;
  *dim = d;
  *k = sa->start;
  return x;
}

// A roll out[o] = x[(o + k) mod N] split t ways: even shards, and the
// nearer wrap-around neighbour's edge (k from the right or N - k from the
// left) at most a shard.
static bool roll_ok(int64_t n, int64_t k, int64_t t) {
  if (t <= 1 || n % t) return false;
  int64_t need = k <= n - k ? k : n - k;
  return need <= n / t;
}

uint32_t spmd_halo_dims(const hl_instruction_t *inst, const hl_spmd_sharding_t *out) {
  uint32_t mask = 0;
  if (out->kind != HL_SPMD_TILED) return 0;
  int rd;
  int64_t rk;
  const hl_instruction_t *rx = spmd_roll_source(inst, &rd, &rk);
  if (rx) return rd < out->rank && roll_ok(rx->shape.dims[rd], rk, out->tiles[rd]) ? 1u << rd : 0;
  for (int j = 0; j < inst->shape.rank && j < out->rank; j++) {
    int d;
    halo_geom_t g;
    halo_plan_t p;
    if (out->tiles[j] > 1 && geometry(inst, j, &d, &g) && plan_for(&g, out->tiles[j], &p)) mask |= 1u << j;
  }
  return mask;
}

int spmd_halo_operand_dim(const hl_instruction_t *inst, int j) {
  int d;
  halo_geom_t g;
  return geometry(inst, j, &d, &g) ? d : -1;
}

static const char *zero_literal(hl_dtype_t dt) {
  if (dt == HL_PRED) return "false";
  if (hl_dtype_is_complex(dt)) return "(0, 0)";
  return "0";
}

static void line(spmd_ctx_t *c, const char *name, hl_dtype_t dt, int rank, const int64_t *dims) {
  hl_strbuf_appendf(&c->body, "  %s = ", name);
  spmd_shape_text(dt, rank, dims, &c->body);
  hl_strbuf_append(&c->body, " ");
}

// Slice [start, start + size) of dimension d of v (local dims `dims`).
static const char *slice_dim(spmd_ctx_t *c, const char *v, hl_dtype_t dt, int rank, const int64_t *dims, int d,
                             int64_t start, int64_t size) {
  const char *name = spmd_name(c, "halo.slice");
  if (!name) return NULL;
  int64_t out[HL_MAX_RANK];
  memcpy(out, dims, (size_t)rank * sizeof(*out));
  out[d] = size;
  line(c, name, dt, rank, out);
  hl_strbuf_appendf(&c->body, "slice(%s), slice={", v);
  for (int k = 0; k < rank; k++)
    hl_strbuf_appendf(&c->body, "%s[%lld:%lld]", k ? ", " : "", (long long)(k == d ? start : 0),
                      (long long)(k == d ? start + size : dims[k]));
  hl_strbuf_append(&c->body, "}\n");
  return name;
}

// One collective-permute of `v` (local dims `dims`) along the groups of s's
// dimension d: the member with tile index t receives from the one with t -
// shift (shift 1: from the left neighbour; -1: from the right one).
static hl_status_t neighbour_permute(spmd_ctx_t *c, const char *v, hl_dtype_t dt, int rank, const int64_t *dims,
                                     const hl_spmd_sharding_t *s, int d, int shift, bool cyclic, const char **out) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  HL_RETURN_IF_ERROR(hl_spmd_groups(s, 1u << d, groups, &count, &size));
  int64_t bytes = (int64_t)hl_dtype_size(dt);
  for (int k = 0; k < rank; k++) bytes *= dims[k];
  c->bytes += bytes;
  const char *name = spmd_name(c, "collective-permute");
  if (!name) return HL_OOM();
  line(c, name, dt, rank, dims);
  hl_strbuf_appendf(&c->body, "collective-permute(%s), channel_id=%lld, source_target_pairs={", v,
                    (long long)(c->inserted++, ++c->channel));
  bool first = true;
  for (int g = 0; g < count; g++)
    for (int t = 0; t < size; t++) {
      int src = t - shift;
      if (cyclic) src = (src + size) % size;
      if (src < 0 || src >= size) continue;
      hl_strbuf_appendf(&c->body, "%s{%lld,%lld}", first ? "" : ",", (long long)groups[g * size + src],
                        (long long)groups[g * size + t]);
      first = false;
    }
  hl_strbuf_append(&c->body, "}\n");
  hl_strbuf_appendf(&c->explain, "      halo collective-permute dim %d from the %s%s neighbour, %lld element%s over %d "
                                 "partitions in %d group%s: %lld bytes per partition\n",
                    d, cyclic ? "cyclic " : "", shift > 0 ? "left" : "right", (long long)dims[d], dims[d] == 1 ? "" : "s", size, count,
                    count == 1 ? "" : "s", (long long)bytes);
  *out = name;
  return NULL;
}

// The halo exchange of dimension d (split as s says, plan p, geometry g) of
// v, whose local dims are `dims` (updated to the window): neighbours' edges
// concatenated, the window cut, positions outside [0, D) set to `fill` when
// the op pads. *out: the window.
static hl_status_t exchange(spmd_ctx_t *c, const char *v, hl_dtype_t dt, int rank, int64_t *dims,
                            const hl_spmd_sharding_t *s, int d, const halo_geom_t *g, const halo_plan_t *p,
                            const char *fill, const char **out) {
  const char *parts[3];
  int np = 0;
  if (p->lo > 0) {
    const char *edge = slice_dim(c, v, dt, rank, dims, d, p->si - p->lo, p->lo);
    if (!edge) return HL_OOM();
    int64_t ed[HL_MAX_RANK];
    memcpy(ed, dims, (size_t)rank * sizeof(*ed));
    ed[d] = p->lo;
    HL_RETURN_IF_ERROR(neighbour_permute(c, edge, dt, rank, ed, s, d, 1, false, &parts[np++]));
  }
  parts[np++] = v;
  if (p->hi > 0) {
    const char *edge = slice_dim(c, v, dt, rank, dims, d, 0, p->hi);
    if (!edge) return HL_OOM();
    int64_t ed[HL_MAX_RANK];
    memcpy(ed, dims, (size_t)rank * sizeof(*ed));
    ed[d] = p->hi;
    HL_RETURN_IF_ERROR(neighbour_permute(c, edge, dt, rank, ed, s, d, -1, false, &parts[np++]));
  }
  const char *cur = v;
  if (np > 1) {
    const char *cat = spmd_name(c, "halo.concatenate");
    if (!cat) return HL_OOM();
    dims[d] = p->lo + p->si + p->hi;
    line(c, cat, dt, rank, dims);
    hl_strbuf_append(&c->body, "concatenate(");
    for (int k = 0; k < np; k++) hl_strbuf_appendf(&c->body, "%s%s", k ? ", " : "", parts[k]);
    hl_strbuf_appendf(&c->body, "), dimensions={%d}\n", d);
    cur = cat;
  }
  // The window: [r_i + lo, + len) of the halo'd shard.
  int64_t start_of_tile[HL_SPMD_MAX_DEVICES];
  for (int q = 0; q < c->n; q++) start_of_tile[q] = p->r[s->coords[q][d]] + p->lo;
  if (p->uniform) {
    if (start_of_tile[0] != 0 || p->len != dims[d]) {
      cur = slice_dim(c, cur, dt, rank, dims, d, start_of_tile[0], p->len);
      if (!cur) return HL_OOM();
    }
  } else {
    const char *off = spmd_partition_lookup(c, start_of_tile);
    const char *ds = spmd_name(c, "halo.dynamic-slice");
    if (!off || !ds) return HL_OOM();
    int64_t wd[HL_MAX_RANK];
    memcpy(wd, dims, (size_t)rank * sizeof(*wd));
    wd[d] = p->len;
    line(c, ds, dt, rank, wd);
    hl_strbuf_appendf(&c->body, "dynamic-slice(%s", cur);
    for (int k = 0; k < rank; k++) hl_strbuf_appendf(&c->body, ", %s", k == d ? off : "spmd.zero_index");
    hl_strbuf_append(&c->body, "), dynamic_slice_sizes={");
    for (int k = 0; k < rank; k++) hl_strbuf_appendf(&c->body, "%s%lld", k ? "," : "", (long long)wd[k]);
    hl_strbuf_append(&c->body, "}\n");
    cur = ds;
  }
  dims[d] = p->len;
  if (g->pads) {
    // Global position of window element k: i*si + r_i + k; outside [0, D) it is padding.
    int64_t base[HL_SPMD_MAX_DEVICES];
    for (int q = 0; q < c->n; q++) base[q] = (int64_t)s->coords[q][d] * p->si + p->r[s->coords[q][d]];
    const char *b = spmd_partition_lookup(c, base);
    const char *io = spmd_name(c, "halo.iota"), *bb = spmd_name(c, "halo.base"), *pos = spmd_name(c, "halo.position"),
               *lim = spmd_name(c, "halo.limit"), *zero = spmd_name(c, "halo.zero"), *ge = spmd_name(c, "halo.ge"),
               *lt = spmd_name(c, "halo.lt"), *in = spmd_name(c, "halo.inside"), *fb = spmd_name(c, "halo.fill"),
               *sel = spmd_name(c, "halo.select");
    if (!b || !io || !bb || !pos || !lim || !zero || !ge || !lt || !in || !fb || !sel) return HL_OOM();
    line(c, io, HL_S32, rank, dims);
    hl_strbuf_appendf(&c->body, "iota(), iota_dimension=%d\n", d);
    line(c, bb, HL_S32, rank, dims);
    hl_strbuf_appendf(&c->body, "broadcast(%s), dimensions={}\n", b);
    line(c, pos, HL_S32, rank, dims);
    hl_strbuf_appendf(&c->body, "add(%s, %s)\n", io, bb);
    hl_strbuf_appendf(&c->body, "  %s = s32[] constant(%lld)\n", lim, (long long)g->in_size);
    hl_strbuf_appendf(&c->body, "  %s = s32[] constant(0)\n", zero);
    const char *limb = spmd_name(c, "halo.limit"), *zerob = spmd_name(c, "halo.zero");
    if (!limb || !zerob) return HL_OOM();
    line(c, limb, HL_S32, rank, dims);
    hl_strbuf_appendf(&c->body, "broadcast(%s), dimensions={}\n", lim);
    line(c, zerob, HL_S32, rank, dims);
    hl_strbuf_appendf(&c->body, "broadcast(%s), dimensions={}\n", zero);
    line(c, ge, HL_PRED, rank, dims);
    hl_strbuf_appendf(&c->body, "compare(%s, %s), direction=GE\n", pos, zerob);
    line(c, lt, HL_PRED, rank, dims);
    hl_strbuf_appendf(&c->body, "compare(%s, %s), direction=LT\n", pos, limb);
    line(c, in, HL_PRED, rank, dims);
    hl_strbuf_appendf(&c->body, "and(%s, %s)\n", ge, lt);
    line(c, fb, dt, rank, dims);
    hl_strbuf_appendf(&c->body, "broadcast(%s), dimensions={}\n", fill);
    line(c, sel, dt, rank, dims);
    hl_strbuf_appendf(&c->body, "select(%s, %s, %s)\n", in, cur, fb);
    cur = sel;
  }
  *out = cur;
  return NULL;
}

bool spmd_roll_applies(spmd_ctx_t *c, const hl_instruction_t *cat) {
  int d;
  int64_t k;
  const hl_instruction_t *x = spmd_roll_source(cat, &d, &k);
  const hl_spmd_sharding_t *t = &c->val[cat->index].sh;
  return x && !c->dry && !c->val[cat->index].manual && t->kind == HL_SPMD_TILED &&
         roll_ok(x->shape.dims[d], k, t->tiles[d]);
}

// A roll (concatenate of x[k:N] and x[0:k] along d) split like its target:
// each partition's window is its own shard shifted by k, the wrap-around
// included, so the nearer side's edge comes from the cyclic neighbour.
static hl_status_t lower_roll(spmd_ctx_t *c, const hl_instruction_t *cat, const hl_spmd_sharding_t *target,
                              hl_spmd_sharding_t *res, const char **out) {
  int d;
  int64_t k;
  const hl_instruction_t *x = spmd_roll_source(cat, &d, &k);
  *res = *target;
  const char *v;
  HL_RETURN_IF_ERROR(spmd_operand_to(c, cat->operands[0], 0, res, &v));
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(&x->shape, res, dims);
  int64_t si = dims[d], n = x->shape.dims[d];
  bool from_right = k <= n - k;
  int64_t m = from_right ? k : n - k;
  hl_strbuf_appendf(&c->explain, "      rule: concatenate of x[%lld:] and x[:%lld] (a roll) along split dimension %d "
                                 "with a cyclic halo exchange (%lld %s), locally\n",
                    (long long)k, (long long)k, d, (long long)m, from_right ? "right" : "left");
  const char *edge = slice_dim(c, v, x->shape.dtype, x->shape.rank, dims, d, from_right ? 0 : si - m, m);
  if (!edge) return HL_OOM();
  int64_t ed[HL_MAX_RANK];
  memcpy(ed, dims, sizeof(ed));
  ed[d] = m;
  const char *halo;
  HL_RETURN_IF_ERROR(neighbour_permute(c, edge, x->shape.dtype, x->shape.rank, ed, res, d, from_right ? -1 : 1,
                                       true, &halo));
  const char *cat_name = spmd_name(c, "halo.concatenate");
  if (!cat_name) return HL_OOM();
  int64_t cd[HL_MAX_RANK];
  memcpy(cd, dims, sizeof(cd));
  cd[d] = si + m;
  line(c, cat_name, x->shape.dtype, x->shape.rank, cd);
  hl_strbuf_appendf(&c->body, "concatenate(%s, %s), dimensions={%d}\n", from_right ? v : halo, from_right ? halo : v, d);
  // Right: out[o] = window[o + k] (k = m); left: window[o].
  *out = slice_dim(c, cat_name, x->shape.dtype, x->shape.rank, cd, d, from_right ? m : 0, si);
  return *out ? NULL : HL_OOM();
}

hl_status_t spmd_lower_halo(spmd_ctx_t *c, int i, const hl_spmd_sharding_t *target, hl_spmd_sharding_t *res,
                            const char **out) {
  const hl_instruction_t *inst = c->entry->instructions[i];
  *out = NULL;
  if (c->dry || target->kind != HL_SPMD_TILED || inst->shape.rank > HL_MAX_RANK) return NULL;
  if (inst->opcode == HL_OP_CONCATENATE)
    return spmd_roll_applies(c, inst) ? lower_roll(c, inst, target, res, out) : NULL;
  bool conv = inst->opcode == HL_OP_CONVOLUTION;
  if (!conv && inst->opcode != HL_OP_SLICE && inst->opcode != HL_OP_PAD && inst->opcode != HL_OP_REDUCE_WINDOW)
    return NULL;
  if (inst->opcode == HL_OP_REDUCE_WINDOW && inst->operand_count != 2) return NULL;
  const hl_instruction_t *op0 = inst->operands[0];
  // The result keeps the target's split on dimensions with a halo plan (and,
  // for a convolution, batch and output features); others unsplit.
  uint32_t touched = conv ? 0 : spmd_touched_dims(inst);
  const hl_conv_dims_t *cd = &inst->attrs.convolution_dimension_numbers;
  *res = *target;
  uint32_t halo = 0;
  int in_dim[HL_MAX_RANK];
  halo_geom_t geom[HL_MAX_RANK];
  halo_plan_t *plan = hl_calloc((size_t)inst->shape.rank + 1, sizeof(*plan));
  if (!plan) return HL_OOM();
  for (int j = 0; j < inst->shape.rank; j++) {
    bool windowed = conv ? (j != cd->output_batch_dimension && j != cd->output_feature_dimension)
                         : (touched >> j & 1) != 0;
    if (!windowed) continue;
    if (target->tiles[j] > 1 && geometry(inst, j, &in_dim[j], &geom[j]) &&
        plan_for(&geom[j], target->tiles[j], &plan[j]))
      halo |= 1u << j;
    else
      hl_spmd_unsplit(res, j);
  }
  if (!halo) {
    hl_free(plan);
    return NULL;
  }
  // Operand shardings: the result's tiling along the mapped dimensions.
  hl_spmd_sharding_t want[2];
  int lmap[HL_MAX_RANK];
  for (int d = 0; d < HL_MAX_RANK; d++) lmap[d] = -1;
  if (conv) {
    lmap[cd->input_batch_dimension] = (int)cd->output_batch_dimension;
    for (int k = 0; k < cd->input_spatial_dimensions.n && k < cd->output_spatial_dimensions.n; k++)
      lmap[cd->input_spatial_dimensions.v[k]] = (int)cd->output_spatial_dimensions.v[k];
    int rmap[HL_MAX_RANK];
    for (int d = 0; d < HL_MAX_RANK; d++) rmap[d] = -1;
    rmap[cd->kernel_output_feature_dimension] = (int)cd->output_feature_dimension;
    spmd_map_dims(res, op0->shape.rank, lmap, &want[0]);
    spmd_map_dims(res, inst->operands[1]->shape.rank, rmap, &want[1]);
  } else {
    want[0] = *res;
    hl_spmd_replicated(0, c->n, &want[1]);
  }
  const char *ops[2] = {NULL, NULL};
  hl_status_t st = NULL;
  for (int k = 0; k < inst->operand_count && k < 2 && !st; k++) st = spmd_operand_to(c, inst, k, &want[k], &ops[k]);
  hl_strbuf_appendf(&c->explain, "      rule: %s with a halo exchange along split dimension%s", hl_opcode_name(inst->opcode),
                    (halo & (halo - 1)) ? "s" : "");
  for (int j = 0; j < inst->shape.rank; j++)
    if (halo >> j & 1)
      hl_strbuf_appendf(&c->explain, " %d (halo %lld left, %lld right)", j, (long long)plan[j].lo,
                        (long long)plan[j].hi);
  hl_strbuf_append(&c->explain, ", locally\n");
  // Fill: the pad value, the reduce-window init, zero for a convolution.
  const char *fill = conv ? NULL : ops[1];
  if (!st && conv) {
    fill = spmd_name(c, "halo.zero");
    if (!fill) st = HL_OOM();
    else hl_strbuf_appendf(&c->body, "  %s = %s[] constant(%s)\n", fill, hl_dtype_name(op0->shape.dtype),
                           zero_literal(op0->shape.dtype));
  }
  int64_t dims[HL_MAX_RANK];
  spmd_local_dims(&op0->shape, &want[0], dims);
  const char *v = st ? NULL : ops[0];
  for (int j = 0; j < inst->shape.rank && !st; j++)
    if (halo >> j & 1)
      st = exchange(c, v, op0->shape.dtype, op0->shape.rank, dims, &want[0], in_dim[j], &geom[j], &plan[j], fill, &v);
  // The op on the window, its halo'd dimensions without padding.
  hl_instruction_t local = *inst;
  hl_slice_dim_t sl[HL_MAX_RANK];
  hl_padding_dim_t pad[HL_MAX_RANK];
  hl_window_dim_t win[HL_MAX_RANK];
  if (!st && inst->opcode == HL_OP_SLICE) {
    int64_t shard[HL_MAX_RANK];
    spmd_local_dims(&inst->shape, res, shard);
    for (int d = 0; d < inst->attrs.slice_count && d < HL_MAX_RANK; d++) {
      sl[d] = inst->attrs.slice_dimensions[d];
      if (halo >> d & 1) sl[d] = (hl_slice_dim_t){0, plan[d].len, geom[d].stride};
      else if (!(touched >> d & 1)) sl[d].limit = shard[d];  // untouched: the whole local shard
    }
    local.attrs.slice_dimensions = sl;
  } else if (!st && inst->opcode == HL_OP_PAD) {
    for (int d = 0; d < inst->attrs.padding_count && d < HL_MAX_RANK; d++) {
      pad[d] = inst->attrs.padding_config[d];
      if (halo >> d & 1) pad[d] = (hl_padding_dim_t){0, 0, 0};
    }
    local.attrs.padding_config = pad;
  } else if (!st) {
    for (int k = 0; k < inst->attrs.window.n && k < HL_MAX_RANK; k++) win[k] = inst->attrs.window.dims[k];
    for (int j = 0; j < inst->shape.rank; j++) {
      if (!(halo >> j & 1)) continue;
      int k = j;
      if (conv)
        for (int s = 0; s < cd->output_spatial_dimensions.n; s++)
          if (cd->output_spatial_dimensions.v[s] == j) k = s;
      win[k].padding_low = win[k].padding_high = 0;
    }
    local.attrs.window.dims = win;
  }
  hl_free(plan);
  if (st) return st;
  const char *local_ops[2] = {v, ops[1]};
  int64_t rdims[HL_MAX_RANK];
  spmd_local_dims(&inst->shape, res, rdims);
  const char *name = spmd_name(c, inst->name);
  if (!name) return HL_OOM();
  HL_RETURN_IF_ERROR(spmd_emit_like(c, &local, name, rdims, local_ops));
  *out = name;
  return NULL;
}
