#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# nic_bench_cg.sh ICE_AGENT NIC_BENCH [SECONDS] [CHANGED...]
#
# The instructions ice-agent executes per interval in nic_bench's scenarios
# (8 ports, 1,000 QPs, 100 ms; 0, 100 and 1,000 QPs changing), counted by
# valgrind's callgrind: unlike CPU time on a shared machine they do not
# depend on the load. The agent runs under callgrind with one profile part
# per interval (--dump-before=publish); the first 6 parts (start-up, the
# first interval, which writes every record) and the last (exit) are left
# out. Prints per scenario the intervals counted and the median, mean and
# largest instructions per interval (the largest: the interval every 10 s
# that rewrites all records).
set -u
agent=${1:?usage: nic_bench_cg.sh ICE_AGENT NIC_BENCH [SECONDS] [CHANGED...]}
bench=${2:?usage: nic_bench_cg.sh ICE_AGENT NIC_BENCH [SECONDS] [CHANGED...]}
secs=${3:-30}
shift 2
[ $# -gt 0 ] && shift
changes=${*:-0 100 1000}
command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
dir=$(mktemp -d /tmp/ice-nicbench-cg-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM
agent=$(realpath "$agent")
cat > "$dir/agent" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --dump-before=publish --dump-instr=no \
	--callgrind-out-file="$dir/parts/\$ICE_CG_TAG" "$agent" "\$@"
EOF
chmod +x "$dir/agent"
mkdir "$dir/parts"
echo "nic_bench_cg: $agent under callgrind, ${secs} s per scenario, instructions per interval"
for changed in $changes; do
	ICE_CG_TAG=c${changed}_ "$bench" "$dir/agent" "$secs" 1 "$changed" > "$dir/bench.log" 2>&1 ||
		{ cat "$dir/bench.log"; exit 1; }
	python3 - "$dir/parts" "c${changed}_" "$changed" <<'EOF'
import glob, os, statistics, sys
parts = []
for f in glob.glob(os.path.join(sys.argv[1], sys.argv[2] + '*')):
    part = tot = None
    with open(f) as fh:
        for line in fh:
            if line.startswith('part:'):
                part = int(line.split()[1])
            elif line.startswith('totals:'):
                tot = int(line.split()[1])
    if part is not None and tot is not None:
        parts.append((part, tot))
x = [t for _, t in sorted(parts)[6:-1]]
if not x:
    print(f'  {sys.argv[3]:>4} of 1000 QPs changing: too few intervals; run longer')
    sys.exit(1)
print(f'  {sys.argv[3]:>4} of 1000 QPs changing: {len(x)} intervals, median '
      f'{statistics.median(x) / 1e6:.2f}M, mean {statistics.mean(x) / 1e6:.2f}M, '
      f'largest {max(x) / 1e6:.2f}M instructions')
EOF
done
