#!/bin/sh
# A stand-in for systemctl inside the package suite's Debian root, where no
# systemd runs, so that the maintainer scripts' switch between EVOK and iogate
# really starts and stops daemons. Installed as /usr/local/sbin/systemctl (ahead
# of /usr/bin on PATH); /run/systemd/system exists while it is in place.
#  - enable, disable, is-enabled, mask, unmask: the real systemctl, which edits
#    the symlinks offline (--root=/, as it would believe a systemd runs);
#  - start, stop, restart, try-restart, reload, is-active, daemon-reload:
#    simulated (a reload runs ExecReload= with $MAINPID, and fails as it fails). A start runs ExecStartPre= (all must succeed), then ExecStart=
#    in the background as User=, after stopping the units named by
#    Conflicts=; the main process's pid is kept in /run/stand-in-systemd.
# Lines of drop-ins in /etc/systemd/system/UNIT.d/*.conf come after the
# unit's, and an empty ExecStart= clears the earlier ones, as in systemd.
set -eu
REAL=/usr/bin/systemctl
RUN=/run/stand-in-systemd
mkdir -p "$RUN"

unit_lines() { # the unit file, then its drop-ins
	unit=$1
	for file in "/etc/systemd/system/$unit" "/lib/systemd/system/$unit"; do
		if [ -e "$file" ]; then cat "$file"; break; fi
	done
	for dropin in /etc/systemd/system/"$unit".d/*.conf; do
		[ -e "$dropin" ] && cat "$dropin"
	done
	return 0
}
values() { # values of a key, honouring "Key=" resets
	unit_lines "$1" | awk -v key="$2" 'index($0, key "=") == 1 { value = substr($0, length(key) + 2); if (value == "") n = 0; else list[++n] = value } END { for (i = 1; i <= n; i++) print list[i] }'
}
pid_of() { cat "$RUN/$1.pid" 2>/dev/null || true; }
running() { pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
as_user() { # as_user UNIT COMMAND [exec]: runs the command line as the unit's user and groups; exec: in place of this shell
	how=${3:-}
	user=$(values "$1" User | tail -n 1)
	dir=$(values "$1" WorkingDirectory | tail -n 1)
	if [ -n "$user" ]; then
		set -- setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups sh -c "cd '${dir:-/}' && exec $2"
	else
		set -- sh -c "cd '${dir:-/}' && exec $2"
	fi
	if [ "$how" = exec ]; then exec "$@"; fi
	"$@"
}
stop_unit() {
	if running "$1"; then
		pid=$(pid_of "$1")
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN/$1.pid"
}
start_unit() {
	running "$1" && return 0
	for other in $(values "$1" Conflicts); do stop_unit "$other"; done
	values "$1" ExecStartPre | while IFS= read -r line; do
		as_user "$1" "$line" >>"$RUN/$1.log" 2>&1 || { echo "stand-in systemctl: $1: ExecStartPre failed: $line" >>"$RUN/$1.log"; exit 1; }
	done || return 1
	exec_start=$(values "$1" ExecStart | tail -n 1)
	[ -n "$exec_start" ] || { echo "stand-in systemctl: $1 has no ExecStart" >&2; return 1; }
	as_user "$1" "$exec_start" exec >>"$RUN/$1.log" 2>&1 </dev/null &
	echo $! >"$RUN/$1.pid"
}
reload_unit() { # ExecReload= lines with $MAINPID, as systemd runs them; their output goes to the unit's log (the journal)
	main_pid=$(pid_of "$1")
	values "$1" ExecReload | while IFS= read -r line; do
		as_user "$1" "$(printf '%s' "$line" | sed "s/\$MAINPID/$main_pid/g")" >>"$RUN/$1.log" 2>&1 </dev/null || { echo "stand-in systemctl: $1: ExecReload failed: $line" >>"$RUN/$1.log"; exit 1; }
	done
}
unit_name() { case $1 in *.service) echo "$1" ;; *) echo "$1.service" ;; esac; }

quiet=
preset_mode=
while [ $# -gt 0 ]; do
	case $1 in
	--quiet | -q) quiet=1; shift ;;
	--system | --no-block | --no-reload | --no-pager | --root=*) shift ;;
	--preset-mode=*) preset_mode=$1; shift ;;
	*) break ;;
	esac
done
command=${1:-}
[ $# -gt 0 ] && shift
case $command in
enable | disable | is-enabled | mask | unmask | preset) exec "$REAL" --root=/ ${quiet:+--quiet} ${preset_mode:+"$preset_mode"} "$command" "$@" ;;
daemon-reload | reset-failed) exit 0 ;;
esac
status=0
for name in "$@"; do
	[ "$name" = -- ] && continue
	unit=$(unit_name "$name")
	case $command in
	start) start_unit "$unit" || status=1 ;;
	stop) stop_unit "$unit" ;;
	restart) stop_unit "$unit"; start_unit "$unit" || status=1 ;;
	try-restart) if running "$unit"; then stop_unit "$unit"; start_unit "$unit" || status=1; fi ;;
	reload) if running "$unit"; then reload_unit "$unit" || status=1; else status=1; fi ;;
	is-active) if running "$unit"; then [ -n "$quiet" ] || echo active; else [ -n "$quiet" ] || echo inactive; status=3; fi ;;
	*) echo "stand-in systemctl: $command is not simulated" >&2; exit 1 ;;
	esac
done
exit "$status"
