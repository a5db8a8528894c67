#!/usr/bin/env bash
# Debian packages the interop suite talks to: independent Modbus peers
# (mbpoll/libmodbus, pymodbus), a serial pty pair (socat), an MQTT broker, and
# owserver with its fake 1-Wire adapter (ow-shell: an independent owserver client).
set -euo pipefail
packages=(socat mbpoll python3-pymodbus mosquitto mosquitto-clients owserver ow-shell)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
