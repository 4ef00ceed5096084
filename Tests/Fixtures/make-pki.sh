#!/bin/sh
# Makes the test PKI of the TLSClient and diagnose tests in OUTDIR with the openssl CLI:
#   ca.pem            root "atsgate Test Root CA" (RSA-2048, self-signed)
#   intermediate.pem  "atsgate Test Intermediate CA", signed by the root; signs every leaf below
#   <leaf>.pem / <leaf>.key, for host localhost with SANs DNS:localhost, IP:127.0.0.1, IP:::1 unless noted:
#     good-rsa     RSA-2048, SHA-256
#     good-ec      ECDSA P-256, SHA-256
#     rsa1024      RSA-1024, SHA-256
#     sha1         RSA-2048, signed with SHA-1
#     expired      RSA-2048, valid 2020-01-01 .. 2020-02-01
#     not-yet      RSA-2048, valid from 2100-01-01
#     wrong-name   RSA-2048, SAN DNS:wrong.example only
#     self-signed  RSA-2048, self-signed (not from the test CA)
#     life-800, life-826, life-1000   valid 800, 826 and 1000 days (R15a: 825 at most from any CA)
#     eku-client   extendedKeyUsage clientAuth only (R15a: fails certificate-usage)
#     eku-none     no extendedKeyUsage extension (passes)
#     eku-any      extendedKeyUsage anyExtendedKeyUsage (passes, as Apple accepts it)
#     no-san       no subjectAltName; CN=localhost (R15a: names come from subjectAltName only)
#   system-ca.pem      root "atsgate Test System Root", for tests that point OpenSSL's system store at it
#                      (SSL_CERT_FILE, or TrustStore(systemRoots:)); signs these leaves directly:
#     sys-365      valid 365 days (passes the 398-day rule for publicly trusted leaves)
#     sys-400      valid 400 days (R15a: fails certificate-lifetime under the system store only)
#     sys-sct2     valid 365 days, 2 embedded SCTs from distinct logs (R16: 3 needed above 180 days)
#     sys-sct3     valid 365 days, 3 embedded SCTs from distinct logs (R16: passes)
#     sys-sct2-short  valid 90 days, 2 embedded SCTs (R16: 2 suffice up to 180 days)
#   The SCTs are well-formed but signed by no real log: they count, and fail verification.
#   <leaf>-chain.pem  leaf followed by the intermediate (what a server sends)
#   <name>.der        each certificate above in DER, as it travels on the wire
# Usage: make-pki.sh OUTDIR
set -eu
out=${1:?usage: make-pki.sh OUTDIR}
mkdir -p "$out"
cd "$out"
quiet() { "$@" >/dev/null 2>&1 || { echo "make-pki: failed: $*" >&2; "$@"; exit 1; }; }

