// The dot rule's plan. A dot's iteration space is [batch, lhs free, rhs
// free, contracting]; a plan shards it by taking each of the four groups'
// tiling from one of the shardings at hand (lhs, rhs, wanted result) or
// leaving it unsplit. The operands are resharded to the plan's projections,
// the dot runs on local blocks, a split contracting group is summed by an
// all-reduce, and the result has the plan's batch / free tiling. Every
// candidate that is a uniform tiling is costed in bytes moved (dry-run
// resharding plus the all-reduce); the cheapest wins, ties going to the
// more parallel plan, then to the first in enumeration order.
#include <string.h>

#include "runtime/spmd/spmd_internal.h"

enum { SRC_LHS, SRC_RHS, SRC_OUT, SRC_NONE };

typedef struct dims_info {
  int nb, nlf, nrf, nc;
  int lb[HL_MAX_RANK], rb[HL_MAX_RANK], lf[HL_MAX_RANK], rf[HL_MAX_RANK], lc[HL_MAX_RANK], rc[HL_MAX_RANK];
} dims_info_t;

static bool in_list(const hl_i64_list_t *l, int d) {
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == d) return true;
  return false;
}

static void dot_dims(const hl_instruction_t *dot, dims_info_t *di) {
  const hl_dot_dims_t *dd = &dot->attrs.dot_dimension_numbers;
  memset(di, 0, sizeof(*di));
  di->nb = dd->lhs_batch_dimensions.n;
  di->nc = dd->lhs_contracting_dimensions.n;
  for (int i = 0; i < di->nb; i++) {
    di->lb[i] = (int)dd->lhs_batch_dimensions.v[i];
    di->rb[i] = (int)dd->rhs_batch_dimensions.v[i];
  }
  for (int i = 0; i < di->nc; i++) {
    di->lc[i] = (int)dd->lhs_contracting_dimensions.v[i];
    di->rc[i] = (int)dd->rhs_contracting_dimensions.v[i];
  }
  for (int d = 0; d < dot->operands[0]->shape.rank; d++)
    if (!in_list(&dd->lhs_batch_dimensions, d) && !in_list(&dd->lhs_contracting_dimensions, d)) di->lf[di->nlf++] = d;
  for (int d = 0; d < dot->operands[1]->shape.rank; d++)
    if (!in_list(&dd->rhs_batch_dimensions, d) && !in_list(&dd->rhs_contracting_dimensions, d)) di->rf[di->nrf++] = d;
}

// Copies tiling of source dimension sd into iteration dimension id.
static void take(hl_spmd_sharding_t *iter, int id, const hl_spmd_sharding_t *src, int sd) {
  if (src->kind != HL_SPMD_TILED) return;
  iter->tiles[id] = src->tiles[sd];
  for (int p = 0; p < src->num_devices; p++) iter->coords[p][id] = src->coords[p][sd];
}

