#include "launcher/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectives/shm/shm_layer.h"
#include "collectives/mpi_family.h"
#include "launcher/binding.h"
#include "runtime/base/alloc.h"
#include "runtime/fusion/jit/jit_kernel.h"
#include "runtime/loader/program_loader.h"
#include "runtime/text/hlo_parser.h"

#ifndef HL_VERSION
#define HL_VERSION "unknown"
#endif

static const char kHelp[] =
    "Usage: hlo-launch [-np N] [options] PROGRAM\n"
    "       hlo-launch [options] PROGRAM1 PROGRAM2 ... | DIR | --programs LISTFILE\n"
    "\n"
    "Runs an XLA program (HLO text, StableHLO text (.mlir), HloProto, HloModuleProto or\n"
    "HloSnapshot, gzipped or not; the format is detected from the content) SPMD-style\n"
    "on N processes, one MPI\n"
    "rank each. Outside an MPI job hlo-launch checks the options and the program, then\n"
    "starts the job with the starter of the MPI it was built with, re-running itself as\n"
    "every rank. Started by mpirun, mpiexec or srun, it runs as one rank of that job.\n"
    "\n"
    "Batch mode (several programs, a directory, --programs or --split-input-file):\n"
    "  the programs run one after another inside ONE MPI job, each on its own grid\n"
    "  (the job has the largest; ranks outside a program's grid wait for it), each\n"
    "  with its own inputs, outputs and checks, nothing kept from one to the next.\n"
    "  Rank 0 prints per program 'hlo-launch: program PATH: passed' or\n"
    "  'hlo-launch: program PATH: FAILED: <reason>' on stdout, then 'N passed, M failed';\n"
    "  the exit status is 1 when any failed. A program that ends the job (a rank\n"
    "  killed, a collective abandoned) fails alone: the rest run in a new job.\n"
    "  A directory stands for its files, sorted by name (hidden files and *.md,\n"
    "  *.txt, *.npy, *.json, *.py left out). --output-dir D writes program P's\n"
    "  results under D/<P's file name>/ (--outfeed-dir too); --args-dir D reads\n"
    "  P's inputs from D/<P's file name>/ when that folder exists, else from D.\n"
    "  --programs LISTFILE    the programs, one path per line (also after PROGRAMs;\n"
    "                         blank lines and '#' comments are skipped)\n"
    "  --fail-fast            stop at the first program that fails\n"
    "\n"
    "Process grid:\n"
    "  -np N, -n N, --np N   number of processes\n"
    "  --replicas R          number of replicas (default: the program's replica_count)\n"
    "  --partitions P        number of partitions (default: the program's num_partitions)\n"
    "  The grid is R x P processes; process (replica r, partition p) is MPI rank\n"
    "  r * P + p. A program that states replica_count or num_partitions has 1 for the\n"
    "  one it leaves out. When neither the options nor the program give R or P:\n"
    "  P = 1 and R = N. When only one of them is known, the other is N divided by it.\n"
    "  R x P must equal N. -np may be omitted: N = R x P (1 when nothing says more).\n"
    "\n"
    "Inputs (at most one of these; default: the HloSnapshot's own arguments, and for\n"
    "other programs --seed 0):\n"
    "  --args A.npy,B.npy    entry parameter i from the i-th file, the same files for\n"
    "                        every process\n"
    "  --args-dir DIR        per process: DIR/replica<r>_partition<p>/arg<i>.npy; where\n"
    "                        that subdirectory does not exist, DIR/arg<i>.npy\n"
    "  --seed S              deterministic random arguments (see below)\n"
    "  --zeros               all-zero arguments\n"
    "  --global-args A.npy,B.npy\n"
    "                        global (unpartitioned) arrays: every process gets the\n"
    "                        shard of each that its partition holds by the entry\n"
    "                        parameter's sharding (replicated, maximal,\n"
    "                        devices=[...] explicit or <=[iota], last_tile_dim_replicate,\n"
    "                        last_tile_dims={replicated}); a shard dimension is\n"
    "                        ceil(global / tiles), zero-padded at the end. Sharding\n"
    "                        device numbers are partition ids; every replica gets the\n"
    "                        same shards.\n"
    "  A file must match its parameter's element type and dimensions exactly. Types\n"
    "  NumPy lacks (bf16, f8, s4, ...) are read from the untyped '<V2' / '<V1' files\n"
    "  np.save writes for ml_dtypes arrays. Tuple-shaped parameters need --seed or\n"
    "  --zeros (.npy inputs for them are not supported yet).\n"
    "  A StableHLO program with dynamic dimensions ('?', jax.export's symbolic\n"
    "  shapes) takes its shapes from the files (--args, --args-dir, --global-args):\n"
    "  they refine its shapes before it is lowered, and a failing shape_assertion\n"
    "  stops the job with its message (docs/STABLEHLO.md, Shape polymorphism).\n"
    "  In batch mode such a program refines from its own --args-dir folder.\n"
    "\n"
    "Outputs:\n"
    "  Rank 0 prints every process's result in rank order, each after a line\n"
    "  \"== replica <r>, partition <p> (rank <k>) ==\".\n"
    "  -q, --quiet           do not print the results\n"
    "  --output-dir DIR      write DIR/replica<r>_partition<p>/result<i>.npy for every\n"
    "                        process: leaf i of the result, nested tuples flattened\n"
    "                        depth-first (a non-tuple result is result0.npy).\n"
    "                        Directories are created as needed. DIR may not be the\n"
    "                        --args-dir, and no result may overwrite an input file.\n"
    "                        bf16 / f8 / s4 ... results are written as np.save writes\n"
    "                        ml_dtypes arrays: untyped '<V2' / '<V1'; read them with\n"
    "                        np.load(f).view(ml_dtypes.bfloat16).\n"
    "  --global-output FILE.npy\n"
    "                        assemble the result from the shards of replica 0's\n"
    "                        partitions by the result's sharding and write\n"
    "                        it as one global array (a shard dimension times its\n"
    "                        tiles: padding of uneven splits is kept). With more\n"
    "                        than one partition the sharding must be known (an\n"
    "                        error otherwise): --output-sharding, else the ROOT's\n"
    "                        sharding attribute, else the module's\n"
    "                        spmd_output_sharding (binary protos; JAX records the\n"
    "                        output sharding only there)\n"
    "  --output-sharding S   the result's sharding in HLO syntax, e.g.\n"
    "                        '{devices=[2,4]<=[8]}'; overrides the program's\n"
    "  --arg-shardings S0,S1,...\n"
    "                        entry parameter i's sharding for --global-args\n"
    "                        (commas inside braces belong to a sharding; an empty\n"
    "                        entry keeps the program's); else the parameter's\n"
    "                        sharding attribute, else spmd_parameters_shardings\n"
    "\n"
    "Timing:\n"
    "  --split-input-file    StableHLO (.mlir) only: run each case of the file(s)\n"
    "                        (cases are separated by lines `// -----`) in batch\n"
    "                        mode, each named PATH:LINE (its first line); a case's\n"
    "                        check.expect_* failures fail it\n"
    "  --probe-output-dir DIR\n"
    "                        StableHLO interpreter.probe writes its tensors to\n"
    "                        DIR/replica<r>_partition<p>/<probe_id>_<k>.npy, which\n"
    "                        check.expect_serialized_eq reads back\n"
    "  --repeat N            run the program N times on the same inputs (plans are\n"
    "                        built once) and have rank 0 print to stderr the first\n"
    "                        run's time and min / median / max of the others; a\n"
    "                        run's time is the slowest process's, measured between\n"
    "                        a barrier and that process's end. Results are the last\n"
    "                        run's. Not with --infeed / --infeed-dir / --outfeed-dir\n"
    "                        (a run consumes its feeds).\n"
    "\n"
    "Custom-calls (docs/CUSTOM_CALLS.md lists the built-in targets):\n"
    "  --custom-call-library PATH[:TARGET=SYMBOL,...]\n"
    "                        load XLA typed-FFI handlers (repeatable): PATH alone\n"
    "                        calls its exported hlo_launch_ffi_init(api), which\n"
    "                        registers handlers by name (platform \"Host\"); with\n"
    "                        TARGET=SYMBOL pairs, custom-call TARGET runs the\n"
    "                        exported XLA_FFI_Handler SYMBOL. A program whose\n"
    "                        target is neither built in nor loaded stops before\n"
    "                        launch.\n"
    "\n"
    "Speed:\n"
    "  --threads N           threads per rank for fusions, dots, convolutions,\n"
    "                        reductions, sort, gather, transposes and FFT batches\n"
    "                        (results have the same bits for every N;\n"
    "                        BLAS itself runs single-threaded inside). Default: the\n"
    "                        size of the rank's cpuset (--bind-to core splits a node's\n"
    "                        cores among its ranks, so ranks x threads do not\n"
    "                        oversubscribe it); 1 with --bind-to none.\n"
    "                        --report-bindings shows the count\n"
    "  --no-fusion-pass      run an unfused program (StableHLO, a \"before\n"
    "                        optimizations\" dump) as written, op by op; default: the\n"
    "                        fusion pass forms the fusions XLA's CPU compiler would\n"
    "                        (hlo-convert --explain-fusion shows them; off under\n"
    "                        --check-nans / --check-infs, which name every value)\n"
    "  --no-warm-start       build plans and compiled loops in the first run and\n"
    "                        map its buffers as it goes (default: while the\n"
    "                        arguments are made, a thread builds them and makes the\n"
    "                        first run's large buffers and kernels' scratch\n"
    "                        resident)\n"
    "  --no-fusion-blocking  run fusions op by op, each intermediate a full array\n"
    "                        (the reference mode; default: blocked fusion execution)\n"
    "  --no-fusion-jit       blocked fusions without compiled loops: every op of a\n"
    "                        block is one interpreted pass (the JIT is also off in\n"
    "                        builds without LLVM 15, see --version, or with\n"
    "                        HL_NO_FUSION_JIT=1); a fusion whose outputs reach the\n"
    "                        L3 size writes them with streaming stores\n"
    "                        (HL_FUSION_STREAM_BYTES=N sets it). Loops are compiled\n"
    "                        by LLVM for this CPU in the background; a fusion runs\n"
    "                        interpreted (the same bits) until its loop is ready\n"
    "  --cache-dir DIR       keep the fusion JIT's compiled loops in DIR (an existing\n"
    "                        directory; files hl-jit-<hash>.o) and reuse them in\n"
    "                        later runs on the same CPU; default: no cache\n"
    "  --profile[=N]         rank 0 prints, for every rank, the N (default 15)\n"
    "                        instructions that took longest (fusions by name) with\n"
    "                        bytes and FLOPs, a roofline line for the run, and\n"
    "                        peak memory against the live-set lower bound (kernels'\n"
    "                        declared scratch and the blocked fusions' workspaces\n"
    "                        on lines after it)\n"
    "\n"
    "Channels and host transfers:\n"
    "  --infeed A.npy,B.npy  infeed and host recv (is_host_transfer=true) take these\n"
    "                        files in order (one per array; the same files for every\n"
    "                        process)\n"
    "  --infeed-dir DIR      per process: DIR/replica<r>_partition<p>/infeed<i>.npy,\n"
    "                        i = 0, 1, ... (after any --infeed files)\n"
    "  --outfeed-dir DIR     outfeed and host send write\n"
    "                        DIR/replica<r>_partition<p>/outfeed<i>.npy in order\n"
    "  send / recv pair by channel id: with _xla_send_recv_source_target_pairs as\n"
    "  given (partition ids; replica ids on a grid with one partition), otherwise each\n"
    "  channel needs exactly one sending and one receiving process.\n"
    "  MPMD: hlo-launch [options] -np 2 a.hlo : -np 2 b.hlo runs a.hlo on ranks 0-1 and\n"
    "  b.hlo on ranks 2-3 of one grid (channels pair across the programs).\n"
    "\n"
    "Launching (outside an MPI job):\n"
    "  --dry-run             print the command line that would start the job\n"
    "  -H, --host H1:4,H2:4  run on these hosts (Open MPI: --host, MPICH: -hosts)\n"
    "  --hostfile FILE       run on the hosts of FILE (Open MPI: --hostfile, MPICH: -f),\n"
    "                        in either family's form: 'host slots=N' (Open MPI) or\n"
    "                        'host:N' (Hydra); the other family's becomes the\n"
    "                        starter's host list. Across hosts under Hydra, which\n"
    "                        keeps no watch of its own, the launcher names a host\n"
    "                        cut off from the job and stops it (TCP keepalive, ~6 s)\n"
    "  --launcher mpirun|srun\n"
    "                        who starts the ranks. Default: inside a Slurm allocation\n"
    "                        (SLURM_JOB_ID set, e.g. salloc or an sbatch script) srun\n"
    "                        -K --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH), elsewhere\n"
    "                        mpiexec\n"
    "  --mpiexec PATH        the mpiexec to run (also HLO_LAUNCH_MPIEXEC=PATH). Default:\n"
    "                        the one of the MPI hlo-launch was built with (--version\n"
    "                        names it): Open MPI's mpiexec / mpirun, MPICH's (Intel\n"
    "                        MPI's, MVAPICH's) mpiexec.hydra / mpiexec.mpich from PATH.\n"
    "                        A starter of the other family is an error: its ranks\n"
    "                        would each be a job of one process\n"
    "  --mpiexec-arg ARG     pass ARG to mpiexec, or to srun (repeatable), e.g.\n"
    "                        --mpiexec-arg=--mca --mpiexec-arg=btl --mpiexec-arg=tcp,self\n"
    "  --timeout SECONDS     stop the job after this long (SIGTERM to mpiexec, SIGKILL\n"
    "                        5 s later) and exit 124\n"
    "  The command adds --oversubscribe and --bind-to none for Open MPI's mpiexec (each\n"
    "  rank binds itself, see below), and --allow-run-as-root when run as root;\n"
    "  -bind-to none for MPICH's Hydra.\n"
    "\n"
    "Placement (every rank, however it was started):\n"
    "  --bind-to core|numa|none\n"
    "                        core (default): the ranks on a node split its cores\n"
    "                        evenly, NUMA node by NUMA node; more ranks than cores\n"
    "                        share cores. numa: each rank gets its NUMA node(s).\n"
    "                        The node-local rank comes from MPI (ranks sharing\n"
    "                        memory). OpenMP threads stay in the cpuset and\n"
    "                        default to its size (OMP_NUM_THREADS overrides).\n"
    "  --report-bindings     rank 0 prints one line per rank to stderr:\n"
    "                        host, rank, replica, partition, local rank, cpuset\n"
    "  --collectives mpi|shm|auto\n"
    "                        how collectives within one node move data: auto\n"
    "                        (default) node shared memory for large messages, MPI\n"
    "                        for small ones; shm: shared memory whenever a group\n"
    "                        lies on one node; mpi: always MPI\n"
    "  --collectives-tuning FILE\n"
    "                        auto's thresholds per collective and group size from\n"
    "                        FILE (lines '<collective> <group size|*> <min\n"
    "                        bytes|never>', as bench_collectives --write-tuning\n"
    "                        writes them); collectives/shm/README.md\n"
    "  --collectives-tune    auto's thresholds measured once at start-up instead:\n"
    "                        shared memory against MPI for each collective at 4 KiB\n"
    "                        to 4 MiB on the job's nodes (about a second at most);\n"
    "                        every rank gets the same table; --report-bindings\n"
    "                        prints it on every rank\n"
    "  --collectives-tuning-out FILE\n"
    "                        with --collectives-tune: rank 0 writes the measured table\n"
    "                        to FILE (the --collectives-tuning format); an existing\n"
    "                        FILE is an error, never overwritten\n"
    "\n"
    "  --max-inflated-size SIZE\n"
    "                        most bytes a gzip'd PROGRAM may inflate to (K, M, G, T\n"
    "                        suffixes); default: half the memory available, so a gzip\n"
    "                        bomb stops with a message instead of exhausting memory\n"
    "\n"
    "Debugging (docs/DEBUGGING.md):\n"
    "  --hang-timeout S      when a rank has waited S seconds (default 300; 0: never) in a\n"
    "                        collective or channel instruction, or for the others at\n"
    "                        the end of the run, every rank reports where it is (the\n"
    "                        instruction, its group, the iterations of the enclosing\n"
    "                        while loops, its last collectives); rank 0 prints the\n"
    "                        merged report, naming the ranks that never arrived, writes\n"
    "                        it to DIR/hang-report.txt and the job exits 3\n"
    "  --debug-dir DIR       the per-job directory for the ranks' state files and the\n"
    "                        hang report (must be shared by all hosts; default: a new\n"
    "                        directory in $TMPDIR, removed after a clean run)\n"
    "  --check-nans          after every instruction, stop at the first NaN it produced\n"
    "                        (the error names the rank, replica, partition, instruction,\n"
    "                        element index, while iterations and the operands' min / max\n"
    "                        / NaN / Inf counts)\n"
    "  --check-infs          the same for +-Inf\n"
    "  --no-collective-check do not check before the run that the ranks' collectives\n"
    "                        pair up (by kind, shape and group; conditionals on\n"
    "                        replica-id / partition-id are decided per rank): a\n"
    "                        mismatch is otherwise an error naming both instructions\n"
    "  --expect DIR          compare every process's result with\n"
    "                        DIR/replica<r>_partition<p>/result<i>.npy; rank 0 prints\n"
    "                        per rank the mismatch count and the worst element, and the\n"
    "                        job exits 4 when any differs. Running an HloSnapshot, its\n"
    "                        recorded result is the expectation when --expect is absent\n"
    "  --expect-global FILE.npy\n"
    "                        compare the global result (assembled from the partitions'\n"
    "                        shards by the ROOT's sharding, as --global-output does)\n"
    "                        with FILE.npy; exit 4 when it differs\n"
    "  --rtol R, --atol A, --ulp N\n"
    "                        an element matches when |got - want| <= A + R * |want| or\n"
    "                        is within N units in the last place of want (default:\n"
    "                        exact; NaN matches NaN)\n"
    "  --record DIR          write DIR/replica<r>_partition<p>/arg<i>.npy,\n"
    "                        result<i>.npy and snapshot.pb (an HloSnapshot of the\n"
    "                        program, arguments and result): replay with\n"
    "                        --args-dir DIR --expect DIR\n"
    "  --trace FILE.json     write one Chrome trace-event file (chrome://tracing,\n"
    "                        Perfetto) for the job: a process per rank, a span per\n"
    "                        instruction (executor track) and per collective / channel\n"
    "                        instruction (bytes, group, channel), arrows from each send\n"
    "                        to its recv-done, clocks aligned to rank 0's\n"
    "\n"
    "  --describe            print what PROGRAM expects and returns: its format and,\n"
    "                        where the format has them, producer, StableHLO and\n"
    "                        bytecode versions, jax.export serialization / calling\n"
    "                        convention versions, platforms and device count; the\n"
    "                        grid it states; each argument and result (dtype, shape,\n"
    "                        '?' for a dynamic dimension, sharding); starts nothing\n"
    "  --explain-groups      print, for every collective of PROGRAM, its group mode and\n"
    "                        process groups as (replica, partition) lists and MPI\n"
    "                        ranks on the grid (-np / --replicas / --partitions), and\n"
    "                        exit without running anything\n"
    "  --explain-partitioning  for a global program (shardings on parameters, root or\n"
    "                        Sharding custom-calls), print each instruction's sharding\n"
    "                        and the collectives the partitioner inserts, with bytes per\n"
    "                        partition, and exit without running anything\n"
    "  --global-program      PROGRAM is a global program (shardings on its parameters /\n"
    "                        root): partition it for the grid's partitions before it\n"
    "                        runs. Implied by a Sharding custom-call, by --global-args\n"
    "                        arrays of exactly the split parameters' shapes, and for a\n"
    "                        jax.export (its grid and shardings come from the export)\n"
    "  -h, --help            print this help\n"
    "  -V, --version         print the version and the MPI library it was built with\n"
    "\n"
    "Random arguments (--seed S): entry parameter number k has its own splitmix64\n"
    "stream (all arithmetic modulo 2^64):\n"
    "  state = S + (k + 1) * 0xD1B54A32D192ED03\n"
    "  next(): state += 0x9E3779B97F4A7C15; z = state;\n"
    "          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;\n"
    "          z = (z ^ (z >> 27)) * 0x94D049BB133111EB;\n"
    "          return z ^ (z >> 31)\n"
    "  Elements take one next() each in row-major order (complex: real part, then\n"
    "  imaginary part); a tuple parameter's leaves draw depth-first from its stream.\n"
    "  floats (f16, bf16, f32, f64, f8 / f4 formats): 2 * ((next() >> 11) * 2^-53) - 1,\n"
    "    uniform in [-1, 1), rounded to the type (to nearest, ties to even);\n"
    "    f8e8m0fnu (powers of two, no zero): 2^(next() mod 7 - 3);\n"
    "  signed ints: lo + next() mod (hi - lo + 1), [lo, hi] = [-10, 10] clipped to the\n"
    "    type's range (s4: [-8, 7]); unsigned ints: the same with [0, 10];\n"
    "  pred: next() >> 63.\n"
    "  Every process generates the same arguments. A global program the launcher\n"
    "  partitions draws each parameter at its global shape and gives every\n"
    "  partition its shard, so the inputs do not depend on the sharding.\n"
    "\n"
    "Exit status:\n"
    "  0    success\n"
    "  1    an error: a bad program or input, or a failed process (its message names\n"
    "       the rank, replica and partition)\n"
    "  2    a usage error (bad options)\n"
    "  3    a hang: --hang-timeout expired (the report names every rank's instruction)\n"
    "  4    the results differ from --expect, --expect-global (or the HloSnapshot's\n"
    "       result)\n"
    "  124  --timeout expired\n"
    "  130, 143, 129  SIGINT (Ctrl-C), SIGTERM or SIGHUP reached hlo-launch: the job\n"
    "       was stopped (128 + the signal number, as shells report it)\n"
    "  other  mpiexec's own status when the job ended another way (a signal, ...)\n"
    "\n"
    "Examples:\n"
    "  hlo-launch -np 8 program.hlo\n"
    "  hlo-launch --replicas 2 --partitions 4 --args-dir in --output-dir out prog.pb\n"
    "  hlo-launch -np 2 --args x.npy,y.npy --quiet --output-dir out prog.hlo.gz\n"
    "  mpirun -np 4 hlo-launch prog.hlo        (as the ranks of an existing launch)\n";

