// A global (sharded) program through the embedding API on 4 ranks
// (tests/integration/test_embedding.py): the runner partitions it, each rank
// passes its 2 rows of x (x[i][j] = 0.5 i - 0.25 j) and the whole w
// (w[i][j] = i + 2 j), and writes OUT.<rank>.txt: the shapes the runner
// reports, its 2 x 4 rows of x @ w, and the replicated global sum.
#include <mpi.h>
#include <stdio.h>

#include <hlo_runtime.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hlo_program_t *program = NULL;
  hlo_runner_t *runner = NULL;
  hlo_status_t st = hlo_program_load(argv[1], &program);
  if (!st) st = hlo_runner_create(program, MPI_COMM_WORLD, NULL, &runner);
  float x[2][4], w[4][4], y[2][4], sum = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) x[i][j] = 0.5f * (float)(2 * rank + i) - 0.25f * (float)j;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) w[i][j] = (float)(i + 2 * j);
  hlo_dtype_t dtype = HLO_INVALID;
  int32_t r = -1;
  int64_t dims[HLO_MAX_RANK] = {0};
  if (!st) st = hlo_runner_arg_shape(runner, 0, &dtype, &r, dims);
  const int64_t xd[2] = {2, 4}, wd[2] = {4, 4};
  hlo_buffer_t args[2] = {{HLO_F32, 2, xd, x, HLO_ROW_MAJOR}, {HLO_F32, 2, wd, w, HLO_ROW_MAJOR}};
  hlo_buffer_t results[2] = {{HLO_F32, 2, xd, y, HLO_ROW_MAJOR}, {HLO_F32, 0, NULL, &sum, HLO_ROW_MAJOR}};
  if (!st) st = hlo_runner_run(runner, args, 2, results, 2);
  if (st) {
    fprintf(stderr, "api_global: rank %d: %s\n", rank, hlo_status_message(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d.txt", argv[2], rank);
  FILE *f = fopen(path, "w");
  fprintf(f, "%d %d %lld %lld\n", (int)dtype, (int)r, (long long)dims[0], (long long)dims[1]);
  for (int i = 0; i < 2; i++)
    fprintf(f, "%.9g %.9g %.9g %.9g\n", y[i][0], y[i][1], y[i][2], y[i][3]);
  fprintf(f, "%.9g\n", sum);
  fclose(f);
  hlo_runner_free(runner);
  hlo_program_free(program);
  MPI_Finalize();
  return 0;
}
