/*
 * fuzz_alloc_diff.c - differential harness for lib/model/alloc: the input bytes drive a
 * generator of allocation snapshots (allocsnap.h) - nodes with labels and taints, node-local,
 * nodeSelector, allNodes and per-device pools, generations and incomplete or invalid pools,
 * devices with attributes, capacities and request policies, taints, binding conditions,
 * shared counters and what devices consume of them, compatibility groups; classes; the pod's
 * claims with exact counts, allocationMode All, firstAvailable, selectors, admin access,
 * tolerations, capacity requests, matchAttribute and distinctAttribute constraints; claims
 * holding devices (shared or not, admin access), in-flight ones; the pod's node filters; the
 * feature gates of the release, some flipped.  lib/model/alloc judges the pod on every node;
 * when ALLOC_ORACLE names the oracle (e2e/peers/build-allocoracle.sh) the same snapshot goes
 * to Kubernetes' own allocator and any difference in a node's verdict, in whether the pod's
 * own filters exclude the node, or in the devices a fitting node gets is a crash with both
 * answers and the snapshot printed.
 *
 * Built with -DALLOC_DIFF_MAIN it is the deterministic slice of `make test` instead
 * (scripts/alloc-differential.sh): `alloc-diff [-n N] [-s SEED] [-w DIR] [CASE.json...]`
 * runs N generated snapshots from SEED and the given files: cases (NAME.json, a snapshot with
 * an "expect" answer: each node's status, stated) or a fuzzer's inputs (any other name);
 * prints "N agreed, N differed" and exits 1 on a difference; -w writes each differing
 * generated snapshot to DIR.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cel/cel.h"
#include "model/alloc.h"
#include "model/allocsnap.h"
#include "model/dra.h"
#include "peer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Searches that long are given up on both sides (the oracle's filter timeout is short too)
 * and not compared: which side gives up first is a matter of speed (asnap_compare). */
#define MAX_STEPS 100000
#define FILTER_TIMEOUT_SECONDS 0.2
static size_t skipped;

/* ---- the generator ------------------------------------------------------------------- */

struct gen {
    const uint8_t *d;
    size_t n, i;
};

static unsigned pick(struct gen *g, unsigned k)
{
    return k ? (g->i < g->n ? g->d[g->i++] : 0) % k : 0;
}

/* 1 with probability num/den. */
static int chance(struct gen *g, unsigned num, unsigned den)
{
    return pick(g, den) < num;
}

static cJSON *obj(cJSON *parent, const char *key)
{
    return key ? cJSON_AddObjectToObject(parent, key) : cJSON_CreateObject();
}

static cJSON *meta(cJSON *o, const char *name, const char *ns)
{
    cJSON *m = obj(o, "metadata");

    cJSON_AddStringToObject(m, "name", name);
    if (ns)
        cJSON_AddStringToObject(m, "namespace", ns);
    return m;
}

static const char *const drivers[] = {"gpu.example.com", "nic.example.com"};
static const char *const models[] = {"a100", "h100"};
static const char *const roots[] = {"r0", "r1", "r2"};
static const char *const zones[] = {"a", "b"};
static const char *const mems[] = {"40Gi", "80Gi", "10Gi", "1500m"};
static const char *const taint_keys[] = {"health", "maintenance"};
static const char *const effects[] = {"NoSchedule", "NoExecute", "None"};

#define NNODES 4

/* nodeSelector {zone op [zone]} on o. */
static void zone_selector(cJSON *o, const char *op, const char *zone)
{
    cJSON *ns = obj(o, "nodeSelector"), *terms = cJSON_AddArrayToObject(ns, "nodeSelectorTerms");
    cJSON *t = cJSON_CreateObject(), *ex = cJSON_AddArrayToObject(t, "matchExpressions");
    cJSON *e = cJSON_CreateObject(), *v = cJSON_AddArrayToObject(e, "values");

    cJSON_AddItemToArray(terms, t);
    cJSON_AddItemToArray(ex, e);
    cJSON_AddStringToObject(e, "key", "zone");
    cJSON_AddStringToObject(e, "operator", op);
    cJSON_AddItemToArray(v, cJSON_CreateString(zone));
}

struct world {
    int nnodes;
    int counters[2];              /* per driver: its shared pool has a counter slice */
    int lists;                    /* DRAListTypeAttributes on */
    cJSON *slices;
    int nslices;
};

static void add_taints(struct gen *g, cJSON *dev)
{
    cJSON *t = cJSON_AddArrayToObject(dev, "taints"), *e = cJSON_CreateObject();

    cJSON_AddItemToArray(t, e);
    cJSON_AddStringToObject(e, "key", taint_keys[pick(g, 2)]);
    if (chance(g, 1, 2))
        cJSON_AddStringToObject(e, "value", pick(g, 2) ? "bad" : "soon");
    cJSON_AddStringToObject(e, "effect", effects[pick(g, 3)]);
}

static void add_capacity(struct gen *g, cJSON *dev, int consumable)
{
    cJSON *cap = obj(dev, "capacity"), *m = obj(cap, "memory");

    cJSON_AddStringToObject(m, "value", mems[pick(g, 4)]);
    if (consumable && chance(g, 1, 2)) {
        cJSON *p = obj(m, "requestPolicy");
        switch (pick(g, 3)) {
        case 0: {
            cJSON *r = obj(p, "validRange");
            cJSON_AddStringToObject(p, "default", "2Gi");
            cJSON_AddStringToObject(r, "min", "1Gi");
            if (chance(g, 1, 2))
                cJSON_AddStringToObject(r, "max", "40Gi");
            cJSON_AddStringToObject(r, "step", pick(g, 2) ? "1Gi" : "512Mi");
            break;
        }
        case 1: {
            cJSON *v = cJSON_AddArrayToObject(p, "validValues");
            cJSON_AddStringToObject(p, "default", "4Gi");
            cJSON_AddItemToArray(v, cJSON_CreateString("4Gi"));
            cJSON_AddItemToArray(v, cJSON_CreateString("8Gi"));
            cJSON_AddItemToArray(v, cJSON_CreateString("16Gi"));
            break;
        }
        default:
            cJSON_AddStringToObject(p, "default", "10Gi");
            break;
        }
    }
    if (chance(g, 1, 3)) {
        cJSON *c = obj(cap, "cores");
        cJSON_AddStringToObject(c, "value", pick(g, 2) ? "8" : "2");
    }
}

