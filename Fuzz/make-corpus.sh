#!/usr/bin/env bash
# Rebuilds the committed seed corpus (Fuzz/corpus/<target>/) from the fixtures. Run from
# anywhere; needs python3 for the store-file seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=Fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{list,public-key,certificate,store-file,host-name,info-plist,network-security-config,sct-list,key-documents,crl}

cp Fixtures/lists/*.json "$corpus/list/"
# The layout `pinstore sign` writes for a whole-list signature (values left empty: the
# fuzzer reaches the signature checks from here).
python3 - "$corpus/list/static-list-signature.json" <<'PY'
import sys
open(sys.argv[1], "w").write('{\n  "listSignature": "",\n  "timestamp": 1800000000,\n  "fingerprints": [\n    {"name": "localhost", "fingerprint": "QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI=", "expires": 4102444799}\n  ]\n}\n')
PY
# The same layout with a revocations section of every kind (the fixture leaf's certificate,
# the intermediate's key, and the leaf's serial under it).
python3 - "$corpus/list/static-revocations.json" <<'PY'
import sys
open(sys.argv[1], "w").write('{\n  "listSignature": "",\n  "revocations": [\n    {"kind":"certificate","leaf":true,"sha256":"QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI="},\n    {"kind":"key","note":"stolen","sha256":"QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI="},\n    {"issuerKeySHA256":"QBlrQy9SCNA3lIzAQe1fO5jKzqU6Dli8T1ZEA5zZzRI=","kind":"issuerSerial","serial":"39:26:3E:9B"}\n  ],\n  "timestamp": 1800000000,\n  "fingerprints": []\n}\n')
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
# The importers: the policy fixtures (good and refused), a binary Info.plist, and the shapes
# the Android importer must resolve (a nested config before its parent's pin-set, CDATA).
cp Fixtures/policies/*.plist "$corpus/info-plist/"
python3 - "$corpus/info-plist/Info-binary.plist" <<'PY'
import plistlib, sys
with open("Fixtures/policies/Info.plist", "rb") as f:
    data = plistlib.load(f)
with open(sys.argv[1], "wb") as f:
    plistlib.dump(data, f, fmt=plistlib.FMT_BINARY)
PY
cp Fixtures/policies/*.xml "$corpus/network-security-config/"
pin_a="oKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKCgoKA="   # 32 bytes of 0xA0, as in the import tests
pin_b="sLCwsLCwsLCwsLCwsLCwsLCwsLCwsLCwsLCwsLCwsLA="   # 32 bytes of 0xB0
cat > "$corpus/network-security-config/nested-before-pin-set.xml" <<XML
<?xml version="1.0" encoding="utf-8"?>
<network-security-config xmlns:tools="http://schemas.android.com/tools">
    <domain-config tools:ignore="Example">
        <domain includeSubdomains="true">example.com</domain>
        <domain-config><domain>api.example.com</domain></domain-config>
        <pin-set expiration="2099-01-01">
            <pin digest="SHA-256">$pin_a</pin>
            <pin digest="SHA-256"><![CDATA[$pin_b]]></pin>
        </pin-set>
    </domain-config>
</network-security-config>
XML
# The SCT list parser: the list of a leaf the test kit issues (SCTs from a P-256, an RSA-2048
# and a static-ct-api log, made through OpenSSL), written by the parsing test that checks it,
# and a few damaged lists (RFC 6962 §3.3 layout: a 2-byte list length, then 2-byte SCT lengths).
PINSTORE_CT_SEED_DIRECTORY="$PWD/$corpus/sct-list" swift test --filter listFromGeneratedLeafParsesToItsSCTs >&2
printf '\x00\x30\x00\x2e' > "$corpus/sct-list/truncated"
printf '\x00\x04\x00\x02\x01\x00' > "$corpus/sct-list/version-2"
printf '\x00\x00' > "$corpus/sct-list/empty"
# Key documents signed with the two fixture keys, which the target trusts as version 1 (either
# key enough): a chain 2 -> 3 (each step signed by a threshold of the keys before it and of its
# own), a final version expired at the target's update time, a skipped version, one envelope
# alone. Signed with the openssl command line (ECDSA P-256 / SHA-256, DER).
python3 - "$corpus/key-documents" <<'PY'
import base64, hashlib, json, os, subprocess, sys, tempfile
out = sys.argv[1]
keys = {name: f"Fixtures/keys/{name}.key.pem" for name in ("list-signing", "other-signing")}
def point(name):
    spki = subprocess.run(["openssl", "pkey", "-in", keys[name], "-pubout", "-outform", "DER"], check=True, capture_output=True).stdout
    return spki[-65:]   # a P-256 SubjectPublicKeyInfo ends with the uncompressed point
def sign(name, payload):
    with tempfile.NamedTemporaryFile() as message:
        message.write(payload); message.flush()
        return subprocess.run(["openssl", "dgst", "-sha256", "-sign", keys[name], message.name], check=True, capture_output=True).stdout
def envelope(version, expires, threshold, members, signers):
    keylist = ", ".join(f'"{base64.b64encode(point(m)).decode()}"' for m in members)
    payload = f'{{"type": "pinstore-keys", "version": {version}, "expires": {expires}, "threshold": {threshold}, "keys": [{keylist}]}}'.encode()
    signatures = [{"keyid": hashlib.sha256(point(s)).hexdigest(), "signature": base64.b64encode(sign(s, payload)).decode()} for s in signers]
    return {"signed": base64.b64encode(payload).decode(), "signatures": signatures}
both = ["list-signing", "other-signing"]
v2 = envelope(2, 2000000000, 2, both, both)
v3 = envelope(3, 2000000000, 1, ["other-signing"], both)
v2_expired = envelope(2, 1850000000, 2, both, both)
def write(name, document):
    open(os.path.join(out, name), "w").write(json.dumps(document, sort_keys=True))
write("chain-2", {"keyDocuments": [v2]})
write("chain-2-3", {"keyDocuments": [v2, v3]})
write("chain-final-expired", {"keyDocuments": [v2_expired]})
write("chain-skipped-2", {"keyDocuments": [v3]})
write("envelope-2", v2)
PY
echo "seed corpus written to $corpus"

# CRLs signed by the fixture intermediate (what the crl target verifies against): empty, with
# revoked entries, and with a delta-CRL indicator; made by `openssl ca -gencrl` in a scratch CA.
crlwork="$(mktemp -d)"
trap 'rm -rf "$crlwork"' EXIT
touch "$crlwork/index.txt"
echo 1000 > "$crlwork/crlnumber"
printf 'V\t300101000000Z\t\t0A\tunknown\t/CN=a\nR\t300101000000Z\t250101000000Z\t0B\tunknown\t/CN=b\n' > "$crlwork/revoked.txt"
cat > "$crlwork/ca.cnf" <<CNF
[ca]
default_ca = fixture
[fixture]
database = \$ENV::CRL_INDEX
crlnumber = $crlwork/crlnumber
default_md = sha256
default_crl_days = 30
[delta]
2.5.29.27 = critical,DER:02:01:01
CNF
for name in empty revoked; do
    index="$crlwork/index.txt"; [ "$name" = revoked ] && index="$crlwork/revoked.txt"
    CRL_INDEX="$index" openssl ca -config "$crlwork/ca.cnf" -gencrl -keyfile Fixtures/pki/intermediate-ca.key.pem \
        -cert Fixtures/pki/intermediate-ca.pem -out "$crlwork/$name.pem" 2>/dev/null
    openssl crl -in "$crlwork/$name.pem" -outform DER -out "$corpus/crl/$name.der"
done
CRL_INDEX="$crlwork/revoked.txt" openssl ca -config "$crlwork/ca.cnf" -gencrl -crlexts delta -keyfile Fixtures/pki/intermediate-ca.key.pem \
    -cert Fixtures/pki/intermediate-ca.pem -out "$crlwork/delta.pem" 2>/dev/null
openssl crl -in "$crlwork/delta.pem" -outform DER -out "$corpus/crl/delta.der"
cp Fixtures/pki/intermediate-ca.der "$corpus/crl/certificate.der"
