#!/usr/bin/env bash
# First run against later runs (issue 24: target first <= 3x the best later
# run) for every program in bench/: the programs each bench_* harness builds
# (written out by running the harness with HL_BENCH_DUMP_DIR, its full sizes)
# and the training steps of bench/training. Each program runs in fresh
# `hlo-launch -np 1 --profile --repeat N --seed 0` processes (one rank, as a
# user runs a program), which time the first (cold) run and runs 2-N:
# alternately with --no-warm-start (the first run builds plans and maps its
# buffers itself) and without (the default: executor.h's warm start), R
# rounds of each; the table shows the fastest first run of each kind against
# the fastest later run of all, and the profile's peak memory line (the
# large arrays held at once against the live-set lower bound).
# Usage: bench/first_run.sh [--threads T] [--repeat N] [--rounds R] [--keep DIR] [files...]
#   (default: every harness's programs and bench/training/*.hlo, 1 thread,
#   5 runs, 2 rounds; --keep DIR writes the harnesses' programs to DIR and
#   keeps them)
# bench_collectives (2 and 8 ranks), bench_bytecode_load and
# bench_stablehlo_parse (loading, no run) are not part of it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HL_BENCH_BUILD_DIR:-$root/build-bench-release}
source "$root/bench/lib.sh"
threads=1
repeat=5
rounds=2
dir=
progs=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --keep) dir=$2; shift 2 ;;
    *) progs+=("$1"); shift ;;
  esac
done
harnesses=(bench_conv bench_conv_holes bench_debug bench_dot bench_elementwise bench_embed
           bench_fusion bench_fusion_pass bench_interpreter bench_layouts)
if [ ${#progs[@]} -eq 0 ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target hlo-launch "${harnesses[@]}" -j"${HL_BENCH_JOBS:-2}" >/dev/null
  if [ -z "$dir" ]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
  fi
  mkdir -p "$dir"
  hl_bench_write_programs "$dir" "$build" "${harnesses[@]}"
  progs=("$dir"/*.hlo "$dir"/*.mlir "$root"/bench/training/*.hlo)
else
  cmake --build "$build" --target hlo-launch -j"${HL_BENCH_JOBS:-2}" >/dev/null
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
printf '%-32s | %9s | %9s | %9s | %6s | %6s | %s\n' program "cold 1st" "warm 1st" "later" \
  "cold x" "warm x" "peak memory (warm start)"
fail=0
for p in "${progs[@]}"; do
  cold= warm= later= peak= failed=
  for ((r = 0; r < rounds; r++)); do
    for mode in cold warm; do
      extra=()
      [ $mode = cold ] && extra=(--no-warm-start)
      if ! out=$("$build/launcher/hlo-launch" -np 1 --threads "$threads" --profile=1 \
                 --repeat "$repeat" --seed 0 -q "${extra[@]}" "$p" 2>&1); then
        echo "$(basename "$p"): hlo-launch failed:" >&2
        echo "$out" >&2
        failed=1
        break 2
      fi
      first=$(hl_bench_first_ms "$out")
      later=$(hl_bench_min "$later" "$(hl_bench_later_ms "$out")")
      if [ $mode = cold ]; then cold=$(hl_bench_min "$cold" "$first"); else
        warm=$(hl_bench_min "$warm" "$first")
        peak=$(sed -n 's/^ *peak memory: large arrays \(.*\)/\1/p' <<<"$out" | head -1)
      fi
    done
  done
  if [ -n "$failed" ]; then fail=1; continue; fi
  rc=$(awk -v f="$cold" -v l="$later" 'BEGIN { printf "%.2f", (l > 0 ? f / l : 0) }')
  rw=$(awk -v f="$warm" -v l="$later" 'BEGIN { printf "%.2f", (l > 0 ? f / l : 0) }')
  awk -v r="$rw" 'BEGIN { exit !(r > 3) }' && fail=1
  printf '%-32s | %9s | %9s | %9s | %6s | %6s | %s\n' "$(basename "$p")" "$cold" "$warm" \
    "$later" "$rc" "$rw" "$peak"
done
exit $fail
