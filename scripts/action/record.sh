#!/usr/bin/env bash
# Launches base and head interleaved (A B B A …), each from its own checkout.
set -euo pipefail
work="$RUNNER_TEMP/liftoff-launch-check"
quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }
base="sh -c $(quote "cd $(quote "$work/base") && exec $INPUT_RUN")"
arguments=(record --runs "$INPUT_RUNS" --out "$work/out/runs" --baseline "$base")
if [ -n "${INPUT_READY:-}" ]; then arguments+=(--ready "$INPUT_READY"); fi
if [ -n "${INPUT_COUNT:-}" ]; then
  # Counted launches run under valgrind's callgrind.
  if ! command -v valgrind >/dev/null 2>&1; then
    ${SUDO-sudo} env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
  fi
  arguments+=(--count "$INPUT_COUNT" --count-runs "${INPUT_COUNT_RUNS:-3}")
fi
"$LIFTOFF" "${arguments[@]}" -- sh -c "cd $(quote "$GITHUB_WORKSPACE") && exec $INPUT_RUN"
