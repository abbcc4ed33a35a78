#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The switch telemetry exporter (ice-fabric export, docs/redis-schema.md,
# "Switch telemetry") on the default fabric (4 switches, 16 ports), started
# by `up --redis` at 100 ms:
#   - every port is in ice:<F>:sw:ports, the exporter's pid is the one in
#     /run/ice/<F>/export.pid;
#   - h1 pings h5 (1000-byte payloads every 50 ms): out-octets of leaf2's
#     port h5 grows in Redis while it runs (not h6's); a count the BPF map
#     has (ice-fabric stats --json) is read by the exporter within two
#     intervals (by the exporter's own ts_ms); when it stops, Redis holds
#     the map's final count;
#   - Redis is stopped (SIGTERM, saving on the way down) for ~1 s and started
#     again: the same exporter reconnects, logs "back after N missed
#     intervals", sets missed_last = N, and the port's stream misses exactly
#     those intervals (its seq has one gap of N; N-1 when Redis applied the
#     interval it was writing as it went down);
#   - `ice-fabric down` leaves no exporter process.
. "$(dirname "$0")/lib_fabric.sh"
ice_need_tool redis-server redis-cli jq ping

name=ex$ICE_SFX
port=$((21000 + ICE_SFX))
file=$(ice_fab_gen "$name")
ice_fab_up "$file" --redis "$port" || ice_fail "ice-fabric up failed"
state=/run/ice/$name
log=$state/export.log
redis=$("$ICE_FABRIC" exec --fabric "$name" h1 -- sh -c 'echo $ICE_REDIS')
rhost=${redis%:*} rport=${redis#*:}
rcli() { redis-cli -h "$rhost" -p "$rport" "$@"; }
xfail() {
	sed 's/^/  export.log: /' "$log" >&2
	ice_fail "$@"
}
key() { echo "ice:$name:sw:{$1}:port:$2"; } # SWITCH PORT
octets() { rcli HGET "$(key "$1" "$2")" out-octets; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 1. running, every port listed
[ -s "$state/export.pid" ] || ice_fail "no $state/export.pid"
epid=$(cat "$state/export.pid")
kill -0 "$epid" 2>/dev/null || xfail "the exporter (pid $epid) does not run"
for ((i = 0; i < 50; i++)); do
	[ "$(rcli SCARD "ice:$name:sw:ports")" = 16 ] && break
	sleep 0.1
done
[ "$(rcli SCARD "ice:$name:sw:ports")" = 16 ] ||
	xfail "ice:$name:sw:ports has $(rcli SCARD "ice:$name:sw:ports") members, not 16"
[ "$(rcli HGET "ice:$name:sw:exporter" pid)" = "$epid" ] || xfail "the exporter hash names another pid"
[ "$(rcli HGET "$(key leaf1 spine1)" oper-status)" = UP ] || xfail "leaf1:spine1 is not UP"

# 2. traffic h1 -> h5 (3 s): leaf2's port h5 carries it
bpf_octets() { # SWITCH PORT: the BPF map's counter now
	"$ICE_FABRIC" stats "$name" --json |
		jq ".ports[] | select(.switch == \"$1\" and .port == \"$2\") | .bytes"
}
first_ts() { # SWITCH PORT BYTES: ts_ms of the port's first stream entry with out-octets >= BYTES
	rcli XRANGE "$(key "$1" "$2"):ts" - + | awk -v b="$3" '
		prev == "ts_ms" { ts = $0 } prev == "out-octets" && $0 + 0 >= b + 0 { print ts; exit }
		{ prev = $0 }'
}
a5=$(octets leaf2 h5) a6=$(octets leaf2 h6)
ice_fab_exec "$name" h1 ping -q -c 60 -i 0.05 -s 1000 10.2.0.1 >"$ICE_TMP/ping.log" 2>&1 &
ping_pid=$!
ICE_PIDS+=($ping_pid)
sleep 0.3
grows=0 prev=$(octets leaf2 h5) worst=0
for ((i = 0; i < 4; i++)); do
	# a counter the map has now (the ping moves it every 50 ms): the
	# exporter's first reading of at least that much, by its own clock
	v=$(bpf_octets leaf2 h5)
	t_read=$(now_ms)
	for ((k = 0; k < 200; k++)); do
		[ "$(octets leaf2 h5)" -ge "$v" ] && break
		sleep 0.01
	done
	t_seen=$(now_ms)
	ts=$(first_ts leaf2 h5 "$v")
	[ -n "$ts" ] || xfail "leaf2:h5 never reached the map's $v bytes in Redis"
	lag=$((ts - t_read))
	echo "leaf2:h5: the map's $v bytes read by the exporter $lag ms after ice-fabric stats," \
		"in Redis $((t_seen - t_read)) ms after it (interval 100 ms)"
	[ "$lag" -gt "$worst" ] && worst=$lag
	sleep 0.25
	now=$(octets leaf2 h5)
	[ "$now" -gt "$prev" ] && grows=$((grows + 1))
	prev=$now
done
wait "$ping_pid" || ice_fail "ping h1 -> h5 failed: $(cat "$ICE_TMP/ping.log")"
[ "$worst" -le 200 ] || xfail "the exporter read a counter $worst ms after the map had it (> 2 intervals)"
[ "$grows" -eq 4 ] || xfail "leaf2:h5's out-octets grew in only $grows of 4 looks during the ping"
sleep 0.3 # the last replies are home: the counter is final
bpf=$(bpf_octets leaf2 h5)
[ "$bpf" -gt $((a5 + 60 * 1000)) ] || ice_fail "the BPF map counted only $((bpf - a5)) bytes to h5"
[ "$(octets leaf2 h5)" = "$bpf" ] || xfail "Redis has out-octets $(octets leaf2 h5), the map $bpf"
d6=$(($(octets leaf2 h6) - a6))
echo "leaf2:h5 +$((bpf - a5)) bytes, leaf2:h6 +$d6"
[ "$d6" -lt 2000 ] || xfail "leaf2:h6 carried $d6 bytes of a ping to h5"

# 3. Redis away for ~1 s
s_before=$(rcli HGET "$(key leaf1 spine1)" seq)
rcli CONFIG SET save "3600 1" >/dev/null || ice_fail "redis CONFIG SET save"
rpid=$(cat "$state/redis.pid")
t_kill=$(now_ms)
kill "$rpid" || ice_fail "cannot stop redis-server (pid $rpid)"
for ((i = 0; i < 50; i++)); do kill -0 "$rpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$rpid" 2>/dev/null && ice_fail "redis-server (pid $rpid) did not stop"
t_down=$(now_ms)
sleep 1
redis-server --port "$rport" --bind "$rhost" --protected-mode no --daemonize yes \
	--pidfile "$state/redis.pid" --dir "$state" --save "" --appendonly no >/dev/null ||
	ice_fail "cannot restart redis-server"
for ((i = 0; i < 50; i++)); do rcli PING 2>/dev/null | grep -qx PONG && break; sleep 0.1; done
t_up=$(now_ms)
for ((i = 0; i < 50; i++)); do
	[ "$(rcli HGET "ice:$name:sw:exporter" connects)" = 2 ] && break
	sleep 0.1
done
t_back=$(now_ms)
[ "$(rcli HGET "ice:$name:sw:exporter" connects)" = 2 ] ||
	xfail "the exporter did not reconnect within 5 s of Redis' restart"
kill -0 "$epid" 2>/dev/null || xfail "the exporter exited while Redis was away"
[ "$(rcli HGET "ice:$name:sw:exporter" pid)" = "$epid" ] || xfail "another exporter reconnected"
missed=$(rcli HGET "ice:$name:sw:exporter" missed_last)
grep -q "back after $missed missed intervals" "$log" ||
	xfail "no 'back after $missed missed intervals' in the exporter's log"
echo "Redis stopping $((t_down - t_kill)) ms, down $((t_up - t_down)) ms; the exporter back" \
	"$((t_back - t_up)) ms later; missed_last $missed: $(grep 'back after' "$log" | tail -1)"
# at most the intervals from SIGTERM to the exporter's reconnection
[ "$missed" -ge 5 ] && [ "$missed" -le $(((t_back - t_kill) / 100 + 2)) ] ||
	xfail "missed_last $missed for an outage of $((t_back - t_kill)) ms at 100 ms"
sleep 0.3
gaps=$(rcli XRANGE "$(key leaf1 spine1):ts" - + | awk '
	prev == "seq" { if (last != "" && $0 != last + 1) print $0 - last - 1; last = $0 }
	{ prev = $0 }')
echo "leaf1:spine1's stream (seq $s_before before the outage): gaps of $(echo $gaps) intervals"
[ "$(echo "$gaps" | grep -c .)" = 1 ] || xfail "leaf1:spine1's stream has gaps '$gaps', not one"
[ "$gaps" -eq "$missed" ] || [ "$gaps" -eq $((missed - 1)) ] ||
	xfail "leaf1:spine1's stream misses $gaps intervals, the exporter says $missed"

# 4. down stops it
"$ICE_FABRIC" down "$name" || ice_fail "ice-fabric down failed"
if [ -d "/proc/$epid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$epid/status" 2>/dev/null; then
	ice_fail "the exporter (pid $epid) still runs after ice-fabric down"
fi
pgrep -f "ice-fabric export $name( |$)" >/dev/null && ice_fail "an exporter of $name still runs"
echo "PASS"
