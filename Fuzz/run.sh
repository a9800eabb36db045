#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 10), starting from the committed
# seed corpus (Fuzz/corpus/<target>). New interesting inputs go to Fuzz/.work/<target> (not
# committed); a crash leaves its input in Fuzz/.work/crashes/ and makes the script fail.
#
#   Fuzz/run.sh 10                 every target, 10 s each (what CI runs)
#   Fuzz/run.sh 600 list           one target
#
# Builds Fuzz/ (its own package, never part of a user's build) with
# -sanitize=fuzzer,address (libFuzzer plus AddressSanitizer), optimized.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-10}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(list public-key certificate store-file host-name info-plist network-security-config sct-list key-documents crl)

# --sanitize makes SwiftPM link libFuzzer's main; -Xswiftc instruments the dependencies too
# (PinStore itself: --sanitize alone reaches only this package's own target).
flags=(-c release --scratch-path .build --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address)
swift build "${flags[@]}" >&2
binary="$(swift build "${flags[@]}" --show-bin-path)/PinStoreFuzz"

# Leaks inside the toolchain's Foundation, not ours: see lsan-suppressions.txt.
export LSAN_OPTIONS="suppressions=$PWD/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

mkdir -p .work/crashes
total=0
status=0
for target in "${targets[@]}"; do
    mkdir -p ".work/$target"
    log=".work/$target.log"
    echo "== $target: ${seconds}s" >&2
    extra=()
    # XMLParser leaks a CFError on every malformed input (see lsan-suppressions.txt). With leak
    # detection on, libFuzzer then scans the heap after each such input: about 200 executions a
    # second instead of 5,000-11,000. The importers' own memory is ARC-managed; the test suite's
    # AddressSanitizer run covers them otherwise.
    case "$target" in
        info-plist|network-security-config) extra=(-detect_leaks=0) ;;
    esac
    if ! FUZZ_TARGET="$target" "$binary" ".work/$target" "corpus/$target" "${extra[@]}" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
        -artifact_prefix=".work/crashes/$target-" -print_final_stats=1 >"$log" 2>&1; then
        echo "!! $target found a crash; see Fuzz/$log and Fuzz/.work/crashes/" >&2
        tail -40 "$log" >&2
        status=1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    echo "   $target: $runs executions" >&2
    total=$((total + runs))
done
echo "fuzzing: $total executions in all" >&2
exit $status
