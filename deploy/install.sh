#!/bin/sh
# Installs iogate from a folder holding iogate.js (and prebuilds/), as built by
# `npm run build` into dist/. Copy-and-run: no npm, no node_modules.
# Usage (as root, on the PLC): sh install.sh [DIST_DIR]
set -eu
src=${1:-$(dirname "$0")/../dist}
[ -f "$src/iogate.js" ] || { echo "no iogate.js in $src (run npm run build first)" >&2; exit 1; }
command -v node >/dev/null || { echo "node is required (Debian: apt-get install nodejs)" >&2; exit 1; }

id iogate >/dev/null 2>&1 || useradd --system --home /var/lib/iogate --shell /usr/sbin/nologin iogate
install -d -o root -g root -m 0755 /opt/iogate
install -m 0755 "$src/iogate.js" /opt/iogate/iogate.js
[ ! -f "$src/iogate-sim.js" ] || install -m 0755 "$src/iogate-sim.js" /opt/iogate/iogate-sim.js
if [ -d "$src/prebuilds" ]; then
  rm -rf /opt/iogate/prebuilds
  cp -r "$src/prebuilds" /opt/iogate/prebuilds
fi
install -d -o iogate -g iogate -m 0750 /var/lib/iogate
# The EVOK alias file stays where EVOK kept it, so a switch back loses nothing.
install -d -o iogate -g iogate -m 0750 /var/lib/evok
[ ! -f /var/lib/evok/alias.yaml ] || chown iogate:iogate /var/lib/evok/alias.yaml
install -m 0644 "$(dirname "$0")/iogate.service" /etc/systemd/system/iogate.service
systemctl daemon-reload
echo "installed. To replace EVOK: systemctl disable --now evok && systemctl enable --now iogate"
