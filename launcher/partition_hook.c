#include "launcher/partition_hook.h"

#include "launcher/grid.h"
#include "runtime/spmd/partitioner.h"
#include "runtime/verifier/verifier.h"

hl_status_t hl_partition_if_global(hl_program_t *program, int64_t replicas, int64_t partitions,
                                   bool *out_partitioned) {
  *out_partitioned = false;
  if (partitions <= 1 || !hl_spmd_module_is_global(program->module)) return NULL;
  if (replicas > 1)
    return HL_UNIMPL("partitioning a global program on a grid with %lld replicas (only 1 replica is supported)",
                     (long long)replicas);
  hl_spmd_result_t r;
  HL_RETURN_IF_ERROR_CTX(hl_spmd_partition(program->module, (int)partitions, &r), "partitioning %s",
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
  hl_status_t st = hl_program_load_file(o->program, &program);
  if (!st) {
    st = hl_verify_module(program.module);
    if (st) hl_program_deinit(&program);
  }
  if (st) {
    fprintf(stderr, "hlo-launch: %s\n", hl_status_message(st));
    hl_status_free(st);
    return 1;
  }
  hl_grid_t grid;
  st = hl_grid_resolve(o->np, o->replicas, o->partitions, program.module->replica_count,
                       program.module->num_partitions, &grid);
  hl_spmd_result_t r = {0};
  if (!st && !hl_spmd_module_is_global(program.module))
    st = HL_INVALID("%s is not a global program with shardings (nothing to partition)", o->program);
  if (!st && grid.replicas > 1)
    st = HL_UNIMPL("partitioning a global program on a grid with %lld replicas (only 1 replica is supported)",
                   (long long)grid.replicas);
  if (!st) st = hl_spmd_partition(program.module, (int)grid.partitions, &r);
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