static void add_attrs(struct gen *g, cJSON *dev, int driver, int k, const struct world *w)
{
    cJSON *a = obj(dev, "attributes"), *x;

    x = obj(a, "model");
    cJSON_AddStringToObject(x, "string", models[pick(g, 2)]);
    x = obj(a, "index");
    cJSON_AddNumberToObject(x, "int", k);
    if (chance(g, 3, 4)) {
        x = obj(a, pick(g, 4) ? "root" : (driver ? "nic.example.com/root" : "gpu.example.com/root"));
        cJSON_AddStringToObject(x, "string", roots[pick(g, 3)]);
    }
    if (chance(g, 1, 2)) {
        x = obj(a, "healthy");
        cJSON_AddBoolToObject(x, "bool", pick(g, 2));
    }
    if (chance(g, 1, 4)) {
        x = obj(a, "version");
        cJSON_AddStringToObject(x, "version", pick(g, 2) ? "1.0.0" : "2.1.0");
    }
    if (w->lists && chance(g, 1, 3)) {
        cJSON *l;
        x = obj(a, "links");
        l = cJSON_AddArrayToObject(x, "strings");
        cJSON_AddItemToArray(l, cJSON_CreateString(roots[pick(g, 3)]));
        if (chance(g, 1, 2))
            cJSON_AddItemToArray(l, cJSON_CreateString(roots[pick(g, 3)]));
    }
}

/* A device of slice `sl` of driver `drv`; counters: the pool has counter set "set-<drv>". */
static void add_device(struct gen *g, cJSON *devs, int drv, int k, int counters,
                       const struct world *w, int consumable, int per_device, int dup)
{
    cJSON *d = cJSON_CreateObject();
    char name[32];

    snprintf(name, sizeof(name), "dev-%d", dup ? 0 : k);
    cJSON_AddItemToArray(devs, d);
    cJSON_AddStringToObject(d, "name", name);
    add_attrs(g, d, drv, k, w);
    if (chance(g, 1, 2))
        add_capacity(g, d, consumable);
    if (consumable && chance(g, 1, 5))
        cJSON_AddTrueToObject(d, "allowMultipleAllocations");
    if (chance(g, 1, 6))
        add_taints(g, d);
    if (chance(g, 1, 10)) {
        cJSON *b = cJSON_AddArrayToObject(d, "bindingConditions");
        cJSON_AddItemToArray(b, cJSON_CreateString("attached"));
        b = cJSON_AddArrayToObject(d, "bindingFailureConditions");
        cJSON_AddItemToArray(b, cJSON_CreateString("failed"));
        if (chance(g, 1, 2))
            cJSON_AddTrueToObject(d, "bindsToNode");
    }
    if (counters && chance(g, 3, 4)) {
        cJSON *cc = cJSON_AddArrayToObject(d, "consumesCounters"), *e = cJSON_CreateObject(), *m;
        char set[32];
        snprintf(set, sizeof(set), "set-%d", drv);
        cJSON_AddItemToArray(cc, e);
        cJSON_AddStringToObject(e, "counterSet", chance(g, 1, 20) ? "missing" : set);
        m = obj(obj(e, "counters"), "mem");
        cJSON_AddStringToObject(m, "value", pick(g, 2) ? "40Gi" : "20Gi");
        if (chance(g, 1, 4)) { /* a second counter of the set */
            m = obj(cJSON_GetObjectItem(e, "counters"), "sms");
            cJSON_AddStringToObject(m, "value", pick(g, 2) ? "2" : "4");
        }
        if (chance(g, 1, 4)) {
            cJSON *gr = cJSON_AddArrayToObject(e, "compatibilityGroups");
            cJSON_AddItemToArray(gr, cJSON_CreateString(pick(g, 2) ? "mig" : "full"));
        }
    }
    if (per_device) {
        char node[24];
        switch (pick(g, 3)) {
        case 0:
            snprintf(node, sizeof(node), "node-%d", (int)pick(g, NNODES));
            cJSON_AddStringToObject(d, "nodeName", node);
            break;
        case 1:
            cJSON_AddTrueToObject(d, "allNodes");
            break;
        default:
            zone_selector(d, "In", zones[pick(g, 2)]);
            break;
        }
    }
}

static cJSON *slice(struct world *w, const char *name, int drv, const char *pool, int gen_,
                   int count)
{
    cJSON *s = cJSON_CreateObject(), *spec, *p;

    cJSON_AddItemToArray(w->slices, s);
    meta(s, name, NULL);
    spec = obj(s, "spec");
    cJSON_AddStringToObject(spec, "driver", drivers[drv]);
    p = obj(spec, "pool");
    cJSON_AddStringToObject(p, "name", pool);
    cJSON_AddNumberToObject(p, "generation", gen_);
    cJSON_AddNumberToObject(p, "resourceSliceCount", count);
    w->nslices++;
    return spec;
}

