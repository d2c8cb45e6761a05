// The memory walk of a plan (memory_plan.h): buffers ("storages") with
// reference counts, shared the way the executor's kernels share them.
#include "runtime/exec/memory_plan.h"

#include <stdbool.h>
#include <string.h>

#include "runtime/base/alloc.h"
#include "runtime/base/page_runs.h"
#include "runtime/kernels/kernel_scratch.h"

typedef struct storage {
  int64_t bytes;  // 0: not the run's (a parameter's, a constant's, never made)
  size_t block;   // its large block (alloc.h), 0 for malloc's
  uintptr_t at;   // the block's address in the simulated cache's made-up space
  int refs;       // values (slots) holding it
  bool scratch;   // a kernel's scratch (kernel_scratch.h), not a value
} storage_t;

typedef struct walk {
  storage_t *storages;
  int storage_count, storage_cap;
  int *leaves;  // storage ids; slot s holds leaves[leaf_start[s] .. + leaf_count[s])
  int leaf_count, leaf_cap;
  int *leaf_start, *slot_leaves;
  // Freed large blocks: the allocator's cache simulated with its own code
  // (page_runs.h) over made-up addresses; fresh blocks are placed a page
  // apart, so only a cut and its tail join (real mappings may also touch).
  hl_page_runs_t cache;
  uintptr_t next_fresh;
  size_t blocks, peak_blocks;  // bytes of large blocks out now, at most
  size_t *fresh;
  int fresh_count, fresh_cap;
  int64_t live;     // bytes of the run's own values alive now
  int64_t scratch;  // bytes of kernels' scratch alive now
  int threads;
} walk_t;

static bool grow(void **a, int *cap, int need, size_t elem) {
  if (need <= *cap) return true;
  int n = *cap ? *cap : 16;
  while (n < need) n *= 2;
  void *p = hl_realloc(*a, (size_t)n * elem);
  if (!p) return false;
  *a = p;
  *cap = n;
  return true;
}

static int shape_leaves(const hl_shape_t *s) {
  if (hl_shape_is_tuple(s)) {
    int n = 0;
    for (int i = 0; i < s->tuple_count; i++) n += shape_leaves(&s->tuple[i]);
    return n;
  }
  return hl_shape_is_array(s) ? 1 : 0;
}

// Appends the leaf array shapes of `s` to `out` (room for shape_leaves(s)).
static int leaf_shapes(const hl_shape_t *s, const hl_shape_t **out) {
  if (!hl_shape_is_tuple(s)) {
    if (!hl_shape_is_array(s)) return 0;
    out[0] = s;
    return 1;
  }
  int n = 0;
  for (int i = 0; i < s->tuple_count; i++) n += leaf_shapes(&s->tuple[i], out + n);
  return n;
}

static hl_status_t push_leaf(walk_t *w, int storage) {
  if (!grow((void **)&w->leaves, &w->leaf_cap, w->leaf_count + 1, sizeof(int))) return HL_OOM();
  w->leaves[w->leaf_count++] = storage;
  w->storages[storage].refs++;
  return NULL;
}

// A new storage of `bytes` (0: none of the run's), its block cut from the
// simulated cache (alloc.c's rules: the smallest run that holds it, else a
// new range, its pages fresh within the slack, else gathered from the runs)
// and what the cache cannot give noted as fresh.
static hl_status_t new_storage(walk_t *w, int64_t bytes, bool scratch, int *out) {
  if (!grow((void **)&w->storages, &w->storage_cap, w->storage_count + 1, sizeof(storage_t)))
    return HL_OOM();
  size_t block = bytes > 0 ? hl_alloc_large_block_bytes((size_t)bytes) : 0;
  uintptr_t at = block ? hl_page_runs_take(&w->cache, block) : 0;
  if (block && !at) {  // a new range, its pages fresh or gathered from the runs
    size_t have = 0;
    bool gather = !hl_page_runs_map_fresh(&w->cache, w->blocks, w->peak_blocks, block);
    hl_page_run_t r;
    while (gather && have < block && hl_page_runs_gather(&w->cache, block - have, &r))
      have += r.bytes;
    if (have < block) {
      if (!grow((void **)&w->fresh, &w->fresh_cap, w->fresh_count + 1, sizeof(size_t)))
        return HL_OOM();
      w->fresh[w->fresh_count++] = block - have;
    }
    at = w->next_fresh;
    w->next_fresh += block + 4096;
  }
  w->blocks += block;
  if (w->blocks > w->peak_blocks) w->peak_blocks = w->blocks;
  w->storages[w->storage_count] = (storage_t){bytes, block, at, 0, scratch};
  if (scratch) w->scratch += bytes;
  else w->live += bytes;
  *out = w->storage_count++;
  return NULL;
}

