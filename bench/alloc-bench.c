/*
 * alloc-bench.c - one pod's allocation on every node of a snapshot (allocsnap.h), N times:
 * lib/model/alloc's side of bench/alloc-bench.sh.  The model and the inventory are built
 * once (the controller keeps them per snapshot); each run is alloc_pod, as the oracle's -bench
 * runs the plugin's PreFilter and Filter on every node.
 *
 *   alloc-bench SNAPSHOT.json N [explain]
 *
 * Prints {"name", "nodes", "fit", "ns_per_pod", "first_ns", "inventory_ns"}: first_ns is the
 * first pod, before the model holds any selector verdict (the cold figure); ns_per_pod the
 * mean over all N, as later pods of the same snapshot find the verdicts kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/alloc.h"
#include "model/allocsnap.h"
#include "model/dra.h"

static double now(void)
{
    struct timespec ts;

    /* CPU time: the machine is shared, and the oracle measures its own CPU time too. */
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    FILE *f;
    char *buf;
    long len;
    cJSON *snap;
    struct dra_model m;
    struct alloc_options opt;
    struct alloc_inventory *inv = NULL;
    struct alloc_result r;
    struct dd_err err;
    long n, i;
    size_t fit = 0, nodes = 0;
    int explain;
    double t0, inv_ns, first_ns = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: alloc-bench SNAPSHOT.json N [explain]\n");
        return 2;
    }
    n = atol(argv[2]);
    explain = argc > 3 && !strcmp(argv[3], "explain");
    if (!(f = fopen(argv[1], "rb"))) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    buf = malloc((size_t)len + 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
        return 1;
    buf[len] = '\0';
    fclose(f);
    if (!(snap = cJSON_Parse(buf)))
        return 1;
    free(buf);
    dra_model_init(&m, NULL, NULL);
    if (asnap_load(snap, &m, &opt, &err) != DD_OK || dra_model_finish(&m) != DD_OK) {
        fprintf(stderr, "alloc-bench: %s\n", err.msg);
        return 1;
    }
    t0 = now();
    for (i = 0; i < 10; i++) {
        alloc_inventory_free(inv);
        inv = alloc_inventory_new(&m, &opt, &err);
    }
    inv_ns = (now() - t0) / 10;
    if (!inv)
        return 1;
    t0 = now();
    for (i = 0; i < n; i++) {
        if (alloc_pod(inv, asnap_pod(&m), explain, &r, &err) != DD_OK)
            return 1;
        fit = r.nfit;
        nodes = r.nnodes;
        if (!i)
            first_ns = now() - t0;
        alloc_result_release(&r);
    }
    printf("{\"name\": \"%s\", \"nodes\": %zu, \"fit\": %zu, \"ns_per_pod\": %.0f, "
           "\"first_ns\": %.0f, \"inventory_ns\": %.0f}\n",
           cJSON_GetStringValue(cJSON_GetObjectItem(snap, "name")), nodes, fit,
           (now() - t0) / (double)n, first_ns, inv_ns);
    alloc_inventory_free(inv);
    dra_model_release(&m);
    cJSON_Delete(snap);
    return 0;
}
