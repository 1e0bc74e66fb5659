#!/usr/bin/env bash
# Static headroom binaries for boards and servers:
#   dist/headroom-<version>-<target>/headroom       (the binary, stripped)
#   dist/headroom-<version>-<target>.tar.gz         (binary + README + the ids' licence)
#   dist/SHA256SUMS
# for x86_64, aarch64 and 32-bit ARM (ARMv7 hard-float) musl, every feature on but the PostgreSQL
# client (a lab's history: boards bring their documents to it with `history import`) and
# iperf3's RSA authentication in bench net (SQLite bundled, io_uring, plots, the built-in
# pci.ids/usb.ids are in). Each must stay under 5,000,000 B: the script
# ends with scripts/size-check.sh, which fails naming a binary that reached it. Sizes and what
# makes them small: docs/boards.md.
#
#   scripts/dist.sh                      # all three targets, profile `dist`
#   TARGETS=aarch64-unknown-linux-musl scripts/dist.sh
#   PROFILE=release scripts/dist.sh      # faster build, a little larger binary
#
# The C parts (SQLite) are cross-compiled by zig through cargo-zigbuild; both come from PyPI
# (`pip install ziglang cargo-zigbuild`). When they are not on PATH they are installed into a
# virtual environment under target/dist-tools (CARGO_TARGET_DIR/dist-tools when that is set;
# needs python3 with venv: Debian's python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

# 32-bit ARM as armv7-unknown-linux-musleabihf (A32 code, runs on any ARMv7-A hard-float core,
# NEON or not). TARGETS=thumbv7neon-unknown-linux-musleabihf builds the same ABI as Thumb-2
# code with NEON, about 0.7 MB smaller (every ARMv7 core of the boards the README names has
# NEON: Cortex-A7/A9/A15/A17).
TARGETS=${TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl armv7-unknown-linux-musleabihf}
PROFILE=${PROFILE:-dist}
# Versions this script was checked with (pinned so a new release upstream cannot break it).
ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.0

say() { echo "dist: $*" >&2; }
die() { echo "dist: $*" >&2; exit 1; }

