/* certs.c - placeholder until the certs module lands. */
#include <stdio.h>

#include "certs.h"

int certs_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "dra-doctor certs: not built yet\n");
    return 2;
}
