#include "launcher/partition_hook.h"

#include <string.h>

#include "launcher/explain_groups.h"
#include "runtime/spmd/grid.h"
#include "runtime/base/npy.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/verifier/verifier.h"

// Whether a sharding splits some data dimension.
static bool splits(const hl_sharding_t *s, int rank) {
  if (!s || s->type != HL_SHARDING_OTHER) return false;
  for (int d = 0; d < rank && d < s->tile_assignment_dimensions.n; d++)
    if (s->tile_assignment_dimensions.v[d] > 1) return true;
  return false;
}

// Reads the .npy header of `path` (NULL status and *ok false when unreadable:
// the global-args step reports that with its own message).
static void npy_shape(const char *path, hl_npy_header_t *h, bool *ok) {
  *ok = false;
  FILE *f = fopen(path, "rb");
  if (!f) return;
  uint8_t buf[4096];
  size_t n = fread(buf, 1, sizeof(buf), f);
  fclose(f);
  hl_status_t st = hl_npy_parse_header(buf, n, h);
  if (st) hl_status_free(st);
  else *ok = true;
}

hl_status_t hl_program_is_global(const hl_launch_options_t *o, const hl_program_t *program,
                                 bool *out_global, bool *out_ambiguous) {
  *out_global = *out_ambiguous = false;
  const hl_module_t *m = program->module;
  if (!hl_spmd_module_may_be_global(m)) return NULL;
  // jax.export lowers before SPMD partitioning: its programs are global.
  if (o->global_program || program->format == HL_FORMAT_JAX_EXPORT ||
      hl_spmd_module_has_sharding_constraint(m)) {
    *out_global = true;
    return NULL;
  }
  if (o->input_source == HL_INPUT_GLOBAL) {
    const hl_computation_t *e = m->entry;
    for (int i = 0; i < o->global_arg_file_count && i < e->parameter_count; i++) {
      const hl_instruction_t *p = e->parameters[i];
      if (!p || !splits(p->attrs.sharding, p->shape.rank)) continue;
      hl_npy_header_t h;
      bool ok;
      npy_shape(o->global_arg_files[i], &h, &ok);
      if (!ok || h.rank != p->shape.rank) continue;
      if (memcmp(h.dims, p->shape.dims, (size_t)h.rank * sizeof(int64_t)) == 0) {
        *out_global = true;
        return NULL;
      }
    }
  }
  *out_ambiguous = true;
  return NULL;
}

hl_status_t hl_partition_if_global(const hl_launch_options_t *o, hl_program_t *program, int64_t replicas,
                                   int64_t partitions, bool *out_partitioned) {
  *out_partitioned = false;
  bool global, ambiguous;
  HL_RETURN_IF_ERROR(hl_program_is_global(o, program, &global, &ambiguous));
  if (partitions <= 1 || !global) return NULL;
  hl_spmd_result_t r;
  HL_RETURN_IF_ERROR_CTX(hl_spmd_partition_grid(program->module, (int)replicas, (int)partitions, &r), "partitioning %s",
                         program->module->source_path ? program->module->source_path : "the program");
  hl_module_destroy(program->module);
  program->module = r.module;
  r.module = NULL;
  hl_spmd_result_deinit(&r);
  *out_partitioned = true;
  return NULL;
}

int hl_explain_partitioning_main(const hl_launch_options_t *o, FILE *out) {
  hl_program_t program;
  hl_grid_t grid;
  if (!hl_explain_load(o, &program, &grid)) return 1;
  hl_status_t st = NULL;
  hl_spmd_result_t r = {0};
  if (!hl_spmd_module_may_be_global(program.module))
    st = HL_INVALID("%s is not a global program with shardings (nothing to partition)", o->program);
  if (!st) st = hl_spmd_partition_grid(program.module, (int)grid.replicas, (int)grid.partitions, &r);
  int code = 1;
  if (st) {
    fprintf(stderr, "hlo-launch: %s\n", hl_status_message(st));
    hl_status_free(st);
  } else {
    fputs(r.explanation, out);
    fflush(out);
    code = 0;
  }
  hl_spmd_result_deinit(&r);
  hl_program_deinit(&program);
  return code;
}
