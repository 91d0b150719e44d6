/*
 * cel_cost.c - the estimated cost kube-apiserver computes when a DeviceClass or
 * claim is created (cel-go checker/cost.go with k8s.io/apiserver's
 * library.CostEstimator and the DRA size estimator of k8s.io/dynamic-resource-
 * allocation cel/compile.go), compared against CELSelectorExpressionMaxCost.
 *
 * Costs and sizes are [min, max] ranges in saturating uint64 arithmetic.  A size
 * the estimator cannot bound is [0, UINT64_MAX]; comparing two such values (say
 * `type(x) == int`) is why such selectors are "too complex" for the API server.
 * Macros are costed in the shape cel-go's parser expands them to (accumulator
 * init, loop condition, loop step, result), so the figures are cel-go's own.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cel_int.h"

struct rng {
    uint64_t min, max;
};

static const struct rng unknown = {0, UINT64_MAX};

static uint64_t add_sat(uint64_t x, uint64_t y)
{
    return y > 0 && x > UINT64_MAX - y ? UINT64_MAX : x + y;
}

static uint64_t mul_sat(uint64_t x, uint64_t y)
{
    return y != 0 && x > UINT64_MAX / y ? UINT64_MAX : x * y;
}

static uint64_t mul_factor(uint64_t x, double f)
{
    double xf = (double)x, c;

    if (xf > 0 && f > 0 && xf > 18446744073709551615.0 / f)
        return UINT64_MAX;
    c = ceil(xf * f);
    return c >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)c;
}

static struct rng fixed(uint64_t v)
{
    struct rng r = {v, v};
    return r;
}

static struct rng radd(struct rng a, struct rng b)
{
    struct rng r = {add_sat(a.min, b.min), add_sat(a.max, b.max)};
    return r;
}

static struct rng rmul(struct rng a, struct rng b)
{
    struct rng r = {mul_sat(a.min, b.min), mul_sat(a.max, b.max)};
    return r;
}

static struct rng rfactor(struct rng a, double f)
{
    struct rng r = {mul_factor(a.min, f), mul_factor(a.max, f)};
    return r;
}

static struct rng runion(struct rng a, struct rng b)
{
    if (b.min < a.min)
        a.min = b.min;
    if (b.max > a.max)
        a.max = b.max;
    return a;
}

#define TRAVERSE 0.1 /* common.StringTraversalCostFactor */
#define REGEX 0.25   /* common.RegexStringLengthCostFactor */
#define MAXPATH 10

/* What the estimator knows of a node besides its cost. */
struct info {
    struct rng cost;
    int has_size;
    struct rng size;
    int has_entry;          /* a list or map whose element sizes are known */
    enum cel__tkind ekind;  /* CEL_T_LIST or CEL_T_MAP */
    struct rng ekey, eval;
    const char *path[MAXPATH];
    int npath;              /* 0: no path (sizes come from elsewhere) */
    const struct cel__type *type;
    int has_vsize;          /* an identifier: its variable's size, the last resort */
    struct rng vsize;
};

struct var {
    const char *name;
    struct info info;
    const struct var *up;
};

struct coster {
    struct cel_program *p;
    struct cel__types *ts;
};

static const struct cel__type *ftype(struct coster *c, const struct cel__node *n)
{
    return cel__type_subst(c->ts, n->type ? n->type : &cel__t_dyn, 1);
}

/* ---- The DRA size estimator (cel/compile.go sizeEstimator) ---------------------- */

enum dnode { D_NONE, D_DEVICE, D_DRIVER, D_MULTI, D_OUTER_ATTR, D_INNER_ATTR, D_ATTR,
             D_OUTER_CAP, D_INNER_CAP, D_QUANTITY, D_DOMAIN, D_ID };

static int dra_size(struct coster *c, const struct info *i, struct rng *out)
{
    enum dnode d = D_DEVICE;
    int lists = (c->p->env.features & CEL_FEATURE_LIST_ATTRIBUTES) != 0;

    if (i->npath == 0 || strcmp(i->path[0], "device") != 0)
        return 0;
    for (int k = 1; k < i->npath; k++) {
        const char *s = i->path[k];
        int items = !strcmp(s, "@items") || !strcmp(s, "@values"), keys = !strcmp(s, "@keys");
        switch (d) {
        case D_DEVICE:
            if (!strcmp(s, "driver")) d = D_DRIVER;
            else if (!strcmp(s, "attributes")) d = D_OUTER_ATTR;
            else if (!strcmp(s, "capacity")) d = D_OUTER_CAP;
            else if (!strcmp(s, "allowMultipleAllocations")) d = D_MULTI;
            else return 0;
            break;
        case D_OUTER_ATTR: d = items ? D_INNER_ATTR : keys ? D_DOMAIN : D_NONE; break;
        case D_OUTER_CAP: d = items ? D_INNER_CAP : keys ? D_DOMAIN : D_NONE; break;
        /* A field of an attribute map is an attribute, whatever its name. */
        case D_INNER_ATTR: d = keys ? D_ID : D_ATTR; break;
        case D_INNER_CAP: d = items ? D_QUANTITY : keys ? D_ID : D_NONE; break;
        default: return 0;
        }
        if (d == D_NONE)
            return 0;
    }
    switch (d) {
    case D_DRIVER: *out = fixed(0), out->max = 63; break;
    case D_MULTI: *out = fixed(0), out->max = 1; break;
    case D_OUTER_ATTR: case D_INNER_ATTR: case D_OUTER_CAP: case D_INNER_CAP:
        *out = fixed(0), out->max = 32;
        break;
    case D_ATTR: *out = fixed(0), out->max = lists ? 64 : 64; break;
    case D_DOMAIN: *out = fixed(0), out->max = 63; break;
    case D_ID: *out = fixed(0), out->max = 32; break;
    default: *out = fixed(0); break; /* the device object, quantities: MaxElements 0 */
    }
    return 1;
}

