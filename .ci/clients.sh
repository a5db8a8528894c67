#!/usr/bin/env bash
# The compatibility suite: Unipi's own EVOK clients (the web panel in headless
# Chromium behind nginx, and the Node-RED nodes in Node-RED from npm) against
# the built daemon. Installs the Debian packages it needs, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(nginx-light chromium curl)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends "${missing[@]}"
fi
timeout --signal=INT --kill-after=30s 20m npm run test:clients
