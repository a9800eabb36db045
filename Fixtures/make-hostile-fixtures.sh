#!/usr/bin/env bash
# Bodies a hostile list server sends (issue 32). Regenerate with: Fixtures/make-hostile-fixtures.sh
set -euo pipefail
cd "$(dirname "$0")/hostile"
# 64 MiB of zeros, gzip-compressed (about 64 KB): a "gzip bomb" that inflates 1,000-fold, far
# past any list limit. -n: no name or time stamp, so the bytes are the same on every run.
head -c $((64 * 1024 * 1024)) /dev/zero | gzip -9 -n > zeros-64MiB.gz