static int scalar(const struct cel__type *t)
{
    switch (t->kind) {
    case CEL_T_BOOL: case CEL_T_DOUBLE: case CEL_T_DURATION: case CEL_T_INT:
    case CEL_T_TIMESTAMP: case CEL_T_UINT:
        return 1;
    case CEL_T_OPTIONAL: return scalar(t->p[0]);
    default: return 0;
    }
}

/* cel-go computeSize: computed, literal, the size estimator, scalar types, local vars. */
static int size_of(struct coster *c, const struct cel__node *n, const struct info *i,
                   const struct var *v, struct rng *out)
{
    if (i->has_size) {
        *out = i->size;
        return 1;
    }
    switch (n ? n->kind : CEL_N_CALL) {
    case CEL_N_STRING: {
        uint64_t k = 0;
        for (size_t j = 0; j < n->lit.str.n; j++)
            k += ((unsigned char)n->lit.str.s[j] & 0xC0) != 0x80;
        *out = fixed(k);
        return 1;
    }
    case CEL_N_BYTES: *out = fixed(n->lit.str.n); return 1;
    case CEL_N_BOOL: case CEL_N_DOUBLE: case CEL_N_INT: case CEL_N_UINT: case CEL_N_NULL:
        *out = fixed(1);
        return 1;
    case CEL_N_LIST:
        *out = fixed(n->nkid);
        return 1;
    case CEL_N_MAP:
        *out = fixed(n->nkid / 2);
        return 1;
    default: break;
    }
    if (dra_size(c, i, out))
        return 1;
    if (i->type && scalar(i->type)) {
        *out = fixed(1);
        return 1;
    }
    if (v && v->info.has_size) {
        *out = v->info.size;
        return 1;
    }
    if (i->has_vsize) {
        *out = i->vsize;
        return 1;
    }
    return 0;
}

static struct rng size_or_unknown(struct coster *c, const struct cel__node *n,
                                  const struct info *i, const struct var *v)
{
    struct rng r;

    return size_of(c, n, i, v, &r) ? r : unknown;
}

static const struct var *lookup(const struct var *vars, const char *name)
{
    for (; vars; vars = vars->up)
        if (strcmp(vars->name, name) == 0)
            return vars;
    return NULL;
}

static void path_append(struct info *i, const struct info *from, const char *seg)
{
    i->npath = 0;
    if (from->npath == 0 || from->npath >= MAXPATH)
        return;
    memcpy(i->path, from->path, (size_t)from->npath * sizeof(*i->path));
    i->path[from->npath] = seg;
    i->npath = from->npath + 1;
}

static struct info cost(struct coster *c, const struct cel__node *n, const struct var *vars);

/* Sized view of a child for the function estimators. */
struct arg {
    const struct cel__node *n;
    struct info i;
    const struct var *v; /* the local variable an identifier names, for its size */
};

static struct rng asize(struct coster *c, const struct arg *a)
{
    return size_or_unknown(c, a->n, &a->i, a->v);
}

static struct arg mkarg(struct coster *c, const struct cel__node *n, const struct var *vars)
{
    struct arg a;

    a.n = n;
    a.i = cost(c, n, vars);
    a.v = n->kind == CEL_N_IDENT ? lookup(vars, n->name) : NULL;
    return a;
}

/* The k8s library estimator's element node: the list's element type and path. */
static struct rng elem_size(struct coster *c, const struct arg *list, int *is_str)
{
    const struct cel__type *t = list->i.type;
    struct info e;

    memset(&e, 0, sizeof(e));
    *is_str = 0;
    if (!t || t->kind != CEL_T_LIST)
        return unknown;
    *is_str = t->p[0]->kind == CEL_T_STRING || t->p[0]->kind == CEL_T_BYTES;
    path_append(&e, &list->i, "@items");
    e.type = t->p[0];
    return size_or_unknown(c, NULL, &e, NULL);
}

