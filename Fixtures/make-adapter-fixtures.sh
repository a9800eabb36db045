#!/usr/bin/env bash
# Issues the certificates of the adapter tests (issue 23) into Fixtures/pki/, from the test CA
# already there (intermediate-ca, other-intermediate-ca, root-ca are only read):
#
# DNS-only twins of the leaves the AsyncHTTPClient tests serve. The originals carry
# IP:127.0.0.1, which swift-nio-ssl matches against the peer address whatever DNS name was
# asked for, so the AsyncHTTPClient adapter refuses them on a server at 127.0.0.1
# (../shared/notes/linux-tls.md). Same roles, SAN DNS:localhost only:
#   localhost-dnsonly, attacker-dnsonly, localhost-next-dnsonly,
#   localhost-renewed-dnsonly (localhost-dnsonly's key, valid from 2025-06-01),
#   localhost-other-ca-dnsonly (under other-intermediate-ca), expired-dnsonly,
#   self-signed-dnsonly, localhost-sha1-dnsonly (ECDSA-SHA1 signature),
#   localhost-rsa1024-dnsonly, localhost-rsa-dnsonly (RSA-2048)
# Leaves with two DNS names (a leaf is presented for each of its names):
#   localhost-two-names, localhost-rsa1024-two-names   DNS:localhost, DNS:alt.pinstore.test
# The reproductions of issue 23 (a client asking for a DNS name mapped to 127.0.0.1):
#   ip-only             SAN IP:127.0.0.1 only
#   www-and-ip          SAN DNS:www.example.com, IP:127.0.0.1
#   wildcard-example    SAN DNS:*.example.com
#   api-example         SAN DNS:api.example.com
#   bucher-idn, bucher-idn-impostor   SAN DNS:xn--bcher-kva.example (bücher.example), two keys
# each with .key.pem and -chain.pem (leaf + its issuer; self-signed-dnsonly has no chain file).
#
# make-fixtures.sh runs this after it made the CA. Run alone, it replaces only the files
# listed above (the CA and every other fixture stay as they are):
#   Fixtures/make-adapter-fixtures.sh
# Tools: OpenSSL 3.x command line, bash, coreutils.
set -euo pipefail

cd "$(dirname "$0")"
PKI=$PWD/pki
CNF=$PWD/openssl-ca.cnf
VALID_FROM=20250101000000Z
VALID_TO=20991231235959Z

case "$(openssl version)" in
  "OpenSSL 3."*) ;;
  *) echo "make-adapter-fixtures.sh needs OpenSSL 3.x, found: $(openssl version)" >&2; exit 1 ;;
esac

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/newcerts"
: >"$WORK/index.txt"
# openssl-ca.cnf reads these; both must be set whenever it is loaded.
export FIXTURE_CA_DIR=$WORK
export LEAF_SAN="DNS:unused.invalid"

quiet() {
  if ! "$@" >"$WORK/cmd.log" 2>&1; then
    cat "$WORK/cmd.log" >&2
    echo "failed: $*" >&2
    return 1
  fi
}

ADAPTER_FILES=(
  localhost-dnsonly attacker-dnsonly localhost-next-dnsonly localhost-renewed-dnsonly
  localhost-other-ca-dnsonly expired-dnsonly self-signed-dnsonly localhost-sha1-dnsonly
  localhost-rsa1024-dnsonly localhost-rsa-dnsonly localhost-two-names localhost-rsa1024-two-names
  ip-only www-and-ip wildcard-example api-example bucher-idn bucher-idn-impostor
  star-only partial-star
)
# Forget what an earlier run of this script noted in pki/README.md.
for name in "${ADAPTER_FILES[@]}"; do
  grep -v -e "^- \`$name\.pem\`" -e "^- \`$name\.key\.pem\`" -e "^- \`$name-chain\.pem\`" "$PKI/README.md" >"$WORK/readme" || true
  cp "$WORK/readme" "$PKI/README.md"
done
note() { echo "- \`$(basename "$1")\`: $2" >>"$PKI/README.md"; }

new_key() { # out keytype
  case "$2" in
    p256)    quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -pkeyopt ec_param_enc:named_curve -out "$1" ;;
    rsa1024) quiet openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out "$1" ;;
    rsa2048) quiet openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" ;;
    *) echo "unknown key type $2" >&2; return 1 ;;
  esac
}

