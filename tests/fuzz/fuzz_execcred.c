/*
 * fuzz_execcred.c - libFuzzer entry for an exec credential plugin's output
 * (lib/client/execcred's parser): whatever a plugin prints is either one
 * credential (a token, or a certificate with its key) or an error with a reason.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/execcred.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct execcred c = { 0 };
    struct dd_err err;
    enum dd_rc rc;

    memset(&err, 0, sizeof(err));
    rc = execcred_parse("client.authentication.k8s.io/v1", (const char *)data, size, &c, &err);
    if (rc != DD_OK) {
        if (err.msg[0] == '\0' || c.token || c.cert_pem || c.key_pem)
            abort();
        return 0;
    }
    if (!c.token && !c.cert_pem)
        abort();
    if (!c.cert_pem != !c.key_pem)
        abort();
    for (const char *p = c.token; p && *p; p++)
        if ((unsigned char)*p < 0x20)
            abort();
    execcred_release(&c);
    return 0;
}
