/*
 * cel_eval.c - tree-walking evaluator with CEL's error-as-value semantics.
 *
 * Every value built during a call lives in the call's scratch arena, which is
 * freed when cel_eval_device returns; the program is only read, so one
 * program may be evaluated by many threads at once.  Each node evaluated
 * costs one unit, string and list work costs one unit per element, and the
 * scratch arena has a hard cap, so a hostile expression can neither loop
 * long nor allocate without bound.
 */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

const char *cel__vkind_name(enum cel__vkind k)
{
    switch (k) {
    case CEL_V_NULL: return "null_type";
    case CEL_V_BOOL: return "bool";
    case CEL_V_INT: return "int";
    case CEL_V_UINT: return "uint";
    case CEL_V_DOUBLE: return "double";
    case CEL_V_STRING: return "string";
    case CEL_V_BYTES: return "bytes";
    case CEL_V_LIST: return "list";
    case CEL_V_MAP: return "map";
    case CEL_V_TYPE: return "type";
    case CEL_V_SEMVER: return "kubernetes.Semver";
    case CEL_V_QUANTITY: return "kubernetes.Quantity";
    case CEL_V_TIMESTAMP: return "google.protobuf.Timestamp";
    case CEL_V_DURATION: return "google.protobuf.Duration";
    case CEL_V_OPTIONAL: return "optional_type";
    case CEL_V_IP: return "net.IP";
    case CEL_V_CIDR: return "net.CIDR";
    case CEL_V_URL: return "kubernetes.URL";
    case CEL_V_FORMAT: return "kubernetes.NamedFormat";
    case CEL_V_ERROR: return "error";
    }
    return "?";
}

struct cel__val cel__abort_val(struct cel__ctx *c)
{
    struct cel__val v = {.kind = CEL_V_ERROR};

    v.v.err = c->panic ? c->panic
              : c->abort_rc == DD_ENOMEM ? "operation cancelled: memory limit exceeded"
                                         : "operation cancelled: actual cost limit exceeded";
    return v;
}

struct cel__val cel__panic(struct cel__ctx *c, const char *fmt, ...)
{
    char buf[512];
    va_list ap;

    if (c->aborted)
        return cel__abort_val(c);
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    c->aborted = 1;
    c->abort_rc = DD_ETYPE;
    if (!(c->panic = cel__strndup(&c->scratch, buf, strlen(buf))))
        c->abort_rc = DD_ENOMEM;
    return cel__abort_val(c);
}

struct cel__val cel__err(struct cel__ctx *c, const char *fmt, ...)
{
    struct cel__val v = {.kind = CEL_V_ERROR};
    char buf[512];
    va_list ap;

    if (c->aborted)
        return cel__abort_val(c);
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    v.v.err = cel__strndup(&c->scratch, buf, strlen(buf));
    if (!v.v.err) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    return v;
}

int cel__charge(struct cel__ctx *c, uint64_t n)
{
    if (c->aborted)
        return -1;
    if (n > c->max_cost || c->cost > c->max_cost - n) {
        c->aborted = 1;
        c->abort_rc = DD_ETOOBIG;
        return -1;
    }
    c->cost += n;
    return 0;
}

static struct cel__val mk_bool(int b)
{
    struct cel__val v = {.kind = CEL_V_BOOL};
    v.v.b = b != 0;
    return v;
}

static struct cel__val mk_int(int64_t i)
{
    struct cel__val v = {.kind = CEL_V_INT};
    v.v.i = i;
    return v;
}

static struct cel__val mk_uint(uint64_t u)
{
    struct cel__val v = {.kind = CEL_V_UINT};
    v.v.u = u;
    return v;
}

static struct cel__val mk_double(double d)
{
    struct cel__val v = {.kind = CEL_V_DOUBLE};
    v.v.d = d;
    return v;
}

static struct cel__val mk_str(enum cel__vkind k, const char *s, size_t n)
{
    struct cel__val v = {.kind = k};
    v.v.str.s = s;
    v.v.str.n = n;
    return v;
}

static struct cel__val oom(struct cel__ctx *c)
{
    c->aborted = 1;
    c->abort_rc = DD_ENOMEM;
    return cel__abort_val(c);
}

static struct cel__val no_overload(struct cel__ctx *c, const char *fn, const struct cel__val *a,
                                   const struct cel__val *b)
{
    if (b)
        return cel__err(c, "no such overload: %s(%s, %s)", fn, cel__vkind_name(a->kind),
                        cel__vkind_name(b->kind));
    return cel__err(c, "no such overload: %s(%s)", fn, cel__vkind_name(a->kind));
}

/* ---- Comparison -------------------------------------------------------------- */

/* Orders two numbers of possibly different kinds; 2 when unordered (NaN). */
static int num_cmp(const struct cel__val *a, const struct cel__val *b)
{
    if (a->kind == CEL_V_DOUBLE || b->kind == CEL_V_DOUBLE) {
        double x, y;
        if (a->kind == CEL_V_DOUBLE && b->kind == CEL_V_DOUBLE) {
            x = a->v.d;
            y = b->v.d;
        } else {
            /* int/uint vs double: compare in double unless the double is
             * outside the 64-bit range, where the answer is known. */
            const struct cel__val *iv = a->kind == CEL_V_DOUBLE ? b : a;
            double d = a->kind == CEL_V_DOUBLE ? a->v.d : b->v.d;
            int sign = a->kind == CEL_V_DOUBLE ? -1 : 1;
            if (isnan(d))
                return 2;
            /* cel-go's compareDoubleUint/compareDoubleInt: known only beyond the bound
             * (math.MaxUint64 as a double is 2^64 itself), else in double. */
            if (d > 18446744073709551616.0)
                return -sign;
            if (d < -9223372036854775808.0)
                return sign;
            x = iv->kind == CEL_V_INT ? (double)iv->v.i : (double)iv->v.u;
            if (sign < 0) {
                y = x;
                x = d;
            } else {
                y = d;
            }
        }
        if (isnan(x) || isnan(y))
            return 2;
        return x < y ? -1 : x > y;
    }
    if (a->kind == CEL_V_INT && b->kind == CEL_V_INT)
        return a->v.i < b->v.i ? -1 : a->v.i > b->v.i;
    if (a->kind == CEL_V_UINT && b->kind == CEL_V_UINT)
        return a->v.u < b->v.u ? -1 : a->v.u > b->v.u;
    if (a->kind == CEL_V_INT)
        return a->v.i < 0 ? -1 : ((uint64_t)a->v.i < b->v.u ? -1 : (uint64_t)a->v.i > b->v.u);
    return b->v.i < 0 ? 1 : (a->v.u < (uint64_t)b->v.i ? -1 : a->v.u > (uint64_t)b->v.i);
}

static int is_num(enum cel__vkind k)
{
    return k == CEL_V_INT || k == CEL_V_UINT || k == CEL_V_DOUBLE;
}

static int bytes_cmp(const struct cel__val *a, const struct cel__val *b)
{
    size_t n = a->v.str.n < b->v.str.n ? a->v.str.n : b->v.str.n;
    int r = n ? memcmp(a->v.str.s, b->v.str.s, n) : 0;

    if (r)
        return r < 0 ? -1 : 1;
    return a->v.str.n < b->v.str.n ? -1 : a->v.str.n > b->v.str.n;
}

/* The position of key k in m (m->n: absent).  cel-go's Go map (a literal's) is looked up by
 * the key itself, then a double key as the int or uint it equals, an int as uint and a uint as
 * int: never an int or uint as a double. */
static size_t map_find(const struct cel__map *m, const struct cel__val *k)
{
    int no_double = m->go_keyed && (k->kind == CEL_V_INT || k->kind == CEL_V_UINT);
    /* ... and a double only as the int or uint it converts to without loss. */
    int lossless = k->kind != CEL_V_DOUBLE ||
                   (k->v.d == floor(k->v.d) && k->v.d >= -9223372036854775808.0 &&
                    k->v.d < 18446744073709551616.0);
    size_t i;

    for (i = 0; i < m->n; i++) {
        enum cel__vkind sk = m->keys[i].kind;
        if (m->go_keyed && k->kind == CEL_V_DOUBLE && sk != CEL_V_DOUBLE &&
            (!lossless || (sk == CEL_V_INT && k->v.d >= 9223372036854775808.0) ||
             (sk == CEL_V_UINT && k->v.d < 0)))
            continue;
        if (!(no_double && sk == CEL_V_DOUBLE) && cel__val_equal(&m->keys[i], k) == 1)
            break;
    }
    return i;
}

