#!/usr/bin/env bash
# Run a cross-built headroom under qemu-user and check it against the native build.
#
#   scripts/qemu-check.sh NATIVE_BIN TARGET_BIN QEMU [FIXTURES]
#   e.g. scripts/qemu-check.sh target/debug/headroom \
#          dist/headroom-0.1.0-aarch64-unknown-linux-musl/headroom qemu-aarch64-static
#
# Checks: --version; `audit --root` on every captured sysfs tree and `audit --lspci` on every
# captured dump (tests/fixtures/captured, or FIXTURES) give the same JSON as the native
# binary, byte for byte once `created` and `host` (the run's time and machine) are removed; `ceiling` tables equal too; `bench disk`
# on a small file (io_uring is ENOSYS under qemu-user: psync with a note); `bench latency` for
# two seconds; `report --html` of both results. Exits 1 at the first difference, saying which.
set -euo pipefail

if (($# < 3)); then
    echo "usage: $0 NATIVE_BIN TARGET_BIN QEMU [FIXTURES]" >&2
    exit 2
fi
native=$1 cross=$2 qemu=$3
fixtures=${4:-${HEADROOM_FIXTURES:-$(cd "$(dirname "$0")/.." && pwd)/tests/fixtures/captured}}
for f in "$native" "$cross"; do
    [[ -x $f ]] || { echo "qemu-check: $f: not an executable; build it first" >&2; exit 2; }
done
command -v "$qemu" >/dev/null || { echo "qemu-check: $qemu not found (apt-get install qemu-user-static)" >&2; exit 2; }
[[ -d $fixtures/sysfs && -d $fixtures/pci ]] || { echo "qemu-check: no captured fixtures (sysfs/ and pci/) at $fixtures: give the folder as FIXTURES" >&2; exit 2; }
command -v jq >/dev/null || { echo "qemu-check: jq not found (apt-get install jq)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# No history database of the user's is touched.
export XDG_DATA_HOME=$work/xdg NO_COLOR=1
label=$(basename "$(dirname "$cross")")
fail() { echo "qemu-check [$label]: $*" >&2; exit 1; }
run() { "$qemu" "$cross" "$@"; }
# The document without the run's own time and machine, keys in order, for a byte comparison.
strip() { jq -S 'del(.created, .host)'; }

file "$cross" | grep -q "statically linked" || fail "$cross is not statically linked: $(file -b "$cross")"
run --version | grep -q "^headroom " || fail "--version printed no version"
echo "qemu-check [$label]: $(run --version | tr '\n' ' ')"

same_json() { # what, args...
    local what=$1
    shift
    "$native" --json "$@" 2>/dev/null | strip >"$work/native.json" || true
    run --json "$@" 2>/dev/null | strip >"$work/cross.json" || true
    [[ -s $work/native.json ]] || fail "$what: the native build printed no JSON"
    cmp -s "$work/native.json" "$work/cross.json" || {
        diff -u "$work/native.json" "$work/cross.json" | head -40 >&2
        fail "$what: JSON differs from the native build"
    }
}

n=0
for tree in "$fixtures"/sysfs/*/; do
    same_json "audit --root $(basename "$tree")" audit --root "$tree"
    n=$((n + 1))
done
for dump in "$fixtures"/pci/*; do
    case $dump in *.txt | *.md) continue ;; esac
    same_json "audit --lspci $(basename "$dump")" audit --lspci "$dump"
    n=$((n + 1))
done
same_json "ceiling pcie" ceiling pcie --gen 1,2,3,4,5 --lanes 1,2,4,8,16 --mps 128,256
same_json "ceiling usb" ceiling usb --speed 480 --transfer bulk
same_json "ceiling eth" ceiling eth --rate 1G --mtu 1500 --proto tcp
# The text tables too (what a user reads on the board's console).
cmp -s <("$native" ceiling pcie --gen 3 --lanes 1,2,4,8 --mps 128,256) \
    <(run ceiling pcie --gen 3 --lanes 1,2,4,8 --mps 128,256) || fail "ceiling pcie table differs"
echo "qemu-check [$label]: $n audits and 3 ceilings give the native build's JSON"

# Disk: a 16 MiB file in a fresh directory beside the binary (under target/ or dist/, not a
# tmpfs /tmp); psync because io_uring_setup is ENOSYS under qemu-user. Buffered (--direct 0):
# qemu 7.2's statx passes STATX_DIOALIGN in stx_mask but leaves stx_dio_offset_align 0, which
# the kernel uses to say "no direct I/O here", so O_DIRECT is refused under emulation only.
disk=$(mktemp -d "$(dirname "$cross")/qemu-check-disk.XXXXXX")
trap 'rm -rf "$work" "$disk"' EXIT
run --json bench disk "$disk" --rw randrw --size 16M --runtime 0.5 --runs 1 --pause 0 --direct 0 \
    --no-save --output "$work/disk.json" >/dev/null || fail "bench disk failed"
jq -e '.parameters.engine == "psync"' "$work/disk.json" >/dev/null ||
    fail "bench disk did not run psync: $(jq -c .parameters.engine "$work/disk.json")"
jq -e '[.notes[] | select(test("io_uring.*using the psync engine instead"))] | length == 1' \
    "$work/disk.json" >/dev/null || fail "bench disk: no io_uring fallback note: $(jq -c .notes "$work/disk.json")"
jq -e '[.tests[].runs[] | .read_bytes + .write_bytes] | add > 0' "$work/disk.json" >/dev/null ||
    fail "bench disk moved no bytes"
[[ -z $(ls -A "$disk") ]] || fail "bench disk left a file behind: $(ls -A "$disk")"

# Latency: two seconds, one thread; without root SCHED_FIFO is refused and said so.
run --json bench latency -t 1 -i 1000 -D 2s --no-save \
    --output "$work/latency.json" >/dev/null || fail "bench latency failed"
# 2 s at 1 ms: 2000 wake-ups when all is well; qemu-user on a loaded 2-core CI machine misses
# some, so only "it measured" is checked here, never a timing.
jq -e '.measurement.total.count > 100' "$work/latency.json" >/dev/null ||
    fail "bench latency counted too few wake-ups: $(jq -c .measurement.total.count "$work/latency.json")"

run report --html "$work/report.html" "$work/disk.json" "$work/latency.json" >/dev/null ||
    fail "report --html failed"
grep -q "<svg" "$work/report.html" || fail "report --html wrote no plot"
echo "qemu-check [$label]: bench disk (psync fallback), bench latency 2 s and report --html pass"
