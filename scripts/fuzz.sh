#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (coverage + ASan +
# UBSan, into build-fuzz/) and fuzzes each for SECONDS (default 60), starting
# from the seed corpus (tests/programs, tests/ops, converted protos, .npy
# files). Corpora grow in build-fuzz/corpus/<harness>; crashes, leaks, UB and
# timeouts land in build-fuzz/findings/<harness>/. Exits 1 if any harness
# found something.
#   ./scripts/fuzz.sh [SECONDS] [HARNESS...]     (HL_FUZZ_JOBS=2: two at a time)
set -euo pipefail
. "$(dirname "$0")/common.sh"

seconds=60
harnesses=()
for a in "$@"; do
  case $a in
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    ''|*[!0-9]*) harnesses+=("$a") ;;
    *) seconds=$a ;;
  esac
done
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_hlo_text fuzz_program_loader fuzz_npy fuzz_execute fuzz_bytecode fuzz_jax_export)
jobs=${HL_FUZZ_JOBS:-1}
dir=${HL_FUZZ_BUILD_DIR:-$HL_ROOT/build-fuzz}

command -v clang >/dev/null || { hl_log "clang is needed (apt-get install clang libclang-rt-14-dev)"; exit 2; }
hl_install_deps
hl_log "configuring $dir (clang, -DHL_FUZZ=ON)"
CC=clang cmake -S "$HL_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHL_FUZZ=ON >/dev/null
hl_log "building the harnesses and hlo-convert (for proto seeds)"
cmake --build "$dir" -j "$(hl_jobs)" --target "${harnesses[@]}" hlo-convert

# Seeds: every text program, their binary protos (plain and gzip'd), the StableHLO
# programs of tests/stablehlo, .npy files and StableHLO portable artifacts.
seed_text() {
  find "$HL_ROOT/tests/programs" "$HL_ROOT/tests/ops" -name '*.hlo' -size -64k
}
make_seeds() {
  local h=$1 out=$dir/corpus/$1 f i=0
  mkdir -p "$out"
  case $h in
    fuzz_hlo_text|fuzz_execute)
      seed_text | while read -r f; do cp -n "$f" "$out/" ; done ;;
    fuzz_program_loader)
      cp -n "$HL_ROOT"/tests/programs/*.pb "$out/" 2>/dev/null || true
      # StableHLO text (the loader detects it by content), small files only.
      find "$HL_ROOT/tests/stablehlo" -name '*.mlir' -size -64k -exec cp -n {} "$out/" \;
      seed_text | sed -n 1,200p | while read -r f; do
        i=$((i + 1))
        [ -e "$out/seed$i.pb" ] || "$dir/launcher/hlo-convert" --no-verify "$f" "$out/seed$i.pb" \
          >/dev/null 2>&1 || true
        if [ $((i % 10)) = 0 ] && [ ! -e "$out/seed$i.pb.gz" ]; then
          "$dir/launcher/hlo-convert" --no-verify "$f" "$out/seed$i.pb.gz" >/dev/null 2>&1 || true
        fi
      done ;;
    fuzz_npy)
      /usr/bin/python3 "$HL_ROOT/tests/fuzz/make_npy_seeds.py" "$out" ;;
    fuzz_bytecode)
      # StableHLO's portable artifacts, from outside the tree (third-party data).
      for f in "$HL_ROOT"/../shared/conformance/stablehlo-vhlo/*.bc \
               "$HL_ROOT"/../../shared/conformance/stablehlo-vhlo/*.bc; do
        [ -e "$f" ] && cp -n "$f" "$out/"
      done
      # ... and the modules of JAX's back-compat cases (Shardy ops, dynamic shapes).
      for d in "$HL_ROOT"/../shared/conformance/jax-export-back-compat \
               "$HL_ROOT"/../../shared/conformance/jax-export-back-compat; do
        [ -d "$d" ] && /usr/bin/python3 "$HL_ROOT/tests/fuzz/make_bytecode_seeds.py" "$out" "$d"/*.py
      done
      true ;;
    fuzz_jax_export)
      # Exports around a few of StableHLO's artifacts, encoded by flatc.
      local arts=()
      for f in "$HL_ROOT"/../shared/conformance/stablehlo-vhlo/*1_1_0.mlir.bc \
               "$HL_ROOT"/../../shared/conformance/stablehlo-vhlo/*1_1_0.mlir.bc; do
        [ -e "$f" ] && arts+=("$f")
      done
      if command -v flatc >/dev/null && [ ${#arts[@]} -gt 0 ]; then
        /usr/bin/python3 "$HL_ROOT/tests/fuzz/make_jax_export_seeds.py" "$out" "${arts[@]}"
      fi ;;
  esac
}

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
run_one() {
  local h=$1
  mkdir -p "$dir/findings/$h" "$dir/logs"
  # -timeout: one input running longer is a finding; -rss_limit_mb bounds memory.
  "$dir/tests/fuzz/$h" "$dir/corpus/$h" -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$dir/findings/$h/" >"$dir/logs/$h.log" 2>&1 || true
}

for h in "${harnesses[@]}"; do make_seeds "$h"; done
hl_log "fuzzing ${harnesses[*]} for ${seconds} s each, $jobs at a time (logs in $dir/logs)"
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait

status=0
for h in "${harnesses[@]}"; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/logs/$h.log" | tail -1)
  found=$(find "$dir/findings/$h" -type f | wc -l)
  printf '%-22s %12s executions, %d finding(s), corpus %d files\n' "$h" "${execs:-?}" \
    "$found" "$(find "$dir/corpus/$h" -type f | wc -l)"
  [ "$found" = 0 ] || { status=1; find "$dir/findings/$h" -type f | sed 's/^/    /'; }
done
exit $status