int cel__val_equal(const struct cel__val *a, const struct cel__val *b)
{
    if (is_num(a->kind) && is_num(b->kind))
        return num_cmp(a, b) == 0;
    if (a->kind == CEL_V_NULL || b->kind == CEL_V_NULL)
        return a->kind == b->kind; /* types.Equal: null first */
    if (a->kind != b->kind) {
        /* Heterogeneous equality is false, except that Kubernetes' own types
         * (apiservercel.Quantity.Equal and friends) refuse a different type on the
         * right: no such overload. */
        switch (a->kind) {
        case CEL_V_SEMVER: case CEL_V_QUANTITY: case CEL_V_IP: case CEL_V_CIDR:
        case CEL_V_URL: case CEL_V_FORMAT:
            return -1;
        default:
            return 0;
        }
    }
    switch (a->kind) {
    case CEL_V_NULL: return 1;
    case CEL_V_BOOL: return a->v.b == b->v.b;
    case CEL_V_STRING:
    case CEL_V_BYTES: return bytes_cmp(a, b) == 0;
    case CEL_V_TYPE: return strcmp(a->v.tname, b->v.tname) == 0;
    case CEL_V_TIMESTAMP: return a->v.ts.sec == b->v.ts.sec && a->v.ts.nsec == b->v.ts.nsec;
    case CEL_V_DURATION: return a->v.dur == b->v.dur;
    case CEL_V_OPTIONAL:
        if (!a->v.opt || !b->v.opt)
            return !a->v.opt && !b->v.opt;
        return cel__val_equal(a->v.opt, b->v.opt) == 1;
    case CEL_V_IP: return memcmp(a->v.ip, b->v.ip, sizeof(*a->v.ip)) == 0;
    case CEL_V_CIDR: return memcmp(a->v.cidr, b->v.cidr, sizeof(*a->v.cidr)) == 0;
    case CEL_V_URL: return strcmp(a->v.url->text, b->v.url->text) == 0;
    case CEL_V_FORMAT: return a->v.fmt == b->v.fmt;
    case CEL_V_SEMVER: return cel__semver_cmp(a->v.sv, b->v.sv) == 0;
    case CEL_V_QUANTITY: return a->v.q == b->v.q;
    case CEL_V_LIST:
        if (a->v.list->n != b->v.list->n)
            return 0;
        /* cel-go's baseList.Equal: only a false element makes them differ; an element
         * whose comparison is an error counts as equal. */
        for (size_t i = 0; i < a->v.list->n; i++)
            if (cel__val_equal(&a->v.list->items[i], &b->v.list->items[i]) == 0)
                return 0;
        return 1;
    case CEL_V_MAP:
        if (a->v.map->n != b->v.map->n)
            return 0;
        for (size_t i = 0; i < a->v.map->n; i++) {
            size_t j;
            /* baseMap.Equal: each key of a found by b.Find. */
            if ((j = map_find(b->v.map, &a->v.map->keys[i])) == b->v.map->n)
                return 0;
            if (cel__val_equal(&a->v.map->vals[i], &b->v.map->vals[j]) == 0)
                return 0; /* baseMap.Equal, likewise */
        }
        return 1;
    default: return -1;
    }
}

int cel__val_compare(const struct cel__val *a, const struct cel__val *b)
{
    if (is_num(a->kind) && is_num(b->kind))
        return num_cmp(a, b);
    if (a->kind != b->kind)
        return -2;
    switch (a->kind) {
    case CEL_V_BOOL: return a->v.b - b->v.b;
    case CEL_V_STRING:
    case CEL_V_BYTES: return bytes_cmp(a, b);
    case CEL_V_TIMESTAMP:
        if (a->v.ts.sec != b->v.ts.sec)
            return a->v.ts.sec < b->v.ts.sec ? -1 : 1;
        return a->v.ts.nsec < b->v.ts.nsec ? -1 : a->v.ts.nsec > b->v.ts.nsec;
    case CEL_V_DURATION: return a->v.dur < b->v.dur ? -1 : a->v.dur > b->v.dur;
    default: return -2;
    }
}

/* ---- Device materialisation -------------------------------------------------- */

static struct cel__map *map_new(struct cel__ctx *c, size_t cap)
{
    struct cel__map *m = cel__alloc(&c->scratch, sizeof(*m));

    if (!m)
        return NULL;
    if (cap) {
        m->keys = cel__alloc(&c->scratch, cap * sizeof(*m->keys));
        m->vals = cel__alloc(&c->scratch, cap * sizeof(*m->vals));
        if (!m->keys || !m->vals)
            return NULL;
    }
    return m;
}

static struct cel__val *map_find_str(const struct cel__map *m, const char *k, size_t n)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->keys[i].kind == CEL_V_STRING && m->keys[i].v.str.n == n &&
            memcmp(m->keys[i].v.str.s, k, n) == 0)
            return &m->vals[i];
    return NULL;
}

/* Adds key → value unless the key exists; the first definition wins. */
static void map_put_str(struct cel__map *m, const char *k, struct cel__val v)
{
    if (map_find_str(m, k, strlen(k)))
        return;
    m->keys[m->n] = mk_str(CEL_V_STRING, k, strlen(k));
    m->vals[m->n] = v;
    m->n++;
}

/* The per-domain inner map for domain dom in outer, created on demand. */
static size_t domain_count(const struct cel_device *dev, int capacity, const char *dom);

static struct cel__map *domain_map(struct cel__ctx *c, struct cel__map *outer, const char *dom,
                                   const struct cel_device *dev, int capacity)
{
    struct cel__val *v = map_find_str(outer, dom, strlen(dom));
    struct cel__map *m;

    if (v)
        return v->v.map;
    if (!(m = map_new(c, domain_count(dev, capacity, dom))))
        return NULL;
    outer->keys[outer->n] = mk_str(CEL_V_STRING, dom, strlen(dom));
    outer->vals[outer->n].kind = CEL_V_MAP;
    outer->vals[outer->n].v.map = m;
    outer->n++;
    return m;
}

static struct cel__val version_value(struct cel__ctx *c, const char *s)
{
    struct cel__semver *sv = cel__alloc(&c->scratch, sizeof(*sv));
    struct cel__val v = {.kind = CEL_V_SEMVER};
    const char *why = "";

    if (!sv)
        return oom(c);
    s = s ? s : "";
    if (cel__semver_parse(&c->scratch, s, strlen(s), 0, sv, &why) != 0)
        return cel__err(c, "parse semantic version: %s", why);
    v.v.sv = sv;
    return v;
}

/* The value of one attribute, or an error that fails the whole device (DeviceMatches
 * converts every attribute before it evaluates anything). */
static struct cel__val attr_value(struct cel__ctx *c, const struct cel_attr *a, int lists)
{
    struct cel__val v = {.kind = CEL_V_LIST};
    struct cel__list *l;

    switch (a->kind) {
    case CEL_ATTR_INT: return mk_int(a->i);
    case CEL_ATTR_BOOL: return mk_bool(a->b);
    case CEL_ATTR_STRING: {
        const char *s = a->s ? a->s : "";
        return mk_str(CEL_V_STRING, s, strlen(s));
    }
    case CEL_ATTR_VERSION: return version_value(c, a->s);
    case CEL_ATTR_INTS: case CEL_ATTR_BOOLS: case CEL_ATTR_STRINGS: case CEL_ATTR_VERSIONS:
        if (!lists)
            break;
        if (!(l = cel__alloc(&c->scratch, sizeof(*l))) ||
            (a->nv && !(l->items = cel__alloc(&c->scratch, a->nv * sizeof(*l->items)))))
            return oom(c);
        for (size_t i = 0; i < a->nv; i++) {
            struct cel__val x;
            if (a->kind == CEL_ATTR_INTS)
                x = mk_int(a->iv[i]);
            else if (a->kind == CEL_ATTR_BOOLS)
                x = mk_bool(a->bv[i]);
            else if (a->kind == CEL_ATTR_STRINGS)
                x = mk_str(CEL_V_STRING, a->sv[i] ? a->sv[i] : "", a->sv[i] ? strlen(a->sv[i]) : 0);
            else if ((x = version_value(c, a->sv[i])).kind == CEL_V_ERROR)
                return x;
            l->items[l->n++] = x;
        }
        v.v.list = l;
        return v;
    case CEL_ATTR_NONE: break;
    }
    return cel__err(c, "unsupported attribute value");
}

static int is_list_attr(enum cel_attr_kind k)
{
    return k == CEL_ATTR_INTS || k == CEL_ATTR_BOOLS || k == CEL_ATTR_STRINGS ||
           k == CEL_ATTR_VERSIONS;
}

