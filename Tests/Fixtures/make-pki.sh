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

# leaf NAME KEYSPEC DIGEST EXTENSIONS [STARTDATE ENDDATE]
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
        quiet openssl x509 -req -in "$name.csr" -CA intermediate.pem -CAkey intermediate.key -CAcreateserial \
            "-$digest" -days 365 -extfile ext.cnf -extensions "$extensions" -out "$name.pem"
    fi
    cat "$name.pem" intermediate.pem > "$name-chain.pem"
}

leaf good-rsa 2048 sha256 leaf_ext
leaf good-ec ec sha256 leaf_ext
leaf rsa1024 1024 sha256 leaf_ext
leaf sha1 2048 sha1 leaf_ext
leaf expired 2048 sha256 leaf_ext 20200101000000Z 20200201000000Z
leaf not-yet 2048 sha256 leaf_ext 21000101000000Z 21000201000000Z
leaf wrong-name 2048 sha256 wrong_ext

quiet openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 365 -keyout self-signed.key -out self-signed.pem \
    -subj "/O=atsgate test/CN=localhost self-signed" -config ext.cnf -extensions self_ext
cp self-signed.pem self-signed-chain.pem
for pem in ca intermediate good-rsa good-ec rsa1024 sha1 expired not-yet wrong-name self-signed; do
    quiet openssl x509 -in "$pem.pem" -outform DER -out "$pem.der"
done
rm -f ./*.csr
echo "$out"
