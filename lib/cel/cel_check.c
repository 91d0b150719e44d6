/*
 * cel_check.c - type checking against the DRA environment, the static driver
 * and attribute analyses, and the public compile entry points.
 *
 * The type system is deliberately small: primitive kinds, list(T), map(K, V),
 * the device object and dyn.  dyn unifies with everything, so the checker
 * only rejects what is certainly wrong, as CEL-Go's checker does.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

static const struct cel__type t_dyn = {CEL_T_DYN, NULL, NULL};
static const struct cel__type t_bool = {CEL_T_BOOL, NULL, NULL};
static const struct cel__type t_int = {CEL_T_INT, NULL, NULL};
static const struct cel__type t_uint = {CEL_T_UINT, NULL, NULL};
static const struct cel__type t_double = {CEL_T_DOUBLE, NULL, NULL};
static const struct cel__type t_string = {CEL_T_STRING, NULL, NULL};
static const struct cel__type t_bytes = {CEL_T_BYTES, NULL, NULL};
static const struct cel__type t_null = {CEL_T_NULL, NULL, NULL};
static const struct cel__type t_type = {CEL_T_TYPE, NULL, NULL};
static const struct cel__type t_semver = {CEL_T_SEMVER, NULL, NULL};
static const struct cel__type t_quantity = {CEL_T_QUANTITY, NULL, NULL};
static const struct cel__type t_device = {CEL_T_DEVICE, NULL, NULL};
static const struct cel__type t_list_dyn = {CEL_T_LIST, NULL, &t_dyn};
static const struct cel__type t_attr_domain = {CEL_T_MAP, &t_string, &t_dyn};
static const struct cel__type t_attrs = {CEL_T_MAP, &t_string, &t_attr_domain};
static const struct cel__type t_cap_domain = {CEL_T_MAP, &t_string, &t_quantity};
static const struct cel__type t_caps = {CEL_T_MAP, &t_string, &t_cap_domain};

/* Fields of the `device` variable (dra-facts.md section 3). */
static const struct {
    const char *name;
    const struct cel__type *type;
} device_fields[] = {
    {"driver", &t_string},
    {"attributes", &t_attrs},
    {"capacity", &t_caps},
    {"allowMultipleAllocations", &t_bool},
};

/* Identifiers that name types, usable as values (`type(x) == int`). */
static const char *const type_idents[] = {
    "int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type",
};

const char *cel__tkind_name(enum cel__tkind k)
{
    switch (k) {
    case CEL_T_DYN: return "dyn";
    case CEL_T_BOOL: return "bool";
    case CEL_T_INT: return "int";
    case CEL_T_UINT: return "uint";
    case CEL_T_DOUBLE: return "double";
    case CEL_T_STRING: return "string";
    case CEL_T_BYTES: return "bytes";
    case CEL_T_NULL: return "null_type";
    case CEL_T_LIST: return "list";
    case CEL_T_MAP: return "map";
    case CEL_T_TYPE: return "type";
    case CEL_T_SEMVER: return "kubernetes.Semver";
    case CEL_T_QUANTITY: return "kubernetes.Quantity";
    case CEL_T_DEVICE: return "kubernetes.DRADevice";
    }
    return "?";
}

static void put(char *buf, size_t n, size_t *pos, const char *s)
{
    size_t len = strlen(s);

    if (*pos >= n)
        return;
    if (len > n - *pos - 1)
        len = n - *pos - 1;
    memcpy(buf + *pos, s, len);
    *pos += len;
    buf[*pos] = '\0';
}

static void type_put(const struct cel__type *t, char *buf, size_t n, size_t *pos)
{
    if (t->kind == CEL_T_LIST) {
        put(buf, n, pos, "list(");
        type_put(t->elem, buf, n, pos);
        put(buf, n, pos, ")");
    } else if (t->kind == CEL_T_MAP) {
        put(buf, n, pos, "map(");
        type_put(t->key, buf, n, pos);
        put(buf, n, pos, ", ");
        type_put(t->elem, buf, n, pos);
        put(buf, n, pos, ")");
    } else {
        put(buf, n, pos, cel__tkind_name(t->kind));
    }
}