static void gen_slices(struct gen *g, struct world *w, int consumable)
{
    char name[64], pool[64];
    int i, k;

    /* Node-local pools: one or two slices each, sometimes a stale generation beside, one
     * missing, or a device name twice. */
    for (i = 0; i < w->nnodes; i++) {
        int drv = pick(g, 4) == 0, nsl = chance(g, 1, 5) ? 2 : 1, missing = chance(g, 1, 25);
        int dup = chance(g, 1, 25), gen_ = pick(g, 2) + 1;
        if (chance(g, 1, 8))
            continue; /* a node without devices */
        snprintf(pool, sizeof(pool), "node-%d", i);
        for (k = 0; k < nsl; k++) {
            cJSON *spec, *devs;
            int ndev = (int)pick(g, 3) + 1, j;
            if (missing && k == nsl - 1 && nsl > 1)
                break;
            snprintf(name, sizeof(name), "node-%d-%s-%d", i, drv ? "nic" : "gpu", k);
            spec = slice(w, name, drv, pool, gen_, nsl + (missing && nsl == 1));
            snprintf(name, sizeof(name), "node-%d", i);
            cJSON_AddStringToObject(spec, "nodeName", name);
            devs = cJSON_AddArrayToObject(spec, "devices");
            for (j = 0; j < ndev; j++)
                add_device(g, devs, drv, k * 4 + j, 0, w, consumable, 0, dup && j == 1);
        }
        if (chance(g, 1, 10)) { /* the previous generation, not yet deleted */
            cJSON *spec, *devs;
            snprintf(name, sizeof(name), "node-%d-old", i);
            spec = slice(w, name, drv, pool, gen_ - 1, 1);
            snprintf(name, sizeof(name), "node-%d", i);
            cJSON_AddStringToObject(spec, "nodeName", name);
            devs = cJSON_AddArrayToObject(spec, "devices");
            add_device(g, devs, drv, 9, 0, w, consumable, 0, 0);
        }
    }
    /* Network-attached pools: a nodeSelector, allNodes, or per-device node selection; some
     * with a counter slice (partitionable devices). */
    for (i = 0; i < 2; i++) {
        cJSON *spec, *devs;
        int mode = (int)pick(g, 5), counters = chance(g, 1, 2), ndev = (int)pick(g, 4) + 1, j;
        if (mode == 4)
            continue;
        w->counters[i] = counters;
        snprintf(pool, sizeof(pool), "shared-%d", i);
        snprintf(name, sizeof(name), "shared-%d-devices", i);
        spec = slice(w, name, i, pool, 1, counters ? 2 : 1);
        if (mode == 0) {
            const char *op = pick(g, 3) ? "In" : "NotIn";
            zone_selector(spec, op, zones[pick(g, 2)]);
        } else if (mode == 1) {
            cJSON_AddTrueToObject(spec, "allNodes");
        } else {
            cJSON_AddTrueToObject(spec, "perDeviceNodeSelection");
        }
        if (chance(g, 1, 8)) {
            cJSON *ops = cJSON_AddArrayToObject(spec, "skipNodeOperations");
            cJSON_AddItemToArray(ops, cJSON_CreateString("*"));
        }
        devs = cJSON_AddArrayToObject(spec, "devices");
        for (j = 0; j < ndev; j++)
            add_device(g, devs, i, j, counters, w, consumable, mode >= 2, 0);
        if (counters) {
            cJSON *sc, *set, *c;
            char setname[32];
            snprintf(name, sizeof(name), "shared-%d-counters", i);
            spec = slice(w, name, i, pool, 1, 2);
            if (pick(g, 3))
                cJSON_AddTrueToObject(spec, "allNodes");
            else
                cJSON_AddStringToObject(spec, "nodeName", "node-0");
            sc = cJSON_AddArrayToObject(spec, "sharedCounters");
            set = cJSON_CreateObject();
            cJSON_AddItemToArray(sc, set);
            snprintf(setname, sizeof(setname), "set-%d", i);
            cJSON_AddStringToObject(set, "name", setname);
            c = obj(obj(set, "counters"), "mem");
            cJSON_AddStringToObject(c, "value", pick(g, 2) ? "80Gi" : "40Gi");
            if (chance(g, 4, 5)) {
                c = obj(cJSON_GetObjectItem(set, "counters"), "sms");
                cJSON_AddStringToObject(c, "value", pick(g, 2) ? "8" : "5");
            }
        }
    }
}

static void selector(cJSON *arr, const char *expr)
{
    cJSON *s = cJSON_CreateObject(), *c = obj(s, "cel");

    cJSON_AddStringToObject(c, "expression", expr);
    cJSON_AddItemToArray(arr, s);
}

static void gen_classes(struct gen *g, cJSON *classes)
{
    static const char *const names[] = {"gpu", "gpu-big", "nic", "any"};
    static const char *const exprs[] = {
        "device.driver == 'gpu.example.com'",
        "device.driver == 'gpu.example.com' && (!has(device.capacity['gpu.example.com'].memory) "
        "|| device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0)",
        "device.driver == 'nic.example.com'",
        "true",
    };
    size_t i;

    for (i = 0; i < 4; i++) {
        cJSON *c = cJSON_CreateObject(), *spec, *sels;
        cJSON_AddItemToArray(classes, c);
        meta(c, names[i], NULL);
        spec = obj(c, "spec");
        sels = cJSON_AddArrayToObject(spec, "selectors");
        selector(sels, exprs[i]);
        if (i == 0 && chance(g, 1, 6))
            selector(sels, "device.attributes['gpu.example.com'].model == 'a100'");
    }
}

static const char *const classes[] = {"gpu", "gpu-big", "nic", "any", "missing"};