void hl_launch_print_help(FILE *out) { fputs(kHelp, out); }

void hl_launch_print_version(FILE *out) {
  fprintf(out, "hlo-launch %s\nMPI: %s (family: %s)\n", HL_VERSION, hl_mpi_library_version_line(),
          hl_mpi_family_name(hl_mpi_library_family()));
  fprintf(out, "Fusion JIT: %s\n", hl_jit_describe());  // loads the code generator
}

enum {
  OPT_NP = 256,
  OPT_REPLICAS,
  OPT_PARTITIONS,
  OPT_ARGS,
  OPT_ARGS_DIR,
  OPT_SEED,
  OPT_ZEROS,
  OPT_OUTPUT_DIR,
  OPT_CACHE_DIR,
  OPT_DRY_RUN,
  OPT_MPIEXEC,
  OPT_MPIEXEC_ARG,
  OPT_TIMEOUT,
  OPT_WORKER,
  OPT_STATUS_FILE,
  OPT_BIND_TO,
  OPT_REPORT_BINDINGS,
  OPT_HOSTFILE,
  OPT_LAUNCHER,
  OPT_GLOBAL_ARGS,
  OPT_GLOBAL_OUTPUT,
  OPT_INFEED,
  OPT_INFEED_DIR,
  OPT_OUTFEED_DIR,
  OPT_MPMD_PROGRAM,
  OPT_EXPLAIN_GROUPS,
  OPT_DESCRIBE,
  OPT_REPEAT,
  OPT_PROGRAMS,
  OPT_FAIL_FAST,
  OPT_BATCH_PROGRESS,
  OPT_BATCH_START,
  OPT_MAX_INFLATED_SIZE,
  OPT_OUTPUT_SHARDING,
  OPT_ARG_SHARDINGS,
  OPT_EXPLAIN_PARTITIONING,
  OPT_GLOBAL_PROGRAM,
  OPT_CUSTOM_CALL_LIBRARY,
  OPT_HANG_TIMEOUT,
  OPT_DEBUG_DIR,
  OPT_CHECK_NANS,
  OPT_CHECK_INFS,
  OPT_NO_COLLECTIVE_CHECK,
  OPT_EXPECT,
  OPT_EXPECT_GLOBAL,
  OPT_RTOL,
  OPT_ATOL,
  OPT_ULP,
  OPT_RECORD,
  OPT_TRACE,
  OPT_COLLECTIVES,
  OPT_COLLECTIVES_TUNING,
  OPT_COLLECTIVES_TUNE,
  OPT_COLLECTIVES_TUNING_OUT,
  OPT_THREADS,
  OPT_NO_FUSION_BLOCKING,
  OPT_NO_FUSION_JIT,
  OPT_NO_FUSION_PASS,
  OPT_NO_WARM_START,
  OPT_PROFILE,
  OPT_SPLIT_INPUT_FILE,
  OPT_PROBE_OUTPUT_DIR,
};

