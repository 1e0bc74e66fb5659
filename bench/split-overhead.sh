#!/usr/bin/env bash
# What `bench latency --split` costs the measurement it explains: the same run without (A)
# and with (B) the split, alternating A B A B, and the paired differences B - A of the
# measured latency (avg, p99, from the 1 us histograms), of the measuring threads' CPU time
# per wake-up (their own clock: what the ring hand-over adds to the loop) and of the whole
# process's CPU per wake-up (user+sys: the recording and matching done beside them), with
# their medians. B's wake-ups left unmatched are printed too (0 expected).
#
# Needs root (tracefs, SCHED_FIFO) and python3.
# Environment: ROUNDS (8), SECS (5), THREADS (2), HIST (10000 us), HEADROOM (binary path),
# STRESS (a --stress spec for both, default none: idle).
#
# Exit status: 0 once both ran, whatever the numbers (no script fails on a timing); 1 when a
# tool is missing or a run fails; 130 on Ctrl-C.
set -euo pipefail

ROUNDS=${ROUNDS:-8}
SECS=${SECS:-5}
THREADS=${THREADS:-2}
HIST=${HIST:-10000}
STRESS=${STRESS:-}
here=$(cd "$(dirname "$0")/.." && pwd)
HEADROOM=${HEADROOM:-$here/target/release/headroom}

command -v python3 >/dev/null || { echo "split-overhead: python3 is missing" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "split-overhead: run as root (--split records in a tracefs instance; SCHED_FIFO)" >&2; exit 1; }
if [ ! -x "$HEADROOM" ]; then
    (cd "$here" && cargo build --release -p headroom >&2)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

common=(bench latency --no-save -t "$THREADS" -p 99 -i 1000 -d 0 -m -q -h "$HIST" -D "${SECS}s" --json)
[ -n "$STRESS" ] && common+=(--stress "$STRESS")

for round in $(seq 1 "$ROUNDS"); do
    echo "round $round/$ROUNDS" >&2
    for v in A B; do
        extra=()
        [ "$v" = B ] && extra=(--split)
        out=$work/$v-$round
        TIMEFORMAT='%3U %3S'
        { time "$HEADROOM" "${common[@]}" "${extra[@]}" >"$out.json" 2>"$out.err"; } 2>"$out.time" \
            || { echo "split-overhead: run $v $round failed:" >&2; cat "$out.err" >&2; exit 1; }
    done
done

python3 - "$work" "$ROUNDS" "${STRESS:-idle}" <<'EOF'
import json, statistics, sys
work, rounds, cond = sys.argv[1], int(sys.argv[2]), sys.argv[3]

def run(v, r):
    doc = json.load(open(f"{work}/{v}-{r}.json"))
    h = doc["measurement"]["total"]["histogram"]
    hist = {us: c for us, c in h["buckets"]}
    n = sum(hist.values()) + h["overflow"]
    avg = sum(us * c for us, c in hist.items()) / max(1, n - h["overflow"])
    seen, p99 = 0, None
    for us in sorted(hist):
        seen += hist[us]
        if seen >= 0.99 * n:
            p99 = us
            break
    threads_ns = sum(t["cpu_time_ns"] for t in doc["measurement"]["threads"])
    u, s = open(f"{work}/{v}-{r}.time").read().split()
    split = doc.get("split")
    return {"avg": avg, "p99": p99, "n": n, "thr": threads_ns / 1e3 / n,
            "proc": (float(u) + float(s)) * 1e6 / n,
            "unmatched": split["total"]["unmatched"] if split else None}

print(f"\n== {cond}: {rounds} rounds, A = without --split, B = with it (us; cpu in us per wake-up)")
print(f"{'round':>5} {'A avg':>7} {'B avg':>7} {'d avg':>6} {'A p99':>6} {'B p99':>6} {'d p99':>6} "
      f"{'A thr':>6} {'B thr':>6} {'A proc':>6} {'B proc':>6} {'B unm':>6}")
d = {k: [] for k in ("avg", "p99", "thr", "proc")}
unmatched = 0
for r in range(1, rounds + 1):
    a, b = run("A", r), run("B", r)
    for k in d:
        d[k].append(b[k] - a[k])
    unmatched += b["unmatched"] or 0
    print(f"{r:>5} {a['avg']:>7.2f} {b['avg']:>7.2f} {b['avg'] - a['avg']:>+6.2f} {a['p99']:>6} "
          f"{b['p99']:>6} {b['p99'] - a['p99']:>+6} {a['thr']:>6.2f} {b['thr']:>6.2f} "
          f"{a['proc']:>6.2f} {b['proc']:>6.2f} {b['unmatched']:>6}")
med = {k: statistics.median(v) for k, v in d.items()}
print(f"median paired difference B-A: avg {med['avg']:+.2f} us, p99 {med['p99']:+.1f} us; "
      f"CPU per wake-up: measuring threads {med['thr']:+.2f} us, whole process {med['proc']:+.2f} us")
print(f"wake-ups left unmatched in the B runs: {unmatched}")
EOF
