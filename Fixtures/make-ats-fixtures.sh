#!/usr/bin/env bash
# Issues the certificates of the ATS transport-minimum tests (issue 12, part 3)
# into Fixtures/pki/, from the test CA already there (root-ca, intermediate-ca):
#   localhost-sha1.pem     localhost leaf whose signature uses SHA-1
#   localhost-rsa1024.pem  localhost leaf with an RSA-1024 key (SHA-256 signed)
#   localhost-rsa.pem      localhost leaf with an RSA-2048 key, for a server
#                          that offers only RSA key exchange (TLS_RSA_* suites
#                          need an RSA certificate); meets every minimum
#   localhost-p224.pem     localhost leaf with a P-224 key (below ATS's 256 bits)
#   root-ca-sha1.pem       root-ca's subject and key, self-signed with SHA-1:
#                          an anchor whose self-signature ATS does not judge
# plus the *-chain.pem files (leaf first) and their keys.
#
# make-fixtures.sh runs this after it made the CA. Run alone, it replaces only
# the files listed above (the CA and every other fixture stay as they are):
#   Fixtures/make-ats-fixtures.sh
# Tools: OpenSSL 3.x command line, bash, coreutils.
set -euo pipefail

cd "$(dirname "$0")"
PKI=$PWD/pki
CNF=$PWD/openssl-ca.cnf
VALID_FROM=20250101000000Z
VALID_TO=20991231235959Z
LOCALHOST_SAN="DNS:localhost,IP:127.0.0.1"

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/newcerts"
: >"$WORK/index.txt"
export FIXTURE_CA_DIR=$WORK
export LEAF_SAN="DNS:unused.invalid"

quiet() {
  if ! "$@" >"$WORK/cmd.log" 2>&1; then
    cat "$WORK/cmd.log" >&2
    echo "failed: $*" >&2
    return 1
  fi
}

# Forget what an earlier run of this script noted in pki/README.md.
ATS_FILES=(localhost-sha1 localhost-rsa1024 localhost-rsa localhost-p224 root-ca-sha1)
for name in "${ATS_FILES[@]}"; do
  grep -v -e "^- \`$name\.pem\`" -e "^- \`$name\.key\.pem\`" -e "^- \`$name-chain\.pem\`" "$PKI/README.md" >"$WORK/readme" || true
  cp "$WORK/readme" "$PKI/README.md"
done
note() { echo "- \`$(basename "$1")\`: $2" >>"$PKI/README.md"; }

new_key() { # out keytype
  case "$2" in
    p224)    quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-224 -pkeyopt ec_param_enc:named_curve -out "$1" ;;
    p256)    quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -pkeyopt ec_param_enc:named_curve -out "$1" ;;
    rsa1024) quiet openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out "$1" ;;
    rsa2048) quiet openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" ;;
    *) echo "unknown key type $2" >&2; return 1 ;;
  esac
}

# A localhost leaf issued by intermediate-ca with `openssl ca -md DIGEST`.
issue_leaf() { # name keytype digest
  local name=$1 keytype=$2 md=$3 ext=ext_leaf_ec
  [[ $keytype == rsa* ]] && ext=ext_leaf_rsa
  new_key "$PKI/$name.key.pem" "$keytype"
  quiet openssl req -config "$CNF" -new -key "$PKI/$name.key.pem" -subj "/CN=localhost" -out "$WORK/$name.csr"
  LEAF_SAN=$LOCALHOST_SAN quiet openssl ca -config "$CNF" -batch -notext -md "$md" \
    -cert "$PKI/intermediate-ca.pem" -keyfile "$PKI/intermediate-ca.key.pem" -extensions "$ext" \
    -startdate "$VALID_FROM" -enddate "$VALID_TO" -in "$WORK/$name.csr" -out "$PKI/$name.pem"
  cat "$PKI/$name.pem" "$PKI/intermediate-ca.pem" >"$PKI/$name-chain.pem"
  chmod 644 "$PKI/$name.key.pem"
  note "$PKI/$name.pem" "$keytype, CN=localhost, SAN $LOCALHOST_SAN, $ext, signed with $md by intermediate-ca (\`make-ats-fixtures.sh\`, \`openssl ca -md $md\`)"
  note "$PKI/$name.key.pem" "private key (PKCS#8 PEM, $keytype) of $name.pem (\`openssl genpkey\`)"
  note "$PKI/$name-chain.pem" "chain leaf first: cat $name.pem intermediate-ca.pem"
}

issue_leaf localhost-sha1    p256    sha1
issue_leaf localhost-rsa1024 rsa1024 sha256
issue_leaf localhost-rsa     rsa2048 sha256
issue_leaf localhost-p224    p224    sha256

# root-ca again (same subject, same key, same extensions), self-signed with
# SHA-1: intermediate-ca verifies under it exactly as under root-ca.pem.
quiet openssl req -config "$CNF" -new -key "$PKI/root-ca.key.pem" -subj "/CN=PinStore Test Root CA" -out "$WORK/root-sha1.csr"
quiet openssl ca -config "$CNF" -batch -notext -md sha1 -selfsign -keyfile "$PKI/root-ca.key.pem" \
  -extensions ext_root_ca -startdate "$VALID_FROM" -enddate "$VALID_TO" -in "$WORK/root-sha1.csr" -out "$PKI/root-ca-sha1.pem"
note "$PKI/root-ca-sha1.pem" "root-ca.pem's subject and key, ext_root_ca, self-signed with sha1 (\`make-ats-fixtures.sh\`, \`openssl ca -selfsign -md sha1\`): a trust anchor whose own signature is SHA-1"

# Check what was made: each chain verifies under root-ca, and each weakness is there.
for name in localhost-sha1 localhost-rsa1024 localhost-rsa localhost-p224; do
  quiet openssl verify -CAfile "$PKI/root-ca.pem" -untrusted "$PKI/intermediate-ca.pem" "$PKI/$name.pem"
done
quiet openssl verify -CAfile "$PKI/root-ca-sha1.pem" -untrusted "$PKI/intermediate-ca.pem" "$PKI/localhost.pem"
openssl x509 -in "$PKI/localhost-sha1.pem" -noout -text | grep -q "Signature Algorithm: ecdsa-with-SHA1"
openssl x509 -in "$PKI/root-ca-sha1.pem" -noout -text | grep -q "Signature Algorithm: ecdsa-with-SHA1"
openssl x509 -in "$PKI/localhost-rsa1024.pem" -noout -text | grep -q "Public-Key: (1024 bit)"
openssl x509 -in "$PKI/localhost-p224.pem" -noout -text | grep -q "Public-Key: (224 bit)"
echo "ATS fixtures written to $PKI"
