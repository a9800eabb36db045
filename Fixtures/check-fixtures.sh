#!/usr/bin/env bash
# Verifies the output of make-fixtures.sh independently of how it was made:
# every signed list entry and challenge signature is rebuilt from the files
# and checked with `openssl dgst -verify`; the deliberately bad ones must
# fail; certificates must verify (or fail) the way their names promise.
# Exits non-zero if anything is off. Tools: OpenSSL 3.x, bash, coreutils
# (jq, when present, additionally checks which lists are valid JSON).
# Run from any directory: Fixtures/check-fixtures.sh
set -euo pipefail

cd "$(dirname "$0")"
PKI=pki KEYS=keys LISTS=lists
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

failures=0 checks=0
ok()   { checks=$((checks + 1)); }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL: $*" >&2; }
same() { # description actual expected
  if [[ $2 == "$3" ]]; then ok; else fail "$1: got '$2', expected '$3'"; fi
}

# ------------------------------------------------------------ signatures --

LIST_PUB=$KEYS/list-signing.pub.pem
OTHER_PUB=$TMP/other-signing.pub.pem
openssl pkey -in "$KEYS/other-signing.key.pem" -pubout -out "$OTHER_PUB"

# True when the Base64 DER signature verifies over the data on stdin.
verifies() { # pub.pem signature-b64
  cat >"$TMP/data"
  printf '%s' "$2" | base64 -d >"$TMP/sig" 2>/dev/null || return 1
  openssl dgst -sha256 -verify "$1" -signature "$TMP/sig" "$TMP/data" >/dev/null 2>&1
}

# make-fixtures.sh writes one entry per line; pull members out of such a line.
member() { # line key  -> string value, number, or quoted-string contents
  sed -n "s/.*\"$2\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" <<<"$1"
}

# Checks each entry of FILE in order: "ok" = its signature over
# name&fingerprint&expires verifies with PUB, "bad" = it does not,
# "none" = it has no signature.
check_entries() { # file pub expectation...
  local list=$1 file=$LISTS/$1 pub=$2
  shift 2
  local expected=("$@") i=0 line
  while IFS= read -r line; do
    [[ $line == *'"name":'* ]] || continue
    local name fp expires sig got
    name=$(member "$line" name)
    fp=$(member "$line" fingerprint)
    expires=$(member "$line" expires)
    sig=$(member "$line" signature)
    if [[ -z $sig ]]; then got=none
    elif printf '%s&%s&%s' "$name" "$fp" "$expires" | verifies "$pub" "$sig"; then got=ok
    else got=bad; fi
    same "$list entry $((i + 1)) ($name) with $(basename "$pub")" "$got" "${expected[i]:-<no entry expected>}"
    i=$((i + 1))
  done <"$file"
  same "$list entry count" "$i" "${#expected[@]}"
}

check_entries static-good.json             "$LIST_PUB" ok ok ok ok
check_entries static-depth.json            "$LIST_PUB" ok
check_entries static-expired-only.json     "$LIST_PUB" ok
check_entries static-empty.json            "$LIST_PUB"
check_entries fallback.json                "$LIST_PUB" ok
check_entries static-tampered-fingerprint.json "$LIST_PUB" ok bad
check_entries static-wrong-key.json        "$LIST_PUB" bad
check_entries static-wrong-key.json        "$OTHER_PUB" ok
check_entries static-missing-signature.json "$LIST_PUB" none
check_entries static-invalid-signature.json "$LIST_PUB" bad
check_entries static-wrong-types.json      "$LIST_PUB" ok
check_entries static-bad-base64.json       "$LIST_PUB" ok
check_entries static-short-fingerprint.json "$LIST_PUB" ok
check_entries static-negative-expires.json "$LIST_PUB" ok
check_entries static-fractional-expires.json "$LIST_PUB" ok
check_entries static-absurd-expires.json   "$LIST_PUB" ok
check_entries static-duplicate.json        "$LIST_PUB" ok ok
check_entries static-not-object.json       "$LIST_PUB" ok

fingerprint() { openssl x509 -in "$1" -outform DER | openssl dgst -sha256 -binary | base64 | tr -d '\n'; }
FP_LOCALHOST=$(fingerprint $PKI/localhost.pem)

