/*
 * cel_check.c - type checking against the DRA environment, the API server's
 * compile-time validations, the static driver and attribute analyses, and
 * the public compile entry points.
 *
 * The checker is cel-go's (checker/checker.go), node for node: overloads are
 * resolved against the library table (cel_builtins.c) with type-parameter
 * unification (cel_types.c), list and map literals join their element types to
 * dyn, and then the validators kube-apiserver's environment installs run on
 * the typed tree (homogeneous literals, regex, duration and timestamp
 * literals, format strings), followed by the conversions of constants that
 * cel-go's optimiser folds when the program is built: a failing one makes
 * the API server reject the object.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

struct scope {
    const char *name;
    const struct cel__type *type;
    const struct scope *up;
};

struct checker {
    struct cel_program *p;
    struct dd_err *err;
    enum dd_rc rc;
    struct cel__types ts;
    const struct cel__type *attr_value; /* any, or dyn with DRAListTypeAttributes */
};

static const struct cel__type *fail(struct checker *ck, const struct cel__node *n,
                                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static const struct cel__type *fail(struct checker *ck, const struct cel__node *n,
                                    const char *fmt, ...)
{
    char what[600];
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
                                  const struct cel__type *a, const struct cel__type *b)
{
    return cel__type_new(&ck->ts, k, a, b);
}

static const struct cel__type *sub(struct checker *ck, const struct cel__type *t)
{
    return cel__type_subst(&ck->ts, t, 0);
}

static const struct cel__type *check(struct checker *ck, struct cel__node *n,
                                     const struct scope *sc);

/* ---- Identifiers ------------------------------------------------------------- */

static const struct {
    const char *name;
    const struct cel__type *t;
    enum cel__tkind k;
} type_idents[] = {
    {"int", &cel__t_int, 0}, {"uint", &cel__t_uint, 0}, {"double", &cel__t_double, 0},
    {"bool", &cel__t_bool, 0}, {"string", &cel__t_string, 0}, {"bytes", &cel__t_bytes, 0},
    {"null_type", &cel__t_null, 0}, {"type", &cel__t_type, 0},
    {"list", NULL, CEL_T_LIST}, {"map", NULL, CEL_T_MAP},
    {"google.protobuf.Timestamp", &cel__t_timestamp, 0},
    {"google.protobuf.Duration", &cel__t_duration, 0},
    {"optional_type", NULL, CEL_T_OPTIONAL},
    {"net.IP", &cel__t_ip, 0}, {"net.CIDR", &cel__t_cidr, 0},
    {"kubernetes.Quantity", &cel__t_quantity, 0}, {"kubernetes.Semver", &cel__t_semver, 0},
    {"kubernetes.URL", &cel__t_url, 0},
};

/* The type of a type identifier (type(int) for `int`), or NULL. */
static const struct cel__type *type_ident(struct checker *ck, const char *name)
{
    for (size_t i = 0; i < sizeof(type_idents) / sizeof(type_idents[0]); i++) {
        const struct cel__type *t = type_idents[i].t;
        if (strcmp(type_idents[i].name, name) != 0)
            continue;
        if (type_idents[i].name[0] == 'n' && !strncmp(name, "net.", 4) &&
            !cel__lib_enabled(&ck->p->env, CEL_LIB_IP))
            return NULL;
        if (!t)
            t = type_idents[i].k == CEL_T_MAP ? mk(ck, CEL_T_MAP, &cel__t_dyn, &cel__t_dyn)
                                              : mk(ck, type_idents[i].k, &cel__t_dyn, NULL);
        return mk(ck, CEL_T_TYPE, t, NULL);
    }
    return NULL;
}

/* "a.b.c" for an identifier or a chain of plain field selections, else NULL. */
static char *qualified_name(struct checker *ck, const struct cel__node *n)
{
    char *left, *out;
    size_t a, b;

    if (n->kind == CEL_N_IDENT)
        return (char *)n->name;
    if (n->kind != CEL_N_SELECT || n->test_only || n->optional)
        return NULL;
    if (!(left = qualified_name(ck, n->kid[0])))
        return NULL;
    a = strlen(left);
    b = strlen(n->name);
    if (!(out = cel__alloc(&ck->p->arena, a + b + 2))) {
        ck->ts.oom = 1;
        return NULL;
    }
    memcpy(out, left, a);
    out[a] = '.';
    memcpy(out + a + 1, n->name, b + 1);
    return out;
}

static const struct cel__type *lookup_ident(struct checker *ck, const char *name,
                                            const struct scope *sc)
{
    for (const struct scope *s = sc; s; s = s->up)
        if (strcmp(s->name, name) == 0)
            return s->type;
    if (strcmp(name, "device") == 0)
        return &cel__t_device;
    return type_ident(ck, name);
}

static const struct cel__type *check_ident(struct checker *ck, struct cel__node *n,
                                           const struct scope *sc)
{
    const struct cel__type *t = lookup_ident(ck, n->name, sc);

    if (!t)
        return fail(ck, n, "undeclared reference to '%s' (in container '')", n->name);
    return t;
}

/* ---- Field selection ------------------------------------------------------------ */

static const struct cel__type *device_field(struct checker *ck, const char *name)
{
    static const struct cel__type t_cap_domain = {CEL_T_MAP, NULL, {&cel__t_string, &cel__t_quantity}, 2};
    static const struct cel__type t_caps = {CEL_T_MAP, NULL, {&cel__t_string, &t_cap_domain}, 2};

    if (strcmp(name, "driver") == 0)
        return &cel__t_string;
    if (strcmp(name, "capacity") == 0)
        return &t_caps;
    if (strcmp(name, "attributes") == 0)
        return mk(ck, CEL_T_MAP, &cel__t_string,
                  mk(ck, CEL_T_MAP, &cel__t_string, ck->attr_value));
    if (strcmp(name, "allowMultipleAllocations") == 0 && cel__env_multi_alloc(&ck->p->env))
        return &cel__t_bool;
    return NULL;
}

static const struct cel__type *select_field(struct checker *ck, struct cel__node *n,
                                            const struct cel__type *operand, const char *field,
                                            int optional)
{
    const struct cel__type *t = sub(ck, operand), *r;
    char ts[200];
    int is_opt = 0;

    if (t->kind == CEL_T_OPTIONAL) {
        t = t->p[0];
        is_opt = 1;
    }
    switch (t->kind) {
    case CEL_T_MAP: r = t->p[1]; break;
    case CEL_T_DEVICE:
        if (!(r = device_field(ck, field)))
            return fail(ck, n, "undefined field '%s'", field);
        break;
    case CEL_T_PARAM:
        cel__type_assignable(&ck->ts, &cel__t_dyn, t);
        r = &cel__t_dyn;
        break;
    default:
        if (!cel__type_is_dyn(t) && t->kind != CEL_T_ERROR) {
            cel__type_str(t, ts, sizeof(ts));
            return fail(ck, n, "type '%s' does not support field selection", ts);
        }
        r = &cel__t_dyn;
    }
    return is_opt || optional ? mk(ck, CEL_T_OPTIONAL, r, NULL) : r;
}

/* ---- Overload resolution -------------------------------------------------------- */

/* t with the signature's parameters (A, B, ...) replaced through vars[26]. */
static const struct cel__type *instantiate(struct checker *ck, const struct cel__type *t,
                                           const struct cel__type **vars)
{
    const struct cel__type *a, *b;

    if (t->kind == CEL_T_PARAM) {
        int i = t->name[0] - 'A';
        if (i < 0 || i >= 26)
            return t;
        if (!vars[i])
            vars[i] = cel__type_var(&ck->ts);
        return vars[i];
    }
    if (!t->np)
        return t;
    a = instantiate(ck, t->p[0], vars);
    b = t->np > 1 ? instantiate(ck, t->p[1], vars) : NULL;
    return mk(ck, t->kind, a, b);
}

static int fn_known(struct checker *ck, const char *name)
{
    for (size_t i = 0; i < cel__novl; i++)
        if (strcmp(cel__ovl[i].fn, name) == 0 && cel__lib_enabled(&ck->p->env, cel__ovl[i].lib))
            return 1;
    return 0;
}

static void types_list(struct checker *ck, const struct cel__type *const *args, size_t n,
                       size_t from, char *buf, size_t cap)
{
    size_t pos = 0;

    buf[0] = '\0';
    for (size_t i = from; i < n && pos + 4 < cap; i++) {
        char one[200];
        cel__type_str(cel__type_subst(&ck->ts, args[i], 1), one, sizeof(one));
        pos += (size_t)snprintf(buf + pos, cap - pos, "%s%s", i > from ? ", " : "", one);
    }
}

/*
 * Resolves fn over args (the receiver first for member calls) like cel-go's
 * resolveOverload: every overload whose parameters the arguments are assignable
 * to is kept for run time; the result is their common result type, or dyn.
 */
static const struct cel__type *resolve(struct checker *ck, struct cel__node *n, const char *fn,
                                       int member, const struct cel__type *const *args,
                                       size_t nargs)
{
    const struct cel__sig *sigs = cel__sigs();
    const struct cel__type *result = NULL;
    short cand[64];
    int ncand = 0;

    if (!sigs) {
        ck->ts.oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < cel__novl; i++) {
        const struct cel__overload *o = &cel__ovl[i];
        const struct cel__type *vars[26] = {0}, *params[4], *r;
        if (o->member != member || (size_t)sigs[i].nargs != nargs ||
            strcmp(o->fn, fn) != 0 || !cel__lib_enabled(&ck->p->env, o->lib))
            continue;
        for (size_t k = 0; k < nargs; k++)
            params[k] = instantiate(ck, sigs[i].arg[k], vars);
        r = instantiate(ck, sigs[i].result, vars);
        if (!cel__type_assignable_list(&ck->ts, args, params, nargs))
            continue;
        if (ncand < (int)(sizeof(cand) / sizeof(cand[0])))
            cand[ncand++] = (short)i;
        r = sub(ck, r);
        if (!result)
            result = r;
        else if (!cel__type_is_dyn(result) && !cel__type_exact(r, result))
            result = &cel__t_dyn;
    }
    if (!result) {
        char ts[600];
        if (member) {
            char recv[200];
            cel__type_str(cel__type_subst(&ck->ts, args[0], 1), recv, sizeof(recv));
            types_list(ck, args, nargs, 1, ts, sizeof(ts));
            return fail(ck, n, "found no matching overload for '%s' applied to '%s.(%s)'", fn,
                        recv, ts);
        }
        types_list(ck, args, nargs, 0, ts, sizeof(ts));
        return fail(ck, n, "found no matching overload for '%s' applied to '(%s)'", fn, ts);
    }
    short *keep = cel__alloc(&ck->p->arena, (size_t)ncand * sizeof(*keep));
    if (!keep) {
        ck->ts.oom = 1;
        return NULL;
    }
    memcpy(keep, cand, (size_t)ncand * sizeof(*keep));
    n->cand = keep;
    n->ncand = ncand;
    return result;
}

static const struct cel__type *check_call(struct checker *ck, struct cel__node *n,
                                          const struct scope *sc)
{
    const struct cel__type *args[8];
    size_t first = 0;

    if (n->nkid > sizeof(args) / sizeof(args[0]))
        return fail(ck, n, "found no matching overload for '%s' (too many arguments)", n->name);
    if (n->recv) {
        /* cel-go: a receiver that is a qualified name may be a namespace
         * (optional.of, strings.quote, sets.contains, lists.range). */
        char *q = qualified_name(ck, n->kid[0]);
        if (q && !lookup_ident(ck, q, sc)) {
            char *full = cel__alloc(&ck->p->arena, strlen(q) + strlen(n->name) + 2);
            if (!full) {
                ck->ts.oom = 1;
                return NULL;
            }
            sprintf(full, "%s.%s", q, n->name);
            if (fn_known(ck, full)) {
                n->name = full;
                n->recv = 0;
                memmove(n->kid, n->kid + 1, (n->nkid - 1) * sizeof(*n->kid));
                n->nkid--;
            }
        }
    }
    for (size_t i = 0; i < n->nkid; i++)
        if (!(args[i] = check(ck, n->kid[i], sc)))
            return NULL;
    (void)first;
    if (!fn_known(ck, n->name))
        return fail(ck, n, "undeclared reference to '%s' (in container '')", n->name);
    return resolve(ck, n, n->name, n->recv, args, n->nkid);
}

static const struct cel__type *check_logic(struct checker *ck, struct cel__node *n,
                                           const struct scope *sc)
{
    for (size_t i = 0; i < n->nkid; i++) {
        const struct cel__type *t = check(ck, n->kid[i], sc);
        char ts[200];
        if (!t)
            return NULL;
        if (!cel__type_assignable(&ck->ts, t, &cel__t_bool)) {
            cel__type_str(sub(ck, t), ts, sizeof(ts));
            return fail(ck, n->kid[i], "expected type 'bool' but found '%s'", ts);
        }
    }
    return &cel__t_bool;
}

static const struct cel__type *check_op(struct checker *ck, struct cel__node *n,
                                        const char *fn, const struct scope *sc)
{
    const struct cel__type *args[3];

    for (size_t i = 0; i < n->nkid && i < 3; i++)
        if (!(args[i] = check(ck, n->kid[i], sc)))
            return NULL;
    return resolve(ck, n, fn, 0, args, n->nkid);
}

/* ---- Literals --------------------------------------------------------------------- */

/* cel-go joinTypes with dyn aggregate element types (the homogeneity validator
 * runs afterwards on the final types). */
static const struct cel__type *join(struct checker *ck, const struct cel__type *prev,
                                    const struct cel__type *cur)
{
    if (!prev)
        return cur;
    if (cel__type_assignable(&ck->ts, prev, cur))
        return cel__type_most_general(prev, cur);
    return &cel__t_dyn;
}

static const struct cel__type *unwrap_opt(struct checker *ck, struct cel__node *e,
                                          const struct cel__type *t)
{
    const struct cel__type *s = sub(ck, t);
    char ts[200];

    if (s->kind == CEL_T_OPTIONAL)
        return s->p[0];
    if (!cel__type_is_dyn(s)) {
        char o[220];
        cel__type_str(s, ts, sizeof(ts));
        snprintf(o, sizeof(o), "optional_type(%s)", ts);
        fail(ck, e, "expected type '%s' but found '%s'", o, ts);
        return NULL;
    }
    return s;
}

static const struct cel__type *check_list(struct checker *ck, struct cel__node *n,
                                          const struct scope *sc)
{
    const struct cel__type *elem = NULL;

    for (size_t i = 0; i < n->nkid; i++) {
        const struct cel__type *t = check(ck, n->kid[i], sc);
        if (!t)
            return NULL;
        if (n->optk && n->optk[i] && !(t = unwrap_opt(ck, n->kid[i], t)))
            return NULL;
        elem = join(ck, elem, t);
    }
    return mk(ck, CEL_T_LIST, elem ? elem : cel__type_var(&ck->ts), NULL);
}

static const struct cel__type *check_map(struct checker *ck, struct cel__node *n,
                                         const struct scope *sc)
{
    const struct cel__type *key = NULL, *val = NULL;

    for (size_t i = 0; i + 1 < n->nkid; i += 2) {
        const struct cel__type *k = check(ck, n->kid[i], sc), *v;
        if (!k)
            return NULL;
        key = join(ck, key, k);
        if (!(v = check(ck, n->kid[i + 1], sc)))
            return NULL;
        if (n->optk && n->optk[i / 2] && !(v = unwrap_opt(ck, n->kid[i + 1], v)))
            return NULL;
        val = join(ck, val, v);
    }
    if (!key) {
        key = cel__type_var(&ck->ts);
        val = cel__type_var(&ck->ts);
    }
    return mk(ck, CEL_T_MAP, key, val);
}

/* ---- Macros ------------------------------------------------------------------------- */

static const struct cel__type *expect_bool(struct checker *ck, struct cel__node *e,
                                           const struct cel__type *t)
{
    char ts[200];

    if (!t)
        return NULL;
    if (!cel__type_assignable(&ck->ts, t, &cel__t_bool)) {
        cel__type_str(sub(ck, t), ts, sizeof(ts));
        return fail(ck, e, "expected type 'bool' but found '%s'", ts);
    }
    return &cel__t_bool;
}

static const struct cel__type *check_comp(struct checker *ck, struct cel__node *n,
                                          const struct scope *sc)
{
    const struct cel__type *r = check(ck, n->kid[0], sc), *v1, *v2 = NULL, *t, *f = NULL;
    struct scope s1, s2;
    const struct scope *in = sc;
    int two = n->op == CEL_M_ALL2 || n->op == CEL_M_EXISTS2 || n->op == CEL_M_EXISTS_ONE2 ||
              n->op == CEL_M_TLIST || n->op == CEL_M_TMAP || n->op == CEL_M_TMAPENTRY;
    char ts[200];

    if (!r)
        return NULL;
    r = sub(ck, r);
    if (n->op == CEL_M_BIND) {
        s1 = (struct scope){n->name, r, sc};
        return check(ck, n->kid[1], &s1);
    }
    if (n->op == CEL_M_OPTMAP || n->op == CEL_M_OPTFLATMAP) {
        if (r->kind == CEL_T_OPTIONAL) {
            v1 = r->p[0];
        } else if (cel__type_is_dyn(r) || r->kind == CEL_T_PARAM) {
            v1 = &cel__t_dyn;
        } else {
            cel__type_str(r, ts, sizeof(ts));
            return fail(ck, n, "found no matching overload for 'hasValue' applied to '%s.()'",
                        ts);
        }
        s1 = (struct scope){n->name, v1, sc};
        if (!(t = check(ck, n->kid[1], &s1)))
            return NULL;
        if (n->op == CEL_M_OPTMAP)
            return mk(ck, CEL_T_OPTIONAL, t, NULL);
        t = sub(ck, t);
        if (t->kind == CEL_T_OPTIONAL || cel__type_is_dyn(t))
            return t->kind == CEL_T_OPTIONAL ? t : mk(ck, CEL_T_OPTIONAL, &cel__t_dyn, NULL);
        cel__type_str(t, ts, sizeof(ts));
        return fail(ck, n->kid[1], "found no matching overload for '_?_:_' applied to "
                                   "'(bool, %s, optional_type(_var0))'", ts);
    }
    switch (r->kind) {
    case CEL_T_LIST:
        v1 = r->p[0];
        if (two) {
            v2 = v1;
            v1 = &cel__t_int;
        }
        break;
    case CEL_T_MAP:
        v1 = r->p[0];
        v2 = r->p[1];
        break;
    case CEL_T_DYN:
    case CEL_T_ERROR:
    case CEL_T_PARAM:
        cel__type_assignable(&ck->ts, &cel__t_dyn, r);
        v1 = v2 = &cel__t_dyn;
        break;
    default:
        cel__type_str(r, ts, sizeof(ts));
        return fail(ck, n->kid[0], "expression of type '%s' cannot be range of a comprehension "
                                   "(must be list, map, or dynamic)", ts);
    }
    s1 = (struct scope){n->name, v1, sc};
    in = &s1;
    if (two) {
        s2 = (struct scope){n->name2, v2, &s1};
        in = &s2;
    }
    if (n->nkid > 2 && !(f = expect_bool(ck, n->kid[2], check(ck, n->kid[2], in))))
        return NULL;
    if (!(t = check(ck, n->kid[1], in)))
        return NULL;
    switch (n->op) {
    case CEL_M_ALL: case CEL_M_EXISTS: case CEL_M_EXISTS_ONE:
    case CEL_M_ALL2: case CEL_M_EXISTS2: case CEL_M_EXISTS_ONE2:
        return expect_bool(ck, n->kid[1], t);
    case CEL_M_FILTER:
        if (!expect_bool(ck, n->kid[1], t))
            return NULL;
        return mk(ck, CEL_T_LIST, v1, NULL);
    case CEL_M_MAP:
    case CEL_M_TLIST:
        return mk(ck, CEL_T_LIST, t, NULL);
    case CEL_M_TMAP:
        return mk(ck, CEL_T_MAP, r->kind == CEL_T_LIST ? &cel__t_int : v1, t);
    case CEL_M_TMAPENTRY: {
        const struct cel__type *e = sub(ck, t);
        if (e->kind == CEL_T_MAP)
            return e;
        if (cel__type_is_dyn(e))
            return mk(ck, CEL_T_MAP, &cel__t_dyn, &cel__t_dyn);
        cel__type_str(e, ts, sizeof(ts));
        return fail(ck, n->kid[1], "found no matching overload for 'cel.@mapInsert' applied "
                                   "to '(map(_var0, _var1), %s)'", ts);
    }
    case CEL_M_SORTBY: {
        const struct cel__type *k = sub(ck, t);
        switch (k->kind) {
        case CEL_T_INT: case CEL_T_UINT: case CEL_T_DOUBLE: case CEL_T_BOOL: case CEL_T_STRING:
        case CEL_T_BYTES: case CEL_T_TIMESTAMP: case CEL_T_DURATION: case CEL_T_DYN:
        case CEL_T_ANY:
            return r->kind == CEL_T_LIST ? r : mk(ck, CEL_T_LIST, &cel__t_dyn, NULL);
        default:
            cel__type_str(k, ts, sizeof(ts));
            return fail(ck, n->kid[1], "found no matching overload for "
                                       "'lists.@sortByAssociatedKeys' applied to '(%s)'", ts);
        }
    }
    default:
        return fail(ck, n, "unknown macro");
    }
}

static const struct cel__type *check(struct checker *ck, struct cel__node *n,
                                     const struct scope *sc)
{
    const struct cel__type *t = NULL;

    if (ck->ts.oom) {
        if (ck->rc == DD_OK)
            ck->rc = dd_failf(ck->err, DD_ENOMEM, "out of memory while checking CEL");
        return NULL;
    }
    switch (n->kind) {
    case CEL_N_INT: t = &cel__t_int; break;
    case CEL_N_UINT: t = &cel__t_uint; break;
    case CEL_N_DOUBLE: t = &cel__t_double; break;
    case CEL_N_STRING: t = &cel__t_string; break;
    case CEL_N_BYTES: t = &cel__t_bytes; break;
    case CEL_N_BOOL: t = &cel__t_bool; break;
    case CEL_N_NULL: t = &cel__t_null; break;
    case CEL_N_IDENT: t = check_ident(ck, n, sc); break;
    case CEL_N_SELECT: {
        char *q = n->test_only || n->optional ? NULL : qualified_name(ck, n);
        const struct cel__type *o;
        if (q && (t = lookup_ident(ck, q, sc))) {
            /* A qualified identifier (google.protobuf.Timestamp): one name from now on. */
            n->kind = CEL_N_IDENT;
            n->name = q;
            n->nkid = 0;
            break;
        }
        if (!(o = check(ck, n->kid[0], sc)))
            return NULL;
        t = select_field(ck, n, o, n->name, n->optional);
        if (t && n->test_only)
            t = &cel__t_bool;
        break;
    }
    case CEL_N_INDEX: t = check_op(ck, n, n->optional ? "_[?_]" : "_[_]", sc); break;
    case CEL_N_CALL: t = check_call(ck, n, sc); break;
    case CEL_N_LIST: t = check_list(ck, n, sc); break;
    case CEL_N_MAP: t = check_map(ck, n, sc); break;
    case CEL_N_UNARY: t = check_op(ck, n, cel__op_name(n->op), sc); break;
    case CEL_N_BINARY:
        t = n->op == CEL_OP_AND || n->op == CEL_OP_OR ? check_logic(ck, n, sc)
                                                      : check_op(ck, n, cel__op_name(n->op), sc);
        break;
    case CEL_N_COND: t = check_op(ck, n, "_?_:_", sc); break;
    case CEL_N_COMP: t = check_comp(ck, n, sc); break;
    }
    if (t)
        t = sub(ck, t);
    n->type = t;
    return t;
}

/* ---- Validators (kube-apiserver's base environment) ---------------------------------- */

struct validate {
    struct checker *ck;
    int in_format; /* inside a string.format call: exempt from the homogeneity check */
};

static int equivalent(const struct cel__type *a, const struct cel__type *b)
{
    if (a->kind != b->kind || a->np != b->np)
        return 0;
    if (a->kind == CEL_T_PARAM)
        return 1;
    for (int i = 0; i < a->np; i++)
        if (!equivalent(a->p[i], b->p[i]))
            return 0;
    return 1;
}

static const struct cel__type *final_type(struct checker *ck, const struct cel__node *n,
                                          int opt)
{
    const struct cel__type *t = cel__type_subst(&ck->ts, n->type ? n->type : &cel__t_dyn, 1);

    return opt && t->kind == CEL_T_OPTIONAL ? t->p[0] : t;
}

static int mismatch(struct checker *ck, const struct cel__node *at, const struct cel__type *want,
                    const struct cel__type *got)
{
    char a[200], b[200];

    cel__type_str(want, a, sizeof(a));
    cel__type_str(got, b, sizeof(b));
    fail(ck, at, "expected type '%s' but found '%s'", a, b);
    return -1;
}

static const struct cel__type *type_of(const struct cel__node *n, void *ctx)
{
    return final_type(ctx, n, 0);
}

static int validate(struct validate *v, const struct cel__node *n)
{
    struct checker *ck = v->ck;
    int was = v->in_format;

    if (n->kind == CEL_N_LIST && !v->in_format) {
        const struct cel__type *first = NULL;
        for (size_t i = 0; i < n->nkid; i++) {
            const struct cel__type *t = final_type(ck, n->kid[i], n->optk && n->optk[i]);
            if (!first)
                first = t;
            else if (!equivalent(first, t))
                return mismatch(ck, n->kid[i], first, t);
        }
    }
    if (n->kind == CEL_N_MAP && !v->in_format) {
        const struct cel__type *k0 = NULL, *v0 = NULL;
        for (size_t i = 0; i + 1 < n->nkid; i += 2) {
            const struct cel__type *k = final_type(ck, n->kid[i], 0),
                                   *x = final_type(ck, n->kid[i + 1], n->optk && n->optk[i / 2]);
            if (!k0) {
                k0 = k;
                v0 = x;
                continue;
            }
            if (!equivalent(k0, k))
                return mismatch(ck, n->kid[i], k0, k);
            if (!equivalent(v0, x))
                return mismatch(ck, n->kid[i + 1], v0, x);
        }
    }
    /* cel-go's planner takes an identifier whose type is a type as a type's name and looks it
     * up: a variable holding a type (`[].exists(x, type(true) == x)`) names none. */
    if (n->kind == CEL_N_IDENT && final_type(ck, n, 0)->kind == CEL_T_TYPE &&
        !type_ident(ck, n->name)) {
        fail(ck, n, "reference to undefined type: %s", n->name);
        return -1;
    }
    if (n->kind == CEL_N_CALL) {
        const char *why = NULL;
        if (strcmp(n->name, "format") == 0) {
            v->in_format = 1;
            if (cel__check_format(n, type_of, ck, &why)) {
                fail(ck, n, "%s", why);
                return -1;
            }
        }
        if (cel__validate_literal_call(ck->p, n, ck->err) != 0) {
            ck->rc = ck->err ? ck->err->rc : DD_ETYPE;
            if (ck->rc == DD_OK)
                ck->rc = DD_ETYPE;
            return -1;
        }
    }
    for (size_t i = 0; i < n->nkid; i++)
        if (validate(v, n->kid[i]))
            return -1;
    v->in_format = was;
    return 0;
}

enum dd_rc cel__check(struct cel_program *p, struct dd_err *err)
{
    struct checker ck = {p, err, DD_OK, {&p->arena, {0}, 0, 0}, &cel__t_any};
    const struct cel__type *t;
    struct validate v = {&ck, 0};
    char ts[200];

    if (cel__env_dyn_attributes(&p->env))
        ck.attr_value = &cel__t_dyn;
    t = check(&ck, p->root, NULL);
    if (!t || ck.ts.oom)
        return ck.rc != DD_OK ? ck.rc : dd_failf(err, DD_ENOMEM, "out of memory");
    t = cel__type_subst(&ck.ts, t, 1);
    if (t->kind != CEL_T_BOOL && t->kind != CEL_T_ANY &&
        !(t->kind == CEL_T_DYN && cel__env_dyn_attributes(&p->env))) {
        cel__type_str(t, ts, sizeof(ts));
        return cel__fail_at(err, DD_ETYPE, p->src, p->len, p->root->line, p->root->col,
                            "must evaluate to bool or the unknown type, not %s", ts);
    }
    if (validate(&v, p->root))
        return ck.rc != DD_OK ? ck.rc : DD_ETYPE;
    /* kube-apiserver estimates the worst case of a new selector and refuses one that
     * could exceed the runtime limit (objects already stored are not re-checked). */
    p->est_cost = cel__estimate_cost(p, &ck.ts);
    if (!p->env.stored && p->est_cost > CEL__MAX_ESTIMATED_COST)
        return cel__fail_at(err, DD_ETOOBIG, p->src, p->len, p->root->line, p->root->col,
                            "too complex, exceeds cost limit (estimated cost %llu, the limit "
                            "is %u)", (unsigned long long)p->est_cost, CEL__MAX_ESTIMATED_COST);
    return ck.ts.oom ? dd_failf(err, DD_ENOMEM, "out of memory") : DD_OK;
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

static struct cel_env default_env = CEL_ENV_DEFAULT;

enum dd_rc cel_set_default_env(const struct cel_env *env)
{
    if (!env || env->kube_minor < CEL_KUBE_MINOR_MIN || env->kube_minor > CEL_KUBE_MINOR_MAX)
        return DD_EINVAL;
    default_env = *env;
    return DD_OK;
}

const struct cel_env *cel_default_env(void)
{
    return &default_env;
}

struct cel_program *cel_compile(const char *src, size_t len, const struct cel_limits *lim,
                                struct dd_err *err)
{
    return cel_compile_env(src, len, lim, NULL, err);
}

struct cel_program *cel_compile_env(const char *src, size_t len, const struct cel_limits *lim,
                                    const struct cel_env *env, struct dd_err *err)
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
    p->env = env ? *env : default_env;
    p->src = cel__strndup(&p->arena, src ? src : "", len);
    p->len = len;
    if (!p->src) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        cel_program_free(p);
        return NULL;
    }
    if (cel__parse(p, lim, err) != DD_OK || cel__check(p, err) != DD_OK ||
        cel__fold(p, err) != DD_OK || cel__analyse(p, err) != DD_OK) {
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

int cel_program_excludes_driver(const struct cel_program *p, const char *driver,
                                const struct cel_limits *lim)
{
    static const struct cel_limits def = CEL_LIMITS_DEFAULT;
    size_t i;

    if (!p || p->drivers_kind == CEL_DRIVERS_ANY || !driver ||
        p->est_cost > (lim ? lim : &def)->max_cost)
        return 0;
    for (i = 0; i < p->ndrivers; i++)
        if (!strcmp(p->drivers[i].name, driver))
            return 0;
    return 1;
}

uint64_t cel_program_cost(const struct cel_program *p)
{
    return p->est_cost;
}

void cel_program_attrs(const struct cel_program *p, const struct cel_attr_ref **out, size_t *n)
{
    *out = p->attrs;
    *n = p->nattrs;
}
