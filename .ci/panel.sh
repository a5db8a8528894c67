#!/usr/bin/env bash
# CI: the built-in control panel in Debian's Chromium (driven by
# playwright-core; no browser is ever downloaded): test/clients/panel.test.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends chromium
fi
node build.mjs
node --import tsx --test --test-timeout=300000 --test-reporter=spec --test-concurrency=1 test/clients/panel.test.ts