static void request_body(struct gen *g, cJSON *r, int sub, int consumable, int *all)
{
    cJSON *sels;

    cJSON_AddStringToObject(r, "deviceClassName", classes[chance(g, 1, 100) ? 4 : pick(g, 4)]);
    if (chance(g, 1, 8)) {
        cJSON_AddStringToObject(r, "allocationMode", "All");
        (*all)++;
    } else if (chance(g, 1, 2)) {
        cJSON_AddNumberToObject(r, "count", (int)pick(g, 3) + 1);
    }
    if (chance(g, 1, 3)) {
        /* Guarded as selectors of a class that spans drivers must be; an unguarded one now
         * and then (a CEL error stops the pod's scheduling). */
        static const char *const exprs[] = {
            "device.driver != 'gpu.example.com' || device.attributes['gpu.example.com'].model == 'h100'",
            "!has(device.attributes['gpu.example.com'].healthy) || "
            "device.attributes['gpu.example.com'].healthy",
            "device.attributes[device.driver].index < 2",
            "device.attributes[device.driver].model == 'a100'",
            "!has(device.capacity[device.driver].memory) || "
            "device.capacity[device.driver].memory.compareTo(quantity('20Gi')) > 0",
            "device.attributes['dra.net'].model == 'x'",
        };
        sels = cJSON_AddArrayToObject(r, "selectors");
        selector(sels, exprs[chance(g, 1, 30) ? 5 : pick(g, 5)]);
    }
    if (!sub && chance(g, 1, 10))
        cJSON_AddBoolToObject(r, "adminAccess", pick(g, 3) != 0);
    if (chance(g, 1, 5)) {
        cJSON *t = cJSON_AddArrayToObject(r, "tolerations"), *e = cJSON_CreateObject();
        cJSON_AddItemToArray(t, e);
        if (chance(g, 1, 6)) {
            cJSON_AddStringToObject(e, "operator", "Exists"); /* every taint */
        } else if (pick(g, 2)) {
            cJSON_AddStringToObject(e, "key", taint_keys[pick(g, 2)]);
            cJSON_AddStringToObject(e, "operator", "Exists");
        } else {
            cJSON_AddStringToObject(e, "key", taint_keys[pick(g, 2)]);
            cJSON_AddStringToObject(e, "value", "bad");
        }
        if (chance(g, 1, 2))
            cJSON_AddStringToObject(e, "effect", effects[pick(g, 2)]);
    }
    if (consumable && chance(g, 1, 5)) {
        static const char *const asks[] = {"1Gi", "3Gi", "5Gi", "20Gi", "100Gi", "1500Mi"};
        cJSON *c = obj(obj(r, "capacity"), "requests");
        /* One pick a statement: C leaves the order of a call's arguments open. */
        const char *what = pick(g, 6) ? "memory" : "cores";
        cJSON_AddStringToObject(c, what, asks[pick(g, 6)]);
    }
}

static cJSON *gen_claim(struct gen *g, const char *name, int consumable, int *all)
{
    cJSON *c = cJSON_CreateObject(), *devs, *reqs;
    int nreq = chance(g, 1, 3) ? 2 : chance(g, 1, 40) ? 0 : 1, i;
    char rn[16];

    meta(c, name, "default");
    devs = obj(obj(c, "spec"), "devices");
    reqs = cJSON_AddArrayToObject(devs, "requests");
    for (i = 0; i < nreq; i++) {
        cJSON *r = cJSON_CreateObject();
        snprintf(rn, sizeof(rn), "r%d", i);
        cJSON_AddItemToArray(reqs, r);
        cJSON_AddStringToObject(r, "name", rn);
        if (chance(g, 1, 5)) {
            cJSON *fa = cJSON_AddArrayToObject(r, "firstAvailable");
            int k, ns = (int)pick(g, 2) + 2;
            for (k = 0; k < ns; k++) {
                cJSON *s = cJSON_CreateObject();
                char sn[16];
                snprintf(sn, sizeof(sn), "s%d", k);
                cJSON_AddItemToArray(fa, s);
                cJSON_AddStringToObject(s, "name", sn);
                request_body(g, s, 1, consumable, all);
            }
        } else {
            request_body(g, obj(r, "exactly"), 0, consumable, all);
        }
    }
    if (chance(g, 1, 3)) {
        cJSON *cons = cJSON_AddArrayToObject(devs, "constraints"), *k = cJSON_CreateObject();
        static const char *const attrs[] = {"gpu.example.com/root", "gpu.example.com/model",
                                            "nic.example.com/root", "gpu.example.com/links",
                                            "gpu.example.com/index", "gpu.example.com/healthy",
                                            "gpu.example.com/version"};
        const char *kind = pick(g, 3) ? "matchAttribute" : "distinctAttribute";
        cJSON_AddItemToArray(cons, k);
        cJSON_AddStringToObject(k, kind, attrs[pick(g, 7)]);
        if (nreq > 1 && chance(g, 1, 3)) {
            cJSON *rq = cJSON_AddArrayToObject(k, "requests");
            cJSON_AddItemToArray(rq, cJSON_CreateString(pick(g, 3) ? "r0" : "r1/s1"));
        }
    }
    return c;
}

/* Another claim, allocated: it holds devices of node-local or shared pools. */
static cJSON *gen_allocated(struct gen *g, const char *name, const struct world *w)
{
    cJSON *c = cJSON_CreateObject(), *res, *a, *spec, *reqs, *r, *ex;
    int n = (int)pick(g, 3) + 1, i;

    meta(c, name, "default");
    spec = obj(obj(c, "spec"), "devices");
    reqs = cJSON_AddArrayToObject(spec, "requests");
    r = cJSON_CreateObject();
    cJSON_AddItemToArray(reqs, r);
    cJSON_AddStringToObject(r, "name", "r");
    ex = obj(r, "exactly");
    cJSON_AddStringToObject(ex, "deviceClassName", "any");
    cJSON_AddNumberToObject(ex, "count", n);
    a = obj(obj(c, "status"), "allocation");
    res = cJSON_AddArrayToObject(obj(a, "devices"), "results");
    for (i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        char pool[32], dev[32];
        int drv = pick(g, 2), shared = chance(g, 1, 3);
        if (shared)
            snprintf(pool, sizeof(pool), "shared-%d", drv);
        else
            snprintf(pool, sizeof(pool), "node-%d", (int)pick(g, (unsigned)w->nnodes));
        snprintf(dev, sizeof(dev), "dev-%d", (int)pick(g, 5));
        cJSON_AddItemToArray(res, e);
        cJSON_AddStringToObject(e, "request", "r");
        cJSON_AddStringToObject(e, "driver", drivers[drv]);
        cJSON_AddStringToObject(e, "pool", pool);
        cJSON_AddStringToObject(e, "device", dev);
        if (chance(g, 1, 8))
            cJSON_AddTrueToObject(e, "adminAccess");
        if (chance(g, 1, 5)) {
            cJSON_AddStringToObject(e, "shareID", "0b5f1d4e-2c3a-4f5e-8a9b-1c2d3e4f5a6b");
            if (chance(g, 1, 2))
                cJSON_AddStringToObject(obj(e, "consumedCapacity"), "memory", pick(g, 2) ? "8Gi" : "30Gi");
        }
    }
    return c;
}

