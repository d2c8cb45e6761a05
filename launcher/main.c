// hlo-launch: runs an XLA program on a grid of MPI processes.
//
// The same executable plays two parts. Started by a user, it checks the
// options and the program and starts an MPI job of itself (spawn.c). Started
// as a rank of an MPI job (by that mpiexec, or by a user's own mpirun /
// srun), it runs one process of the grid (worker.c).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/describe.h"
#include "launcher/explain_groups.h"
#include "launcher/partition_hook.h"
#include "launcher/options.h"
#include "launcher/spawn.h"
#include "launcher/worker.h"
#include "runtime/base/alloc.h"

int main(int argc, char **argv) {
  // The parser permutes and rewrites its argv; the original is passed on to
  // the ranks unchanged.
  char **copy = hl_calloc((size_t)argc + 1, sizeof(char *));
  if (!copy) {
    fputs("hlo-launch: out of memory\n", stderr);
    return 1;
  }
  memcpy(copy, argv, sizeof(char *) * (size_t)argc);
  hl_launch_options_t options;
  hl_status_t st = hl_launch_options_parse(argc, copy, &options);
  if (st) {
    fprintf(stderr, "hlo-launch: %s\nTry 'hlo-launch --help' for more information.\n",
            hl_status_message(st));
    hl_status_free(st);
    hl_free(copy);
    return 2;
  }
  int code;
  // interpreter.probe's kernel finds its directory here (every rank parses
  // the same command line).
  if (options.probe_output_dir) setenv("HLO_PROBE_OUTPUT_DIR", options.probe_output_dir, 1);
  if (options.help) {
    hl_launch_print_help(stdout);
    code = 0;
  } else if (options.version) {
    hl_launch_print_version(stdout);
    code = 0;
  } else if (options.describe) {
    code = hl_describe_main(&options, stdout);
  } else if (options.explain_partitioning) {
    code = hl_explain_partitioning_main(&options, stdout);
  } else if (options.explain_groups) {
    code = hl_explain_groups_main(&options, stdout);
  } else if (options.worker || hl_spawn_inside_mpi_job()) {
    code = hl_worker_main(&options);
  } else {
    code = hl_spawn_main(&options, argc, argv);
  }
  hl_launch_options_deinit(&options);
  hl_free(copy);
  return code;
}
