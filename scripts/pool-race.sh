#!/usr/bin/env bash
# The long variant of the live pool race (Tests/PinStoreNIOTests/PooledConnectionRaceTests):
# 16 clients on one pinned URLSession while the list switches between pinning the loopback
# server's certificate and withdrawing that pin, over HTTP/1.1 and HTTP/2. Fails if any request
# started after a withdrawing list was in force succeeded, or if any request was written on a
# pooled connection under (or after) the list that withdrew its pin (the pool's write observer).
#
#   scripts/pool-race.sh          10,000 switches each (CI runs 1,000 in swift test)
#   scripts/pool-race.sh 50000
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
PINSTORE_RACE_ITERATIONS="${1:-10000}" swift test --skip-build --filter PooledConnectionRaceTests 2>&1 \
    | grep -E 'pool race|passed|failed|recorded an issue'
