/*
 * alloc.c - the scheduler's structured allocator (k8s.io/dynamic-resource-allocation
 * v0.37.2, structured/internal/{stable,incubating,experimental}) and the DynamicResources
 * plugin's PreFilter/Filter around it, over a struct dra_model.
 *
 * The search is upstream's: claims in the pod's order, requests in the claim's, for each
 * device of a request the candidates in pool order (pools by driver and name, those with
 * binding conditions last; slices by name; devices as published), each candidate checked
 * as allocateDevice checks it (in use, counters, taints, constraints, capacity), the first
 * complete solution wins; within one request only combinations are tried (a start
 * location), a subrequest list tries its alternatives in order, and more than 32 devices
 * for a claim backtracks as errAllocationResultMaxSizeExceeded does.  What upstream
 * decides at run time from maps (pool iteration in the stable variant) is decided here in
 * the incubating order: only the devices picked can differ, never the verdict.
 *
 * Layout: gates; quantities; the inventory (slices, devices, device IDs, allocated state);
 * the pod (claims, requests, PreFilter); one node (pools, the search); the explanation.
 */
#include "model/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cel/cel.h"
#include "formats/json.h"
#include "model/nodefit.h"

#define MAX_RESULTS 32 /* resourceapi.AllocationResultsMaxSize */
#define MAX_CLAIMS 64  /* a pod's claims: one bit each in the in-use masks */
#define NANO ((qty)1000000000)
#define MILLI_NANO ((qty)1000000)

typedef __int128 qty;

/* ---- gates ------------------------------------------------------------------------ */

static const char *const gate_names[] = {
    "DRAAdminAccess", "DRAConsumableCapacity", "DRADerivedAttributes",
    "DRADeviceBindingConditions", "DRADeviceCompatibilityGroups", "DRADeviceTaints",
    "DRAFractionalCapacityRange", "DRAListTypeAttributes", "DRAOptionalNodeOperations",
    "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
};

int alloc_gates_set(struct alloc_gates *g, const char *name, int on)
{
    size_t i;

    for (i = 0; i < sizeof(gate_names) / sizeof(gate_names[0]); i++)
        if (!strcmp(gate_names[i], name))
            break;
    on = !!on;
    switch (i) {
    case 0: g->admin_access = on; break;
    case 1: g->consumable_capacity = on; break;
    case 2: g->derived_attributes = on; break;
    case 3: g->binding_conditions = on; break;
    case 4: g->compatibility_groups = on; break;
    case 5: g->device_taints = on; break;
    case 6: g->fractional_capacity_range = on; break;
    case 7: g->list_type_attributes = on; break;
    case 8: g->optional_node_operations = on; break;
    case 9: g->partitionable_devices = on; break;
    case 10: g->prioritized_list = on; break;
    case 11: g->claim_device_status = on; break;
    default: return -1;
    }
    return 0;
}

void alloc_gates_default(struct alloc_gates *g)
{
    memset(g, 0, sizeof(*g));
    g->admin_access = 1;               /* GA 1.36 */
    g->consumable_capacity = 1;        /* beta 1.36 */
    g->binding_conditions = 1;         /* beta 1.36 */
    g->device_taints = 1;              /* GA 1.37 */
    g->fractional_capacity_range = 1;  /* beta 1.37 */
    g->partitionable_devices = 1;      /* beta 1.36 */
    g->prioritized_list = 1;           /* GA 1.36 */
    g->claim_device_status = 1;        /* GA 1.37 */
}

enum dd_rc alloc_gates_parse(struct alloc_gates *g, const char *text, struct dd_err *err)
{
    const char *p = text;

    while (p && *p) {
        const char *end = strchr(p, ','), *eq;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char name[128], val[16];

        eq = memchr(p, '=', len);
        if (!eq || (size_t)(eq - p) >= sizeof(name) || len - (size_t)(eq - p) - 1 >= sizeof(val))
            return dd_failf(err, DD_EINVAL, "feature gates: \"%.*s\" is not NAME=true|false",
                            (int)len, p);
        memcpy(name, p, (size_t)(eq - p));
        name[eq - p] = '\0';
        memcpy(val, eq + 1, len - (size_t)(eq - p) - 1);
        val[len - (size_t)(eq - p) - 1] = '\0';
        if (strcmp(val, "true") && strcmp(val, "false"))
            return dd_failf(err, DD_EINVAL, "feature gates: %s=%s: the value is true or false",
                            name, val);
        (void)alloc_gates_set(g, name, !strcmp(val, "true"));
        p = end ? end + 1 : NULL;
    }
    return DD_OK;
}

/* Upstream's Features, as AllocatorFeatures builds them from the gates. */
struct feat {
    unsigned admin, prio, part, taints, binding, consumable, fractional, lists, nodeops,
        derived, compat;
};

static struct feat features(const struct alloc_gates *g)
{
    struct feat f = {
        g->admin_access, g->prioritized_list, g->partitionable_devices, g->device_taints,
        g->binding_conditions && g->claim_device_status, g->consumable_capacity,
        g->fractional_capacity_range, g->list_type_attributes, g->optional_node_operations,
        g->derived_attributes, g->compatibility_groups,
    };
    return f;
}

enum variant { V_STABLE, V_INCUBATING, V_EXPERIMENTAL };

/* NewAllocator's choice: the most stable implementation that supports every feature. */
static enum variant variant_of(const struct feat *f)
{
    if (f->lists || f->nodeops || f->derived || f->compat)
        return V_EXPERIMENTAL;
    if (f->binding || f->consumable || f->fractional)
        return V_INCUBATING;
    return V_STABLE;
}

const char *alloc_gates_variant(const struct alloc_gates *g)
{
    static const char *const names[] = {"stable", "incubating", "experimental"};
    struct feat f = features(g);

    return names[variant_of(&f)];
}

void alloc_options_default(struct alloc_options *o)
{
    memset(o, 0, sizeof(*o));
    alloc_gates_default(&o->gates);
}

/* ---- small things ------------------------------------------------------------------- */

static size_t hash_str(size_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    /* FNV's low bits depend only on the keys' low bits, and the tables index by the low bits:
     * names that differ in a digit or two ("node-17"/"gpu-3") piled into long probe runs,
     * the inventory's build growing faster than the cluster.  The high bits folded in. */
    return h ^ (h >> 29) ^ (h >> 47);
}

#define HASH0 ((size_t)1469598103934665603ULL)

static char *xstrdup(const char *s)
{
    return strdup(s ? s : "");
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;

    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A JSON field that is present and not null (a Go pointer or slice that is non-nil). */
static const cJSON *jset(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static size_t jlen(const cJSON *a)
{
    return cJSON_IsArray(a) || cJSON_IsObject(a) ? (size_t)cJSON_GetArraySize(a) : 0;
}

/* ---- quantities: resource.Quantity as nano-units -------------------------------------- */

/* A Quantity in JSON: its string, or a bare number (Quantity.UnmarshalJSON takes both). */
static int q_parse(const cJSON *v, qty *out)
{
    char buf[64];
    const char *s;

    if (cJSON_IsString(v)) {
        s = v->valuestring;
    } else if (cJSON_IsNumber(v)) {
        if (v->valuestring)
            s = v->valuestring;
        else if (v->valuedouble == (double)(long long)v->valuedouble)
            snprintf(buf, sizeof(buf), "%lld", (long long)v->valuedouble), s = buf;
        else
            snprintf(buf, sizeof(buf), "%.17g", v->valuedouble), s = buf;
    } else {
        return -1;
    }
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    {
        size_t n = strlen(s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n'))
            n--;
        return cel_quantity_parse(s, n, out);
    }
}

/* Rounds q up (away from zero) to a multiple of unit, divided: Quantity.Value/MilliValue. */
static qty q_ceil_div(qty q, qty unit)
{
    if (q >= 0)
        return (q + unit - 1) / unit;
    return -((-q + unit - 1) / unit);
}

/* ---- the inventory ------------------------------------------------------------------ */

struct a_policy {
    int set;                 /* requestPolicy present */
    int has_default;
    qty dflt;
    int has_range, has_min, has_max, has_step;
    qty min, max, step;
    int values_set;          /* validValues non-nil */
    size_t nvalues;
    qty *values;
};

struct a_cap {
    const char *name;        /* the QualifiedName as published */
    qty value;
    struct a_policy pol;
};

struct a_consume {
    const char *set;
    size_t n;
    const char **names;
    qty *vals;
    size_t ngroups;
    const char **groups;     /* compatibilityGroups */
};

struct a_counter_set {
    const char *name;
    size_t n;
    const char **names;
    qty *vals;
};

struct a_slice;

/* An inventory holds one per published device (40,000 in a big cluster): no padding. */
struct a_dev {
    struct a_slice *slice;
    const char *name;
    const struct dra_device *md;  /* the model's: CEL's view */
    const cJSON *body;            /* the v1 device, or v1beta1's `basic` */
    size_t id;                    /* index into the inventory's device IDs */
    const char *node_name;        /* per-device node selection */
    const cJSON *node_selector;
    const cJSON *taints;
    struct a_consume *cons;
    struct a_cap *caps;
    unsigned ncons, ncaps;
    unsigned allow_multi : 1, binding_set : 1, binding_len : 1, binds_to_node : 1, valid : 1,
        all_nodes : 1;
};

struct a_slice {
    const struct dra_slice *ms;
    const char *name, *driver, *pool, *node_name;
    int64_t generation, count;
    int all_nodes;
    const cJSON *node_selector;
    int per_device_set, per_device;
    size_t counters_len;          /* len(sharedCounters) */
    struct a_counter_set *sets;
    size_t nsets;
    int compat_groups;            /* a device declares compatibility groups */
    int dup_names;                /* a device name twice in the slice itself */
    int consumes;                 /* a device consumes counters */
    int skip_node_ops;            /* len(skipNodeOperations) > 0 */
    struct a_dev *devs;
    size_t ndev;
    size_t pool_id;               /* index into the inventory's pool IDs */
    size_t index;                 /* position in the inventory (the model's order) */
};

/* What allocated claims hold of one device ID. */
struct a_held {
    unsigned dedicated : 1;       /* AllocatedDevices */
    unsigned shared : 1;          /* some AllocatedSharedDeviceIDs entry */
    unsigned has_capacity : 1;    /* an AggregatedCapacity entry */
    unsigned ncap;
    const char **cap_names;
    qty *cap_vals;
    const char *holder_ns;        /* the first claim holding it: its namespace and name, */
    const char *holder;           /* borrowed (NULL: none); "ns/name" made for a funnel only */
};

struct a_id {
    const char *driver, *pool, *device;
    size_t hash;
    struct a_held held;
};

struct a_poolid {
    const char *driver, *pool;
    size_t *slices;               /* every slice of the pool, model order */
    size_t nslices, cap;
};

struct a_nodeslices {
    const char *node;
    size_t *slices;
    size_t n, cap;
};

struct alloc_inventory {
    const struct dra_model *m;
    struct alloc_options opt;
    struct feat f;
    enum variant var;
    struct a_slice *slices;
    size_t nslices;
    struct a_id *ids;
    size_t nids;
    size_t *id_idx;               /* open addressing: 1 + id, 0 empty */
    size_t id_cap;
    struct a_poolid *pools;
    size_t npools;
    size_t *pool_idx;
    size_t pool_cap;
    struct a_nodeslices *bynode;  /* node-local slices */
    size_t nbynode;
    size_t *node_idx;
    size_t node_cap;
    size_t *shared;               /* slices without nodeName, model order */
    size_t nshared, shared_cap;
    const cJSON *in_flight;
    const struct dra_obj **nodes; /* the model's Nodes (or opt.nodes) by name: the order nodes
                                     are judged in */
    size_t nnodes;
};

static size_t id_hash(const char *d, const char *p, const char *n)
{
    return hash_str(hash_str(hash_str(HASH0, d), p), n);
}

static size_t find_id(const struct alloc_inventory *inv, const char *d, const char *p,
                      const char *n)
{
    size_t h = id_hash(d, p, n), mask = inv->id_cap - 1, i;

    if (!inv->id_cap)
        return (size_t)-1;
    for (i = h & mask; inv->id_idx[i]; i = (i + 1) & mask) {
        const struct a_id *e = &inv->ids[inv->id_idx[i] - 1];
        if (e->hash == h && !strcmp(e->driver, d) && !strcmp(e->pool, p) && !strcmp(e->device, n))
            return inv->id_idx[i] - 1;
    }
    return (size_t)-1;
}

static const struct a_nodeslices *find_node(const struct alloc_inventory *inv, const char *node)
{
    size_t mask = inv->node_cap - 1, i;

    if (!inv->node_cap)
        return NULL;
    for (i = hash_str(HASH0, node) & mask; inv->node_idx[i]; i = (i + 1) & mask)
        if (!strcmp(inv->bynode[inv->node_idx[i] - 1].node, node))
            return &inv->bynode[inv->node_idx[i] - 1];
    return NULL;
}

static size_t pow2_above(size_t n)
{
    size_t c = 16;

    while (c < 2 * n + 2)
        c *= 2;
    return c;
}

static int push_idx(size_t **v, size_t *n, size_t *cap, size_t x)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        size_t *p = realloc(*v, nc * sizeof(*p));
        if (!p)
            return -1;
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int parse_policy(const cJSON *p, struct a_policy *pol)
{
    const cJSON *r, *vv, *it;

    memset(pol, 0, sizeof(*pol));
    if (!p || cJSON_IsNull(p))
        return 0;
    pol->set = 1;
    if (jset(p, "default"))
        pol->has_default = !q_parse(jset(p, "default"), &pol->dflt);
    if ((r = jset(p, "validRange"))) {
        pol->has_range = 1;
        pol->has_min = jset(r, "min") && !q_parse(jset(r, "min"), &pol->min);
        pol->has_max = jset(r, "max") && !q_parse(jset(r, "max"), &pol->max);
        pol->has_step = jset(r, "step") && !q_parse(jset(r, "step"), &pol->step);
    }
    if ((vv = jset(p, "validValues")) && cJSON_IsArray(vv)) {
        pol->values_set = 1;
        if (!(pol->values = calloc(jlen(vv) + 1, sizeof(qty))))
            return -1;
        cJSON_ArrayForEach(it, vv)
            if (!q_parse(it, &pol->values[pol->nvalues]))
                pol->nvalues++;
    }
    return 0;
}

/* The counters of a map {name: {value}} into parallel arrays. */
static int parse_counters(const cJSON *map, size_t *n, const char ***names, qty **vals)
{
    const cJSON *it;
    size_t k = 0, cnt = jlen(map);

    *n = 0;
    *names = calloc(cnt + 1, sizeof(**names));
    *vals = calloc(cnt + 1, sizeof(**vals));
    if (!*names || !*vals)
        return -1;
    cJSON_ArrayForEach(it, map) {
        qty v = 0;
        if (!it->string)
            continue;
        (void)q_parse(jset(it, "value"), &v);
        (*names)[k] = it->string;
        (*vals)[k++] = v;
    }
    *n = k;
    return 0;
}

static int build_device(struct a_slice *s, struct a_dev *d, const struct dra_device *md)
{
    const cJSON *basic = cJSON_GetObjectItemCaseSensitive(md->json, "basic");
    const cJSON *b = basic ? basic : md->json, *it, *bc;
    size_t k;

    d->slice = s;
    d->md = md;
    d->body = b;
    d->name = md->name;
    d->allow_multi = cJSON_IsTrue(jset(b, "allowMultipleAllocations"));
    bc = jset(b, "bindingConditions");
    d->binding_set = bc != NULL;
    d->binding_len = jlen(bc) > 0;
    d->binds_to_node = cJSON_IsTrue(jset(b, "bindsToNode"));
    d->node_name = jstr(b, "nodeName");
    d->all_nodes = cJSON_IsTrue(jset(b, "allNodes"));
    d->node_selector = jset(b, "nodeSelector");
    d->taints = jset(b, "taints");
    if ((k = jlen(jset(b, "consumesCounters")))) {
        if (!(d->cons = calloc(k, sizeof(*d->cons))))
            return -1;
        cJSON_ArrayForEach(it, jset(b, "consumesCounters")) {
            struct a_consume *c = &d->cons[d->ncons++];
            const cJSON *g = jset(it, "compatibilityGroups"), *e;
            c->set = jstr(it, "counterSet");
            if (!c->set)
                c->set = "";
            if (parse_counters(jset(it, "counters"), &c->n, &c->names, &c->vals))
                return -1;
            if (jlen(g)) {
                if (!(c->groups = calloc(jlen(g), sizeof(*c->groups))))
                    return -1;
                cJSON_ArrayForEach(e, g)
                    if (cJSON_IsString(e))
                        c->groups[c->ngroups++] = e->valuestring;
                if (c->ngroups)
                    s->compat_groups = 1;
            }
        }
    }
    if ((k = jlen(jset(b, "capacity")))) {
        if (!(d->caps = calloc(k, sizeof(*d->caps))))
            return -1;
        cJSON_ArrayForEach(it, jset(b, "capacity")) {
            struct a_cap *c = &d->caps[d->ncaps];
            if (!it->string)
                continue;
            c->name = it->string;
            /* v1alpha3's capacity is a bare quantity. */
            if (q_parse(cJSON_IsObject(it) ? jset(it, "value") : it, &c->value))
                c->value = 0;
            if (parse_policy(cJSON_IsObject(it) ? jset(it, "requestPolicy") : NULL, &c->pol))
                return -1;
            d->ncaps++;
        }
    }
    return 0;
}

static int add_id(struct alloc_inventory *inv, struct a_dev *d)
{
    const struct a_slice *s = d->slice;
    size_t h = id_hash(s->driver, s->pool, d->name), mask = inv->id_cap - 1, i;

    for (i = h & mask; inv->id_idx[i]; i = (i + 1) & mask) {
        const struct a_id *e = &inv->ids[inv->id_idx[i] - 1];
        if (e->hash == h && !strcmp(e->driver, s->driver) && !strcmp(e->pool, s->pool) &&
            !strcmp(e->device, d->name)) {
            d->id = inv->id_idx[i] - 1;
            return 0;
        }
    }
    d->id = inv->nids++;
    inv->ids[d->id].driver = s->driver;
    inv->ids[d->id].pool = s->pool;
    inv->ids[d->id].device = d->name;
    inv->ids[d->id].hash = h;
    inv->id_idx[i] = d->id + 1;
    return 0;
}

static int add_pool_slice(struct alloc_inventory *inv, struct a_slice *s)
{
    size_t h = hash_str(hash_str(HASH0, s->driver), s->pool), mask = inv->pool_cap - 1, i;
    struct a_poolid *p;

    for (i = h & mask; inv->pool_idx[i]; i = (i + 1) & mask) {
        p = &inv->pools[inv->pool_idx[i] - 1];
        if (!strcmp(p->driver, s->driver) && !strcmp(p->pool, s->pool)) {
            s->pool_id = inv->pool_idx[i] - 1;
            return push_idx(&p->slices, &p->nslices, &p->cap, s->index);
        }
    }
    s->pool_id = inv->npools++;
    p = &inv->pools[s->pool_id];
    p->driver = s->driver;
    p->pool = s->pool;
    inv->pool_idx[i] = s->pool_id + 1;
    return push_idx(&p->slices, &p->nslices, &p->cap, s->index);
}

static int add_node_slice(struct alloc_inventory *inv, struct a_slice *s)
{
    size_t mask = inv->node_cap - 1, i;
    struct a_nodeslices *e;

    for (i = hash_str(HASH0, s->node_name) & mask; inv->node_idx[i]; i = (i + 1) & mask) {
        e = &inv->bynode[inv->node_idx[i] - 1];
        if (!strcmp(e->node, s->node_name))
            return push_idx(&e->slices, &e->n, &e->cap, s->index);
    }
    e = &inv->bynode[inv->nbynode++];
    e->node = s->node_name;
    inv->node_idx[i] = inv->nbynode;
    return push_idx(&e->slices, &e->n, &e->cap, s->index);
}

/* One allocation result of an allocated (or in-flight) claim, as foreachAllocatedDevice
 * records it: admin access holds nothing; a share counts as shared only with
 * DRAConsumableCapacity (else the device is taken whole). */
static int hold(struct alloc_inventory *inv, const cJSON *res, const char *ns, const char *name)
{
    const char *d = jstr(res, "driver"), *p = jstr(res, "pool"), *n = jstr(res, "device");
    size_t id;
    struct a_held *h;
    const cJSON *cc, *it;

    if (!d || !p || !n || cJSON_IsTrue(jset(res, "adminAccess")))
        return 0;
    if ((id = find_id(inv, d, p, n)) == (size_t)-1)
        return 0; /* no such device: it changes nothing here */
    h = &inv->ids[id].held;
    if (!h->holder) {
        h->holder_ns = ns;
        h->holder = name;
    }
    if (!jset(res, "shareID") || !inv->f.consumable) {
        h->dedicated = 1;
        return 0;
    }
    h->shared = 1;
    if (!(cc = jset(res, "consumedCapacity")))
        return 0;
    h->has_capacity = 1;
    cJSON_ArrayForEach(it, cc) {
        qty v;
        size_t k;
        if (!it->string || q_parse(it, &v))
            continue;
        for (k = 0; k < h->ncap && strcmp(h->cap_names[k], it->string); k++)
            ;
        if (k == h->ncap) {
            const char **nn = realloc(h->cap_names, (k + 1) * sizeof(*nn));
            qty *nv;
            if (!nn)
                return -1;
            h->cap_names = nn;
            if (!(nv = realloc(h->cap_vals, (k + 1) * sizeof(*nv))))
                return -1;
            h->cap_vals = nv;
            h->cap_names[k] = it->string;
            h->cap_vals[k] = 0;
            h->ncap++;
        }
        h->cap_vals[k] += v;
    }
    return 0;
}

/* The devices of allocation results (status.allocation.devices.results) held by claim
 * ns/name. */
static int hold_results(struct alloc_inventory *inv, const cJSON *results, const char *ns,
                        const char *name)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, results)
        if (hold(inv, it, ns, name))
            return -1;
    return 0;
}

static int hold_claim(struct alloc_inventory *inv, const cJSON *claim)
{
    const char *ns = dd_json_str(claim, "metadata", "namespace", NULL);
    const char *name = dd_json_str(claim, "metadata", "name", NULL);

    return hold_results(inv, dd_json_arr(claim, "status", "allocation", "devices", "results",
                                         NULL), ns ? ns : "", name ? name : "");
}

static int node_ptr_cmp(const void *a, const void *b)
{
    const struct dra_obj *const *x = a, *const *y = b;

    return strcmp((*x)->name, (*y)->name);
}

struct alloc_inventory *alloc_inventory_new(const struct dra_model *m,
                                            const struct alloc_options *opt,
                                            struct dd_err *err)
{
    struct alloc_inventory *inv = calloc(1, sizeof(*inv));
    size_t i, j, ndev = 0;
    const cJSON *it;

    if (!inv)
        goto oom;
    inv->m = m;
    if (opt)
        inv->opt = *opt;
    else
        alloc_options_default(&inv->opt);
    if (!inv->opt.max_steps)
        inv->opt.max_steps = ALLOC_MAX_STEPS;
    inv->f = features(&inv->opt.gates);
    inv->var = variant_of(&inv->f);
    inv->in_flight = inv->opt.in_flight;
    for (i = 0; i < m->nslices; i++)
        ndev += m->slices[i].ndev;
    inv->nslices = m->nslices;
    inv->id_cap = pow2_above(ndev);
    inv->pool_cap = inv->node_cap = pow2_above(m->nslices);
    if (!(inv->slices = calloc(m->nslices + 1, sizeof(*inv->slices))) ||
        !(inv->ids = calloc(ndev + 1, sizeof(*inv->ids))) ||
        !(inv->id_idx = calloc(inv->id_cap, sizeof(size_t))) ||
        !(inv->pools = calloc(m->nslices + 1, sizeof(*inv->pools))) ||
        !(inv->pool_idx = calloc(inv->pool_cap, sizeof(size_t))) ||
        !(inv->bynode = calloc(m->nslices + 1, sizeof(*inv->bynode))) ||
        !(inv->node_idx = calloc(inv->node_cap, sizeof(size_t))) ||
        !(inv->nodes = calloc((inv->opt.nodes ? inv->opt.nnodes : m->nodes.n) + 1,
                              sizeof(*inv->nodes))))
        goto oom;
    inv->nnodes = inv->opt.nodes ? inv->opt.nnodes : m->nodes.n;
    for (i = 0; i < inv->nnodes; i++)
        inv->nodes[i] = inv->opt.nodes ? &inv->opt.nodes[i] : &m->nodes.v[i];
    qsort(inv->nodes, inv->nnodes, sizeof(*inv->nodes), node_ptr_cmp);
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *ms = &m->slices[i];
        struct a_slice *s = &inv->slices[i];
        const cJSON *spec = dd_json_path(ms->o.json, "spec", NULL), *e;

        s->ms = ms;
        s->index = i;
        s->name = ms->o.name;
        s->driver = ms->driver;
        s->pool = ms->pool;
        s->node_name = ms->node;
        s->generation = ms->generation;
        s->count = ms->slice_count;
        s->all_nodes = ms->all_nodes;
        s->node_selector = jset(spec, "nodeSelector");
        s->per_device_set = jset(spec, "perDeviceNodeSelection") != NULL;
        s->per_device = ms->per_device_nodes;
        s->skip_node_ops = jlen(jset(spec, "skipNodeOperations")) > 0;
        s->counters_len = jlen(jset(spec, "sharedCounters"));
        if (s->counters_len) {
            if (!(s->sets = calloc(s->counters_len, sizeof(*s->sets))))
                goto oom;
            cJSON_ArrayForEach(e, jset(spec, "sharedCounters")) {
                struct a_counter_set *cs = &s->sets[s->nsets++];
                cs->name = jstr(e, "name");
                if (!cs->name)
                    cs->name = "";
                if (parse_counters(jset(e, "counters"), &cs->n, &cs->names, &cs->vals))
                    goto oom;
            }
        }
        if (ms->ndev && !(s->devs = calloc(ms->ndev, sizeof(*s->devs))))
            goto oom;
        for (j = 0; j < ms->ndev; j++) {
            if (build_device(s, &s->devs[j], &ms->dev[j]))
                goto oom;
            s->ndev++;
            add_id(inv, &s->devs[j]);
            s->consumes |= s->devs[j].ncons > 0;
        }
        /* One ID per name in the slice: a name twice maps to the same ID. */
        for (j = 1; j < s->ndev && !s->dup_names; j++)
            for (size_t k = 0; k < j && !s->dup_names; k++)
                s->dup_names = s->devs[k].id == s->devs[j].id;
        if (add_pool_slice(inv, s))
            goto oom;
        if (*s->node_name) {
            if (add_node_slice(inv, s))
                goto oom;
        } else if (push_idx(&inv->shared, &inv->nshared, &inv->shared_cap, i)) {
            goto oom;
        }
    }
    for (i = 0; i < m->nclaims; i++)
        if (!m->claims[i].is_template && m->claims[i].allocated &&
            hold_results(inv, m->claims[i].alloc_results, m->claims[i].o.ns,
                         m->claims[i].o.name))
            goto oom;
    cJSON_ArrayForEach(it, inv->in_flight)
        if (hold_claim(inv, it))
            goto oom;
    return inv;
oom:
    alloc_inventory_free(inv);
    dd_failf(err, DD_ENOMEM, "out of memory while indexing the devices");
    return NULL;
}