static int is(const struct cel__overload *o, const char *fn, const char *sig)
{
    return strcmp(o->fn, fn) == 0 && (!sig || strcmp(o->sig, sig) == 0);
}

/* cel-go ext's nodeAsUintValue: an int literal (a negative one as 0), or def. */
static uint64_t lit_uint(const struct cel__node *n, uint64_t def)
{
    if (n->kind != CEL_N_INT)
        return def;
    return n->lit.i < 0 ? 0 : (uint64_t)n->lit.i;
}

/* k8s.io/apiserver library.CostEstimator.EstimateCallCost, then cel-go's defaults. */
static struct rng call_cost(struct coster *c, const struct cel__overload *o, struct arg *a,
                            size_t na, int member, struct info *res, int *res_sized)
{
    const struct arg *t = member ? &a[0] : NULL, *x = a + member;
    size_t nx = na - (size_t)member;
    const char *fn = o->fn;
    struct rng sz;
    int str;

    *res_sized = 0;
    /* The lists extension's own estimators (cel-go ext/lists.go, version 3) come first. */
    if (o->lib == CEL_LIB_LISTS) {
        struct rng ls = t ? asize(c, t) : fixed(0), out;
        double factor = 1;
        int known = 1;
        if (!strcmp(fn, "slice") && nx == 2) {
            out = fixed(lit_uint(x[1].n, ls.max) - lit_uint(x[0].n, 0));
        } else if (!strcmp(fn, "lists.range") && nx == 1) {
            out = fixed(lit_uint(x[0].n, UINT64_MAX));
        } else if (!strcmp(fn, "reverse")) {
            out = ls;
        } else if (!strcmp(fn, "flatten")) {
            factor = nx == 1 ? (double)lit_uint(x[0].n, UINT64_MAX) : 1;
            out = ls;
        } else if (!strcmp(fn, "distinct")) {
            factor = 2;
            out = rmul(ls, ls);
        } else if (!strcmp(fn, "sort")) {
            factor = 2 + (strstr(o->sig, "string") || strstr(o->sig, "bytes") ? TRAVERSE : 0);
            out = rmul(ls, ls);
        } else {
            known = 0;
            out = fixed(0);
        }
        if (known) {
            res->size = out;
            *res_sized = 1;
            return radd(radd(rfactor(out, factor), fixed(1)), fixed(10));
        }
    }
    /* Kubernetes' library estimator next. */
    if (t && (!strcmp(fn, "isSorted") || !strcmp(fn, "sum") || !strcmp(fn, "max") ||
              !strcmp(fn, "min") || !strcmp(fn, "indexOf") || !strcmp(fn, "lastIndexOf") ||
              (!strcmp(fn, "includes") && c->p->env.kube_minor >= 37))) {
        if (t->i.type && t->i.type->kind == CEL_T_LIST) {
            struct rng el = fixed(1), es = elem_size(c, t, &str);
            if (str)
                el = radd(el, rfactor(es, TRAVERSE));
            return rmul(asize(c, t), el);
        }
        /* includes() on dyn may meet a list: one comparison per element. */
        return !strcmp(fn, "includes") ? asize(c, t) : rfactor(asize(c, t), TRAVERSE);
    }
    if (!strcmp(fn, "url") && nx == 1) {
        res->size = asize(c, &x[0]);
        *res_sized = 1;
        return rfactor(res->size, TRAVERSE);
    }
    if (t && (!strcmp(fn, "lowerAscii") || !strcmp(fn, "upperAscii") ||
              !strcmp(fn, "substring") || !strcmp(fn, "trim"))) {
        res->size = asize(c, t);
        *res_sized = 1;
        return rfactor(res->size, TRAVERSE);
    }
    if (t && !strcmp(fn, "replace") && nx >= 2) {
        struct rng s = asize(c, t), from = asize(c, &x[0]), to = asize(c, &x[1]), cnt, kept = {0, 0};
        if (from.min == 0) {
            cnt.max = s.max < UINT64_MAX ? s.max + 1 : s.max;
            kept.max = s.max;
        } else if (to.max <= from.min) {
            cnt.max = 0;
            kept.max = s.max;
        } else {
            cnt.max = (uint64_t)ceil((double)s.max / (double)from.min);
        }
        if (from.max == 0) {
            cnt.min = s.min < UINT64_MAX ? s.min + 1 : s.min;
            kept.min = s.min;
        } else if (from.max <= to.min) {
            cnt.min = 0;
            kept.min = s.min;
        } else {
            cnt.min = (uint64_t)ceil((double)s.min / (double)from.max);
        }
        res->size = radd(rmul(cnt, to), kept);
        *res_sized = 1;
        return rfactor(s, 2 * TRAVERSE);
    }
    if (t && !strcmp(fn, "split")) {
        struct rng s = asize(c, t);
        uint64_t max = s.max;
        if (nx > 1 && x[1].n->kind == CEL_N_INT)
            max = (uint64_t)x[1].n->lit.i;
        res->size.min = 0;
        res->size.max = max;
        *res_sized = 1;
        return rfactor(s, 2 * TRAVERSE);
    }
    if (t && !strcmp(fn, "join")) {
        struct rng ls = asize(c, t), r = {0, 0};
        if (t->i.type && t->i.type->kind == CEL_T_LIST)
            r = rmul(ls, elem_size(c, t, &str));
        if (nx > 0) {
            struct rng seps = {ls.min ? ls.min - 1 : 0, ls.max ? ls.max - 1 : 0};
            r = radd(r, rmul(asize(c, &x[0]), seps));
        }
        res->size = r;
        *res_sized = 1;
        return rfactor(r, TRAVERSE);
    }
    if (t && (!strcmp(fn, "find") || !strcmp(fn, "findAll")) && nx >= 1) {
        struct rng s = asize(c, t);
        res->size.min = 0;
        res->size.max = s.max;
        *res_sized = 1;
        return rmul(rfactor(radd(s, fixed(1)), TRAVERSE), rfactor(asize(c, &x[0]), REGEX));
    }
    if ((!strcmp(fn, "cidr") || !strcmp(fn, "isIP") || !strcmp(fn, "isCIDR") ||
         !strcmp(fn, "quantity") || !strcmp(fn, "isQuantity") || !strcmp(fn, "semver") ||
         !strcmp(fn, "isSemver")) && nx >= 1)
        return rfactor(asize(c, &x[0]), TRAVERSE);
    if (!strcmp(fn, "ip")) {
        if (t)
            return fixed(1);
        if (nx >= 1)
            return rfactor(asize(c, &x[0]), TRAVERSE);
    }
    if (!strcmp(fn, "ip.isCanonical") && nx >= 1)
        return rfactor(asize(c, &x[0]), 2 * TRAVERSE);
    if (!strcmp(fn, "masked") || !strcmp(fn, "prefixLength") || !strcmp(fn, "family") ||
        !strcmp(fn, "isUnspecified") || !strcmp(fn, "isLoopback") ||
        !strcmp(fn, "isLinkLocalMulticast") || !strcmp(fn, "isLinkLocalUnicast") ||
        !strcmp(fn, "isGlobalUnicast"))
        return fixed(1);
    if ((!strcmp(fn, "containsIP") || !strcmp(fn, "containsCIDR")) && nx >= 1) {
        struct rng ipsz = {4, 16}, r = rfactor(radd(ipsz, ipsz), TRAVERSE);
        if (!strcmp(fn, "containsCIDR")) {
            r = radd(r, rfactor(ipsz, TRAVERSE));
            r = radd(r, fixed(1));
        }
        /* The *_string overloads parse their argument too (by overload, not by type). */
        if (strstr(o->sig, ",string>"))
            r = radd(r, rfactor(asize(c, &x[0]), TRAVERSE));
        return r;
    }
    if (!strcmp(fn, "sign") || !strcmp(fn, "asInteger") || !strcmp(fn, "isInteger") ||
        !strcmp(fn, "asApproximateFloat") || !strcmp(fn, "isGreaterThan") ||
        !strcmp(fn, "isLessThan") || !strcmp(fn, "compareTo") || !strcmp(fn, "add") ||
        !strcmp(fn, "sub") || !strcmp(fn, "major") || !strcmp(fn, "minor") ||
        !strcmp(fn, "patch") || !strcmp(fn, "getScheme") || !strcmp(fn, "getHostname") ||
        !strcmp(fn, "getHost") || !strcmp(fn, "getPort") || !strcmp(fn, "getEscapedPath") ||
        !strcmp(fn, "getQuery") || !strcmp(fn, "format.named"))
        return fixed(1);
    if (t && !strcmp(fn, "validate") && nx >= 1)
        /* MaxNameFormatRegexSize (128) times the regex factor. */
        return rfactor(rfactor(asize(c, &x[0]), TRAVERSE), 128 * REGEX);
    if (!strcmp(fn, "_==_") && nx == 2 && x[0].i.type && x[1].i.type &&
        cel__type_exact(x[0].i.type, x[1].i.type)) {
        switch (x[0].i.type->kind) {
        case CEL_T_IP: case CEL_T_CIDR: case CEL_T_QUANTITY: case CEL_T_SEMVER:
            return fixed(1);
        case CEL_T_FORMAT: { /* MaxFormatSize */
            struct rng f = {1, 64};
            return rfactor(f, TRAVERSE);
        }
        default: break;
        }
    }
    /* 1.36's includes() (DRA's draCostEstimator). */
    if (t && !strcmp(fn, "includes")) {
        struct rng r = {0, 48};
        return r;
    }
    /* cel-go's ext.Sets (ext/sets.go estimateSetsCost): the two sizes multiplied. */
    if (!t && nx == 2 && (is(o, "sets.contains", NULL) || is(o, "sets.intersects", NULL) ||
                          is(o, "sets.equivalent", NULL))) {
        struct rng r = rmul(asize(c, &x[0]), asize(c, &x[1]));
        return radd(rfactor(r, is(o, "sets.equivalent", NULL) ? 2 : 1), fixed(1));
    }
    /* cel-go's own estimates (checker/cost.go functionCost). */
    if (t && is(o, "format", NULL))
        /* The receiver traversed; no result size, since cel-go cannot bound it: a
         * receiver of unknown size (a dyn of a quantity) makes the estimate unbounded. */
        return rfactor(asize(c, t), TRAVERSE);
    if (is(o, "strings.quote", NULL) && nx == 1) {
        sz = asize(c, &x[0]);
        res->size.min = sz.min + 2;
        res->size.max = add_sat(mul_sat(sz.max, 2), 2);
        *res_sized = 1;
        return rfactor(sz, TRAVERSE);
    }
    if (is(o, "bytes", "string>bytes")) {
        sz = asize(c, &x[0]);
        res->size.min = sz.min;
        res->size.max = mul_sat(sz.max, 4);
        *res_sized = 1;
        return rfactor(sz, TRAVERSE);
    }
    if (is(o, "string", "bytes>string")) {
        sz = asize(c, &x[0]);
        res->size.min = sz.min / 4;
        res->size.max = sz.max;
        *res_sized = 1;
        return rfactor(sz, TRAVERSE);
    }
    if (t && (is(o, "startsWith", NULL) || is(o, "endsWith", NULL)) && nx == 1)
        return rfactor(asize(c, &x[0]), TRAVERSE);
    if (is(o, "@in", "A,list(A)>bool"))
        return rfactor(asize(c, &x[1]), 1);
    if (t && is(o, "matches", NULL) && nx == 1)
        return rmul(rfactor(radd(asize(c, t), fixed(1)), TRAVERSE), rfactor(asize(c, &x[0]), REGEX));
    if (t && is(o, "contains", NULL) && nx == 1)
        return rmul(rfactor(asize(c, t), TRAVERSE), rfactor(asize(c, &x[0]), TRAVERSE));
    if (is(o, "_+_", "string,string>string") || is(o, "_+_", "bytes,bytes>bytes") ||
        is(o, "_+_", "list(A),list(A)>list(A)")) {
        res->size = radd(asize(c, &x[0]), asize(c, &x[1]));
        *res_sized = 1;
        /* cel-go's entrySizeEstimate.union: nil unless both sides have one
         * (dyn([1]) + dyn(1.0) has no element size: its items are of unknown size). */
        if (x[0].i.has_entry && x[1].i.has_entry) {
            res->has_entry = 1;
            res->ekind = x[0].i.ekind;
            res->ekey = runion(x[0].i.ekey, x[1].i.ekey);
            res->eval = runion(x[0].i.eval, x[1].i.eval);
        }
        if (o->sig[0] == 'l')
            return fixed(1);
        return rfactor(res->size, TRAVERSE);
    }
    if (!strcmp(fn, "_==_") || !strcmp(fn, "_!=_") ||
        ((!strcmp(fn, "_<_") || !strcmp(fn, "_>_") || !strcmp(fn, "_<=_") ||
          !strcmp(fn, "_>=_")) &&
         (strstr(o->sig, "string,string") || strstr(o->sig, "bytes,bytes")))) {
        struct rng l = asize(c, &x[0]), r = asize(c, &x[1]), e;
        uint64_t smallest = l.max < r.max ? l.max : r.max;
        e.min = smallest > 0;
        e.max = smallest;
        return rfactor(e, TRAVERSE);
    }
    return fixed(1);
}

