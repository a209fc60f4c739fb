#!/usr/bin/env bash
# Compares head with base: the Markdown goes to the job summary, regressed functions become
# annotations, and the exit status is kept for the last step (the reports are uploaded first).
set -uo pipefail
out="$RUNNER_TEMP/liftoff-launch-check/out"
arguments=(--threshold "$INPUT_THRESHOLD" --false-discovery-rate "$INPUT_FALSE_DISCOVERY_RATE" --diff-out "$out")
if [ -n "${INPUT_GATE:-}" ]; then arguments+=(--gate "$INPUT_GATE"); fi
"$LIFTOFF" compare "$out/runs/base" "$out/runs/head" "${arguments[@]}" --format markdown -o "$out/comparison.md"
status=$?
if [ "$status" = 1 ]; then
    echo "::error title=Liftoff::The comparison failed; see the log above."
    echo "status=1" >> "$GITHUB_OUTPUT"
    exit 0
fi
"$LIFTOFF" compare "$out/runs/base" "$out/runs/head" "${arguments[@]}" --format json -o "$out/comparison.json" >/dev/null
cat "$out/comparison.md" >> "$GITHUB_STEP_SUMMARY"
python3 "$GITHUB_ACTION_PATH/scripts/action/annotate.py" "$out/comparison.json"
echo "verdict=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' "$out/comparison.json")" >> "$GITHUB_OUTPUT"
echo "status=$status" >> "$GITHUB_OUTPUT"
