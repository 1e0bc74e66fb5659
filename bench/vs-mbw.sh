#!/usr/bin/env bash
# headroom bench mem's memcpy against mbw's MEMCPY test (Debian: apt-get install -y mbw),
# A B A B rounds on the same array size, medians side by side.
#
# mbw copies one array of SIZE MiB into another (memcpy of the whole array per iteration) and
# prints MiB/s of bytes copied; headroom bench mem --size 2×SIZE copies one half of its buffer
# into the other in 1 MiB memcpy calls and prints MB/s (10^6 B/s) of bytes copied. Both are
# converted to MB/s here. Environment: ROUNDS (5), SIZE (64, MiB per array), HEADROOM (binary).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SIZE=${SIZE:-64}
. "$(dirname "$0")/common.sh"
HEADROOM=$headroom
need mbw mbw
need_headroom

hr=() mb=()
for r in $(seq "$ROUNDS"); do
    # mbw: -q quiet, -n 5 iterations, -t0 the memcpy test only; "Copy: X MiB/s" on the AVG line.
    m=$(mbw -q -n 5 -t0 "$SIZE" | awk '/^AVG/ { for (i = 1; i <= NF; i++) if ($i == "Copy:") print $(i + 1) }')
    mb+=("$(python3 -c "print(round($m * 1048576 / 1e6, 1))")")
    h=$("$HEADROOM" bench mem --size "$((2 * SIZE))M" --width 64 --op load --duration 1s \
        --no-save --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["memory"]["copy"]["mb_per_s"], 1))')
    hr+=("$h")
    echo "round $r: mbw $m MiB/s = ${mb[-1]} MB/s, headroom $h MB/s" >&2
done
python3 - "${mb[*]}" "${hr[*]}" <<'PY'
import statistics, sys
mbw = [float(x) for x in sys.argv[1].split()]
hr = [float(x) for x in sys.argv[2].split()]
m, h = statistics.median(mbw), statistics.median(hr)
print(f"memcpy, {len(mbw)} rounds, medians: mbw {m:.1f} MB/s, headroom {h:.1f} MB/s, headroom / mbw {h / m:.3f}")
PY
