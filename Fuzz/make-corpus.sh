#!/usr/bin/env bash
# Rebuilds the committed seed corpus (Fuzz/corpus/<target>/) from the fixtures. Run from
# anywhere; needs python3 for the store-file seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=Fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{list,public-key,certificate,store-file,host-name}

cp Fixtures/lists/*.json "$corpus/list/"
# The layout `pinstore sign` writes for a whole-list signature (values left empty: the
# fuzzer reaches the signature checks from here).
python3 - "$corpus/list/static-list-signature.json" <<'PY'
import sys
open(sys.argv[1], "w").write('{\n  "listSignature": "",\n  "timestamp": 1800000000,\n  "fingerprints": [\n    {"name": "localhost", "fingerprint": "QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI=", "expires": 4102444799}\n  ]\n}\n')
PY

cp Fixtures/keys/*.pub.* "$corpus/public-key/" 2>/dev/null || true
for pem in Fixtures/keys/*.pub.pem; do
    openssl pkey -pubin -in "$pem" -outform DER -out "$corpus/public-key/$(basename "$pem" .pem).der" 2>/dev/null || true
done

cp Fixtures/pki/*.pem Fixtures/pki/*.der "$corpus/certificate/"
rm -f "$corpus"/certificate/*.key.pem   # private keys are not certificates

# Store files as the store writes them (PersistedList, JSON with sorted keys).
python3 - "$corpus/store-file" <<'PY'
import base64, json, os, sys
out = sys.argv[1]
def store(name, mode, body, challenge=None, signature=None):
    doc = {"body": base64.b64encode(body).decode(), "format": 1, "mode": mode, "nextUpdate": 1893456000.0}
    if challenge is not None: doc["challenge"] = challenge
    if signature is not None: doc["signature"] = signature
    open(os.path.join(out, name), "w").write(json.dumps(doc, sort_keys=True, separators=(",", ":")))
lists = "Fixtures/lists"
store("static-good", "static", open(f"{lists}/static-good.json", "rb").read())
store("static-depth", "static", open(f"{lists}/static-depth.json", "rb").read())
store("challenge-good", "challenge", open(f"{lists}/challenge-good.json", "rb").read(),
      open(f"{lists}/challenge.txt").read().strip(), open(f"{lists}/challenge-good.sig").read().strip())
PY

printf 'api.example.com' > "$corpus/host-name/plain"
printf '*.pinstore.test' > "$corpus/host-name/wildcard"
printf 'API.Example.COM.' > "$corpus/host-name/upper-trailing-dot"
printf '*.co.uk' > "$corpus/host-name/public-suffix"
printf '::1' > "$corpus/host-name/ipv6"
echo "seed corpus written to $corpus"
