#!/usr/bin/env bash
# Issue 32, finding 1: one list update against a server that sends 1 GiB of zeros as gzip
# (4.6 MB) whatever the request asked for. Runs the test that does it
# (PinStoreEndToEndTests/aGzipEncodedListIsRefusedUnreadAndThePinsInForceStay) in a process of
# its own with that body, and the plain-list update test the same way as the baseline, and
# prints each process's peak resident memory (VmHWM through /usr/bin/time). Fails when the
# bomb's process peaks more than 256 MiB above the baseline's (before the fix: 2.27 GB against
# 141 MB).
#
#   scripts/list-download-bomb.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }
swift build --build-tests >/dev/null
binary="$(swift build --show-bin-path)/PinStorePackageTests.xctest"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c $((1024 * 1024 * 1024)) /dev/zero | gzip -1 -n > "$work/zeros-1GiB.gz"

peak() {  # peak resident KiB of the test named $1 (extra environment in $2)
    env $2 /usr/bin/time -v "$binary" --testing-library swift-testing --filter "$1" >"$work/out" 2>&1 || {
        cat "$work/out" >&2; echo "the test failed" >&2; exit 1; }
    awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/out"
}
baseline=$(peak 'PinStoreEndToEndTests/staticListUpdatesOverRealHTTP' "")
bomb=$(peak 'PinStoreEndToEndTests/aGzipEncodedListIsRefusedUnreadAndThePinsInForceStay' "PINSTORE_GZIP_BOMB=$work/zeros-1GiB.gz")
echo "peak resident: plain list $((baseline / 1024)) MiB; 1 GiB gzip bomb $((bomb / 1024)) MiB ($(stat -c %s "$work/zeros-1GiB.gz") bytes sent)"
if [ $((bomb - baseline)) -gt $((256 * 1024)) ]; then
    echo "error: the bomb grew the process by more than 256 MiB" >&2
    exit 1
fi
