#!/usr/bin/env bash
# The fusion JIT's compiled loops at every vector width this host runs
# (issue 24: AVX-512 figures), against the interpreted blocked path. Each
# program runs in fresh `hlo-launch -np 1 --repeat N --seed 0` processes with
# HL_FUSION_JIT_WAIT=1 (its loops compiled before the first run) and
# HL_FUSION_JIT_VECTOR_BYTES set to 16, 32, ... up to the host's widest (64
# with AVX-512F, 32 with AVX, 16 on NEON / SSE), and once with
# --no-fusion-jit; rounds interleave the modes, and the table shows the
# fastest later run of each (ms) and the widest width's speed-up over the
# next narrower one (its time over the widest's). Narrower vectors on an
# AVX-512 host still use its instruction set and 32 vector registers: the
# 32-byte column is not an AVX2-only host's figure.
# Usage: bench/jit_vector_width.sh [--threads T] [--repeat N] [--rounds R] [files...]
#   (default: the programs of bench_fusion and bench_fusion_pass at full size,
#   written out by running them with HL_BENCH_DUMP_DIR as first_run.sh does,
#   and bench/training's steps; 1 thread, 5 runs, 3 rounds)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HL_BENCH_BUILD_DIR:-$root/build-bench-release}
source "$root/bench/lib.sh"
threads=1
repeat=5
rounds=3
progs=()
while [ $# -gt 0 ]; do
  case $1 in
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) progs+=("$1"); shift ;;
  esac
done
harnesses=(bench_fusion bench_fusion_pass)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target hlo-launch "${harnesses[@]}" -j"${HL_BENCH_JOBS:-2}" >/dev/null
launch=$build/launcher/hlo-launch
if [ ${#progs[@]} -eq 0 ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  hl_bench_write_programs "$dir" "$build" "${harnesses[@]}"
  progs=("$dir"/*.hlo "$dir"/*.mlir "$root"/bench/training/*.hlo "$root"/bench/training/*.mlir)
fi
# The generator's target line: "... N-byte vectors", N the host's widest.
target=$("$launch" --version | sed -n 's/^[Ff]usion JIT: *//p' | head -1)
widest=$(sed -n 's/.* \([0-9]*\)-byte vectors.*/\1/p' <<<"$target")
if [ -z "$widest" ]; then
  echo "jit_vector_width.sh: no compiled loops on this host: ${target:-unknown}" >&2
  exit 1
fi
widths=()
for w in 16 32 64; do [ "$w" -le "$widest" ] && widths+=("$w"); done
echo "# host: $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); generator: $target"
echo "# hlo-launch -np 1 --threads $threads --repeat $repeat, fastest of runs 2-$repeat over $rounds interleaved rounds (ms)"
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
header=$(printf '%-44s | %10s' 'program (module)' interpreted)
for w in "${widths[@]}"; do header+=$(printf ' | %8s' "$w B"); done
if [ ${#widths[@]} -ge 2 ]; then
  header+=$(printf ' | %s' "${widths[-1]} B vs ${widths[-2]} B")
fi
echo "$header"
fail=0
for p in "${progs[@]}"; do
  declare -A best=()
  failed=
  for ((r = 0; r < rounds && !failed; r++)); do
    for mode in interp "${widths[@]}"; do
      if [ "$mode" = interp ]; then
        cmd=("$launch" --no-fusion-jit)
      else
        cmd=(env HL_FUSION_JIT_WAIT=1 HL_FUSION_JIT_VECTOR_BYTES="$mode" "$launch")
      fi
      if ! out=$("${cmd[@]}" -np 1 --threads "$threads" --repeat "$repeat" --seed 0 -q "$p" 2>&1); then
        echo "$(basename "$p"): hlo-launch failed ($mode):" >&2
        echo "$out" >&2
        failed=1
        fail=1
        break
      fi
      best[$mode]=$(hl_bench_min "${best[$mode]:-}" "$(hl_bench_later_ms "$out")")
    done
  done
  [ -n "$failed" ] && { unset best; continue; }
  # The file and its module's name (the harnesses' files are named by hash).
  name=$(sed -n -e 's/^HloModule \([^ ,]*\).*/\1/p' -e 's/^module @\([^ {]*\).*/\1/p' "$p" | head -1)
  line=$(printf '%-44s | %10s' "$(basename "$p") ${name:+($name)}" "${best[interp]}")
  for w in "${widths[@]}"; do line+=$(printf ' | %8s' "${best[$w]}"); done
  if [ ${#widths[@]} -ge 2 ]; then
    line+=$(awk -v n="${best[${widths[-2]}]}" -v w="${best[${widths[-1]}]}" \
      'BEGIN { printf " | %.2fx", (w > 0 ? n / w : 0) }')
  fi
  echo "$line"
  unset best
done
exit $fail