static const struct option kLongOptions[] = {
    {"np", required_argument, NULL, OPT_NP},
    {"replicas", required_argument, NULL, OPT_REPLICAS},
    {"partitions", required_argument, NULL, OPT_PARTITIONS},
    {"args", required_argument, NULL, OPT_ARGS},
    {"args-dir", required_argument, NULL, OPT_ARGS_DIR},
    {"seed", required_argument, NULL, OPT_SEED},
    {"zeros", no_argument, NULL, OPT_ZEROS},
    {"output-dir", required_argument, NULL, OPT_OUTPUT_DIR},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"quiet", no_argument, NULL, 'q'},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"mpiexec", required_argument, NULL, OPT_MPIEXEC},
    {"mpiexec-arg", required_argument, NULL, OPT_MPIEXEC_ARG},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"worker", no_argument, NULL, OPT_WORKER},
    {"status-file", required_argument, NULL, OPT_STATUS_FILE},
    {"bind-to", required_argument, NULL, OPT_BIND_TO},
    {"report-bindings", no_argument, NULL, OPT_REPORT_BINDINGS},
    {"host", required_argument, NULL, 'H'},
    {"hostfile", required_argument, NULL, OPT_HOSTFILE},
    {"launcher", required_argument, NULL, OPT_LAUNCHER},
    {"global-args", required_argument, NULL, OPT_GLOBAL_ARGS},
    {"global-output", required_argument, NULL, OPT_GLOBAL_OUTPUT},
    {"infeed", required_argument, NULL, OPT_INFEED},
    {"infeed-dir", required_argument, NULL, OPT_INFEED_DIR},
    {"outfeed-dir", required_argument, NULL, OPT_OUTFEED_DIR},
    {"mpmd-program", required_argument, NULL, OPT_MPMD_PROGRAM},
    {"explain-groups", no_argument, NULL, OPT_EXPLAIN_GROUPS},
    {"describe", no_argument, NULL, OPT_DESCRIBE},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"max-inflated-size", required_argument, NULL, OPT_MAX_INFLATED_SIZE},
    {"output-sharding", required_argument, NULL, OPT_OUTPUT_SHARDING},
    {"arg-shardings", required_argument, NULL, OPT_ARG_SHARDINGS},
    {"explain-partitioning", no_argument, NULL, OPT_EXPLAIN_PARTITIONING},
    {"global-program", no_argument, NULL, OPT_GLOBAL_PROGRAM},
    {"custom-call-library", required_argument, NULL, OPT_CUSTOM_CALL_LIBRARY},
    {"hang-timeout", required_argument, NULL, OPT_HANG_TIMEOUT},
    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
    {"check-nans", no_argument, NULL, OPT_CHECK_NANS},
    {"check-infs", no_argument, NULL, OPT_CHECK_INFS},
    {"no-collective-check", no_argument, NULL, OPT_NO_COLLECTIVE_CHECK},
    {"expect", required_argument, NULL, OPT_EXPECT},
    {"expect-global", required_argument, NULL, OPT_EXPECT_GLOBAL},
    {"rtol", required_argument, NULL, OPT_RTOL},
    {"atol", required_argument, NULL, OPT_ATOL},
    {"ulp", required_argument, NULL, OPT_ULP},
    {"record", required_argument, NULL, OPT_RECORD},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"collectives", required_argument, NULL, OPT_COLLECTIVES},
    {"collectives-tuning", required_argument, NULL, OPT_COLLECTIVES_TUNING},
    {"collectives-tune", no_argument, NULL, OPT_COLLECTIVES_TUNE},
    {"collectives-tuning-out", required_argument, NULL, OPT_COLLECTIVES_TUNING_OUT},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"no-fusion-blocking", no_argument, NULL, OPT_NO_FUSION_BLOCKING},
    {"no-fusion-jit", no_argument, NULL, OPT_NO_FUSION_JIT},
    {"no-fusion-pass", no_argument, NULL, OPT_NO_FUSION_PASS},
    {"no-warm-start", no_argument, NULL, OPT_NO_WARM_START},
    {"profile", optional_argument, NULL, OPT_PROFILE},
    {"split-input-file", no_argument, NULL, OPT_SPLIT_INPUT_FILE},
    {"programs", required_argument, NULL, OPT_PROGRAMS},
    {"fail-fast", no_argument, NULL, OPT_FAIL_FAST},
    {"batch-progress", required_argument, NULL, OPT_BATCH_PROGRESS},
    {"batch-start", required_argument, NULL, OPT_BATCH_START},
    {"probe-output-dir", required_argument, NULL, OPT_PROBE_OUTPUT_DIR},
    {NULL, 0, NULL, 0},
};