void alloc_inventory_free(struct alloc_inventory *inv)
{
    size_t i, j, k;

    if (!inv)
        return;
    for (i = 0; i < inv->nslices; i++) {
        struct a_slice *s = &inv->slices[i];
        for (j = 0; j < s->nsets; j++) {
            free(s->sets[j].names);
            free(s->sets[j].vals);
        }
        free(s->sets);
        for (j = 0; j < s->ndev; j++) {
            struct a_dev *d = &s->devs[j];
            for (k = 0; k < d->ncons; k++) {
                free(d->cons[k].names);
                free(d->cons[k].vals);
                free(d->cons[k].groups);
            }
            free(d->cons);
            for (k = 0; k < d->ncaps; k++)
                free(d->caps[k].pol.values);
            free(d->caps);
        }
        free(s->devs);
    }
    for (i = 0; i < inv->nids; i++) {
        free(inv->ids[i].held.cap_names);
        free(inv->ids[i].held.cap_vals);
    }
    for (i = 0; i < inv->npools; i++)
        free(inv->pools[i].slices);
    for (i = 0; i < inv->nbynode; i++)
        free(inv->bynode[i].slices);
    free(inv->slices);
    free(inv->ids);
    free(inv->id_idx);
    free(inv->pools);
    free(inv->pool_idx);
    free(inv->bynode);
    free(inv->node_idx);
    free(inv->shared);
    free(inv->nodes);
    free(inv);
}

/* ---- the pod: its claims and requests (PreFilter) ------------------------------------- */

struct a_rd {                     /* a request or subrequest: upstream's requestData */
    const char *name;
    const char *parent;           /* the request of a subrequest, else NULL */
    char *full;                   /* "parent/name" or name; owned */
    const cJSON *src;             /* `exactly`, the subrequest, or a v1beta1 request */
    const struct dra_request *mr; /* the model's: the compiled selectors */
    const char *class_name;
    const struct dra_class *cls;
    const char *mode;             /* allocationMode; NULL or "" is ExactCount */
    int all;
    int64_t count;
    int admin_set, admin;         /* adminAccess non-nil, and its value */
    const cJSON *tolerations;
    int capacity_set;             /* capacity non-nil */
    int capreq_set;               /* capacity.requests non-nil */
    size_t ncapreq;
    const char **capreq_names;
    qty *capreq_vals;
    int derived;                  /* derivedAttributes non-empty */
    int sel_no_cel;               /* a selector without cel: index + 1 */
    unsigned char *memo;          /* per device ID: 0 unknown, 1 no, 2 yes, 3 CEL error */
    size_t claim, req, sub;
    size_t ix;                    /* position in a_pod.rds */
};

struct a_req {
    const char *name;
    const cJSON *json;
    struct a_rd *rd;              /* one, or one per firstAvailable entry */
    size_t nrd;
    int has_sub;
    int unknown;                  /* neither exactly nor firstAvailable */
};

enum { C_UNKNOWN, C_MATCH, C_DISTINCT };

struct a_constraint {
    int kind;
    const char *attr;             /* the fully qualified attribute */
    const cJSON **memo;           /* per device ID: its attribute (&absent: none), once looked up */
    const cJSON *reqs;            /* requests: [names]; empty: all */
    char *text;                   /* "matchAttribute: <attr>"; owned */
};

struct a_claim {
    const struct dra_claim *mc;
    char *key;                    /* ns/name; owned */
    const cJSON *devices;         /* spec.devices */
    int allocated;
    int unavailable_seen;         /* allocated, and unavailable on a node whose filter got past
                                     the allocator (PostFilter's candidates) */
    const cJSON *alloc_selector;  /* status.allocation.nodeSelector */
    struct a_req *reqs;
    size_t nreqs;
    struct a_constraint *cons;
    size_t ncons;
};

/* Counters left in a pool from what allocated devices consume, computed once per pod and pool
 * ID (the allocator's availableCounters). */
struct a_capent {
    int present;
    qty *v;                       /* per capacity of the device */
};

/* A selector the model could not compile as a new object, compiled as kube-scheduler
 * compiles what is stored. */
struct stored {
    struct stored *next;
    const char *expr;
    struct cel_program *prog;
    struct dd_err err;
};

/*
 * A pod's tables indexed by device or pool ID span the whole inventory, but a pod touches
 * the entries of the nodes it is judged on (one, when it fits on the first).  Large ones
 * are fresh anonymous mappings, whose pages the kernel zeroes when first touched, so that
 * they cost what the pod uses: calloc would hand back recycled heap and zero all of it,
 * once per pod, the size of the cluster each time.
 */
#define ZMAP_MIN ((size_t)64 << 10)

static void *zalloc(size_t n, size_t size)
{
    void *p;

    if (size && n > (size_t)-1 / size)
        return NULL;
    if (n * size < ZMAP_MIN)
        return calloc(n, size);
    p = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void zfree(void *p, size_t n, size_t size)
{
    if (!p)
        return;
    if (n * size < ZMAP_MIN)
        free(p);
    else
        munmap(p, n * size);
}

/* A growing array of pointers in the arena. */
struct pvec {
    void **v;
    size_t n, cap;
};

struct gp {                       /* the slices GatherPools collects for one pool ID */
    unsigned epoch;
    int64_t gen;
    struct pvec v;
    struct a_pool *pool;          /* the node's pool built from them */
};

/* A growing list of IDs. */
struct idvec {
    size_t *v;
    size_t n, cap;
};

static int idvec_push(struct idvec *x, size_t id)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16, *v = realloc(x->v, cap * sizeof(*v));
        if (!v)
            return -1;
        x->v = v;
        x->cap = cap;
    }
    x->v[x->n++] = id;
    return 0;
}

struct a_avail {
    int done, listed;
    size_t n;
    const char **set, **name;
    qty *val;
};

/* Compatibility groups of allocated devices per counter set (compatibilityGroupsBaseline). */
struct a_groups {
    int members, all_empty;
    size_t n;
    const char **g;
};

struct a_baseline {
    int done, listed;
    size_t n;
    const char **set;
    struct a_groups *gr;
};

struct a_pod {
    const struct alloc_inventory *inv;
    const struct dra_model *cm;   /* where its claims are found (alloc_pod_in) */
    const struct dra_podspec *ps;
    struct a_claim *claims;
    size_t nclaims;
    size_t *todo;                 /* claims to allocate, spec order */
    size_t ntodo;
    struct a_rd **rds;            /* every requestData, for freeing */
    size_t nrds;
    struct a_avail *avail;        /* per pool ID */
    struct a_baseline *base;      /* per pool ID */
    struct gp *gp;                /* per pool ID: GatherPools' collection */
    int **cidx;                   /* per device ID: counter_index */
    /* The device IDs cidx holds an entry for, the pool IDs avail and base do: freeing a
     * pod costs what it used, not the size of the inventory. */
    struct idvec cidx_ids, avail_ids, base_ids;
    unsigned epoch;
    uint64_t *inuse;              /* per device ID: the claims (bits) allocating it */
    struct a_capent *capent;      /* per device ID: allocatingCapacity */
    struct stored *stored;        /* selectors compiled as stored expressions */
    void *tables;                 /* one zalloc holding gp, avail, base, inuse, capent, cidx */
    size_t tables_size;
};

static const char *claim_api(const struct dra_claim *c)
{
    return c->o.api_version;
}

static int flat_requests(const struct dra_claim *c)
{
    const char *v = claim_api(c);
    return strstr(v, "v1beta1") || strstr(v, "v1alpha");
}

static const cJSON *claim_devices(const struct dra_claim *c)
{
    return c->is_template ? dd_json_path(c->o.json, "spec", "spec", "devices", NULL)
                          : dd_json_path(c->o.json, "spec", "devices", NULL);
}

