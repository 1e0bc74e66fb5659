#!/usr/bin/env bash
# headroom bench disk against fio on the same file with the same parameters, alternating
# fio, headroom, fio, headroom ... so drift of a shared machine hits both alike.
# Prints, per test, the medians and the median of the per-round ratios headroom / fio:
# IOPS for RND4K Q32T1 read and write, MB/s for SEQ1M Q8T1 read and write, the mean latency
# (fio's lat_ns, headroom's latency: submission to completion), the I/Os in flight (fio's by
# Little's law, IOPS x mean latency; headroom's as it counted them), and CPU time per I/O
# (user + system of the whole process, io_uring workers included; lower is better).
#
# Usage: bench/vs-fio.sh [DIR] ; env: ROUNDS (5), RUNTIME (5 s), SIZE (1G), HEADROOM (binary),
# ONLY (a word that picks tests by name, e.g. ONLY=RND4K for the two random tests),
# ZERO=1 (both write zeros: fio --zero_buffers, headroom --zero), BUFFERS=pages|huge
# (headroom's --buffers: pages, the default, are 4 KiB pages as fio's malloc'd buffers; huge
# lets a large I/O go down as one request, so SEQ1M may measure above fio).
# Requests per I/O are the device's own count over each tool's I/Os (fio's disk_util,
# headroom's /proc/diskstats cross-check): above 1 the block layer split the I/Os (a 1 MiB
# buffer of 4 KiB pages is 256 segments, more than virtio-blk's max_segments 254).
# Both use io_uring with O_DIRECT; fio gets its fastest io_uring options (fixedbufs,
# registerfiles), as headroom always registers its buffers and file.
# On a VM's or a fast disk the device is often the limit and the ratios sit near 1 within the
# machine's noise; to compare the engines themselves, give a RAM-backed filesystem as DIR, e.g.
#   echo 1300M > /sys/block/zram0/disksize && mkfs.ext4 -q /dev/zram0 && mount /dev/zram0 /mnt/z
# (and afterwards: umount /mnt/z && echo 1 > /sys/block/zram0/reset), with ZERO=1: zram
# compresses what is written, and fio's default data (random with a scrambled header every
# 512 B) costs its compressor about 3x the CPU of fully random data, which would be measured
# instead of the engines; zero pages are stored without compressing.
set -euo pipefail
. "$(dirname "$0")/common.sh"
dir="${1:-/var/tmp}"
rounds="${ROUNDS:-5}"
runtime="${RUNTIME:-5}"
size="${SIZE:-1G}"
need fio fio
need_headroom
file="$dir/headroom-vs-fio.$$.dat"
work="$(mktemp -d)"
fio_zero=(); headroom_zero=()
if [ "${ZERO:-0}" = 1 ]; then fio_zero=(--zero_buffers); headroom_zero=(--zero); fi
buffers=()
case "${BUFFERS:-}" in
    "") ;;
    pages | huge) buffers=(--buffers "$BUFFERS") ;;
    *) echo "vs-fio: BUFFERS=$BUFFERS: use pages or huge" >&2; exit 2 ;;
esac
trap 'rm -f "$file"; rm -rf "$work"' EXIT INT TERM

tests=("RND4K-Q32T1 randread 4k 32 iops" "RND4K-Q32T1 randwrite 4k 32 iops"
       "SEQ1M-Q8T1 read 1M 8 mbs" "SEQ1M-Q8T1 write 1M 8 mbs")
