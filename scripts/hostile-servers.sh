#!/usr/bin/env bash
# The long variants of Tests/PinStoreNIOTests/HostileServerTests: each hostile case served on
# 127.0.0.1 by one process and requested by a fresh pinned-URLSession process (5 s request and
# 10 s resource timeout), which prints its time to fail, peak RSS growth over its baseline, CPU
# seconds and each request's error (HostileServerFigures). A client passing 2 GiB RSS is killed.
#
#   scripts/hostile-servers.sh                 every case
#   scripts/hostile-servers.sh pingFlood       named cases
#   PARALLEL=4 scripts/hostile-servers.sh endlessBody    four completion-handler requests at once
#   CLIENT=ahc scripts/hostile-servers.sh                plain AsyncHTTPClient instead, for comparison
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests >/dev/null
binary="$(swift build --show-bin-path)/PinStorePackageTests.xctest"
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
    cases=(pingFlood settingsFlood continuationFlood http2OversizedHeaders http2InformationalStorm windowUpdateOverflow
           pushPromise endlessStatusLine informationalStorm endlessHeaders endlessBody endlessBodyHTTP2)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for name in "${cases[@]}"; do
    rm -f "$work/port"
    PINSTORE_HOSTILE_SERVE="$name" PINSTORE_HOSTILE_PORT_FILE="$work/port" PINSTORE_HOSTILE_SECONDS=25 \
        "$binary" --testing-library swift-testing --filter 'HostileServerFigures/serve' >"$work/server.log" 2>&1 &
    server=$!
    for _ in $(seq 1 200); do [ -s "$work/port" ] && break; sleep 0.1; done
    path=/; case "$name" in endlessBody*) path="/stream?mib=0";; esac
    url="https://localhost:$(cat "$work/port")$path"
    if [ "${CLIENT:-pinned}" = ahc ]; then
        PINSTORE_HOSTILE_AHC_URL="$url" PINSTORE_HOSTILE_PARALLEL="${PARALLEL:-1}" \
            "$binary" --testing-library swift-testing --filter 'HostileServerFiguresAHC/asyncHTTPClient' >"$work/client.log" 2>&1 &
    else
        PINSTORE_HOSTILE_URL="$url" PINSTORE_HOSTILE_PARALLEL="${PARALLEL:-1}" \
            "$binary" --testing-library swift-testing --filter 'HostileServerFigures/pinnedClient' >"$work/client.log" 2>&1 &
    fi
    client=$!
    peak=0
    while kill -0 "$client" 2>/dev/null; do
        rss=$(awk '/VmRSS/ {print $2}' "/proc/$client/status" 2>/dev/null || echo 0)
        [ "${rss:-0}" -gt "$peak" ] && peak=$rss
        if [ "${rss:-0}" -gt 2097152 ]; then kill -9 "$client"; echo "$name: client killed at 2 GiB"; fi
        sleep 0.05
    done
    wait "$client" || true
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    echo "== $name (${CLIENT:-pinned}, parallel ${PARALLEL:-1}): sampled peak RSS $((peak / 1024)) MiB"
    grep 'hostile-figures' "$work/client.log" | sed 's/^/   /' || echo "   (no figures: the client did not finish)"
done
