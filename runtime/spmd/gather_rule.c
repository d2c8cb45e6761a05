// Gather's dimension maps for the partitioner: an output dimension is either
// a batch dimension (one per indices dimension other than index_vector_dim,
// in order) or an offset dimension (one per operand dimension that is not
// collapsed, in order). A batch dimension can be split with the indices
// (index-parallel: every partition gathers its own indices from the whole
// operand); an offset dimension whose slice is the whole operand dimension
// can be split with the operand (passthrough: its start index is clamped to
// 0 anyway). A batch dimension that comes from an indices batching dimension
// (start_indices_batching_dims[k]) maps to the operand batching dimension
// operand_batching_dims[k] too: split alike on both, each partition gathers
// its batch rows from its own operand rows (slice size 1 there, so the
// local gather is the global one's block).
#include "runtime/spmd/spmd_internal.h"

bool spmd_gather_maps(const hl_instruction_t *g, int *out_to_operand, int *out_to_indices) {
  if (g->opcode != HL_OP_GATHER || g->operand_count != 2 || !g->attrs.has_gather_dimension_numbers) return false;
  const hl_gather_dims_t *gd = &g->attrs.gather_dimension_numbers;
  const hl_shape_t *os = &g->operands[0]->shape, *is = &g->operands[1]->shape;
  if (gd->operand_batching_dims.n != gd->start_indices_batching_dims.n) return false;
  if (g->shape.rank > HL_MAX_RANK || g->attrs.gather_slice_sizes.n != os->rank) return false;
  bool offset[HL_MAX_RANK] = {false};
  for (int k = 0; k < gd->offset_dims.n; k++) {
    if (gd->offset_dims.v[k] < 0 || gd->offset_dims.v[k] >= g->shape.rank) return false;
    offset[gd->offset_dims.v[k]] = true;
  }
  for (int j = 0; j < g->shape.rank; j++) out_to_operand[j] = out_to_indices[j] = -1;
  // Offset dims (ascending) <- operand dims not collapsed (ascending).
  int od = 0;
  for (int k = 0; k < gd->offset_dims.n; k++) {
    for (;;) {
      bool collapsed = false;
      for (int c = 0; c < gd->collapsed_slice_dims.n; c++) collapsed |= gd->collapsed_slice_dims.v[c] == od;
      for (int c = 0; c < gd->operand_batching_dims.n; c++) collapsed |= gd->operand_batching_dims.v[c] == od;
      if (!collapsed) break;
      od++;
    }
    if (od >= os->rank) return false;
    int j = (int)gd->offset_dims.v[k];
    if (g->attrs.gather_slice_sizes.v[od] == os->dims[od]) out_to_operand[j] = od;
    od++;
  }
  // Batch dims (ascending) <- indices dims other than index_vector_dim.
  int id = 0;
  for (int j = 0; j < g->shape.rank; j++) {
    if (offset[j]) continue;
    if (id == gd->index_vector_dim) id++;
    if (id >= is->rank) return false;
    for (int k = 0; k < gd->start_indices_batching_dims.n; k++)
      if (gd->start_indices_batching_dims.v[k] == id) {
        int64_t od = gd->operand_batching_dims.v[k];
        if (od < 0 || od >= os->rank || g->attrs.gather_slice_sizes.v[od] != 1) return false;
        out_to_operand[j] = (int)od;
      }
    out_to_indices[j] = id++;
  }
  return true;
}