/* "attribute DOMAIN/NAME: what", in the scratch arena (NULL out of memory). */
static const char *attr_error(struct cel__ctx *c, const struct cel_attr *a, const char *what)
{
    char buf[512];

    snprintf(buf, sizeof(buf), "attribute %s%s%s: %s", a->domain ? a->domain : "",
             a->domain ? "/" : "", a->name, what);
    return cel__strndup(&c->scratch, buf, strlen(buf));
}

/* Attributes (or capacities) of dev in domain dom: each domain's map is allocated at its
 * size (a model keeps its devices' values for the whole snapshot). */
static size_t domain_count(const struct cel_device *dev, int capacity, const char *dom)
{
    const char *drv = dev->driver ? dev->driver : "";
    size_t n = 0;

    for (size_t i = 0; !capacity && i < dev->nattrs; i++)
        n += !strcmp(dev->attrs[i].domain ? dev->attrs[i].domain : drv, dom);
    for (size_t i = 0; capacity && i < dev->ncaps; i++)
        n += !strcmp(dev->caps[i].domain ? dev->caps[i].domain : drv, dom);
    return n;
}

/* The distinct domains of dev's attributes (or capacities): the size of the map of maps. */
static size_t domain_total(const struct cel_device *dev, int capacity)
{
    const char *drv = dev->driver ? dev->driver : "";
    size_t n = capacity ? dev->ncaps : dev->nattrs, total = 0, i, j;

    for (i = 0; i < n; i++) {
        const char *d = capacity ? dev->caps[i].domain : dev->attrs[i].domain;
        for (j = 0; j < i; j++) {
            const char *e = capacity ? dev->caps[j].domain : dev->attrs[j].domain;
            if (!strcmp(e ? e : drv, d ? d : drv))
                break;
        }
        total += j == i;
    }
    return total;
}

/* The keys of every device map, in the order cel-go's device type lists its fields; held
 * once for all (a built device is never changed). */
static struct cel__val device_keys[] = {
    {.kind = CEL_V_STRING, .v.str = {"driver", 6}},
    {.kind = CEL_V_STRING, .v.str = {"attributes", 10}},
    {.kind = CEL_V_STRING, .v.str = {"capacity", 8}},
    {.kind = CEL_V_STRING, .v.str = {"allowMultipleAllocations", 24}},
};

/* device.attributes or device.capacity of a device that has none: every domain is empty. */
static struct cel__map no_domains = {.missing_is_empty = 1};

/* A device's map of domains, with room for the n it has. */
static struct cel__map *domains_new(struct cel__ctx *c, size_t n)
{
    struct cel__map *m;

    if (!n)
        return &no_domains; /* shared by every thread: never written */
    if ((m = map_new(c, n)))
        m->missing_is_empty = 1;
    return m;
}

/*
 * 0, -1 out of memory, or -2 with *why: an attribute no selector can be evaluated with.
 * *first_list (when not NULL) is set to the index of the first list-valued attribute, or
 * dev->nattrs: without DRAListTypeAttributes that one fails the device.
 */
static int build_device(struct cel__ctx *c, const struct cel_device *dev, int lists,
                        const char **why, size_t *first_list)
{
    const char *drv = dev->driver ? dev->driver : "";
    struct cel__map *d = map_new(c, 0), *attrs = domains_new(c, domain_total(dev, 0)),
                    *caps = domains_new(c, domain_total(dev, 1));
    struct cel__val *vals = cel__alloc(&c->scratch, sizeof(device_keys));

    if (first_list)
        *first_list = dev->nattrs;
    if (!d || !attrs || !caps || !vals)
        return -1;
    for (size_t i = 0; i < dev->nattrs; i++) {
        const struct cel_attr *a = &dev->attrs[i];
        const char *dom = a->domain ? a->domain : drv;
        struct cel__map *m = domain_map(c, attrs, dom, dev, 0);
        struct cel__val v;
        if (!m)
            return -1;
        if (!a->name)
            continue;
        if (first_list && *first_list == dev->nattrs && is_list_attr(a->kind))
            *first_list = i;
        v = attr_value(c, a, lists);
        if (v.kind == CEL_V_ERROR) {
            *why = attr_error(c, a, v.v.err);
            return *why ? -2 : -1;
        }
        map_put_str(m, a->name, v);
    }
    for (size_t i = 0; i < dev->ncaps; i++) {
        const struct cel_capacity *q = &dev->caps[i];
        const char *dom = q->domain ? q->domain : drv;
        struct cel__map *m = domain_map(c, caps, dom, dev, 1);
        struct cel__val v = {.kind = CEL_V_QUANTITY};
        const char *txt = q->quantity ? q->quantity : "";
        if (!m)
            return -1;
        if (!q->name)
            continue;
        int dec;
        if (cel__quantity_parse_rep(txt, strlen(txt), &v.v.q, &v.qscale, &dec) != 0)
            v = cel__err(c, "capacity %s: unable to parse quantity's suffix", q->name);
        else
            v.qdec = (unsigned char)dec;
        map_put_str(m, q->name, v);
    }
    vals[0] = mk_str(CEL_V_STRING, drv, strlen(drv));
    vals[1] = vals[2] = (struct cel__val){.kind = CEL_V_MAP};
    vals[1].v.map = attrs;
    vals[2].v.map = caps;
    vals[3] = mk_bool(dev->allow_multiple_allocations);
    d->keys = device_keys;
    d->vals = vals;
    d->n = sizeof(device_keys) / sizeof(device_keys[0]);
    c->device.kind = CEL_V_MAP;
    c->device.v.map = d;
    return 0;
}

/* ---- Evaluation ----------------------------------------------------------------- */

static struct cel__val eval(struct cel__ctx *c, const struct cel__node *n);

static void key_text(const struct cel__val *k, char *buf, size_t n)
{
    switch (k->kind) {
    case CEL_V_STRING: snprintf(buf, n, "%.*s", (int)(k->v.str.n > 200 ? 200 : k->v.str.n),
                                k->v.str.s); break;
    case CEL_V_INT: snprintf(buf, n, "%" PRId64, k->v.i); break;
    case CEL_V_UINT: snprintf(buf, n, "%" PRIu64, k->v.u); break;
    case CEL_V_BOOL: snprintf(buf, n, "%s", k->v.b ? "true" : "false"); break;
    case CEL_V_DOUBLE: snprintf(buf, n, "%g", k->v.d); break;
    default: snprintf(buf, n, "%s", cel__vkind_name(k->kind)); break;
    }
}

static struct cel__val empty_map(struct cel__ctx *c)
{
    struct cel__val v = {.kind = CEL_V_MAP};

    v.v.map = map_new(c, 0);
    return v.v.map ? v : oom(c);
}

static const char *unhashable(const struct cel__val *v);

/* `x in m`: looking a value Go cannot hash up in a non-empty Go map panics in cel-go (and
 * kube-apiserver or kube-scheduler reports the recovered panic); NULL when it would not.
 * (An index never gets that far: such a key is no qualifier.) */
static const char *lookup_panics(const struct cel__map *m, const struct cel__val *k)
{
    return m->go_keyed && m->n ? unhashable(k) : NULL;
}

static const struct cel__val *map_lookup(const struct cel__map *m, const struct cel__val *k)
{
    size_t i = map_find(m, k);

    return i < m->n ? &m->vals[i] : NULL;
}

static struct cel__val index_map(struct cel__ctx *c, const struct cel__map *m,
                                 const struct cel__val *k)
{
    const struct cel__val *v = map_lookup(m, k);
    char kt[256];

    if (v)
        return *v;
    if (m->missing_is_empty)
        return empty_map(c);
    key_text(k, kt, sizeof(kt));
    return cel__err(c, "no such key: %s", kt);
}

static struct cel__val eval_select(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val t = eval(c, n->kid[0]);
    struct cel__val k = mk_str(CEL_V_STRING, n->name, strlen(n->name));
    const struct cel__val *v;
    int opt = n->optional;

    if (t.kind == CEL_V_ERROR)
        return t;
    if (t.kind == CEL_V_OPTIONAL) {
        /* Selecting on an optional is optional: none stays none (and has() of it is
         * false). */
        if (!t.v.opt)
            return n->test_only ? mk_bool(0) : t;
        t = *t.v.opt;
        opt = 1;
    }
    /* cel-go qualifies a presence test through any value: what has no fields lacks this one;
     * and an optional selection on such a value is optional.none().  A list is indexed, and
     * a field name is no index. */
    if (t.kind == CEL_V_LIST && (n->test_only || opt))
        return cel__err(c, "unsupported index type 'string' in list");
    if (t.kind != CEL_V_MAP && n->test_only)
        return mk_bool(0);
    if (t.kind != CEL_V_MAP && opt)
        return cel__optional(c, NULL);
    if (t.kind != CEL_V_MAP)
        return cel__err(c, "type '%s' does not support field selection",
                        cel__vkind_name(t.kind));
    if (n->test_only)
        return mk_bool(map_lookup(t.v.map, &k) != NULL || t.v.map->missing_is_empty);
    if (opt) {
        v = map_lookup(t.v.map, &k);
        if (!v && t.v.map->missing_is_empty) {
            struct cel__val e = empty_map(c);
            return cel__optional(c, &e);
        }
        return cel__optional(c, v);
    }
    return index_map(c, t.v.map, &k);
}

