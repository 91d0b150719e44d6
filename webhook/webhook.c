/* webhook.c - placeholder until the webhook module lands. */
#include <stdio.h>

#include "webhook.h"

int webhook_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dra-doctor webhook: not built yet\n");
    return 2;
}
