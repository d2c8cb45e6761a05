// ragged-dot (lhs, rhs, group_sizes): a dot_general whose lhs has one ragged
// dimension split into consecutive groups; group j covers positions
// [sum(group_sizes[0..j)), sum(group_sizes[0..j])). XLA's three modes, by
// the kind of the lhs ragged dimension:
//   1. non-contracting (m): rhs has a group dimension; each lhs position in
//      group j is multiplied with rhs[group j]. Out: [b..., m..., n...].
//   2. contracting (k): rhs has no group dimension; group j sums only over
//      its own k positions. Out: [g, b..., m..., n...].
//   3. batch (b): rhs has no group dimension; a plain dot_general.
//      Out: [b..., m..., n...].
// Positions past the total of group_sizes belong to no group and give 0
// (modes 1 and 3), as the masked reference definition in JAX does.
//
// group_sizes has shape [g] or [b..., x..., g] (stablehlo ChloOps.cpp
// checkRaggedDotConstraints, which XLA's InferRaggedDotOpShape mirrors):
// b... are all lhs batch dimensions (in lhs_batch_dims order; mode 3: only
// those listed before the ragged one), x... are the lhs non-contracting
// dimensions before the ragged one (mode 1), the lhs contracting dimensions
// listed before it (mode 2), or nothing (mode 3). Each such prefix index
// has its own row of g sizes; a [g] group_sizes is broadcast to every row.
//
// Element types: a floating-point result is accumulated in double (any real
// operands). An integer or pred result is computed as dot does for integers:
// operands sign- or zero-extended per their own type, products and sums in
// 64 bits with wrap-around, the low bits kept (pred: sum != 0) - the same
// bits as XLA's arithmetic in the result type.
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/kernels/element_access.h"
#include "runtime/kernels/kernel.h"

typedef struct {
  int mode;                     // 1, 2 or 3 (see above)
  int ragged;                   // lhs ragged dimension
  int group_dim;                // rhs group dimension (mode 1), else -1
  int nb, nc, nlf, nrf;         // batch, contracting, lhs free, rhs free counts
  int lb[HL_MAX_RANK], rb[HL_MAX_RANK], lc[HL_MAX_RANK], rc[HL_MAX_RANK];
  int lf[HL_MAX_RANK], rf[HL_MAX_RANK];
  int nprefix;                  // group_sizes prefix dimensions (see above)
  int prefix[HL_MAX_RANK];      // ... as lhs dimensions
} ragged_plan_t;

