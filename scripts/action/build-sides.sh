#!/usr/bin/env bash
# Checks the base commit out beside the workspace and builds both sides with the same command.
set -euo pipefail
if [ -z "${INPUT_BASE_REF:-}" ]; then
    echo "::error title=Liftoff::No base commit to compare against: give base-ref (outside pull requests there is no default)."
    exit 1
fi
work="$RUNNER_TEMP/liftoff-launch-check"
rm -rf "$work/base"
mkdir -p "$work/out"
git -C "$GITHUB_WORKSPACE" worktree add --force --detach "$work/base" "$INPUT_BASE_REF" >/dev/null
echo "::group::Build head"
(cd "$GITHUB_WORKSPACE" && bash -c "$INPUT_BUILD")
echo "::endgroup::"
echo "::group::Build base ($INPUT_BASE_REF)"
(cd "$work/base" && bash -c "$INPUT_BUILD")
echo "::endgroup::"
