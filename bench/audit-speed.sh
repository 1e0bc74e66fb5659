#!/usr/bin/env bash
# How long `headroom audit` takes on this machine, on every captured tree and dump in
# tests/fixtures/captured (HEADROOM_FIXTURES=DIR for another folder laid out the same), and on a synthetic tree of 2,000 PCI functions. Prints the median of
# N runs per input (wall time of the whole process, warm page cache). Not a test: timings
# on a shared machine are noisy, so read them as orders of magnitude against the 50 ms goal.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-11}
FIX=${HEADROOM_FIXTURES:-tests/fixtures/captured}
[ -d "$FIX/sysfs" ] || { echo "audit-speed: no captured fixtures at $FIX" >&2; exit 2; }
cargo build -q --release -p headroom
BIN=target/release/headroom

median_ms() { # command... -> median wall time in ms over N runs
    local times=()
    for _ in $(seq "$N"); do
        local t0 t1
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || true
        t1=$(date +%s%N)
        times+=($(((t1 - t0) / 1000)))
    done
    printf '%s\n' "${times[@]}" | sort -n | awk -v n="$N" 'NR == int((n + 1) / 2) { printf "%.1f", $1 / 1000 }'
}

printf '%-60s %10s\n' "input" "median ms"
printf '%-60s %10s\n' "this machine (audit)" "$(median_ms $BIN audit)"
for t in "$FIX"/sysfs/*/; do
    printf '%-60s %10s\n' "--root $(basename "$t")" "$(median_ms $BIN audit --root "$t")"
done
for d in "$FIX"/pci/*.lspci*; do
    case "$d" in *.txt) continue ;; esac
    printf '%-60s %10s\n' "--lspci $(basename "$d")" "$(median_ms $BIN audit --lspci "$d")"
done
echo
echo "Synthetic sysfs tree (in-process, audit_sysfs only):"
cargo run -q --release -p headroom-probe --example audit_synthetic -- 2000