# Where cargo puts what it builds: target/ unless CARGO_TARGET_DIR or build.target-dir says
# otherwise (cargo metadata's target_directory is the one cargo build uses).
read -r version target_dir < <(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; m = json.load(sys.stdin); print(next(p["version"] for p in m["packages"] if p["name"] == "headroom"), m["target_directory"])')
[[ -n $target_dir ]] || die "cargo metadata did not say where cargo builds"

tools=$target_dir/dist-tools/venv
if ! command -v cargo-zigbuild >/dev/null || ! { command -v zig >/dev/null || python3 -m ziglang version >/dev/null 2>&1; }; then
    if [[ ! -x $tools/bin/cargo-zigbuild ]]; then
        say "installing ziglang $ZIGLANG_VERSION and cargo-zigbuild $CARGO_ZIGBUILD_VERSION into $tools"
        python3 -m venv "$tools" || die "python3 -m venv failed: install python3-venv (Debian) or put zig and cargo-zigbuild on PATH"
        "$tools/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
    fi
    export PATH=$tools/bin:$PATH
fi

mkdir -p dist

# The standard library is built from source (the rust-src component) with the binary, so that
# it carries only what headroom uses (under 5,000,000 B each). Measured on x86_64 musl,
# headroom 0.1.0, 2026-11-23, bytes of the stripped binary:
#   prebuilt std, panic=unwind                                   4,898,768
#   std from source without its backtrace symbolizer (gimli,
#     addr2line, miniz_oxide: only RUST_BACKTRACE's output)      4,563,760
#   + panic=abort (profile `dist`)                               4,017,416
#   + no unwind tables (-C force-unwind-tables=no)               3,621,992
# panic=abort: a panic (a bug) prints its message and ends the process without unwinding; the
# one thing headroom cleans up on the way out, bench disk's test file, is removed by the panic
# hook (crates/cli/src/main.rs). Without unwind tables gdb and `perf --call-graph dwarf` cannot
# walk the stack of these binaries: `cargo build --profile profiling` keeps everything.
# -Zbuild-std is unstable: RUSTC_BOOTSTRAP lets the stable compiler take it (the targets are
# stable tier-2 ones). Without the prebuilt std there are no self-contained crt objects and libc
# either: link-self-contained=no takes zig's musl. RUSTFLAGS_<target> replaces the target's
# rustflags in .cargo/config.toml, so they are repeated here.
rustup component list --installed | grep -q '^rust-src' || rustup component add rust-src >&2 ||
    die "rustup component add rust-src failed (the standard library is built from its source)"

# The profile's panic strategy decides which panic runtime is built (`dist` aborts; PROFILE=release
# unwinds, and keeps its unwind tables).
if [[ $(sed -n "/^\[profile.$PROFILE\]/,/^\[/p" Cargo.toml) == *'panic = "abort"'* ]]; then
    std_args=(-Zbuild-std=std,panic_abort -Zbuild-std-features=optimize_for_size)
    # No file and line in panic messages (a panic still prints its message and aborts): the
    # locations of every possible panic are 54 kB of the x86_64 binary (2026-11-25).
    # Derived Debug impls print only the type's or variant's name (-Zfmt-debug=shallow): no
    # output of headroom formats a derived Debug beyond a unit variant, whose name it keeps.
    unwind_tables="-C force-unwind-tables=no -Zlocation-detail=none -Zfmt-debug=shallow"
else
    std_args=(-Zbuild-std=std,panic_unwind -Zbuild-std-features=panic-unwind,optimize_for_size)
    unwind_tables=
fi

for target in $TARGETS; do
    flags="-C link-self-contained=no $unwind_tables"
    [[ $target == armv7-* ]] && flags="--cfg=io_uring_skip_arch_check $flags"
    [[ $target == thumbv7* ]] && flags="--cfg=io_uring_skip_arch_check $flags"
    var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_RUSTFLAGS
    # The C parts (SQLite) without unwind tables (74 KB of the x86_64 binary): no Rust panic
    # unwinds through C frames (an unwind out of an `extern "C"` function aborts, and rusqlite
    # catches panics in its callbacks), and nothing unwinds C itself. cc-rs reads CFLAGS_<target>.
    cflags=CFLAGS_$(tr -- - _ <<<"$target")
    export "$cflags=${!cflags:-} -fno-asynchronous-unwind-tables -fno-unwind-tables"
    build=(env RUSTC_BOOTSTRAP=1 "$var=$flags"
        cargo zigbuild --locked --profile "$PROFILE" --target "$target" -p headroom
        --no-default-features --features builtin-ids "${std_args[@]}")
    say "building $target ($PROFILE profile)"
    start=$SECONDS
    "${build[@]}" >&2
    say "$target built in $((SECONDS - start)) s"

    bin=$target_dir/$target/$PROFILE/headroom
    file -b "$bin" | grep -q "statically linked" || die "$bin is not statically linked: $(file -b "$bin")"
    name=headroom-$version-$target
    rm -rf "dist/$name"
    mkdir "dist/$name"
    cp "$bin" "dist/$name/headroom"
    cp README.md "dist/$name/README.md"
    cp crates/probe/data/README.md "dist/$name/LICENSE-ids.md"
    # Reproducible archive: fixed owner, order and time stamps.
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C dist -cf - "$name" |
        gzip -9 -n >"dist/$name.tar.gz"
done

(cd dist && sha256sum headroom-"$version"-*.tar.gz >SHA256SUMS)
say "done; binary sizes (bytes):"
built=()
for target in $TARGETS; do
    f=dist/headroom-$version-$target/headroom
    printf '%-36s %9d  %s\n' "$target" "$(stat -c %s "$f")" "$(file -b "$f" | cut -d, -f1-2,4-5)"
    built+=("$f")
done
# The board limit (under 5,000,000 B each): this script, and so CI, fails when one reaches it,
# naming the binary and its size.
scripts/size-check.sh "${built[@]}"