static int fill_rd(const struct dra_model *m, struct a_rd *rd, const cJSON *src,
                   const struct dra_request *mr)
{
    const cJSON *cap, *req, *it, *sel;
    int64_t count;
    size_t i = 0;

    rd->src = src;
    rd->mr = mr;
    rd->class_name = jstr(src, "deviceClassName");
    rd->cls = rd->class_name ? dra_find_class(m, rd->class_name) : NULL;
    rd->mode = jstr(src, "allocationMode");
    if (!rd->mode || !*rd->mode)
        rd->mode = "ExactCount";
    rd->all = !strcmp(rd->mode, "All");
    /* The API server's defaulting: an ExactCount request without count asks for one. */
    if (!dd_json_int(src, &count, "count", NULL))
        count = 0;
    rd->count = !strcmp(rd->mode, "ExactCount") && count == 0 ? 1 : count;
    rd->tolerations = jset(src, "tolerations");
    /* A subrequest has no adminAccess (deviceSubRequestAccessor says false). */
    if (!rd->parent) {
        rd->admin_set = jset(src, "adminAccess") != NULL;
        rd->admin = cJSON_IsTrue(jset(src, "adminAccess"));
    }
    rd->derived = jlen(jset(src, "derivedAttributes")) > 0;
    cJSON_ArrayForEach(sel, jset(src, "selectors")) {
        i++;
        if (!jset(sel, "cel") && !rd->sel_no_cel)
            rd->sel_no_cel = (int)i;
    }
    if ((cap = jset(src, "capacity"))) {
        rd->capacity_set = 1;
        if ((req = jset(cap, "requests"))) {
            rd->capreq_set = 1;
            rd->capreq_names = calloc(jlen(req) + 1, sizeof(*rd->capreq_names));
            rd->capreq_vals = calloc(jlen(req) + 1, sizeof(*rd->capreq_vals));
            if (!rd->capreq_names || !rd->capreq_vals)
                return -1;
            cJSON_ArrayForEach(it, req) {
                qty v;
                if (!it->string || q_parse(it, &v))
                    continue;
                rd->capreq_names[rd->ncapreq] = it->string;
                rd->capreq_vals[rd->ncapreq++] = v;
            }
        }
    }
    return 0;
}

static int add_rd(struct a_pod *p, struct a_rd *rd)
{
    struct a_rd **v = realloc(p->rds, (p->nrds + 1) * sizeof(*v));

    if (!v)
        return -1;
    p->rds = v;
    rd->ix = p->nrds;
    p->rds[p->nrds++] = rd;
    return 0;
}

static int build_claim(struct a_pod *p, struct a_claim *c, const struct dra_claim *mc)
{
    const struct dra_model *m = p->inv->m;
    const cJSON *reqs, *it, *cons;
    size_t i = 0;

    c->mc = mc;
    c->key = xprintf("%s%s%s", mc->o.ns, *mc->o.ns ? "/" : "", mc->o.name);
    c->devices = claim_devices(mc);
    if (!c->key)
        return -1;
    if (!mc->is_template && jset(dd_json_path(mc->o.json, "status", NULL), "allocation")) {
        c->allocated = 1;
        c->alloc_selector = jset(dd_json_path(mc->o.json, "status", "allocation", NULL),
                                 "nodeSelector");
        return 0;
    }
    reqs = jset(c->devices, "requests");
    if (jlen(reqs) && !(c->reqs = calloc(jlen(reqs), sizeof(*c->reqs))))
        return -1;
    cJSON_ArrayForEach(it, reqs) {
        struct a_req *r = &c->reqs[c->nreqs];
        const struct dra_request *mr = i < mc->spec.nreq ? &mc->spec.req[i] : NULL;
        const cJSON *exactly = jset(it, "exactly"), *first = jset(it, "firstAvailable"), *sub;
        size_t k = 0;

        r->name = jstr(it, "name");
        if (!r->name)
            r->name = "";
        r->json = it;
        if (jlen(first)) {
            r->has_sub = 1;
            if (!(r->rd = calloc(jlen(first), sizeof(*r->rd))))
                return -1;
            cJSON_ArrayForEach(sub, first) {
                struct a_rd *rd = &r->rd[r->nrd++];
                rd->name = jstr(sub, "name");
                if (!rd->name)
                    rd->name = "";
                rd->parent = r->name;
                rd->full = xprintf("%s/%s", r->name, rd->name);
                rd->claim = (size_t)(c - p->claims);
                rd->req = c->nreqs;
                rd->sub = k;
                if (!rd->full || fill_rd(m, rd, sub, mr && k < mr->nsub ? &mr->sub[k] : NULL) ||
                    add_rd(p, rd))
                    return -1;
                k++;
            }
        } else if (exactly || flat_requests(mc)) {
            struct a_rd *rd;
            if (!(r->rd = rd = calloc(1, sizeof(*r->rd))))
                return -1;
            r->nrd = 1;
            rd->name = r->name;
            rd->full = xstrdup(r->name);
            rd->claim = (size_t)(c - p->claims);
            rd->req = c->nreqs;
            if (!rd->full || fill_rd(m, rd, exactly ? exactly : it, mr) || add_rd(p, rd))
                return -1;
        } else {
            r->unknown = 1;
        }
        c->nreqs++;
        i++;
    }
    cons = jset(c->devices, "constraints");
    if (jlen(cons) && !(c->cons = calloc(jlen(cons), sizeof(*c->cons))))
        return -1;
    cJSON_ArrayForEach(it, cons) {
        struct a_constraint *k = &c->cons[c->ncons++];
        k->reqs = jset(it, "requests");
        if ((k->attr = jstr(it, "matchAttribute"))) {
            k->kind = C_MATCH;
            k->text = xprintf("matchAttribute: %s", k->attr);
        } else if ((k->attr = jstr(it, "distinctAttribute"))) {
            k->kind = C_DISTINCT;
            k->text = xprintf("distinctAttribute: %s", k->attr);
        } else {
            k->text = xstrdup("an empty constraint");
        }
        if (!k->text)
            return -1;
    }
    return 0;
}

/* The pod's tables by pool and device ID, in one mapping (one system call, not six). */
static int pod_tables(struct a_pod *p)
{
#define TABLE(field, n) \
    do { \
        off = (off + 15) & ~(size_t)15; \
        if (base) \
            p->field = (void *)(base + off); \
        off += ((n) + 1) * sizeof(*p->field); \
    } while (0)
    size_t np = p->inv->npools, nd = p->inv->nids, off;
    char *base = NULL;
    int pass;

    for (pass = 0; pass < 2; pass++) {
        off = 0;
        TABLE(gp, np);
        TABLE(avail, np);
        TABLE(base, np);
        TABLE(inuse, nd);
        TABLE(capent, nd);
        TABLE(cidx, nd);
        if (!pass && !(base = p->tables = zalloc(off, 1)))
            return -1;
        p->tables_size = off;
    }
    return 0;
#undef TABLE
}

static void pod_free(struct a_pod *p)
{
    size_t i, j, k;

    for (i = 0; i < p->nrds; i++) {
        free(p->rds[i]->full);
        free(p->rds[i]->capreq_names);
        free(p->rds[i]->capreq_vals);
        zfree(p->rds[i]->memo, p->inv->nids + 1, 1);
    }
    free(p->rds);
    for (i = 0; i < p->nclaims; i++) {
        struct a_claim *c = &p->claims[i];
        for (j = 0; j < c->nreqs; j++)
            free(c->reqs[j].rd);
        free(c->reqs);
        for (j = 0; j < c->ncons; j++) {
            free(c->cons[j].text);
            zfree(c->cons[j].memo, p->inv->nids + 1, sizeof(*c->cons[j].memo));
        }
        free(c->cons);
        free(c->key);
    }
    free(p->claims);
    free(p->todo);

    for (i = 0; i < p->cidx_ids.n; i++)
        free(p->cidx[p->cidx_ids.v[i]]);

    free(p->cidx_ids.v);

    while (p->stored) {
        struct stored *x = p->stored->next;
        cel_program_free(p->stored->prog);
        free(p->stored);
        p->stored = x;
    }
    for (k = 0; k < p->avail_ids.n; k++) {
        i = p->avail_ids.v[k];
        free(p->avail[i].set);
        free(p->avail[i].name);
        free(p->avail[i].val);
    }

    free(p->avail_ids.v);
    for (k = 0; k < p->base_ids.n; k++) {
        i = p->base_ids.v[k];
        for (j = 0; j < p->base[i].n; j++)
            free(p->base[i].gr[j].g);
        free(p->base[i].set);
        free(p->base[i].gr);
    }
    zfree(p->tables, p->tables_size, 1);
    free(p->base_ids.v);
}

/* metav1.IsControlledBy: the claim's controller reference is the pod (by UID). */
static int controlled_by(const cJSON *claim, const cJSON *pod)
{
    const char *uid = dd_json_str(pod, "metadata", "uid", NULL);
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(claim, "metadata", "ownerReferences", NULL))
        if (cJSON_IsTrue(jset(it, "controller")))
            return uid && jstr(it, "uid") && !strcmp(jstr(it, "uid"), uid);
    return 0;
}

static int in_flight(const struct alloc_inventory *inv, const char *ns, const char *name)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, inv->in_flight) {
        const char *n = dd_json_str(it, "metadata", "name", NULL);
        const char *s = dd_json_str(it, "metadata", "namespace", NULL);
        if (n && !strcmp(n, name) && !strcmp(s ? s : "", ns))
            return 1;
    }
    return 0;
}

unsigned alloc_claim_state(const struct alloc_inventory *inv, const struct dra_podspec *pod,
                           const struct dra_pod_claim *pc, const struct dra_claim *c)
{
    return (pc->tmpl && !c->is_template && !controlled_by(c->o.json, pod->o.json) ? 1u : 0u) |
           (!c->allocated && in_flight(inv, c->o.ns, c->o.name) ? 2u : 0u);
}

/*
 * The pod's claims, as the plugin's PreFilter finds and checks them.  Returns 0 with the
 * claims (and p->todo) set, 1 with *verdict and *reason for a pod no node can take now, -1 on
 * ENOMEM.
 */
static int prefilter(struct a_pod *p, enum alloc_verdict *verdict, char **reason)
{
    const struct dra_model *m = p->cm;
    const struct dra_podspec *ps = p->ps;
    const cJSON *rcs = dd_json_arr(ps->spec, "resourceClaims", NULL), *pc;
    const char *ns = ps->o.ns, *pod = ps->o.name;
    size_t i, j, k;

#define UNSCHED(...) do { *verdict = ALLOC_UNSCHEDULABLE; *reason = xprintf(__VA_ARGS__); \
                          return *reason ? 1 : -1; } while (0)
#define FAIL(...) do { *verdict = ALLOC_ERROR; *reason = xprintf(__VA_ARGS__); \
                       return *reason ? 1 : -1; } while (0)

    if (jlen(rcs) > MAX_CLAIMS)
        FAIL("pod %s/%s has %zu resource claims; dra-doctor allocates at most %d", ns, pod,
             jlen(rcs), MAX_CLAIMS);
    if (!(p->claims = calloc(jlen(rcs) + 1, sizeof(*p->claims))) ||
        !(p->todo = calloc(jlen(rcs) + 1, sizeof(*p->todo))))
        return -1;
    cJSON_ArrayForEach(pc, rcs) {
        const char *pcname = jstr(pc, "name"), *cname = jstr(pc, "resourceClaimName");
        const char *tname = jstr(pc, "resourceClaimTemplateName");
        const struct dra_claim *c = NULL;
        int owner = 0;

        if (cname) {
            c = dra_find_claim(m, ns, cname, 0);
        } else if (tname) {
            const cJSON *st;
            int found = 0;
            cJSON_ArrayForEach(st, dd_json_arr(ps->status, "resourceClaimStatuses", NULL)) {
                if (!pcname || !jstr(st, "name") || strcmp(jstr(st, "name"), pcname))
                    continue;
                found = 1;
                cname = jstr(st, "resourceClaimName");
                break;
            }
            if (found && !cname)
                continue; /* intentionally not created */
            if (!found) {
                if (!p->inv->opt.templates_as_claims)
                    UNSCHED("pod \"%s/%s\": waiting for the ResourceClaim of %s to be created "
                            "from template %s", ns, pod, pcname ? pcname : "", tname);
                if (!(c = dra_find_claim(m, ns, tname, 1)))
                    UNSCHED("resourceclaimtemplate.resource.k8s.io \"%s\" not found", tname);
            } else {
                c = dra_find_claim(m, ns, cname, 0);
                owner = 1;
            }
        } else {
            UNSCHED("pod \"%s/%s\", spec.resourceClaim \"%s\": unsupported API", ns, pod,
                    pcname ? pcname : "");
        }
        if (!c)
            UNSCHED("resourceclaim.resource.k8s.io \"%s\" not found", cname);
        if (!c->is_template && dd_json_path(c->o.json, "metadata", "deletionTimestamp", NULL))
            UNSCHED("resourceclaim \"%s\" is being deleted", c->o.name);
        if (owner && !controlled_by(c->o.json, ps->o.json))
            UNSCHED("ResourceClaim %s/%s was not created for Pod %s/%s (Pod is not owner)",
                    c->o.ns, c->o.name, ns, pod);
        if (build_claim(p, &p->claims[p->nclaims], c))
            return -1;
        p->nclaims++;
    }
    for (i = 0; i < p->nclaims; i++) {
        struct a_claim *c = &p->claims[i];
        if (c->allocated)
            continue;
        if (in_flight(p->inv, c->mc->o.ns, c->mc->o.name))
            UNSCHED("resource claim %s is in the process of being allocated", c->key);
        for (j = 0; j < c->nreqs; j++) {
            struct a_req *r = &c->reqs[j];
            if (r->unknown)
                UNSCHED("resource claim %s, request %s: unknown request type", c->key, r->name);
            if (r->has_sub && !p->inv->opt.gates.prioritized_list)
                UNSCHED("resource claim %s, request %s: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled", c->key, r->name);
            for (k = 0; k < r->nrd; k++) {
                const struct a_rd *rd = &r->rd[k];
                if (!rd->class_name || !*rd->class_name)
                    FAIL("request %s: unsupported request type", rd->full);
                if (!rd->cls)
                    UNSCHED("request %s: device class %s does not exist", rd->full,
                            rd->class_name);
            }
        }
        p->todo[p->ntodo++] = i;
    }
    return 0;
#undef UNSCHED
#undef FAIL
}

/* ---- one node: its pools (GatherPools) ------------------------------------------------- */

/* Scratch memory of one node's allocation, dropped as a whole. */
struct arena {
    struct chunk {
        struct chunk *next;
        size_t len, cap;
        _Alignas(16) char mem[];
    } *head;
};

static void *arena_alloc(struct arena *a, size_t n)
{
    struct chunk *c = a->head;

    n = (n + 15) & ~(size_t)15;
    if (!c || c->len + n > c->cap) {
        size_t cap = n > 16384 ? n : 16384;
        if (!(c = malloc(sizeof(*c) + cap)))
            return NULL;
        c->next = a->head;
        c->len = 0;
        c->cap = cap;
        a->head = c;
    }
    c->len += n;
    return memset(c->mem + c->len - n, 0, n);
}

/* Keeps the newest chunk for the next node. */
static void arena_reset(struct arena *a)
{
    struct chunk *c = a->head, *n;

    if (!c)
        return;
    for (n = c->next; n; ) {
        struct chunk *x = n->next;
        free(n);
        n = x;
    }
    c->next = NULL;
    c->len = 0;
}

static void arena_free(struct arena *a)
{
    arena_reset(a);
    free(a->head);
    a->head = NULL;
}

static int pvec_push(struct arena *a, struct pvec *p, void *x)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 8;
        void **nv = arena_alloc(a, nc * sizeof(*nv));
        if (!nv)
            return -1;
        if (p->n)
            memcpy(nv, p->v, p->n * sizeof(*nv));
        p->v = nv;
        p->cap = nc;
    }
    p->v[p->n++] = x;
    return 0;
}

struct a_running {                /* compatibility groups of the devices being allocated */
    const char *set;
    struct a_groups g;
};

struct a_pool {
    size_t pid;
    const char *driver, *name;
    int incomplete, invalid;
    char *why;                    /* why it is invalid (arena) */
    struct a_slice **tgt;         /* DeviceSlicesTargetingNode */
    size_t ntgt;
    struct a_slice **other;       /* DeviceSlicesNotTargetingNode */
    size_t nother;
    struct a_slice **seen;        /* an incomplete or invalid pool: the node's slices of it */
    size_t nseen;
    const struct a_counter_set **sets; /* CounterSets, unique by name */
    size_t nsets;
    int binding;                  /* a targeting device has binding conditions */
    qty *used;                    /* consumedCounters, by the pod's available counters' index */
    struct a_running *run;        /* consumedCompatibilityGroups */
    size_t nrun, caprun;
};

static int node_matches(const cJSON *node, const char *node_name, const char *name, int all,
                        const cJSON *sel)
{
    if (name && *name)
        return !strcmp(node_name, name);
    if (all)
        return 1;
    if (sel)
        return fit_node_selector_matches(sel, node);
    return 0;
}

static int slice_cmp(const void *a, const void *b)
{
    return strcmp((*(struct a_slice *const *)a)->name, (*(struct a_slice *const *)b)->name);
}

/* sortPoolsByID: by driver, then pool name (Go compares strings bytewise, as strcmp). */
static int pool_cmp(const void *a, const void *b)
{
    const struct a_pool *x = a, *y = b;
    int c = strcmp(x->driver, y->driver);

    return c ? c : strcmp(x->name, y->name);
}

struct aval {                     /* a scalar DeviceAttribute */
    int kind;
    const char *s;
    int64_t i;
};

struct a_cstate {                 /* a constraint during the search */
    struct a_constraint *k;
    size_t n;                     /* devices in the set */
    struct aval first;            /* matchAttribute: the first device's value */
    struct vset **stack;          /* DRAListTypeAttributes: the intersections, one per device */
    const cJSON **seen;           /* distinctAttribute: the attributes so far */
    size_t cap;
};

struct a_res {                    /* a device picked */
    struct a_dev *d;
    struct a_rd *rd;
    int admin, shared;
    qty *consumed;                /* a share's consumed capacity, per d->caps; NULL */
};