# The fingerprints name the certificates they claim to.
nth_fp() { grep '"name":' "$LISTS/$1" | sed -n "${2}p" | sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p'; }
same "static-good #1 is localhost.pem"  "$(nth_fp static-good.json 1)" "$FP_LOCALHOST"
same "static-good #2 is api-p256.pem"   "$(nth_fp static-good.json 2)" "$(fingerprint $PKI/api-p256.pem)"
same "static-good #3 is api-rsa.pem"    "$(nth_fp static-good.json 3)" "$(fingerprint $PKI/api-rsa.pem)"
same "static-good #4 is wildcard.pem"   "$(nth_fp static-good.json 4)" "$(fingerprint $PKI/wildcard.pem)"
same "static-depth is intermediate"     "$(nth_fp static-depth.json 1)" "$(fingerprint $PKI/intermediate-ca.pem)"
same "tampered carries attacker.pem's"  "$(nth_fp static-tampered-fingerprint.json 2)" "$(fingerprint $PKI/attacker.pem)"
same "short fingerprint is 31 bytes"    "$(nth_fp static-short-fingerprint.json 1 | base64 -d | wc -c)" 31
same "fallback is localhost.pem"        "$(nth_fp fallback.json 1)" "$FP_LOCALHOST"
# The tampered entry was signed over localhost.pem's fingerprint.
line=$(grep '"name":' $LISTS/static-tampered-fingerprint.json | sed -n 2p)
if printf 'localhost&%s&4102444799' "$FP_LOCALHOST" | verifies "$LIST_PUB" "$(member "$line" signature)"; then ok
else fail "tampered entry was not signed over localhost.pem's fingerprint"; fi
# The entry without a fingerprint was signed over localhost.pem's.
line=$(grep '"name":' $LISTS/static-missing-field.json)
[[ $line != *'"fingerprint"'* ]] && ok || fail "static-missing-field.json has a fingerprint"
if printf 'localhost&%s&4102444799' "$FP_LOCALHOST" | verifies "$LIST_PUB" "$(member "$line" signature)"; then ok
else fail "static-missing-field.json signature"; fi
grep -q '"expires":"4102444799"' $LISTS/static-wrong-types.json && ok || fail "static-wrong-types.json expires is not a string"
grep -q '"depth":1' $LISTS/static-depth.json && ok || fail "static-depth.json has no depth"
same "static-empty.json" "$(cat $LISTS/static-empty.json)" '{"fingerprints":[]}'
[[ $(head -c 1 $LISTS/static-not-object.json) == '[' ]] && ok || fail "static-not-object.json is not an array"

# Challenge mode: signature over challenge + "&" + exact body bytes.
CHALLENGE=$(cat $LISTS/challenge.txt)
same "challenge.txt" "$CHALLENGE" "AAECAwQFBgcICQoLDA0ODw=="
check_challenge() { # sig-file challenge body-file pub expectation
  local got=bad
  if { printf '%s&' "$2"; cat "$LISTS/$3"; } | verifies "$4" "$(cat "$LISTS/$1")"; then got=ok; fi
  same "$1 over $3 with $(basename "$4")" "$got" "$5"
}
OTHER=$(cat $LISTS/challenge-other.txt)
check_challenge challenge-good.sig            "$CHALLENGE" challenge-good.json  "$LIST_PUB"  ok
check_challenge challenge-older.sig           "$CHALLENGE" challenge-older.json "$LIST_PUB"  ok
check_challenge challenge-good.sig            "$CHALLENGE" challenge-older.json "$LIST_PUB"  bad
check_challenge challenge-other-challenge.sig "$CHALLENGE" challenge-good.json  "$LIST_PUB"  bad
check_challenge challenge-other-challenge.sig "$OTHER"     challenge-good.json  "$LIST_PUB"  ok
check_challenge challenge-wrong-key.sig       "$CHALLENGE" challenge-good.json  "$LIST_PUB"  bad
check_challenge challenge-wrong-key.sig       "$CHALLENGE" challenge-good.json  "$OTHER_PUB" ok
same "challenge-good.json" "$(cat $LISTS/challenge-good.json)" \
  "{\"timestamp\":1767225600,\"fingerprints\":[{\"name\":\"localhost\",\"fingerprint\":\"$FP_LOCALHOST\",\"expires\":4102444799}]}"
same "challenge-older.json timestamp" "$(sed 's/.*"timestamp":\([0-9]*\).*/\1/' $LISTS/challenge-older.json)" 1735689600

# One-line files whose exact bytes matter end without a newline.
for f in $LISTS/challenge*.txt $LISTS/challenge*.json $LISTS/challenge*.sig $KEYS/*.b64; do
  [[ $(tail -c 1 "$f" | od -An -c | tr -d ' ') != '\n' ]] && ok || fail "$f ends with a newline"
  [[ $(wc -l <"$f") -eq 0 ]] && ok || fail "$f has more than one line"
done

if command -v jq >/dev/null; then
  for f in $LISTS/*.json; do
    if jq -e . "$f" >/dev/null 2>&1; then got=valid; else got=invalid; fi
    want=valid; [[ $f == */static-malformed.json ]] && want=invalid
    same "$f is $want JSON" "$got" "$want"
  done