static hl_status_t drop(walk_t *w, int storage) {
  storage_t *s = &w->storages[storage];
  if (--s->refs > 0) return NULL;
  if (s->scratch) w->scratch -= s->bytes;
  else w->live -= s->bytes;
  w->blocks -= s->block;
  if (s->block && !hl_page_runs_put(&w->cache, s->at, s->block)) return HL_OOM();
  return NULL;
}

static bool dies_at(const hl_plan_t *p, int q, int slot) {
  for (int r = p->release_start[q]; r < p->release_start[q + 1]; r++)
    if (p->release_slots[r] == slot) return true;
  return false;
}

// The storage an element-wise result takes over (hl_kernel_reuse_operand's
// rule: an operand of the same type and dimensions, used once here, dying
// here, held by nothing else), or -1.
static int donated(const walk_t *w, const hl_plan_t *p, int q, const hl_instruction_t *inst) {
  if (p->kernels[q] != hl_kernel_unary && p->kernels[q] != hl_kernel_binary) return -1;
  if (!hl_shape_is_array(&inst->shape)) return -1;
  int b = p->operand_start[q], e = p->operand_start[q + 1];
  for (int j = b; j < e; j++) {
    int slot = p->operand_slots[j];
    const hl_instruction_t *op = inst->operands[j - b];
    bool twice = false;
    for (int k = b; k < e; k++) twice |= k != j && p->operand_slots[k] == slot;
    if (twice || !dies_at(p, q, slot) || w->slot_leaves[slot] != 1) continue;
    int s = w->leaves[w->leaf_start[slot]];
    if (w->storages[s].bytes == 0 || w->storages[s].refs != 1) continue;
    if (op->shape.dtype != inst->shape.dtype || !hl_shape_same_dims(&op->shape, &inst->shape))
      continue;
    return s;
  }
  return -1;
}

// A kernel's scratch buffer of `bytes`, held once (dropped after the kernel).
static hl_status_t take_scratch(walk_t *w, int64_t bytes, int *out) {
  HL_RETURN_IF_ERROR(new_storage(w, bytes, true, out));
  w->storages[*out].refs = 1;
  return NULL;
}

static void note_peaks(const walk_t *w, hl_memory_plan_t *mp) {
  if (w->scratch > mp->scratch_peak_bytes) mp->scratch_peak_bytes = w->scratch;
  if (w->live + w->scratch > mp->with_scratch_peak_bytes)
    mp->with_scratch_peak_bytes = w->live + w->scratch;
}

