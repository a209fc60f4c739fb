#!/usr/bin/env bash
# Keeps the launch history on a branch of the repository's origin (one JSON file per commit, so
# concurrent pushes merge): `record` adds head's launch and pushes it, retrying when another job
# pushed first; `check` adds head's launch to a copy of the history and analyzes it, the change
# points in the job summary, failing when head's own launch is one that made a metric worse.
set -uo pipefail
mode="${INPUT_HISTORY:-}"
[ -z "$mode" ] && exit 0
case "$mode" in record | check) ;; *)
    echo "::error title=Liftoff::history is record or check, not '$mode'."
    exit 1
    ;;
esac
work="$RUNNER_TEMP/liftoff-launch-check"
store="$work/history"
branch="${INPUT_HISTORY_BRANCH:-liftoff-history}"
origin="$(git -C "$GITHUB_WORKSPACE" remote get-url origin)" || { echo "::error title=Liftoff::The workspace has no origin to keep the history on."; exit 1; }
sha="$(git -C "$GITHUB_WORKSPACE" rev-parse HEAD)"
rm -rf "$store"
if git ls-remote --exit-code --heads "$origin" "$branch" >/dev/null 2>&1; then
    git clone --quiet --branch "$branch" --single-branch "$origin" "$store" || exit 1
else
    git init --quiet "$store" && git -C "$store" checkout --quiet -b "$branch" && git -C "$store" remote add origin "$origin"
fi
committer=(-c user.name="liftoff" -c user.email="liftoff@users.noreply.github.com")
if [ "$mode" = record ]; then
    time="$(git -C "$GITHUB_WORKSPACE" show -s --format=%cI HEAD)"
    "$LIFTOFF" history add "$work/out/runs/head" --commit "$sha" --branch "${GITHUB_REF_NAME:-}" --time "$time" --store "$store/entries" || exit 1
    git -C "$store" add -A
    git -C "$store" "${committer[@]}" commit --quiet -m "Launch of $sha" || exit 1
    for attempt in 1 2 3 4 5; do
        if git -C "$store" push --quiet origin "HEAD:$branch" 2>/dev/null; then
            echo "Added $sha to the history on $branch."
            exit 0
        fi
        # Another job pushed first: its entries are other files, so a rebase keeps both.
        sleep "$attempt"
        git -C "$store" "${committer[@]}" pull --quiet --rebase origin "$branch" || exit 1
    done
    echo "::error title=Liftoff::Could not push the launch history to $branch after 5 attempts."
    exit 1
fi
# check: head's launch as the newest point of a copy of the history, never pushed.
"$LIFTOFF" history add "$work/out/runs/head" --commit "$sha" --branch "${GITHUB_BASE_REF:-${GITHUB_REF_NAME:-}}" \
    --time "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --store "$store/entries" || exit 1
"$LIFTOFF" history analyze --store "$store/entries" --format markdown >> "$GITHUB_STEP_SUMMARY"
# Counted launches decide on their instructions: wall time on shared runners is mostly noise, and
# a change point in it would fail pull requests that changed nothing.
decided=()
if [ -n "${INPUT_COUNT:-}" ]; then
    decided=(--metric instructions)
    echo "The check decides on counted instructions only." >> "$GITHUB_STEP_SUMMARY"
else
    echo "The check decides on every metric, wall times included (set count: instructions to decide on counts)." >> "$GITHUB_STEP_SUMMARY"
fi
"$LIFTOFF" history analyze --store "$store/entries" --fail-on-change --recent 1 "${decided[@]}" >/dev/null
status=$?
if [ "$status" = 2 ]; then
    echo "::error title=Liftoff::This launch is a change point of the history: a metric got worse (see the summary)."
fi
exit "$status"