static bool in_list(const hl_i64_list_t *l, int d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

static hl_status_t plan_ragged(const hl_instruction_t *inst, const hl_shape_t *ls,
                               const hl_shape_t *rs, int64_t groups, ragged_plan_t *p) {
  const hl_attrs_t *a = &inst->attrs;
  const hl_dot_dims_t *d = &a->dot_dimension_numbers;
  memset(p, 0, sizeof(*p));
  if (!a->has_ragged_dot_dimension_numbers || a->lhs_ragged_dimensions.n != 1)
    return HL_INVALID("ragged-dot %s: lhs_ragged_dims must have exactly one entry", inst->name);
  if (a->rhs_group_dimensions.n > 1)
    return HL_INVALID("ragged-dot %s: rhs_group_dims has more than one entry", inst->name);
  if (d->lhs_batch_dimensions.n != d->rhs_batch_dimensions.n ||
      d->lhs_contracting_dimensions.n != d->rhs_contracting_dimensions.n)
    return HL_INVALID("ragged-dot %s: lhs and rhs batch / contracting dims differ in count",
                      inst->name);
  p->nb = d->lhs_batch_dimensions.n;
  p->nc = d->lhs_contracting_dimensions.n;
  const hl_i64_list_t *lists[4] = {&d->lhs_batch_dimensions, &d->rhs_batch_dimensions,
                                   &d->lhs_contracting_dimensions,
                                   &d->rhs_contracting_dimensions};
  int *outs[4] = {p->lb, p->rb, p->lc, p->rc};
  for (int l = 0; l < 4; l++) {
    int rank = (l % 2 == 0) ? ls->rank : rs->rank;
    for (int i = 0; i < lists[l]->n; i++) {
      int64_t v = lists[l]->v[i];
      if (v < 0 || v >= rank)
        return HL_INVALID("ragged-dot %s: dimension %lld out of range for rank %d", inst->name,
                          (long long)v, rank);
      outs[l][i] = (int)v;
    }
  }
  for (int i = 0; i < p->nb; i++)
    if (ls->dims[p->lb[i]] != rs->dims[p->rb[i]])
      return HL_INVALID("ragged-dot %s: batch dimension %d sizes differ", inst->name, i);
  for (int i = 0; i < p->nc; i++)
    if (ls->dims[p->lc[i]] != rs->dims[p->rc[i]])
      return HL_INVALID("ragged-dot %s: contracting dimension %d sizes differ", inst->name, i);
  int64_t r = a->lhs_ragged_dimensions.v[0];
  if (r < 0 || r >= ls->rank)
    return HL_INVALID("ragged-dot %s: lhs_ragged_dims %lld out of range for rank %d", inst->name,
                      (long long)r, ls->rank);
  p->ragged = (int)r;
  p->group_dim = -1;
  bool is_batch = in_list(&d->lhs_batch_dimensions, p->ragged);
  bool is_contracting = in_list(&d->lhs_contracting_dimensions, p->ragged);
  p->mode = is_batch ? 3 : is_contracting ? 2 : 1;
  if (p->mode == 1) {
    if (a->rhs_group_dimensions.n != 1)
      return HL_INVALID("ragged-dot %s: a non-contracting ragged dimension needs one "
                        "rhs_group_dims entry", inst->name);
    int64_t g = a->rhs_group_dimensions.v[0];
    if (g < 0 || g >= rs->rank || in_list(&d->rhs_batch_dimensions, (int)g) ||
        in_list(&d->rhs_contracting_dimensions, (int)g))
      return HL_INVALID("ragged-dot %s: rhs_group_dims %lld is out of range or a batch / "
                        "contracting dimension", inst->name, (long long)g);
    if (rs->dims[g] != groups)
      return HL_INVALID("ragged-dot %s: rhs group dimension has size %lld, group_sizes has %lld",
                        inst->name, (long long)rs->dims[g], (long long)groups);
    p->group_dim = (int)g;
  } else if (a->rhs_group_dimensions.n != 0) {
    return HL_INVALID("ragged-dot %s: rhs_group_dims must be empty when the ragged dimension "
                      "is a %s dimension", inst->name, is_batch ? "batch" : "contracting");
  }
  for (int i = 0; i < ls->rank; i++)
    if (!in_list(&d->lhs_batch_dimensions, i) && !in_list(&d->lhs_contracting_dimensions, i))
      p->lf[p->nlf++] = i;
  for (int i = 0; i < rs->rank; i++)
    if (!in_list(&d->rhs_batch_dimensions, i) && !in_list(&d->rhs_contracting_dimensions, i) &&
        i != p->group_dim)
      p->rf[p->nrf++] = i;
  // group_sizes prefix [b..., x...] as lhs dimensions.
  for (int i = 0; i < p->nb; i++) {
    if (p->mode == 3 && p->lb[i] == p->ragged) break;
    p->prefix[p->nprefix++] = p->lb[i];
  }
  if (p->mode == 2)
    for (int i = 0; i < p->nc && p->lc[i] != p->ragged; i++) p->prefix[p->nprefix++] = p->lc[i];
  if (p->mode == 1)
    for (int i = 0; i < p->ragged; i++)
      if (!in_list(&d->lhs_batch_dimensions, i) && !in_list(&d->lhs_contracting_dimensions, i))
        p->prefix[p->nprefix++] = i;
  // Expected result: [g if mode 2] + batch + lhs free + rhs free.
  int64_t want[HL_MAX_RANK * 3];
  int n = 0;
  if (p->mode == 2) want[n++] = groups;
  for (int i = 0; i < p->nb; i++) want[n++] = ls->dims[p->lb[i]];
  for (int i = 0; i < p->nlf; i++) want[n++] = ls->dims[p->lf[i]];
  for (int i = 0; i < p->nrf; i++) want[n++] = rs->dims[p->rf[i]];
  bool ok = n == inst->shape.rank;
  for (int i = 0; ok && i < n; i++) ok = want[i] == inst->shape.dims[i];
  if (!ok)
    return HL_INVALID("ragged-dot %s: result dimensions do not match mode %d's "
                      "[%sbatch..., lhs free..., rhs free...] (%d dimensions)",
                      inst->name, p->mode, p->mode == 2 ? "g, " : "", n);
  return NULL;
}

// Group of position `pos` along the ragged dimension given one row of
// cumulative group ends; -1 when past the total.
static int64_t group_of(const int64_t *ends, int64_t groups, int64_t pos) {
  for (int64_t j = 0; j < groups; j++)
    if (pos < ends[j]) return j;
  return -1;
}

static int64_t offset_of(const int64_t *idx, const int64_t *strides, int rank) {
  int64_t o = 0;
  for (int i = 0; i < rank; i++) o += idx[i] * strides[i];
  return o;
}

// Checks group_sizes' shape ([g] or [prefix..., g]) and returns its rows of
// cumulative ends (*out_ends: rows * g entries).
static hl_status_t group_ends(const hl_instruction_t *inst, const hl_literal_t *gs,
                              const hl_shape_t *ls, const ragged_plan_t *p, int64_t groups,
                              int64_t **out_ends) {
  *out_ends = NULL;
  const hl_shape_t *g = &gs->shape;
  if (g->rank != 1) {
    bool ok = g->rank == p->nprefix + 1;
    for (int i = 0; ok && i < p->nprefix; i++) ok = g->dims[i] == ls->dims[p->prefix[i]];
    if (!ok) {
      char want[256];
      int n = 0;
      for (int i = 0; i < p->nprefix && n < (int)sizeof(want) - 32; i++)
        n += snprintf(want + n, sizeof(want) - (size_t)n, "%lld, ",
                      (long long)ls->dims[p->prefix[i]]);
      snprintf(want + n, sizeof(want) - (size_t)n, "%lld", (long long)groups);
      return HL_INVALID("ragged-dot %s: group_sizes (operand 2) is %s; mode %d expects [%s] "
                        "(lhs batch dims, then the %s dims before the ragged one, then g) "
                        "or [%lld]",
                        inst->name, HL_SHAPE_STR(g), p->mode, want,
                        p->mode == 2 ? "contracting" : "non-contracting", (long long)groups);
    }
  }
  int64_t count = hl_shape_element_count(g);
  int64_t *ends = hl_calloc((size_t)(count > 0 ? count : 1), sizeof(int64_t));
  if (!ends) return HL_OOM();
  for (int64_t at = 0; at < count; at += groups) {
    int64_t total = 0;
    for (int64_t j = 0; j < groups; j++) {
      int64_t s;
      hl_elem_load_int(g->dtype, gs->data, at + j, 1, &s);
      if (hl_dtype_is_unsigned_int(g->dtype) && hl_dtype_bit_width(g->dtype) == 64 && s < 0)
        s = INT64_MAX;  // beyond any dimension: the rest of the row is one group
      if (s < 0) {
        hl_free(ends);
        return g->rank == 1
                   ? HL_INVALID("ragged-dot %s: group_sizes[%lld] = %lld is negative",
                                inst->name, (long long)j, (long long)s)
                   : HL_INVALID("ragged-dot %s: group_sizes element %lld = %lld is negative",
                                inst->name, (long long)(at + j), (long long)s);
      }
      total = s > INT64_MAX - total ? INT64_MAX : total + s;
      ends[at + j] = total;
    }
  }
  *out_ends = ends;
  return NULL;
}

// Row of group_sizes that lhs index li belongs to (0 for a [g] group_sizes).
static int64_t group_row(const ragged_plan_t *p, const hl_shape_t *gs, const int64_t *li) {
  if (gs->rank == 1) return 0;
  int64_t row = 0;
  for (int i = 0; i < p->nprefix; i++) row = row * gs->dims[i] + li[p->prefix[i]];
  return row;
}

hl_status_t hl_kernel_ragged_dot(hl_kernel_context_t *ctx, const hl_instruction_t *inst,
                                 hl_literal_t *const *operands, hl_literal_t **out) {
  (void)ctx;
  const hl_literal_t *lhs = operands[0], *rhs = operands[1], *gs = operands[2];
  const hl_shape_t *ls = &lhs->shape, *rs = &rhs->shape, *os = &inst->shape;
  if (!hl_shape_is_array(ls) || !hl_shape_is_array(rs) || !hl_shape_is_array(os))
    return HL_INVALID("ragged-dot %s: lhs, rhs and result must be arrays", inst->name);
  bool float_result = hl_dtype_is_float(os->dtype);
  bool int_result = hl_dtype_is_integer(os->dtype) || os->dtype == HL_PRED;
  bool ok_types = float_result
                      ? hl_elem_is_real_or_int(ls->dtype) && hl_elem_is_real_or_int(rs->dtype)
                      : int_result && (hl_dtype_is_integer(ls->dtype) || ls->dtype == HL_PRED) &&
                            (hl_dtype_is_integer(rs->dtype) || rs->dtype == HL_PRED);
  if (!ok_types)
    return HL_UNIMPL("ragged-dot %s: element types %s x %s -> %s (supported: a floating-point "
                     "result from real operands, or an integer / pred result from integer / "
                     "pred operands)",
                     inst->name, hl_dtype_name(ls->dtype), hl_dtype_name(rs->dtype),
                     hl_dtype_name(os->dtype));
  if (!hl_shape_is_array(&gs->shape) || !hl_dtype_is_integer(gs->shape.dtype) ||
      gs->shape.rank < 1)
    return HL_INVALID("ragged-dot %s: group_sizes (operand 2) must be an integer array of "
                      "rank >= 1", inst->name);
  int64_t groups = gs->shape.dims[gs->shape.rank - 1];
  ragged_plan_t p;
  HL_RETURN_IF_ERROR(plan_ragged(inst, ls, rs, groups, &p));
  int64_t *ends;
  HL_RETURN_IF_ERROR(group_ends(inst, gs, ls, &p, groups, &ends));
  hl_status_t st = hl_literal_create(os, out);
  if (st) {
    hl_free(ends);
    return st;
  }
  int64_t lstr[HL_MAX_RANK], rstr[HL_MAX_RANK];
  hl_shape_strides(ls, lstr);
  hl_shape_strides(rs, rstr);
  int64_t kcount = 1;
  for (int i = 0; i < p.nc; i++) kcount *= ls->dims[p.lc[i]];
  int64_t n_out = hl_shape_element_count(os);
  int64_t oidx[HL_MAX_RANK] = {0};
  for (int64_t e = 0; e < n_out; e++) {
    // Row-major decomposition of e into result indices.
    int64_t rem = e;
    for (int i = os->rank - 1; i >= 0; i--) {
      oidx[i] = os->dims[i] ? rem % os->dims[i] : 0;
      rem = os->dims[i] ? rem / os->dims[i] : 0;
    }
    int64_t li[HL_MAX_RANK] = {0}, ri[HL_MAX_RANK] = {0};
    int at = 0;
    int64_t want_group = -1;
    if (p.mode == 2) want_group = oidx[at++];
    for (int i = 0; i < p.nb; i++, at++) li[p.lb[i]] = ri[p.rb[i]] = oidx[at];
    for (int i = 0; i < p.nlf; i++, at++) li[p.lf[i]] = oidx[at];
    for (int i = 0; i < p.nrf; i++, at++) ri[p.rf[i]] = oidx[at];
    double acc = 0;
    uint64_t iacc = 0;
    bool active = true;
    if (p.mode != 2) {
      // Modes 1 and 3: the prefix dims are batch / free dims, fixed here.
      int64_t g = group_of(ends + group_row(&p, &gs->shape, li) * groups, groups,
                           li[p.ragged]);
      active = g >= 0;
      if (p.mode == 1 && active) ri[p.group_dim] = g;
    }
    for (int64_t k = 0; active && k < kcount; k++) {
      int64_t krem = k;
      for (int i = p.nc - 1; i >= 0; i--) {
        int64_t dsz = ls->dims[p.lc[i]];
        li[p.lc[i]] = ri[p.rc[i]] = krem % dsz;
        krem /= dsz;
      }
      if (p.mode == 2 && group_of(ends + group_row(&p, &gs->shape, li) * groups, groups,
                                  li[p.ragged]) != want_group)
        continue;
      int64_t lo = offset_of(li, lstr, ls->rank), ro = offset_of(ri, rstr, rs->rank);
      if (float_result) {
        double a, b;
        hl_elem_load_f64(ls->dtype, lhs->data, lo, 1, &a);
        hl_elem_load_f64(rs->dtype, rhs->data, ro, 1, &b);
        acc += a * b;
      } else {
        int64_t a, b;
        hl_elem_load_int(ls->dtype, lhs->data, lo, 1, &a);
        hl_elem_load_int(rs->dtype, rhs->data, ro, 1, &b);
        iacc += (uint64_t)a * (uint64_t)b;
      }
    }
    if (float_result) {
      hl_elem_store_f64(os->dtype, (*out)->data, e, 1, &acc);
    } else {
      int64_t v = os->dtype == HL_PRED ? iacc != 0 : (int64_t)iacc;
      hl_elem_store_int(os->dtype, (*out)->data, e, 1, &v);
    }
  }
  hl_free(ends);
  return NULL;
}