# Issues pki/NAME.pem with `openssl ca`, its key and (unless self-signed) NAME-chain.pem.
# ISSUER is "self" or a CA in pki/. KEY_FROM=OTHER reuses pki/OTHER.key.pem (a renewal).
issue() { # name cn san issuer start end keytype digest
  local name=$1 cn=$2 san=$3 issuer=$4 start=$5 end=$6 keytype=$7 md=$8
  local key=$PKI/$name.key.pem ext=ext_leaf_ec
  [[ $keytype == rsa* ]] && ext=ext_leaf_rsa
  if [[ -n ${KEY_FROM:-} ]]; then cp "$PKI/$KEY_FROM.key.pem" "$key"; else new_key "$key" "$keytype"; fi
  chmod 644 "$key"
  quiet openssl req -config "$CNF" -new -key "$key" -subj "/CN=$cn" -out "$WORK/$name.csr"
  local signer=(-cert "$PKI/$issuer.pem" -keyfile "$PKI/$issuer.key.pem")
  if [[ $issuer == self ]]; then
    signer=(-selfsign -keyfile "$key")
    ext=ext_self_signed_leaf
  fi
  LEAF_SAN=$san quiet openssl ca -config "$CNF" -batch -notext -md "$md" "${signer[@]}" -extensions "$ext" \
    -startdate "$start" -enddate "$end" -in "$WORK/$name.csr" -out "$PKI/$name.pem"
  note "$PKI/$name.pem" "$keytype, CN=$cn, SAN $san, $ext, valid $start..$end, signed with $md by ${issuer/#self/itself} (\`make-adapter-fixtures.sh\`, \`openssl ca\`)"
  if [[ -n ${KEY_FROM:-} ]]; then
    note "$key" "private key of $name.pem: a copy of $KEY_FROM.key.pem (the same key)"
  else
    note "$key" "private key (PKCS#8 PEM, $keytype) of $name.pem (\`openssl genpkey\`)"
  fi
  if [[ $issuer != self ]]; then
    cat "$PKI/$name.pem" "$PKI/$issuer.pem" >"$PKI/$name-chain.pem"
    note "$PKI/$name-chain.pem" "chain leaf first: cat $name.pem $issuer.pem"
  fi
}

I=intermediate-ca
LOCALHOST="DNS:localhost"
TWO_NAMES="DNS:localhost,DNS:alt.pinstore.test"

# DNS-only twins: same roles as the files without -dnsonly (../README.md).
issue localhost-dnsonly          localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue attacker-dnsonly           localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue localhost-next-dnsonly     localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" p256 sha256
KEY_FROM=localhost-dnsonly issue localhost-renewed-dnsonly localhost "$LOCALHOST" $I 20250601000000Z "$VALID_TO" p256 sha256
issue localhost-other-ca-dnsonly localhost "$LOCALHOST" other-intermediate-ca "$VALID_FROM" "$VALID_TO" p256 sha256
issue expired-dnsonly            localhost "$LOCALHOST" $I 20200101000000Z 20210101000000Z p256 sha256
issue self-signed-dnsonly        localhost "$LOCALHOST" self "$VALID_FROM" "$VALID_TO" p256 sha256
issue localhost-sha1-dnsonly     localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" p256 sha1
issue localhost-rsa1024-dnsonly  localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" rsa1024 sha256
issue localhost-rsa-dnsonly      localhost "$LOCALHOST" $I "$VALID_FROM" "$VALID_TO" rsa2048 sha256
issue localhost-two-names        localhost "$TWO_NAMES" $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue localhost-rsa1024-two-names localhost "$TWO_NAMES" $I "$VALID_FROM" "$VALID_TO" rsa1024 sha256

# Issue 23's reproductions.
issue ip-only             127.0.0.1             "IP:127.0.0.1"                  $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue www-and-ip          www.example.com       "DNS:www.example.com,IP:127.0.0.1" $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue wildcard-example    "*.example.com"       "DNS:*.example.com"             $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue api-example         api.example.com       "DNS:api.example.com"           $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue bucher-idn          xn--bcher-kva.example "DNS:xn--bcher-kva.example"     $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue bucher-idn-impostor xn--bcher-kva.example "DNS:xn--bcher-kva.example"     $I "$VALID_FROM" "$VALID_TO" p256 sha256
# Wildcards without a parent domain: swift-nio-ssl matches them against every one-label host.
issue star-only           "*"                   "DNS:*"                         $I "$VALID_FROM" "$VALID_TO" p256 sha256
issue partial-star        "pay*"                "DNS:pay*"                      $I "$VALID_FROM" "$VALID_TO" p256 sha256