struct a_node {
    const struct alloc_inventory *inv;
    struct a_pod *pod;
    const cJSON *node;
    const char *name;
    struct arena ar;
    struct a_pool *pools;
    size_t npools;
    struct a_cstate **cst;        /* per claim to allocate */
    struct a_res **res;           /* per claim to allocate: at most MAX_RESULTS */
    size_t *nres;
    size_t **sel;                 /* per claim to allocate and request: the subrequest chosen */
    struct a_dev ***all;          /* per requestData: allocationMode All's devices */
    size_t *nall;
    int64_t *numdev;              /* per requestData */
    uint64_t steps, max_steps;    /* allocateOne calls so far, and the most allowed */
    char *error;                  /* a fatal error (heap); the verdict is ERROR */
    int on_node;                  /* the error only concerns this node (invalid pools) */
    /* the explanation's probes */
    const struct a_claim *only;   /* allocate only this claim */
    int no_constraints;           /* ignore the claims' constraints */
    size_t skip_constraint;       /* ignore this constraint of each claim (index + 1) */
};

static void fail(struct a_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct a_node *n, const char *fmt, ...)
{
    va_list ap;

    if (n->error)
        return;
    va_start(ap, fmt);
    if (vasprintf(&n->error, fmt, ap) < 0)
        n->error = NULL;
    va_end(ap);
    if (!n->error)
        n->error = xstrdup("out of memory");
}

static char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    char buf[512], *s;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if ((s = arena_alloc(a, strlen(buf) + 1)))
        strcpy(s, buf);
    return s;
}

/* A name set in the arena (device names of a pool, counter set names). */
static int name_seen(struct arena *a, const char ***tab, size_t *cap, size_t *n, const char *name)
{
    size_t i;

    if (*n * 2 >= *cap) {
        size_t nc = *cap ? *cap * 2 : 32;
        const char **nt = arena_alloc(a, nc * sizeof(*nt));
        if (!nt)
            return -1;
        for (i = 0; i < *cap; i++)
            if ((*tab)[i]) {
                size_t h = hash_str(HASH0, (*tab)[i]) & (nc - 1);
                while (nt[h])
                    h = (h + 1) & (nc - 1);
                nt[h] = (*tab)[i];
            }
        *tab = nt;
        *cap = nc;
    }
    for (i = hash_str(HASH0, name) & (*cap - 1); (*tab)[i]; i = (i + 1) & (*cap - 1))
        if (!strcmp((*tab)[i], name))
            return 1;
    (*tab)[i] = name;
    (*n)++;
    return 0;
}

static const struct a_counter_set *pool_set(const struct a_pool *p, const char *name)
{
    size_t i;

    for (i = 0; i < p->nsets; i++)
        if (!strcmp(p->sets[i]->name, name))
            return p->sets[i];
    return NULL;
}

/* validateDeviceCounterConsumption; NULL, or why the pool is invalid. */
static char *check_consumption(struct a_node *n, const struct a_pool *p, struct a_slice **v,
                               size_t nv)
{
    size_t i, j, k, c;

    for (i = 0; i < nv; i++)
        for (j = 0; v[i]->consumes && j < v[i]->ndev; j++) {
            const struct a_dev *d = &v[i]->devs[j];
            for (k = 0; k < d->ncons; k++) {
                const struct a_counter_set *cs = pool_set(p, d->cons[k].set);
                if (!cs)
                    return arena_printf(&n->ar, "counter set %s not found", d->cons[k].set);
                for (c = 0; c < d->cons[k].n; c++) {
                    size_t x;
                    for (x = 0; x < cs->n && strcmp(cs->names[x], d->cons[k].names[c]); x++)
                        ;
                    if (x == cs->n)
                        return arena_printf(&n->ar, "counter %s not found in counter set %s",
                                            d->cons[k].names[c], cs->name);
                }
            }
        }
    return NULL;
}

/* buildPool; all: every slice of the pool's generation when the node's were not all. */
static int build_pool(struct a_node *n, struct a_pool *p, struct pvec *v, struct pvec *all)
{
    const struct alloc_inventory *inv = n->inv;
    int stable = inv->var == V_STABLE, part = inv->f.part;
    struct a_slice **sl = (struct a_slice **)v->v;
    struct pvec tgt = {0}, csl = {0}, other = {0};
    const char **names = NULL;
    size_t ncap = 0, nn = 0, i, j;
    char *why;

    if (v->n > 1)
        qsort(sl, v->n, sizeof(*sl), slice_cmp);
    p->seen = sl;
    p->nseen = v->n;
    for (i = 0; i < v->n; i++)
        if (pvec_push(&n->ar, part && sl[i]->counters_len ? &csl : &tgt, sl[i]))
            return -1;
    if (all && v->n < all->n)
        for (i = 0; i < all->n; i++) {
            struct a_slice *s = all->v[i];
            for (j = 0; j < v->n && strcmp(sl[j]->name, s->name); j++)
                ;
            if (j < v->n)
                continue;
            if (pvec_push(&n->ar, !stable && part && s->counters_len ? &csl : &other, s))
                return -1;
        }
    p->tgt = (struct a_slice **)tgt.v;
    p->ntgt = tgt.n;
    /* validateDeviceNames: one slice knows it of itself; several are checked together. */
    if (tgt.n == 1 && p->tgt[0]->dup_names) {
        for (i = 1; i < p->tgt[0]->ndev; i++)
            for (j = 0; j < i; j++)
                if (p->tgt[0]->devs[i].id == p->tgt[0]->devs[j].id) {
                    p->invalid = 1;
                    p->why = arena_printf(&n->ar, "duplicate device name %s",
                                          p->tgt[0]->devs[i].name);
                    p->tgt = NULL;
                    p->ntgt = 0;
                    return 0;
                }
    }
    for (i = 0; tgt.n > 1 && i < tgt.n; i++)
        for (j = 0; j < p->tgt[i]->ndev; j++) {
            int r = name_seen(&n->ar, &names, &ncap, &nn, p->tgt[i]->devs[j].name);
            if (r < 0)
                return -1;
            if (r) {
                p->invalid = 1;
                p->why = arena_printf(&n->ar, "duplicate device name %s", p->tgt[i]->devs[j].name);
                p->tgt = NULL;
                p->ntgt = 0;
                return 0;
            }
        }
    if (!part)
        return 0;
    names = NULL;
    ncap = nn = 0;
    {
        const struct a_counter_set **sets;
        size_t nsets = 0;
        for (i = 0; i < csl.n; i++)
            nsets += ((struct a_slice *)csl.v[i])->nsets;
        if (!(sets = arena_alloc(&n->ar, (nsets + 1) * sizeof(*sets))))
            return -1;
        p->sets = sets;
        for (i = 0; i < csl.n; i++) {
            struct a_slice *s = csl.v[i];
            for (j = 0; j < s->nsets; j++) {
                int r = name_seen(&n->ar, &names, &ncap, &nn, s->sets[j].name);
                if (r < 0)
                    return -1;
                if (r) {
                    p->invalid = 1;
                    p->why = arena_printf(&n->ar, "duplicate counter set name %s", s->sets[j].name);
                    p->tgt = NULL;
                    p->ntgt = 0;
                    p->nsets = 0;
                    return 0;
                }
                p->sets[p->nsets++] = &s->sets[j];
            }
        }
    }
    /* The stable variant checks every slice of the node (counter slices included) and the
     * others only when some were left out; the newer ones the device slices of both. */
    why = stable ? check_consumption(n, p, sl, v->n) : check_consumption(n, p, p->tgt, p->ntgt);
    if (!why && other.n)
        why = check_consumption(n, p, (struct a_slice **)other.v, other.n);
    if (why) {
        p->invalid = 1;
        p->why = why;
        p->tgt = NULL;
        p->ntgt = 0;
        p->nsets = 0;
        return 0;
    }
    p->other = (struct a_slice **)other.v;
    p->nother = other.n;
    return 0;
}

/* poolHasBindingConditions (whatever the gates say): such pools come last. */
static int pool_binding(const struct a_pool *p)
{
    size_t i, j;

    for (i = 0; i < p->ntgt; i++)
        for (j = 0; j < p->tgt[i]->ndev; j++)
            if (p->tgt[i]->devs[j].binding_set)
                return 1;
    return 0;
}

static int gather(struct a_node *n)
{
    const struct alloc_inventory *inv = n->inv;
    struct a_pod *pod = n->pod;
    int stable = inv->var == V_STABLE;
    const struct a_nodeslices *ns = stable ? NULL : find_node(inv, n->name);
    size_t total = stable ? inv->nslices : (ns ? ns->n : 0) + inv->nshared, i, j;
    struct pvec touched = {0};
    unsigned epoch = ++pod->epoch;

    for (i = 0; i < total; i++) {
        struct a_slice *s = &inv->slices[stable ? i : ns && i < ns->n ? ns->slices[i]
                                                 : inv->shared[i - (ns ? ns->n : 0)]];
        struct gp *g = &pod->gp[s->pool_id];
        int rel = 0;

        if (!inv->f.part && (s->per_device_set || s->counters_len))
            continue;
        if (!inv->f.compat && s->compat_groups)
            continue;
        if (stable && s->counters_len) {
            rel = 1;
        } else if (*s->node_name || s->all_nodes || s->node_selector) {
            rel = node_matches(n->node, n->name, s->node_name, s->all_nodes, s->node_selector);
        } else if (s->per_device) {
            for (j = 0; j < s->ndev && !rel; j++)
                rel = node_matches(n->node, n->name, s->devs[j].node_name, s->devs[j].all_nodes,
                                   s->devs[j].node_selector);
        } else {
            continue;
        }
        if (!rel)
            continue;
        if (g->epoch != epoch) {
            g->epoch = epoch;
            g->gen = s->generation;
            g->v.n = 0;
            g->v.cap = 0;
            g->v.v = NULL;
            g->pool = NULL;
            if (pvec_push(&n->ar, &touched, g))
                return -1;
        } else if (s->generation < g->gen) {
            continue;
        } else if (s->generation > g->gen) {
            g->gen = s->generation;
            g->v.n = 0;
        }
        if (pvec_push(&n->ar, &g->v, s))
            return -1;
    }
    if (!(n->pools = arena_alloc(&n->ar, (touched.n + 1) * sizeof(*n->pools))))
        return -1;
    for (i = 0; i < touched.n; i++) {
        struct gp *g = touched.v[i];
        struct a_slice *first = g->v.v[0];
        struct a_pool *p = &n->pools[n->npools];
        const struct a_poolid *pid = &inv->pools[first->pool_id];
        struct pvec all = {0};
        int obsolete = 0;

        p->pid = first->pool_id;
        p->driver = pid->driver;
        p->name = pid->pool;
        if ((int64_t)g->v.n == first->count) {
            if (build_pool(n, p, &g->v, NULL))
                return -1;
            n->npools++;
            continue;
        }
        for (j = 0; j < pid->nslices && !obsolete; j++) {
            struct a_slice *s = &inv->slices[pid->slices[j]];
            if (s->generation > first->generation)
                obsolete = 1;
            else if (s->generation == first->generation &&
                     (inv->f.compat || !s->compat_groups) && pvec_push(&n->ar, &all, s))
                return -1;
        }
        if (obsolete)
            continue;
        if ((int64_t)all.n != first->count) {
            p->incomplete = 1;
            p->seen = (struct a_slice **)g->v.v;
            p->nseen = g->v.n;
        } else if (build_pool(n, p, &g->v, &all))
            return -1;
        n->npools++;
    }
    /* By ID, those with binding conditions after the others (not in the stable variant). */
    for (i = 0; inv->var != V_STABLE && i < n->npools; i++)
        n->pools[i].binding = pool_binding(&n->pools[i]);
    {
        size_t k = 0;
        struct a_pool *tmp = arena_alloc(&n->ar, (n->npools + 1) * sizeof(*tmp));
        if (!tmp)
            return -1;
        for (i = 0; i < n->npools; i++)
            if (!n->pools[i].binding)
                tmp[k++] = n->pools[i];
        qsort(tmp, k, sizeof(*tmp), pool_cmp);
        j = k;
        for (i = 0; i < n->npools; i++)
            if (n->pools[i].binding)
                tmp[j++] = n->pools[i];
        qsort(tmp + k, j - k, sizeof(*tmp), pool_cmp);
        memcpy(n->pools, tmp, n->npools * sizeof(*tmp));
    }
    for (i = 0; i < n->npools; i++)
        pod->gp[n->pools[i].pid].pool = &n->pools[i];
    return 0;
}

/* ---- one node: the search (allocateOne, allocateDevice) ------------------------------- */

/* The one place selectors are evaluated.  The per-(selector, device) verdict cache of
 * lib/model/dra goes here; until then each pod's requests remember theirs (a_rd.memo). */
static enum cel_verdict sel_eval(struct a_pod *pod, const struct dra_selector *sel,
                                 const struct dra_device *d, struct dd_err *err)
{
    const struct cel_program *prog = sel->prog;

    if (!prog) {
        struct stored *st;
        for (st = pod->stored; st && strcmp(st->expr, sel->expr); st = st->next)
            ;
        if (!st) {
            struct cel_env env = *cel_default_env();
            if (!(st = calloc(1, sizeof(*st)))) {
                dd_failf(err, DD_ENOMEM, "out of memory");
                return CEL_ERROR;
            }
            st->expr = sel->expr;
            env.stored = 1;
            st->prog = cel_compile_env(sel->expr, strlen(sel->expr), NULL, &env, &st->err);
            st->next = pod->stored;
            pod->stored = st;
        }
        if (!st->prog) {
            dd_failf(err, DD_EPARSE, "CEL compile error: %s", st->err.msg);
            return CEL_ERROR;
        }
        prog = st->prog;
    }
    if (prog == sel->prog)
        /* The device's CEL value built once per model and the verdict kept per
         * (selector, device): every node and every pod asks the same questions. */
        return dra_selector_match(pod->inv->m, sel, d->id, err);
    return cel_eval_device(prog, &d->dev, NULL, err);
}

static const char *dev_text(struct a_node *n, const struct a_dev *d)
{
    return arena_printf(&n->ar, "%s/%s/%s", d->slice->driver, d->slice->pool, d->name);
}

/* isSelectable: binding conditions, the class's selectors, the request's, per-device node
 * selection.  1, 0, or -1 with the error recorded. */
static int selectable(struct a_node *n, struct a_rd *rd, const struct a_dev *d)
{
    struct a_pod *pod = n->pod;
    unsigned char *m;

    if (!n->inv->f.binding && d->binding_len)
        return 0;
    if (!rd->memo && !(rd->memo = zalloc(n->inv->nids + 1, 1))) {
        fail(n, "out of memory");
        return -1;
    }
    m = &rd->memo[d->id];
    if (!*m) {
        const struct dra_class *cls = rd->cls;
        struct dd_err err;
        size_t i;
        *m = 2;
        for (i = 0; *m == 2 && i < cls->nsel; i++) {
            enum cel_verdict v = sel_eval(pod, &cls->sel[i], d->md, &err);
            if (v == CEL_ERROR) {
                fail(n, "class %s: selector #%zu on device %s: CEL runtime error: %s",
                     cls->o.name, i, dev_text(n, d), err.msg);
                *m = 3;
            } else if (v == CEL_FALSE) {
                *m = 1;
            }
        }
        for (i = 0; *m == 2 && rd->mr && i < rd->mr->nsel; i++) {
            enum cel_verdict v = sel_eval(pod, &rd->mr->sel[i], d->md, &err);
            if (v == CEL_ERROR) {
                fail(n, "claim %s: selector #%zu on device %s: CEL runtime error: %s",
                     pod->claims[rd->claim].key, i, dev_text(n, d), err.msg);
                *m = 3;
            } else if (v == CEL_FALSE) {
                *m = 1;
            }
        }
    }
    if (*m == 3) {
        if (!n->error)
            fail(n, "claim %s, request %s: a selector fails on device %s", pod->claims[rd->claim].key,
                 rd->full, dev_text(n, d));
        return -1;
    }
    if (*m == 1)
        return 0;
    if (d->slice->per_device &&
        !node_matches(n->node, n->name, d->node_name, d->all_nodes, d->node_selector))
        return 0;
    return 1;
}

/* --- capacity (consumable_capacity.go) --- */

#define I64MAX ((qty)INT64_MAX)

/* safeMilliValue: q in milli-units when that is exact. */
static int safe_milli(qty q, qty *out)
{
    if (q % MILLI_NANO)
        return -1;
    if (q / MILLI_NANO > I64MAX || q / MILLI_NANO < -I64MAX - 1)
        return -1;
    *out = q / MILLI_NANO;
    return 0;
}

static int use_milli(const struct a_policy *p, int frac)
{
    qty x;

    if (!frac)
        return 0;
    if (p->has_min && safe_milli(p->min, &x))
        return 0;
    if (p->has_max && safe_milli(p->max, &x))
        return 0;
    if (p->has_step && (safe_milli(p->step, &x) || x < 1))
        return 0;
    return 1;
}

/* Go's int64 arithmetic on Value()/MilliValue() results. */
static int64_t i64(qty q)
{
    return (int64_t)q;
}

/* roundUpRange; -1 when the request cannot be represented. */
static int round_up_range(qty req, const struct a_policy *p, int frac, qty *out)
{
    int64_t r, step, min, added, k;

    if (req < p->min) {
        *out = p->min;
        return 0;
    }
    if (!p->has_step) {
        *out = req;
        return 0;
    }
    if (use_milli(p, frac)) {
        qty rm;
        if (safe_milli(req, &rm))
            return -1;
        r = i64(rm);
        step = i64(q_ceil_div(p->step, MILLI_NANO));
        min = i64(q_ceil_div(p->min, MILLI_NANO));
        if (step == 0)
            return -1;
        added = (int64_t)((uint64_t)r - (uint64_t)min);
        k = added / step + (added % step != 0);
        if (k > (INT64_MAX - min) / step)
            return -1;
        *out = ((qty)min + (qty)step * k) * MILLI_NANO;
        return 0;
    }
    if (req > I64MAX * NANO)
        return -1;
    r = i64(q_ceil_div(req, NANO));
    step = i64(q_ceil_div(p->step, NANO));
    min = i64(q_ceil_div(p->min, NANO));
    if (step == 0)
        return -1;
    added = (int64_t)((uint64_t)r - (uint64_t)min);
    k = added / step + (added % step != 0);
    if (min >= 0 && k > (INT64_MAX - min) / step)
        return -1;
    *out = (qty)(int64_t)((uint64_t)min + (uint64_t)step * (uint64_t)k) * NANO;
    return 0;
}