static hl_status_t parse_count(const char *flag, const char *text, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < 1 || v > (1 << 24))
    return HL_INVALID("%s needs a positive integer, got '%s'", flag, text);
  *out = v;
  return NULL;
}

static hl_status_t parse_seed(const char *text, uint64_t *out) {
  char *end;
  errno = 0;
  if (text[0] == '-') return HL_INVALID("--seed needs a non-negative integer, got '%s'", text);
  unsigned long long v = strtoull(text, &end, 0);
  if (errno || end == text || *end)
    return HL_INVALID("--seed needs a non-negative integer, got '%s'", text);
  *out = v;
  return NULL;
}

static hl_status_t split_list(const char *flag, const char *list, char ***out_files,
                              int *out_count) {
  int n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  *out_files = hl_calloc((size_t)n, sizeof(char *));
  if (!*out_files) return HL_OOM();
  const char *start = list;
  for (int i = 0; i < n; i++) {
    const char *comma = strchr(start, ',');
    size_t len = comma ? (size_t)(comma - start) : strlen(start);
    if (len == 0) return HL_INVALID("%s has an empty file name in '%s'", flag, list);
    (*out_files)[i] = hl_strndup(start, len);
    if (!(*out_files)[i]) return HL_OOM();
    *out_count = i + 1;
    start = comma ? comma + 1 : start + len;
  }
  return NULL;
}