# Check what was made: every leaf verifies as its role says, with exactly the names it should.
verify() { # leaf untrusted
  openssl verify -CAfile "$PKI/root-ca.pem" -untrusted "$2" "$1" 2>&1 || true
}
fail() { echo "make-adapter-fixtures.sh: $*" >&2; exit 1; }
for name in "${ADAPTER_FILES[@]}"; do
  case $name in
    self-signed-dnsonly) [[ $(verify "$PKI/$name.pem" "$PKI/$I.pem") == *"self-signed certificate"* ]] || fail "$name is not refused as self-signed" ;;
    expired-dnsonly) [[ $(verify "$PKI/$name.pem" "$PKI/$I.pem") == *"certificate has expired"* ]] || fail "$name is not expired" ;;
    localhost-other-ca-dnsonly) [[ $(verify "$PKI/$name.pem" "$PKI/other-intermediate-ca.pem") == *": OK" ]] || fail "$name does not verify" ;;
    *) [[ $(verify "$PKI/$name.pem" "$PKI/$I.pem") == *": OK" ]] || fail "$name does not verify" ;;
  esac
  same_key=$(openssl x509 -in "$PKI/$name.pem" -noout -pubkey)
  [[ $same_key == "$(openssl pkey -in "$PKI/$name.key.pem" -pubout)" ]] || fail "$name.key.pem is not its key"
done
san() { openssl x509 -in "$PKI/$1.pem" -noout -ext subjectAltName | tail -n +2 | tr -d ' '; }
for name in "${ADAPTER_FILES[@]}"; do
  case $name in
    localhost-two-names|localhost-rsa1024-two-names) want="DNS:localhost,DNS:alt.pinstore.test" ;;
    ip-only) want="IPAddress:127.0.0.1" ;;
    www-and-ip) want="DNS:www.example.com,IPAddress:127.0.0.1" ;;
    wildcard-example) want="DNS:*.example.com" ;;
    api-example) want="DNS:api.example.com" ;;
    bucher-idn|bucher-idn-impostor) want="DNS:xn--bcher-kva.example" ;;
    star-only) want="DNS:*" ;;
    partial-star) want="DNS:pay*" ;;
    *) want="DNS:localhost" ;;
  esac
  [[ $(san "$name") == "$want" ]] || fail "$name SAN is $(san "$name"), expected $want"
done
[[ $(openssl x509 -in "$PKI/localhost-renewed-dnsonly.pem" -noout -pubkey) == "$(openssl x509 -in "$PKI/localhost-dnsonly.pem" -noout -pubkey)" ]] \
  || fail "localhost-renewed-dnsonly does not share localhost-dnsonly's key"
[[ $(openssl x509 -in "$PKI/bucher-idn.pem" -noout -pubkey) != "$(openssl x509 -in "$PKI/bucher-idn-impostor.pem" -noout -pubkey)" ]] \
  || fail "bucher-idn-impostor shares bucher-idn's key"
[[ $(openssl x509 -in "$PKI/attacker-dnsonly.pem" -noout -pubkey) != "$(openssl x509 -in "$PKI/localhost-dnsonly.pem" -noout -pubkey)" ]] \
  || fail "attacker-dnsonly shares localhost-dnsonly's key"
openssl x509 -in "$PKI/localhost-sha1-dnsonly.pem" -noout -text | grep -q "Signature Algorithm: ecdsa-with-SHA1" || fail "localhost-sha1-dnsonly is not SHA-1 signed"
openssl x509 -in "$PKI/localhost-rsa1024-dnsonly.pem" -noout -text | grep -q "Public-Key: (1024 bit)" || fail "localhost-rsa1024-dnsonly is not RSA-1024"
openssl x509 -in "$PKI/localhost-rsa1024-two-names.pem" -noout -text | grep -q "Public-Key: (1024 bit)" || fail "localhost-rsa1024-two-names is not RSA-1024"
openssl x509 -in "$PKI/localhost-rsa-dnsonly.pem" -noout -text | grep -q "Public-Key: (2048 bit)" || fail "localhost-rsa-dnsonly is not RSA-2048"
echo "adapter fixtures written to $PKI"