/* calculateConsumedCapacity; -1 when not representable. */
static int consumed_of(const qty *req, const struct a_cap *c, int frac, qty *out)
{
    const struct a_policy *p = &c->pol;
    size_t i;

    if (!req) {
        *out = p->set && p->has_default ? p->dflt : c->value;
        return 0;
    }
    if (!p->set) {
        *out = *req;
        return 0;
    }
    if (p->has_range && p->has_min)
        return round_up_range(*req, p, frac, out);
    if (p->values_set) {
        for (i = 0; i < p->nvalues; i++)
            if (*req <= p->values[i]) {
                *out = p->values[i];
                return 0;
            }
        *out = *req;
        return 0;
    }
    *out = *req;
    return 0;
}

static int violates(qty v, const struct a_policy *p, int frac)
{
    size_t i;

    if (!p->set)
        return 0;
    if (p->has_default && v == p->dflt)
        return 0;
    if (p->has_range) {
        if (p->has_max && v > p->max)
            return 1;
        if (p->has_step) {
            int64_t r, step, min;
            if (use_milli(p, frac)) {
                qty rm;
                if (safe_milli(v, &rm))
                    return 1;
                r = i64(rm);
                step = i64(q_ceil_div(p->step, MILLI_NANO));
                min = i64(q_ceil_div(p->min, MILLI_NANO));
            } else {
                r = i64(q_ceil_div(v, NANO));
                step = i64(q_ceil_div(p->step, NANO));
                min = i64(q_ceil_div(p->min, NANO));
            }
            if (step == 0 || (int64_t)((uint64_t)r - (uint64_t)min) % step != 0)
                return 1;
        }
        return 0;
    }
    if (p->nvalues) {
        for (i = 0; i < p->nvalues; i++)
            if (v == p->values[i])
                return 0;
        return 1;
    }
    return 0;
}

static const qty *capreq(const struct a_rd *rd, const char *name)
{
    size_t i;

    for (i = 0; i < rd->ncapreq; i++)
        if (!strcmp(rd->capreq_names[i], name))
            return &rd->capreq_vals[i];
    return NULL;
}

/*
 * CmpRequestOverCapacity for rd on d, given what allocated claims (held) and this attempt
 * (ent) consume of it.  1 it fits, 0 not, -1 error (recorded).  consumed: per d->caps, the
 * capacity this allocation consumes (may be NULL).
 */
static int fits_capacity(struct a_node *n, const struct a_rd *rd, const struct a_dev *d,
                         const struct a_held *held, const struct a_capent *ent, qty *consumed)
{
    qty tmp[16], *c = consumed;
    size_t i, k;

    for (i = 0; i < rd->ncapreq; i++) {
        for (k = 0; k < d->ncaps && strcmp(d->caps[k].name, rd->capreq_names[i]); k++)
            ;
        if (k == d->ncaps)
            return 0;
    }
    if (!c) {
        if (d->ncaps > sizeof(tmp) / sizeof(tmp[0]) &&
            !(c = arena_alloc(&n->ar, d->ncaps * sizeof(*c)))) {
            fail(n, "out of memory");
            return -1;
        }
        if (!c)
            c = tmp;
    }
    for (i = 0; i < d->ncaps; i++) {
        if (consumed_of(capreq(rd, d->caps[i].name), &d->caps[i], n->inv->f.fractional, &c[i])) {
            fail(n, "claim %s, request %s: checking capacity for device %s: capacity \"%s\": "
                 "capacity request cannot be represented in the device's range arithmetic",
                 n->pod->claims[rd->claim].key, rd->name, dev_text(n, d), d->caps[i].name);
            return -1;
        }
        if (c[i] < 0) {
            fail(n, "claim %s, request %s: checking capacity for device %s: capacity \"%s\": "
                 "capacity value is negative", n->pod->claims[rd->claim].key, rd->name,
                 dev_text(n, d), d->caps[i].name);
            return -1;
        }
    }
    for (i = 0; i < d->ncaps; i++) {
        qty total = c[i];
        if (violates(c[i], &d->caps[i].pol, n->inv->f.fractional))
            return 0;
        if (held && held->has_capacity)
            for (k = 0; k < held->ncap; k++)
                if (!strcmp(held->cap_names[k], d->caps[i].name))
                    total += held->cap_vals[k];
        if (ent && ent->present)
            total += ent->v[i];
        if (total > d->caps[i].value)
            return 0;
    }
    return 1;
}

/* --- counters --- */

static int allocated_id(const struct alloc_inventory *inv, size_t id)
{
    const struct a_held *h = &inv->ids[id].held;

    return h->dedicated || h->shared || h->has_capacity;
}

/* The devices of the pool (those that reach the node, then the others) allocated claims
 * hold: they consume counters and carry compatibility groups already. */
static int held_devices(struct a_node *n, const struct a_pool *p, struct pvec *out)
{
    size_t i, j;

    for (int pass = 0; pass < 2; pass++) {
        struct a_slice **v = pass ? p->other : p->tgt;
        size_t nv = pass ? p->nother : p->ntgt;
        for (i = 0; i < nv; i++)
            for (j = 0; j < v[i]->ndev; j++)
                if (allocated_id(n->inv, v[i]->devs[j].id) &&
                    pvec_push(&n->ar, out, &v[i]->devs[j]))
                    return -1;
    }
    return 0;
}

/* availableCounters of the pool, computed the first time this pod needs them. */
static struct a_avail *available(struct a_node *n, const struct a_pool *p)
{
    struct a_avail *a = &n->pod->avail[p->pid];
    struct pvec held = {0};
    size_t i, j, k, c, x, total = 0;

    if (a->done)
        return a;
    if (!a->listed && idvec_push(&n->pod->avail_ids, p->pid))
        return NULL;
    a->listed = 1;
    for (i = 0; i < p->nsets; i++)
        total += p->sets[i]->n;
    a->set = calloc(total + 1, sizeof(*a->set));
    a->name = calloc(total + 1, sizeof(*a->name));
    a->val = calloc(total + 1, sizeof(*a->val));
    if (!a->set || !a->name || !a->val)
        return NULL;
    for (i = 0; i < p->nsets; i++)
        for (j = 0; j < p->sets[i]->n; j++) {
            a->set[a->n] = p->sets[i]->name;
            a->name[a->n] = p->sets[i]->names[j];
            a->val[a->n++] = p->sets[i]->vals[j];
        }
    if (held_devices(n, p, &held))
        return NULL;
    for (i = 0; i < held.n; i++) {
        const struct a_dev *d = held.v[i];
        for (k = 0; k < d->ncons; k++)
            for (c = 0; c < d->cons[k].n; c++)
                for (x = 0; x < a->n; x++)
                    if (!strcmp(a->set[x], d->cons[k].set) &&
                        !strcmp(a->name[x], d->cons[k].names[c]))
                        a->val[x] -= d->cons[k].vals[c];
    }
    a->done = 1;
    return a;
}

/*
 * Where each counter the device consumes sits among the pool's available ones (-1: not
 * among them: consumed but never checked, as upstream does), once per pod.  NULL on ENOMEM.
 */
static const int *counter_index(struct a_node *n, const struct a_avail *a, const struct a_dev *d)
{
    int **slot = &n->pod->cidx[d->id], *v;
    size_t k, c, x, m = 0;

    if (*slot)
        return *slot;
    for (k = 0; k < d->ncons; k++)
        m += d->cons[k].n;
    if (!(v = malloc((m + 1) * sizeof(*v))))
        return NULL;
    if (idvec_push(&n->pod->cidx_ids, d->id)) {
        free(v);
        return NULL;
    }
    m = 0;
    for (k = 0; k < d->ncons; k++)
        for (c = 0; c < d->cons[k].n; c++) {
            v[m] = -1;
            for (x = 0; x < a->n; x++)
                if (!strcmp(a->set[x], d->cons[k].set) && !strcmp(a->name[x], d->cons[k].names[c])) {
                    v[m] = (int)x;
                    break;
                }
            m++;
        }
    return *slot = v;
}

static void counters_add(struct a_node *n, struct a_pool *p, const struct a_dev *d, int sign)
{
    const int *ix = n->pod->cidx[d->id];
    size_t k, c, m = 0;

    for (k = 0; k < d->ncons; k++)
        for (c = 0; c < d->cons[k].n; c++, m++)
            if (ix[m] >= 0)
                p->used[ix[m]] += sign * d->cons[k].vals[c];
}

/* checkAvailableCounters: reserves d's counters when every counter of the pool stays at
 * or above what is consumed.  1, 0, -1 (ENOMEM). */
static int counters_take(struct a_node *n, struct a_pool *p, const struct a_dev *d)
{
    struct a_avail *a = available(n, p);
    size_t x;

    if (!a || !counter_index(n, a, d) ||
        (!p->used && !(p->used = arena_alloc(&n->ar, (a->n + 1) * sizeof(*p->used))))) {
        fail(n, "out of memory");
        return -1;
    }
    counters_add(n, p, d, 1);
    for (x = 0; x < a->n; x++)
        if (a->val[x] < p->used[x]) {
            counters_add(n, p, d, -1);
            return 0;
        }
    return 1;
}

/* --- compatibility groups (experimental, DRADeviceCompatibilityGroups) --- */

static int groups_has(const struct a_groups *g, const char *s)
{
    size_t i;

    for (i = 0; i < g->n; i++)
        if (!strcmp(g->g[i], s))
            return 1;
    return 0;
}

static int groups_admits(const struct a_groups *g, const struct a_consume *c)
{
    size_t i;

    if (!g->members)
        return 1;
    if (!c->ngroups)
        return g->all_empty;
    if (g->all_empty)
        return 0;
    for (i = 0; i < c->ngroups; i++)
        if (groups_has(g, c->groups[i]))
            return 1;
    return 0;
}

/* add: the intersection, kept in place (the caller saved the previous state). */
static int groups_add(struct a_groups *g, const struct a_consume *c, struct arena *a,
                      int heap)
{
    size_t i, k = 0;
    const char **v;

    if (!g->members) {
        g->members = 1;
        g->all_empty = c->ngroups == 0;
        g->n = 0;
        g->g = NULL;
        if (!c->ngroups)
            return 0;
        v = heap ? calloc(c->ngroups, sizeof(*v)) : arena_alloc(a, c->ngroups * sizeof(*v));
        if (!v)
            return -1;
        for (i = 0; i < c->ngroups; i++)
            if (!groups_has(&(struct a_groups){1, 0, k, v}, c->groups[i]))
                v[k++] = c->groups[i];
        g->g = v;
        g->n = k;
        return 0;
    }
    if (g->all_empty || !c->ngroups)
        return 0;
    v = heap ? calloc(g->n + 1, sizeof(*v)) : arena_alloc(a, (g->n + 1) * sizeof(*v));
    if (!v)
        return -1;
    for (i = 0; i < g->n; i++) {
        size_t j;
        for (j = 0; j < c->ngroups && strcmp(c->groups[j], g->g[i]); j++)
            ;
        if (j < c->ngroups)
            v[k++] = g->g[i];
    }
    if (heap)
        free(g->g);
    g->g = v;
    g->n = k;
    return 0;
}

static struct a_baseline *baseline(struct a_node *n, const struct a_pool *p)
{
    struct a_baseline *b = &n->pod->base[p->pid];
    struct pvec held = {0};
    size_t i, k, x;

    if (b->done)
        return b;
    if (!b->listed && idvec_push(&n->pod->base_ids, p->pid))
        return NULL;
    b->listed = 1;
    if (held_devices(n, p, &held))
        return NULL;
    for (i = 0; i < held.n; i++) {
        const struct a_dev *d = held.v[i];
        for (k = 0; k < d->ncons; k++) {
            for (x = 0; x < b->n && strcmp(b->set[x], d->cons[k].set); x++)
                ;
            if (x == b->n) {
                const char **ns = realloc(b->set, (b->n + 1) * sizeof(*ns));
                struct a_groups *ng;
                if (!ns)
                    return NULL;
                b->set = ns;
                if (!(ng = realloc(b->gr, (b->n + 1) * sizeof(*ng))))
                    return NULL;
                b->gr = ng;
                b->set[x] = d->cons[k].set;
                memset(&b->gr[x], 0, sizeof(b->gr[x]));
                b->n++;
            }
            if (groups_add(&b->gr[x], &d->cons[k], NULL, 1))
                return NULL;
        }
    }
    b->done = 1;
    return b;
}

struct groups_undo {
    size_t n;
    struct { size_t r; struct a_groups prev; int fresh; } e[8];
};

/* checkAndConsumeCompatibilityGroups: each counter set the device draws from, in order,
 * must admit its groups; each is folded in at once.  1 admitted (undo filled), 0 not (state
 * restored), -1 ENOMEM. */
static void groups_undo(struct a_pool *p, struct groups_undo *u);

static int groups_take(struct a_node *n, struct a_pool *p, const struct a_dev *d,
                       struct groups_undo *u)
{
    struct a_baseline *b = baseline(n, p);
    size_t k, i;

    u->n = 0;
    if (!b)
        return -1;
    for (k = 0; k < d->ncons; k++) {
        const struct a_consume *c = &d->cons[k];
        struct a_running *r = NULL;
        struct a_groups cur;
        for (i = 0; i < p->nrun; i++)
            if (!strcmp(p->run[i].set, c->set))
                r = &p->run[i];
        if (r) {
            cur = r->g;
        } else {
            memset(&cur, 0, sizeof(cur));
            for (i = 0; i < b->n; i++)
                if (!strcmp(b->set[i], c->set))
                    cur = b->gr[i];
        }
        if (!groups_admits(&cur, c) || u->n == sizeof(u->e) / sizeof(u->e[0])) {
            groups_undo(p, u);
            return 0;
        }
        u->e[u->n].fresh = !r;
        if (!r) {
            if (p->nrun == p->caprun) {
                size_t nc = p->caprun ? p->caprun * 2 : 4;
                struct a_running *nr = arena_alloc(&n->ar, nc * sizeof(*nr));
                if (!nr)
                    return -1;
                if (p->nrun)
                    memcpy(nr, p->run, p->nrun * sizeof(*nr));
                p->run = nr;
                p->caprun = nc;
            }
            r = &p->run[p->nrun++];
            r->set = c->set;
        }
        u->e[u->n].r = (size_t)(r - p->run);
        u->e[u->n].prev = cur;
        u->n++;
        r->g = cur;
        if (groups_add(&r->g, c, &n->ar, 0))
            return -1;
    }
    return 1;
}

static void groups_undo(struct a_pool *p, struct groups_undo *u)
{
    while (u->n) {
        u->n--;
        if (u->e[u->n].fresh)
            p->nrun--;
        else
            p->run[u->e[u->n].r].g = u->e[u->n].prev;
    }
}

/* --- constraints (matchAttribute, distinctAttribute) --- */

enum { AK_NONE, AK_STRING, AK_INT, AK_BOOL, AK_VERSION };

static int64_t json_int(const cJSON *v)
{
    return v->valuestring ? strtoll(v->valuestring, NULL, 10) : (int64_t)v->valuedouble;
}

/* The scalar value of a DeviceAttribute, in the order upstream's switch tests them. */
static struct aval scalar(const cJSON *a)
{
    struct aval v = {AK_NONE, NULL, 0};
    const cJSON *x;

    if ((x = jset(a, "string")) && cJSON_IsString(x))
        v.kind = AK_STRING, v.s = x->valuestring;
    else if ((x = jset(a, "int")) && cJSON_IsNumber(x))
        v.kind = AK_INT, v.i = json_int(x);
    else if ((x = jset(a, "bool")) && cJSON_IsBool(x))
        v.kind = AK_BOOL, v.i = cJSON_IsTrue(x);
    else if ((x = jset(a, "version")) && cJSON_IsString(x))
        v.kind = AK_VERSION, v.s = x->valuestring;
    return v;
}

static int aval_eq(const struct aval *a, const struct aval *b)
{
    if (a->kind != b->kind)
        return 0;
    return a->kind == AK_INT || a->kind == AK_BOOL ? a->i == b->i : !strcmp(a->s, b->s);
}

/* attributeAsSet (DRAListTypeAttributes): a list, else the scalar as a set of one. */
struct vset {
    int kind;
    size_t n;
    struct aval *v;
};

static int vset_of(struct arena *ar, const cJSON *a, struct vset *out)
{
    static const struct { const char *list, *one; int kind; } order[] = {
        {"ints", "int", AK_INT}, {"bools", "bool", AK_BOOL},
        {"strings", "string", AK_STRING}, {"versions", "version", AK_VERSION},
    };
    const cJSON *x, *e;
    size_t k;

    memset(out, 0, sizeof(*out));
    for (int pass = 0; pass < 2; pass++)
        for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
            x = jset(a, pass ? order[k].one : order[k].list);
            if (!x || (!pass && !jlen(x)))
                continue;
            if (pass && !(order[k].kind == AK_INT ? cJSON_IsNumber(x) : order[k].kind == AK_BOOL
                                                        ? cJSON_IsBool(x) : cJSON_IsString(x)))
                continue;
            out->kind = order[k].kind;
            if (!(out->v = arena_alloc(ar, (pass ? 1 : jlen(x)) * sizeof(*out->v))))
                return -1;
            if (pass) {
                out->v[0] = scalar(a);
                out->v[0].kind = order[k].kind;
                if (order[k].kind == AK_INT)
                    out->v[0].i = json_int(x), out->v[0].s = NULL;
                else if (order[k].kind == AK_BOOL)
                    out->v[0].i = cJSON_IsTrue(x), out->v[0].s = NULL;
                else
                    out->v[0].s = x->valuestring;
                out->n = 1;
                return 1;
            }
            cJSON_ArrayForEach(e, x) {
                struct aval v = {order[k].kind, NULL, 0};
                size_t j;
                if (v.kind == AK_INT)
                    v.i = cJSON_IsNumber(e) ? json_int(e) : 0;
                else if (v.kind == AK_BOOL)
                    v.i = cJSON_IsTrue(e);
                else
                    v.s = cJSON_IsString(e) ? e->valuestring : "";
                for (j = 0; j < out->n && !aval_eq(&out->v[j], &v); j++)
                    ;
                if (j == out->n)
                    out->v[out->n++] = v;
            }
            return 1;
        }
    return 0;
}