static struct cel__val eval_index(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val t = eval(c, n->kid[0]), k;
    int opt = n->optional;

    if (t.kind == CEL_V_ERROR)
        return t;
    k = eval(c, n->kid[1]);
    if (k.kind == CEL_V_ERROR)
        return k;
    /* cel-go makes a qualifier of the key's value, and only strings, integers, bools and
     * doubles make one (a constant key is checked when the program is planned: cel__fold). */
    if (k.kind != CEL_V_STRING && k.kind != CEL_V_INT && k.kind != CEL_V_UINT &&
        k.kind != CEL_V_BOOL && k.kind != CEL_V_DOUBLE)
        return cel__err(c, "invalid qualifier type: %s", cel__vkind_name(k.kind));
    if (t.kind == CEL_V_OPTIONAL) {
        if (!t.v.opt)
            return t;
        t = *t.v.opt;
        opt = 1;
    }
    if (opt) {
        struct cel__val r;
        if (t.kind == CEL_V_MAP) {
            const struct cel__val *v = map_lookup(t.v.map, &k);
            if (!v && t.v.map->missing_is_empty) {
                r = empty_map(c);
                return cel__optional(c, &r);
            }
            return cel__optional(c, v);
        }
        if (t.kind == CEL_V_LIST) {
            int64_t i;
            if (k.kind == CEL_V_INT)
                i = k.v.i;
            else if (k.kind == CEL_V_UINT && k.v.u <= INT64_MAX)
                i = (int64_t)k.v.u;
            else if (k.kind == CEL_V_DOUBLE && k.v.d == floor(k.v.d) && fabs(k.v.d) < 9e18)
                i = (int64_t)k.v.d;
            else
                return no_overload(c, "_[?_]", &t, &k);
            return cel__optional(c, i >= 0 && (uint64_t)i < t.v.list->n ? &t.v.list->items[i]
                                                                       : NULL);
        }
        /* cel-go qualifies optionally through any other value, which holds nothing. */
        return cel__optional(c, NULL);
    }
    if (t.kind == CEL_V_MAP)
        return index_map(c, t.v.map, &k);
    if (t.kind == CEL_V_LIST) {
        int64_t i;
        if (k.kind == CEL_V_INT) {
            i = k.v.i;
        } else if (k.kind == CEL_V_UINT) {
            i = k.v.u > INT64_MAX ? -1 : (int64_t)k.v.u;
        } else if (k.kind == CEL_V_DOUBLE && k.v.d == floor(k.v.d) && k.v.d >= -1e18 &&
                   k.v.d <= 1e18) {
            i = (int64_t)k.v.d;
        } else {
            return no_overload(c, "_[_]", &t, &k);
        }
        if (i < 0 || (uint64_t)i >= t.v.list->n)
            return cel__err(c, "index out of range: %" PRId64, i);
        return t.v.list->items[i];
    }
    return no_overload(c, "_[_]", &t, &k);
}

/* `&&` and `||` with CEL's commutative error absorption. */
static struct cel__val eval_logic(struct cel__ctx *c, const struct cel__node *n)
{
    int is_and = n->op == CEL_OP_AND;
    struct cel__val l = eval(c, n->kid[0]), r;

    if (c->aborted)
        return cel__abort_val(c);
    if (l.kind == CEL_V_BOOL && l.v.b != is_and)
        return l; /* false && _ , true || _ */
    r = eval(c, n->kid[1]);
    if (c->aborted)
        return cel__abort_val(c);
    if (r.kind == CEL_V_BOOL && r.v.b != is_and)
        return r;
    if (l.kind == CEL_V_ERROR)
        return l;
    if (l.kind != CEL_V_BOOL)
        return no_overload(c, cel__op_name(n->op), &l, &r);
    if (r.kind == CEL_V_ERROR)
        return r;
    if (r.kind != CEL_V_BOOL)
        return no_overload(c, cel__op_name(n->op), &l, &r);
    return r;
}

static struct cel__val overflow(struct cel__ctx *c)
{
    return cel__err(c, "integer overflow");
}

static struct cel__val uoverflow(struct cel__ctx *c)
{
    return cel__err(c, "unsigned integer overflow");
}

static struct cel__val concat(struct cel__ctx *c, const struct cel__val *a,
                              const struct cel__val *b)
{
    if (a->kind == CEL_V_LIST) {
        size_t n = a->v.list->n + b->v.list->n;
        struct cel__list *l;
        if (n > CEL__MAX_BUILD / sizeof(struct cel__val))
            return cel__err(c, "list too large");
        if (cel__charge(c, n))
            return cel__abort_val(c);
        l = cel__alloc(&c->scratch, sizeof(*l));
        if (!l || (n && !(l->items = cel__alloc(&c->scratch, n * sizeof(*l->items)))))
            return oom(c);
        if (a->v.list->n)
            memcpy(l->items, a->v.list->items, a->v.list->n * sizeof(*l->items));
        if (b->v.list->n)
            memcpy(l->items + a->v.list->n, b->v.list->items, b->v.list->n * sizeof(*l->items));
        l->n = n;
        struct cel__val v = {.kind = CEL_V_LIST};
        v.v.list = l;
        return v;
    }
    size_t n = a->v.str.n + b->v.str.n;
    char *s;
    if (n > CEL__MAX_BUILD)
        return cel__err(c, "string too large");
    if (cel__charge(c, n / 16))
        return cel__abort_val(c);
    s = cel__alloc(&c->scratch, n + 1);
    if (!s)
        return oom(c);
    if (a->v.str.n)
        memcpy(s, a->v.str.s, a->v.str.n);
    if (b->v.str.n)
        memcpy(s + a->v.str.n, b->v.str.s, b->v.str.n);
    return mk_str(a->kind, s, n);
}

struct cel__val cel__arith(struct cel__ctx *c, int op, const struct cel__val *a,
                           const struct cel__val *b)
{
    const char *fn = cel__op_name(op);
    int handled;

    if (op == CEL_OP_ADD || op == CEL_OP_SUB) {
        struct cel__val t = cel__time_arith(c, op == CEL_OP_ADD, a, b, &handled);
        if (handled)
            return t;
    }
    if (a->kind != b->kind)
        return no_overload(c, fn, a, b);
    if (a->kind == CEL_V_INT) {
        int64_t x = a->v.i, y = b->v.i, r;
        switch (op) {
        case CEL_OP_ADD: if (__builtin_add_overflow(x, y, &r)) return overflow(c); break;
        case CEL_OP_SUB: if (__builtin_sub_overflow(x, y, &r)) return overflow(c); break;
        case CEL_OP_MUL: if (__builtin_mul_overflow(x, y, &r)) return overflow(c); break;
        case CEL_OP_DIV:
            if (y == 0)
                return cel__err(c, "division by zero");
            if (x == INT64_MIN && y == -1)
                return overflow(c);
            r = x / y;
            break;
        default:
            if (y == 0)
                return cel__err(c, "modulus by zero");
            if (x == INT64_MIN && y == -1)
                return overflow(c);
            r = x % y;
            break;
        }
        return mk_int(r);
    }
    if (a->kind == CEL_V_UINT) {
        uint64_t x = a->v.u, y = b->v.u, r;
        switch (op) {
        case CEL_OP_ADD: if (__builtin_add_overflow(x, y, &r)) return uoverflow(c); break;
        case CEL_OP_SUB: if (__builtin_sub_overflow(x, y, &r)) return uoverflow(c); break;
        case CEL_OP_MUL: if (__builtin_mul_overflow(x, y, &r)) return uoverflow(c); break;
        case CEL_OP_DIV:
            if (y == 0)
                return cel__err(c, "division by zero");
            r = x / y;
            break;
        default:
            if (y == 0)
                return cel__err(c, "modulus by zero");
            r = x % y;
            break;
        }
        return mk_uint(r);
    }
    if (a->kind == CEL_V_DOUBLE) {
        switch (op) {
        case CEL_OP_ADD: return mk_double(a->v.d + b->v.d);
        case CEL_OP_SUB: return mk_double(a->v.d - b->v.d);
        case CEL_OP_MUL: return mk_double(a->v.d * b->v.d);
        case CEL_OP_DIV: return mk_double(a->v.d / b->v.d);
        default: return no_overload(c, fn, a, b);
        }
    }
    if (op == CEL_OP_ADD && (a->kind == CEL_V_STRING || a->kind == CEL_V_BYTES ||
                             a->kind == CEL_V_LIST))
        return concat(c, a, b);
    return no_overload(c, fn, a, b);
}

