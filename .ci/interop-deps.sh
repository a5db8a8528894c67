#!/usr/bin/env bash
# Debian packages the interop suite talks to: independent Modbus peers
# (mbpoll/libmodbus, pymodbus), a serial pty pair (socat), an MQTT broker, and
# owserver with its fake 1-Wire adapter (ow-shell: an independent owserver client),
# promtool (prometheus) to check the /metrics exposition, and iproute2 (ip netns)
# for the fleet's network partition, sslscan, openssl (also the CA and
# certificates of the MQTT and Sparkplug TLS tests) and curl for the HTTPS port.
set -euo pipefail
. "$(dirname "$0")/debian-packages.sh"
# pymodbus imports pyserial even for its TCP server, and its async serial
# server needs serial-asyncio: Debian lists both only as recommends, which
# these installs skip, so they are named here.
packages=(socat mbpoll python3-pymodbus python3-serial python3-serial-asyncio python3-jinja2 mosquitto mosquitto-clients owserver ow-shell prometheus iproute2 sslscan openssl curl)
ensure_debian_packages "${packages[@]}"
