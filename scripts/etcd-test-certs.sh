#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Throwaway certificates for the etcds:// lease tests, made with openssl in
# a directory that the caller made and later removes:
#
#   ca.pem, ca-key.pem          the test CA
#   server.pem, server-key.pem  etcd's certificate, signed by the CA, for the
#                               IP address 127.0.0.1 only (no DNS name: a
#                               client that asks for "localhost" must refuse
#                               it); usable as a client certificate too, as
#                               etcd's HTTP gateway presents it to etcd's own
#                               gRPC server
#   client.pem, client-key.pem  a client certificate signed by the CA, with
#                               no Common Name: etcd 3.4's HTTP gateway
#                               answers 400 to a client certificate that has
#                               one ("CommonName of client sending a request
#                               against gateway will be ignored")
#   other-ca.pem                an unrelated CA (the "wrong CA" case)
#   other-client.pem, other-client-key.pem
#                               a client certificate signed by the unrelated
#                               CA (one the server must refuse)
#   jwt.pem, jwt-pub.pem        an RSA key pair for etcd's JWT auth tokens
#
#   etcd-test-certs.sh DIR
#
# Keys are RSA 2048, certificates valid for a day. Nothing outside DIR is
# written.
set -euo pipefail

me=etcd-test-certs.sh
die() {
    echo "$me: $*" >&2
    exit 1
}

[ $# = 1 ] || die "usage: $me DIR"
dir=$1
[ -d "$dir" ] || die "'$dir' is not a directory"
command -v openssl >/dev/null 2>&1 || die "no openssl on PATH; install openssl"
cd "$dir"

key() {
    openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null ||
        openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null ||
        die "cannot make the key $1"
}

# ca NAME SUBJECT: a self-signed CA NAME.pem with its key NAME-key.pem.
ca() {
    key "$1-key.pem"
    openssl req -x509 -new -key "$1-key.pem" -days 1 -subj "$2" -out "$1.pem" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null || die "cannot make the CA $1"
}

# leaf NAME SUBJECT CA EXT: NAME.pem signed by CA, with the extensions EXT.
leaf() {
    key "$1-key.pem"
    openssl req -new -key "$1-key.pem" -subj "$2" -out "$1.csr" 2>/dev/null ||
        die "cannot make the request for $1"
    printf '%s\n' "$4" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3-key.pem" -CAcreateserial -days 1 \
        -extfile "$1.ext" -out "$1.pem" 2>/dev/null || die "cannot sign $1"
    rm -f "$1.csr" "$1.ext"
}

ca ca "/CN=idmint test CA"
ca other-ca "/CN=unrelated test CA"
leaf server "/CN=idmint test etcd" ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1"
leaf client "/O=idmint test/OU=client" ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
leaf other-client "/O=unrelated test/OU=client" other-ca "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
key jwt.pem
openssl pkey -in jwt.pem -pubout -out jwt-pub.pem 2>/dev/null || die "cannot make jwt-pub.pem"
rm -f ./*.srl
chmod 600 ./*-key.pem jwt.pem