static struct cel__val relation(struct cel__ctx *c, int op, const struct cel__val *a,
                                const struct cel__val *b)
{
    int r;

    if (a->kind == b->kind && (a->kind == CEL_V_STRING || a->kind == CEL_V_BYTES) &&
        cel__charge(c, (a->v.str.n < b->v.str.n ? a->v.str.n : b->v.str.n) / 16))
        return cel__abort_val(c);
    r = cel__val_compare(a, b);
    if (r == 2) /* cel-go's Double.Compare, Int.Compare and Uint.Compare */
        return cel__err(c, "NaN values cannot be ordered");
    if (r == -2)
        return no_overload(c, cel__op_name(op), a, b);
    switch (op) {
    case CEL_OP_LT: return mk_bool(r < 0);
    case CEL_OP_LE: return mk_bool(r <= 0);
    case CEL_OP_GT: return mk_bool(r > 0);
    default: return mk_bool(r >= 0);
    }
}

/* The Go type of a value Go cannot hash (cel-go keys Go maps by values), or NULL. */
static const char *unhashable(const struct cel__val *v)
{
    switch (v->kind) {
    case CEL_V_BYTES: return "types.Bytes";
    case CEL_V_SEMVER: return "cel.Semver";
    case CEL_V_FORMAT: return "cel.Format";
    default: return NULL;
    }
}

static int is_conversion(const char *fn);

/* Whether cel-go's planner makes n a constant: a literal, a list or map literal of
 * constants, a conversion of a constant, `x in []`. */
static int planned_const(const struct cel__node *n)
{
    switch (n->kind) {
    case CEL_N_INT: case CEL_N_UINT: case CEL_N_DOUBLE: case CEL_N_STRING: case CEL_N_BYTES:
    case CEL_N_BOOL: case CEL_N_NULL:
        return 1;
    case CEL_N_LIST: case CEL_N_MAP:
        for (size_t i = 0; i < n->nkid; i++)
            if (!planned_const(n->kid[i]))
                return 0;
        return !n->optk;
    case CEL_N_CALL:
        return !n->recv && n->nkid == 1 && is_conversion(n->name) && planned_const(n->kid[0]);
    case CEL_N_BINARY:
        return n->op == CEL_OP_IN && n->kid[1]->kind == CEL_N_LIST && n->kid[1]->nkid == 0;
    default:
        return 0;
    }
}

/* cel-go's planner turns `x in [c1, c2, ...]` into a lookup of x in a Go map when the ci
 * are constant bools, numbers or strings. */
static int set_membership(const struct cel__node *list, const struct cel__val *v)
{
    for (size_t i = 0; i < v->v.list->n; i++) {
        enum cel__vkind k = v->v.list->items[i].kind;
        if (k != CEL_V_BOOL && k != CEL_V_INT && k != CEL_V_UINT && k != CEL_V_DOUBLE &&
            k != CEL_V_STRING)
            return 0;
    }
    return list->kind == CEL_N_LIST && planned_const(list);
}

static struct cel__val eval_binary(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val a, b;
    int e;

    if (n->op == CEL_OP_AND || n->op == CEL_OP_OR)
        return eval_logic(c, n);
    /* cel-go's planner folds `x in []` to false without evaluating x. */
    if (n->op == CEL_OP_IN && n->kid[1]->kind == CEL_N_LIST && n->kid[1]->nkid == 0)
        return mk_bool(0);
    a = eval(c, n->kid[0]);
    if (a.kind == CEL_V_ERROR)
        return a;
    b = eval(c, n->kid[1]);
    if (b.kind == CEL_V_ERROR)
        return b;
    switch (n->op) {
    case CEL_OP_EQ:
    case CEL_OP_NE:
        e = cel__val_equal(&a, &b);
        /* cel-go: `==` is lhs.Equal(rhs), an error included; `!=` is whether that is not
         * true, so an error makes it true. */
        if (n->op == CEL_OP_NE)
            return mk_bool(e != 1);
        if (e < 0)
            return no_overload(c, cel__op_name(n->op), &a, &b);
        return mk_bool(e);
    case CEL_OP_LT:
    case CEL_OP_LE:
    case CEL_OP_GT:
    case CEL_OP_GE:
        return relation(c, n->op, &a, &b);
    case CEL_OP_IN:
        if (b.kind == CEL_V_LIST) {
            if (unhashable(&a) && set_membership(n->kid[1], &b))
                return cel__panic(c, "internal error: runtime error: hash of unhashable type %s",
                                  unhashable(&a));
            if (cel__charge(c, b.v.list->n))
                return cel__abort_val(c);
            for (size_t i = 0; i < b.v.list->n; i++)
                if (cel__val_equal(&a, &b.v.list->items[i]) == 1)
                    return mk_bool(1);
            return mk_bool(0);
        }
        if (b.kind == CEL_V_MAP) {
            if (lookup_panics(b.v.map, &a))
                return cel__panic(c, "internal error: runtime error: hash of unhashable type %s",
                                  lookup_panics(b.v.map, &a));
            if (cel__charge(c, b.v.map->n))
                return cel__abort_val(c);
            return mk_bool(map_lookup(b.v.map, &a) != NULL);
        }
        return no_overload(c, "@in", &a, &b);
    default:
        return cel__arith(c, n->op, &a, &b);
    }
}

static struct cel__val eval_unary(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val a = eval(c, n->kid[0]);

    if (a.kind == CEL_V_ERROR)
        return a;
    if (n->op == CEL_OP_NOT) {
        if (a.kind != CEL_V_BOOL)
            return no_overload(c, "!_", &a, NULL);
        return mk_bool(!a.v.b);
    }
    if (a.kind == CEL_V_INT) {
        if (a.v.i == INT64_MIN)
            return overflow(c);
        return mk_int(-a.v.i);
    }
    if (a.kind == CEL_V_DOUBLE)
        return mk_double(-a.v.d);
    /* No -_ overload takes a duration, but cel-go's runtime dispatches a dyn operand by its
     * traits, and Duration is a Negater: -dyn(duration('1s')) is -1s. */
    if (a.kind == CEL_V_DURATION) {
        struct cel__val d = a;
        if (a.v.dur == INT64_MIN)
            return overflow(c);
        d.v.dur = -a.v.dur;
        return d;
    }
    return no_overload(c, "-_", &a, NULL);
}

static struct cel__val eval_list(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__list *l = cel__alloc(&c->scratch, sizeof(*l));
    struct cel__val v = {.kind = CEL_V_LIST};

    if (!l || (n->nkid && !(l->items = cel__alloc(&c->scratch, n->nkid * sizeof(*l->items)))))
        return oom(c);
    for (size_t i = 0; i < n->nkid; i++) {
        struct cel__val e = eval(c, n->kid[i]);
        if (e.kind == CEL_V_ERROR)
            return e;
        if (n->optk && n->optk[i]) {
            /* `[?e]`: present values are added, none is skipped. */
            if (e.kind != CEL_V_OPTIONAL)
                return cel__err(c, "cannot initialize optional list element from non-optional "
                                   "value %s", cel__vkind_name(e.kind));
            if (!e.v.opt)
                continue;
            e = *e.v.opt;
        }
        l->items[l->n++] = e;
    }
    v.v.list = l;
    return v;
}

static struct cel__val eval_map(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__map *m = map_new(c, n->nkid / 2);
    struct cel__val v = {.kind = CEL_V_MAP};

    if (!m)
        return oom(c);
    m->go_keyed = 1;
    for (size_t i = 0; i + 1 < n->nkid; i += 2) {
        struct cel__val k = eval(c, n->kid[i]), x;
        struct cel__val *old;
        if (k.kind == CEL_V_ERROR)
            return k;
        /* cel-go builds a Go map keyed by the values themselves. */
        if (unhashable(&k))
            return cel__panic(c, "internal error: runtime error: hash of unhashable type %s",
                              unhashable(&k));
        x = eval(c, n->kid[i + 1]);
        if (x.kind == CEL_V_ERROR)
            return x;
        if (n->optk && n->optk[i / 2]) {
            if (x.kind != CEL_V_OPTIONAL)
                return cel__err(c, "cannot initialize optional entry from non-optional value %s",
                                cel__vkind_name(x.kind));
            if (!x.v.opt)
                continue;
            x = *x.v.opt;
        }
        /* cel-go builds a Go map: a repeated key keeps the last value. */
        old = NULL;
        for (size_t j = 0; j < m->n && !old; j++)
            if (m->keys[j].kind == k.kind && cel__val_equal(&m->keys[j], &k) == 1)
                old = &m->vals[j];
        if (old) {
            *old = x;
            continue;
        }
        m->keys[m->n] = k;
        m->vals[m->n] = x;
        m->n++;
    }
    v.v.map = m;
    return v;
}

