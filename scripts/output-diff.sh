#!/bin/bash
# Every output of `headroom` at a git ref (default: main) against the working tree's, byte for
# byte: a change meant to leave the output alone (a refactoring) proves it here.
#
#   scripts/output-diff.sh [REF] [--no-live]
#
# When main has moved on since the branch was made, give the branch's base
# (`scripts/output-diff.sh $(git merge-base main HEAD)`): main's own changes are not the
# working tree's.
#
# Both binaries run over the same inputs, and every output is compared:
#   - saved documents (tests/fixtures/results/*.json, one at a time and all together, and a
#     `compare --json` and a `report --json` of them):
#     `report` (Markdown), `report --html`, `report --json`, `report --format
#     openmetrics|prometheus|lava|kcidb`, and `compare` of the pairs (text and --json);
#   - captured trees (tests/fixtures/sysfs/*, tests/fixtures/captured/sysfs/*): `audit --root`
#     (text, --json, every --format), `audit --save-expect` then `--expect` against its own
#     tree and another (text, --json, --format ocptv), `path --root` of each block device and
#     network interface; `audit --lspci` of the captured PCI dumps;
#   - `ceiling` of every link kind (text and --json), `count --list`;
#   - live runs on this machine (skipped with --no-live): bench disk on a 4 MiB file for 1 s,
#     bench latency for 1 s, bench net on loopback for 1 s, bench mmio on a file, count of
#     `true`, each run once by each binary, plus their peers' formats (fio-json, cyclictest's
#     histogram, iperf3 -J, perf stat -x). Measured numbers differ run to run: their text is
#     compared with every number masked (rule NUMBERS below), and the document the working
#     tree's binary wrote is rendered by both binaries (report, --html, --json, every
#     --format) byte for byte.
#
# Masked everywhere (rule TIME; rules ORDER and NUMBERS below say where else): what carries the time a document was made, which differs
# between two runs of the same command: a JSON `"created": "..."` value, KCIDB's `start_time`
# and ids made from it, OpenMetrics' `run_timestamp` sample, OCPTV's `timestamp`.
#
# The binary at REF is built once per commit in a temporary worktree, into a target directory
# of its own (target/output-diff-ref: cargo keys a workspace's crates by their path inside the
# workspace, so a build of another checkout into this worktree's target would replace its
# crates and leave them looking up to date), and kept in /var/tmp/headroom-output-diff/COMMIT/. Exit 0: no difference; 1: the differences are printed
# (a unified diff per output, at most 40 lines each) with the total.
set -eu -o pipefail

ref=main
live=1
for a in "$@"; do
    case "$a" in
    --no-live) live=0 ;;
    -h | --help)
        sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *) ref=$a ;;
    esac
done

top=$(git rev-parse --show-toplevel)
cd "$top"
commit=$(git rev-parse --verify "$ref^{commit}")
cache=/var/tmp/headroom-output-diff/$commit
target=$top/target
ref_target=$top/target/output-diff-ref

build_new() {
    nice -n 10 cargo build -q -p headroom >&2
    mkdir -p "$work/bin"
    cp "$target/debug/headroom" "$work/bin/new"
}

src=""
build_base() {
    if [ -x "$cache/headroom" ]; then
        return
    fi
    src=$(mktemp -d /var/tmp/headroom-output-diff-src.XXXXXX)
    git worktree add -q --detach "$src/tree" "$commit"
    echo "output-diff: building $ref ($commit) in $src/tree" >&2
    if (cd "$src/tree" && CARGO_TARGET_DIR=$ref_target nice -n 10 cargo build -q -p headroom >&2); then
        mkdir -p "$cache"
        cp "$ref_target/debug/headroom" "$cache/headroom.tmp"
        mv "$cache/headroom.tmp" "$cache/headroom"
    fi
    git worktree remove --force "$src/tree"
    rm -rf "$src"
    src=""
    [ -x "$cache/headroom" ] || {
        echo "output-diff: the build of $ref failed" >&2
        exit 1
    }
}

