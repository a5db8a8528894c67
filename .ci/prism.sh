#!/usr/bin/env bash
# Stoplight's Prism, the validating proxy the interop and client suites send
# their HTTP API traffic through (test/helpers/prism.ts). Pinned, and installed
# here rather than as a devDependency: it is 185 packages and 90 MB, about as
# much again as everything `npm ci` installs, and npm test never needs it.
# Prints the path of the prism binary.
set -euo pipefail
cd "$(dirname "$0")/.."
version=5.14.2
home=node_modules/.cache/iogate-prism/$version
if [ ! -x "$home/node_modules/.bin/prism" ]; then
  mkdir -p "$home"
  echo '{"name":"iogate-prism","private":true}' > "$home/package.json"
  timeout 10m npm install --prefix "$home" --no-audit --no-fund --omit=dev "@stoplight/prism-cli@$version" >&2
fi
echo "$PWD/$home/node_modules/.bin/prism"