static struct info cost_call_like(struct coster *c, const struct cel__node *n,
                                  const struct var *vars, const char *fn, int member)
{
    struct info r;
    struct arg a[8];
    struct rng sum = {0, 0}, fnc = {UINT64_MAX, 0}, argsum = {0, 0};
    int any = 0, have_size = 0;
    size_t na = n->nkid < 8 ? n->nkid : 8;

    memset(&r, 0, sizeof(r));
    r.type = ftype(c, n);
    /* dyn(x) costs 1 and passes x's sizes on. */
    if (!strcmp(fn, "dyn") && na == 1) {
        struct info i = cost(c, n->kid[0], vars);
        struct rng s;
        r = i;
        r.npath = 0; /* cel-go copies the sizes, not the path */
        r.cost = radd(fixed(1), i.cost);
        if (size_of(c, n->kid[0], &i, NULL, &s)) {
            r.has_size = 1;
            r.size = s;
        }
        r.type = ftype(c, n);
        return r;
    }
    for (size_t k = 0; k < na; k++) {
        a[k] = mkarg(c, n->kid[k], vars);
        if (k >= (size_t)member)
            argsum = radd(argsum, a[k].i.cost);
    }
    if (member)
        sum = radd(sum, a[0].i.cost);
    for (int k = 0; k < n->ncand; k++) {
        const struct cel__overload *o = &cel__ovl[n->cand[k]];
        struct info res;
        int sized;
        struct rng fc;
        memset(&res, 0, sizeof(res));
        fc = call_cost(c, o, a, na, member, &res, &sized);
        fnc = runion(fnc, fc);
        any = 1;
        if (sized) {
            r.size = have_size ? runion(r.size, res.size) : res.size;
            have_size = 1;
        }
        if (res.has_entry) {
            r.has_entry = 1;
            r.ekind = res.ekind;
            r.ekey = res.ekey;
            r.eval = res.eval;
        }
        /* Indexing: the element's size and path. */
        if (is(o, "_[_]", "list(A),int>A") || is(o, "_[_]", "map(A,B),A>B")) {
            int list = o->sig[0] == 'l';
            if (a[0].i.has_entry) {
                r.size = a[0].i.eval;
                have_size = 1;
            }
            path_append(&r, &a[0].i, list ? "@items" : "@values");
        }
    }
    if (!any)
        fnc = fixed(0);
    r.has_size = have_size;
    if (!have_size) {
        struct rng s;
        if (size_of(c, NULL, &r, NULL, &s)) {
            r.size = s;
            r.has_size = 1;
        }
    }
    r.cost = radd(sum, radd(fnc, argsum));
    return r;
}