work=$(mktemp -d /var/tmp/headroom-output-diff.XXXXXX)
cleanup() {
    rm -rf "$work"
    if [ -n "$src" ]; then
        git worktree remove --force "$src/tree" 2>/dev/null || true
        rm -rf "$src"
    fi
}
trap cleanup EXIT INT TERM

build_base
build_new
base=$cache/headroom
new=$work/bin/new

# The rule TIME (see the top).
mask_time() {
    sed -E \
        -e 's/("created": ?)"[^"]*"/\1"TIME"/g' \
        -e 's/("(start_time|timestamp)": ?)"[^"]*"/\1"TIME"/g' \
        -e 's/(headroom:[^":]*:)[0-9TZ:-]{10,}(:[a-z_-]+:)[0-9a-f]+/\1TIME\2HASH/g' \
        -e 's/^(headroom_run_timestamp_seconds(\{[^}]*\})?) .*/\1 TIME/'
}

# The rule NUMBERS (live runs only): every run of digits, with its decimals, reads N, and a
# run of spaces one space (columns are as wide as their numbers); the random names of a run
# (its test file, iperf3's cookie) read NAME; a rate's SI prefix (perf's `K/sec`) is dropped;
# lines naming interrupts, missed periods, overflows or a voided cross-check are left out
# (which device interrupted, whether a period was missed, whether other traffic shared the
# loopback while the kernel counted it, is the machine's doing, not the binary's).
mask_numbers() {
    sed -E -e 's/headroom-disk\.[^ "/]*\.tmp/NAME/g' -e 's/("cookie": ?)"[^"]*"/\1"NAME"/g' \
        -e 's/[0-9]+([.,][0-9]+)*/N/g' -e 's/ +/ /g' -e 's#([ ,])[KMGkmu]/#\1/#g' |
        grep -Eiv 'interrupt|missed|overflow|^# Thread N:|"(overhead|void_reason)"' || true
}

# The rule ORDER (OpenMetrics and Prometheus text): the samples of a family are compared as
# sorted lines, since the order the encoder writes a family's samples in differs from run to
# run of the same binary.
mask_order() {
    LC_ALL=C sort
}

n=0
differ=0
# compare NAME MASK -- ARGS...: run ARGS with both binaries (in the repository's top, with
# NO_COLOR), stdout and stderr and exit code each, masked by MASK (time or numbers).
compare() {
    name=$1
    mask=$2
    shift 3
    n=$((n + 1))
    for who in base new; do
        if [ $who = base ]; then bin=$base; else bin=$new; fi
        set +e
        NO_COLOR=1 HOME=$work/home XDG_DATA_HOME=$work/data timeout 60 "$bin" "$@" \
            >"$work/out.$who" 2>"$work/err.$who"
        echo "exit $?" >>"$work/err.$who"
        set -e
        # The binary's own path in a message is the same for both.
        sed -i "s#$bin#headroom#g" "$work/err.$who" "$work/out.$who"
        for f in out err; do
            case $mask in
            numbers) mask_time <"$work/$f.$who" | mask_numbers >"$work/$f.$who.m" ;;
            order) mask_time <"$work/$f.$who" | mask_order >"$work/$f.$who.m" ;;
            *) mask_time <"$work/$f.$who" >"$work/$f.$who.m" ;;
            esac
        done
    done
    for f in out err; do
        if ! cmp -s "$work/$f.base.m" "$work/$f.new.m"; then
            differ=$((differ + 1))
            echo "=== $name ($f): $*"
            diff -u "$work/$f.base.m" "$work/$f.new.m" | head -40 || true
        fi
    done
}

# compare_file NAME -- ARGS...: as compare, for the file each binary writes; the argument
# `@OUT@` is replaced by a file of each binary's own.
compare_file() {
    name=$1
    shift 2
    n=$((n + 1))
    for who in base new; do
        if [ $who = base ]; then bin=$base; else bin=$new; fi
        out=$work/file.$who
        rm -f "$out"
        args=()
        for a in "$@"; do
            if [ "$a" = @OUT@ ]; then args+=("$out"); else args+=("$a"); fi
        done
        NO_COLOR=1 timeout 60 "$bin" "${args[@]}" >/dev/null 2>&1 || true
        [ -f "$out" ] || : >"$out"
        mask_time <"$out" >"$out.m"
    done
    if ! cmp -s "$work/file.base.m" "$work/file.new.m"; then
        differ=$((differ + 1))
        echo "=== $name (file): $*"
        diff -u "$work/file.base.m" "$work/file.new.m" | head -40 || true
    fi
}