/*
 * `x.or(y)` and `x.orValue(y)`: cel-go plans them as special forms (decorateOptionalOr), not
 * as calls: y is evaluated only when x is an empty optional, so an error in y is no error when
 * x has a value.  A receiver that is no optional (a dyn value, e.g. an attribute) is returned
 * as it is by cel-go v0.26 (Kubernetes 1.34-1.36) and is "no such overload" from v0.29
 * (Kubernetes 1.37).
 */
static struct cel__val eval_opt_or(struct cel__ctx *c, const struct cel__node *n, int or_value)
{
    struct cel__val x = eval(c, n->kid[0]);

    if (x.kind == CEL_V_ERROR)
        return x;
    if (x.kind != CEL_V_OPTIONAL) {
        if (c->kube_minor && c->kube_minor < 37)
            return x;
        return cel__err(c, "no such overload");
    }
    if (x.v.opt)
        return or_value ? *x.v.opt : x;
    return eval(c, n->kid[1]);
}

/* ext.Lists' distinct asserts its receiver is a list, and sort does too without waiting
 * for an error of a receiver typed as a list to return first: cel-go panics there (seen
 * against the oracle: `dyn('a').distinct()`, `[[1]][5].sort()`), which nothing absorbs. */
static int lister_panics(const struct cel__node *n, const struct cel__val *recv)
{
    if (n->nkid != 1)
        return 0;
    if (!strcmp(n->name, "distinct"))
        return recv->kind != CEL_V_LIST && recv->kind != CEL_V_OPTIONAL;
    /* sort: when the receiver's type picks one overload (a list of anything but dyn). */
    if (!strcmp(n->name, "sort"))
        return recv->kind == CEL_V_ERROR && n->kid[0]->type &&
               n->kid[0]->type->kind == CEL_T_LIST &&
               (!n->kid[0]->type->np || n->kid[0]->type->p[0]->kind != CEL_T_DYN);
    return 0;
}

static struct cel__val eval_call(struct cel__ctx *c, const struct cel__node *n)
{
    const struct cel__sig *sigs = cel__sigs();
    struct cel__val argv[8];

    if (n->recv && n->nkid == 2 && n->ncand == 1 &&
        (cel__ovl[n->cand[0]].impl == cel__fn_opt_or ||
         cel__ovl[n->cand[0]].impl == cel__fn_opt_or_value))
        return eval_opt_or(c, n, cel__ovl[n->cand[0]].impl == cel__fn_opt_or_value);
    if (n->nkid > sizeof(argv) / sizeof(argv[0]) || !sigs)
        return cel__err(c, "no such overload: %s", n->name);
    for (size_t i = 0; i < n->nkid; i++) {
        argv[i] = eval(c, n->kid[i]);
        if (i == 0 && n->recv && !c->aborted && lister_panics(n, &argv[0]))
            return cel__panic(c, "internal error: interface conversion: %s is not "
                                 "traits.Lister", cel__vkind_name(argv[0].kind));
        if (argv[i].kind == CEL_V_ERROR)
            return argv[i];
    }
    /* Dispatch on the runtime values among the overloads the checker kept, as
     * cel-go does for arguments whose static type is dyn. */
    for (int k = 0; k < n->ncand; k++) {
        const struct cel__overload *o = &cel__ovl[n->cand[k]];
        const struct cel__sig *sg = &sigs[n->cand[k]];
        size_t i;
        /* ext.Lists declares flatten with decls.DisableTypeGuards: its implementation takes
         * any list (`dyn([1]).flatten()` is [1]) and refuses the rest itself. */
        for (i = 0; i < n->nkid && o->impl != cel__fn_flatten; i++)
            if (!cel__val_fits(&argv[i], sg->arg[i]))
                break;
        if (o->impl == cel__fn_flatten)
            i = n->nkid;
        if (i == n->nkid && o->impl)
            return o->impl(c, n, argv, n->nkid);
    }
    if (n->nkid)
        return no_overload(c, n->name, &argv[0], n->nkid > 1 ? &argv[1] : NULL);
    return cel__err(c, "no such overload: %s", n->name);
}

/* Appends v to the growing list out (capacity *cap). */
static int list_push(struct cel__ctx *c, struct cel__list *out, size_t *cap, struct cel__val v)
{
    if (out->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        struct cel__val *items;
        if (ncap > CEL__MAX_BUILD / sizeof(*items))
            return -1;
        if (!(items = cel__alloc(&c->scratch, ncap * sizeof(*items))))
            return -1;
        if (out->n)
            memcpy(items, out->items, out->n * sizeof(*items));
        out->items = items;
        *cap = ncap;
    }
    out->items[out->n++] = v;
    return 0;
}

static struct cel__val eval_bind_like(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val r = eval(c, n->kid[0]), v;
    struct cel__scope sc = {n->name, r, c->scope};

    if (n->op == CEL_M_BIND) {
        /* The value is bound as it is, error included: only a use fails. */
        c->scope = &sc;
        v = eval(c, n->kid[1]);
        c->scope = sc.up;
        return v;
    }
    if (r.kind == CEL_V_ERROR)
        return r;
    if (r.kind != CEL_V_OPTIONAL)
        return cel__err(c, "no such overload: hasValue(%s)", cel__vkind_name(r.kind));
    if (!r.v.opt)
        return r;
    sc.val = *r.v.opt;
    c->scope = &sc;
    v = eval(c, n->kid[1]);
    c->scope = sc.up;
    if (v.kind == CEL_V_ERROR || n->op == CEL_M_OPTFLATMAP) {
        if (v.kind != CEL_V_ERROR && v.kind != CEL_V_OPTIONAL)
            return cel__err(c, "no such overload: optFlatMap(%s)", cel__vkind_name(v.kind));
        return v;
    }
    return cel__optional(c, &v);
}

