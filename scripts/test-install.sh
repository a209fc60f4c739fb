#!/usr/bin/env bash
# make install into a temporary prefix; the installation moved to another folder; the moved
# liftoff profiles /bin/true from a third folder with no Swift toolchain in sight (as root, the
# toolchain's folder is hidden under an empty file system in a mount namespace of this script's
# own) and loads the agent from the moved folder; its man page lists every command; its
# completion scripts parse; make uninstall removes every file. Exits non-zero at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$(pwd)
scratch=$(mktemp -d /tmp/liftoff-install-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "test-install: FAILED: $*" >&2; exit 1; }

make install PREFIX="$scratch/first"
mv "$scratch/first" "$scratch/moved"
prefix="$scratch/moved"
liftoff="$prefix/bin/liftoff"

for file in bin/liftoff lib/liftoff/libLiftoffAgent.so lib/liftoff/libLiftoffAudit.so lib/liftoff/libLiftoffCount.so \
    lib/liftoff/Liftoff_LiftoffDemo.resources/catalog.json share/man/man1/liftoff.1 \
    share/bash-completion/completions/liftoff share/zsh/site-functions/_liftoff \
    share/fish/vendor_completions.d/liftoff.fish; do
    [ -e "$prefix/$file" ] || fail "make install did not write $file"
done

# The executable needs no Swift library: none is named, and no run path leads to a toolchain.
if readelf -d "$liftoff" | grep -E 'NEEDED.*libswift|NEEDED.*libFoundation|NEEDED.*libdispatch'; then
    fail "bin/liftoff links the Swift runtime's shared libraries"
fi
swift_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc || command -v swift)")")")/lib
if readelf -d "$liftoff" | grep -F "$swift_lib"; then fail "bin/liftoff's run path leads to the toolchain"; fi

# Run the moved liftoff from another folder, with the toolchain hidden when this can be done.
elsewhere="$scratch/elsewhere"
mkdir -p "$elsewhere"
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
run_isolated() {
    if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
        # Only the toolchain's own folder (such as /opt/swift) is hidden, never / or /usr.
        case "$toolchain" in /|/usr|/usr/local) hide="" ;; *) hide="$toolchain" ;; esac
        unshare --mount --propagation private sh -c '
            [ -z "$1" ] || mount -t tmpfs none "$1"; shift
            cd "$1"; shift
            home=$1; shift
            env -i PATH=/usr/bin:/bin HOME="$home" "$@"' sh "$hide" "$elsewhere" "$scratch/home" "$@"
    else
        (cd "$elsewhere" && env -i PATH=/usr/bin:/bin HOME="$scratch/home" "$@")
    fi
}
mkdir -p "$scratch/home"
version=$(run_isolated "$liftoff" --version)
[ -n "$version" ] || fail "liftoff --version printed nothing"
run_isolated "$liftoff" profile --out profile -- /bin/true > "$scratch/profile.out" \
    || { cat "$scratch/profile.out"; fail "the moved liftoff could not profile /bin/true"; }
grep -q "Profiled /bin/true: exit status 0" "$scratch/profile.out" || { cat "$scratch/profile.out"; fail "no headline"; }
[ -s "$elsewhere/profile/profile.json" ] || fail "no profile.json in the folder liftoff was run from"
python3 -c 'import sys; sys.exit(0 if ("\"" + sys.argv[2] + "\"") in open(sys.argv[1]).read().replace("\\/", "/") else 1)' \
    "$elsewhere/profile/profile.json" "$prefix/lib/liftoff/libLiftoffAgent.so" \
    || fail "the profiled program did not load the agent from the moved installation ($prefix/lib/liftoff)"
# Without --out the profile goes to the user's cache, not to the folder liftoff runs in.
run_isolated "$liftoff" profile -- /bin/true > /dev/null || fail "liftoff profile without --out failed"
[ -s "$scratch/home/.cache/liftoff/profiles/latest/profile.json" ] || fail "no profile under ~/.cache/liftoff/profiles/latest"
# The demo's bundled files come from the installation too.
run_isolated "$liftoff" demo --out demo > /dev/null || fail "the moved liftoff could not run its demo"
[ -s "$elsewhere/demo/index.html" ] || fail "the demo wrote no report"
# Its Swift functions are named, in full and short, by the runtime linked into liftoff.
mangled=$(python3 -c 'import json, sys; print(sum(f["name"].startswith(("$s", "_$s")) for f in json.load(open(sys.argv[1]))["frames"]))' \
    "$elsewhere/demo/profile.json")
[ "$mangled" = 0 ] || fail "the demo's profile has $mangled frames with mangled Swift names"

# The man page names every command liftoff lists.
commands=$("$liftoff" --help | sed -n '/^SUBCOMMANDS:/,/^$/p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[ -n "$commands" ] || fail "liftoff --help lists no command"
for command in $commands; do
    grep -qx "\.It Em $command" "$prefix/share/man/man1/liftoff.1" || fail "the man page does not list $command"
done
if command -v man > /dev/null; then
    man -l "$prefix/share/man/man1/liftoff.1" 2>&1 | grep -q "liftoff profile" || fail "man cannot render the page"
fi

# The completion scripts parse in their shells.
bash -n "$prefix/share/bash-completion/completions/liftoff" || fail "the bash completion script does not parse"
if command -v zsh > /dev/null; then zsh -n "$prefix/share/zsh/site-functions/_liftoff" || fail "the zsh completion script does not parse"; fi
if command -v fish > /dev/null; then fish -n "$prefix/share/fish/vendor_completions.d/liftoff.fish" || fail "the fish completion script does not parse"; fi
grep -q "profile" "$prefix/share/bash-completion/completions/liftoff" || fail "the bash completions do not name profile"

# make uninstall leaves none of the files behind.
make uninstall PREFIX="$prefix"
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"

echo "test-install: passed (liftoff $version: installed, moved, run from $elsewhere without the toolchain at $toolchain, man page lists: $(echo $commands), uninstalled)"