static hl_status_t check_sharding(const char *flag, const char *text) {
  hl_sharding_t s;
  hl_status_t st = hl_parse_sharding(text, &s);
  if (!st) {
    hl_sharding_deinit(&s);
    return NULL;
  }
  return hl_status_annotate(st, "%s", flag);
}

// --arg-shardings: shardings separated by the commas outside braces
// ("{devices=[2,1]0,1},{replicated}"); an empty entry keeps that
// parameter's own sharding.
static hl_status_t split_shardings(const char *list, hl_launch_options_t *o) {
  int n = 1, depth = 0;
  for (const char *p = list; *p; p++) {
    depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
    n += *p == ',' && depth == 0;
  }
  o->arg_shardings = hl_calloc((size_t)n, sizeof(char *));
  if (!o->arg_shardings) return HL_OOM();
  const char *start = list;
  for (int i = 0; i < n; i++) {
    const char *end = start;
    for (depth = 0; *end && !(*end == ',' && depth == 0); end++)
      depth += *end == '{' ? 1 : *end == '}' ? -1 : 0;
    o->arg_shardings[i] = hl_strndup(start, (size_t)(end - start));
    if (!o->arg_shardings[i]) return HL_OOM();
    o->arg_sharding_count = i + 1;
    if (*o->arg_shardings[i]) {
      char flag[64];
      snprintf(flag, sizeof(flag), "--arg-shardings entry %d", i);
      HL_RETURN_IF_ERROR(check_sharding(flag, o->arg_shardings[i]));
    }
    start = *end ? end + 1 : end;
  }
  return NULL;
}