/* The intersection of a and b when they are of one kind and share a value; 0 otherwise. */
static int vset_meet(struct arena *ar, const struct vset *a, const struct vset *b, struct vset *out)
{
    size_t i, j;

    memset(out, 0, sizeof(*out));
    if (a->kind != b->kind)
        return 0;
    if (!(out->v = arena_alloc(ar, (a->n + 1) * sizeof(*out->v))))
        return -1;
    out->kind = a->kind;
    for (i = 0; i < a->n; i++)
        for (j = 0; j < b->n; j++)
            if (aval_eq(&a->v[i], &b->v[j])) {
                out->v[out->n++] = a->v[i];
                break;
            }
    return out->n > 0;
}

/* lookupStaticAttribute: the fully qualified name, else the driver's own unqualified one. */
static const cJSON *attribute(const struct a_dev *d, const char *name)
{
    const cJSON *attrs = jset(d->body, "attributes"), *a;
    const char *slash;

    if ((a = cJSON_GetObjectItemCaseSensitive(attrs, name)))
        return a;
    if (!(slash = strchr(name, '/')))
        return NULL;
    if ((size_t)(slash - name) != strlen(d->slice->driver) ||
        strncmp(name, d->slice->driver, (size_t)(slash - name)))
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(attrs, slash + 1);
}

static int constraint_applies(const struct a_constraint *k, const struct a_rd *rd)
{
    const cJSON *it;

    if (!jlen(k->reqs))
        return 1;
    cJSON_ArrayForEach(it, k->reqs) {
        if (!cJSON_IsString(it))
            continue;
        if (!rd->parent ? !strcmp(it->valuestring, rd->name)
                        : !strcmp(it->valuestring, rd->parent) || !strcmp(it->valuestring, rd->full))
            return 1;
    }
    return 0;
}

static int cstate_push(struct a_node *n, struct a_cstate *c, const cJSON *a, struct vset *set)
{
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 8;
        const cJSON **ns = arena_alloc(&n->ar, nc * sizeof(*ns));
        struct vset **nst = arena_alloc(&n->ar, nc * sizeof(*nst));
        if (!ns || !nst)
            return -1;
        if (c->n) {
            memcpy(ns, c->seen, c->n * sizeof(*ns));
            memcpy(nst, c->stack, c->n * sizeof(*nst));
        }
        c->seen = ns;
        c->stack = nst;
        c->cap = nc;
    }
    c->seen[c->n] = a;
    if (set) {
        struct vset *s = arena_alloc(&n->ar, sizeof(*s));
        if (!s)
            return -1;
        *s = *set;
        c->stack[c->n] = s;
    }
    c->n++;
    return 0;
}

static const cJSON absent;

/* The device's attribute the constraint compares, looked up once per pod. */
static const cJSON *constraint_attr(struct a_node *n, struct a_constraint *k, const struct a_dev *d)
{
    const cJSON *a;

    if (!k->memo && !(k->memo = zalloc(n->inv->nids + 1, sizeof(*k->memo))))
        return attribute(d, k->attr);
    if (!k->memo[d->id])
        k->memo[d->id] = (a = attribute(d, k->attr)) ? a : &absent;
    return k->memo[d->id] == &absent ? NULL : k->memo[d->id];
}

/* add: 1 the device joins the set, 0 it violates the constraint, -1 ENOMEM. */
static int constraint_add(struct a_node *n, struct a_cstate *c, const struct a_rd *rd,
                          const struct a_dev *d)
{
    struct a_constraint *k = c->k;
    int lists = n->inv->f.lists;
    const cJSON *a;
    size_t i;

    if (!constraint_applies(k, rd))
        return 1;
    if (!(a = constraint_attr(n, k, d)))
        return 0;
    if (k->kind == C_MATCH) {
        struct vset s, meet;
        if (lists) {
            int r = vset_of(&n->ar, a, &s);
            if (r <= 0)
                return r;
            if (c->n) {
                if ((r = vset_meet(&n->ar, c->stack[c->n - 1], &s, &meet)) <= 0)
                    return r;
                s = meet;
            }
            return cstate_push(n, c, a, &s) ? -1 : 1;
        }
        if (c->n) {
            struct aval x = scalar(a);
            if (x.kind == AK_NONE || !aval_eq(&x, &c->first))
                return 0;
        } else {
            c->first = scalar(a);
        }
        return cstate_push(n, c, a, NULL) ? -1 : 1;
    }
    if (lists) {
        struct vset s, e, meet;
        int r = vset_of(&n->ar, a, &s);
        if (r <= 0)
            return r;
        for (i = 0; i < c->n; i++) {
            if ((r = vset_of(&n->ar, c->seen[i], &e)) < 0)
                return -1;
            if (!r)
                continue;
            if ((r = vset_meet(&n->ar, &s, &e, &meet)) != 0)
                return r < 0 ? -1 : 0;
        }
    } else {
        struct aval x = scalar(a);
        for (i = 0; i < c->n; i++) {
            struct aval e = scalar(c->seen[i]);
            if (x.kind == AK_NONE || (x.kind == e.kind && aval_eq(&x, &e)))
                return 0;
        }
    }
    return cstate_push(n, c, a, NULL) ? -1 : 1;
}

static void constraint_remove(struct a_cstate *c, const struct a_rd *rd)
{
    if (constraint_applies(c->k, rd))
        c->n--;
}

/* --- allocateDevice --- */

static int taint_blocks(const struct a_dev *d, const struct a_rd *rd)
{
    const cJSON *t, *tol;

    cJSON_ArrayForEach(t, d->taints) {
        const char *e = jstr(t, "effect");
        int ok = 0;
        if (!e || (strcmp(e, "NoSchedule") && strcmp(e, "NoExecute")))
            continue;
        cJSON_ArrayForEach(tol, rd->tolerations)
            if ((ok = fit_tolerates(tol, t)))
                break;
        if (!ok)
            return 1;
    }
    return 0;
}

static int declares(const cJSON *node, const char *feature)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(node, "status", "declaredFeatures", NULL))
        if (cJSON_IsString(it) && !strcmp(it->valuestring, feature))
            return 1;
    return 0;
}

struct undo {
    struct a_dev *d;
    struct a_rd *rd;
    struct a_pool *pool;
    size_t t;
    int counters;
    struct groups_undo groups;
    size_t ncons;
    int marked;
    int cap_inserted, cap_existed;
    qty *consumed;
    int result;
};

static void capent_sub(struct a_capent *e, const struct a_dev *d, const qty *v)
{
    size_t i;
    int empty = 1;

    if (!e->present)
        return;
    for (i = 0; i < d->ncaps; i++) {
        e->v[i] -= v[i];
        if (e->v[i])
            empty = 0;
    }
    if (empty)
        e->present = 0;
}

static int constraint_on(const struct a_node *n, size_t k)
{
    return !n->no_constraints && n->skip_constraint != k + 1;
}

static void rollback(struct a_node *n, struct undo *u)
{
    struct a_capent *e = &n->pod->capent[u->d->id];
    size_t i;

    if (u->result)
        n->nres[u->t]--;
    if (u->cap_inserted) {
        capent_sub(e, u->d, u->consumed);
        if (u->cap_existed && !e->present) {
            e->present = 1;
            for (i = 0; i < u->d->ncaps; i++)
                e->v[i] = 0;
        }
    }
    if (u->marked)
        n->pod->inuse[u->d->id] &= ~((uint64_t)1 << u->t);
    while (u->ncons) {
        u->ncons--;
        if (constraint_on(n, u->ncons))
            constraint_remove(&n->cst[u->t][u->ncons], u->rd);
    }
    groups_undo(u->pool, &u->groups);
    if (u->counters)
        counters_add(n, u->pool, u->d, -1);
    memset(u, 0, sizeof(*u));
}

/* allocateDevice.  1 allocated (u records what to undo), 0 not, -1 error. */
static int allocate_device(struct a_node *n, size_t t, struct a_rd *rd, struct a_dev *d, int must,
                           struct undo *u)
{
    const struct feat *f = &n->inv->f;
    struct a_pod *pod = n->pod;
    struct a_claim *c = &pod->claims[pod->todo[t]];
    struct a_pool *pool = pod->gp[d->slice->pool_id].pool;
    const struct a_held *held = &n->inv->ids[d->id].held;
    struct a_capent *e = &pod->capent[d->id];
    int multi = f->consumable && d->allow_multi, admin = rd->admin, r;
    size_t k;

    memset(u, 0, sizeof(*u));
    u->d = d;
    u->rd = rd;
    u->pool = pool;
    u->t = t;
    if (!multi && admin && (pod->inuse[d->id] >> t & 1))
        return 0;
    if (!admin && (held->dedicated || pod->inuse[d->id]))
        return 0;
    if (!f->part && d->ncons)
        return 0;
    if (n->inv->var == V_EXPERIMENTAL && d->slice->skip_node_ops &&
        (!f->nodeops || !declares(n->node, "DRAOptionalNodeOperations")))
        return 0;
    {
        int skip = multi && (held->has_capacity || held->shared || e->present);
        if (n->inv->var == V_EXPERIMENTAL && f->compat && !skip && d->ncons &&
            (r = groups_take(n, pool, d, &u->groups)) <= 0) {
            if (r < 0)
                fail(n, "out of memory");
            return r;
        }
        if (!skip && d->ncons) {
            if ((r = counters_take(n, pool, d)) <= 0) {
                groups_undo(pool, &u->groups);
                return r;
            }
            u->counters = 1;
        }
    }
    if (f->taints && taint_blocks(d, rd)) {
        rollback(n, u);
        return 0;
    }
    for (k = 0; k < c->ncons; k++) {
        if (!constraint_on(n, k)) {
            u->ncons++; /* keeps the index: removal skips it too */
            continue;
        }
        if ((r = constraint_add(n, &n->cst[t][k], rd, d)) <= 0) {
            rollback(n, u);
            if (r < 0) {
                fail(n, "out of memory");
                return -1;
            }
            if (must) {
                fail(n, "claim %s, request %s: cannot add device %s because a claim constraint "
                     "would not be satisfied", c->key, rd->name, dev_text(n, d));
                return -1;
            }
            return 0;
        }
        u->ncons++;
    }
    if (!multi) {
        pod->inuse[d->id] |= (uint64_t)1 << t;
        u->marked = 1;
    }
    if (f->consumable) {
        qty *consumed = NULL;
        if (multi && !(consumed = arena_alloc(&n->ar, (d->ncaps + 1) * sizeof(*consumed)))) {
            rollback(n, u);
            fail(n, "out of memory");
            return -1;
        }
        r = fits_capacity(n, rd, d, held, e, consumed);
        if (r <= 0) {
            rollback(n, u);
            return r;
        }
        if (multi) {
            u->cap_existed = e->present;
            if (!e->present) {
                if (!e->v && !(e->v = arena_alloc(&n->ar, (d->ncaps + 1) * sizeof(*e->v)))) {
                    rollback(n, u);
                    fail(n, "out of memory");
                    return -1;
                }
                for (k = 0; k < d->ncaps; k++)
                    e->v[k] = 0;
                e->present = 1;
            }
            for (k = 0; k < d->ncaps; k++)
                e->v[k] += consumed[k];
            u->cap_inserted = 1;
            u->consumed = consumed;
        }
    }
    {
        struct a_res *res = &n->res[t][n->nres[t]++];
        res->d = d;
        res->rd = rd;
        res->admin = admin;
        res->shared = multi;
        res->consumed = multi ? u->consumed : NULL;
        u->result = 1;
    }
    return 1;
}

/* --- allocateOne --- */

enum { ONE_NO = 0, ONE_DONE = 1, ONE_ERR = -1, ONE_MAX = -2 };

struct loc {
    size_t pool, slice, dev;
};

static struct a_rd *rd_at(struct a_node *n, size_t t, size_t j, size_t s)
{
    return &n->pod->claims[n->pod->todo[t]].reqs[j].rd[s];
}

static size_t claims_todo(const struct a_node *n)
{
    return n->pod->ntodo;
}

static int claim_skipped(const struct a_node *n, size_t t)
{
    return n->only && n->only != &n->pod->claims[n->pod->todo[t]];
}

static int allocate_one(struct a_node *n, size_t t, size_t j, size_t s, int64_t dev, int in_sub,
                        struct loc start)
{
    struct a_claim *c;
    struct a_rd *rd;
    size_t pi, si, di;

    if (++n->steps > n->max_steps) {
        fail(n, "node %s: timed out trying to allocate devices (dra-doctor gave up after %llu "
             "steps, as the scheduler gives up after its filter timeout)", n->name,
             (unsigned long long)n->max_steps);
        return ONE_ERR;
    }
    while (t < claims_todo(n) && claim_skipped(n, t))
        t++, j = 0, s = 0, dev = 0;
    if (t >= claims_todo(n))
        return ONE_DONE;
    c = &n->pod->claims[n->pod->todo[t]];
    if (j >= c->nreqs) {
        int r = allocate_one(n, t + 1, 0, 0, 0, 0, (struct loc){0, 0, 0});
        return r == ONE_MAX ? ONE_NO : r;
    }
    if (!in_sub && c->reqs[j].has_sub) {
        int all_max = 1;
        for (size_t k = 0; k < c->reqs[j].nrd; k++) {
            int r = allocate_one(n, t, j, k, dev, 1, (struct loc){0, 0, 0});
            if (r == ONE_MAX)
                continue;
            all_max = 0;
            if (r == ONE_ERR)
                return r;
            if (r == ONE_DONE) {
                n->sel[t][j] = k;
                return ONE_DONE;
            }
        }
        return all_max ? ONE_MAX : ONE_NO;
    }
    rd = rd_at(n, t, j, s);
    if (rd->all && n->nall[rd->ix] == 0)
        return ONE_NO;
    if (dev >= n->numdev[rd->ix])
        return allocate_one(n, t, j + 1, 0, 0, 0, (struct loc){0, 0, 0});
    if (n->numdev[rd->ix] - dev > (int64_t)(MAX_RESULTS - n->nres[t]))
        return ONE_MAX;
    if (rd->all) {
        struct undo u;
        int r = allocate_device(n, t, rd, n->all[rd->ix][dev], 1, &u);
        if (r <= 0)
            return r < 0 ? ONE_ERR : ONE_NO;
        r = allocate_one(n, t, j, s, dev + 1, in_sub, (struct loc){0, 0, 0});
        if (r != ONE_DONE)
            rollback(n, &u);
        return r;
    }
    for (pi = start.pool; pi < n->npools; pi++) {
        struct a_pool *p = &n->pools[pi];
        if (p->incomplete || p->invalid)
            continue;
        for (si = pi == start.pool ? start.slice : 0; si < p->ntgt; si++) {
            struct a_slice *sl = p->tgt[si];
            for (di = pi == start.pool && si == start.slice ? start.dev : 0; di < sl->ndev; di++) {
                struct a_dev *d = &sl->devs[di];
                const struct a_held *held = &n->inv->ids[d->id].held;
                struct undo u;
                int r;

                if (rd->admin && (n->pod->inuse[d->id] >> t & 1))
                    continue;
                if (!rd->admin && (held->dedicated || n->pod->inuse[d->id]))
                    continue;
                if ((r = selectable(n, rd, d)) < 0)
                    return ONE_ERR;
                if (!r)
                    continue;
                if (n->inv->f.consumable) {
                    if ((r = fits_capacity(n, rd, d, held, &n->pod->capent[d->id], NULL)) < 0)
                        return ONE_ERR;
                    if (!r)
                        continue;
                }
                if ((r = allocate_device(n, t, rd, d, 0, &u)) < 0)
                    return ONE_ERR;
                if (!r)
                    continue;
                r = allocate_one(n, t, j, s, dev + 1, in_sub, (struct loc){pi, si, di + 1});
                if (r == ONE_DONE)
                    return r;
                rollback(n, &u);
                if (r < 0)
                    return r;
            }
        }
    }
    return ONE_NO;
}

/* --- one node, from the pools to the verdict --- */

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* validateDeviceRequest: the devices rd needs on this node.  0, or -1 (error recorded). */
static int validate(struct a_node *n, struct a_claim *c, struct a_rd *rd)
{
    const struct feat *f = &n->inv->f;
    struct pvec all = {0};
    size_t i, j, k;

    if (rd->derived) {
        if (n->inv->var != V_EXPERIMENTAL || !f->derived)
            fail(n, "claim %s, request %s: cannot handle request with derived attributes, the "
                 "feature is disabled", c->key, rd->name);
        else
            fail(n, "claim %s, request %s: derived attributes (DRADerivedAttributes) are not "
                 "evaluated by dra-doctor", c->key, rd->name);
        return -1;
    }
    if (rd->sel_no_cel) {
        fail(n, "claim %s, request %s, selector #%d: CEL expression empty (unsupported selector "
             "type?)", c->key, rd->name, rd->sel_no_cel - 1);
        return -1;
    }
    if (!f->admin && rd->admin_set) {
        fail(n, "claim %s, request %s: admin access is requested, but the feature is disabled",
             c->key, rd->name);
        return -1;
    }
    if (!rd->class_name || !*rd->class_name) {
        fail(n, "claim %s, request %s: missing device class name (unsupported request type?)",
             c->key, rd->name);
        return -1;
    }
    if (!rd->cls) {
        fail(n, "claim %s, request %s: could not retrieve device class %s", c->key, rd->name,
             rd->class_name);
        return -1;
    }
    if (!strcmp(rd->mode, "ExactCount")) {
        n->numdev[rd->ix] = rd->count;
        return 0;
    }
    if (!rd->all) {
        fail(n, "claim %s, request %s: unsupported count mode %s", c->key, rd->name, rd->mode);
        return -1;
    }
    for (i = 0; i < n->npools; i++) {
        struct a_pool *p = &n->pools[i];
        if (p->incomplete || p->invalid) {
            fail(n, "claim %s, request %s: asks for all devices, but resource pool %s/%s is "
                 "currently %s", c->key, rd->name, p->driver, p->name,
                 p->incomplete ? "being updated" : "invalid");
            return -1;
        }
        for (j = 0; j < p->ntgt; j++)
            for (k = 0; k < p->tgt[j]->ndev; k++) {
                struct a_dev *d = &p->tgt[j]->devs[k];
                int r = selectable(n, rd, d);
                if (r < 0)
                    return -1;
                if (r && f->consumable && (r = fits_capacity(n, rd, d, NULL, NULL, NULL)) < 0)
                    return -1;
                if (r && pvec_push(&n->ar, &all, d)) {
                    fail(n, "out of memory");
                    return -1;
                }
            }
    }
    n->all[rd->ix] = (struct a_dev **)all.v;
    n->nall[rd->ix] = all.n;
    n->numdev[rd->ix] = (int64_t)all.n;
    return 0;
}

