/*
 * webhook.h - `dra-doctor webhook`: the HTTPS validating admission webhook.
 */
#ifndef DD_WEBHOOK_H
#define DD_WEBHOOK_H

#include <cjson/cJSON.h>

int webhook_main(int argc, char **argv);

/* 1 when the watching webhook caches obj (trimmed by keep_trim_admission): one of the kinds
 * it watches, and of the claims only the allocated.  For bench/cache-bench. */
int wh_watches(const cJSON *obj);

#endif
