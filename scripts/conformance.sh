#!/usr/bin/env bash
# Runs the StableHLO interpreter's conformance suite (stablehlo/tests/interpret,
# kept outside this tree) through hlo-launch --split-input-file in batch mode:
# every case of every file in ONE MPI job, each case on its own grid. Prints
# a per-file table (cases passed / run) and the totals.
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
dir="$(cd "$dir" && pwd)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_pml=ob1
log="${CONFORMANCE_LOG:-${TMPDIR:-/tmp}/conformance.$$.log}"
known="$here/scripts/conformance_known_failures.txt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
find "$dir" -name '*.mlir' | sort > "$work/list"
mkdir "$work/probes" "$work/outfeeds"
timeout 1500 "$launch" --quiet --probe-output-dir "$work/probes" --outfeed-dir "$work/outfeeds" \
  --split-input-file --programs "$work/list" > "$work/out" 2> "$work/err" < /dev/null
status=$?
{ cat "$work/out"; echo "=== stderr (exit $status)"; cat "$work/err"; } > "$log"
# One line per case: "hlo-launch: program <dir>/<rel>:<line>: passed" or ": FAILED: <reason>".
awk -v dir="$dir/" -v known="$known" '
  BEGIN {
    while ((getline line < known) > 0) {
      if (line ~ /^#/ || line == "") continue
      split(line, f, " "); isknown[f[1]] = 1
    }
  }
  /^hlo-launch: program / {
    rest = substr($0, length("hlo-launch: program ") + 1)
    if (index(rest, dir) != 1) next
    rest = substr(rest, length(dir) + 1)
    m = match(rest, /:[0-9]+: (passed|FAILED)/)
    if (!m) next
    rel = substr(rest, 1, m - 1)
    line = substr(rest, m + 1); sub(/:.*/, "", line)
    key = rel ":" line
    verdict = substr(rest, m) ~ /^:[0-9]+: passed/ ? "passed" : "FAILED"
    if (!(rel in n)) { order[++files] = rel; n[rel] = 0; p[rel] = 0; note[rel] = "" }
    n[rel]++; total++
    if (verdict == "passed") { p[rel]++; passed++ }
    else if (key in isknown) expected++
    else { unexpected++; note[rel] = note[rel] " " key }
  }
  END {
    printf "%-44s %8s\n", "file", "passed"
    for (i = 1; i <= files; i++) {
      r = order[i]
      printf "%-44s %4d/%-4d%s\n", r, p[r], n[r], note[r] == "" ? "" : "  UNEXPECTED:" note[r]
    }
    printf "total: %d of %d cases passed; %d known failures (scripts/conformance_known_failures.txt); %d unexpected\n", passed, total, expected, unexpected
    exit (unexpected > 0 || total == 0) ? 1 : 0
  }' "$work/out"
verdict=$?
files_run=$(grep -c '^hlo-launch: program ' "$work/out")
echo "(log: $log; hlo-launch exit $status; $(tail -1 "$work/out"))"
if [ "$files_run" -eq 0 ]; then
  echo "conformance: no case ran" >&2
  tail -20 "$work/err" >&2
  exit 1
fi
exit $verdict
