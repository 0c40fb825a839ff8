#!/usr/bin/env bash
# Prepares the deepstrike Node SDK at both versions the conformance tests run against
# (test/sdk/, scripts/sdk/run-sdk-conformance.ts), from the tarballs in ../shared/deepstrike-sdk:
#   .sdk/0.2.36/node   the seed's SDK (commit 5c2a79c): its session-log tests, its snapshot fold, its declarations
#   .sdk/0.2.60/node   SDK v0.2.60, built, with the native core it loads from crates/deepstrike-node
# Needs the npm registry and nothing else from outside. Idempotent: a version whose tarball and
# recipe have not changed since it was prepared is left as it is. Quiet unless something fails.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)

# The team's shared folder beside the repository (../shared); for a clone made elsewhere, beside
# the repository it was cloned from; or OS_AUDIT_SHARED_DIR.
find_tarballs() {
  local origin candidates=()
  [ -n "${OS_AUDIT_SHARED_DIR:-}" ] && candidates+=("$OS_AUDIT_SHARED_DIR")
  candidates+=("$repo/../shared")
  origin=$(git -C "$repo" remote get-url origin 2>/dev/null || true)
  [ -d "$origin" ] && candidates+=("$origin/../shared")
  for shared in "${candidates[@]}"; do
    if [ -d "$shared/deepstrike-sdk" ]; then (cd "$shared/deepstrike-sdk" && pwd); return; fi
  done
  echo "prepare-sdk: no deepstrike-sdk folder in ${candidates[*]} (set OS_AUDIT_SHARED_DIR to the shared folder)" >&2
  exit 1
}
tarballs=$(find_tarballs)
sdk_root="$repo/.sdk"
# The one build of the native core the registry has; 0.2.60 runs on it (README of the tarballs).
core_package="@deepstrike/core-linux-x64-gnu@0.2.73"
# Part of every stamp: a change to this recipe prepares again.
recipe="4 $core_package"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Runs a step with its output kept aside, shown only when it fails.
quietly() {
  if ! "$@" >"$log" 2>&1; then
    echo "prepare-sdk: failed: $*" >&2
    cat "$log" >&2
    exit 1
  fi
}

# The native core's .node file, fetched once into .sdk/core/.
fetch_core() {
  local dir="$sdk_root/core"
  if [ -f "$dir/deepstrike-core.linux-x64-gnu.node" ]; then return; fi
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && quietly npm pack --silent "$core_package")
  tar -xzf "$dir"/*.tgz -C "$dir" --strip-components=1 package/deepstrike-core.linux-x64-gnu.node
}

# Extracts one SDK tarball into .sdk/VERSION, installs its dependencies (without
# @deepstrike/core, which the registry does not have) and runs `extra` steps in node/.
prepare_version() {
  local version=$1 tarball="$tarballs/$2"
  shift 2
  local dir="$sdk_root/$version"
  local stamp
  stamp="$recipe $(sha256sum "$tarball" | cut -d' ' -f1)"
  if [ -f "$dir/.prepared" ] && [ "$(cat "$dir/.prepared")" = "$stamp" ]; then return; fi
  rm -rf "$dir" && mkdir -p "$dir"
  tar -xzf "$tarball" -C "$dir" --strip-components=1
  (
    cd "$dir/node"
    quietly npm pkg delete 'dependencies.@deepstrike/core'
    quietly npm install --no-audit --no-fund --no-save
    for step in "$@"; do "$step" "$dir"; done
  )
  echo "$stamp" >"$dir/.prepared"
}

# The SDK loads its core from ../crates/deepstrike-node when an index.js is there. Its
# package.json says CommonJS: the nearest one otherwise is os-audit's, which says "module".
install_core() {
  local crate="$1/crates/deepstrike-node"
  mkdir -p "$crate"
  cp "$sdk_root/core/deepstrike-core.linux-x64-gnu.node" "$crate/"
  echo "module.exports = require('./deepstrike-core.linux-x64-gnu.node')" >"$crate/index.js"
  echo '{"private": true, "type": "commonjs", "main": "index.js"}' >"$crate/package.json"
}

# dist/, which the runner's scripted runs import as an application would.
build_sdk() {
  quietly npx tsc
}

# Its declarations only (0.2.36 does not build whole without its core), for the type check of
# test/sdk/sdk-types.spec.ts.
declare_sdk() {
  quietly npx tsc --declaration --emitDeclarationOnly --outDir decl
}

mkdir -p "$sdk_root"
fetch_core
prepare_version 0.2.36 deepstrike-node-5c2a79c.tar.gz declare_sdk
prepare_version 0.2.60 deepstrike-node-v0.2.60.tar.gz install_core build_sdk
