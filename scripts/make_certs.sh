#!/usr/bin/env bash
# Makes the TLS material of a Tessera cluster with openssl: a private CA and
# one certificate signed by it that every component presents (frontend and
# backends alike; each verifies its peers against the CA).
# Usage: scripts/make_certs.sh DIR [NAME...]
#   NAME: host names or IP addresses the certificate is valid for, besides
#   localhost and 127.0.0.1 (e.g. the compose service names).
# Writes DIR/ca.pem, DIR/cert.pem, DIR/key.pem (key readable by this user
# only; the CA's own key is deleted once it signed). Valid for 30 days.
set -euo pipefail
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,9p' "$0"
  exit $(( $# < 1 ? 2 : 0 ))
fi
DIR="$1"; shift
mkdir -p "$DIR"
san="DNS:localhost,IP:127.0.0.1"
for n in "$@"; do
  if [[ "$n" =~ ^[0-9.]+$ || "$n" == *:* ]]; then san+=",IP:$n"; else san+=",DNS:$n"; fi
done
umask 077
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$DIR/ca.key" -out "$DIR/ca.pem" \
  -days 30 -subj "/CN=tessera-ca" 2>/dev/null
openssl req "${ec[@]}" -keyout "$DIR/key.pem" -out "$DIR/cert.csr" \
  -subj "/CN=tessera" 2>/dev/null
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" \
  > "$DIR/cert.ext"
openssl x509 -req -in "$DIR/cert.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
  -CAcreateserial -out "$DIR/cert.pem" -days 30 -extfile "$DIR/cert.ext" \
  2>/dev/null
rm -f "$DIR/ca.key" "$DIR/cert.csr" "$DIR/cert.ext" "$DIR/ca.srl"
chmod 644 "$DIR/ca.pem" "$DIR/cert.pem"
echo "TLS material in $DIR: ca.pem, cert.pem, key.pem (for $san)"
