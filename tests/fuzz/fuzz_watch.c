/*
 * fuzz_watch.c - libFuzzer entry for the watch stream parser.  The first
 * byte says how many chunk sizes follow (0-7) and whether the callback stops
 * the stream after a few events; those bytes give the sizes the rest of the
 * input is fed in, cycling.  The events seen must not depend on the
 * chunking, so the same bytes are also fed whole and the outcomes compared.
 * Each event's object is also trimmed, filtered and packed as the live caches keep
 * it (keep_trim_admission, which does keep_trim's work too): trimming the trimmed
 * object again changes nothing (but for keys twice in one object).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/kube.h"
#include "formats/json.h"
#include "model/keep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct tally {
    unsigned long events;
    unsigned long stop_after; /* 0: never stop */
    unsigned long hash;       /* of the types and objects seen, in order */
};

/* 1 when an object in o has a key twice: the API server never sends one, and the trim
 * reads the first, which its moves may change. */
static int dup_keys(const cJSON *o)
{
    const cJSON *a, *b;

    for (a = o ? o->child : NULL; a; a = a->next) {
        if (cJSON_IsObject(o) && a->string)
            for (b = a->next; b; b = b->next)
                if (b->string && !strcmp(a->string, b->string))
                    return 1;
        if (dup_keys(a))
            return 1;
    }
    return 0;
}

/* A copy of obj as a store keeps it; the copy is freed. */
static void cache(const cJSON *obj)
{
    cJSON *c = cJSON_Duplicate(obj, 1), *again;
    char *a, *b;

    if (!c)
        return;
    keep_trim_admission(c);
    /* Printed, not cJSON_Compare: that one looks duplicate keys up by name. */
    if ((again = cJSON_Duplicate(c, 1))) {
        keep_trim_admission(again);
        a = cJSON_PrintUnformatted(c);
        b = cJSON_PrintUnformatted(again);
        if (a && b && strcmp(a, b) && !dup_keys(obj))
            abort();
        cJSON_free(a);
        cJSON_free(b);
        cJSON_Delete(again);
    }
    if (keep_object(c))
        c = dd_json_pack(c);
    cJSON_Delete(c);
}

static int on_event(void *ctx, const char *type, cJSON *obj)
{
    struct tally *t = ctx;
    char *text;
    const char *p;

    if (!type || !obj || !cJSON_IsObject(obj))
        abort();
    cache(obj);
    text = cJSON_PrintUnformatted(obj);
    for (p = type; *p; p++)
        t->hash = t->hash * 31 + (unsigned char)*p;
    for (p = text; p && *p; p++)
        t->hash = t->hash * 31 + (unsigned char)*p;
    cJSON_free(text);
    cJSON_Delete(obj);
    t->events++;
    return t->stop_after && t->events >= t->stop_after;
}

/* Feeds buf in chunks; returns the final code, and fills t. */
static enum dd_rc run(const uint8_t *buf, size_t len, const uint8_t *sizes, size_t nsizes,
                      struct tally *t)
{
    struct kube_watch_parser *p = kube_watch_parser_new(4096, on_event, t);
    struct dd_err err;
    enum dd_rc rc = DD_OK;
    size_t off = 0, k = 0, n;
    int stopped = 0;

    if (!p)
        abort();
    while (off < len && rc == DD_OK && !stopped) {
        n = nsizes ? (size_t)sizes[k++ % nsizes] + 1 : len - off;
        if (n > len - off)
            n = len - off;
        err.msg[0] = '\0';
        rc = kube_watch_parser_feed(p, (const char *)buf + off, n, &stopped, &err);
        if (rc != DD_OK && err.msg[0] == '\0')
            abort(); /* every failure carries a reason */
        off += n;
    }
    kube_watch_parser_free(p);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tally a = { 0, 0, 0 }, b = { 0, 0, 0 };
    size_t nsizes;
    enum dd_rc ra, rb;

    if (size < 1)
        return 0;
    nsizes = data[0] & 7;
    if (size < 1 + nsizes)
        return 0;
    if (data[0] & 0x80)
        a.stop_after = b.stop_after = 1 + ((data[0] >> 3) & 3);
    ra = run(data + 1 + nsizes, size - 1 - nsizes, data + 1, nsizes, &a);
    rb = run(data + 1 + nsizes, size - 1 - nsizes, NULL, 0, &b);
    /* Chunking must not change what is delivered, nor how it ends. */
    if (ra != rb || a.events != b.events || a.hash != b.hash)
        abort();
    return 0;
}
