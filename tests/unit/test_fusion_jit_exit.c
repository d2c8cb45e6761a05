// A process that ends while the fusion JIT's background compiler is still
// loading the code generator (libLLVM) or running its first compile exits
// cleanly (runtime/fusion/jit/jit_kernel.c: libLLVM registers destructors
// with atexit as it loads and first compiles; hl_executable_destroy waits
// that out through hl_jit_settle, so exit never runs them under the
// compiler). Each child process runs a small fused program once, as a short
// hlo-launch rank does (the first run interpreted: its loop is queued for
// the background compiler at the warm start), checks the result against
// the same math in C, lets go of the executable after a delay spread over
// the load and the first compile, and returns from exit. The parent expects
// every child to exit with status 0: a crash in libLLVM's destructors is a
// signal (SIGABRT or SIGSEGV in some children when nothing waited), a hang
// at exit is killed after a minute, and status 7 says the first compile
// was not done once the executable was destroyed. The children are forked
// before this process touches the JIT, so each starts with nothing loaded.
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/literal.h"
#include "runtime/exec/executor.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/text/hlo_parser.h"
#include "tests/unit/test_util.h"

#define N 64
#define CHILDREN 12

static const char kText[] =
    "HloModule short_process\n"
    "fused {\n"
    "  x = f32[64] parameter(0)\n"
    "  y = f32[64] parameter(1)\n"
    "  m = f32[64] multiply(x, y)\n"
    "  a = f32[64] add(m, x)\n"
    "  ROOT s = f32[64] subtract(a, y)\n"
    "}\n"
    "ENTRY main {\n"
    "  x = f32[64] parameter(0)\n"
    "  y = f32[64] parameter(1)\n"
    "  ROOT f = f32[64] fusion(x, y), kind=kLoop, calls=fused\n"
    "}\n";

static hl_literal_t *vector(float scale) {
  hl_shape_t s = {.dtype = HL_F32, .rank = 1, .dims = {N}};
  hl_literal_t *l = NULL;
  if (hl_literal_create_uninitialized(&s, &l)) return NULL;
  for (int i = 0; i < N; i++) ((float *)l->data)[i] = scale * (float)(i - N / 2);
  return l;
}

// The child's whole life; its exit status says where it failed (0: none).
// check_compiled: the first compile must be done once the executable is
// destroyed (not in a child forked from a process whose compile it lost).
static int child(long delay_us, bool check_compiled) {
  hl_module_t *m = NULL;
  if (hl_parse_hlo_module(kText, strlen(kText), "short.hlo", &m)) return 2;
  hl_executable_t *exe = NULL;
  if (hl_executable_create(m, &exe)) return 3;
  hl_executable_warm_start(exe);
  hl_literal_t *args[2] = {vector(0.5f), vector(-0.25f)}, *out = NULL;
  if (!args[0] || !args[1]) return 4;
  if (hl_executable_run(exe, NULL, args, 2, &out) || !out) return 5;
  for (int i = 0; i < N; i++) {
    float x = ((float *)args[0]->data)[i], y = ((float *)args[1]->data)[i];
    float want = (x * y + x) - y;  // exact in f32 for these inputs
    if (((float *)out->data)[i] != want) return 6;
  }
  struct timespec d = {.tv_sec = delay_us / 1000000, .tv_nsec = delay_us % 1000000 * 1000};
  nanosleep(&d, NULL);
  hl_literal_release(out);
  hl_literal_release(args[0]);
  hl_literal_release(args[1]);
  hl_executable_destroy(exe);
  hl_module_destroy(m);
  // Destroyed: the background compiler's first body is done (hl_jit_settle),
  // so exit cannot run libLLVM's destructors under it.
  int bodies = 0;
  double seconds = 0;
  hl_jit_compile_stats(&bodies, &seconds);
  if (check_compiled && bodies < 1 && strncmp(hl_jit_describe(), "none", 4) != 0) return 7;
  return 0;
}

