#!/usr/bin/env bash
# Builds the liftoff command and its agent from the action's own checkout, unless LIFTOFF names
# a built one already; later steps find it in LIFTOFF.
set -euo pipefail
if [ -n "${LIFTOFF:-}" ] && [ -x "$LIFTOFF" ]; then
    echo "Using $LIFTOFF."
else
    swift build -c release --product liftoff --package-path "$GITHUB_ACTION_PATH"
    swift build -c release --product LiftoffAgent --package-path "$GITHUB_ACTION_PATH"
    swift build -c release --product LiftoffAudit --package-path "$GITHUB_ACTION_PATH"
    LIFTOFF="$(swift build -c release --show-bin-path --package-path "$GITHUB_ACTION_PATH")/liftoff"
fi
echo "LIFTOFF=$LIFTOFF" >> "$GITHUB_ENV"
