#!/usr/bin/env bash
# Runs the StableHLO interpreter's conformance suite (stablehlo/tests/interpret,
# kept outside this tree) through hlo-launch --split-input-file and prints a
# per-file table (cases passed / run) and the totals.
#   scripts/conformance.sh [DIR] [BUILD_DIR]
# DIR defaults to ../shared/conformance/stablehlo-interpret next to the tree.
# Cases listed in scripts/conformance_known_failures.txt (each with its
# reason) are counted apart. Exit status: 0 when every other case passed,
# 1 otherwise (a regression), 77 when DIR is absent.
set -u
here="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-}"
if [ -z "$dir" ]; then  # ../shared next to the checkout (or next to its worktree folder)
  dir="$here/../shared/conformance/stablehlo-interpret"
  [ -d "$dir" ] || dir="$here/../../shared/conformance/stablehlo-interpret"
fi
build="${2:-$here/build}"
launch="$build/launcher/hlo-launch"
if [ ! -d "$dir" ]; then
  echo "conformance: suite directory $dir not found; skipped"
  exit 77
fi
if [ ! -x "$launch" ]; then
  echo "conformance: $launch not built" >&2
  exit 2
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
log="${CONFORMANCE_LOG:-/tmp/conformance.$$.log}"
: > "$log"
known="$here/scripts/conformance_known_failures.txt"
total=0 passed=0 expected=0 unexpected=0
printf '%-44s %8s\n' "file" "passed"
while IFS= read -r f; do
  rel="${f#$dir/}"
  probes="$(mktemp -d)"
  out="$(timeout 300 "$launch" --quiet --probe-output-dir "$probes" --outfeed-dir "$probes" --split-input-file "$f" 2>&1 < /dev/null)"
  rm -rf "$probes"
  { echo "=== $rel"; echo "$out"; } >> "$log"
  n=$(printf '%s\n' "$out" | grep -c '^hlo-launch: case ')
  p=$(printf '%s\n' "$out" | grep -c '^hlo-launch: case .*: passed$')
  [ "$n" -eq 0 ] && n=1
  total=$((total + n)); passed=$((passed + p))
  note=""
  while IFS= read -r line; do  # each failed case: known (documented) or a regression
    key="$rel:$(printf '%s\n' "$line" | sed -E 's/.*:([0-9]+)\): FAILED$/\1/')"
    if grep -q "^$key " "$known" 2>/dev/null; then
      expected=$((expected + 1))
    else
      unexpected=$((unexpected + 1)); note="$note $key"
    fi
  done < <(printf '%s\n' "$out" | grep '^hlo-launch: case .*: FAILED$')
  if [ "$n" -gt 0 ] && ! printf '%s\n' "$out" | grep -q '^hlo-launch: case '; then
    unexpected=$((unexpected + 1)); note=" $rel (no case ran)"
  fi
  printf '%-44s %4d/%-4d%s\n' "$rel" "$p" "$n" "${note:+  UNEXPECTED:$note}"
done < <(find "$dir" -name '*.mlir' | sort)
echo "total: $passed of $total cases passed; $expected known failures (scripts/conformance_known_failures.txt); $unexpected unexpected (log: $log)"
[ "$unexpected" -eq 0 ]