/* A pod's allocated claim: devices that skip node operations, binding conditions that
 * failed, were met, or are still pending (long after the allocation, or not). */
static void allocated_extras(struct gen *g, cJSON *c)
{
    cJSON *st = cJSON_GetObjectItem(c, "status"), *a = cJSON_GetObjectItem(st, "allocation");
    cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "devices"), "results"), 0);

    if (!first)
        return;
    if (chance(g, 1, 4)) {
        cJSON *ops = cJSON_AddArrayToObject(first, "skipNodeOperations");
        cJSON_AddItemToArray(ops, cJSON_CreateString("*"));
    }
    if (chance(g, 1, 3)) {
        cJSON *bc = cJSON_AddArrayToObject(first, "bindingConditions"), *devs, *d, *conds, *k;
        cJSON_AddItemToArray(bc, cJSON_CreateString("attached"));
        bc = cJSON_AddArrayToObject(first, "bindingFailureConditions");
        cJSON_AddItemToArray(bc, cJSON_CreateString("failed"));
        cJSON_AddStringToObject(a, "allocationTimestamp", pick(g, 2) ? "2025-01-01T00:00:00Z"
                                                                     : "2999-01-01T00:00:00Z");
        if (chance(g, 2, 3)) {
            devs = cJSON_AddArrayToObject(st, "devices");
            d = cJSON_CreateObject();
            cJSON_AddItemToArray(devs, d);
            cJSON_AddStringToObject(d, "driver", cJSON_GetStringValue(cJSON_GetObjectItem(first, "driver")));
            cJSON_AddStringToObject(d, "pool", cJSON_GetStringValue(cJSON_GetObjectItem(first, "pool")));
            cJSON_AddStringToObject(d, "device", cJSON_GetStringValue(cJSON_GetObjectItem(first, "device")));
            conds = cJSON_AddArrayToObject(d, "conditions");
            k = cJSON_CreateObject();
            cJSON_AddItemToArray(conds, k);
            cJSON_AddStringToObject(k, "type", pick(g, 2) ? "attached" : "failed");
            cJSON_AddStringToObject(k, "status", pick(g, 3) ? "True" : "False");
            cJSON_AddStringToObject(k, "reason", "Test");
            cJSON_AddStringToObject(k, "message", "");
            cJSON_AddStringToObject(k, "lastTransitionTime", "2025-01-01T00:00:00Z");
        }
    }
}

static cJSON *gen_node(struct gen *g, int i)
{
    cJSON *n = cJSON_CreateObject(), *m, *l;
    char name[24];

    snprintf(name, sizeof(name), "node-%d", i);
    m = meta(n, name, NULL);
    l = obj(m, "labels");
    cJSON_AddStringToObject(l, "zone", zones[pick(g, 2)]);
    cJSON_AddStringToObject(l, "kubernetes.io/hostname", name);
    if (chance(g, 1, 8)) {
        cJSON *t = cJSON_AddArrayToObject(obj(n, "spec"), "taints"), *e = cJSON_CreateObject();
        cJSON_AddItemToArray(t, e);
        cJSON_AddStringToObject(e, "key", "nvidia.com/gpu");
        cJSON_AddStringToObject(e, "value", "present");
        cJSON_AddStringToObject(e, "effect", pick(g, 2) ? "NoSchedule" : "PreferNoSchedule");
    }
    if (chance(g, 1, 15))
        cJSON_AddTrueToObject(cJSON_GetObjectItem(n, "spec") ? cJSON_GetObjectItem(n, "spec")
                                                             : obj(n, "spec"), "unschedulable");
    if (chance(g, 1, 6)) {
        cJSON *df = cJSON_AddArrayToObject(obj(n, "status"), "declaredFeatures");
        cJSON_AddItemToArray(df, cJSON_CreateString("DRAOptionalNodeOperations"));
    }
    return n;
}

/* The release's gates (most snapshots), the stable allocator's (every beta gate it does not
 * support off), or alpha gates on (the experimental one); a few others flipped now and then. */
static void gen_gates(struct gen *g, cJSON *snap, int *consumable, int *lists)
{
    static const char *const flips[] = {
        "DRAConsumableCapacity", "DRAPartitionableDevices", "DRADeviceTaints",
        "DRAAdminAccess", "DRADeviceBindingConditions", "DRAListTypeAttributes",
        "DRADeviceCompatibilityGroups", "DRAOptionalNodeOperations", "DRAFractionalCapacityRange",
        "DRAPrioritizedList",
    };
    int on[] = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1};
    const int dflt[] = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1};
    cJSON *gates = obj(snap, "gates");
    size_t i;

    switch (pick(g, 10)) {
    case 0: /* stable */
        on[0] = on[4] = on[8] = 0;
        break;
    case 1: case 2: /* experimental */
        on[5] = chance(g, 1, 2);
        on[6] = chance(g, 1, 2);
        on[7] = chance(g, 1, 2);
        if (!on[5] && !on[6] && !on[7])
            on[5 + pick(g, 3)] = 1;
        break;
    default:
        break;
    }
    for (i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
        if (chance(g, 1, i == 9 ? 40 : 12))
            on[i] = !on[i];
        if (on[i] != dflt[i])
            cJSON_AddBoolToObject(gates, flips[i], on[i]);
    }
    *consumable = on[0];
    *lists = on[5];
}

