# What the bench/vs-*.sh comparisons share; they source it after `set -euo pipefail`.
# Sets `here` (the repository) and `headroom` (HEADROOM, else target/release/headroom).
# need TOOL PACKAGE: stop with a sentence when TOOL is not installed.
# need_headroom: stop with a sentence when the headroom binary is not built.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
headroom="${HEADROOM:-$here/target/release/headroom}"
script="$(basename "$0" .sh)"

need() {
    command -v "$1" >/dev/null || { echo "$script: $1 is not installed (apt-get install -y $2)" >&2; exit 1; }
}

need_headroom() {
    [ -x "$headroom" ] || { echo "$script: $headroom is missing; build it first: cargo build --release" >&2; exit 1; }
}