/* `&&`, `||` (cel-go: [lhs.min, lhs.max + rhs.max]) and `?:`. */
static struct info cost_logic(struct coster *c, const struct cel__node *n, const struct var *vars)
{
    struct info l = cost(c, n->kid[0], vars), r = cost(c, n->kid[1], vars), out;

    memset(&out, 0, sizeof(out));
    out.type = &cel__t_bool;
    out.has_size = 1;
    out.size = fixed(1);
    out.cost.min = l.cost.min;
    out.cost.max = add_sat(l.cost.max, r.cost.max);
    return out;
}

static struct info cost_cond(struct coster *c, const struct cel__node *n, const struct var *vars)
{
    struct arg k = mkarg(c, n->kid[0], vars), a = mkarg(c, n->kid[1], vars),
               b = mkarg(c, n->kid[2], vars);
    struct info out;

    memset(&out, 0, sizeof(out));
    out.type = ftype(c, n);
    out.size = runion(asize(c, &a), asize(c, &b));
    out.has_size = 1;
    if (a.i.has_entry && b.i.has_entry) {
        out.has_entry = 1;
        out.ekind = a.i.ekind;
        out.ekey = runion(a.i.ekey, b.i.ekey);
        out.eval = runion(a.i.eval, b.i.eval);
    }
    out.cost = radd(k.i.cost, runion(a.i.cost, b.i.cost));
    return out;
}

