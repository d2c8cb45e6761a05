// Runs StableHLO programs that JAX lowered (the stablehlo-testdata corpus:
// a @main without arguments that checks its result with check.* custom
// calls) through the embedding API on MPI_COMM_SELF, every result allocated
// by the runtime. Prints "PASS <file>" or "FAIL <file>: <message>" per file
// and a final "N passed, M failed"; exits 0 iff all passed.
//   api_corpus FILE...
//   api_corpus @LIST      (one path per line: Open MPI's singleton start
//                          passes argv on, and a corpus is too long for it)
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hlo_runtime.h>

static hlo_status_t run_one(const char *path) {
  hlo_program_t *program = NULL;
  hlo_runner_t *runner = NULL;
  hlo_status_t st = hlo_program_load(path, &program);
  if (!st) st = hlo_runner_create(program, MPI_COMM_SELF, NULL, &runner);
  if (!st) {
    int32_t n = hlo_runner_result_count(runner);
    hlo_buffer_t *results = calloc((size_t)(n > 0 ? n : 1), sizeof(hlo_buffer_t));
    st = hlo_runner_run(runner, NULL, 0, results, n);
    for (int32_t i = 0; !st && i < n; i++) {
      // What the runner said it gives is what it gave.
      hlo_dtype_t dtype;
      int32_t rank;
      int64_t dims[HLO_MAX_RANK];
      hlo_runner_result_shape(runner, i, &dtype, &rank, dims);
      if (dtype != results[i].dtype || rank != results[i].rank ||
          (rank > 0 && dims[0] != results[i].dims[0]) || hlo_dtype_size(dtype) == 0 ||
          !results[i].data) {
        fprintf(stderr, "api_corpus: %s: result %d does not match its shape\n", path, i);
        exit(2);
      }
    }
    for (int32_t i = 0; i < n; i++) hlo_buffer_free(&results[i]);
    free(results);
  }
  hlo_runner_free(runner);
  hlo_program_free(program);
  return st;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int passed = 0, failed = 0;
  FILE *list = argc == 2 && argv[1][0] == '@' ? fopen(argv[1] + 1, "r") : NULL;
  if (argc == 2 && argv[1][0] == '@' && !list) {
    fprintf(stderr, "api_corpus: cannot open %s\n", argv[1] + 1);
    return 2;
  }
  char line[4096];
  for (int i = 1; list ? fgets(line, sizeof(line), list) != NULL : i < argc; i++) {
    const char *path = line;
    if (list) {
      line[strcspn(line, "\n")] = '\0';
      if (!line[0]) continue;
    } else {
      path = argv[i];
    }
    hlo_status_t st = run_one(path);
    if (st) {
      printf("FAIL %s: %s\n", path, hlo_status_message(st));
      failed++;
    } else {
      printf("PASS %s\n", path);
      passed++;
    }
    hlo_status_free(st);
    fflush(stdout);
  }
  if (list) fclose(list);
  printf("%d passed, %d failed\n", passed, failed);
  MPI_Finalize();
  return failed ? 1 : 0;
}
