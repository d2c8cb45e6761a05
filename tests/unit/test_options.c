// Command-line parsing of hlo-launch.
#include "launcher/options.h"

#include "tests/unit/test_util.h"

#define ARGV(...) ((char *[]){"hlo-launch", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"hlo-launch", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, ...) hl_launch_options_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (o))

static void test_full_command_line(void) {
  hl_launch_options_t o;
  HL_ASSERT_OK(PARSE(&o, "-np", "8", "--replicas", "2", "--partitions=4", "--args",
                     "a.npy,dir/b.npy", "--output-dir", "out", "-q", "--dry-run",
                     "--mpiexec", "/opt/mpi/bin/mpiexec", "--mpiexec-arg", "--hostfile",
                     "--mpiexec-arg=hosts", "--timeout", "2.5", "prog.hlo"));
  CU_ASSERT_EQUAL(o.np, 8);
  CU_ASSERT_EQUAL(o.replicas, 2);
  CU_ASSERT_EQUAL(o.partitions, 4);
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_ARGS);
  CU_ASSERT_EQUAL_FATAL(o.arg_file_count, 2);
  CU_ASSERT_STRING_EQUAL(o.arg_files[0], "a.npy");
  CU_ASSERT_STRING_EQUAL(o.arg_files[1], "dir/b.npy");
  CU_ASSERT_STRING_EQUAL(o.output_dir, "out");
  CU_ASSERT(o.quiet);
  CU_ASSERT(o.dry_run);
  CU_ASSERT_STRING_EQUAL(o.mpiexec, "/opt/mpi/bin/mpiexec");
  CU_ASSERT_EQUAL_FATAL(o.mpiexec_arg_count, 2);
  CU_ASSERT_STRING_EQUAL(o.mpiexec_args[0], "--hostfile");
  CU_ASSERT_STRING_EQUAL(o.mpiexec_args[1], "hosts");
  CU_ASSERT_EQUAL(o.timeout_s, 2.5);
  CU_ASSERT_STRING_EQUAL(o.program, "prog.hlo");
  CU_ASSERT_FALSE(o.worker);
  hl_launch_options_deinit(&o);
}

static void test_spellings_and_defaults(void) {
  hl_launch_options_t o;
  HL_ASSERT_OK(PARSE(&o, "prog.pb", "-n", "3"));  // options after the program too
  CU_ASSERT_EQUAL(o.np, 3);
  CU_ASSERT_STRING_EQUAL(o.program, "prog.pb");
  CU_ASSERT_PTR_NULL(o.mpiexec);  // the starter of the MPI built with (launcher/starter.h)
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_DEFAULT);
  CU_ASSERT_EQUAL(o.seed, 0);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--np", "5", "--seed", "0x10", "--worker", "--status-file", "/tmp/s",
                     "p.hlo"));
  CU_ASSERT_EQUAL(o.np, 5);
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_RANDOM);
  CU_ASSERT_EQUAL(o.seed, 16);
  CU_ASSERT(o.worker);
  CU_ASSERT_STRING_EQUAL(o.status_file, "/tmp/s");
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--args-dir", "in", "p.hlo"));
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_ARGS_DIR);
  CU_ASSERT_STRING_EQUAL(o.args_dir, "in");
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--zeros", "p.hlo"));
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_ZEROS);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--help"));  // no program needed
  CU_ASSERT(o.help);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "-V"));
  CU_ASSERT(o.version);
  hl_launch_options_deinit(&o);
}

static void test_usage_errors(void) {
  hl_launch_options_t o;
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "-np", "0", "p.hlo"), "-np needs a positive integer, got '0'");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "-np", "two", "p.hlo"), "got 'two'");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--replicas", "-1", "p.hlo"), "--replicas needs");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--frobnicate", "p.hlo"), "unknown option '--frobnicate'");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "-x", "p.hlo"), "unknown option '-x'");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "p.hlo", "--np"), "--np needs a value");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "-np", "2"), "no PROGRAM given");
  // Several programs: batch mode, in order, the first as `program`.
  HL_ASSERT_OK(PARSE(&o, "a.hlo", "--fail-fast", "b.hlo"));
  CU_ASSERT_EQUAL(o.program_count, 2);
  CU_ASSERT_STRING_EQUAL(o.programs[0], "a.hlo");
  CU_ASSERT_STRING_EQUAL(o.programs[1], "b.hlo");
  CU_ASSERT_STRING_EQUAL(o.program, "a.hlo");
  CU_ASSERT(o.fail_fast);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--programs", "list.txt"));  // a list file alone is enough
  CU_ASSERT_EQUAL(o.program_count, 0);
  CU_ASSERT_STRING_EQUAL(o.programs_file, "list.txt");
  hl_launch_options_deinit(&o);
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--args", "a.npy", "--zeros", "p.hlo"),
                           "--args and --zeros both choose the inputs");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--seed", "1", "--args-dir", "d", "p.hlo"),
                           "--seed and --args-dir both choose the inputs");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--args", "a.npy,,b.npy", "p.hlo"), "empty file name");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--seed", "-3", "p.hlo"), "--seed needs a non-negative");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--timeout", "0", "p.hlo"), "--timeout needs a positive");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--repeat", "0", "p.hlo"), "--repeat needs a positive");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--repeat", "3", "--infeed-dir", "d", "p.hlo"),
                           "--repeat cannot be combined with --infeed");
  HL_ASSERT_OK(PARSE(&o, "--repeat", "5", "p.hlo"));
  CU_ASSERT_EQUAL(o.repeat, 5);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "p.hlo"));
  CU_ASSERT_EQUAL(o.repeat, 0);  // not given: one untimed run
  CU_ASSERT_EQUAL(o.threads, 0);  // not given: the rank's cpuset size
  CU_ASSERT_FALSE(o.no_fusion_blocking);
  CU_ASSERT_FALSE(o.no_fusion_jit);
  CU_ASSERT_EQUAL(o.profile_top, 0);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--threads", "4", "--no-fusion-blocking", "--profile", "p.hlo"));
  CU_ASSERT_EQUAL(o.threads, 4);
  CU_ASSERT_TRUE(o.no_fusion_blocking);
  CU_ASSERT_EQUAL(o.profile_top, 15);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--no-fusion-jit", "p.hlo"));
  CU_ASSERT_TRUE(o.no_fusion_jit);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--profile=7", "p.hlo"));
  CU_ASSERT_EQUAL(o.profile_top, 7);
  hl_launch_options_deinit(&o);
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--threads", "0", "p.hlo"), "--threads needs a positive");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--threads", "5000", "p.hlo"), "more than 1024");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--profile=x", "p.hlo"), "--profile needs a positive");
}

