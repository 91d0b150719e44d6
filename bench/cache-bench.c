/*
 * cache-bench - what the live caches and one snapshot of them take, in process: the objects of
 * a dump (`bench/ctl-load.py dump FILE`: a List as the API server serves it) trimmed, filtered,
 * their lists alike shared and packed as the controller's informers keep them
 * (lib/client/informer: keep_trim, keep_object, dd_json_pack), then one snapshot built over
 * them (lib/rules/snapshot), as the controller's first build after its lists.
 *
 *   cache-bench [--webhook] FILE
 *
 * Prints per kind the objects kept, their bytes (the packed blocks) and the cJSON nodes each
 * has of its own (those of lists and runs of last members held once not counted); the heap in
 * use for the caches (what is held once included) and the CPU to keep them; for the snapshot
 * (mallinfo2) its heap, the build's CPU and its findings.  --webhook: the watching webhook's
 * caches instead (the kinds it watches, trimmed by keep_trim_admission) and its view of them.
 * Built by `make build/release/cache-bench`; not part of the binary.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "formats/json.h"
#include "model/keep.h"
#include "rules/snapshot.h"
#include "../webhook/review.h"
#include "../webhook/webhook.h"

#define KINDS_MAX 32

struct kind {
    char name[48];
    size_t objects, bytes, nodes;
};

static double heap_mib(void)
{
    return (double)mallinfo2().uordblks / (1024.0 * 1024.0);
}

static double cpu_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The nodes of o's tree in its packed block [lo, hi): those of lists and runs of last
 * members it shares (dd_json_share, dd_json_tail) lie outside it. */
static size_t own_nodes(const cJSON *o, const char *lo, const char *hi)
{
    size_t n = 0;

    for (; o && (const char *)o >= lo && (const char *)o < hi; o = o->next)
        n += 1 + own_nodes(o->child, lo, hi);
    return n;
}

static struct kind *kind_of(struct kind *k, size_t *nk, const cJSON *obj)
{
    const char *name = dd_json_str(obj, "kind", NULL);
    size_t i;

    name = name ? name : "(none)";
    for (i = 0; i < *nk; i++)
        if (!strcmp(k[i].name, name))
            return &k[i];
    if (*nk == KINDS_MAX)
        return &k[KINDS_MAX - 1];
    snprintf(k[*nk].name, sizeof(k[*nk].name), "%s", name);
    return &k[(*nk)++];
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
        !(buf = malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "cache-bench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int main(int argc, char **argv)
{
    struct kind kinds[KINDS_MAX];
    size_t nk = 0, kept = 0, len, i;
    const cJSON **objs;
    struct snapshot *s;
    struct dd_err err;
    double base, cached, t, kept_s = 0;
    cJSON *root, *items, *it;
    char *text;

    int wh = argc == 3 && !strcmp(argv[1], "--webhook");

    argv += wh;
    argc -= wh;
    if (argc != 2) {
        fprintf(stderr, "usage: cache-bench [--webhook] FILE  (FILE from `bench/ctl-load.py dump "
                        "FILE`)\n");
        return 2;
    }
    memset(kinds, 0, sizeof(kinds));
    base = heap_mib();
    text = read_all(argv[1], &len);
    root = cJSON_ParseWithLength(text, len);
    free(text);
    items = cJSON_GetObjectItemCaseSensitive(root, "items");
    if (!cJSON_IsArray(items) ||
        !(objs = malloc(((size_t)cJSON_GetArraySize(items) + 1) * sizeof(*objs)))) {
        fprintf(stderr, "cache-bench: %s is no List\n", argv[1]);
        return 1;
    }
    cJSON_ArrayForEach(it, items) {
        cJSON *c = cJSON_Duplicate(it, 1);
        struct kind *k;
        if (!c) {
            fprintf(stderr, "cache-bench: out of memory\n");
            return 1;
        }
        t = cpu_s();
        if (wh)
            keep_trim_admission(c);
        else
            keep_trim(c);
        if (!keep_object(c) || (wh && !wh_watches(c))) {
            cJSON_Delete(c);
            kept_s += cpu_s() - t;
            continue;
        }
        c = dd_json_pack(c);
        kept_s += cpu_s() - t;
        k = kind_of(kinds, &nk, c);
        k->objects++;
        k->bytes += malloc_usable_size(c);
        k->nodes += own_nodes(c, (const char *)c, (const char *)c + malloc_usable_size(c));
        objs[kept++] = c;
    }
    cJSON_Delete(root);
    cached = heap_mib() - base;
    printf("%-22s %8s %12s %9s %9s\n", "kind", "objects", "bytes", "B/object", "nodes/obj");
    for (i = 0; i < nk; i++)
        printf("%-22s %8zu %12zu %9.0f %9.1f\n", kinds[i].name, kinds[i].objects, kinds[i].bytes,
               (double)kinds[i].bytes / (double)kinds[i].objects,
               (double)kinds[i].nodes / (double)kinds[i].objects);
    printf("caches: %zu objects, %.1f MiB in use (lists held once included), kept in %.2f s of "
           "CPU (trimmed, packed)\n", kept, cached, kept_s);
    t = cpu_s();
    dd_err_clear(&err);
    if (wh) {
        if (!wh_view_build((const cJSON *const *)objs, kept, NULL, &err)) {
            fprintf(stderr, "cache-bench: %s\n", err.msg);
            return 1;
        }
        printf("view: %.1f MiB in use, built in %.2f s of CPU\n", heap_mib() - base - cached,
               cpu_s() - t);
        return 0;
    }
    if (!(s = snapshot_build(NULL, objs, kept, NULL, NULL, NULL, &err))) {
        fprintf(stderr, "cache-bench: %s\n", err.msg);
        return 1;
    }
    t = cpu_s() - t;
    printf("snapshot: %.1f MiB in use, built in %.2f s of CPU, %zu findings\n",
           heap_mib() - base - cached, t, s->f.n);
    return 0;
}