cat > ext.cnf <<'CNF'
[ca_ext]
basicConstraints = critical, CA:true
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[int_ext]
basicConstraints = critical, CA:true, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[leaf_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
authorityKeyIdentifier = keyid
[wrong_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:wrong.example
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
authorityKeyIdentifier = keyid
[noeku_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
authorityKeyIdentifier = keyid
[anyeku_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = anyExtendedKeyUsage
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
authorityKeyIdentifier = keyid
[nosan_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
[self_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
CNF

# `openssl ca` is the 3.0 way to set explicit start and end dates (x509 -req has only -days).
mkdir -p ca-db
: > ca-db/index.txt
echo 1000 > ca-db/serial
cat > ca.cnf <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
dir = ca-db
database = ca-db/index.txt
serial = ca-db/serial
new_certs_dir = ca-db
certificate = intermediate.pem
private_key = intermediate.key
default_md = sha256
policy = any_policy
unique_subject = no
preserve = yes
copy_extensions = none
[any_policy]
commonName = supplied
organizationName = optional
CNF

quiet openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -keyout ca.key -out ca.pem \
    -subj "/O=atsgate test/CN=atsgate Test Root CA" -config ext.cnf -extensions ca_ext
quiet openssl req -new -newkey rsa:2048 -nodes -keyout intermediate.key -out intermediate.csr \
    -subj "/O=atsgate test/CN=atsgate Test Intermediate CA"
quiet openssl x509 -req -in intermediate.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days 3650 \
    -extfile ext.cnf -extensions int_ext -out intermediate.pem

# leaf NAME KEYSPEC DIGEST EXTENSIONS [STARTDATE ENDDATE]; $days (default 365) and $issuer (default
# intermediate) may be set for one call.
leaf() {
    name=$1 keyspec=$2 digest=$3 extensions=$4
    case $keyspec in
        ec) quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$name.key" ;;
        *) quiet openssl genpkey -algorithm RSA -pkeyopt "rsa_keygen_bits:$keyspec" -out "$name.key" ;;
    esac
    quiet openssl req -new -key "$name.key" -out "$name.csr" -subj "/O=atsgate test/CN=localhost $name"
    if [ $# -ge 6 ]; then
        quiet openssl ca -batch -config ca.cnf -in "$name.csr" -out "$name.pem" -notext -md "$digest" \
            -extfile ext.cnf -extensions "$extensions" -startdate "$5" -enddate "$6"
    else
        quiet openssl x509 -req -in "$name.csr" -CA "${issuer:-intermediate}.pem" -CAkey "${issuer:-intermediate}.key" \
            -CAcreateserial "-$digest" -days "${days:-365}" -extfile ext.cnf -extensions "$extensions" -out "$name.pem"
    fi
    if [ "${issuer:-intermediate}" = intermediate ]; then
        cat "$name.pem" intermediate.pem > "$name-chain.pem"
    else
        cp "$name.pem" "$name-chain.pem"
    fi
}

leaf good-rsa 2048 sha256 leaf_ext
leaf good-ec ec sha256 leaf_ext
leaf rsa1024 1024 sha256 leaf_ext
leaf sha1 2048 sha1 leaf_ext
leaf expired 2048 sha256 leaf_ext 20200101000000Z 20200201000000Z
leaf not-yet 2048 sha256 leaf_ext 21000101000000Z 21000201000000Z
leaf wrong-name 2048 sha256 wrong_ext
days=800 leaf life-800 2048 sha256 leaf_ext
days=826 leaf life-826 2048 sha256 leaf_ext
days=1000 leaf life-1000 2048 sha256 leaf_ext
leaf eku-client 2048 sha256 client_ext
leaf eku-none 2048 sha256 noeku_ext
leaf eku-any 2048 sha256 anyeku_ext
leaf no-san 2048 sha256 nosan_ext

# The "system store" root: tests make OpenSSL's default store hold it, so its leaves count as publicly
# trusted (R15a's 398-day rule, R16).
quiet openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -keyout system-ca.key -out system-ca.pem \
    -subj "/O=atsgate test/CN=atsgate Test System Root" -config ext.cnf -extensions ca_ext

# An SCT (RFC 6962 section 3.2) from log number $1: version 0, a 32-byte log id, a timestamp, no
# extensions, and an ECDSA-SHA256 "signature" of 8 bytes, all as hex.
sct() {
    id=$(printf '%02x' "$1")
    printf '00%s%s0000040300080102030405060708' \
        "$(printf "$id%.0s" $(seq 1 32))" "0000018b00000000"
}
# The DER of the SCT list extension's value: an OCTET STRING holding the TLS-encoded list.
sct_list_der() {
    body=""
    for log in "$@"; do
        one=$(sct "$log")
        body="$body$(printf '%04x' $((${#one} / 2)))$one"
    done
    list="$(printf '%04x' $((${#body} / 2)))$body"
    length=$((${#list} / 2))
    # DER lengths above 127 take the long form (0x81 and one byte; the lists here stay under 256).
    if [ "$length" -gt 127 ]; then length=$(printf '81%02x' "$length"); else length=$(printf '%02x' "$length"); fi
    printf '04%s%s' "$length" "$list" | sed 's/../&:/g; s/:$//'
}
cat >> ext.cnf <<CNF
[sct2_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
1.3.6.1.4.1.11129.2.4.2 = DER:$(sct_list_der 1 2)
[sct3_ext]
basicConstraints = CA:false
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
1.3.6.1.4.1.11129.2.4.2 = DER:$(sct_list_der 1 2 3)
CNF
issuer=system-ca leaf sys-365 2048 sha256 leaf_ext
issuer=system-ca days=400 leaf sys-400 2048 sha256 leaf_ext
issuer=system-ca leaf sys-sct2 2048 sha256 sct2_ext
issuer=system-ca leaf sys-sct3 2048 sha256 sct3_ext
issuer=system-ca days=90 leaf sys-sct2-short 2048 sha256 sct2_ext

quiet openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 365 -keyout self-signed.key -out self-signed.pem \
    -subj "/O=atsgate test/CN=localhost self-signed" -config ext.cnf -extensions self_ext
cp self-signed.pem self-signed-chain.pem
for pem in ca intermediate good-rsa good-ec rsa1024 sha1 expired not-yet wrong-name self-signed \
           life-800 life-826 life-1000 eku-client eku-none eku-any no-san \
           system-ca sys-365 sys-400 sys-sct2 sys-sct3 sys-sct2-short; do
    quiet openssl x509 -in "$pem.pem" -outform DER -out "$pem.der"
done
rm -f ./*.csr
echo "$out"