/* Writes "map(string, list(int))" style names, truncated to buf. */
static void type_str(const struct cel__type *t, char *buf, size_t n)
{
    size_t pos = 0;

    buf[0] = '\0';
    type_put(t, buf, n, &pos);
}

struct scope {
    const char *name;
    const struct scope *up;
};

struct checker {
    struct cel_program *p;
    struct dd_err *err;
    enum dd_rc rc;
};

static const struct cel__type *fail(struct checker *ck, const struct cel__node *n,
                                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static const struct cel__type *fail(struct checker *ck, const struct cel__node *n,
                                    const char *fmt, ...)
{
    char what[400];
    va_list ap;

    if (ck->rc == DD_OK) {
        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        ck->rc = cel__fail_at(ck->err, DD_ETYPE, ck->p->src, ck->p->len, n->line, n->col, "%s",
                              what);
    }
    return NULL;
}

static const struct cel__type *mk(struct checker *ck, enum cel__tkind k,
                                  const struct cel__type *key, const struct cel__type *elem)
{
    struct cel__type *t = cel__alloc(&ck->p->arena, sizeof(*t));

    if (!t) {
        if (ck->rc == DD_OK)
            ck->rc = dd_failf(ck->err, DD_ENOMEM, "out of memory while checking CEL");
        return NULL;
    }
    t->kind = k;
    t->key = key;
    t->elem = elem;
    return t;
}

static int is_dyn(const struct cel__type *t)
{
    return t->kind == CEL_T_DYN;
}

static int is_num(const struct cel__type *t)
{
    return t->kind == CEL_T_INT || t->kind == CEL_T_UINT || t->kind == CEL_T_DOUBLE;
}

static int same(const struct cel__type *a, const struct cel__type *b)
{
    if (is_dyn(a) || is_dyn(b))
        return 1;
    if (a->kind != b->kind)
        return 0;
    if (a->kind == CEL_T_LIST)
        return same(a->elem, b->elem);
    if (a->kind == CEL_T_MAP)
        return same(a->key, b->key) && same(a->elem, b->elem);
    return 1;
}

/* The common type of two branches: the type itself when equal, else dyn. */
static const struct cel__type *join(const struct cel__type *a, const struct cel__type *b)
{
    if (!a)
        return b;
    if (a->kind == b->kind && (a->kind != CEL_T_LIST && a->kind != CEL_T_MAP))
        return a;
    return &t_dyn;
}

static const struct cel__type *no_overload(struct checker *ck, const struct cel__node *n,
                                           const char *fn, const struct cel__type *a,
                                           const struct cel__type *b)
{
    char sa[160], sb[160];

    type_str(a, sa, sizeof(sa));
    if (!b)
        return fail(ck, n, "found no matching overload for '%s' applied to '(%s)'", fn, sa);
    type_str(b, sb, sizeof(sb));
    return fail(ck, n, "found no matching overload for '%s' applied to '(%s, %s)'", fn, sa, sb);
}

static const struct cel__type *check(struct checker *ck, struct cel__node *n,
                                     const struct scope *sc);

static const struct cel__type *check_ident(struct checker *ck, struct cel__node *n,
                                           const struct scope *sc)
{
    for (const struct scope *s = sc; s; s = s->up)
        if (strcmp(s->name, n->name) == 0)
            return &t_dyn;
    if (strcmp(n->name, "device") == 0)
        return &t_device;
    for (size_t i = 0; i < sizeof(type_idents) / sizeof(type_idents[0]); i++)
        if (strcmp(type_idents[i], n->name) == 0)
            return &t_type;
    return fail(ck, n, "undeclared reference to '%s' (in container '')", n->name);
}

static const struct cel__type *check_select(struct checker *ck, struct cel__node *n,
                                            const struct scope *sc)
{
    const struct cel__type *t = check(ck, n->kid[0], sc), *r = NULL;
    char ts[160];

    if (!t)
        return NULL;
    if (t->kind == CEL_T_DEVICE) {
        for (size_t i = 0; i < sizeof(device_fields) / sizeof(device_fields[0]); i++)
            if (strcmp(device_fields[i].name, n->name) == 0)
                r = device_fields[i].type;
        if (!r)
            return fail(ck, n, "undefined field '%s'", n->name);
    } else if (t->kind == CEL_T_MAP) {
        if (!is_dyn(t->key) && t->key->kind != CEL_T_STRING)
            return no_overload(ck, n, "_._", t, &t_string);
        r = t->elem;
    } else if (is_dyn(t)) {
        r = &t_dyn;
    } else {
        type_str(t, ts, sizeof(ts));
        return fail(ck, n, "type '%s' does not support field selection", ts);
    }
    return n->test_only ? &t_bool : r;
}

static const struct cel__type *check_index(struct checker *ck, struct cel__node *n,
                                           const struct scope *sc)
{
    const struct cel__type *t = check(ck, n->kid[0], sc), *k;

    if (!t || !(k = check(ck, n->kid[1], sc)))
        return NULL;
    if (t->kind == CEL_T_LIST) {
        if (!is_dyn(k) && !is_num(k))
            return no_overload(ck, n, "_[_]", t, k);
        return t->elem;
    }
    if (t->kind == CEL_T_MAP) {
        if (!same(t->key, k) && !(is_num(t->key) && is_num(k)))
            return no_overload(ck, n, "_[_]", t, k);
        return t->elem;
    }
    if (is_dyn(t))
        return &t_dyn;
    return no_overload(ck, n, "_[_]", t, k);
}

static const struct cel__type *kind_type(struct checker *ck, enum cel__tkind k)
{
    switch (k) {
    case CEL_T_BOOL: return &t_bool;
    case CEL_T_INT: return &t_int;
    case CEL_T_UINT: return &t_uint;
    case CEL_T_DOUBLE: return &t_double;
    case CEL_T_STRING: return &t_string;
    case CEL_T_BYTES: return &t_bytes;
    case CEL_T_NULL: return &t_null;
    case CEL_T_TYPE: return &t_type;
    case CEL_T_SEMVER: return &t_semver;
    case CEL_T_QUANTITY: return &t_quantity;
    case CEL_T_LIST: return &t_list_dyn;
    case CEL_T_MAP: return mk(ck, CEL_T_MAP, &t_dyn, &t_dyn);
    default: return &t_dyn;
    }
}

static const struct cel__type *check_call(struct checker *ck, struct cel__node *n,
                                          const struct scope *sc)
{
    const struct cel__type *t0 = NULL;
    int ix;

    for (size_t i = 0; i < n->nkid; i++) {
        const struct cel__type *t = check(ck, n->kid[i], sc);
        if (!t)
            return NULL;
        if (i == 0)
            t0 = t;
    }
    /* Functions are looked up on the kind of the first argument (the
     * receiver for method calls) when it is statically known. */
    ix = cel__builtin_find(n->name, n->recv, n->nkid, t0 ? t0->kind : CEL_T_DYN);
    if (ix == -1)
        return fail(ck, n, "undeclared reference to '%s' (in container '')", n->name);
    if (ix < 0) {
        char ts[160];
        type_str(t0 ? t0 : &t_dyn, ts, sizeof(ts));
        if (n->recv)
            return fail(ck, n, "found no matching overload for '%s' applied to '%s.(%zu args)'",
                        n->name, ts, n->nkid - 1);
        return fail(ck, n, "found no matching overload for '%s' applied to '(%s%s)'", n->name,
                    n->nkid ? ts : "", n->nkid > 1 ? ", ..." : "");
    }
    n->builtin = ix;
    return kind_type(ck, cel__builtins[ix].result);
}

static const struct cel__type *check_binary(struct checker *ck, struct cel__node *n,
                                            const struct scope *sc)
{
    const struct cel__type *a = check(ck, n->kid[0], sc), *b;
    const char *fn = cel__op_name(n->op);

    if (!a || !(b = check(ck, n->kid[1], sc)))
        return NULL;
    switch (n->op) {
    case CEL_OP_AND:
    case CEL_OP_OR:
        if ((!is_dyn(a) && a->kind != CEL_T_BOOL) || (!is_dyn(b) && b->kind != CEL_T_BOOL))
            return no_overload(ck, n, fn, a, b);
        return &t_bool;
    case CEL_OP_EQ:
    case CEL_OP_NE:
        if (!same(a, b) && !(is_num(a) && is_num(b)) && a->kind != CEL_T_NULL &&
            b->kind != CEL_T_NULL)
            return no_overload(ck, n, fn, a, b);
        return &t_bool;
    case CEL_OP_LT:
    case CEL_OP_LE:
    case CEL_OP_GT:
    case CEL_OP_GE:
        if (is_dyn(a) || is_dyn(b) || (is_num(a) && is_num(b)))
            return &t_bool;
        if (a->kind == b->kind && (a->kind == CEL_T_STRING || a->kind == CEL_T_BYTES ||
                                   a->kind == CEL_T_BOOL))
            return &t_bool;
        return no_overload(ck, n, fn, a, b);
    case CEL_OP_IN:
        /* Membership uses equality, so numbers of any kind may match. */
        if (b->kind == CEL_T_LIST && (same(a, b->elem) || (is_num(a) && is_num(b->elem))))
            return &t_bool;
        if (b->kind == CEL_T_MAP && (same(a, b->key) || (is_num(a) && is_num(b->key))))
            return &t_bool;
        if (is_dyn(b))
            return &t_bool;
        return no_overload(ck, n, fn, a, b);
    case CEL_OP_ADD:
        if (is_dyn(a) || is_dyn(b))
            return &t_dyn;
        if (a->kind == b->kind && (is_num(a) || a->kind == CEL_T_STRING ||
                                   a->kind == CEL_T_BYTES))
            return a;
        if (a->kind == CEL_T_LIST && b->kind == CEL_T_LIST)
            return same(a->elem, b->elem) ? a : &t_list_dyn;
        return no_overload(ck, n, fn, a, b);
    default:
        if (is_dyn(a) || is_dyn(b))
            return &t_dyn;
        if (a->kind == b->kind && is_num(a) && (n->op != CEL_OP_MOD || a->kind != CEL_T_DOUBLE))
            return a;
        return no_overload(ck, n, fn, a, b);
    }
}

static const struct cel__type *check_comp(struct checker *ck, struct cel__node *n,
                                          const struct scope *sc)
{
    const struct cel__type *r = check(ck, n->kid[0], sc), *t;
    struct scope inner = {n->name, sc};

    if (!r)
        return NULL;
    if (!is_dyn(r) && r->kind != CEL_T_LIST && r->kind != CEL_T_MAP) {
        char ts[160];
        type_str(r, ts, sizeof(ts));
        return fail(ck, n, "expression of type '%s' cannot be range of a comprehension", ts);
    }
    for (size_t i = 1; i < n->nkid; i++) {
        t = check(ck, n->kid[i], &inner);
        if (!t)
            return NULL;
        /* Predicates (all kinds but map's transform, kid 1) must be bool. */
        if ((n->op != CEL_M_MAP || i == 2) && !is_dyn(t) && t->kind != CEL_T_BOOL) {
            char ts[160];
            type_str(t, ts, sizeof(ts));
            return fail(ck, n->kid[i], "macro predicate must be bool, not %s", ts);
        }
    }
    switch (n->op) {
    case CEL_M_MAP: return &t_list_dyn;
    case CEL_M_FILTER:
        return r->kind == CEL_T_LIST ? r
               : r->kind == CEL_T_MAP ? mk(ck, CEL_T_LIST, NULL, r->key)
                                      : &t_list_dyn;
    default: return &t_bool;
    }
}

static const struct cel__type *check(struct checker *ck, struct cel__node *n,
                                     const struct scope *sc)
{
    const struct cel__type *t = NULL, *e = NULL, *k = NULL;

    switch (n->kind) {
    case CEL_N_INT: t = &t_int; break;
    case CEL_N_UINT: t = &t_uint; break;
    case CEL_N_DOUBLE: t = &t_double; break;
    case CEL_N_STRING: t = &t_string; break;
    case CEL_N_BYTES: t = &t_bytes; break;
    case CEL_N_BOOL: t = &t_bool; break;
    case CEL_N_NULL: t = &t_null; break;
    case CEL_N_IDENT: t = check_ident(ck, n, sc); break;
    case CEL_N_SELECT: t = check_select(ck, n, sc); break;
    case CEL_N_INDEX: t = check_index(ck, n, sc); break;
    case CEL_N_CALL: t = check_call(ck, n, sc); break;
    case CEL_N_LIST:
        for (size_t i = 0; i < n->nkid; i++) {
            const struct cel__type *x = check(ck, n->kid[i], sc);
            if (!x)
                return NULL;
            e = join(e, x);
        }
        t = mk(ck, CEL_T_LIST, NULL, e ? e : &t_dyn);
        break;
    case CEL_N_MAP:
        for (size_t i = 0; i + 1 < n->nkid; i += 2) {
            const struct cel__type *x = check(ck, n->kid[i], sc), *y;
            if (!x || !(y = check(ck, n->kid[i + 1], sc)))
                return NULL;
            if (!is_dyn(x) && x->kind != CEL_T_STRING && x->kind != CEL_T_INT &&
                x->kind != CEL_T_UINT && x->kind != CEL_T_BOOL) {
                char ts[160];
                type_str(x, ts, sizeof(ts));
                return fail(ck, n->kid[i], "unsupported map key type: %s", ts);
            }
            k = join(k, x);
            e = join(e, y);
        }
        t = mk(ck, CEL_T_MAP, k ? k : &t_dyn, e ? e : &t_dyn);
        break;
    case CEL_N_UNARY: {
        const struct cel__type *a = check(ck, n->kid[0], sc);
        if (!a)
            return NULL;
        if (n->op == CEL_OP_NOT && (is_dyn(a) || a->kind == CEL_T_BOOL))
            t = &t_bool;
        else if (n->op == CEL_OP_NEG && (is_dyn(a) || a->kind == CEL_T_INT ||
                                         a->kind == CEL_T_DOUBLE))
            t = a;
        else
            return no_overload(ck, n, cel__op_name(n->op), a, NULL);
        break;
    }
    case CEL_N_BINARY: t = check_binary(ck, n, sc); break;
    case CEL_N_COND: {
        const struct cel__type *c = check(ck, n->kid[0], sc), *a, *b;
        if (!c || !(a = check(ck, n->kid[1], sc)) || !(b = check(ck, n->kid[2], sc)))
            return NULL;
        if (!is_dyn(c) && c->kind != CEL_T_BOOL)
            return no_overload(ck, n, "_?_:_", c, NULL);
        t = join(a, b);
        break;
    }
    case CEL_N_COMP: t = check_comp(ck, n, sc); break;
    }
    n->type = t;
    return t;
}

enum dd_rc cel__check(struct cel_program *p, struct dd_err *err)
{
    struct checker ck = {p, err, DD_OK};
    const struct cel__type *t = check(&ck, p->root, NULL);
    char ts[160];

    if (!t)
        return ck.rc != DD_OK ? ck.rc : dd_failf(err, DD_ENOMEM, "out of memory");
    if (!is_dyn(t) && t->kind != CEL_T_BOOL) {
        type_str(t, ts, sizeof(ts));
        return cel__fail_at(err, DD_ETYPE, p->src, p->len, p->root->line, p->root->col,
                            "must evaluate to bool, not %s", ts);
    }
    return DD_OK;
}

/* ---- Static analysis --------------------------------------------------------- */

static int is_device_field(const struct cel__node *n, const char *field)
{
    return n->kind == CEL_N_SELECT && !n->test_only && strcmp(n->name, field) == 0 &&
           n->kid[0]->kind == CEL_N_IDENT && strcmp(n->kid[0]->name, "device") == 0;
}

/* A driver set under construction: refs into the program's literals. */
struct dset {
    enum cel_drivers_kind kind;
    struct cel_driver_ref *v;
    size_t n;
};

static int dset_has(const struct dset *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return 1;
    return 0;
}

static int dset_add(struct cel_program *p, struct dset *s, const char *name, int line, int col)
{
    if (dset_has(s, name))
        return 0;
    struct cel_driver_ref *v = cel__alloc(&p->arena, (s->n + 1) * sizeof(*v));
    if (!v)
        return -1;
    if (s->n)
        memcpy(v, s->v, s->n * sizeof(*v));
    v[s->n].name = name;
    v[s->n].line = line;
    v[s->n].col = col;
    s->v = v;
    s->n++;
    s->kind = CEL_DRIVERS_SET;
    return 0;
}

static int is_plain_string(const struct cel__node *n)
{
    /* A literal with an embedded NUL could never equal a driver name. */
    return n->kind == CEL_N_STRING && strlen(n->lit.str.s) == n->lit.str.n;
}

static int drivers(struct cel_program *p, const struct cel__node *n, struct dset *out)
{
    struct dset a = {CEL_DRIVERS_ANY, NULL, 0}, b = {CEL_DRIVERS_ANY, NULL, 0};

    out->kind = CEL_DRIVERS_ANY;
    out->v = NULL;
    out->n = 0;
    if (n->kind != CEL_N_BINARY)
        return 0;
    switch (n->op) {
    case CEL_OP_EQ: {
        const struct cel__node *l = n->kid[0], *r = n->kid[1];
        if (is_device_field(r, "driver")) {
            const struct cel__node *t = l;
            l = r;
            r = t;
        }
        if (is_device_field(l, "driver") && is_plain_string(r))
            return dset_add(p, out, r->lit.str.s, r->line, r->col);
        return 0;
    }
    case CEL_OP_IN: {
        const struct cel__node *l = n->kid[0], *r = n->kid[1];
        if (!is_device_field(l, "driver") || r->kind != CEL_N_LIST)
            return 0;
        for (size_t i = 0; i < r->nkid; i++)
            if (!is_plain_string(r->kid[i]))
                return 0;
        for (size_t i = 0; i < r->nkid; i++)
            if (dset_add(p, out, r->kid[i]->lit.str.s, r->kid[i]->line, r->kid[i]->col))
                return -1;
        /* `device.driver in []` can never hold. */
        if (r->nkid == 0)
            out->kind = CEL_DRIVERS_NONE;
        return 0;
    }
    case CEL_OP_AND:
        if (drivers(p, n->kid[0], &a) || drivers(p, n->kid[1], &b))
            return -1;
        if (a.kind == CEL_DRIVERS_NONE || b.kind == CEL_DRIVERS_NONE) {
            out->kind = CEL_DRIVERS_NONE;
        } else if (a.kind == CEL_DRIVERS_ANY) {
            *out = b;
        } else if (b.kind == CEL_DRIVERS_ANY) {
            *out = a;
        } else {
            for (size_t i = 0; i < a.n; i++)
                if (dset_has(&b, a.v[i].name) &&
                    dset_add(p, out, a.v[i].name, a.v[i].line, a.v[i].col))
                    return -1;
            if (out->n == 0)
                out->kind = CEL_DRIVERS_NONE;
        }
        return 0;
    case CEL_OP_OR:
        if (drivers(p, n->kid[0], &a) || drivers(p, n->kid[1], &b))
            return -1;
        if (a.kind == CEL_DRIVERS_ANY || b.kind == CEL_DRIVERS_ANY)
            return 0;
        if (a.kind == CEL_DRIVERS_NONE) {
            *out = b;
            return 0;
        }
        if (b.kind == CEL_DRIVERS_NONE) {
            *out = a;
            return 0;
        }
        *out = a;
        for (size_t i = 0; i < b.n; i++)
            if (dset_add(p, out, b.v[i].name, b.v[i].line, b.v[i].col))
                return -1;
        return 0;
    default:
        return 0;
    }
}

static int attr_push(struct cel_program *p, const struct cel__node *dom_node, int capacity,
                     const char *name, int guarded, int line, int col)
{
    if (p->nattrs == p->cap_attrs) {
        size_t cap = p->cap_attrs ? p->cap_attrs * 2 : 8;
        struct cel_attr_ref *v = cel__alloc(&p->arena, cap * sizeof(*v));
        if (!v)
            return -1;
        if (p->nattrs)
            memcpy(v, p->attrs, p->nattrs * sizeof(*v));
        p->attrs = v;
        p->cap_attrs = cap;
    }
    struct cel_attr_ref *r = &p->attrs[p->nattrs++];
    r->domain = dom_node->kind == CEL_N_STRING ? dom_node->lit.str.s : NULL;
    r->name = name;
    r->capacity = capacity;
    r->guarded = guarded;
    r->line = line;
    r->col = col;
    return 0;
}

/* If n is device.attributes[D] or device.capacity[D], returns D's node. */
static const struct cel__node *domain_of(const struct cel__node *n, int *capacity)
{
    if (n->kind != CEL_N_INDEX)
        return NULL;
    if (is_device_field(n->kid[0], "attributes")) {
        *capacity = 0;
        return n->kid[1];
    }
    if (is_device_field(n->kid[0], "capacity")) {
        *capacity = 1;
        return n->kid[1];
    }
    return NULL;
}

static int attrs(struct cel_program *p, const struct cel__node *n)
{
    const struct cel__node *d;
    int cap;

    if (n->kind == CEL_N_SELECT && (d = domain_of(n->kid[0], &cap))) {
        if (attr_push(p, d, cap, n->name, n->test_only, n->line, n->col))
            return -1;
    } else if (n->kind == CEL_N_INDEX && n->kid[1]->kind == CEL_N_STRING &&
               (d = domain_of(n->kid[0], &cap))) {
        if (attr_push(p, d, cap, n->kid[1]->lit.str.s, 0, n->kid[1]->line, n->kid[1]->col))
            return -1;
    } else if (n->kind == CEL_N_BINARY && n->op == CEL_OP_IN &&
               n->kid[0]->kind == CEL_N_STRING && (d = domain_of(n->kid[1], &cap))) {
        if (attr_push(p, d, cap, n->kid[0]->lit.str.s, 1, n->kid[0]->line, n->kid[0]->col))
            return -1;
    }
    for (size_t i = 0; i < n->nkid; i++)
        if (attrs(p, n->kid[i]))
            return -1;
    return 0;
}

static int pos_cmp(const void *a, const void *b)
{
    const struct cel_attr_ref *x = a, *y = b;

    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return 0;
}

enum dd_rc cel__analyse(struct cel_program *p, struct dd_err *err)
{
    struct dset s;

    if (drivers(p, p->root, &s) || attrs(p, p->root))
        return dd_failf(err, DD_ENOMEM, "out of memory while analysing CEL");
    p->drivers_kind = s.kind;
    p->drivers = s.v;
    p->ndrivers = s.kind == CEL_DRIVERS_SET ? s.n : 0;
    /* Source order: the walk is pre-order, which is not left-to-right for
     * `"x" in device.attributes[d]` nested in selections. */
    if (p->nattrs > 1)
        qsort(p->attrs, p->nattrs, sizeof(*p->attrs), pos_cmp);
    return DD_OK;
}

/* ---- Public entry points ------------------------------------------------------ */

struct cel_program *cel_compile(const char *src, size_t len, const struct cel_limits *lim,
                                struct dd_err *err)
{
    static const struct cel_limits def = CEL_LIMITS_DEFAULT;
    struct cel_program *p;

    if (!lim)
        lim = &def;
    dd_err_clear(err);
    if (!src && len) {
        dd_failf(err, DD_EINVAL, "CEL source is NULL");
        return NULL;
    }
    if (len > lim->max_len) {
        dd_failf(err, DD_ETOOBIG, "expression is %zu characters long; the limit is %zu", len,
                 lim->max_len);
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    p->src = cel__strndup(&p->arena, src ? src : "", len);
    p->len = len;
    if (!p->src) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        cel_program_free(p);
        return NULL;
    }
    if (cel__parse(p, lim, err) != DD_OK || cel__check(p, err) != DD_OK ||
        cel__analyse(p, err) != DD_OK) {
        cel_program_free(p);
        return NULL;
    }
    return p;
}

void cel_program_free(struct cel_program *p)
{
    if (!p)
        return;
    cel__arena_free(&p->arena);
    free(p);
}

enum cel_drivers_kind cel_program_drivers(const struct cel_program *p,
                                          const struct cel_driver_ref **out, size_t *n)
{
    *out = p->drivers;
    *n = p->ndrivers;
    return p->drivers_kind;
}

void cel_program_attrs(const struct cel_program *p, const struct cel_attr_ref **out, size_t *n)
{
    *out = p->attrs;
    *n = p->nattrs;
}