# Everything made from a saved document: report's Markdown, HTML, JSON and every --format.
documents() {
    for fmt in md html json; do
        case $fmt in
        md) compare "report $1" time -- report "$@" ;;
        html) compare "report --html $1" time -- report "$@" --html ;;
        json) compare "report --json $1" time -- --json report "$@" ;;
        esac
    done
    for f in openmetrics prometheus; do
        compare "report --format $f $1" order -- report --format $f "$@"
    done
    for f in lava kcidb; do
        compare "report --format $f $1" time -- report --format $f "$@"
    done
}

results=tests/fixtures/results
for doc in "$results"/*.json; do
    documents "$doc"
done
documents "$results"/*.json
compare_file "report --md FILE" -- report "$results/disk-peak.json" "$results/latency-2-threads.json" --md @OUT@
compare_file "report --html FILE" -- report "$results/survey-rpi5.json" "$results/net-shaped-tcp.json" --html @OUT@
for pair in "rpi5-gen2 rpi5-gen3" "net-shaped-tcp net-shaped-tcp-2" "latency-2-threads latency-200-loops" \
    "disk-peak disk-null-dd" "audit-nvme-downgraded audit-usb3-uas-bot-r8152" "survey-rpi5 survey-rpi5" \
    "ceiling-pcie ceiling-usb" "path-tmp path-tmp" "mmio-file mmio-file" "count-true count-true"; do
    set -- $pair
    compare "compare $1 $2" time -- compare "$results/$1.json" "$results/$2.json"
    compare "compare --json $1 $2" time -- --json compare "$results/$1.json" "$results/$2.json"
done

# Documents made of other documents (kinds `compare` and `report`), as the base binary writes
# them, rendered by both.
NO_COLOR=1 "$base" --json compare "$results/rpi5-gen2.json" "$results/rpi5-gen3.json" \
    >"$work/derived-compare.json" 2>/dev/null || true
NO_COLOR=1 "$base" --json report "$results/disk-peak.json" "$results/latency-2-threads.json" \
    "$results/survey-rpi5.json" "$results/audit-nvme-downgraded.json" >"$work/derived-report.json" 2>/dev/null || true
for doc in "$work"/derived-*.json; do
    documents "$doc"
done

# Captured trees.
trees=$(ls -d tests/fixtures/sysfs/*/ tests/fixtures/captured/sysfs/*/)
first=""
for t in $trees; do
    t=${t%/}
    compare "audit $t" time -- audit --root "$t"
    compare "audit --json $t" time -- --json audit --root "$t"
    for f in openmetrics prometheus; do
        compare "audit --format $f $t" order -- audit --root "$t" --format $f
    done
    for f in lava kcidb; do
        compare "audit --format $f $t" time -- audit --root "$t" --format $f
    done
    NO_COLOR=1 "$base" audit --root "$t" --save-expect "$work/expect.toml" >/dev/null 2>&1 || true
    if [ -f "$work/expect.toml" ]; then
        mv "$work/expect.toml" "$work/expect-$(basename "$t").toml"
        m=$work/expect-$(basename "$t").toml
        compare "expect own $t" time -- audit --root "$t" --expect "$m"
        [ -n "$first" ] && compare "expect other $t" time -- audit --root "$first" --expect "$m"
        compare "expect --json $t" time -- --json audit --root "$t" --expect "$m"
        compare "expect ocptv $t" time -- audit --root "$t" --expect "$m" --format ocptv
        [ -n "$first" ] && compare "expect ocptv other $t" time -- audit --root "$first" --expect "$m" --format ocptv
    fi
    [ -n "$first" ] || first=$t
    for dev in $(ls "$t/sys/class/block" "$t/sys/class/net" 2>/dev/null | grep -v ':$' | head -6); do
        compare "path $t $dev" time -- path --root "$t" "$dev"
        compare "path --json $t $dev" time -- --json path --root "$t" "$dev"
    done
done
for dump in tests/fixtures/captured/pci/*.lspci-xxx tests/fixtures/captured/pci/*.lspci-xxxx; do
    [ -f "$dump" ] || continue
    compare "audit --lspci $dump" time -- audit --lspci "$dump"
    compare "audit --json --lspci $dump" time -- --json audit --lspci "$dump"
done

# ceiling of every kind, count --list.
for args in "pcie --gen 3 --lanes 1,2,4,8 --mps 128,256" "pcie" "usb --speed 480 --transfer bulk" \
    "usb" "eth" "sata" "mmc"; do
    # shellcheck disable=SC2086
    compare "ceiling $args" time -- ceiling $args
    # shellcheck disable=SC2086
    compare "ceiling --json $args" time -- --json ceiling $args
done
compare "count --list" time -- count --list
compare "count --list --json" time -- --json count --list

# live: SOURCE is the working tree's document of the run, rendered by both binaries.
live_run() {
    name=$1
    shift 2
    compare "live $name" numbers -- "$@"
}
if [ $live = 1 ]; then
    d=$work/disk
    mkdir -p "$d"
    live_run "bench disk" -- bench disk "$d" --size 4M --runtime 1s --no-save
    live_run "bench disk fio-json" -- bench disk "$d" --size 4M --runtime 1s --no-save --output-format fio-json
    NO_COLOR=1 "$new" --json bench disk "$d" --size 4M --runtime 1s --no-save >"$work/live-disk.json" 2>/dev/null || true
    live_run "bench latency" -- bench latency -D 1s --no-save
    live_run "bench latency -q -h" -- bench latency -D 1s -q -h 50 --no-save
    NO_COLOR=1 "$new" --json bench latency -D 1s --no-save >"$work/live-latency.json" 2>/dev/null || true
    dd if=/dev/urandom of="$work/mmio.bin" bs=64k count=16 2>/dev/null
    live_run "bench mmio" -- bench mmio "$work/mmio.bin" --no-save
    NO_COLOR=1 "$new" --json bench mmio "$work/mmio.bin" --no-save >"$work/live-mmio.json" 2>/dev/null || true
    live_run "count" -- count --no-save -- true
    live_run "count -x," -- count -x, -- true
    NO_COLOR=1 "$new" --json count --no-save -- true >"$work/live-count.json" 2>/dev/null || true
    # Net: a one-off server of the same binary on a free loopback port for each client run.
    port=$((20000 + $$ % 20000))
    for mode in text J json; do
        for who in base new; do
            if [ $who = base ]; then bin=$base; else bin=$new; fi
            timeout 30 "$bin" bench net -s -1 -p $port >/dev/null 2>&1 &
            server=$!
            sleep 0.5
            case $mode in
            text) extra="" ;;
            J) extra="-J" ;;
            json) extra="--json" ;;
            esac
            # shellcheck disable=SC2086
            NO_COLOR=1 timeout 30 "$bin" $( [ $mode = json ] && echo --json ) bench net 127.0.0.1 -p $port -t 1 --no-save $( [ $mode = J ] && echo -J ) \
                >"$work/net-$mode.$who" 2>"$work/net-$mode-err.$who" || true
            wait $server 2>/dev/null || true
        done
        n=$((n + 1))
        for f in net-$mode net-$mode-err; do
            mask_time <"$work/$f.base" | mask_numbers >"$work/$f.base.m"
            mask_time <"$work/$f.new" | mask_numbers >"$work/$f.new.m"
            if ! cmp -s "$work/$f.base.m" "$work/$f.new.m"; then
                differ=$((differ + 1))
                echo "=== live bench net ($f)"
                diff -u "$work/$f.base.m" "$work/$f.new.m" | head -40 || true
            fi
        done
    done
    cp "$work/net-json.new" "$work/live-net.json"
    for doc in "$work"/live-*.json; do
        if [ -s "$doc" ]; then
            documents "$doc"
        else
            differ=$((differ + 1))
            echo "=== live run wrote no document: $doc"
        fi
    done
fi

echo "output-diff: $n outputs of $ref ($commit) and the working tree compared, $differ differ"
[ $differ = 0 ]