if [ -n "${ONLY:-}" ]; then
    picked=()
    for t in "${tests[@]}"; do [[ "$t" == *"$ONLY"* ]] && picked+=("$t"); done
    [ ${#picked[@]} -gt 0 ] || { echo "vs-fio: ONLY=$ONLY matches no test (RND4K, SEQ1M, randread, write, ...)" >&2; exit 2; }
    tests=("${picked[@]}")
fi

# fio lays the file out once with its random data; both tools then use it as it is (headroom's
# --overwrite lets its write tests write over it; neither refills it between tests).
fio --name=layout --filename="$file" --size="$size" --rw=write --bs=1M --direct=1 \
    --ioengine=psync --output=/dev/null

run_fio() { # rw bs qd out
    fio --name=t --filename="$file" --size="$size" --rw="$1" --bs="$2" --iodepth="$3" \
        --numjobs=1 --ioengine=io_uring --fixedbufs --registerfiles --direct=1 \
        --time_based --runtime="$runtime" "${fio_zero[@]}" --output-format=json > "$4"
}
run_headroom() { # rw bs qd out
    "$headroom" --json bench disk "$file" --no-save --overwrite --rw "$1" --bs "$2" --qd "$3" \
        --jobs 1 --engine io_uring --direct 1 --time-based --runtime "$runtime" \
        --size "$size" "${headroom_zero[@]}" "${buffers[@]}" > "$4"
}

for ((r = 1; r <= rounds; r++)); do
    for t in "${tests[@]}"; do
        read -r name rw bs qd _ <<< "$t"
        echo "round $r/$rounds: $name $rw" >&2
        run_fio "$rw" "$bs" "$qd" "$work/fio.$name.$rw.$r.json"
        run_headroom "$rw" "$bs" "$qd" "$work/headroom.$name.$rw.$r.json"
    done
done

python3 - "$work" "$rounds" "${tests[@]}" <<'PY'
import json, os, statistics, sys
work, rounds, tests = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def fio(path):
    doc = json.load(open(path))
    j = doc["jobs"][0]
    d = j["read"] if j["read"]["total_ios"] else j["write"]
    secs = d["runtime"] / 1000.0
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs
    # The device's completed requests (its diskstats, over the whole job) per I/O of the job.
    disk = (doc.get("disk_util") or [{}])[0]
    ios = j["read"]["total_ios"] + j["write"]["total_ios"]
    req = (disk.get("read_ios", 0) + disk.get("write_ios", 0)) / max(ios, 1)
    # fio's bw_bytes is bytes/s; iops per second; lat_ns from submission to completion.
    lat = d["lat_ns"]["mean"] / 1e3
    return (d["iops"], d["bw_bytes"] / 1e6, cpu / max(d["total_ios"], 1) * 1e6, req, lat,
            d["iops"] * lat / 1e6)
def headroom(path):
    r = json.load(open(path))["tests"][0]["runs"][0]
    c = r["cross_check"]
    req = ((c.get("diskstats_read_requests") or 0) + (c.get("diskstats_write_requests") or 0)) \
        / max(c.get("app_ios") or 0, 1)
    lat = r["latency"]["mean_ns"] / 1e3
    return (r["iops"], r["mb_per_s"], r["cpu_us_per_io"], req, lat,
            r.get("in_flight") or r["iops"] * lat / 1e6)
print(f"{'test':<24}{'metric':<7}{'fio':>12}{'headroom':>12}{'ratio':>8}{'min..max':>14}"
      f"{'lat fio':>10}{'headroom':>10}{'ratio':>8}{'in flight':>11}{'headroom':>10}"
      f"{'CPU/IO fio':>12}{'headroom':>10}{'ratio':>8}{'req/IO fio':>12}{'headroom':>10}")
print(f"{'':<24}{'':<7}{'(median)':>12}{'(median)':>12}{'h/f':>8}{'ratio':>14}"
      f"{'(µs)':>10}{'(µs)':>10}{'h/f':>8}{'fio':>11}{'':>10}"
      f"{'(µs)':>12}{'(µs)':>10}{'h/f':>8}{'(median)':>12}{'(median)':>10}")
for t in tests:
    name, rw, bs, qd, metric = t.split()
    f = [fio(f"{work}/fio.{name}.{rw}.{r}.json") for r in range(1, rounds + 1)]
    h = [headroom(f"{work}/headroom.{name}.{rw}.{r}.json") for r in range(1, rounds + 1)]
    k = 0 if metric == "iops" else 1
    ratios = [hh[k] / ff[k] for hh, ff in zip(h, f)]
    cpu = [hh[2] / ff[2] for hh, ff in zip(h, f)]
    lat = [hh[4] / ff[4] for hh, ff in zip(h, f)]
    unit = "IOPS" if k == 0 else "MB/s"
    print(f"{name + ' ' + rw:<24}{unit:<7}{statistics.median(x[k] for x in f):>12.1f}"
          f"{statistics.median(x[k] for x in h):>12.1f}{statistics.median(ratios):>8.3f}"
          f"{min(ratios):>7.3f}..{max(ratios):<6.3f}"
          f"{statistics.median(x[4] for x in f):>10.1f}{statistics.median(x[4] for x in h):>10.1f}"
          f"{statistics.median(lat):>8.3f}"
          f"{statistics.median(x[5] for x in f):>11.1f}{statistics.median(x[5] for x in h):>10.1f}"
          f"{statistics.median(x[2] for x in f):>12.2f}{statistics.median(x[2] for x in h):>10.2f}"
          f"{statistics.median(cpu):>8.3f}"
          f"{statistics.median(x[3] for x in f):>12.2f}{statistics.median(x[3] for x in h):>10.2f}")
    if os.environ.get("VERBOSE"):
        for r, (ff, hh) in enumerate(zip(f, h), 1):
            print(f"  round {r}: {unit} {ff[k]:.1f} / {hh[k]:.1f} = {hh[k] / ff[k]:.3f}, "
                  f"lat {ff[4]:.1f} / {hh[4]:.1f} µs, in flight {ff[5]:.1f} / {hh[5]:.1f}, "
                  f"CPU/IO {ff[2]:.2f} / {hh[2]:.2f} µs")
PY