// The leaves of position q's value.
static hl_status_t produce(walk_t *w, const hl_plan_t *p, int q, hl_memory_plan_t *mp) {
  const hl_instruction_t *inst = p->order[q];
  int slot = inst->index, b = p->operand_start[q];
  w->leaf_start[slot] = w->leaf_count;
  int n = shape_leaves(&inst->shape);
  switch (inst->opcode) {
    case HL_OP_TUPLE:
      for (int j = b; j < p->operand_start[q + 1]; j++) {
        int s = p->operand_slots[j];
        for (int k = 0; k < w->slot_leaves[s]; k++)
          HL_RETURN_IF_ERROR(push_leaf(w, w->leaves[w->leaf_start[s] + k]));
      }
      break;
    case HL_OP_GET_TUPLE_ELEMENT: {
      int s = p->operand_slots[b];
      const hl_shape_t *ts = &inst->operands[0]->shape;
      int64_t index = inst->attrs.tuple_index;
      int skip = 0;
      for (int64_t i = 0; i < index && i < ts->tuple_count; i++) skip += shape_leaves(&ts->tuple[i]);
      for (int k = 0; k < n && skip + k < w->slot_leaves[s]; k++)
        HL_RETURN_IF_ERROR(push_leaf(w, w->leaves[w->leaf_start[s] + skip + k]));
      break;
    }
    case HL_OP_COPY:
    case HL_OP_ADD_DEPENDENCY:
    case HL_OP_OPTIMIZATION_BARRIER: {
      int s = p->operand_slots[b];
      for (int k = 0; k < w->slot_leaves[s]; k++)
        HL_RETURN_IF_ERROR(push_leaf(w, w->leaves[w->leaf_start[s] + k]));
      break;
    }
    default: {
      bool outside = inst->opcode == HL_OP_PARAMETER || inst->opcode == HL_OP_CONSTANT ||
                     (p->chain_at && p->chain_at[q] == -2);
      int give = outside ? -1 : donated(w, p, q, inst);
      if (give >= 0) {
        HL_RETURN_IF_ERROR(push_leaf(w, give));
        break;
      }
      // The kernel's own scratch (kernel_scratch.h), alive while it runs:
      // taken after its result (a bitcast's physical copy before).
      hl_kernel_scratch_t ks = {0};
      if (!outside) hl_kernel_scratch_of(inst, w->threads, &ks);
      bool scratch_first = inst->opcode == HL_OP_BITCAST;
      int scratch[HL_KERNEL_SCRATCH_MAX];
      for (int k = 0; scratch_first && k < ks.count; k++)
        HL_RETURN_IF_ERROR(take_scratch(w, ks.bytes[k], &scratch[k]));
      const hl_shape_t *stack[64], **shapes = n <= 64 ? stack : hl_malloc((size_t)n * sizeof(*shapes));
      if (!shapes) return HL_OOM();
      leaf_shapes(&inst->shape, shapes);
      hl_status_t st = NULL;
      for (int k = 0; k < n && !st; k++) {
        int64_t bytes = hl_shape_byte_size(shapes[k]);
        if (inst->opcode == HL_OP_PARAMETER) mp->parameter_bytes += bytes;
        int id = -1;
        st = new_storage(w, outside ? 0 : bytes, false, &id);
        if (!st) st = push_leaf(w, id);
      }
      if (shapes != stack) hl_free(shapes);
      for (int k = 0; !st && !scratch_first && k < ks.count; k++)
        st = take_scratch(w, ks.bytes[k], &scratch[k]);
      HL_RETURN_IF_ERROR(st);
      note_peaks(w, mp);
      for (int k = 0; k < ks.count; k++) HL_RETURN_IF_ERROR(drop(w, scratch[k]));
    }
  }
  w->slot_leaves[slot] = w->leaf_count - w->leaf_start[slot];
  return NULL;
}

static hl_status_t walk_plan(walk_t *w, const hl_plan_t *p, hl_memory_plan_t *mp) {
  int slots = p->computation->instruction_count;
  w->leaf_start = hl_calloc((size_t)(slots ? slots : 1), sizeof(int));
  w->slot_leaves = hl_calloc((size_t)(slots ? slots : 1), sizeof(int));
  if (!w->leaf_start || !w->slot_leaves) return HL_OOM();
  int64_t peak = 0;
  for (int q = 0; q < p->count; q++) {
    HL_RETURN_IF_ERROR(produce(w, p, q, mp));
    if (w->live > peak) peak = w->live;
    note_peaks(w, mp);
    for (int r = p->release_start[q]; r < p->release_start[q + 1]; r++) {
      int s = p->release_slots[r];
      for (int k = 0; k < w->slot_leaves[s]; k++)
        HL_RETURN_IF_ERROR(drop(w, w->leaves[w->leaf_start[s] + k]));
      w->slot_leaves[s] = 0;
    }
  }
  int root = p->root_slot;
  for (int k = 0; root >= 0 && k < w->slot_leaves[root]; k++) {
    const storage_t *s = &w->storages[w->leaves[w->leaf_start[root] + k]];
    mp->result_bytes += s->bytes;
  }
  mp->live_peak_bytes = mp->parameter_bytes + peak;
  mp->with_scratch_peak_bytes += mp->parameter_bytes;
  return NULL;
}

hl_status_t hl_memory_plan_build(const hl_plan_t *plan, int threads, hl_memory_plan_t *out) {
  memset(out, 0, sizeof(*out));
  walk_t w;
  memset(&w, 0, sizeof(w));
  w.threads = threads;
  w.next_fresh = 4096;
  hl_status_t st = walk_plan(&w, plan, out);
  if (!st) {
    out->fresh_blocks = w.fresh;
    out->fresh_block_count = w.fresh_count;
    w.fresh = NULL;
  }
  hl_free(w.storages);
  hl_free(w.leaves);
  hl_free(w.leaf_start);
  hl_free(w.slot_leaves);
  hl_page_runs_deinit(&w.cache);
  hl_free(w.fresh);
  if (st) memset(out, 0, sizeof(*out));
  return st;
}

void hl_memory_plan_deinit(hl_memory_plan_t *mp) {
  if (!mp) return;
  hl_free(mp->fresh_blocks);
  memset(mp, 0, sizeof(*mp));
}
