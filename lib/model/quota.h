/*
 * quota.h - what a ResourceClaim costs against a ResourceQuota, counted as
 * kube-apiserver's quota evaluator counts it (dra-facts.md section 2.2):
 *   count/resourceclaims.resource.k8s.io   += 1 per claim;
 *   <class>.deviceclass.resource.k8s.io/devices += count for ExactCount,
 *       += 32 (the most a request can be allocated) for All,
 *       and for firstAvailable the largest alternative per class.
 * Charged when the claim object is created, not when it is allocated.
 */
#ifndef DD_QUOTA_H
#define DD_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "model/dra.h"

#define QUOTA_CLAIM_COUNT_KEY "count/resourceclaims.resource.k8s.io"
#define QUOTA_CLASS_SUFFIX ".deviceclass.resource.k8s.io/devices"
/* AllocationResultsMaxSize: an All request is charged as if it got this many devices. */
#define QUOTA_ALL_DEVICES 32

struct quota_item {
    char *key;   /* owned */
    int64_t n;
};

struct quota_usage {
    struct quota_item *v;
    size_t n, cap;
};

#define QUOTA_USAGE_INIT { NULL, 0, 0 }

/* 1 when key is one the DRA evaluator charges (the count of claims, a class's devices). */
int quota_key_charged(const char *key);

/* Adds what one claim with this spec costs, times `claims` (claims >= 0).  0, or -1 on ENOMEM. */
int quota_usage_add_claim(struct quota_usage *u, const struct dra_claim_spec *spec, int64_t claims);

/* Adds n (saturating) to key's usage.  0, or -1 on ENOMEM. */
int quota_usage_add(struct quota_usage *u, const char *key, int64_t n);

/* The usage recorded for key (0 when none). */
int64_t quota_usage_get(const struct quota_usage *u, const char *key);

/* Frees what u owns and leaves it empty. */
void quota_usage_release(struct quota_usage *u);

#endif