// Waits for child `pid` (`what` names it in messages): true when it exited
// with status 0. A child stuck at exit (a compile under destroyed LLVM
// state, or a settle waiting for a body that never comes) is killed after
// 60 s and counts as a failure.
static bool exited_cleanly(pid_t pid, const char *what) {
  int status = 0, waited_ms = 0;
  pid_t got;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 && waited_ms < 60000) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
    waited_ms++;
  }
  if (got == 0) {
    fprintf(stderr, "\n  %s: still running after 60 s\n", what);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return false;
  }
  CU_ASSERT_FATAL(got == pid);
  if (WIFSIGNALED(status))
    fprintf(stderr, "\n  %s: signal %d\n", what, WTERMSIG(status));
  else if (WEXITSTATUS(status) != 0)
    fprintf(stderr, "\n  %s: exit status %d\n", what, WEXITSTATUS(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void test_exit_during_first_compile(void) {
  hl_jit_set_wait(false);  // the default: the loops compile in the background
  int clean = 0;
  for (int k = 0; k < CHILDREN; k++) {
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) exit(child(k * 4000L, true));  // 0-44 ms: the load, then the first compile
    char what[64];
    snprintf(what, sizeof what, "child %d (delay %d ms)", k, 4 * k);
    clean += exited_cleanly(pid, what);
  }
  CU_ASSERT_EQUAL(clean, CHILDREN);
  // What the children loaded (after them: this process loads it now).
  fprintf(stderr, "\n  generator: %s\n", hl_jit_describe());
}

// A process forked while its parent's background compiler loads libLLVM or
// runs its first compile: the child has no compiler thread, so its runs stay
// interpreted and hl_executable_destroy must not wait for that compile
// (it hung before jit_kernel.c's fork handlers). Each parent P is forked
// fresh (nothing loaded), queues the loop at the warm start, forks G after
// a delay spread over the load and the first compile, and both run the
// program, check it and let go of it; P's status says whether G exited
// cleanly (8 when not) or where P failed.
static int forking_parent(long delay_us) {
  hl_module_t *m = NULL;
  if (hl_parse_hlo_module(kText, strlen(kText), "short.hlo", &m)) return 2;
  hl_executable_t *exe = NULL;
  if (hl_executable_create(m, &exe)) return 3;
  hl_executable_warm_start(exe);
  struct timespec d = {.tv_sec = delay_us / 1000000, .tv_nsec = delay_us % 1000000 * 1000};
  nanosleep(&d, NULL);
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return 9;
  int status = 0;
  if (pid == 0) {
    hl_executable_destroy(exe);  // the parent's program, as a child that execs next would
    hl_module_destroy(m);
    _exit(child(0, false));  // a program of its own, run and let go of
  }
  if (!exited_cleanly(pid, "forked child")) status = 8;
  hl_executable_destroy(exe);
  hl_module_destroy(m);
  return status;
}

static atomic_bool g_spin;

static void *spinning_thread(void *arg) {
  while (atomic_load(&g_spin)) {
  }
  return arg;
}

static void *short_thread(void *arg) { return arg; }

// In a process of its own (as the test's forking parents are): whether a
// child forked while another thread runs can start threads of its own.
// qemu-user (the aarch64 job) aborts there ("cpu == current_cpu"), so the
// test below cannot run under it.
static int probe_fork_with_threads(void) {
  pthread_t t;
  atomic_store(&g_spin, true);
  if (pthread_create(&t, NULL, spinning_thread, NULL) != 0) return 1;
  struct timespec d = {0, 2 * 1000000L};
  nanosleep(&d, NULL);  // the thread is running
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    pthread_t c;
    _exit(pthread_create(&c, NULL, short_thread, NULL) == 0 && pthread_join(c, NULL) == 0 ? 0 : 1);
  }
  int status = 0;
  bool ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0;
  atomic_store(&g_spin, false);
  pthread_join(t, NULL);
  return ok ? 0 : 1;
}

static bool forked_child_starts_threads(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) _exit(probe_fork_with_threads());
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

static void test_fork_during_first_compile(void) {
  if (!forked_child_starts_threads()) {
    fprintf(stderr, "\n  skipped: a forked child of a threaded process cannot start threads "
                    "here (qemu-user)\n");
    return;
  }
  hl_jit_set_wait(false);
  int clean = 0;
  for (int k = 0; k < CHILDREN; k++) {
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(forking_parent(k * 4000L));
    char what[64];
    snprintf(what, sizeof what, "forking parent %d (delay %d ms)", k, 4 * k);
    clean += exited_cleanly(pid, what);
  }
  CU_ASSERT_EQUAL(clean, CHILDREN);
}

static CU_TestInfo tests[] = {
    // Their children must start with nothing loaded (the last test loads the
    // generator in this process at its end).
    {"fork_during_first_compile", test_fork_during_first_compile},
    {"exit_during_first_compile", test_exit_during_first_compile},
    CU_TEST_INFO_NULL,
};

HL_TEST_MAIN("fusion_jit_exit", tests)