static hl_status_t split_files(const char *list, hl_launch_options_t *o) {
  return split_list("--args", list, &o->arg_files, &o->arg_file_count);
}

static hl_status_t set_source(hl_launch_options_t *o, hl_input_source_t source,
                              const char *flag) {
  static const char *const kFlags[] = {"",        "--args",  "--args-dir",
                                       "--seed",  "--zeros", "--global-args"};
  if (o->input_source != HL_INPUT_DEFAULT && o->input_source != source)
    return HL_INVALID("%s and %s both choose the inputs; give only one", kFlags[o->input_source],
                      flag);
  if (o->input_source == source && source != HL_INPUT_ZEROS)
    return HL_INVALID("%s given twice", flag);
  o->input_source = source;
  return NULL;
}

// The ':'-separated parts of an MPMD command line, argv[at..argc): each is
// "-np N PROGRAM" (also -n / --np / --np=N). The first part's count must
// have been given with the options.
static hl_status_t hl_mpmd_parse(char **argv, int at, int argc, hl_launch_options_t *o) {
  if (!o->np) return HL_INVALID("MPMD (':'): the first program needs its own -np");
  int parts = 1;
  for (int i = at; i < argc; i++) parts += strcmp(argv[i], ":") == 0;
  o->mpmd_programs = hl_calloc((size_t)parts, sizeof(char *));
  o->mpmd_np = hl_calloc((size_t)parts, sizeof(int64_t));
  if (!o->mpmd_programs || !o->mpmd_np) return HL_OOM();
  o->mpmd_programs[0] = o->program;
  o->mpmd_np[0] = o->np;
  o->mpmd_count = 1;
  int64_t total = o->np;
  for (int i = at; i < argc;) {
    i++;  // the ':'
    int64_t np = 0;
    const char *program = NULL;
    while (i < argc && strcmp(argv[i], ":") != 0) {
      const char *a = argv[i];
      if (strcmp(a, "-np") == 0 || strcmp(a, "--np") == 0 || strcmp(a, "-n") == 0) {
        if (i + 1 >= argc) return HL_INVALID("MPMD part %d: %s needs a value", o->mpmd_count, a);
        HL_RETURN_IF_ERROR(parse_count("-np", argv[i + 1], &np));
        i += 2;
      } else if (strncmp(a, "--np=", 5) == 0) {
        HL_RETURN_IF_ERROR(parse_count("-np", a + 5, &np));
        i++;
      } else if (a[0] == '-') {
        return HL_INVALID("MPMD part %d: only -np N PROGRAM may follow ':', got '%s' (options "
                          "go before the first program)",
                          o->mpmd_count, a);
      } else if (program) {
        return HL_INVALID("MPMD part %d: one PROGRAM expected, got '%s' and '%s'", o->mpmd_count,
                          program, a);
      } else {
        program = a;
        i++;
      }
    }
    if (!np || !program)
      return HL_INVALID("MPMD part %d: expected -np N PROGRAM after ':'", o->mpmd_count);
    o->mpmd_programs[o->mpmd_count] = program;
    o->mpmd_np[o->mpmd_count++] = np;
    total += np;
  }
  o->np = total;
  return NULL;
}

