// hlo_runner_options_t's debugging and speed fields through the API on 4
// ranks (tests/integration/test_embedding.py), on gelu_layer.mlir:
//   api_options MODEL OUT         two runners of one program at once, fused
//     (the default) and unfused (no_fusion_pass): their results must be
//     bitwise equal (exit 2 otherwise); OUT.<rank>.txt gets them for NumPy.
//     A third runner with profile (first run apart), trace_path, the hang
//     watchdog and debug_dir runs 3 times: OUT.profile.txt (rank 0) gets
//     hlo_runner_profile_text, OUT.trace.json the trace, and each profile
//     of the first two runners one line "fused: ..." / "unfused: ..." with
//     the instructions' names. Misuse gets agreed errors (printed by rank 0).
//   api_options MODEL OUT --hang  rank 2 never calls the run while the others
//     wait in its all-reduce: the watchdog (hang_timeout_seconds = 3) must
//     report it and end the job.
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hlo_runtime.h>

static int rank;

static void check(hlo_status_t st, const char *what) {
  if (!st) return;
  fprintf(stderr, "api_options: rank %d: %s: %s\n", rank, what, hlo_status_message(st));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

// An error is expected: the same on every rank, containing `want`.
static void expect_error(hlo_status_t st, const char *want, const char *what) {
  if (!st || !strstr(hlo_status_message(st), want)) {
    fprintf(stderr, "api_options: rank %d: %s: want an error with \"%s\", got \"%s\"\n", rank,
            what, want, st ? hlo_status_message(st) : "success");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) printf("ok   %s: %s\n", what, hlo_status_message(st));
  hlo_status_free(st);
}

static float x[4][8], w[8][8], b[8];
static const int64_t xd[2] = {4, 8}, wd[2] = {8, 8}, bd[1] = {8};

static void run(hlo_runner_t *runner, float g[4][8], float *s) {
  hlo_buffer_t args[3] = {{HLO_F32, 2, xd, x, HLO_ROW_MAJOR},
                          {HLO_F32, 2, wd, w, HLO_ROW_MAJOR},
                          {HLO_F32, 1, bd, b, HLO_ROW_MAJOR}};
  hlo_buffer_t results[2] = {{HLO_F32, 2, xd, g, HLO_ROW_MAJOR},
                             {HLO_F32, 0, NULL, s, HLO_ROW_MAJOR}};
  check(hlo_runner_run(runner, args, 3, results, 2), "hlo_runner_run");
}

// The profile's text on rank 0, as one line of instruction names (the
// first word of each table row) after `label`.
static void profile_line(hlo_runner_t *runner, const char *label, FILE *f) {
  char *text = NULL;
  check(hlo_runner_profile_text(runner, 50, &text), "hlo_runner_profile_text");
  if (rank == 0) fprintf(f, "%s: %s\n", label, text);
  hlo_text_free(text);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 3) check(NULL, "usage");
  const char *out = argv[2];
  bool hang = argc > 3 && strcmp(argv[3], "--hang") == 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) x[i][j] = 0.125f * (float)(4 * rank + i) - 0.1f * (float)j;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) w[i][j] = 0.05f * (float)(i - j) + 0.01f * (float)(i * j);
  for (int j = 0; j < 8; j++) b[j] = 0.2f * (float)j - 0.7f;
  hlo_program_t *program = NULL;
  check(hlo_program_load(argv[1], &program), "hlo_program_load");
  char path[4096];

  if (hang) {
    hlo_runner_options_t o;
    hlo_runner_options_init(&o);
    o.hang_timeout_seconds = 3;
    snprintf(path, sizeof(path), "%s.debug", out);
    o.debug_dir = path;
    hlo_runner_t *runner = NULL;
    check(hlo_runner_create(program, MPI_COMM_WORLD, &o, &runner), "hlo_runner_create");
    float g[4][8], s;
    if (rank != 2) run(runner, g, &s);  // rank 2's application "forgets" the step
    else for (;;) MPI_Barrier(MPI_COMM_SELF), sleep(1);
    fprintf(stderr, "api_options: rank %d: the run returned without rank 2\n", rank);
    return 1;
  }

  // Two runners of one program at once: fused and unfused.
  hlo_runner_options_t fused_o, plain_o;
  hlo_runner_options_init(&fused_o);
  fused_o.profile = 1;
  plain_o = fused_o;
  plain_o.no_fusion_pass = 1;
  hlo_runner_t *fused = NULL, *plain = NULL;
  check(hlo_runner_create(program, MPI_COMM_WORLD, &fused_o, &fused), "create (fused)");
  check(hlo_runner_create(program, MPI_COMM_WORLD, &plain_o, &plain), "create (unfused)");
  float g1[4][8], g2[4][8], s1 = 0, s2 = 0;
  run(fused, g1, &s1);
  run(plain, g2, &s2);
  if (memcmp(g1, g2, sizeof(g1)) != 0 || memcmp(&s1, &s2, sizeof(s1)) != 0) {
    fprintf(stderr, "api_options: rank %d: fused and unfused results differ\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  snprintf(path, sizeof(path), "%s.%d.txt", out, rank);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 8; j++) fprintf(f, "%.9g%c", g1[i][j], j == 7 ? '\n' : ' ');
  fprintf(f, "%.9g\n", s1);
  fclose(f);
  snprintf(path, sizeof(path), "%s.profile.txt", out);
  FILE *pf = rank == 0 ? fopen(path, "w") : NULL;
  profile_line(fused, "fused", pf);
  profile_line(plain, "unfused", pf);
  hlo_runner_free(plain);

  // Profile with the first run apart, trace and watchdog, 3 runs.
  hlo_runner_options_t o;
  hlo_runner_options_init(&o);
  o.profile = 1;
  o.profile_first_apart = 1;
  char trace[4096], dir[4096];
  snprintf(trace, sizeof(trace), "%s.trace.json", out);
  snprintf(dir, sizeof(dir), "%s.debug", out);
  o.trace_path = trace;
  o.hang_timeout_seconds = 60;
  o.debug_dir = dir;
  hlo_runner_t *debug = NULL;
  check(hlo_runner_create(program, MPI_COMM_WORLD, &o, &debug), "create (debug)");
  for (int k = 0; k < 3; k++) run(debug, g2, &s2);
  if (memcmp(g1, g2, sizeof(g1)) != 0) check(NULL, "the debug runner's results differ");
  profile_line(debug, "debug", pf);
  check(hlo_runner_write_trace(debug), "hlo_runner_write_trace");
  hlo_runner_free(debug);
  if (pf) fclose(pf);

  // Misuse, agreed on every rank.
  expect_error(hlo_runner_write_trace(fused), "has no trace", "write_trace without trace_path");
  hlo_runner_options_t zero;
  memset(&zero, 0, sizeof(zero));
  hlo_runner_t *bad = NULL;
  expect_error(hlo_runner_create(program, MPI_COMM_WORLD, &zero, &bad),
               "hlo_runner_options_init", "options not initialized");
  char *text = NULL;
  hlo_runner_free(fused);
  hlo_runner_options_init(&o);
  check(hlo_runner_create(program, MPI_COMM_WORLD, &o, &fused), "create (plain)");
  expect_error(hlo_runner_profile_text(fused, 0, &text), "does not profile",
               "profile_text without profile");
  hlo_runner_free(fused);
  hlo_program_free(program);
  MPI_Finalize();
  return 0;
}
