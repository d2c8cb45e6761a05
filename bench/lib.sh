# Shell helpers of the bench scripts (first_run.sh, jit_vector_width.sh,
# run_training_jax.sh): `source "$root/bench/lib.sh"`.

# The smaller of two numbers, either of which may be empty (nothing yet).
hl_bench_min() {
  awk -v a="$1" -v b="$2" 'BEGIN { print (a == "" || (b != "" && b + 0 < a + 0)) ? b : a }'
}

# From hlo-launch --repeat's timing line ("N runs on 1 process: first F ms;
# runs 2-N: min M ms, ..."): the first run's ms, and the fastest later run's.
hl_bench_first_ms() { sed -n 's/.*: first \([0-9.]*\) ms;.*/\1/p' <<<"$1" | head -1; }
hl_bench_later_ms() { sed -n 's/.*: min \([0-9.]*\) ms,.*/\1/p' <<<"$1" | head -1; }

# hl_bench_write_programs DIR BUILD HARNESS...: runs each harness of BUILD
# with HL_BENCH_DUMP_DIR=DIR, so every program it builds (at its full sizes)
# is written to DIR. A harness's exit status is its own targets' verdict;
# its programs are written either way.
hl_bench_write_programs() {
  local dir=$1 build=$2 h
  shift 2
  for h in "$@"; do
    echo "# writing the programs of $h (it runs its own benchmarks meanwhile)" >&2
    HL_BENCH_DUMP_DIR=$dir "$build/bench/$h" >/dev/null ||
      echo "# ($h exited $?: a target of its own failed)" >&2
  done
}
