#!/usr/bin/env bash
# Debian packages the interop suite talks to: independent Modbus peers
# (mbpoll/libmodbus, pymodbus), a serial pty pair (socat), an MQTT broker, and
# owserver with its fake 1-Wire adapter (ow-shell: an independent owserver client).
set -euo pipefail
. "$(dirname "$0")/debian-packages.sh"
packages=(socat mbpoll python3-pymodbus mosquitto mosquitto-clients owserver ow-shell)
ensure_debian_packages "${packages[@]}"
