#!/usr/bin/env bash
# The agent's local IPC and privilege, for real (docs/security.md, "Local
# IPC"): a temporary group and two system users (one in the group, one not),
# a private redis-server on a unix socket, the real ice-agent (root, --no-bpf,
# on lo with a made-up address, --group of that group) and ipc_peer run as
# those users (setpriv):
#   - the agent refuses a world-writable stale socket and a control block
#     that is a link, naming the path and what is wrong, and leaves them;
#     it refuses the controller's private key, or a world-writable public
#     key file, as its plan_pubkeys (keys from icectl keygen);
#   - its socket and control block are root:<group> 0660, it keeps no
#     capabilities and says so;
#   - the member's events reach it (Redis event stream); the other user's
#     are refused by the kernel (EACCES);
#   - the member's transport (real engines, a QP over loopback) maps the
#     block, the agent reads the QP, applies a signed plan to it and the
#     transport moves to the planned source port; the other user's
#     transport cannot map the block;
#   - the plans' key rotated while it runs: a plan of an untrusted key is
#     refused as "unknown key id"; the new public key appended to its file,
#     the new key's plans apply; the old one dropped, its plans are refused;
#   - SIGTERM removes the socket and the block.
# Needs root, setpriv, groupadd/useradd and redis-server; exits 77 without.
# The group and users (ice-prefixed, with this shell's pid) are removed on
# exit, whatever happens.
set -euo pipefail

