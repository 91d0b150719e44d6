#include "model/quota.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int quota_usage_add(struct quota_usage *u, const char *key, int64_t n)
{
    size_t i;

    for (i = 0; i < u->n; i++)
        if (!strcmp(u->v[i].key, key)) {
            /* Saturate: a hostile replica count must not overflow the sum. */
            u->v[i].n = n > INT64_MAX - u->v[i].n ? INT64_MAX : u->v[i].n + n;
            return 0;
        }
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 8;
        struct quota_item *v = realloc(u->v, cap * sizeof(*v));
        if (!v)
            return -1;
        u->v = v;
        u->cap = cap;
    }
    if (!(u->v[u->n].key = strdup(key)))
        return -1;
    u->v[u->n++].n = n;
    return 0;
}

static int64_t mul_sat(int64_t a, int64_t b)
{
    if (a <= 0 || b <= 0)
        return 0;
    return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t request_devices(const struct dra_request *r)
{
    return r->all ? QUOTA_ALL_DEVICES : r->count;
}

static int class_key(char *buf, size_t size, const char *cls)
{
    return snprintf(buf, size, "%s%s", cls, QUOTA_CLASS_SUFFIX) < (int)size;
}

int quota_key_charged(const char *key)
{
    return !strcmp(key, QUOTA_CLAIM_COUNT_KEY) || strstr(key, QUOTA_CLASS_SUFFIX);
}

int quota_usage_add_claim(struct quota_usage *u, const struct dra_claim_spec *spec, int64_t claims)
{
    char key[512];
    size_t i, j, k;

    if (claims <= 0)
        return 0;
    if (quota_usage_add(u, QUOTA_CLAIM_COUNT_KEY, claims))
        return -1;
    for (i = 0; i < spec->nreq; i++) {
        const struct dra_request *r = &spec->req[i];

        if (!r->nsub) {
            if (r->class_name && class_key(key, sizeof(key), r->class_name) &&
                quota_usage_add(u, key, mul_sat(request_devices(r), claims)))
                return -1;
            continue;
        }
        /* firstAvailable: the worst case per class, each class counted once. */
        for (j = 0; j < r->nsub; j++) {
            const char *cls = r->sub[j].class_name;
            int64_t most = 0;
            int seen = 0;

            if (!cls)
                continue;
            for (k = 0; k < j; k++)
                seen |= r->sub[k].class_name && !strcmp(r->sub[k].class_name, cls);
            if (seen)
                continue;
            for (k = j; k < r->nsub; k++)
                if (r->sub[k].class_name && !strcmp(r->sub[k].class_name, cls) &&
                    request_devices(&r->sub[k]) > most)
                    most = request_devices(&r->sub[k]);
            if (class_key(key, sizeof(key), cls) && quota_usage_add(u, key, mul_sat(most, claims)))
                return -1;
        }
    }
    return 0;
}

int64_t quota_usage_get(const struct quota_usage *u, const char *key)
{
    size_t i;

    for (i = 0; i < u->n; i++)
        if (!strcmp(u->v[i].key, key))
            return u->v[i].n;
    return 0;
}

void quota_usage_release(struct quota_usage *u)
{
    size_t i;

    for (i = 0; i < u->n; i++)
        free(u->v[i].key);
    free(u->v);
    u->v = NULL;
    u->n = u->cap = 0;
}