hl_status_t spmd_dot_plan(spmd_ctx_t *c, const hl_instruction_t *dot, const hl_spmd_sharding_t *lhs,
                          const hl_spmd_sharding_t *rhs, const hl_spmd_sharding_t *want_out,
                          spmd_dot_plan_t *plan, bool *found) {
  *found = false;
  dims_info_t di;
  dot_dims(dot, &di);
  int rank = di.nb + di.nlf + di.nrf + di.nc;
  if (rank > HL_SPMD_MAX_RANK || dot->operand_count != 2 || hl_shape_is_tuple(&dot->shape)) return NULL;
  const hl_shape_t *ls = &dot->operands[0]->shape, *rs = &dot->operands[1]->shape;
  int ob = 0, olf = di.nb, orf = di.nb + di.nlf, oc = di.nb + di.nlf + di.nrf;
  // Projections iteration -> operand / result dimensions.
  int lmap[HL_MAX_RANK], rmap[HL_MAX_RANK], omap[HL_MAX_RANK];
  for (int i = 0; i < di.nb; i++) lmap[di.lb[i]] = ob + i, rmap[di.rb[i]] = ob + i, omap[i] = ob + i;
  for (int i = 0; i < di.nlf; i++) lmap[di.lf[i]] = olf + i, omap[di.nb + i] = olf + i;
  for (int i = 0; i < di.nrf; i++) rmap[di.rf[i]] = orf + i, omap[di.nb + di.nlf + i] = orf + i;
  for (int i = 0; i < di.nc; i++) lmap[di.lc[i]] = oc + i, rmap[di.rc[i]] = oc + i;
  static const int kBatch[] = {SRC_LHS, SRC_RHS, SRC_OUT, SRC_NONE}, kLf[] = {SRC_LHS, SRC_OUT, SRC_NONE},
                   kRf[] = {SRC_RHS, SRC_OUT, SRC_NONE}, kC[] = {SRC_LHS, SRC_RHS, SRC_NONE};
  bool saved_dry = c->dry;
  int64_t saved_bytes = c->bytes;
  c->dry = true;
  hl_status_t st = NULL;
  int64_t best_cost = -1, best_tiles = 0;
  hl_spmd_sharding_t iter, lreq, rreq, res;
  for (int a = 0; a < 4 && !st; a++)
    for (int b = 0; b < 3 && !st; b++)
      for (int e = 0; e < 3 && !st; e++)
        for (int f = 0; f < 3 && !st; f++) {
          if (!want_out && (kBatch[a] == SRC_OUT || kLf[b] == SRC_OUT || kRf[e] == SRC_OUT)) continue;
          hl_spmd_replicated(rank, c->n, &iter);
          for (int i = 0; i < di.nb; i++) {
            if (kBatch[a] == SRC_LHS) take(&iter, ob + i, lhs, di.lb[i]);
            if (kBatch[a] == SRC_RHS) take(&iter, ob + i, rhs, di.rb[i]);
            if (kBatch[a] == SRC_OUT) take(&iter, ob + i, want_out, i);
          }
          for (int i = 0; i < di.nlf; i++) {
            if (kLf[b] == SRC_LHS) take(&iter, olf + i, lhs, di.lf[i]);
            if (kLf[b] == SRC_OUT) take(&iter, olf + i, want_out, di.nb + i);
          }
          for (int i = 0; i < di.nrf; i++) {
            if (kRf[e] == SRC_RHS) take(&iter, orf + i, rhs, di.rf[i]);
            if (kRf[e] == SRC_OUT) take(&iter, orf + i, want_out, di.nb + di.nlf + i);
          }
          uint32_t cmask = 0;
          bool even = true;
          for (int i = 0; i < di.nc; i++) {
            if (kC[f] == SRC_LHS) take(&iter, oc + i, lhs, di.lc[i]);
            if (kC[f] == SRC_RHS) take(&iter, oc + i, rhs, di.rc[i]);
            if (iter.tiles[oc + i] > 1) cmask |= 1u << (oc + i);
            even &= ls->dims[di.lc[i]] % iter.tiles[oc + i] == 0;  // padding must not be summed
          }
          if (!even || !hl_spmd_is_valid(&iter)) continue;
          spmd_map_dims(&iter, ls->rank, lmap, &lreq);
          spmd_map_dims(&iter, rs->rank, rmap, &rreq);
          spmd_map_dims(&iter, dot->shape.rank, omap, &res);
          c->bytes = 0;
          const char *ignored;
          st = spmd_reshard(c, "", ls, lhs, &lreq, &ignored);
          if (!st) st = spmd_reshard(c, "", rs, rhs, &rreq, &ignored);
          if (st) break;
          int scatter_dim;
          if (cmask && want_out && spmd_reduce_scatter_dim(dot, &iter, cmask, &res, want_out, &scatter_dim)) {
            c->bytes += spmd_local_bytes(&dot->shape, want_out);  // one reduce-scatter, nothing to move after
          } else {
            if (cmask) c->bytes += spmd_local_bytes(&dot->shape, &res);
            if (want_out) st = spmd_reshard(c, "", &dot->shape, &res, want_out, &ignored);
          }
          if (st) break;
          int64_t tiles = hl_spmd_tile_count(&iter);
          if (best_cost < 0 || c->bytes < best_cost || (c->bytes == best_cost && tiles > best_tiles)) {
            best_cost = c->bytes;
            best_tiles = tiles;
            plan->iter = iter;
            plan->lhs = lreq;
            plan->rhs = rreq;
            plan->result = res;
            plan->contract_split = cmask;
            plan->cost = c->bytes;
            *found = true;
          }
        }
  c->dry = saved_dry;
  c->bytes = saved_bytes;
  return st;
}

// Whether the all-reduce that ends a contracting-split dot, then the move
// to `target`, is one reduce-scatter: the target splits one result
// dimension (evenly, unsplit in the plan's result) over exactly the
// all-reduce's groups, each member holding the chunk of its slot, and
// agrees with the plan's result elsewhere.
bool spmd_reduce_scatter_dim(const hl_instruction_t *dot, const hl_spmd_sharding_t *iter, uint32_t cmask,
                             const hl_spmd_sharding_t *result, const hl_spmd_sharding_t *target, int *out_dim) {
  int64_t groups[HL_SPMD_MAX_DEVICES];
  int count, size;
  if (!cmask || target->kind != HL_SPMD_TILED || result->kind != HL_SPMD_TILED) return false;
  hl_status_t st = hl_spmd_groups(iter, cmask, groups, &count, &size);
  if (st) {
    hl_status_free(st);
    return false;
  }
  for (int j = 0; j < dot->shape.rank; j++) {
    if (result->tiles[j] != 1 || target->tiles[j] != size || dot->shape.dims[j] % size) continue;
    bool ok = true;
    for (int d = 0; d < dot->shape.rank && ok; d++)
      if (d != j) ok = hl_spmd_dim_equal(result, d, target, d);
    for (int g = 0; g < count && ok; g++)
      for (int slot = 0; slot < size && ok; slot++) ok = target->coords[groups[g * size + slot]][j] == slot;
    if (ok) {
      *out_dim = j;
      return true;
    }
  }
  return false;
}