static hl_status_t parse_into(int argc, char **argv, hl_launch_options_t *o) {
  // getopt_long would read "-np" as "-n -p"; it is mpirun's spelling, so it
  // is rewritten to "--np" first.
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) break;
    if (strcmp(argv[i], "-np") == 0) argv[i] = "--np";
  }
  // MPMD: the options and program before the first ':' are parsed as usual;
  // every later ':'-separated part is "-np N PROGRAM" only.
  int mpmd_at = 0;
  for (int i = 1; i < argc && !mpmd_at; i++)
    if (strcmp(argv[i], ":") == 0) mpmd_at = i;
  int full_argc = argc;
  if (mpmd_at) argc = mpmd_at;
  const char *mpmd_program = NULL;  // --mpmd-program: this rank's own program
  o->hang_timeout_s = 300;
  opterr = 0;
  optind = 0;  // 0, not 1: makes GNU getopt reinitialize (the parser may run more than once)
  int c;
  while ((c = getopt_long(argc, argv, ":n:H:qhV", kLongOptions, NULL)) != -1) {
    switch (c) {
      case 'n':
      case OPT_NP: HL_RETURN_IF_ERROR(parse_count("-np", optarg, &o->np)); break;
      case OPT_REPLICAS: HL_RETURN_IF_ERROR(parse_count("--replicas", optarg, &o->replicas)); break;
      case OPT_PARTITIONS:
        HL_RETURN_IF_ERROR(parse_count("--partitions", optarg, &o->partitions));
        break;
      case OPT_ARGS:
        HL_RETURN_IF_ERROR(set_source(o, HL_INPUT_ARGS, "--args"));
        HL_RETURN_IF_ERROR(split_files(optarg, o));
        break;
      case OPT_ARGS_DIR:
        HL_RETURN_IF_ERROR(set_source(o, HL_INPUT_ARGS_DIR, "--args-dir"));
        o->args_dir = optarg;
        break;
      case OPT_SEED:
        HL_RETURN_IF_ERROR(set_source(o, HL_INPUT_RANDOM, "--seed"));
        HL_RETURN_IF_ERROR(parse_seed(optarg, &o->seed));
        break;
      case OPT_ZEROS: HL_RETURN_IF_ERROR(set_source(o, HL_INPUT_ZEROS, "--zeros")); break;
      case OPT_OUTPUT_DIR: o->output_dir = optarg; break;
      case OPT_CACHE_DIR: o->cache_dir = optarg; break;
      case 'q': o->quiet = true; break;
      case OPT_DRY_RUN: o->dry_run = true; break;
      case OPT_MPIEXEC: o->mpiexec = optarg; break;
      case OPT_MPIEXEC_ARG: {
        const char **grown =
            hl_realloc(o->mpiexec_args, sizeof(char *) * (size_t)(o->mpiexec_arg_count + 1));
        if (!grown) return HL_OOM();
        o->mpiexec_args = grown;
        o->mpiexec_args[o->mpiexec_arg_count++] = optarg;
        break;
      }
      case OPT_TIMEOUT: {
        char *end;
        errno = 0;
        double t = strtod(optarg, &end);
        if (errno || end == optarg || *end || !(t > 0) || t > 1e7)
          return HL_INVALID("--timeout needs a positive number of seconds, got '%s'", optarg);
        o->timeout_s = t;
        break;
      }
      case 'h': o->help = true; break;
      case 'V': o->version = true; break;
      case OPT_WORKER: o->worker = true; break;
      case OPT_STATUS_FILE: o->status_file = optarg; break;
      case OPT_BIND_TO: {
        hl_bind_policy_t policy;
        HL_RETURN_IF_ERROR(hl_bind_policy_parse(optarg, &policy));
        o->bind_to = (int)policy;
        break;
      }
      case OPT_REPORT_BINDINGS: o->report_bindings = true; break;
      case 'H': o->hosts = optarg; break;
      case OPT_HOSTFILE: o->hostfile = optarg; break;
      case OPT_LAUNCHER:
        if (strcmp(optarg, "mpirun") == 0 || strcmp(optarg, "mpiexec") == 0)
          o->launcher = HL_LAUNCHER_MPIRUN;
        else if (strcmp(optarg, "srun") == 0)
          o->launcher = HL_LAUNCHER_SRUN;
        else
          return HL_INVALID("--launcher needs mpirun or srun, got '%s'", optarg);
        break;
      case OPT_GLOBAL_ARGS:
        HL_RETURN_IF_ERROR(set_source(o, HL_INPUT_GLOBAL, "--global-args"));
        HL_RETURN_IF_ERROR(
            split_list("--global-args", optarg, &o->global_arg_files, &o->global_arg_file_count));
        break;
      case OPT_GLOBAL_OUTPUT: o->global_output = optarg; break;
      case OPT_INFEED:
        if (o->infeed_files) return HL_INVALID("--infeed given twice");
        HL_RETURN_IF_ERROR(
            split_list("--infeed", optarg, &o->infeed_files, &o->infeed_file_count));
        break;
      case OPT_INFEED_DIR: o->infeed_dir = optarg; break;
      case OPT_OUTFEED_DIR: o->outfeed_dir = optarg; break;
      case OPT_MPMD_PROGRAM: mpmd_program = optarg; break;
      case OPT_EXPLAIN_GROUPS: o->explain_groups = true; break;
      case OPT_DESCRIBE: o->describe = true; break;
      case OPT_EXPLAIN_PARTITIONING: o->explain_partitioning = true; break;
      case OPT_GLOBAL_PROGRAM: o->global_program = true; break;
      case OPT_SPLIT_INPUT_FILE: o->split_input_file = true; break;
      case OPT_PROGRAMS: o->programs_file = optarg; break;
      case OPT_FAIL_FAST: o->fail_fast = true; break;
      case OPT_BATCH_PROGRESS: o->batch_progress = optarg; break;
      case OPT_BATCH_START: {
        int64_t start = 0;
        HL_RETURN_IF_ERROR(parse_count("--batch-start", optarg, &start));
        o->batch_start = start;
        break;
      }
      case OPT_PROBE_OUTPUT_DIR: o->probe_output_dir = optarg; break;
      case OPT_REPEAT: HL_RETURN_IF_ERROR(parse_count("--repeat", optarg, &o->repeat)); break;
      case OPT_OUTPUT_SHARDING:
        HL_RETURN_IF_ERROR(check_sharding("--output-sharding", optarg));
        o->output_sharding = optarg;
        break;
      case OPT_ARG_SHARDINGS:
        if (o->arg_shardings) return HL_INVALID("--arg-shardings given twice");
        HL_RETURN_IF_ERROR(split_shardings(optarg, o));
        break;
      case OPT_MAX_INFLATED_SIZE:
        HL_RETURN_IF_ERROR(
            hl_program_parse_size("--max-inflated-size", optarg, &o->max_inflated_bytes));
        break;
      case OPT_CUSTOM_CALL_LIBRARY: {
        const char **grown = hl_realloc(o->custom_call_libraries,
                                        sizeof(char *) * (size_t)(o->custom_call_library_count + 1));
        if (!grown) return HL_OOM();
        o->custom_call_libraries = grown;
        o->custom_call_libraries[o->custom_call_library_count++] = optarg;
        break;
      }
      case OPT_HANG_TIMEOUT: {
        char *end;
        errno = 0;
        double t = strtod(optarg, &end);
        if (errno || end == optarg || *end || !(t >= 0) || t > 1e7)
          return HL_INVALID("--hang-timeout needs a number of seconds >= 0, got '%s'", optarg);
        o->hang_timeout_s = t;
        break;
      }
      case OPT_DEBUG_DIR: o->debug_dir = optarg; break;
      case OPT_CHECK_NANS: o->check_nans = true; break;
      case OPT_CHECK_INFS: o->check_infs = true; break;
      case OPT_NO_COLLECTIVE_CHECK: o->no_collective_check = true; break;
      case OPT_EXPECT: o->expect_dir = optarg; break;
      case OPT_EXPECT_GLOBAL: o->expect_global = optarg; break;
      case OPT_RECORD: o->record_dir = optarg; break;
      case OPT_TRACE: o->trace_file = optarg; break;
      case OPT_RTOL:
      case OPT_ATOL:
      case OPT_ULP: {
        char *end;
        errno = 0;
        double v = strtod(optarg, &end);
        const char *flag = c == OPT_RTOL ? "--rtol" : c == OPT_ATOL ? "--atol" : "--ulp";
        if (errno || end == optarg || *end || !(v >= 0) || v > 1e300)
          return HL_INVALID("%s needs a number >= 0, got '%s'", flag, optarg);
        *(c == OPT_RTOL ? &o->rtol : c == OPT_ATOL ? &o->atol : &o->ulp) = v;
        break;
      }
      case OPT_COLLECTIVES: {
        hl_collectives_mode_t mode;
        HL_RETURN_IF_ERROR(hl_collectives_mode_parse(optarg, &mode));
        o->collectives = (int)mode;
        break;
      }
      case OPT_COLLECTIVES_TUNING: o->collectives_tuning = optarg; break;
      case OPT_COLLECTIVES_TUNE: o->collectives_tune = true; break;
      case OPT_COLLECTIVES_TUNING_OUT: o->collectives_tuning_out = optarg; break;
      case OPT_THREADS:
        HL_RETURN_IF_ERROR(parse_count("--threads", optarg, &o->threads));
        if (o->threads > 1024) return HL_INVALID("--threads %s is more than 1024", optarg);
        break;
      case OPT_NO_FUSION_BLOCKING: o->no_fusion_blocking = true; break;
      case OPT_NO_FUSION_JIT: o->no_fusion_jit = true; break;
      case OPT_NO_FUSION_PASS: o->no_fusion_pass = true; break;
      case OPT_NO_WARM_START: o->no_warm_start = true; break;
      case OPT_PROFILE:
        o->profile_top = 15;
        if (optarg) HL_RETURN_IF_ERROR(parse_count("--profile", optarg, &o->profile_top));
        break;
      case ':': {
        const char *flag = argv[optind - 1];
        return HL_INVALID("%s needs a value", flag);
      }
      default: {
        const char *flag = argv[optind - 1];
        if (optopt && optopt < 256) return HL_INVALID("unknown option '-%c'", optopt);
        return HL_INVALID("unknown option '%s'", flag);
      }
    }
  }
  if (o->help || o->version) return NULL;
  if (optind >= argc && !o->programs_file) return HL_INVALID("no PROGRAM given");
  o->program_count = argc - optind;
  if (o->program_count > 0) {
    o->programs = hl_calloc((size_t)o->program_count, sizeof(char *));
    if (!o->programs) return HL_OOM();
    for (int i = 0; i < o->program_count; i++) o->programs[i] = argv[optind + i];
    o->program = argv[optind];
  }
  if (o->program_count > 1 && mpmd_at)
    return HL_INVALID("MPMD (':') takes one PROGRAM per part, got '%s' and '%s'", argv[optind],
                      argv[optind + 1]);
  if (mpmd_at && o->programs_file) return HL_INVALID("--programs cannot be combined with MPMD (':')");
  if (mpmd_at) HL_RETURN_IF_ERROR(hl_mpmd_parse(argv, mpmd_at, full_argc, o));
  if (mpmd_program) o->program = mpmd_program;
  if (o->infeed_dir && !*o->infeed_dir) return HL_INVALID("--infeed-dir is empty");
  if (o->outfeed_dir && !*o->outfeed_dir) return HL_INVALID("--outfeed-dir is empty");
  if (o->output_dir && !*o->output_dir) return HL_INVALID("--output-dir is empty");
  if (o->cache_dir) {
    struct stat st;
    if (stat(o->cache_dir, &st) != 0 || !S_ISDIR(st.st_mode))
      return HL_INVALID("--cache-dir %s: not an existing directory", o->cache_dir);
  }
  if (o->args_dir && !*o->args_dir) return HL_INVALID("--args-dir is empty");
  if (o->debug_dir && !*o->debug_dir) return HL_INVALID("--debug-dir is empty");
  if (o->expect_dir && !*o->expect_dir) return HL_INVALID("--expect is empty");
  if (o->expect_global && !*o->expect_global) return HL_INVALID("--expect-global is empty");
  if (o->record_dir && !*o->record_dir) return HL_INVALID("--record is empty");
  if (o->trace_file && !*o->trace_file) return HL_INVALID("--trace is empty");
  if (o->global_output && !*o->global_output) return HL_INVALID("--global-output is empty");
  if (o->hosts && o->hostfile) return HL_INVALID("-H and --hostfile both name the hosts; give one");
  if (o->collectives_tune && o->collectives_tuning)
    return HL_INVALID("--collectives-tune measures the table --collectives-tuning reads; give one");
  if (o->collectives_tune && o->collectives != HL_COLLECTIVES_AUTO)
    return HL_INVALID("--collectives-tune needs --collectives auto (the thresholds are auto's)");
  if (o->collectives_tuning_out && !o->collectives_tune)
    return HL_INVALID("--collectives-tuning-out needs --collectives-tune");
  if (o->collectives_tuning_out && !*o->collectives_tuning_out)
    return HL_INVALID("--collectives-tuning-out is empty");
  // Checked here too, so an existing file stops the job before it starts.
  if (o->collectives_tuning_out && access(o->collectives_tuning_out, F_OK) == 0)
    return HL_INVALID("--collectives-tuning-out %s exists; refusing to overwrite it",
                      o->collectives_tuning_out);
  if (o->repeat > 1 && (o->infeed_files || o->infeed_dir || o->outfeed_dir))
    return HL_INVALID("--repeat cannot be combined with --infeed, --infeed-dir or --outfeed-dir: "
                      "each run would consume the feeds again");
  return NULL;
}

hl_status_t hl_launch_options_parse(int argc, char **argv, hl_launch_options_t *out) {
  memset(out, 0, sizeof(*out));
  hl_status_t st = parse_into(argc, argv, out);
  if (st) hl_launch_options_deinit(out);
  return st;
}

void hl_launch_options_deinit(hl_launch_options_t *o) {
  for (int i = 0; i < o->arg_file_count; i++) hl_free(o->arg_files[i]);
  hl_free(o->arg_files);
  for (int i = 0; i < o->global_arg_file_count; i++) hl_free(o->global_arg_files[i]);
  hl_free(o->global_arg_files);
  hl_free(o->mpiexec_args);
  for (int i = 0; i < o->arg_sharding_count; i++) hl_free(o->arg_shardings[i]);
  hl_free(o->arg_shardings);
  hl_free(o->custom_call_libraries);
  for (int i = 0; i < o->infeed_file_count; i++) hl_free(o->infeed_files[i]);
  hl_free(o->infeed_files);
  hl_free(o->mpmd_programs);
  hl_free(o->mpmd_np);
  hl_free(o->programs);
  memset(o, 0, sizeof(*o));
}