static void test_cluster_options(void) {
  hl_launch_options_t o;
  HL_ASSERT_OK(PARSE(&o, "-np", "8", "--bind-to", "numa", "--report-bindings", "-H", "a:4,b:4",
                     "--launcher", "srun", "--global-args", "x.npy,w.npy", "--global-output",
                     "y.npy", "prog.hlo"));
  CU_ASSERT_EQUAL(o.bind_to, 1);  // HL_BIND_NUMA (launcher/binding.h)
  CU_ASSERT(o.report_bindings);
  CU_ASSERT_STRING_EQUAL(o.hosts, "a:4,b:4");
  CU_ASSERT_EQUAL(o.launcher, HL_LAUNCHER_SRUN);
  CU_ASSERT_EQUAL(o.input_source, HL_INPUT_GLOBAL);
  CU_ASSERT_EQUAL_FATAL(o.global_arg_file_count, 2);
  CU_ASSERT_STRING_EQUAL(o.global_arg_files[1], "w.npy");
  CU_ASSERT_STRING_EQUAL(o.global_output, "y.npy");
  hl_launch_options_deinit(&o);
  // Defaults: bind to cores, no report, the launcher chosen from the environment.
  HL_ASSERT_OK(PARSE(&o, "--hostfile", "hosts.txt", "--launcher=mpirun", "prog.hlo"));
  CU_ASSERT_EQUAL(o.bind_to, 0);
  CU_ASSERT_FALSE(o.report_bindings);
  CU_ASSERT_STRING_EQUAL(o.hostfile, "hosts.txt");
  CU_ASSERT_EQUAL(o.launcher, HL_LAUNCHER_MPIRUN);
  hl_launch_options_deinit(&o);
  HL_ASSERT_OK(PARSE(&o, "--host", "a", "prog.hlo"));
  CU_ASSERT_EQUAL(o.launcher, HL_LAUNCHER_AUTO);
  CU_ASSERT_STRING_EQUAL(o.hosts, "a");
  hl_launch_options_deinit(&o);
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--bind-to", "socket", "p.hlo"), "core, numa or none");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--launcher", "pbs", "p.hlo"), "mpirun or srun");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "-H", "a", "--hostfile", "f", "p.hlo"), "give one");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--global-args", "a.npy", "--args", "b.npy", "p.hlo"),
                           "--global-args and --args");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--global-args", "a.npy,,b.npy", "p.hlo"),
                           "--global-args has an empty file name");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--global-output=", "p.hlo"), "--global-output is empty");
}

// --arg-shardings splits between shardings, not at the commas inside them;
// an empty entry keeps the program's sharding. Bad shardings are usage errors.
static void test_sharding_options(void) {
  hl_launch_options_t o;
  HL_ASSERT_OK(PARSE(&o, "--arg-shardings", "{devices=[2,1]0,1},,{replicated}",
                     "--output-sharding", "{devices=[2,4]<=[8]}", "--max-inflated-size", "2G",
                     "p.hlo"));
  CU_ASSERT_EQUAL_FATAL(o.arg_sharding_count, 3);
  CU_ASSERT_STRING_EQUAL(o.arg_shardings[0], "{devices=[2,1]0,1}");
  CU_ASSERT_STRING_EQUAL(o.arg_shardings[1], "");
  CU_ASSERT_STRING_EQUAL(o.arg_shardings[2], "{replicated}");
  CU_ASSERT_STRING_EQUAL(o.output_sharding, "{devices=[2,4]<=[8]}");
  CU_ASSERT_EQUAL(o.max_inflated_bytes, 2ull << 30);
  hl_launch_options_deinit(&o);
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--output-sharding", "{devices=[2", "p.hlo"),
                           "--output-sharding: <sharding>:1:");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--arg-shardings", "{replicated},{nonsense}", "p.hlo"),
                           "--arg-shardings entry 1: sharding '{nonsense}' is not one this runtime reads");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--arg-shardings", "{replicated}", "--arg-shardings",
                                 "{replicated}", "p.hlo"),
                           "--arg-shardings given twice");
  HL_ASSERT_ERROR_CONTAINS(PARSE(&o, "--max-inflated-size", "0", "p.hlo"),
                           "--max-inflated-size needs a positive size");
}

static CU_TestInfo tests[] = {
    {"sharding_options", test_sharding_options},
    {"full_command_line", test_full_command_line},
    {"cluster_options", test_cluster_options},
    {"spellings_and_defaults", test_spellings_and_defaults},
    {"usage_errors", test_usage_errors},
    CU_TEST_INFO_NULL,
};
HL_TEST_MAIN("options", tests)