/* Allocate's preamble.  0, or -1 (error recorded). */
static int prepare(struct a_node *n)
{
    const struct feat *f = &n->inv->f;
    struct a_pod *pod = n->pod;
    size_t t, j, k;

    for (t = 0; t < pod->ntodo; t++) {
        struct a_claim *c = &pod->claims[pod->todo[t]];
        int64_t min_claim = 0;

        n->nres[t] = 0;
        if (claim_skipped(n, t))
            continue;
        for (j = 0; j < c->nreqs; j++) {
            struct a_req *r = &c->reqs[j];
            int64_t min_req = r->has_sub ? INT64_MAX : 0;
            if (r->has_sub && !f->prio) {
                fail(n, "claim %s, request %s: has subrequests, but the DRAPrioritizedList "
                     "feature is disabled", c->key, r->name);
                return -1;
            }
            if (n->inv->var != V_STABLE && !f->consumable)
                for (k = 0; k < r->nrd; k++)
                    if (r->rd[k].capacity_set) {
                        fail(n, "claim %s, %s %s: has capacity requests, but the "
                             "DRAConsumableCapacity feature is disabled", c->key,
                             r->has_sub ? "subrequest" : "request", r->rd[k].name);
                        return -1;
                    }
            for (k = 0; k < r->nrd; k++) {
                if (validate(n, c, &r->rd[k]))
                    return -1;
                min_req = r->has_sub ? min64(min_req, n->numdev[r->rd[k].ix])
                                     : n->numdev[r->rd[k].ix];
            }
            if (min_req > MAX_RESULTS - min_claim) {
                fail(n, "claim %s, request %s: adding %lld devices exceeds the claim limit of %d, "
                     "with %lld already accounted for", c->key, r->name, (long long)min_req,
                     MAX_RESULTS, (long long)min_claim);
                return -1;
            }
            min_claim += min_req;
        }
        if (!(n->cst[t] = arena_alloc(&n->ar, (c->ncons + 1) * sizeof(*n->cst[t])))) {
            fail(n, "out of memory");
            return -1;
        }
        for (k = 0; k < c->ncons; k++) {
            if (c->cons[k].kind == C_UNKNOWN ||
                (n->inv->var == V_STABLE && c->cons[k].kind == C_DISTINCT)) {
                fail(n, "claim %s, constraint #%zu: empty constraint (unsupported constraint "
                     "type?)", c->key, k);
                return -1;
            }
            n->cst[t][k].k = &c->cons[k];
        }
    }
    return 0;
}

/* Leaves no trace of a search that found a solution. */
static void clean(struct a_node *n)
{
    size_t i, j, k;

    for (i = 0; i < n->npools; i++) {
        struct a_pool *p = &n->pools[i];
        p->used = NULL;
        p->nrun = 0;
        for (j = 0; j < p->ntgt; j++)
            for (k = 0; k < p->tgt[j]->ndev; k++) {
                size_t id = p->tgt[j]->devs[k].id;
                n->pod->inuse[id] = 0;
                n->pod->capent[id].present = 0;
                n->pod->capent[id].v = NULL;
            }
    }
    for (i = 0; i < n->pod->ntodo; i++)
        n->nres[i] = 0;
}

/* The DynamicResources filter's verdict for the pod's claims to allocate: 1 fit, 0 not,
 * -1 error (n->error). */
static int search(struct a_node *n)
{
    int r;
    size_t i;

    if (prepare(n))
        return -1;
    r = allocate_one(n, 0, 0, 0, 0, 0, (struct loc){0, 0, 0});
    if (r == ONE_ERR)
        return -1;
    if (r == ONE_MAX) {
        fail(n, "allocation max size exceeded");
        return -1;
    }
    if (r == ONE_DONE)
        return 1;
    for (i = 0; i < n->npools; i++)
        if (n->pools[i].invalid) {
            n->on_node = 1;
            fail(n, "invalid resource pools were encountered");
            return -1;
        }
    return 0;
}

static int node_setup(struct a_node *n)
{
    size_t nt = n->pod->ntodo + 1, i;

    n->cst = arena_alloc(&n->ar, nt * sizeof(*n->cst));
    n->res = arena_alloc(&n->ar, nt * sizeof(*n->res));
    n->nres = arena_alloc(&n->ar, nt * sizeof(*n->nres));
    n->sel = arena_alloc(&n->ar, nt * sizeof(*n->sel));
    n->all = arena_alloc(&n->ar, (n->pod->nrds + 1) * sizeof(*n->all));
    n->nall = arena_alloc(&n->ar, (n->pod->nrds + 1) * sizeof(*n->nall));
    n->numdev = arena_alloc(&n->ar, (n->pod->nrds + 1) * sizeof(*n->numdev));
    if (!n->cst || !n->res || !n->nres || !n->sel || !n->all || !n->nall || !n->numdev)
        return -1;
    for (i = 0; i < n->pod->ntodo; i++) {
        const struct a_claim *c = &n->pod->claims[n->pod->todo[i]];
        if (!(n->res[i] = arena_alloc(&n->ar, MAX_RESULTS * sizeof(*n->res[i]))) ||
            !(n->sel[i] = arena_alloc(&n->ar, (c->nreqs + 1) * sizeof(*n->sel[i]))))
            return -1;
    }
    return 0;
}

/* allocationResultRequiresDRAOptionalNodeOperations. */
static int skips_node_operations(const cJSON *claim)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, dd_json_arr(claim, "status", "allocation", "devices", "results", NULL))
        if (jlen(jset(it, "skipNodeOperations")))
            return 1;
    return 0;
}

static const cJSON *condition(const cJSON *conds, const char *type)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, conds)
        if (jstr(c, "type") && !strcmp(jstr(c, "type"), type))
            return c;
    return NULL;
}

/* The binding timeout the scheduler uses by default (DynamicResourcesArgs.BindingTimeout). */
#define BINDING_TIMEOUT 600

/* isClaimReadyForBinding failing, or not ready past the binding timeout. */
static int binding_failed(const cJSON *claim)
{
    const cJSON *results = dd_json_arr(claim, "status", "allocation", "devices", "results", NULL);
    const cJSON *r, *c, *st;
    const char *ts;
    int ready = 1;

    cJSON_ArrayForEach(r, results) {
        if (!jlen(jset(r, "bindingConditions")))
            continue;
        st = NULL;
        cJSON_ArrayForEach(c, dd_json_arr(claim, "status", "devices", NULL))
            if (jstr(c, "device") && jstr(r, "device") && !strcmp(jstr(c, "device"), jstr(r, "device")) &&
                jstr(c, "driver") && jstr(r, "driver") && !strcmp(jstr(c, "driver"), jstr(r, "driver")) &&
                jstr(c, "pool") && jstr(r, "pool") && !strcmp(jstr(c, "pool"), jstr(r, "pool"))) {
                st = c;
                break;
            }
        if (!st) {
            ready = 0;
            break;
        }
        cJSON_ArrayForEach(c, jset(r, "bindingFailureConditions")) {
            const cJSON *f = cJSON_IsString(c) ? condition(jset(st, "conditions"), c->valuestring) : NULL;
            if (f && jstr(f, "status") && !strcmp(jstr(f, "status"), "True"))
                return 1;
        }
        cJSON_ArrayForEach(c, jset(r, "bindingConditions")) {
            const cJSON *f = cJSON_IsString(c) ? condition(jset(st, "conditions"), c->valuestring) : NULL;
            if (!f || !jstr(f, "status") || strcmp(jstr(f, "status"), "True"))
                ready = 0;
        }
        if (!ready)
            break;
    }
    if (ready || !(ts = dd_json_str(claim, "status", "allocation", "allocationTimestamp", NULL)))
        return 0;
    cJSON_ArrayForEach(r, results) {
        struct tm tm;
        const char *end;
        memset(&tm, 0, sizeof(tm));
        if (!jset(r, "bindingConditions"))
            continue;
        end = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
        if (end && timegm(&tm) + BINDING_TIMEOUT < time(NULL))
            return 1;
    }
    return 0;
}

/* Why an allocated claim of the pod cannot be used on the node (the plugin's Filter), or NULL. */
static const char *unavailable(const struct a_node *n, const struct a_claim *c)
{
    const struct feat *f = &n->inv->f;

    if (c->alloc_selector && !fit_node_selector_matches(c->alloc_selector, n->node))
        return "its allocation's nodeSelector excludes the node";
    if (skips_node_operations(c->mc->o.json) && !declares(n->node, "DRAOptionalNodeOperations"))
        return "its devices skip node operations, and the node does not declare "
               "DRAOptionalNodeOperations";
    if (f->binding && binding_failed(c->mc->o.json))
        return "binding its devices failed or timed out (their binding conditions)";
    return NULL;
}

/* ---- the explanation ------------------------------------------------------------------ */

static int class_accepts(struct a_node *n, const struct a_rd *rd, const struct a_dev *d)
{
    struct dd_err err;
    size_t i;

    for (i = 0; i < rd->cls->nsel; i++)
        if (sel_eval(n->pod, &rd->cls->sel[i], d->md, &err) != CEL_TRUE)
            return 0;
    return 1;
}

/* A device whose counters alone exceed what is left of them in its pool. */
static const char *counter_short(struct a_node *n, struct a_pool *p, const struct a_dev *d)
{
    struct a_avail *a = available(n, p);
    size_t k, c, x;

    for (k = 0; a && k < d->ncons; k++)
        for (c = 0; c < d->cons[k].n; c++)
            for (x = 0; x < a->n; x++)
                if (!strcmp(a->set[x], d->cons[k].set) && !strcmp(a->name[x], d->cons[k].names[c]) &&
                    a->val[x] < d->cons[k].vals[c])
                    return arena_printf(&n->ar, "%s/%s used up", a->set[x], a->name[x]);
    return NULL;
}

static const char *capacity_short(struct a_node *n, const struct a_rd *rd, const struct a_dev *d)
{
    size_t i;
    qty need;

    for (i = 0; i < rd->ncapreq; i++) {
        size_t k;
        for (k = 0; k < d->ncaps && strcmp(d->caps[k].name, rd->capreq_names[i]); k++)
            ;
        if (k == d->ncaps)
            return arena_printf(&n->ar, "%s: not published", rd->capreq_names[i]);
    }
    for (i = 0; i < d->ncaps; i++) {
        if (consumed_of(capreq(rd, d->caps[i].name), &d->caps[i], n->inv->f.fractional, &need))
            return arena_printf(&n->ar, "%s: cannot be represented", d->caps[i].name);
        if (violates(need, &d->caps[i].pol, n->inv->f.fractional))
            return arena_printf(&n->ar, "%s: outside the device's request policy", d->caps[i].name);
    }
    for (i = 0; i < d->ncaps; i++)
        if (!consumed_of(capreq(rd, d->caps[i].name), &d->caps[i], n->inv->f.fractional, &need) &&
            need > d->caps[i].value)
            return arena_printf(&n->ar, "%s: more than the device has", d->caps[i].name);
    return arena_printf(&n->ar, "%s: taken by other claims", d->ncaps ? d->caps[0].name : "capacity");
}

static int note(char **slot, const char *text)
{
    return !*slot && !(*slot = xstrdup(text)) ? -1 : 0;
}

/* A device the request's selectors take, in a pool the scheduler skips. */
static int funnel_skipped(struct a_node *n, struct a_rd *rd, struct alloc_funnel *fu,
                          const struct a_pool *p)
{
    size_t j, k;

    for (j = 0; j < p->nseen; j++)
        for (k = 0; k < p->seen[j]->ndev; k++) {
            struct a_dev *d = &p->seen[j]->devs[k];
            int r = rd->cls ? selectable(n, rd, d) : 0;
            free(n->error);
            n->error = NULL;
            if (r <= 0)
                continue;
            fu->skipped++;
            if (!fu->skipped_pool &&
                !(fu->skipped_pool = xprintf("%s/%s: %s", p->driver, p->name,
                                             p->incomplete ? "not all of its ResourceSlices are published"
                                             : p->why ? p->why : "invalid")))
                return -1;
        }
    return 0;
}

static int funnel(struct a_node *n, struct a_rd *rd, struct alloc_funnel *fu)
{
    const struct feat *f = &n->inv->f;
    size_t i, j, k;

    memset(fu, 0, sizeof(*fu));
    if (!(fu->request = xstrdup(rd->full)))
        return -1;
    fu->class_name = rd->class_name;
    fu->all = rd->all;
    fu->need = rd->all ? 0 : rd->count;
    for (i = 0; i < n->npools; i++) {
        struct a_pool *p = &n->pools[i];
        if (p->incomplete || p->invalid) {
            if (funnel_skipped(n, rd, fu, p))
                return -1;
            continue;
        }
        for (j = 0; j < p->ntgt; j++)
            for (k = 0; k < p->tgt[j]->ndev; k++) {
                struct a_dev *d = &p->tgt[j]->devs[k];
                const struct a_held *h = &n->inv->ids[d->id].held;
                const char *why;
                int r;
                if (d->slice->per_device &&
                    !node_matches(n->node, n->name, d->node_name, d->all_nodes, d->node_selector))
                    continue; /* another node's device */
                fu->on_node++;
                if (!rd->cls || !class_accepts(n, rd, d))
                    continue;
                fu->class_ok++;
                r = selectable(n, rd, d);
                free(n->error);
                n->error = NULL;
                if (r <= 0)
                    continue;
                fu->selected++;
                /* allocationMode All takes the devices whose capacity could serve it. */
                if (rd->all) {
                    r = !f->consumable || fits_capacity(n, rd, d, NULL, NULL, NULL) > 0;
                    free(n->error);
                    n->error = NULL;
                    if (!r) {
                        if (note(&fu->capacity, capacity_short(n, rd, d)))
                            return -1;
                        continue;
                    }
                    fu->need++;
                }
                if (!rd->admin && h->dedicated) {
                    char who[512];
                    size_t x;
                    snprintf(who, sizeof(who), "%s%s%s", h->holder_ns, *h->holder_ns ? "/" : "",
                             h->holder);
                    for (x = 0; x < fu->nheld && strcmp(fu->held_by[x], who); x++)
                        ;
                    if (x == fu->nheld && fu->nheld < 3 &&
                        !(fu->held_by[fu->nheld++] = xstrdup(who)))
                        return -1;
                    continue;
                }
                fu->free++;
                if (n->inv->var == V_EXPERIMENTAL && d->slice->skip_node_ops &&
                    (!f->nodeops || !declares(n->node, "DRAOptionalNodeOperations"))) {
                    fu->node_ops++;
                    continue;
                }
                if (f->taints && taint_blocks(d, rd)) {
                    const cJSON *t;
                    cJSON_ArrayForEach(t, d->taints) {
                        const char *e = jstr(t, "effect"), *key = jstr(t, "key"), *v = jstr(t, "value");
                        const cJSON *tol;
                        int ok = 0;
                        if (fu->taint || !e || (strcmp(e, "NoSchedule") && strcmp(e, "NoExecute")))
                            continue;
                        cJSON_ArrayForEach(tol, rd->tolerations)
                            if ((ok = fit_tolerates(tol, t)))
                                break;
                        if (!ok && !(fu->taint = xprintf("%s%s%s:%s", key ? key : "",
                                                         v && *v ? "=" : "", v ? v : "", e)))
                            return -1;
                    }
                    continue;
                }
                fu->tolerated++;
                if (d->ncons && !f->part) {
                    if (note(&fu->counter, "DRAPartitionableDevices is off"))
                        return -1;
                    continue;
                }
                if (d->ncons && (why = counter_short(n, p, d))) {
                    if (note(&fu->counter, why))
                        return -1;
                    continue;
                }
                fu->counters_ok++;
                if (f->consumable) {
                    r = fits_capacity(n, rd, d, h, NULL, NULL);
                    free(n->error);
                    n->error = NULL;
                    if (r <= 0) {
                        if (note(&fu->capacity, capacity_short(n, rd, d)))
                            return -1;
                        continue;
                    }
                }
                fu->capacity_ok++;
            }
    }
    return 0;
}

static void funnel_free(struct alloc_funnel *fu)
{
    size_t i;

    for (i = 0; i < fu->nheld; i++)
        free((char *)fu->held_by[i]);
    free((char *)fu->request);
    free(fu->taint);
    free(fu->counter);
    free(fu->capacity);
    free(fu->skipped_pool);
}

static int funnel_short(const struct alloc_funnel *fu)
{
    if (fu->all)
        return fu->need == 0 || (int64_t)fu->capacity_ok < fu->need;
    return (int64_t)fu->capacity_ok < fu->need;
}

