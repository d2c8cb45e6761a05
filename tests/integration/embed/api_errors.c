// The embedding API's error paths on a real 4-rank job, built against the
// installed library (tests/integration/test_embedding.py): an error on one
// rank is an error on every rank (no hang), names that rank, leaves the
// runner usable, and a result allocated for a failed run is not left behind.
// Prints "ok <what>" per check; exits non-zero on the first failure.
//
//   api_errors RELAX_MODEL CHECK_AFTER_MODEL
//   api_errors --stuck CHECK_BEFORE_MODEL   rank 2 fails while the others wait
//       in a collective for it: it must end the job (MPI_Abort) after
//       stuck_seconds = 2 instead of hanging; the test expects that.
#include <mpi.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

#include <hlo_runtime.h>

static int rank;

static void expect(int cond, const char *what, hlo_status_t st) {
  if (!cond) {
    fprintf(stderr, "api_errors: rank %d: FAILED %s (status: %s)\n", rank, what,
            hlo_status_message(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) printf("ok %s\n", what);
  fflush(stdout);
}

// A model whose check fails on rank 2 alone during execution (its argument
// is not all ones).
// *sum_ok: the result is the global sum (3 + rank 2's value per element).
static hlo_status_t run_check_model(hlo_runner_t *runner, float value_on_rank2, int *sum_ok) {
  float x[4] = {1, 1, 1, 1}, y[4];
  if (rank == 2)
    for (int i = 0; i < 4; i++) x[i] = value_on_rank2;
  int64_t n4[1] = {4};
  hlo_buffer_t arg = {HLO_F32, 1, n4, x, HLO_ROW_MAJOR};
  hlo_buffer_t res = {HLO_F32, 1, n4, y, HLO_ROW_MAJOR};
  hlo_status_t st = hlo_runner_run(runner, &arg, 1, &res, 1);
  *sum_ok = !st && y[0] == 3 + value_on_rank2 && y[3] == 3 + value_on_rank2;
  return st;
}

static hlo_runner_t *make_runner(const char *path, hlo_program_t **program, double stuck) {
  hlo_runner_t *runner = NULL;
  hlo_runner_options_t options;
  hlo_runner_options_init(&options);
  options.stuck_seconds = stuck;
  hlo_status_t st = hlo_program_load(path, program);
  if (!st) st = hlo_runner_create(*program, MPI_COMM_WORLD, &options, &runner);
  expect(!st, "the check model's runner is created", st);
  return runner;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hlo_program_t *program = NULL;
  hlo_runner_t *runner = NULL;

  if (argc > 2 && strcmp(argv[1], "--stuck") == 0) {
    runner = make_runner(argv[2], &program, 2.0);
    int sum_ok;
    hlo_status_t st = run_check_model(runner, 5.0f, &sum_ok);
    // Only rank 2 could get here (the others wait in the all_reduce until
    // it aborts the job): reaching this line is the failure.
    fprintf(stderr, "api_errors: rank %d: FAILED: the stuck run returned (%s)\n", rank,
            hlo_status_message(st));
    return 1;
  }

  hlo_status_t st = hlo_program_load("/nonexistent/model.mlir", &program);
  expect(st && program == NULL && strstr(hlo_status_message(st), "/nonexistent/model.mlir"),
         "a missing file is an error naming it", st);
  hlo_status_free(st);

  // From memory: the file's bytes, loaded and freed again.
  FILE *f = fopen(argv[1], "rb");
  static char bytes[1 << 16];
  size_t size = f ? fread(bytes, 1, sizeof(bytes), f) : 0;
  if (f) fclose(f);
  st = hlo_program_load_memory(bytes, size, "relax in memory", &program);
  expect(!st && program, "a model loads from memory", st);
  hlo_program_free(program);
  st = hlo_program_load_memory(bytes, size / 2, "half a model", &program);
  expect(st && !program && strstr(hlo_status_message(st), "half a model"),
         "a truncated model in memory is an error naming it", st);
  hlo_status_free(st);

  st = hlo_program_load(argv[1], &program);
  expect(!st, "the model loads", st);
  hlo_runner_options_t options;
  hlo_runner_options_init(&options);
  options.replicas = 2;  // 2 x 1 on 4 processes
  st = hlo_runner_create(program, MPI_COMM_WORLD, &options, &runner);
  expect(st && !runner && strstr(hlo_status_message(st), "all 4 ranks") &&
             strstr(hlo_status_message(st), "the communicator size is 4"),
         "a grid that does not fit the communicator is an error on every rank", st);
  hlo_status_free(st);

  // An intercommunicator (ranks 0-1 <-> 2-3) is refused on both sides.
  MPI_Comm half, inter;
  MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &half);
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank < 2 ? 2 : 0, 7, &inter);
  st = hlo_runner_create(program, inter, NULL, &runner);
  expect(st && !runner && strstr(hlo_status_message(st), "intercommunicator"),
         "an intercommunicator is an error", st);
  hlo_status_free(st);
  MPI_Comm_free(&inter);
  MPI_Comm_free(&half);

  st = hlo_runner_create(program, MPI_COMM_WORLD, NULL, &runner);
  expect(!st && hlo_runner_arg_count(runner) == 2 && hlo_runner_result_count(runner) == 2,
         "the runner is created", st);

  float u[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k = 0.5f, u_next[8];
  int64_t n8[1] = {8}, n7[1] = {7};
  // Rank 2 alone passes 7 elements: every rank must fail, the message
  // names rank 2.
  hlo_buffer_t args[2] = {{HLO_F32, 1, rank == 2 ? n7 : n8, u, HLO_ROW_MAJOR},
                          {HLO_F32, 0, NULL, &k, HLO_ROW_MAJOR}};
  hlo_buffer_t results[2] = {{HLO_F32, 1, n8, u_next, HLO_ROW_MAJOR}, {0}};
  st = hlo_runner_run(runner, args, 2, results, 2);
  expect(st && hlo_status_code(st) == HLO_STATUS_INVALID_ARGUMENT &&
             strstr(hlo_status_message(st), "rank 2 (replica 2, partition 0): argument 0 is f32[7]"),
         "a bad argument on one rank is an error on every rank, naming it", st);
  expect(results[1].data == NULL && results[1].dims == NULL,
         "a failed run leaves no allocated result", st);
  hlo_status_free(st);

  // Wrong result type on rank 0 only.
  double wrong[8];
  hlo_buffer_t bad_results[2] = {{rank == 0 ? HLO_F64 : HLO_F32, 1, n8,
                                  rank == 0 ? (void *)wrong : (void *)u_next, HLO_ROW_MAJOR},
                                 {0}};
  args[0].dims = n8;
  st = hlo_runner_run(runner, args, 2, bad_results, 2);
  expect(st && strstr(hlo_status_message(st), "result 0 is f64[8], but the program's is f32[8]"),
         "a result buffer of the wrong type is an error on every rank", st);
  hlo_status_free(st);

  st = hlo_runner_run(runner, args, 1, results, 2);
  expect(st && strstr(hlo_status_message(st), "1 argument given, the program takes 2"),
         "a wrong argument count is an error", st);
  hlo_status_free(st);

  // After the errors the runner still runs, and gets the right numbers:
  // every rank has u = 1..8, sum over 4 ranks = 144, mean 4.5.
  st = hlo_runner_run(runner, args, 2, results, 2);
  int right = !st && results[1].dtype == HLO_F32 && results[1].rank == 0 &&
              *(float *)results[1].data == 144.0f;
  for (int i = 0; i < 8 && right; i++) {
    float x = u[i] + 0.5f * (4.5f - u[i]);
    right = u_next[i] - tanhf(x) < 1e-6f && tanhf(x) - u_next[i] < 1e-6f;
  }
  expect(right, "the runner runs correctly after failed runs", st);
  hlo_buffer_free(&results[1]);
  expect(results[1].data == NULL, "hlo_buffer_free clears the buffer", NULL);

  hlo_runner_free(runner);

  // check_nans: a NaN in the arguments (on every rank) stops the run at the
  // first instruction that produces one, on every rank, before the collective.
  hlo_runner_options_init(&options);
  options.check_nans = 1;
  st = hlo_runner_create(program, MPI_COMM_WORLD, &options, &runner);
  expect(!st, "a runner with check_nans is created", st);
  float saved = u[3];
  u[3] = nanf("");
  st = hlo_runner_run(runner, args, 2, results, 2);
  expect(st && strstr(hlo_status_message(st), "all 4 ranks: ") &&
             strstr(hlo_status_message(st), "NaN"),
         "check_nans stops a run at the first NaN, on every rank", st);
  hlo_status_free(st);
  u[3] = saved;
  st = hlo_runner_run(runner, args, 2, results, 2);
  expect(!st, "and runs without NaNs", st);
  hlo_buffer_free(&results[1]);
  hlo_runner_free(runner);
  hlo_program_free(program);

  // An execution error on rank 2 alone, after the collective: every rank
  // gets it, naming rank 2, and the runner still runs.
  runner = make_runner(argv[2], &program, 30.0);
  int sum_ok;
  st = run_check_model(runner, 5.0f, &sum_ok);
  expect(st && strstr(hlo_status_message(st), "rank 2 (replica 2, partition 0): check.expect_eq "
                                              "failed") &&
             !strstr(hlo_status_message(st), "rank 1"),
         "an execution error on one rank is an error on every rank, naming it", st);
  hlo_status_free(st);
  st = run_check_model(runner, 1.0f, &sum_ok);
  expect(!st && sum_ok, "the runner runs (and sums) after a failed execution", st);
  hlo_runner_free(runner);
  hlo_program_free(program);
  expect(strlen(hlo_version()) > 0, "hlo_version", NULL);
  MPI_Finalize();
  return 0;
}