static struct info literal_list(struct coster *c, const struct cel__node *n,
                                const struct var *vars)
{
    struct info out;
    struct rng item = {UINT64_MAX, 0}, sum = {0, 0};

    memset(&out, 0, sizeof(out));
    out.type = ftype(c, n);
    if (n->nkid == 0)
        item.min = 0;
    for (size_t k = 0; k < n->nkid; k++) {
        struct arg a = mkarg(c, n->kid[k], vars);
        sum = radd(sum, a.i.cost);
        item = runion(item, asize(c, &a));
    }
    out.has_entry = 1;
    out.ekind = CEL_T_LIST;
    out.ekey = fixed(1);
    out.eval = item;
    out.cost = radd(sum, fixed(10));
    return out;
}

static struct info literal_map(struct coster *c, const struct cel__node *n,
                               const struct var *vars)
{
    struct info out;
    struct rng ks = {UINT64_MAX, 0}, vs = {UINT64_MAX, 0}, sum = {0, 0};

    memset(&out, 0, sizeof(out));
    out.type = ftype(c, n);
    if (n->nkid == 0)
        ks.min = vs.min = 0;
    for (size_t k = 0; k + 1 < n->nkid; k += 2) {
        struct arg a = mkarg(c, n->kid[k], vars), b = mkarg(c, n->kid[k + 1], vars);
        sum = radd(radd(sum, a.i.cost), b.i.cost);
        ks = runion(ks, asize(c, &a));
        vs = runion(vs, asize(c, &b));
    }
    out.has_entry = 1;
    out.ekind = CEL_T_MAP;
    out.ekey = ks;
    out.eval = vs;
    out.cost = radd(sum, fixed(30));
    return out;
}

/* The variable of a comprehension over r: cel-go pushIterSingle / pushIterKey / Value. */
static struct info iter_var(struct coster *c, const struct cel__node *range,
                            const struct info *ri, int which /* 0 single, 1 key, 2 value */)
{
    struct info v;
    const struct cel__type *t = ri->type;
    int list = ri->has_entry ? ri->ekind == CEL_T_LIST : t && t->kind == CEL_T_LIST;

    (void)range;
    (void)c;
    memset(&v, 0, sizeof(v));
    if (which == 1 && list) {
        v.type = &cel__t_int;
        return v; /* the index: no path, its type's size */
    }
    if (ri->has_entry) {
        v.has_size = 1;
        v.size = (which == 0 && !list) || which == 1 ? ri->ekey : ri->eval;
    }
    path_append(&v, ri, list || which == 2 ? (list ? "@items" : "@values") : "@keys");
    if (t && t->np)
        v.type = list ? t->p[0] : which == 2 ? t->p[1] : t->p[0];
    return v;
}