static cJSON *generate(const uint8_t *data, size_t size)
{
    struct gen g = {data, size, 0};
    struct world w = {0};
    cJSON *snap = cJSON_CreateObject(), *nodes, *classes_, *claims, *pod, *spec, *rcs;
    int consumable, i, nclaims, all = 0;
    char name[32];

    cJSON_AddStringToObject(snap, "name", "generated");
    cJSON_AddNumberToObject(snap, "filterTimeoutSeconds", FILTER_TIMEOUT_SECONDS);
    gen_gates(&g, snap, &consumable, &w.lists);
    w.nnodes = (int)pick(&g, NNODES) + 1;
    nodes = cJSON_AddArrayToObject(snap, "nodes");
    for (i = 0; i < w.nnodes; i++)
        cJSON_AddItemToArray(nodes, gen_node(&g, i));
    w.slices = cJSON_AddArrayToObject(snap, "slices");
    gen_slices(&g, &w, consumable);
    classes_ = cJSON_AddArrayToObject(snap, "classes");
    gen_classes(&g, classes_);
    claims = cJSON_AddArrayToObject(snap, "claims");
    pod = cJSON_CreateObject();
    {
        cJSON *m = meta(pod, "pod", "default");
        cJSON_AddStringToObject(m, "uid", "4f3c9a1e-0000-4000-8000-000000000001");
    }
    spec = obj(pod, "spec");
    rcs = cJSON_AddArrayToObject(spec, "resourceClaims");
    nclaims = (int)pick(&g, 3) + 1;
    for (i = 0; i < nclaims; i++) {
        cJSON *c, *pc = cJSON_CreateObject();
        char pcname[24];
        snprintf(pcname, sizeof(pcname), "c%d", i);
        cJSON_AddItemToArray(rcs, pc);
        cJSON_AddStringToObject(pc, "name", pcname);
        if (chance(&g, 1, 3)) {
            /* Generated from a template: recorded in the pod's status, owned by the pod. */
            cJSON *st, *e, *refs, *ref;
            snprintf(name, sizeof(name), "pod-%s", pcname);
            cJSON_AddStringToObject(pc, "resourceClaimTemplateName", "template");
            c = gen_claim(&g, name, consumable, &all);
            refs = cJSON_AddArrayToObject(cJSON_GetObjectItem(c, "metadata"), "ownerReferences");
            ref = cJSON_CreateObject();
            cJSON_AddItemToArray(refs, ref);
            cJSON_AddStringToObject(ref, "apiVersion", "v1");
            cJSON_AddStringToObject(ref, "kind", "Pod");
            cJSON_AddStringToObject(ref, "name", "pod");
            cJSON_AddStringToObject(ref, "uid", chance(&g, 1, 60) ? "someone-else"
                                                                  : "4f3c9a1e-0000-4000-8000-000000000001");
            cJSON_AddTrueToObject(ref, "controller");
            st = cJSON_GetObjectItem(pod, "status") ? cJSON_GetObjectItem(pod, "status") : obj(pod, "status");
            if (!cJSON_GetObjectItem(st, "resourceClaimStatuses"))
                cJSON_AddArrayToObject(st, "resourceClaimStatuses");
            e = cJSON_CreateObject();
            cJSON_AddItemToArray(cJSON_GetObjectItem(st, "resourceClaimStatuses"), e);
            cJSON_AddStringToObject(e, "name", pcname);
            cJSON_AddStringToObject(e, "resourceClaimName", name);
        } else {
            snprintf(name, sizeof(name), "claim-%d", i);
            cJSON_AddStringToObject(pc, "resourceClaimName", name);
            c = gen_claim(&g, name, consumable, &all);
            if (chance(&g, 1, 10)) {
                /* Already allocated (for this pod): its devices stay where they are. */
                cJSON_Delete(c);
                c = gen_allocated(&g, name, &w);
                cJSON *ns = obj(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "status"), "allocation"),
                                "nodeSelector");
                cJSON *terms = cJSON_AddArrayToObject(ns, "nodeSelectorTerms");
                cJSON *t = cJSON_CreateObject(), *mf = cJSON_AddArrayToObject(t, "matchFields");
                cJSON *e = cJSON_CreateObject(), *v = cJSON_AddArrayToObject(e, "values");
                char node[24];
                cJSON_AddItemToArray(terms, t);
                cJSON_AddItemToArray(mf, e);
                cJSON_AddStringToObject(e, "key", "metadata.name");
                cJSON_AddStringToObject(e, "operator", "In");
                snprintf(node, sizeof(node), "node-%d", (int)pick(&g, (unsigned)w.nnodes));
                cJSON_AddItemToArray(v, cJSON_CreateString(node));
                allocated_extras(&g, c);
            }
        }
        cJSON_AddItemToArray(claims, c);
    }
    for (i = 0; i < (int)pick(&g, 4); i++) {
        snprintf(name, sizeof(name), "other-%d", i);
        cJSON_AddItemToArray(claims, gen_allocated(&g, name, &w));
    }
    if (chance(&g, 1, 10)) {
        cJSON *f = cJSON_AddArrayToObject(snap, "inFlight");
        cJSON_AddItemToArray(f, gen_allocated(&g, "in-flight", &w));
    }
    /* The pod's own node filters. */
    if (chance(&g, 1, 6))
        cJSON_AddStringToObject(obj(spec, "nodeSelector"), "zone", zones[pick(&g, 2)]);
    if (chance(&g, 1, 4)) {
        cJSON *t = cJSON_AddArrayToObject(spec, "tolerations"), *e = cJSON_CreateObject();
        cJSON_AddItemToArray(t, e);
        cJSON_AddStringToObject(e, "key", "nvidia.com/gpu");
        cJSON_AddStringToObject(e, "operator", "Exists");
    }
    cJSON_AddItemToObject(snap, "pod", pod);
    (void)all;
    return snap;
}

