#!/usr/bin/env bash
# Makes what a Tessera cluster needs to trust its own parts, with openssl,
# in DIR (what exists is kept, so it can run at every start):
#   ca.pem, cert.pem, key.pem  a private CA and one certificate signed by it
#                              that every component presents (frontend and
#                              backends alike: each verifies its peers
#                              against the CA); valid for 365 days
#   cluster_token              the token backends require of the frontend
#                              (--cluster_token_file)
#   admin_token                the token of the admin calls and model
#                              load/unload (--admin_token_file,
#                              tessera_admin --token_file)
# Usage: scripts/make_secrets.sh DIR [NAME...]
#   NAME: host names or IP addresses the certificate is valid for, besides
#   localhost and 127.0.0.1 (e.g. the compose service names).
# Keys and tokens are readable by their owner only; the CA's own key is
# deleted once it signed.
set -euo pipefail
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,17p' "$0"
  exit $(( $# < 1 ? 2 : 0 ))
fi
DIR="$1"; shift
mkdir -p "$DIR"
umask 077
if [[ ! -s "$DIR/cert.pem" || ! -s "$DIR/key.pem" || ! -s "$DIR/ca.pem" ]]; then
  san="DNS:localhost,IP:127.0.0.1"
  for n in "$@"; do
    if [[ "$n" =~ ^[0-9.]+$ || "$n" == *:* ]]; then san+=",IP:$n"; else san+=",DNS:$n"; fi
  done
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$DIR/ca.key" -out "$DIR/ca.pem" \
    -days 365 -subj "/CN=tessera-ca" 2>/dev/null
  openssl req "${ec[@]}" -keyout "$DIR/key.pem" -out "$DIR/cert.csr" \
    -subj "/CN=tessera" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" \
    > "$DIR/cert.ext"
  openssl x509 -req -in "$DIR/cert.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" \
    -CAcreateserial -out "$DIR/cert.pem" -days 365 -extfile "$DIR/cert.ext" \
    2>/dev/null
  rm -f "$DIR/ca.key" "$DIR/cert.csr" "$DIR/cert.ext" "$DIR/ca.srl"
  chmod 644 "$DIR/ca.pem" "$DIR/cert.pem"
  echo "made ca.pem, cert.pem, key.pem in $DIR (for $san)"
fi
for t in cluster_token admin_token; do
  if [[ ! -s "$DIR/$t" ]]; then
    openssl rand -hex 32 > "$DIR/$t"
    echo "made $t in $DIR"
  fi
done