static struct info cost_comp(struct coster *c, const struct cel__node *n, const struct var *vars)
{
    struct info r = cost(c, n->kid[0], vars), out, body, filter = {0};
    struct var v1, v2, accu;
    const struct var *in = vars;
    int op = n->op, two = n->name2 != NULL;
    struct rng loop = {0, 0}, step, rsum, cnt;

    memset(&out, 0, sizeof(out));
    out.type = ftype(c, n);
    if (op == CEL_M_BIND) {
        /* costBind: the empty range list (10), the value, the body. */
        v1.name = n->name;
        v1.info = r;
        {
            struct rng s;
            if (size_of(c, n->kid[0], &r, NULL, &s)) {
                v1.info.has_size = 1;
                v1.info.size = s;
            }
        }
        v1.up = vars;
        body = cost(c, n->kid[1], &v1);
        out = body;
        out.cost = radd(radd(fixed(10), r.cost), body.cost);
        return out;
    }
    if (op == CEL_M_OPTMAP || op == CEL_M_OPTFLATMAP) {
        /* target.hasValue() ? optional.of(cel.bind(v, target.value(), e)) : optional.none() */
        v1.name = n->name;
        memset(&v1.info, 0, sizeof(v1.info));
        v1.info.type = r.type && r.type->kind == CEL_T_OPTIONAL ? r.type->p[0] : &cel__t_dyn;
        v1.up = vars;
        body = cost(c, n->kid[1], &v1);
        struct rng cond = radd(fixed(1), r.cost), val = radd(fixed(1), r.cost),
                   bind = radd(radd(fixed(10), val), body.cost),
                   some = op == CEL_M_OPTMAP ? radd(fixed(1), bind) : bind;
        out.cost = radd(cond, runion(some, fixed(1)));
        return out;
    }
    /* The accumulator and the range's variables. */
    accu.name = "@result";
    memset(&accu.info, 0, sizeof(accu.info));
    accu.up = vars;
    if (op == CEL_M_ALL || op == CEL_M_EXISTS || op == CEL_M_ALL2 || op == CEL_M_EXISTS2)
        accu.info.type = &cel__t_bool, accu.info.has_size = 1, accu.info.size = fixed(1);
    else if (op == CEL_M_EXISTS_ONE || op == CEL_M_EXISTS_ONE2)
        accu.info.type = &cel__t_int, accu.info.has_size = 1, accu.info.size = fixed(1);
    else
        accu.info.has_size = 1, accu.info.size = fixed(0);
    v1.name = n->name;
    v1.info = iter_var(c, n->kid[0], &r, two ? 1 : 0);
    v1.up = &accu;
    in = &v1;
    if (two) {
        v2.name = n->name2;
        v2.info = iter_var(c, n->kid[0], &r, 2);
        v2.up = &v1;
        in = &v2;
    }
    body = cost(c, n->kid[1], in);
    if (n->nkid > 2)
        filter = cost(c, n->kid[2], in);
    switch (op) {
    case CEL_M_ALL: case CEL_M_ALL2:
        /* @not_strictly_false(@result); @result && p */
        loop = fixed(2);
        step.min = 1;
        step.max = add_sat(1, body.cost.max);
        rsum = fixed(1);
        break;
    case CEL_M_EXISTS: case CEL_M_EXISTS2:
        /* @not_strictly_false(!@result); @result || p */
        loop = fixed(3);
        step.min = 1;
        step.max = add_sat(1, body.cost.max);
        rsum = fixed(1);
        break;
    case CEL_M_EXISTS_ONE: case CEL_M_EXISTS_ONE2:
        /* p ? @result + 1 : @result; result @result == 1 */
        step = radd(body.cost, runion(fixed(2), fixed(1)));
        rsum = fixed(2);
        break;
    case CEL_M_FILTER:
        /* p ? @result + [x] : @result */
        step = radd(body.cost, runion(fixed(1 + 1 + 10 + 1), fixed(1)));
        rsum = fixed(1);
        break;
    case CEL_M_MAP: case CEL_M_TLIST: case CEL_M_SORTBY: {
        /* [f ?] @result + [t] [: @result] */
        struct rng add = radd(fixed(1 + 1 + 10), body.cost);
        step = n->nkid > 2 ? radd(filter.cost, runion(add, fixed(1))) : add;
        rsum = fixed(1);
        break;
    }
    default: { /* transformMap(Entry): cel.@mapInsert(@result, k, t) */
        struct rng ins = radd(fixed(1 + 1 + (op == CEL_M_TMAP ? 1 : 0)), body.cost);
        step = n->nkid > 2 ? radd(filter.cost, runion(ins, fixed(1))) : ins;
        rsum = fixed(1);
        break;
    }
    }
    cnt = size_or_unknown(c, n->kid[0], &r, n->kid[0]->kind == CEL_N_IDENT
                                               ? lookup(vars, n->kid[0]->name) : NULL);
    {
        /* accumulator init: a literal (0) or [] / {} (10 / 30). */
        struct rng init = fixed(op == CEL_M_TMAP || op == CEL_M_TMAPENTRY ? 30
                                : (op == CEL_M_MAP || op == CEL_M_FILTER || op == CEL_M_TLIST ||
                                   op == CEL_M_SORTBY) ? 10 : 0);
        out.cost = radd(radd(radd(r.cost, init), rsum), rmul(cnt, radd(step, loop)));
    }
    if (op == CEL_M_MAP || op == CEL_M_FILTER || op == CEL_M_TLIST || op == CEL_M_TMAP ||
        op == CEL_M_TMAPENTRY || op == CEL_M_SORTBY) {
        out.has_size = 1;
        out.size = cnt;
    } else {
        out.has_size = 1;
        out.size = fixed(1);
    }
    /* The accumulated list's elements: the [] it starts from united with [elem]
     * (cel-go: the entry size of the loop step). */
    if (op == CEL_M_MAP || op == CEL_M_FILTER || op == CEL_M_TLIST || op == CEL_M_SORTBY) {
        struct rng es = op == CEL_M_MAP || op == CEL_M_TLIST
                            ? size_or_unknown(c, n->kid[1], &body, NULL)
                            : size_or_unknown(c, NULL, two ? &v2.info : &v1.info, NULL);
        out.has_entry = 1;
        out.ekind = CEL_T_LIST;
        out.ekey = fixed(1);
        out.eval.min = 0;
        out.eval.max = es.max;
    }
    if (op == CEL_M_SORTBY)
        out.cost = radd(out.cost, fixed(1 + 10));
    return out;
}