/* Runs the search again with a probe's settings, within an eighth of the steps a node may
 * take; 1 fits, 0 not, -1 error (a probe that gives up says nothing). */
static int probe(struct a_node *n)
{
    int r;

    clean(n);
    n->steps = 0;
    n->max_steps = n->inv->opt.max_steps / 8 + 1;
    r = search(n);
    if (r < 0 && n->on_node)
        r = 0; /* invalid pools: it does not fit */
    clean(n);
    free(n->error);
    n->error = NULL;
    n->on_node = 0;
    return r;
}

static int explain_node(struct a_node *n, struct alloc_node *out)
{
    struct a_pod *pod = n->pod;
    struct alloc_why *w = &out->why;
    size_t t, j, k, i;

    if (out->verdict == ALLOC_ERROR && !n->on_node) {
        w->kind = ALLOC_WHY_ERROR;
        return 0;
    }
    for (i = 0; i < pod->nclaims; i++)
        if (pod->claims[i].allocated && (w->detail = unavailable(n, &pod->claims[i]))) {
            w->kind = ALLOC_WHY_UNAVAILABLE;
            w->claim = i;
            return 0;
        }
    /* A request the node cannot serve by itself. */
    for (t = 0; t < pod->ntodo; t++) {
        struct a_claim *c = &pod->claims[pod->todo[t]];
        for (j = 0; j < c->nreqs; j++) {
            struct a_req *r = &c->reqs[j];
            int ok = 0;
            if (!(w->alts = calloc(r->nrd, sizeof(*w->alts))))
                return -1;
            w->nalts = r->nrd;
            for (k = 0; k < r->nrd; k++) {
                if (funnel(n, &r->rd[k], &w->alts[k]))
                    return -1;
                ok |= !funnel_short(&w->alts[k]);
            }
            if (!ok) {
                w->kind = ALLOC_WHY_DEVICES;
                w->claim = pod->todo[t];
                return 0;
            }
            for (k = 0; k < w->nalts; k++)
                funnel_free(&w->alts[k]);
            free(w->alts);
            w->alts = NULL;
            w->nalts = 0;
        }
    }
    /* One claim alone: a constraint, or its requests together.  A probe that gives up says
     * nothing, and then neither does this. */
    for (t = 0; t < pod->ntodo; t++) {
        struct a_claim *c = &pod->claims[pod->todo[t]];
        int r;
        n->only = c;
        n->no_constraints = 0;
        n->skip_constraint = 0;
        if ((r = probe(n)) < 0)
            goto unknown;
        if (r == 1)
            continue;
        w->claim = pod->todo[t];
        r = 0;
        if (c->ncons) {
            n->no_constraints = 1;
            if ((r = probe(n)) < 0)
                goto unknown;
            n->no_constraints = 0;
        }
        if (r == 1) {
            w->kind = ALLOC_WHY_CONSTRAINT;
            for (k = 0; k < c->ncons; k++) {
                n->skip_constraint = k + 1;
                if (probe(n) == 1)
                    break;
            }
            /* The one whose removal lets the claim fit, else all of them together. */
            w->constraint = k < c->ncons ? xstrdup(c->cons[k].text)
                                         : xprintf("its %zu constraints together", c->ncons);
            if (!w->constraint)
                return -1;
        } else {
            w->kind = ALLOC_WHY_TOGETHER;
        }
        n->only = NULL;
        n->no_constraints = 0;
        n->skip_constraint = 0;
        return 0;
    }
    n->only = NULL;
    w->kind = pod->ntodo > 1 ? ALLOC_WHY_TOGETHER : ALLOC_WHY_NONE;
    w->claim = (size_t)-1;
    return 0;
unknown:
    n->only = NULL;
    n->no_constraints = 0;
    n->skip_constraint = 0;
    w->kind = ALLOC_WHY_NONE;
    w->claim = (size_t)-1;
    return 0;
}

/* ---- the pod on every node ------------------------------------------------------------ */


static int collect(struct a_node *n, struct alloc_node *out)
{
    size_t t, i, total = 0;

    for (t = 0; t < n->pod->ntodo; t++)
        total += n->nres[t];
    if (!total)
        return 0;
    if (!(out->picks = calloc(total, sizeof(*out->picks))))
        return -1;
    for (t = 0; t < n->pod->ntodo; t++)
        for (i = 0; i < n->nres[t]; i++) {
            const struct a_res *r = &n->res[t][i];
            struct alloc_pick *p = &out->picks[out->npicks++];
            p->claim = n->pod->todo[t];
            if (!(p->request = xstrdup(r->rd->full)))
                return -1;
            p->driver = r->d->slice->driver;
            p->pool = r->d->slice->pool;
            p->device = r->d->name;
            p->admin_access = r->admin;
            p->shared = r->shared;
        }
    return 0;
}

/* s as a text of res, the same pointer each time it comes with the same words: the last
 * few are looked at, which catches the runs of equal words nodes give.  NULL on ENOMEM. */
static const char *res_text(struct alloc_result *res, const char *s)
{
    size_t i, stop = res->ntexts > 8 ? res->ntexts - 8 : 0;
    char *t;

    if (res->reason && !strcmp(res->reason, s))
        return res->reason;
    for (i = res->ntexts; i > stop; i--)
        if (!strcmp(res->texts[i - 1], s))
            return res->texts[i - 1];
    if (res->ntexts == res->captexts) {
        size_t cap = res->captexts ? 2 * res->captexts : 8;
        char **v = realloc(res->texts, cap * sizeof(*v));
        if (!v)
            return NULL;
        res->texts = v;
        res->captexts = cap;
    }
    if (!(t = xstrdup(s)))
        return NULL;
    return res->texts[res->ntexts++] = t;
}

static int judge_node(struct a_node *n, struct alloc_result *res, struct alloc_node *out,
                      int explain)
{
    struct a_pod *pod = n->pod;
    int unusable = 0, r = 1;
    size_t i;

    for (i = 0; i < pod->nclaims; i++)
        if (pod->claims[i].allocated && unavailable(n, &pod->claims[i]))
            unusable = 1;
    if (pod->ntodo) {
        if (gather(n) || node_setup(n))
            fail(n, "out of memory");
        r = n->error ? -1 : search(n);
    }
    if (r < 0) {
        out->verdict = n->on_node ? ALLOC_UNSCHEDULABLE : ALLOC_ERROR;
        out->reason = res_text(res, n->error);
    } else if (!r) {
        out->verdict = ALLOC_UNSCHEDULABLE;
        out->reason = res_text(res, "cannot allocate all claims");
    } else if (unusable) {
        out->verdict = ALLOC_UNSCHEDULABLE;
        out->reason = res_text(res, "resourceclaim not available on the node");
        /* The plugin remembers the claims for PostFilter only here, once the allocator found
         * the others' devices on the node, and only on nodes the pod's own filters (which run
         * first) admitted. */
        for (i = 0; !out->pod_filter && i < pod->nclaims; i++)
            if (pod->claims[i].allocated && unavailable(n, &pod->claims[i]))
                pod->claims[i].unavailable_seen = 1;
    } else {
        out->verdict = ALLOC_FIT;
        if (collect(n, out))
            return -1;
    }
    if (out->verdict != ALLOC_FIT && !out->reason)
        return -1;
    if (explain && out->verdict != ALLOC_FIT) {
        if (pod->ntodo)
            clean(n);
        if (explain_node(n, out))
            return -1;
    }
    return 0;
}

/* The claim is reserved for no pod, or for this one only (PostFilter may deallocate it). */
static int reserved_for_none_but(const struct dra_claim *c, const struct dra_podspec *ps)
{
    const cJSON *rf = dd_json_arr(c->o.json, "status", "reservedFor", NULL);
    const char *uid = dd_json_str(ps->o.json, "metadata", "uid", NULL);

    if (jlen(rf) == 0)
        return 1;
    return jlen(rf) == 1 && uid && jstr(cJSON_GetArrayItem(rf, 0), "uid") &&
           !strcmp(jstr(cJSON_GetArrayItem(rf, 0), "uid"), uid);
}

enum dd_rc alloc_pod(const struct alloc_inventory *inv, const struct dra_podspec *ps,
                     int explain, struct alloc_result *out, struct dd_err *err)
{
    return alloc_pod_in(inv, inv->m, ps, explain, out, err);
}

const struct dra_model *alloc_inventory_model(const struct alloc_inventory *inv)
{
    return inv->m;
}

enum dd_rc alloc_pod_in(const struct alloc_inventory *inv, const struct dra_model *m,
                        const struct dra_podspec *ps, int explain, struct alloc_result *out,
                        struct dd_err *err)
{
    struct a_pod pod;
    struct a_node n;
    struct fit_pod fp;
    enum alloc_verdict pv = ALLOC_FIT;
    char *preason = NULL;
    size_t i, cap;
    int r, filter_error = 0;

    memset(out, 0, sizeof(*out));
    out->deallocate = -1;
    memset(&pod, 0, sizeof(pod));
    memset(&n, 0, sizeof(n));
    pod.inv = inv;
    pod.cm = m;
    pod.ps = ps;
    if ((r = prefilter(&pod, &pv, &preason)) < 0)
        goto oom;
    if (!(out->claims = calloc(pod.nclaims + 1, sizeof(*out->claims))))
        goto oom;
    for (i = 0; i < pod.nclaims; i++)
        out->claims[i] = pod.claims[i].mc;
    out->nclaims = pod.nclaims;
    out->verdict = pv;
    out->reason = preason;
    preason = NULL;
    /* first_fit grows the nodes as it judges them: a pod that fits on the first node
     * costs that node, not the cluster. */
    cap = inv->opt.first_fit ? 16 : inv->nnodes;
    if (!(out->nodes = calloc(cap + 1, sizeof(*out->nodes))) ||
        pod_tables(&pod))
        goto oom;
    n.inv = inv;
    n.pod = &pod;
    fit_pod_prepare(ps->spec, &fp);
    for (i = 0; i < inv->nnodes; i++) {
        struct alloc_node *o;
        char why[512];

        if (i == cap) {
            struct alloc_node *v = realloc(out->nodes, (2 * cap + 1) * sizeof(*v));
            if (!v)
                goto oom;
            memset(v + cap, 0, (cap + 1) * sizeof(*v));
            out->nodes = v;
            cap *= 2;
        }
        o = &out->nodes[out->nnodes++];
        o->node = inv->nodes[i];
        n.node = o->node->json;
        n.name = o->node->name;
        if (fit_pod_excluded_prepared(&fp, n.node, ps->replicas == -1, why, sizeof(why)) &&
            !(o->pod_filter = res_text(out, why)))
            goto oom;
        if (pv != ALLOC_FIT) {
            o->verdict = pv;
            o->reason = out->reason;
        } else {
            n.npools = 0;
            n.pools = NULL;
            n.steps = 0;
            n.max_steps = inv->opt.max_steps;
            n.on_node = 0;
            r = judge_node(&n, out, o, explain);
            if (pod.ntodo)
                clean(&n);
            free(n.error);
            n.error = NULL;
            arena_reset(&n.ar);
            if (r)
                goto oom;
        }
        if (o->pod_filter)
            continue;
        if (o->verdict == ALLOC_ERROR)
            filter_error = 1;
        else if (o->verdict == ALLOC_FIT)
            out->nfit++;
        /* first_fit: the first fit answers, and so does the first error (below). */
        if (inv->opt.first_fit && (filter_error || out->nfit))
            break;
    }
    /* A Filter error on any node the pod's own filters admit ends kube-scheduler's cycle with
     * that error (findNodesThatPassFilters): the pod is bound nowhere, however many nodes fit. */
    if (filter_error)
        out->nfit = 0;
    /* Fitting nowhere, the cycle ends in PostFilter, where DynamicResources deallocates one of
     * the pod's claims that was unavailable on a node and is reserved for no other pod (upstream
     * picks one at random; here the first in spec order), and the pod is tried again. */
    if (pv == ALLOC_FIT && !out->nfit && !filter_error)
        for (i = 0; i < pod.nclaims && out->deallocate < 0; i++)
            if (pod.claims[i].unavailable_seen && reserved_for_none_but(pod.claims[i].mc, ps))
                out->deallocate = (long)i;
    arena_free(&n.ar);
    pod_free(&pod);
    return DD_OK;
oom:
    free(preason);
    free(n.error);
    arena_free(&n.ar);
    pod_free(&pod);
    alloc_result_release(out);
    return dd_failf(err, DD_ENOMEM, "out of memory while allocating devices");
}

static void why_free(struct alloc_why *w)
{
    size_t i;

    for (i = 0; i < w->nalts; i++)
        funnel_free(&w->alts[i]);
    free(w->alts);
    free(w->constraint);
    memset(w, 0, sizeof(*w));
}

void alloc_result_release(struct alloc_result *r)
{
    size_t i, j;

    if (!r)
        return;
    for (i = 0; i < r->nnodes; i++) {
        struct alloc_node *n = &r->nodes[i];
        for (j = 0; j < n->npicks; j++)
            free(n->picks[j].request);
        free(n->picks);
        why_free(&n->why);
    }
    free(r->nodes);
    free((void *)r->claims);
    free(r->reason);
    for (i = 0; i < r->ntexts; i++)
        free(r->texts[i]);
    free(r->texts);
    memset(r, 0, sizeof(*r));
}

/* ---- words ------------------------------------------------------------------------------ */

struct text {
    char *buf;
    size_t size, len;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(t->len < t->size ? t->buf + t->len : NULL, t->len < t->size ? t->size - t->len : 0,
                  fmt, ap);
    va_end(ap);
    if (k > 0)
        t->len += (size_t)k;
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

/* The steps of the funnel where devices were lost, then what is left. */
static void put_funnel(struct text *t, const struct alloc_funnel *f)
{
    size_t i, lost_capacity = f->all ? f->selected - (size_t)f->need : 0;

    if (f->all)
        put(t, "asks for all devices of class %s", f->class_name ? f->class_name : "?");
    else
        put(t, "asks for %lld device%s of class %s", (long long)f->need,
            plural((size_t)f->need), f->class_name ? f->class_name : "?");
    put(t, ": the node has %zu device%s", f->on_node, plural(f->on_node));
    if (f->on_node && f->class_ok < f->on_node)
        put(t, ", %zu accepted by the class", f->class_ok);
    if (f->selected < f->class_ok)
        put(t, ", %zu matching the request's selectors", f->selected);
    if (lost_capacity)
        put(t, ", %zu without the capacity it asks for (%s)", lost_capacity,
            f->capacity ? f->capacity : "capacity");
    if (f->free + lost_capacity < f->selected) {
        put(t, ", %zu held by ", f->selected - lost_capacity - f->free);
        for (i = 0; i < f->nheld; i++)
            put(t, "%sclaim %s", i ? (i + 1 == f->nheld ? " and " : ", ") : "", f->held_by[i]);
        if (!f->nheld)
            put(t, "other claims");
    }
    if (f->node_ops)
        put(t, ", %zu in slices that skip node operations, which the node does not declare "
            "optional (DRAOptionalNodeOperations)", f->node_ops);
    if (f->tolerated + f->node_ops < f->free)
        put(t, ", %zu with a taint the request does not tolerate (%s)",
            f->free - f->node_ops - f->tolerated, f->taint ? f->taint : "?");
    if (f->counters_ok < f->tolerated)
        put(t, ", %zu that cannot get their shared counters (%s)", f->tolerated - f->counters_ok,
            f->counter ? f->counter : "counters");
    if (f->capacity_ok < f->counters_ok)
        put(t, ", %zu without the capacity it asks for (%s)", f->counters_ok - f->capacity_ok,
            f->capacity ? f->capacity : "capacity");
    if (f->skipped)
        put(t, "; %zu more in resource pool %s, which the scheduler skips", f->skipped,
            f->skipped_pool ? f->skipped_pool : "?");
    if (f->all && f->need == 0)
        put(t, "; allocationMode All needs at least one");
    else if (f->all)
        put(t, "; allocationMode All needs every one of the %lld, %zu usable", (long long)f->need,
            f->capacity_ok);
    else
        put(t, "; %zu usable", f->capacity_ok);
}

size_t alloc_why_text(const struct alloc_result *r, const struct alloc_node *n, char *buf,
                      size_t size)
{
    struct text t = {buf, size, 0};
    const struct alloc_why *w = &n->why;
    const char *claim = w->claim < r->nclaims ? r->claims[w->claim]->o.name : NULL;
    size_t i;

    if (size)
        buf[0] = '\0';
    switch (w->kind) {
    case ALLOC_WHY_DEVICES:
        if (w->nalts == 1) {
            put(&t, "claim %s, request %s ", claim, w->alts[0].request);
            put_funnel(&t, &w->alts[0]);
        } else {
            put(&t, "claim %s: none of the %zu alternatives of request %.*s fits", claim,
                w->nalts, (int)strcspn(w->alts[0].request, "/"), w->alts[0].request);
            for (i = 0; i < w->nalts; i++) {
                put(&t, "; %s ", w->alts[i].request);
                put_funnel(&t, &w->alts[i]);
            }
        }
        break;
    case ALLOC_WHY_CONSTRAINT:
        put(&t, "claim %s: each request has enough devices, but no set of them satisfies %s",
            claim, w->constraint);
        break;
    case ALLOC_WHY_TOGETHER:
        if (claim)
            put(&t, "claim %s: each of its requests has enough devices, but not all of them "
                "together (they compete for the same devices, counters or capacity)", claim);
        else
            put(&t, "each of the pod's claims fits alone, but not all of them together (they "
                "compete for the same devices, counters or capacity)");
        break;
    case ALLOC_WHY_UNAVAILABLE:
        put(&t, "claim %s is already allocated and cannot be used on the node: %s", claim,
            w->detail);
        break;
    default:
        if (n->pod_filter && n->verdict == ALLOC_FIT)
            put(&t, "%s", n->pod_filter);
        else
            put(&t, "%s", n->reason ? n->reason : "it fits");
        break;
    }
    return t.len;
}