/* ---- both sides ---------------------------------------------------------------------- */


#ifdef ALLOC_DIFF_MAIN
/* -v: how often each verdict and reason came up, so that a run shows what it covered. */
static struct tally {
    char what[96];
    long n;
} tally[256];
static int verbose;

static void count(const char *what)
{
    size_t i;

    for (i = 0; i < sizeof(tally) / sizeof(tally[0]) && tally[i].n; i++)
        if (!strcmp(tally[i].what, what))
            break;
    if (i == sizeof(tally) / sizeof(tally[0]))
        return;
    if (!tally[i].n)
        snprintf(tally[i].what, sizeof(tally[i].what), "%s", what);
    tally[i].n++;
}

static void count_answer(const cJSON *a)
{
    const cJSON *n;
    char buf[96];

    cJSON_ArrayForEach(n, cJSON_GetObjectItem(a, "nodes")) {
        const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(n, "status"));
        const char *r = cJSON_GetStringValue(cJSON_GetObjectItem(n, "reason"));
        size_t k = 0, o;
        /* The reason without names: words that hold no '/', '-' or digit. */
        o = (size_t)snprintf(buf, sizeof(buf), "%s:", st ? st : "?");
        while (r && r[k] && o + 2 < sizeof(buf)) {
            size_t w = strcspn(r + k, " ,:");
            if (w && !memchr(r + k, '/', w) && !memchr(r + k, '-', w) && !memchr(r + k, '#', w) &&
                strcspn(r + k, "0123456789") >= w && !memchr(r + k, '"', w))
                o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %.*s", (int)w, r + k);
            k += w;
            k += strspn(r + k, " ,:");
        }
        count(buf);
    }
}
#endif

/* lib/model/alloc's answer for a snapshot (a copy of it is loaded). */
static cJSON *ours(const cJSON *snap)
{
    cJSON *copy = cJSON_Duplicate(snap, 1), *answer = NULL;
    struct dra_model m;
    struct alloc_options opt;
    struct alloc_inventory *inv = NULL;
    struct alloc_result r;
    struct cel_env env = *cel_default_env();
    const struct dra_podspec *pod;
    struct dd_err err;

    /* The selectors are compiled for the snapshot's gates, as the scheduler's cache is. */
    if (cJSON_GetObjectItem(cJSON_GetObjectItem(copy, "gates"), "DRAListTypeAttributes"))
        env.features = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(copy, "gates"),
                                                         "DRAListTypeAttributes"))
                           ? env.features | CEL_FEATURE_LIST_ATTRIBUTES
                           : env.features & ~(unsigned)CEL_FEATURE_LIST_ATTRIBUTES;
    if (cJSON_GetObjectItem(cJSON_GetObjectItem(copy, "gates"), "DRAConsumableCapacity"))
        env.features = cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(copy, "gates"),
                                                         "DRAConsumableCapacity"))
                           ? env.features | CEL_FEATURE_CONSUMABLE_CAPACITY
                           : env.features & ~(unsigned)CEL_FEATURE_CONSUMABLE_CAPACITY;
    {
        struct cel_env saved = *cel_default_env();
        cel_set_default_env(&env);
        dra_model_init(&m, NULL, NULL);
        if (asnap_load(copy, &m, &opt, &err) == DD_OK && dra_model_finish(&m) == DD_OK &&
            (opt.max_steps = MAX_STEPS) &&
            (pod = asnap_pod(&m)) && (inv = alloc_inventory_new(&m, &opt, &err)) &&
            alloc_pod(inv, pod, 1, &r, &err) == DD_OK) {
            const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(snap, "name"));
            size_t i;
            char text[2048];
            answer = asnap_answer(&r, name);
            /* Every unfit node has words. */
            for (i = 0; i < r.nnodes; i++) {
                if (r.nodes[i].verdict == ALLOC_FIT)
                    continue;
                if (alloc_why_text(&r, &r.nodes[i], text, sizeof(text)) == 0)
                    abort();
#ifdef ALLOC_DIFF_MAIN
                if (verbose) {
                    static const char *const kinds[] = {"none", "error", "unavailable", "devices",
                                                        "constraint", "together"};
                    char k[64];
                    snprintf(k, sizeof(k), "why: %s%s", kinds[r.nodes[i].why.kind],
                             r.nodes[i].why.kind ? "" : r.nodes[i].reason);
                    count(k);
                    if (verbose > 1)
                        fprintf(stderr, "WHY %s\n", text);
                }
#endif
            }
            alloc_result_release(&r);
        }
        alloc_inventory_free(inv);
        dra_model_release(&m);
        cel_set_default_env(&saved);
    }
    cJSON_Delete(copy);
    return answer;
}

static struct peer oracle = {"ALLOC_ORACLE", 0, NULL, NULL, NULL, 0};

/* Kubernetes' answer, or NULL without an oracle. */
static cJSON *theirs(const cJSON *snap)
{
    char *text;

    if (!peer_ready(&oracle))
        return NULL;
    text = cJSON_PrintUnformatted(snap);
    fputs(text, oracle.to);
    fputc('\n', oracle.to);
    free(text);
    return cJSON_Parse(peer_answer(&oracle));
}

