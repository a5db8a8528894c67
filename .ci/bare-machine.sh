#!/usr/bin/env bash
# The README's `npm ci && npm test`, as a new user meets it: a fresh clone with
# nothing beside it (no ../shared), on a machine where none of the interop
# peers can be run. The peers this CI machine may already have are hidden in a
# private mount namespace (each program is covered by /dev/null, so running
# it fails), which lasts only for this one command. So is the C compiler: the
# build then leaves out the optional malloc_trim addon, and the daemon must
# run without it. Afterwards, nothing may have been written to EVOK's folders.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/iogate-bare-XXXXXX)
trap 'rm -rf "$work"' EXIT
git clone -q "$repo" "$work/iogate"

evok_state() { { find /var/lib/evok /etc/evok -printf '%p %s %T@ %m\n' 2>/dev/null || true; } | sort; }
before=$(evok_state)

peers=(socat python3 python mbpoll mosquitto mosquitto_sub mosquitto_pub nginx chromium chromium-browser
       owserver owread owdir wrk cc gcc c99 x86_64-linux-gnu-gcc)

unshare --mount --propagation private bash -euo pipefail -s "$work/iogate" "${peers[@]}" <<'INNER'
clone=$1; shift
hidden=()
for name in "$@"; do
  while read -r path; do
    [ -n "$path" ] || continue
    for target in "$path" "$(readlink -f "$path")"; do
      [ -e "$target" ] && mountpoint -q "$target" || { [ -e "$target" ] && mount --bind /dev/null "$target" && hidden+=("$target"); } || true
    done
  done < <(type -ap "$name" 2>/dev/null | sort -u)
done
# A per-user Python installation (pyenv) is hidden as a whole.
for dir in "${PYENV_ROOT:-}" "$HOME/.pyenv"; do
  [ -n "$dir" ] && [ -d "$dir" ] && ! mountpoint -q "$dir" && mount -t tmpfs none "$dir" && hidden+=("$dir")
done
echo "bare machine: hidden ${#hidden[@]} paths: ${hidden[*]:-none}"
for name in socat python3 mbpoll mosquitto nginx chromium owserver cc gcc; do
  if "$name" --version >/dev/null 2>&1 || "$name" -V >/dev/null 2>&1; then
    echo "bare machine: $name still runs" >&2; exit 1
  fi
done
cd "$clone"
[ ! -e ../shared ] || { echo "bare machine: ../shared is beside the clone" >&2; exit 1; }
echo "bare machine: node $(node --version), npm $(npm --version), in $clone"
npm ci --no-audit --no-fund
timeout --signal=INT --kill-after=30s 20m npm test
INNER

after=$(evok_state)
if [ "$before" != "$after" ]; then
  echo "bare machine: the tests changed /var/lib/evok or /etc/evok:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "bare machine: npm ci && npm test passed; /var/lib/evok and /etc/evok untouched"