static struct cel__val eval_comp(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val r, err = {.kind = CEL_V_NULL}, res;
    struct cel__scope s1 = {n->name, {.kind = CEL_V_NULL}, c->scope},
                      s2 = {n->name2, {.kind = CEL_V_NULL}, &s1};
    struct cel__list *out = NULL, *keys = NULL;
    struct cel__map *mout = NULL;
    size_t count = 0, cap = 0, kcap = 0, len;
    int seen_err = 0, two = n->name2 != NULL, op = n->op;
    int is_all = op == CEL_M_ALL || op == CEL_M_ALL2, is_exists = op == CEL_M_EXISTS ||
                                                                op == CEL_M_EXISTS2;
    int is_one = op == CEL_M_EXISTS_ONE || op == CEL_M_EXISTS_ONE2;
    int collects = op == CEL_M_MAP || op == CEL_M_FILTER || op == CEL_M_TLIST ||
                   op == CEL_M_SORTBY;
    int maps = op == CEL_M_TMAP || op == CEL_M_TMAPENTRY;

    if (op == CEL_M_BIND || op == CEL_M_OPTMAP || op == CEL_M_OPTFLATMAP)
        return eval_bind_like(c, n);
    r = eval(c, n->kid[0]);
    if (r.kind == CEL_V_ERROR)
        return r;
    if (r.kind != CEL_V_LIST && r.kind != CEL_V_MAP)
        return cel__err(c, "expression of type '%s' cannot be range of a comprehension",
                        cel__vkind_name(r.kind));
    len = r.kind == CEL_V_LIST ? r.v.list->n : r.v.map->n;
    if (collects && !(out = cel__alloc(&c->scratch, sizeof(*out))))
        return oom(c);
    if (op == CEL_M_SORTBY && !(keys = cel__alloc(&c->scratch, sizeof(*keys))))
        return oom(c);
    if (maps && !(mout = map_new(c, 0)))
        return oom(c);
    c->scope = two ? &s2 : &s1;
    for (size_t i = 0; i < len && !c->aborted; i++) {
        struct cel__val elem = r.kind == CEL_V_LIST ? r.v.list->items[i] : r.v.map->keys[i];
        struct cel__val p = mk_bool(1), t = elem;
        if (two) {
            s1.val = r.kind == CEL_V_LIST ? mk_int((int64_t)i) : r.v.map->keys[i];
            s2.val = r.kind == CEL_V_LIST ? r.v.list->items[i] : r.v.map->vals[i];
        } else {
            s1.val = elem;
        }
        if (is_all || is_exists || is_one || op == CEL_M_FILTER) {
            p = eval(c, n->kid[1]);
        } else if (n->nkid > 2) {
            p = eval(c, n->kid[2]); /* the filter of map/transform* */
        }
        if (c->aborted)
            break;
        if (p.kind != CEL_V_BOOL) {
            if (p.kind != CEL_V_ERROR)
                p = no_overload(c, is_all ? "_&&_" : is_exists ? "_||_" : "_?_:_", &p, NULL);
            /* all/exists absorb errors when another element decides the result. */
            if (is_all || is_exists) {
                if (!seen_err)
                    err = p;
                seen_err = 1;
                continue;
            }
            err = p;
            break;
        }
        if (is_all && !p.v.b) {
            c->scope = s1.up;
            return mk_bool(0);
        }
        if (is_exists && p.v.b) {
            c->scope = s1.up;
            return mk_bool(1);
        }
        if (is_one) {
            count += p.v.b;
            continue;
        }
        if (!p.v.b || is_all || is_exists)
            continue;
        if (op != CEL_M_FILTER)
            t = eval(c, n->kid[1]);
        if (t.kind == CEL_V_ERROR) {
            err = t;
            break;
        }
        if (op == CEL_M_SORTBY) {
            if (list_push(c, out, &cap, elem) || list_push(c, keys, &kcap, t)) {
                err = cel__err(c, "list too large");
                break;
            }
            continue;
        }
        if (collects) {
            if (list_push(c, out, &cap, t)) {
                err = cel__err(c, "list too large");
                break;
            }
            continue;
        }
        /* transformMap / transformMapEntry */
        struct cel__val k = s1.val;
        const struct cel__map *src = NULL;
        size_t add = 1;
        if (op == CEL_M_TMAPENTRY) {
            if (t.kind != CEL_V_MAP) {
                err = cel__err(c, "no such overload: cel.@mapInsert(map, %s)",
                               cel__vkind_name(t.kind));
                break;
            }
            src = t.v.map;
            add = src->n;
        }
        for (size_t j = 0; j < add; j++) {
            struct cel__val kk = src ? src->keys[j] : k, vv = src ? src->vals[j] : t;
            if (map_lookup(mout, &kk)) {
                char kt[256];
                key_text(&kk, kt, sizeof(kt));
                err = cel__err(c, "insert failed: key %s already exists", kt);
                break;
            }
            struct cel__val *nk = cel__alloc(&c->scratch, (mout->n + 1) * sizeof(*nk)),
                            *nv = cel__alloc(&c->scratch, (mout->n + 1) * sizeof(*nv));
            if (!nk || !nv || cel__charge(c, 1)) {
                err = c->aborted ? cel__abort_val(c) : oom(c);
                break;
            }
            if (mout->n) {
                memcpy(nk, mout->keys, mout->n * sizeof(*nk));
                memcpy(nv, mout->vals, mout->n * sizeof(*nv));
            }
            nk[mout->n] = kk;
            nv[mout->n] = vv;
            mout->keys = nk;
            mout->vals = nv;
            mout->n++;
        }
        if (err.kind == CEL_V_ERROR)
            break;
    }
    c->scope = s1.up;
    if (c->aborted)
        return cel__abort_val(c);
    if (err.kind == CEL_V_ERROR)
        return err;
    if (is_all)
        return mk_bool(1);
    if (is_exists)
        return mk_bool(0);
    if (is_one)
        return mk_bool(count == 1);
    if (op == CEL_M_SORTBY)
        return cel__sorted(c, out, keys);
    if (maps) {
        res.kind = CEL_V_MAP;
        res.v.map = mout;
        return res;
    }
    res.kind = CEL_V_LIST;
    res.v.list = out;
    return res;
}

static struct cel__val eval_ident(struct cel__ctx *c, const struct cel__node *n)
{
    struct cel__val v = {.kind = CEL_V_TYPE};

    for (const struct cel__scope *s = c->scope; s; s = s->up)
        if (strcmp(s->name, n->name) == 0)
            return s->val;
    if (strcmp(n->name, "device") == 0)
        return c->device;
    /* Otherwise the checker resolved it to a type name (`int`, `list`, ...). */
    if (n->type && n->type->kind == CEL_T_TYPE && n->type->np) {
        const struct cel__type *t = n->type->p[0];
        v.v.tname = t->kind == CEL_T_NULL ? "null_type" : n->name;
        return v;
    }
    return cel__err(c, "undeclared reference to '%s'", n->name);
}

static struct cel__val eval(struct cel__ctx *c, const struct cel__node *n)
{
    if (cel__charge(c, 1))
        return cel__abort_val(c);
    switch (n->kind) {
    case CEL_N_INT: return mk_int(n->lit.i);
    case CEL_N_UINT: return mk_uint(n->lit.u);
    case CEL_N_DOUBLE: return mk_double(n->lit.d);
    case CEL_N_STRING: return mk_str(CEL_V_STRING, n->lit.str.s, n->lit.str.n);
    case CEL_N_BYTES: return mk_str(CEL_V_BYTES, n->lit.str.s, n->lit.str.n);
    case CEL_N_BOOL: return mk_bool(n->lit.b);
    case CEL_N_NULL: {
        struct cel__val v = {.kind = CEL_V_NULL};
        return v;
    }
    case CEL_N_IDENT: return eval_ident(c, n);
    case CEL_N_SELECT: return eval_select(c, n);
    case CEL_N_INDEX: return eval_index(c, n);
    case CEL_N_CALL: return eval_call(c, n);
    case CEL_N_LIST: return eval_list(c, n);
    case CEL_N_MAP: return eval_map(c, n);
    case CEL_N_UNARY: return eval_unary(c, n);
    case CEL_N_BINARY: return eval_binary(c, n);
    case CEL_N_COND: {
        struct cel__val k = eval(c, n->kid[0]);
        if (k.kind == CEL_V_ERROR)
            return k;
        if (k.kind != CEL_V_BOOL)
            return no_overload(c, "_?_:_", &k, NULL);
        return eval(c, n->kid[k.v.b ? 1 : 2]);
    }
    case CEL_N_COMP: return eval_comp(c, n);
    }
    return cel__err(c, "internal error: unknown node");
}

/* Evaluates p with c->device set; frees c's scratch arena. */
static enum cel_verdict run(struct cel__ctx *c, const struct cel_program *p, uint64_t *cost,
                            struct dd_err *err)
{
    struct cel__val v;
    enum cel_verdict verdict;

    /* includes() and the list values changed in 1.37: evaluation asks the release. */
    c->kube_minor = p->env.kube_minor;
    v = eval(c, p->root);

    if (cost)
        *cost = c->cost;
    if (c->aborted) {
        v = cel__abort_val(c);
        dd_failf(err, c->abort_rc, "%s", v.v.err);
        verdict = CEL_ERROR;
    } else if (v.kind == CEL_V_ERROR) {
        dd_failf(err, DD_ETYPE, "%s", v.v.err);
        verdict = CEL_ERROR;
    } else if (v.kind != CEL_V_BOOL) {
        /* DeviceMatches converts the result to a Go bool. */
        dd_failf(err, DD_ETYPE, "CEL result of type %s could not be converted to bool: type "
                 "conversion error from %s to 'bool'", cel__vkind_name(v.kind),
                 cel__vkind_name(v.kind));
        verdict = CEL_ERROR;
    } else {
        verdict = v.v.b ? CEL_TRUE : CEL_FALSE;
    }
    cel__arena_free(&c->scratch);
    return verdict;
}

static void ctx_start(struct cel__ctx *c, const struct cel_limits *lim)
{
    static const struct cel_limits def = CEL_LIMITS_DEFAULT;

    memset(c, 0, sizeof(*c));
    c->max_cost = (lim ? lim : &def)->max_cost;
    c->scratch.cap = CEL__MAX_SCRATCH;
}

enum cel_verdict cel_eval_device(const struct cel_program *p, const struct cel_device *dev,
                                 const struct cel_limits *lim, struct dd_err *err)
{
    return cel_eval_device_cost(p, dev, lim, NULL, err);
}

enum cel_verdict cel_eval_device_cost(const struct cel_program *p, const struct cel_device *dev,
                                      const struct cel_limits *lim, uint64_t *cost,
                                      struct dd_err *err)
{
    struct cel__ctx c;
    const char *why = NULL;
    int r;

    dd_err_clear(err);
    if (cost)
        *cost = 0;
    if (!p || !dev) {
        dd_failf(err, DD_EINVAL, "cel_eval_device: NULL program or device");
        return CEL_ERROR;
    }
    ctx_start(&c, lim);
    if ((r = build_device(&c, dev, cel__env_list_values(&p->env), &why, NULL)) != 0) {
        if (r == -2)
            dd_failf(err, DD_ETYPE, "%s", why);
        else
            dd_failf(err, DD_ENOMEM, "out of memory while preparing the device");
        cel__arena_free(&c.scratch);
        return CEL_ERROR;
    }
    return run(&c, p, cost, err);
}