/* What may differ: the stable variant walks pools in Go's map order (asnap_compare). */
static int compare_flags(const cJSON *snap)
{
    struct dra_model m;
    struct alloc_options opt;
    cJSON *copy = cJSON_Duplicate(snap, 1);
    int stable;

    dra_model_init(&m, NULL, NULL);
    (void)asnap_load(copy, &m, &opt, NULL);
    stable = !strcmp(alloc_gates_variant(&opt.gates), "stable");
    dra_model_release(&m);
    cJSON_Delete(copy);
    return ASNAP_TIMEOUTS | (stable ? ASNAP_UNORDERED : ASNAP_PICKS);
}


/*
 * Kubernetes' allocator is not always deterministic: where the search meets a CEL runtime
 * error depends on the order it visits pools and devices in, and that order can follow Go's
 * map iteration.  On a difference the oracle is asked again; an answer of its that equals
 * ours is agreement (counted apart), as the scheduler itself could have given it.
 */
static size_t unstable;

static int again(const cJSON *snap, const cJSON *a)
{
    char why[256];
    size_t skip = 0;
    int i, same = 0;

    for (i = 0; i < 8 && !same; i++) {
        cJSON *b = theirs(snap);
        same = b && !asnap_compare(a, b, compare_flags(snap), &skip, why, sizeof(why));
        cJSON_Delete(b);
    }
    unstable += same;
    return same;
}

/* 0 agreed (or no oracle), 1 differed (why printed). */
static int differ(const cJSON *snap, const cJSON *expect)
{
    cJSON *a = ours(snap), *b = expect ? NULL : theirs(snap);
#ifdef ALLOC_DIFF_MAIN
    if (verbose && a && !expect)
        count_answer(a);
#endif
    const cJSON *other = expect ? expect : b;
    char why[4096];
    int bad = 0;

    if (!a) {
        fprintf(stderr, "fuzz_alloc_diff: lib/model/alloc gave no answer\n");
        bad = 1;
    } else if (other && asnap_compare(a, other, expect ? 0 : compare_flags(snap), &skipped, why,
                                      sizeof(why)) &&
               !(b && again(snap, a))) {
        char *s = cJSON_PrintUnformatted(snap), *x = cJSON_PrintUnformatted(a);
        char *y = cJSON_PrintUnformatted(other);
        fprintf(stderr, "MISMATCH %s\n  snapshot: %s\n  lib/model/alloc: %s\n  %s: %s\n", why, s, x,
                expect ? "stated" : "Kubernetes", y);
        free(s);
        free(x);
        free(y);
        bad = 1;
    }
    cJSON_Delete(a);
    cJSON_Delete(b);
    return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *snap = generate(data, size);

    if (differ(snap, NULL))
        __builtin_trap();
    cJSON_Delete(snap);
    return 0;
}

#ifdef ALLOC_DIFF_MAIN
static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    *len = (size_t)n;
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    long count = 1000, agreed = 0, differed = 0, i;
    uint64_t seed = 1;
    const char *dir = NULL;
    int opt;

    while ((opt = getopt(argc, argv, "n:s:w:v")) != -1) {
        switch (opt) {
        case 'v': verbose++; break;
        case 'n': count = atol(optarg); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'w': dir = optarg; break;
        default:
            fprintf(stderr, "usage: alloc-diff [-v] [-n N] [-s SEED] [-w DIR] [CASE.json...]\n");
            return 2;
        }
    }
    /* Hand-written cases (.json): the stated answer, and Kubernetes' (when the oracle is
     * there); any other file is a fuzzer's input, replayed. */
    for (; optind < argc; optind++) {
        size_t len = 0;
        char *text = slurp(argv[optind], &len);
        cJSON *c, *expect;
        if (text && !strstr(argv[optind], ".json")) {
            c = generate((const uint8_t *)text, len);
            free(text);
            if (differ(c, NULL)) {
                fprintf(stderr, "  in %s\n", argv[optind]);
                differed++;
            } else {
                agreed++;
            }
            cJSON_Delete(c);
            continue;
        }
        c = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (!c) {
            fprintf(stderr, "alloc-diff: %s: not JSON\n", argv[optind]);
            differed++;
            continue;
        }
        expect = cJSON_DetachItemFromObject(c, "expect");
        if ((expect && differ(c, expect)) || differ(c, NULL)) {
            fprintf(stderr, "  in %s\n", argv[optind]);
            differed++;
        } else {
            agreed++;
        }
        cJSON_Delete(expect);
        cJSON_Delete(c);
    }
    for (i = 0; i < count; i++) {
        uint8_t buf[600];
        uint64_t s = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)i + 1;
        size_t k;
        cJSON *snap;
        for (k = 0; k < sizeof(buf); k++)
            buf[k] = (uint8_t)rng(&s);
        snap = generate(buf, sizeof(buf));
        if (differ(snap, NULL)) {
            differed++;
            if (dir) {
                char path[4096], *text = cJSON_Print(snap);
                FILE *f;
                snprintf(path, sizeof(path), "%s/seed-%llu-%ld.json", dir, (unsigned long long)seed, i);
                if ((f = fopen(path, "w"))) {
                    fputs(text, f);
                    fclose(f);
                }
                free(text);
            }
        } else {
            agreed++;
        }
        cJSON_Delete(snap);
    }
    for (i = 0; verbose && i < (long)(sizeof(tally) / sizeof(tally[0])) && tally[i].n; i++)
        printf("%8ld  %s\n", tally[i].n, tally[i].what);
    printf("alloc-diff: %ld agreed, %ld differed%s\n", agreed, differed,
           oracle.to ? "" : " (no oracle: stated answers only)");
    if (skipped)
        printf("alloc-diff: %zu node verdicts not compared (a search that long times out)\n",
               skipped);
    if (unstable)
        printf("alloc-diff: %zu of the agreements only on asking Kubernetes again (its answer "
               "changed from one run to the next)\n", unstable);
    return differed ? 1 : 0;
}
#endif
