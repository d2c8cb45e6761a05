#!/usr/bin/env bash
# Training steps as JAX lowers them (issue 24): bench/training/*_f32.mlir
# (unfused StableHLO, gen_training_jax.py) through hlo-launch with the fusion
# pass, against the XLA-fused HLO form of the same step (*_f32.hlo) and
# PyTorch on the same math (training/torch_steps.py, Debian's python3-torch),
# on 1 and 2 threads, BLAS on one thread on both sides. Rounds interleave the
# programs; each figure is the minimum over rounds of the fastest of runs 2-N
# (first runs reported apart); "op by op" is the .mlir with --no-fusion-pass.
# Peak memory: the largest resident set of the rank (/usr/bin/time's %M of
# hlo-launch, which waits for it) above that of a 3-op fused program on as
# many threads, against inputs + outputs + the largest set of values alive at once
# (training/live_set.py) in the module the pass forms (hlo-convert
# --explain-fusion writes it), resp. in the XLA-fused form. On a shared
# machine the times are upper bounds.
# Usage: bench/run_training_jax.sh [--rounds R] [--repeat N] [--threads "1 2"]
#   (default 3 rounds, 8 runs, threads 1 and 2). HL_JAX_EXTRA: more hlo-launch
#   options for the fused .mlir runs. HL_BENCH_BUILD_DIR: a build to use as is.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HL_BENCH_BUILD_DIR:-$root/build-bench-release}
source "$root/bench/lib.sh"
rounds=3
repeat=8
threads_list="1 2"
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
if [ -z "${HL_BENCH_BUILD_DIR:-}" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target hlo-launch hlo-convert -j"${HL_BENCH_JOBS:-2}" >/dev/null
fi
launch=$build/launcher/hlo-launch
convert=$build/launcher/hlo-convert
py=/usr/bin/python3
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tiny=$tmp/tiny.hlo
# The baseline program: three element-wise ops the pass fuses and the code
# generator compiles, so the rank's fixed cost (libraries, threads, LLVM when
# the JIT uses it: some 60 MB resident) is not counted against the steps.
printf 'HloModule tiny\nENTRY main {\n  a = f32[64] parameter(0)\n  b = f32[64] multiply(a, a)\n  c = f32[64] add(b, a)\n  ROOT d = f32[64] subtract(c, a)\n}\n' >"$tiny"
declare -A best first rss

ours() {  # key program threads extra...
  local k=$1 p=$2 t=$3
  shift 3
  local out
  out=$(/usr/bin/time -f 'maxrss %M' "$launch" -np 1 --threads "$t" --repeat "$repeat" --seed 0 -q "$@" "$p" 2>&1)
  best[$k]=$(hl_bench_min "${best[$k]:-}" "$(hl_bench_later_ms "$out")")
  first[$k]=$(hl_bench_first_ms "$out")
  rss[$k]=$(sed -n 's/^maxrss \([0-9]*\)/\1/p' <<<"$out")
}

for r in $(seq "$rounds"); do
  for prog in mlp transformer; do
    for t in $threads_list; do
      # shellcheck disable=SC2086
      ours "$prog.jax.$t" "$root/bench/training/${prog}_f32.mlir" "$t" ${HL_JAX_EXTRA:-}
      ours "$prog.xla.$t" "$root/bench/training/${prog}_f32.hlo" "$t"
      ours "$prog.unfused.$t" "$root/bench/training/${prog}_f32.mlir" "$t" --no-fusion-pass
      out=$("$py" "$root/bench/training/torch_steps.py" "$prog" "$t" "$repeat")
      best[$prog.torch.$t]=$(hl_bench_min "${best[$prog.torch.$t]:-}" \
        "$(sed -n 's/.*min \([0-9.]*\) ms.*/\1/p' <<<"$out")")
      first[$prog.torch.$t]=$(sed -n 's/^first \([0-9.]*\) ms.*/\1/p' <<<"$out")
    done
  done
done
declare -A base
for t in $threads_list; do  # the rank's own cost (threads, libraries), per thread count
  base[$t]=$(/usr/bin/time -f 'maxrss %M' "$launch" -np 1 --threads "$t" --seed 0 -q "$tiny" 2>&1 |
             sed -n 's/^maxrss //p')
  echo "baseline resident set on $t thread(s): $(( base[$t] / 1024 )) MB"
done

# Bytes read and written outside the dots per step, fused by the pass
# (hlo-convert --explain-fusion writes the fused module) and XLA-fused.
for prog in mlp transformer; do
  "$convert" -f --explain-fusion "$root/bench/training/${prog}_f32.mlir" "$tmp/$prog.fused.hlo" \
    2>"$tmp/$prog.explain"
  mj=$("$py" "$root/bench/training/live_set.py" "$tmp/$prog.fused.hlo" --traffic)
  mx=$("$py" "$root/bench/training/live_set.py" "$root/bench/training/${prog}_f32.hlo" --traffic)
  awk -v p="$prog" -v j="$mj" -v x="$mx" -v s="$(tail -1 "$tmp/$prog.explain")" 'BEGIN {
    printf "%s: outside the dots %.1f MB a step fused by the pass, %.1f MB XLA-fused (%.2f); %s\n",
      p, j / 1e6, x / 1e6, j / x, s }'
done
printf '%-11s | %-3s | %-9s | %-9s | %-9s | %-8s | %-9s | %-15s | %-9s | %-13s | %s\n' step threads \
  "jax ms" "xla ms" "torch ms" "jax/xla" "jax/torch" "jax first/later" "xla/torch" \
  "op by op/xla" "peak / bound MB: jax, xla (load)"
for prog in mlp transformer; do
  bound=$("$py" "$root/bench/training/live_set.py" "$root/bench/training/${prog}_f32.hlo")
  bound_j=$("$py" "$root/bench/training/live_set.py" "$tmp/$prog.fused.hlo")
  for t in $threads_list; do
    j=${best[$prog.jax.$t]} x=${best[$prog.xla.$t]} pt=${best[$prog.torch.$t]}
    awk -v p="$prog" -v t="$t" -v j="$j" -v x="$x" -v pt="$pt" -v f="${first[$prog.jax.$t]}" \
        -v u="${best[$prog.unfused.$t]}" \
        -v rj="${rss[$prog.jax.$t]}" -v rx="${rss[$prog.xla.$t]}" -v b="${base[$t]}" -v bound="$bound" -v bj="$bound_j" \
        -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      printf "%-11s | %-3s | %-9.3f | %-9.3f | %-9.3f | %-8.2f | %-9.2f | %-15.2f | %-9.2f | %-13.2f | %.1f / %.1f = %.2f, %.1f / %.1f = %.2f (%s)\n",
        p, t, j, x, pt, j / x, j / pt, f / j, x / pt, u / x, (rj - b) / 1024, bj / 1048576,
        (rj - b) * 1024 / bj, (rx - b) / 1024, bound / 1048576, (rx - b) * 1024 / bound, load }'
  done
done
