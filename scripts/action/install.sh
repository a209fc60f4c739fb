#!/usr/bin/env bash
# Installs the Debian packages Liftoff builds and samples with, when they are missing.
set -euo pipefail
missing=()
for package in libunwind-dev libdw-dev liblzma-dev; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
    sudo=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