ICE_AGENT=${ICE_AGENT:?path of ice-agent}
ICE_IPC_PEER=${ICE_IPC_PEER:?path of ipc_peer}
ICECTL=${ICECTL:?path of icectl}
skip() {
	echo "skipped: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (creates a group and users)"
for t in setpriv groupadd groupdel useradd userdel redis-server redis-cli; do
	command -v "$t" >/dev/null || skip "$t not installed"
done

G=icetg$$ U=icetu$$ O=iceto$$
ADDR=127.97.$(($$ / 250 % 250)).$(($$ % 250 + 1))
PEER=127.97.$(($$ / 250 % 250)).$(($$ % 250 + 2))
F=ipct H=h$$
tmp=$(mktemp -d /tmp/ice-test-agent-ipc.XXXXXX)
chmod 0755 "$tmp" # the users reach the socket under it
run=$tmp/run
shm=/dev/shm/ice-ctrl-$ADDR
agent_pid="" redis_pid="" peer_pid=""

cleanup() {
	set +e
	for p in $peer_pid $agent_pid $redis_pid; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	userdel "$U" 2>/dev/null
	userdel "$O" 2>/dev/null
	groupdel "$G" 2>/dev/null
	rm -f "$shm"
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log "$tmp"/*.out; do
		[ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
	done
	exit 1
}

wait_for() { # seconds, command...
	local n=$(($1 * 20))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

groupadd -r "$G"
useradd -r -M -N -g "$G" -d /nonexistent -s /usr/sbin/nologin "$U"
useradd -r -M -N -g nogroup -d /nonexistent -s /usr/sbin/nologin "$O"
as_member() { setpriv --reuid "$U" --regid "$G" --init-groups -- "$@"; }
as_other() { setpriv --reuid "$O" --regid nogroup --clear-groups -- "$@"; }

redis-server --port 0 --unixsocket "$tmp/redis.sock" --unixsocketperm 700 --dir "$tmp" \
	--save '' --appendonly no >"$tmp/redis.log" 2>&1 &
redis_pid=$!
rc() { redis-cli -s "$tmp/redis.sock" "$@"; }
wait_for 10 rc ping >/dev/null 2>&1 || fail "redis-server did not start"
"$ICECTL" keygen --out "$tmp" --name plan >/dev/null || fail "icectl keygen"

agent_args=(--nic lo --addr "$ADDR" --run-dir "$run" --redis "unix:$tmp/redis.sock"
	--fabric "$F" --host "$H" --interval 100ms --no-bpf --plan-pubkeys "$tmp/plan.pub"
	--epoch-file none --group "$G")

# 1. what it refuses at start, and leaves where it is
mkdir -m 0755 "$run"
python3 -c "import socket,sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(sys.argv[1])" \
	"$run/agent-$ADDR.sock"
chmod 0666 "$run/agent-$ADDR.sock"
if "$ICE_AGENT" "${agent_args[@]}" >"$tmp/refuse1.out" 2>&1; then
	fail "the agent started beside a world-writable socket"
fi
grep -q "event socket $run/agent-$ADDR.sock mode 0666 gives others access" "$tmp/refuse1.out" ||
	fail "no reason given for the stale socket"
[ -S "$run/agent-$ADDR.sock" ] || fail "the refused socket was removed"
rm -f "$run/agent-$ADDR.sock"
ln -s "$tmp/plan.key" "$shm"
if "$ICE_AGENT" "${agent_args[@]}" >"$tmp/refuse2.out" 2>&1; then
	fail "the agent started with a link as its control block"
fi
grep -q "control block $shm is a symbolic link" "$tmp/refuse2.out" ||
	fail "no reason given for the link"
[ -L "$shm" ] || fail "the link was removed"
rm -f "$shm"
echo "refused: a world-writable stale socket, a link as control block"
# the plans' keys: the private key, or a public key others may rewrite
cp "$tmp/plan.pub" "$tmp/loose.pub"
chmod 0666 "$tmp/loose.pub"
for bad in "plan.key:$tmp/plan.key:1: a private key; an agent holds public keys only" \
	"loose.pub:public key file $tmp/loose.pub is writable by group or others (mode 0666)"; do
	if "$ICE_AGENT" "${agent_args[@]}" --plan-pubkeys "$tmp/${bad%%:*}" >"$tmp/refuse3.out" 2>&1; then
		fail "the agent started with ${bad%%:*} as its plan keys"
	fi
	grep -qF "plan_pubkeys: ${bad#*:}" "$tmp/refuse3.out" || fail "no reason for ${bad%%:*}: $(cat "$tmp/refuse3.out")"
done
echo "refused: the private key, a world-writable public key file as plan_pubkeys"

# 2. the agent, and what it made
"$ICE_AGENT" "${agent_args[@]}" >"$tmp/agent.log" 2>&1 &
agent_pid=$!
wait_for 10 test -S "$run/agent-$ADDR.sock" || fail "no event socket"
wait_for 5 grep -q "capabilities kept" "$tmp/agent.log" || fail "no capabilities line"
grep -q "capabilities kept: none" "$tmp/agent.log" || fail "capabilities kept"
grep -q "group '$G'" "$tmp/agent.log" || fail "the group is not in the log"
for f in "$run/agent-$ADDR.sock" "$shm"; do
	[ "$(stat -c '%a %U %G' "$f")" = "660 root $G" ] ||
		fail "$f is $(stat -c '%a %U %G' "$f"), expected 660 root $G"
done
grep -q '^CapEff:[[:space:]]*0*$' "/proc/$agent_pid/status" || fail "effective capabilities left"
grep -q '^CapBnd:[[:space:]]*0*$' "/proc/$agent_pid/status" || fail "bounding set not empty"
echo "agent: socket and block 660 root:$G, no capabilities"

# 3. events: the member's arrive, the other user's are refused
export ICE_AGENT_SOCK=$run/agent-$ADDR.sock ICE_GROUP=$G
as_member "$ICE_IPC_PEER" event "$ADDR" "icemember" >"$tmp/ev_member.out" 2>&1 ||
	fail "the member cannot send events"
if as_other "$ICE_IPC_PEER" event "$ADDR" "iceother" >"$tmp/ev_other.out" 2>&1; then
	fail "a user outside the group sent an event"
fi
grep -q "refused: Permission denied" "$tmp/ev_other.out" || fail "refused for another reason"
ev_in() { rc XRANGE "ice:$F:{$H}:events" - + | grep -q "$1"; }
wait_for 5 ev_in icemember || fail "the member's event is not in Redis"
ev_in iceother && fail "the other user's event is in Redis"
echo "events: member sent, other refused (EACCES)"

# 4. steering: the member's transport is planned, the other's cannot map
if as_other "$ICE_IPC_PEER" transport "$ADDR" "$PEER" 50123 1 >"$tmp/tp_other.out" 2>&1; then
	fail "a user outside the group mapped the control block"
fi
grep -q "control block: Permission denied" "$tmp/tp_other.out" || fail "other transport: wrong reason"
as_member "$ICE_IPC_PEER" transport "$ADDR" "$PEER" 50123 20 >"$tmp/tp_member.out" 2>&1 &
peer_pid=$!
wait_for 10 grep -q '^qpn ' "$tmp/tp_member.out" || fail "the member's transport did not start"
qpn=$(awk '/^qpn /{print $2}' "$tmp/tp_member.out")
qp_seen() { [ "$(rc HGET "ice:$F:{$H}:qp:$ADDR:$qpn" src)" != "" ]; }
wait_for 5 qp_seen || fail "the agent did not read the member's QP $qpn"
"$ICE_IPC_PEER" sign "$tmp/plan.key" "$H" 1 "$qpn" 50123 >"$tmp/plan.json" || fail "sign"
rc SET "ice:$F:{$H}:plan" "$(cat "$tmp/plan.json")" >/dev/null
rc PUBLISH "ice:$F:{$H}:plan" 1 >/dev/null
wait "$peer_pid" || fail "the member's transport was not steered"
peer_pid=""
grep -q "sport 50123 applied" "$tmp/tp_member.out" || fail "no applied port"
[ "$(rc HGET "ice:$F:{$H}:plan:applied" epoch)" = 1 ] || fail "the agent did not apply epoch 1"
echo "steering: the member's QP $qpn moved to source port 50123 (plan epoch 1); other refused"

# 4b. the plans' key rotated under the running agent (no restart): a plan of
# a key it does not hold is refused as such; once the new public key is
# appended to its file, the new key's plans apply; once the old one is
# dropped, the old key's plans are refused
applied() { rc HGET "ice:$F:{$H}:plan:applied" "$1"; }
offer() { # KEYFILE EPOCH
	"$ICE_IPC_PEER" sign "$1" "$H" "$2" "$qpn" 50124 >"$tmp/plan.json" || fail "sign"
	rc SET "ice:$F:{$H}:plan" "$(cat "$tmp/plan.json")" >/dev/null
	rc PUBLISH "ice:$F:{$H}:plan" "$2" >/dev/null
}
"$ICECTL" keygen --out "$tmp" --name plan2 >/dev/null || fail "icectl keygen plan2"
offer "$tmp/plan2.key" 2
wait_for 5 sh -c "redis-cli -s $tmp/redis.sock HGET 'ice:$F:{$H}:plan:applied' refused_reason | grep -q '^unknown key id'" ||
	fail "a plan of an untrusted key was not refused as such: $(applied refused_reason)"
[ "$(applied epoch)" = 1 ] || fail "epoch $(applied epoch) after an untrusted key's plan"
cat "$tmp/plan2.pub" >>"$tmp/plan.pub"
offer "$tmp/plan2.key" 3
wait_for 5 sh -c "[ \"\$(redis-cli -s $tmp/redis.sock HGET 'ice:$F:{$H}:plan:applied' epoch)\" = 3 ]" ||
	fail "the new key's plan was not applied after its public key was added: $(applied refused_reason)"
cp "$tmp/plan2.pub" "$tmp/plan.pub.new" && mv "$tmp/plan.pub.new" "$tmp/plan.pub"
offer "$tmp/plan.key" 4
wait_for 5 sh -c "[ \"\$(redis-cli -s $tmp/redis.sock HGET 'ice:$F:{$H}:plan:applied' refused)\" = 2 ]" ||
	fail "the old key's plan was not refused after its public key was dropped"
[ "$(applied epoch)" = 3 ] && applied refused_reason | grep -q '^unknown key id' ||
	fail "epoch $(applied epoch), reason $(applied refused_reason)"
grep -q "plan keys reloaded from $tmp/plan.pub" "$tmp/agent.log" || fail "no reload in the log"
echo "rotation: untrusted key refused (unknown key id); new key trusted and applied, old key dropped, no restart"

# 5. a clean exit removes both
kill "$agent_pid"
wait "$agent_pid" || fail "the agent exited with $?"
agent_pid=""
[ ! -e "$run/agent-$ADDR.sock" ] || fail "socket left"
[ ! -e "$shm" ] || fail "control block left"
echo "PASS"
