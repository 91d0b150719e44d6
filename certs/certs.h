/*
 * certs.h - `dra-doctor certs`: the webhook's CA and serving certificate
 * (OpenSSL 3 EVP), written as PEM files and/or a Secret, with the
 * ValidatingWebhookConfiguration's caBundle patched, and rotation before
 * expiry that keeps the old CA in the bundle during the overlap.
 */
#ifndef DD_CERTS_H
#define DD_CERTS_H

int certs_main(int argc, char **argv);

#endif
