#!/usr/bin/env bash
# Fails (exit 1) when the public API of the library products is not source-compatible with the
# baseline: the commit named in .ci/api-baseline (the last commit that changed the public API on
# purpose), minus the breaks listed in .ci/api-breakage-allowlist. SwiftPM checks the baseline
# out and builds it in a scratch folder of its own (.build/apidiff), so a first run builds the
# package twice; the baseline's API digests are kept in .build/api-baselines between runs.
#
# An intended break: in the same commit, add the exact "API breakage: ..." lines this script
# printed to .ci/api-breakage-allowlist and say what users must change in CHANGELOG.md. Later
# (at the latest with the next release), set .ci/api-baseline to a commit at or after the break
# and empty the allow-list. See CONTRIBUTING.md, "Changing the public API".
set -euo pipefail
cd "$(dirname "$0")/.."

baseline=$(grep -v '^#' .ci/api-baseline | tr -d '[:space:]')
if [ -z "$baseline" ]; then
    echo "error: .ci/api-baseline names no commit" >&2
    exit 1
fi

# A shallow clone may lack the baseline commit: fetch the rest of the history once.
if ! git cat-file -e "${baseline}^{commit}" 2>/dev/null; then
    if [ "$(git rev-parse --is-shallow-repository)" = "true" ]; then
        git fetch --quiet --unshallow || true
    fi
    if ! git cat-file -e "${baseline}^{commit}" 2>/dev/null; then
        echo "error: the API baseline $baseline (.ci/api-baseline) is not in this clone's history;" \
             "was the branch that set it squashed or rebased? Point .ci/api-baseline at a commit of main." >&2
        exit 1
    fi
fi

# The products users depend on; the CLI is an executable, not API.
products=(PinStore PinStoreNIO PinStoreAsyncHTTPClient PinStoreGRPC PinStoreSigning PinStorePublisher PinStoreTesting)
args=()
for product in "${products[@]}"; do args+=(--products "$product"); done
allowlist=()
if [ -s .ci/api-breakage-allowlist ]; then
    allowlist=(--breakage-allowlist-path .ci/api-breakage-allowlist)
fi

# SwiftPM also compares @_spi declarations; the fuzz and benchmark hooks behind @_spi serve
# Fuzz/ and Benchmarks/ only and are no API (README), so their changes are shown, not counted.
hooks='FuzzEntryPoints|BenchmarkEntryPoints'
output=$(mktemp)
trap 'rm -f "$output"' EXIT
status=0
swift package diagnose-api-breaking-changes "$baseline" "${args[@]}" "${allowlist[@]}" \
    --baseline-dir .build/api-baselines 2>&1 | tee "$output" || status=$?
[ "$status" -eq 0 ] && exit 0
if ! grep -q 'API breakage:' "$output"; then
    echo "error: diagnose-api-breaking-changes failed before comparing (exit $status; see above)" >&2
    exit "$status"
fi
if grep 'API breakage:' "$output" | grep -qvE "$hooks"; then
    echo "error: the public API is not source-compatible with $baseline (.ci/api-baseline)." \
         "If the break is intended, see CONTRIBUTING.md, \"Changing the public API\"." >&2
    exit 1
fi
echo "note: only the @_spi fuzz and benchmark hooks changed; they are not API" >&2