/* ---- Devices built once ---------------------------------------------------------- */

struct cel_device_value {
    struct cel__val device;  /* the `device` map, with list attributes as lists */
    const char *driver;      /* device.driver, or NULL; borrowed as the map's strings are */
    const char *why_lists;   /* why every selector fails with DRAListTypeAttributes, or NULL */
    const char *why_plain;   /* the same without it (a list attribute is then unsupported) */
};

struct cel_device_set {
    struct cel__arena a;     /* every value's maps and texts */
};

struct cel_device_set *cel_device_set_new(void)
{
    return calloc(1, sizeof(struct cel_device_set));
}

void cel_device_set_free(struct cel_device_set *s)
{
    if (s)
        cel__arena_free(&s->a);
    free(s);
}

void cel_device_set_clear(struct cel_device_set *s)
{
    cel__arena_free(&s->a);
}

const struct cel_device_value *cel_device_value(struct cel_device_set *s,
                                                const struct cel_device *dev)
{
    struct cel_device_value *v;
    struct cel__ctx c;
    size_t first_list;

    memset(&c, 0, sizeof(c));
    c.max_cost = UINT64_MAX;
    c.scratch = s->a;
    if (!(v = cel__alloc(&c.scratch, sizeof(*v))) ||
        build_device(&c, dev, 1, &v->why_lists, &first_list) == -1) {
        s->a = c.scratch;
        return NULL;
    }
    v->device = c.device;
    v->driver = dev->driver;
    /* Without the gate the first list attribute fails the device (build_device stopped at
     * the first failure with it, so no failing attribute comes before that one). */
    v->why_plain = v->why_lists;
    if (first_list < dev->nattrs &&
        !(v->why_plain = attr_error(&c, &dev->attrs[first_list], "unsupported attribute value")))
        v = NULL;
    s->a = c.scratch;
    return v;
}

enum cel_verdict cel_eval_value(const struct cel_program *p, const struct cel_device_value *dv,
                                const struct cel_limits *lim, struct dd_err *err)
{
    const char *why;
    struct cel__ctx c;

    dd_err_clear(err);
    if (!p || !dv) {
        dd_failf(err, DD_EINVAL, "cel_eval_value: NULL program or device");
        return CEL_ERROR;
    }
    why = cel__env_list_values(&p->env) ? dv->why_lists : dv->why_plain;
    if (why) {
        dd_failf(err, DD_ETYPE, "%s", why);
        return CEL_ERROR;
    }
    if (cel_program_excludes_driver(p, dv->driver, lim))
        return CEL_FALSE;
    ctx_start(&c, lim);
    c.device = dv->device;
    return run(&c, p, NULL, err);
}

/* ---- Constant folding at compile time ------------------------------------------- */

static int is_conversion(const char *fn)
{
    static const char *const conv[] = {"bool", "bytes", "double", "duration", "dyn",
                                       "int", "string", "timestamp", "type", "uint"};

    for (size_t i = 0; i < sizeof(conv) / sizeof(conv[0]); i++)
        if (strcmp(conv[i], fn) == 0)
            return 1;
    return 0;
}

/*
 * Whether n is a constant as cel-go's planner sees it (a literal, a list or map of
 * constants, a folded conversion of a constant); folds conversions bottom-up.
 * Returns 1 constant, 0 not, -1 a conversion failed (err filled).
 */
static int fold(struct cel_program *p, struct cel__ctx *c, const struct cel__node *n,
                struct dd_err *err)
{
    int all = 1, r, key = 0;

    switch (n->kind) {
    case CEL_N_INT: case CEL_N_UINT: case CEL_N_DOUBLE: case CEL_N_STRING: case CEL_N_BYTES:
    case CEL_N_BOOL: case CEL_N_NULL:
        return 1;
    case CEL_N_IDENT:
        /* A type's name (`int`): the planner makes it a constant type value (a variable
         * holding a type was refused by the checker). */
        return n->type && n->type->kind == CEL_T_TYPE;
    default:
        break;
    }
    for (size_t i = 0; i < n->nkid; i++) {
        if ((r = fold(p, c, n->kid[i], err)) < 0)
            return -1;
        all &= r;
        if (i == 1)
            key = r;
    }
    /* cel-go builds a constant map literal when it plans the program, where nothing recovers
     * the panic of an unhashable key: kube-apiserver's request fails. */
    if (n->kind == CEL_N_MAP && all && !n->optk) {
        struct cel__val v = eval(c, n);
        if (v.kind == CEL_V_ERROR && strstr(v.v.err, "unhashable")) {
            cel__fail_at(err, DD_ETYPE, p->src, p->len, n->line, n->col,
                         "program instantiation failed: cel-go panics: %s", v.v.err);
            return -1;
        }
    }
    if (n->kind == CEL_N_LIST || n->kind == CEL_N_MAP)
        return all && !n->optk;
    /* The planner compiles a constant pattern of matches, find and findAll (a literal or a
     * folded constant such as dyn('(')): a bad one fails kube-apiserver's request. */
    if (n->kind == CEL_N_CALL && key && n->nkid >= 2 &&
        (!strcmp(n->name, "matches") || (n->recv && (!strcmp(n->name, "find") ||
                                                     !strcmp(n->name, "findAll"))))) {
        struct cel__val re = eval(c, n->kid[1]);
        const char *why = NULL;
        if (re.kind == CEL_V_STRING && cel__re2_valid(re.v.str.s, re.v.str.n, &why)) {
            cel__fail_at(err, DD_ETYPE, p->src, p->len, n->kid[1]->line, n->kid[1]->col,
                         "program instantiation failed: %s", why ? why : "invalid pattern");
            return -1;
        }
    }
    /* `x in []` is the constant false, whatever x (planned_const). */
    if (n->kind == CEL_N_BINARY && planned_const(n))
        return 1;
    /* A constant index becomes a qualifier when the program is planned, and only
     * strings, integers, bools and doubles can be qualifiers. */
    if (n->kind == CEL_N_INDEX && key) {
        struct cel__val k = eval(c, n->kid[1]);
        if (k.kind != CEL_V_ERROR && k.kind != CEL_V_STRING && k.kind != CEL_V_INT &&
            k.kind != CEL_V_UINT && k.kind != CEL_V_BOOL && k.kind != CEL_V_DOUBLE) {
            cel__fail_at(err, DD_ETYPE, p->src, p->len, n->line, n->col,
                         "program instantiation failed: invalid qualifier type: %s",
                         cel__vkind_name(k.kind));
            return -1;
        }
    }
    if (n->kind == CEL_N_CALL && !n->recv && n->nkid == 1 && all && is_conversion(n->name)) {
        struct cel__val v = eval(c, n);
        if (v.kind == CEL_V_ERROR) {
            cel__fail_at(err, DD_ETYPE, p->src, p->len, n->line, n->col,
                         "program instantiation failed: %s", v.v.err);
            return -1;
        }
        return 1;
    }
    return 0;
}

enum dd_rc cel__fold(struct cel_program *p, struct dd_err *err)
{
    struct cel__ctx c;
    int r;

    memset(&c, 0, sizeof(c));
    c.max_cost = UINT64_MAX;
    c.scratch.cap = CEL__MAX_SCRATCH;
    c.kube_minor = p->env.kube_minor;
    r = fold(p, &c, p->root, err);
    cel__arena_free(&c.scratch);
    return r < 0 ? err->rc : DD_OK;
}

/* ---- For explanations (cel_explain.c) ---------------------------------------------- */

int cel__ctx_init(struct cel__ctx *c, const struct cel_program *p, const struct cel_device *dev)
{
    static const struct cel_limits def = CEL_LIMITS_DEFAULT;
    const char *why = NULL;

    memset(c, 0, sizeof(*c));
    /* Explaining re-evaluates sub-expressions: each gets the whole budget again. */
    c->max_cost = def.max_cost * 4;
    c->scratch.cap = CEL__MAX_SCRATCH;
    c->kube_minor = p->env.kube_minor;
    if (build_device(c, dev, cel__env_list_values(&p->env), &why, NULL) != 0) {
        cel__arena_free(&c->scratch);
        return -1;
    }
    return 0;
}

struct cel__val cel__eval_node(struct cel__ctx *c, const struct cel__node *n)
{
    return eval(c, n);
}

void cel__ctx_free(struct cel__ctx *c)
{
    cel__arena_free(&c->scratch);
}
