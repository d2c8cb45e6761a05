// An MPI application that calls a model every step of its loop through
// libhlo_runtime (examples/embed/README.md). Usage:
//
//   mpiexec -n 4 relax_loop MODEL STEPS OUT           (on MPI_COMM_WORLD)
//   mpiexec -n 6 relax_loop MODEL STEPS OUT --split   (on ranks 0-3 of 6)
//   ... [--profile]   and the model's per-instruction profile on stdout
//
// Each model process starts from u[i] = 0.25 * (8 * rank + i) - 3, runs
// STEPS steps with k = 0.3, and writes OUT.<rank>.txt: one line per step
// with the global sum the model returned, then the final u. With --split,
// ranks 4 and 5 form a communicator of 2 and show the error a runner on the
// wrong number of processes gives.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hlo_runtime.h>

// Prints the error and ends this process's part with a non-zero status.
static int fail(const char *what, hlo_status_t st) {
  fprintf(stderr, "relax_loop: %s: %s\n", what, hlo_status_message(st));
  hlo_status_free(st);
  return 1;
}

// The model's part of the application: load, bind to `comm`, loop, free.
static int run_model(const char *model, int steps, const char *out, MPI_Comm comm,
                     int profile) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  hlo_program_t *program = NULL;
  hlo_runner_t *runner = NULL;
  hlo_status_t st = hlo_program_load(model, &program);
  if (st) return fail("loading the model", st);
  // The defaults, then the fields wanted (the struct may grow: always
  // hlo_runner_options_init first).
  hlo_runner_options_t options;
  hlo_runner_options_init(&options);
  options.profile = profile;
  st = hlo_runner_create(program, comm, &options, &runner);
  if (st) {
    hlo_program_free(program);
    return fail("binding the model to the communicator", st);
  }
  float u[8], u_next[8], k = 0.3f;
  for (int i = 0; i < 8; i++) u[i] = 0.25f * (float)(8 * rank + i) - 3.0f;
  const int64_t n[1] = {8};
  char path[4096];
  snprintf(path, sizeof(path), "%s.%d.txt", out, rank);
  FILE *f = fopen(path, "w");
  int code = f ? 0 : 1;
  for (int step = 0; step < steps && code == 0; step++) {
    hlo_buffer_t args[2] = {{HLO_F32, 1, n, u, HLO_ROW_MAJOR},
                            {HLO_F32, 0, NULL, &k, HLO_ROW_MAJOR}};
    // u_next is written in place; the sum is allocated by the runtime.
    hlo_buffer_t results[2] = {{HLO_F32, 1, n, u_next, HLO_ROW_MAJOR}, {0}};
    st = hlo_runner_run(runner, args, 2, results, 2);
    if (st) {
      code = fail("running a step", st);
      break;
    }
    fprintf(f, "%.9g\n", *(const float *)results[1].data);
    hlo_buffer_free(&results[1]);
    memcpy(u, u_next, sizeof(u));
  }
  for (int i = 0; f && code == 0 && i < 8; i++) fprintf(f, "%.9g%c", u[i], i == 7 ? '\n' : ' ');
  if (f) fclose(f);
  if (profile && code == 0) {  // collective: every process's table on process 0
    char *text = NULL;
    st = hlo_runner_profile_text(runner, 10, &text);
    if (st) code = fail("the profile", st);
    else fputs(text, stdout);  // "" on the other processes
    hlo_text_free(text);
  }
  hlo_runner_free(runner);  // collective over comm
  hlo_program_free(program);
  return code;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 4) {
    fprintf(stderr, "usage: relax_loop MODEL STEPS OUT [--split] [--profile]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank, code;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int split = 0, profile = 0;
  for (int a = 4; a < argc; a++) {
    split |= strcmp(argv[a], "--split") == 0;
    profile |= strcmp(argv[a], "--profile") == 0;
  }
  if (split) {
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 4 ? 0 : 1, rank, &sub);
    if (rank < 4) {
      code = run_model(argv[1], atoi(argv[2]), argv[3], sub, profile);
    } else {
      // A runner over 2 processes for a 4-process model: an error on both.
      hlo_program_t *program = NULL;
      hlo_runner_t *runner = NULL;
      hlo_status_t st = hlo_program_load(argv[1], &program);
      if (!st) st = hlo_runner_create(program, sub, NULL, &runner);
      printf("relax_loop: rank %d: expected error: %s\n", rank, hlo_status_message(st));
      code = st ? 0 : 1;
      hlo_status_free(st);
      hlo_runner_free(runner);
      hlo_program_free(program);
    }
    MPI_Comm_free(&sub);
  } else {
    code = run_model(argv[1], atoi(argv[2]), argv[3], MPI_COMM_WORLD, profile);
  }
  MPI_Finalize();
  return code;
}
