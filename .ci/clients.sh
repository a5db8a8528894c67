#!/usr/bin/env bash
# The compatibility suite: Unipi's own EVOK clients (the web panel in headless
# Chromium behind nginx, and the Node-RED nodes in Node-RED from npm) against
# the built daemon. Installs the Debian packages it needs, then runs it.
set -euo pipefail
. "$(dirname "$0")/debian-packages.sh"
cd "$(dirname "$0")/.."
# openssl makes the CA that nginx must refuse in the panel-over-TLS test.
packages=(nginx-light chromium curl openssl)
ensure_debian_packages "${packages[@]}"
# Run alone, the suite still sends its HTTP API traffic through Prism.
if [ -z "${IOGATE_PRISM:-}" ]; then
  IOGATE_PRISM=$(bash .ci/prism.sh)
  export IOGATE_PRISM
fi
timeout --signal=INT --kill-after=30s 20m npm run test:clients
