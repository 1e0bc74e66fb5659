#!/usr/bin/env bash
# Static headroom binaries for boards and servers:
#   dist/headroom-<version>-<target>/headroom       (the binary, stripped)
#   dist/headroom-<version>-<target>.tar.gz         (binary + README + the ids' licence)
#   dist/SHA256SUMS
# for x86_64, aarch64 and 32-bit ARM (ARMv7 Thumb-2) musl, every feature on (SQLite bundled,
# io_uring, plots, the built-in pci.ids/usb.ids).
#
#   scripts/dist.sh                      # all three targets, profile `dist`
#   TARGETS=aarch64-unknown-linux-musl scripts/dist.sh
#   PROFILE=release scripts/dist.sh      # faster build, a little larger binary
#
# The C parts (SQLite) are cross-compiled by zig through cargo-zigbuild; both come from PyPI
# (`pip install ziglang cargo-zigbuild`). When they are not on PATH they are installed into a
# virtual environment under target/dist-tools (needs python3 with venv: Debian's python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

# 32-bit ARM as Thumb-2 with NEON (thumbv7neon): the same ARMv7-A hard-float ABI as
# armv7-unknown-linux-musleabihf, about 0.7 MB smaller than its ARM (A32) code. Every ARMv7
# core of the boards named in the README has NEON (Cortex-A7/A9/A15/A17); TARGETS=armv7-unknown-
# linux-musleabihf builds the A32, NEON-free variant for a core without it.
TARGETS=${TARGETS:-x86_64-unknown-linux-musl aarch64-unknown-linux-musl thumbv7neon-unknown-linux-musleabihf}
PROFILE=${PROFILE:-dist}
# Versions this script was checked with (pinned so a new release upstream cannot break it).
ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.0

say() { echo "dist: $*" >&2; }
die() { echo "dist: $*" >&2; exit 1; }

tools=target/dist-tools/venv
if ! command -v cargo-zigbuild >/dev/null || ! { command -v zig >/dev/null || python3 -m ziglang version >/dev/null 2>&1; }; then
    if [[ ! -x $tools/bin/cargo-zigbuild ]]; then
        say "installing ziglang $ZIGLANG_VERSION and cargo-zigbuild $CARGO_ZIGBUILD_VERSION into $tools"
        python3 -m venv "$tools" || die "python3 -m venv failed: install python3-venv (Debian) or put zig and cargo-zigbuild on PATH"
        "$tools/bin/pip" install -q "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
    fi
    export PATH=$PWD/$tools/bin:$PATH
fi

version=$(cargo metadata --no-deps --format-version 1 --locked |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "headroom"))')
mkdir -p dist

for target in $TARGETS; do
    build=(cargo zigbuild --locked --profile "$PROFILE" --target "$target" -p headroom)
    if ! rustup target list --installed | grep -qx "$target" && ! rustup target add "$target" >&2; then
        # Some rustup mirrors lack a target's prebuilt std (seen for armv7 musl and thumbv7neon
        # musl): build std from the rust-src component instead. RUSTC_BOOTSTRAP lets the stable
        # compiler take -Zbuild-std; the target itself is a stable, tier-2 one.
        say "no prebuilt std for $target from rustup: building it from rust-src (-Zbuild-std)"
        rustup component add rust-src >&2 || die "rustup component add rust-src failed"
        # Without the prebuilt std there are no self-contained crt objects and libc either:
        # link-self-contained=no takes zig's musl instead. This variable replaces the
        # target's rustflags in .cargo/config.toml, so they are repeated here.
        flags="-C link-self-contained=no"
        [[ $target == armv7-* ]] && flags="--cfg=io_uring_skip_arch_check $flags"
        [[ $target == thumbv7* ]] && flags="--cfg=io_uring_skip_arch_check -C relocation-model=static $flags"
        var=CARGO_TARGET_$(tr 'a-z-' 'A-Z_' <<<"$target")_RUSTFLAGS
        build=(env RUSTC_BOOTSTRAP=1 "$var=$flags" "${build[@]}" -Zbuild-std=std,panic_unwind)
    fi
    # The C parts (SQLite) without unwind tables (74 KB of the x86_64 binary): no Rust panic
    # unwinds through C frames (an unwind out of an `extern "C"` function aborts, and rusqlite
    # catches panics in its callbacks), and nothing unwinds C itself. cc-rs reads CFLAGS_<target>.
    cflags=CFLAGS_$(tr -- - _ <<<"$target")
    export "$cflags=${!cflags:-} -fno-asynchronous-unwind-tables -fno-unwind-tables"
    say "building $target ($PROFILE profile)"
    start=$SECONDS
    "${build[@]}" >&2
    say "$target built in $((SECONDS - start)) s"

    bin=target/$target/$PROFILE/headroom
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
for target in $TARGETS; do
    f=dist/headroom-$version-$target/headroom
    printf '%-36s %9d  %s\n' "$target" "$(stat -c %s "$f")" "$(file -b "$f" | cut -d, -f1-2,4-5)"
done