else
  echo "note: jq not found, JSON well-formedness not checked" >&2
fi

# ------------------------------------------------------------------- keys --

same "list-signing.pub.b64 = last 65 bytes of pub.der" \
  "$(cat $KEYS/list-signing.pub.b64)" "$(tail -c 65 $KEYS/list-signing.pub.der | base64 | tr -d '\n')"
POINT_HEX=$(base64 -d $KEYS/list-signing.pub.b64 | od -An -v -tx1 | tr -d ' \n')
same "uncompressed point length" "${#POINT_HEX}" 130
same "uncompressed point prefix" "${POINT_HEX:0:2}" 04
COMPRESSED_HEX=$(base64 -d $KEYS/list-signing.pub-compressed.b64 | od -An -v -tx1 | tr -d ' \n')
same "compressed point length" "${#COMPRESSED_HEX}" 66
same "compressed point X" "${COMPRESSED_HEX:2}" "${POINT_HEX:2:64}"
# Y's parity decides the prefix: 02 for even, 03 for odd.
[[ $((16#${POINT_HEX:129:1} % 2)) -eq 0 ]] && want=02 || want=03
same "compressed point prefix" "${COMPRESSED_HEX:0:2}" "$want"
same "pub.der = pub.pem" "$(openssl pkey -pubin -in $KEYS/list-signing.pub.pem -outform DER | od -An -tx1)" "$(od -An -tx1 $KEYS/list-signing.pub.der)"
same "pub.pem belongs to key.pem" "$(openssl pkey -in $KEYS/list-signing.key.pem -pubout)" "$(cat $KEYS/list-signing.pub.pem)"
same "other-signing.pub.b64" "$(cat $KEYS/other-signing.pub.b64)" \
  "$(openssl pkey -in $KEYS/other-signing.key.pem -pubout -outform DER | tail -c 65 | base64 | tr -d '\n')"
[[ $(cat $KEYS/other-signing.pub.b64) != "$(cat $KEYS/list-signing.pub.b64)" ]] && ok || fail "other-signing = list-signing"
for k in $KEYS/*.key.pem $PKI/*.key.pem; do
  same "$k is PKCS#8" "$(head -n 1 "$k")" "-----BEGIN PRIVATE KEY-----"
done
for k in list-signing other-signing; do
  openssl pkey -in $KEYS/$k.key.pem -noout -text | grep -q 'NIST CURVE: P-256' && ok || fail "$k is not P-256"
done
openssl pkey -pubin -in $KEYS/rsa-2048.pub.pem -noout -text | grep -q 'Public-Key: (2048 bit)' && ok || fail "rsa-2048 is not RSA-2048"
openssl pkey -pubin -in $KEYS/rsa-2048.pub.pem -noout -text | grep -q 'Modulus' && ok || fail "rsa-2048 has no modulus"
openssl pkey -pubin -in $KEYS/secp384r1.pub.pem -noout -text | grep -q 'NIST CURVE: P-384' && ok || fail "secp384r1 is not P-384"
same "secp384r1 der = pem" "$(openssl pkey -pubin -in $KEYS/secp384r1.pub.pem -outform DER | od -An -tx1)" "$(od -An -tx1 $KEYS/secp384r1.pub.der)"

# ------------------------------------------------------------ certificates --

# `openssl verify` result: "OK" or the first "error N ... : reason" line.
verify() { # leaf [untrusted-file] [cafile]
  local out
  out=$(openssl verify -CAfile "${3:-$PKI/root-ca.pem}" -untrusted "${2:-$PKI/intermediate-ca.pem}" "$1" 2>&1) && { echo OK; return; }
  grep -m1 -o 'error [0-9]* at [0-9]* depth lookup: .*' <<<"$out" || echo "$out"
}
for c in intermediate-ca localhost localhost-next api-p256 api-rsa wildcard wrong-host attacker; do
  same "verify $c.pem" "$(verify $PKI/$c.pem)" OK
done
same "verify root-ca.pem" "$(openssl verify -CAfile $PKI/root-ca.pem $PKI/root-ca.pem 2>&1 | tail -n 1)" "$PKI/root-ca.pem: OK"
same "verify expired.pem"       "$(verify $PKI/expired.pem)"       "error 10 at 0 depth lookup: certificate has expired"
same "verify not-yet-valid.pem" "$(verify $PKI/not-yet-valid.pem)" "error 9 at 0 depth lookup: certificate is not yet valid"
same "verify self-signed.pem"   "$(verify $PKI/self-signed.pem)"   "error 18 at 0 depth lookup: self-signed certificate"
same "verify rogue-leaf.pem"    "$(verify $PKI/rogue-leaf.pem)"    "error 20 at 0 depth lookup: unable to get local issuer certificate"
same "rogue-leaf.pem under its own root" "$(verify $PKI/rogue-leaf.pem $PKI/rogue-root-ca.pem $PKI/rogue-root-ca.pem)" OK
cat $PKI/localhost.pem $PKI/intermediate-ca.pem >"$TMP/untrusted.pem"
same "verify leaf-signed-by-leaf.pem" "$(verify $PKI/leaf-signed-by-leaf.pem "$TMP/untrusted.pem")" \
  "error 79 at 1 depth lookup: invalid CA certificate"

field() { openssl x509 -in "$PKI/$1.pem" -noout "${@:2}" 2>/dev/null; }
san() { field "$1" -ext subjectAltName | tail -n +2 | tr -d ' '; }
check_leaf() { # name cn san issuer-cn notBefore notAfter key-kind
  same "$1 subject"   "$(field "$1" -subject)"   "subject=CN = $2"
  same "$1 SAN"       "$(san "$1")"              "$3"
  same "$1 issuer"    "$(field "$1" -issuer)"    "issuer=CN = $4"
  same "$1 notBefore" "$(field "$1" -startdate)" "notBefore=$5"
  same "$1 notAfter"  "$(field "$1" -enddate)"   "notAfter=$6"
  field "$1" -text | grep -q "$7" && ok || fail "$1 key is not $7"
  field "$1" -text | grep -q 'CA:FALSE' && ok || fail "$1 is not CA:FALSE"
  field "$1" -ext extendedKeyUsage | grep -q 'TLS Web Server Authentication' && ok || fail "$1 lacks serverAuth"
  # The key file next to the certificate is its key.
  same "$1 key matches" "$(field "$1" -pubkey)" "$(openssl pkey -in "$PKI/$1.key.pem" -pubout)"
}
FROM="Jan  1 00:00:00 2025 GMT" TO="Dec 31 23:59:59 2099 GMT"
LH="DNS:localhost,IPAddress:127.0.0.1" INT="PinStore Test Intermediate CA" P256="ASN1 OID: prime256v1"
check_leaf localhost      localhost "$LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf api-p256       api.pinstore.test DNS:api.pinstore.test "$INT" "$FROM" "$TO" "$P256"
check_leaf api-rsa        api.pinstore.test DNS:api.pinstore.test "$INT" "$FROM" "$TO" "Public-Key: (2048 bit)"
check_leaf wildcard       "*.pinstore.test" "DNS:*.pinstore.test" "$INT" "$FROM" "$TO" "$P256"
check_leaf expired        localhost "$LH" "$INT" "Jan  1 00:00:00 2020 GMT" "Jan  1 00:00:00 2021 GMT" "$P256"
check_leaf not-yet-valid  localhost "$LH" "$INT" "Jan  1 00:00:00 2098 GMT" "$TO" "$P256"
check_leaf wrong-host     wrong.pinstore.test DNS:wrong.pinstore.test "$INT" "$FROM" "$TO" "$P256"
check_leaf self-signed    localhost "$LH" localhost "$FROM" "$TO" "$P256"
check_leaf attacker       localhost "$LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf localhost-next localhost "$LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf localhost-renewed localhost "$LH" "$INT" "Jun  1 00:00:00 2025 GMT" "$TO" "$P256"
check_leaf rogue-leaf     localhost "$LH" "PinStore Rogue Root CA (untrusted)" "$FROM" "$TO" "$P256"
check_leaf leaf-signed-by-leaf localhost "$LH" localhost "$FROM" "$TO" "$P256"
# make-adapter-fixtures.sh: DNS-only twins, two-name leaves, issue 23's reproductions.
DNS_LH=DNS:localhost TWO=DNS:localhost,DNS:alt.pinstore.test RSA1024="Public-Key: (1024 bit)"
check_leaf localhost-dnsonly          localhost "$DNS_LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf attacker-dnsonly           localhost "$DNS_LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf localhost-next-dnsonly     localhost "$DNS_LH" "$INT" "$FROM" "$TO" "$P256"
check_leaf localhost-renewed-dnsonly  localhost "$DNS_LH" "$INT" "Jun  1 00:00:00 2025 GMT" "$TO" "$P256"
check_leaf localhost-other-ca-dnsonly localhost "$DNS_LH" "PinStore Test Other Intermediate CA" "$FROM" "$TO" "$P256"
check_leaf expired-dnsonly            localhost "$DNS_LH" "$INT" "Jan  1 00:00:00 2020 GMT" "Jan  1 00:00:00 2021 GMT" "$P256"
check_leaf self-signed-dnsonly        localhost "$DNS_LH" localhost "$FROM" "$TO" "$P256"
check_leaf localhost-sha1-dnsonly     localhost "$DNS_LH" "$INT" "$FROM" "$TO" "ecdsa-with-SHA1"
check_leaf localhost-rsa1024-dnsonly  localhost "$DNS_LH" "$INT" "$FROM" "$TO" "$RSA1024"
check_leaf localhost-rsa-dnsonly      localhost "$DNS_LH" "$INT" "$FROM" "$TO" "Public-Key: (2048 bit)"
check_leaf localhost-two-names        localhost "$TWO" "$INT" "$FROM" "$TO" "$P256"
check_leaf localhost-rsa1024-two-names localhost "$TWO" "$INT" "$FROM" "$TO" "$RSA1024"
check_leaf ip-only             127.0.0.1             IPAddress:127.0.0.1 "$INT" "$FROM" "$TO" "$P256"
check_leaf www-and-ip          www.example.com       DNS:www.example.com,IPAddress:127.0.0.1 "$INT" "$FROM" "$TO" "$P256"
check_leaf wildcard-example    "*.example.com"       "DNS:*.example.com" "$INT" "$FROM" "$TO" "$P256"
check_leaf api-example         api.example.com       DNS:api.example.com "$INT" "$FROM" "$TO" "$P256"
check_leaf bucher-idn          xn--bcher-kva.example DNS:xn--bcher-kva.example "$INT" "$FROM" "$TO" "$P256"
check_leaf bucher-idn-impostor xn--bcher-kva.example DNS:xn--bcher-kva.example "$INT" "$FROM" "$TO" "$P256"
[[ $(field localhost-renewed-dnsonly -pubkey) == "$(field localhost-dnsonly -pubkey)" ]] && ok || fail "localhost-renewed-dnsonly does not share localhost-dnsonly's key"
[[ $(field attacker-dnsonly -pubkey) != "$(field localhost-dnsonly -pubkey)" ]] && ok || fail "attacker-dnsonly shares localhost-dnsonly's key"
[[ $(field bucher-idn-impostor -pubkey) != "$(field bucher-idn -pubkey)" ]] && ok || fail "bucher-idn-impostor shares bucher-idn's key"
for c in localhost-dnsonly attacker-dnsonly localhost-next-dnsonly localhost-renewed-dnsonly localhost-sha1-dnsonly \
         localhost-rsa1024-dnsonly localhost-rsa-dnsonly localhost-two-names localhost-rsa1024-two-names \
         ip-only www-and-ip wildcard-example api-example bucher-idn bucher-idn-impostor; do
  same "verify $c.pem" "$(verify $PKI/$c.pem)" OK
  same "$c-chain.pem" "$(cat $PKI/$c-chain.pem)" "$(cat $PKI/$c.pem $PKI/intermediate-ca.pem)"
done
same "localhost-other-ca-dnsonly-chain.pem" "$(cat $PKI/localhost-other-ca-dnsonly-chain.pem)" \
  "$(cat $PKI/localhost-other-ca-dnsonly.pem $PKI/other-intermediate-ca.pem)"
same "verify expired-dnsonly.pem" "$(verify $PKI/expired-dnsonly.pem)" "error 10 at 0 depth lookup: certificate has expired"
field api-rsa -ext keyUsage | grep -q 'Key Encipherment' && ok || fail "api-rsa lacks keyEncipherment"
[[ $(field attacker -pubkey) != "$(field localhost -pubkey)" ]] && ok || fail "attacker shares localhost's key"
[[ $(field localhost-next -pubkey) != "$(field localhost -pubkey)" ]] && ok || fail "localhost-next shares localhost's key"
[[ $(field localhost-renewed -pubkey) == "$(field localhost -pubkey)" ]] && ok || fail "localhost-renewed does not share localhost's key"
[[ $(field localhost-renewed -fingerprint -sha256) != "$(field localhost -fingerprint -sha256)" ]] && ok || fail "localhost-renewed is localhost.pem itself"
same "verify localhost-other-ca.pem under other-intermediate-ca" \
  "$(verify $PKI/localhost-other-ca.pem $PKI/other-intermediate-ca.pem)" OK
same "leaf-signed-by-leaf AKI = localhost SKI" \
  "$(field leaf-signed-by-leaf -ext authorityKeyIdentifier | tail -n 1 | tr -d ' ')" \
  "$(field localhost -ext subjectKeyIdentifier | tail -n 1 | tr -d ' ')"
same "intermediate AKI = root SKI" \
  "$(field intermediate-ca -ext authorityKeyIdentifier | tail -n 1 | tr -d ' ')" \
  "$(field root-ca -ext subjectKeyIdentifier | tail -n 1 | tr -d ' ')"
for c in root-ca rogue-root-ca intermediate-ca; do
  field $c -text | grep -q 'CA:TRUE' && ok || fail "$c is not a CA"
  field $c -ext keyUsage | grep -q 'Certificate Sign, CRL Sign' && ok || fail "$c keyUsage"
  same "$c notAfter" "$(field $c -enddate)" "notAfter=$TO"
done
field intermediate-ca -text | grep -q 'pathlen:0' && ok || fail "intermediate lacks pathlen:0"
same "root subject" "$(field root-ca -subject)" "subject=CN = PinStore Test Root CA"
same "intermediate subject" "$(field intermediate-ca -subject)" "subject=CN = $INT"

for c in localhost root-ca intermediate-ca; do
  same "$c.der" "$(od -An -tx1 $PKI/$c.der)" "$(openssl x509 -in $PKI/$c.pem -outform DER | od -An -tx1)"
done
for c in localhost localhost-next api-p256 api-rsa attacker; do
  same "$c-chain.pem" "$(cat $PKI/$c-chain.pem)" "$(cat $PKI/$c.pem $PKI/intermediate-ca.pem)"
done
same "bundle.pem" "$(cat $PKI/bundle.pem)" "$(cat $PKI/root-ca.pem $PKI/intermediate-ca.pem $PKI/localhost.pem)"
same "bundle-with-junk.pem blocks" "$(sed -n '/-----BEGIN/,/-----END/p' $PKI/bundle-with-junk.pem)" "$(cat $PKI/bundle.pem)"
[[ $(grep -vc -e '-----' -e '^[A-Za-z0-9+/=]*$' $PKI/bundle-with-junk.pem) -gt 10 ]] && ok || fail "bundle-with-junk.pem has no junk"

# -------------------------------------------------------------- policies --
POLICIES=policies
spki_of() { openssl x509 -in "$PKI/$1.pem" -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64 | tr -d '\n'; }
for c in localhost localhost-next intermediate-ca root-ca; do
  grep -q "<string>$(spki_of $c)</string>" $POLICIES/Info.plist && ok || fail "Info.plist lacks the SPKI digest of $c"
  grep -q ">$(spki_of $c)</pin>" $POLICIES/network_security_config.xml && ok || fail "network_security_config.xml lacks the SPKI digest of $c"
done
same "localhost-renewed-chain.pem" "$(cat $PKI/localhost-renewed-chain.pem)" "$(cat $PKI/localhost-renewed.pem $PKI/intermediate-ca.pem)"
same "localhost-other-ca-chain.pem" "$(cat $PKI/localhost-other-ca-chain.pem)" "$(cat $PKI/localhost-other-ca.pem $PKI/other-intermediate-ca.pem)"
grep -q 'digest="SHA-1"' $POLICIES/network_security_config-sha1.xml && ok || fail "network_security_config-sha1.xml has no SHA-1 pin"
grep -q '</pinset>' $POLICIES/network_security_config-malformed.xml && ok || fail "network_security_config-malformed.xml is not malformed"
grep -q 'not-base64!!' $POLICIES/Info-bad-digest.plist && ok || fail "Info-bad-digest.plist has no bad digest"

# ------------------------------------------------------------------ result --
if ((failures > 0)); then
  echo "check-fixtures.sh: $failures of $checks checks FAILED" >&2
  exit 1
fi
echo "check-fixtures.sh: all $checks checks passed"