static struct info cost(struct coster *c, const struct cel__node *n, const struct var *vars)
{
    struct info r;
    const struct var *v;

    memset(&r, 0, sizeof(r));
    r.type = ftype(c, n);
    switch (n->kind) {
    case CEL_N_INT: case CEL_N_UINT: case CEL_N_DOUBLE: case CEL_N_STRING: case CEL_N_BYTES:
    case CEL_N_BOOL: case CEL_N_NULL:
        return r; /* constCost 0 */
    case CEL_N_IDENT:
        if ((v = lookup(vars, n->name))) {
            r.npath = v->info.npath;
            memcpy(r.path, v->info.path, sizeof(r.path));
            r.has_entry = v->info.has_entry;
            r.has_vsize = v->info.has_size;
            r.vsize = v->info.size;
            r.ekind = v->info.ekind;
            r.ekey = v->info.ekey;
            r.eval = v->info.eval;
        } else {
            r.path[0] = n->name;
            r.npath = 1;
        }
        r.cost = fixed(1);
        return r;
    case CEL_N_SELECT: {
        struct info o = cost(c, n->kid[0], vars);
        if (n->test_only) {
            r.cost = o.cost; /* PresenceTestHasCost(false) */
            return r;
        }
        r.cost = o.cost;
        /* `.?f` is the call _?._(operand, "f"): 1; a plain selection on a map or
         * object is 1 more. */
        if (n->optional || (o.type && (o.type->kind == CEL_T_MAP ||
                                       o.type->kind == CEL_T_DEVICE ||
                                       o.type->kind == CEL_T_PARAM)))
            r.cost = radd(r.cost, fixed(1));
        if (!n->optional) /* a call in cel-go: no path */
            path_append(&r, &o, n->name);
        return r;
    }
    case CEL_N_INDEX:
        return cost_call_like(c, n, vars, n->optional ? "_[?_]" : "_[_]", 0);
    case CEL_N_CALL: return cost_call_like(c, n, vars, n->name, n->recv);
    case CEL_N_UNARY: return cost_call_like(c, n, vars, cel__op_name(n->op), 0);
    case CEL_N_BINARY:
        if (n->op == CEL_OP_AND || n->op == CEL_OP_OR)
            return cost_logic(c, n, vars);
        return cost_call_like(c, n, vars, cel__op_name(n->op), 0);
    case CEL_N_COND: return cost_cond(c, n, vars);
    case CEL_N_LIST: return literal_list(c, n, vars);
    case CEL_N_MAP: return literal_map(c, n, vars);
    case CEL_N_COMP: return cost_comp(c, n, vars);
    }
    return r;
}

uint64_t cel__estimate_cost(struct cel_program *p, struct cel__types *ts)
{
    struct coster c = {p, ts};

    return cost(&c, p->root, NULL).cost.max;
}
