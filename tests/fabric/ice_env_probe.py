#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How much CPU the VM's host took during a measurement.

A TBF link is only as exact as its qdisc watchdog: when the virtual CPU is
off the physical one (steal) for longer than the bucket's burst lasts at the
link's rate, the tokens of that gap are lost and the link under-delivers with
the guest's own CPU idle. The same gap makes a paced sender catch up in a
burst. Neither says anything about our code, so a fabric measurement taken
across such gaps is void, not a failure.

  ice_env_probe.py GRACE_MS OUT    (until SIGTERM, or 120 s)

sleeps 1 ms at a time (SCHED_FIFO where allowed, so that only the host, not
the guest's own load, delays it) and writes to OUT one line:

  steal_pct busy_pct lost_pct late_p99_ms late_max_ms

lost_pct: the share of the run spent in wake-ups late by more than GRACE_MS
(the time a full token bucket covers), counted beyond GRACE_MS.
"""
import os
import signal
import sys
import time


def cpu():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    steal = v[7] if len(v) > 7 else 0
    return v[0] + v[1] + v[2] + v[4] + v[5] + v[6], v[3], steal


def main():
    grace = float(sys.argv[1]) / 1e3
    out = sys.argv[2]
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (OSError, AttributeError):
        pass
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c0, t0 = cpu(), time.monotonic()
    late = []
    while not stop and time.monotonic() - t0 < 120:
        t = time.monotonic()
        time.sleep(0.001)
        late.append(time.monotonic() - t - 0.001)
    c1, wall = cpu(), time.monotonic() - t0
    busy, idle, steal = (c1[i] - c0[i] for i in range(3))
    total = max(busy + idle + steal, 1)
    late.sort()
    n = max(len(late), 1)
    lost = sum(x - grace for x in late if x > grace)
    with open(out, "w") as f:
        f.write(f"{steal * 100 / total:.1f} {busy * 100 / total:.1f} "
                f"{lost * 100 / max(wall, 1e-3):.1f} "
                f"{(late[int(n * 0.99)] if late else 0) * 1e3:.2f} "
                f"{(late[-1] if late else 0) * 1e3:.2f}\n")


if __name__ == "__main__":
    main()
