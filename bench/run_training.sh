#!/usr/bin/env bash
# Whole-program figures (issue 12): runs each training step of bench/training
# with `hlo-launch --profile --repeat N` on one rank and prints its roofline
# ratio (measured time / (dot FLOPs at the measured sgemm rate + the other
# instructions' bytes at the measured memcpy bandwidth); target <= 1.5) and
# the fastest run against the model's per-run time (min/model: less
# sensitive to other jobs than the ratio over all runs, which includes the
# cold first run). The load average is printed with the figures: on a shared
# machine they are upper bounds (the sgemm and memcpy rates are measured
# under the same load).
# Usage: bench/run_training.sh [--threads T] [--repeat N] [programs...]
#   (default: every bench/training/*.hlo, 1 thread, 8 runs)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HL_BENCH_BUILD_DIR:-$root/build-bench-release}
threads=1
repeat=8
progs=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    *) progs+=("$1"); shift ;;
  esac
done
[ ${#progs[@]} -gt 0 ] || progs=("$root"/bench/training/*.hlo)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target hlo-launch -j"${HL_BENCH_JOBS:-2}" >/dev/null
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
printf '%-22s | %-12s | %-13s | %-9s | %s\n' program "min run ms" "model ms/run" "min/model" \
  "runs 2-N / model (load)"
for p in "${progs[@]}"; do
  out=$("$build/launcher/hlo-launch" -np 1 --threads "$threads" --profile=8 --repeat "$repeat" \
        --seed 0 -q "$p" 2>&1)
  # The last roofline line: runs 2-N (steady state) when N > 1, else the one run.
  ratio=$(sed -n 's/.*measured \/ model = \([0-9.]*\).*/\1/p' <<<"$out" | tail -1)
  best=$(sed -n 's/.*min \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -1)
  model=$(sed -n 's/.*; model \([0-9.]*\) ms = .*/\1/p' <<<"$out" | tail -1)
  steady=$(( repeat > 1 ? repeat - 1 : 1 ))
  per_run=$(awk -v m="$model" -v n="$steady" 'BEGIN { printf "%.3f", m / n }')
  min_ratio=$(awk -v b="$best" -v r="$per_run" 'BEGIN { printf "%.2f", (r > 0 ? b / r : 0) }')
  printf '%-22s | %-12s | %-13s | %-9s | %s (%s)\n' "$(basename "$p" .hlo)" "$best" "$per_run" \
    "$min_ratio" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
  [ -n "${HL_BENCH_VERBOSE:-}" ] && echo "$out" >&2
done
