# SPDX-License-Identifier: Apache-2.0
# Shared by tests/icectl/*.sh (sourced after `set -euo pipefail`):
#
#   icectl_test NAME "VAR VAR ..." TOOL...
#       exit 77 unless every TOOL is installed; make $tmp (/tmp/ice-test-NAME.*)
#       and, on exit, kill the processes whose PIDs the named variables hold
#       (in that order; they start empty) and remove $tmp; S=$tmp/redis.sock
#   fail MSG            print MSG and the tail of every $tmp/*.log, *.out; exit 1
#   wait_for SEC CMD... run CMD every 50 ms until it succeeds or SEC pass
#   redis_start ARGS... redis-server on $S alone (no TCP, no persistence), its
#                       PID in redis_pid; ARGS are more redis-server options

icectl_test() {
	local name=$1 t
	ICECTL_PIDVARS=$2
	shift 2
	for t in $ICECTL_PIDVARS; do
		printf -v "$t" '%s' ""
	done
	for t in "$@"; do
		command -v "$t" >/dev/null || {
			echo "skipped: $t not installed"
			exit 77
		}
	done
	tmp=$(mktemp -d "/tmp/ice-test-$name.XXXXXX")
	S=$tmp/redis.sock
	trap icectl_cleanup EXIT
}

icectl_cleanup() {
	local v p
	set +e
	for v in $ICECTL_PIDVARS; do
		p=${!v:-}
		[ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}

fail() {
	local f
	echo "FAIL: $*"
	for f in "$tmp"/*.log "$tmp"/*.out; do
		[ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
	done
	exit 1
}

wait_for() { # seconds, command...
	local n=$(($1 * 20)) i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

redis_start() {
	redis-server --port 0 --unixsocket "$S" --unixsocketperm 700 --dir "$tmp" --save '' \
		--appendonly no "$@" >>"$tmp/redis.log" 2>&1 &
	redis_pid=$!
}
