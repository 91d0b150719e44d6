/*
 * webhook.h - `dra-doctor webhook`: the HTTPS validating admission webhook.
 */
#ifndef DD_WEBHOOK_H
#define DD_WEBHOOK_H

int webhook_main(int argc, char **argv);

#endif
