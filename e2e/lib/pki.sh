# shellcheck shell=sh
# PKI and kubeconfig helpers for e2e/cluster (POSIX sh, sourced; needs the
# openssl CLI).  Everything is written under one directory and is meant for a
# throw-away loopback cluster: P-256 keys (RSA-2048 for the SA signing key),
# 10-year validity, no passphrases.

# pki_config DIR: a minimal openssl config with the extension sections used
# below (our own file, so the distribution's openssl.cnf defaults do not leak
# in).
pki_config() {
    cat > "$1/openssl.cnf" <<'EOF'
[req]
distinguished_name = dn
prompt = no
[dn]
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
[client]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
[apiserver]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
[local]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
authorityKeyIdentifier = keyid
subjectAltName = IP:127.0.0.1,DNS:localhost
EOF
}

# pki_ca DIR: ca.key, ca.crt
pki_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -sha256 \
        -config "$1/openssl.cnf" -extensions v3_ca \
        -subj "/CN=dra-doctor-e2e-ca" -keyout "$1/ca.key" -out "$1/ca.crt" 2>/dev/null
}

# pki_cert DIR NAME SUBJECT EXTENSION: NAME.key, NAME.crt signed by DIR/ca.*
pki_cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -config "$1/openssl.cnf" \
        -subj "$3" -keyout "$1/$2.key" -out "$1/$2.csr" 2>/dev/null &&
    openssl x509 -req -sha256 -days 3650 -in "$1/$2.csr" \
        -CA "$1/ca.crt" -CAkey "$1/ca.key" -CAcreateserial -CAserial "$1/ca.srl" \
        -extfile "$1/openssl.cnf" -extensions "$4" -out "$1/$2.crt" 2>/dev/null &&
    rm -f "$1/$2.csr"
}

# pki_sa DIR: the service-account signing key pair sa.key, sa.pub
pki_sa() {
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1/sa.key" 2>/dev/null &&
    openssl pkey -in "$1/sa.key" -pubout -out "$1/sa.pub" 2>/dev/null
}

_b64() { base64 < "$1" | tr -d '\n'; }

# kubeconfig_write FILE SERVER CA CERT KEY USER: a kubeconfig with embedded
# credentials (no kubectl needed).
kubeconfig_write() {
    cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: dra-doctor-e2e
  cluster:
    server: $2
    certificate-authority-data: $(_b64 "$3")
users:
- name: $6
  user:
    client-certificate-data: $(_b64 "$4")
    client-key-data: $(_b64 "$5")
contexts:
- name: dra-doctor-e2e
  context:
    cluster: dra-doctor-e2e
    user: $6
current-context: dra-doctor-e2e
EOF
}
