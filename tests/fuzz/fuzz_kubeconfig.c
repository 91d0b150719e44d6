/*
 * fuzz_kubeconfig.c - libFuzzer entry for kubeconfig parsing (no directory,
 * so relative file references resolve against the working directory and
 * normally fail).  Checks the result's invariants and frees it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config c;
    struct dd_err err;
    enum dd_rc rc;
    size_t n;

    memset(&err, 0, sizeof(err));
    rc = kube_config_parse(&c, (const char *)data, size, NULL, NULL, &err);
    if (rc != DD_OK) {
        /* Failures carry a reason and leave nothing behind. */
        if (err.msg[0] == '\0' || c.server || c.ca_pem || c.token || c.namespace_ || c.exec)
            abort();
        return 0;
    }
    if (!c.server || !c.namespace_ || !c.context || !c.namespace_[0])
        abort();
    n = strlen(c.server);
    if (n == 0 || c.server[n - 1] == '/' || strncmp(c.server, "http", 4) != 0)
        abort();
    if (!c.cert_pem != !c.key_pem)
        abort();
    /* An exec plugin: a command, argv[0] naming it, vectors NULL-terminated. */
    if (c.exec && (!c.exec->command || !c.exec->command[0] || !c.exec->argv ||
                   strcmp(c.exec->argv[0], c.exec->command) != 0 || !c.exec->env ||
                   !c.exec->api_version))
        abort();
    kube_config_release(&c);
    if (c.server || c.context)
        abort();
    return 0;
}
