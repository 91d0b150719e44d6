/*
 * cel_types.c - the checker's type algebra, ported from cel-go's
 * checker/types.go (v0.26, the version Kubernetes v1.36 builds with) so that
 * what compiles here is exactly what kube-apiserver accepts: assignability
 * with type-parameter substitution, "most general" joins and substitution.
 */
#include <stdio.h>
#include <string.h>

#include "cel_int.h"

#define T0(kind) {kind, NULL, {NULL, NULL}, 0}
const struct cel__type cel__t_dyn = T0(CEL_T_DYN), cel__t_any = T0(CEL_T_ANY),
                       cel__t_error = T0(CEL_T_ERROR), cel__t_bool = T0(CEL_T_BOOL),
                       cel__t_int = T0(CEL_T_INT), cel__t_uint = T0(CEL_T_UINT),
                       cel__t_double = T0(CEL_T_DOUBLE), cel__t_string = T0(CEL_T_STRING),
                       cel__t_bytes = T0(CEL_T_BYTES), cel__t_null = T0(CEL_T_NULL),
                       cel__t_timestamp = T0(CEL_T_TIMESTAMP),
                       cel__t_duration = T0(CEL_T_DURATION), cel__t_semver = T0(CEL_T_SEMVER),
                       cel__t_quantity = T0(CEL_T_QUANTITY), cel__t_ip = T0(CEL_T_IP),
                       cel__t_cidr = T0(CEL_T_CIDR), cel__t_url = T0(CEL_T_URL),
                       cel__t_format = T0(CEL_T_FORMAT),
                       cel__t_device = T0(CEL_T_DEVICE), cel__t_type = T0(CEL_T_TYPE);

const struct cel__type *cel__type_new(struct cel__types *ts, enum cel__tkind k,
                                      const struct cel__type *p0, const struct cel__type *p1)
{
    struct cel__type *t = cel__alloc(ts->arena, sizeof(*t));

    if (!t) {
        ts->oom = 1;
        return &cel__t_error;
    }
    t->kind = k;
    t->p[0] = p0;
    t->p[1] = p1;
    t->np = p1 ? 2 : p0 ? 1 : 0;
    return t;
}

const struct cel__type *cel__type_var(struct cel__types *ts)
{
    char name[24];
    struct cel__type *t = cel__alloc(ts->arena, sizeof(*t));

    if (!t) {
        ts->oom = 1;
        return &cel__t_error;
    }
    snprintf(name, sizeof(name), "_var%d", ts->next_var++);
    t->kind = CEL_T_PARAM;
    if (!(t->name = cel__strndup(ts->arena, name, strlen(name))))
        ts->oom = 1;
    return t;
}

int cel__type_is_dyn(const struct cel__type *t)
{
    return t->kind == CEL_T_DYN || t->kind == CEL_T_ANY;
}

static int dyn_or_error(const struct cel__type *t)
{
    return cel__type_is_dyn(t) || t->kind == CEL_T_ERROR;
}

int cel__type_exact(const struct cel__type *a, const struct cel__type *b)
{
    if (a == b)
        return 1;
    if (a->kind != b->kind || a->np != b->np)
        return 0;
    if (a->kind == CEL_T_PARAM)
        return strcmp(a->name, b->name) == 0;
    for (int i = 0; i < a->np; i++)
        if (!cel__type_exact(a->p[i], b->p[i]))
            return 0;
    return 1;
}

static const struct cel__type *find(const struct cel__mapping *m, const struct cel__type *t)
{
    for (size_t i = 0; i < m->n; i++)
        if (cel__type_exact(m->from[i], t))
            return m->to[i];
    return NULL;
}

static void add(struct cel__types *ts, const struct cel__type *from, const struct cel__type *to)
{
    struct cel__mapping *m = &ts->m;

    for (size_t i = 0; i < m->n; i++)
        if (cel__type_exact(m->from[i], from)) {
            m->to[i] = to;
            return;
        }
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        const struct cel__type **f = cel__alloc(ts->arena, cap * sizeof(*f));
        const struct cel__type **t = cel__alloc(ts->arena, cap * sizeof(*t));
        if (!f || !t) {
            ts->oom = 1;
            return;
        }
        if (m->n) {
            memcpy(f, m->from, m->n * sizeof(*f));
            memcpy(t, m->to, m->n * sizeof(*t));
        }
        m->from = f;
        m->to = t;
        m->cap = cap;
    }
    m->from[m->n] = from;
    m->to[m->n++] = to;
}

/* Whether t1 is equal to or less specific than t2 (cel-go isEqualOrLessSpecific). */
static int less_specific(const struct cel__type *t1, const struct cel__type *t2)
{
    if (cel__type_is_dyn(t1) || t1->kind == CEL_T_PARAM)
        return 1;
    if (cel__type_is_dyn(t2) || t2->kind == CEL_T_PARAM)
        return 0;
    if (t1->kind != t2->kind)
        return 0;
    switch (t1->kind) {
    case CEL_T_OPTIONAL:
    case CEL_T_LIST:
    case CEL_T_MAP:
        for (int i = 0; i < t1->np; i++)
            if (!less_specific(t1->p[i], t2->p[i]))
                return 0;
        return 1;
    case CEL_T_TYPE: return 1;
    default: return cel__type_exact(t1, t2);
    }
}

const struct cel__type *cel__type_most_general(const struct cel__type *a,
                                               const struct cel__type *b)
{
    return less_specific(a, b) ? a : b;
}

static int not_referenced_in(const struct cel__types *ts, const struct cel__type *t,
                             const struct cel__type *within)
{
    const struct cel__type *sub;

    if (cel__type_exact(t, within))
        return 0;
    switch (within->kind) {
    case CEL_T_PARAM:
        sub = find(&ts->m, within);
        return sub ? not_referenced_in(ts, t, sub) : 1;
    case CEL_T_OPTIONAL:
    case CEL_T_LIST:
    case CEL_T_MAP:
    case CEL_T_TYPE:
        for (int i = 0; i < within->np; i++)
            if (!not_referenced_in(ts, t, within->p[i]))
                return 0;
        return 1;
    default: return 1;
    }
}

static int assignable(struct cel__types *ts, const struct cel__type *t1,
                      const struct cel__type *t2);

/* cel-go isValidTypeSubstitution: may t1 stand for the parameter t2? */
static int valid_subst(struct cel__types *ts, const struct cel__type *t1,
                       const struct cel__type *t2, int *has_sub)
{
    const struct cel__type *sub;

    *has_sub = 0;
    if (cel__type_exact(t1, t2)) {
        *has_sub = 1;
        return 1;
    }
    if ((sub = find(&ts->m, t2))) {
        *has_sub = 1;
        if (cel__type_exact(t1, sub))
            return 1;
        if (assignable(ts, t1, sub)) {
            const struct cel__type *g = cel__type_most_general(t1, sub);
            if (not_referenced_in(ts, t2, g))
                add(ts, t2, g);
            return 1;
        }
        return 0;
    }
    if (not_referenced_in(ts, t2, t1)) {
        add(ts, t2, t1);
        return 1;
    }
    return 0;
}

static int nullable(const struct cel__type *t)
{
    switch (t->kind) {
    case CEL_T_NULL: case CEL_T_ANY: case CEL_T_DURATION: case CEL_T_TIMESTAMP:
    case CEL_T_OPTIONAL: case CEL_T_SEMVER: case CEL_T_QUANTITY: case CEL_T_IP:
    case CEL_T_CIDR: case CEL_T_URL: case CEL_T_FORMAT: case CEL_T_DEVICE:
        return 1;
    default: return 0;
    }
}

static int assignable(struct cel__types *ts, const struct cel__type *t1,
                      const struct cel__type *t2)
{
    int has;

    if (t2->kind == CEL_T_PARAM) {
        if (valid_subst(ts, t1, t2, &has))
            return 1;
        if (has)
            return 0;
    }
    if (t1->kind == CEL_T_PARAM)
        return valid_subst(ts, t2, t1, &has);
    if (dyn_or_error(t1) || dyn_or_error(t2))
        return 1;
    if (t1->kind == CEL_T_NULL)
        return nullable(t2);
    if (t2->kind == CEL_T_NULL)
        return nullable(t1);
    if (t1->kind != t2->kind)
        return 0;
    switch (t1->kind) {
    case CEL_T_TYPE: return 1;
    case CEL_T_OPTIONAL:
    case CEL_T_LIST:
    case CEL_T_MAP:
        if (t1->np != t2->np)
            return 0;
        for (int i = 0; i < t1->np; i++)
            if (!assignable(ts, t1->p[i], t2->p[i]))
                return 0;
        return 1;
    default: return 1;
    }
}

int cel__type_assignable(struct cel__types *ts, const struct cel__type *t1,
                         const struct cel__type *t2)
{
    size_t n = ts->m.n;
    const struct cel__type **saved = NULL;

    /* Bindings are only kept when the whole test succeeds (cel-go copies the mapping). */
    if (n && !(saved = cel__alloc(ts->arena, n * sizeof(*saved) * 2))) {
        ts->oom = 1;
        return 0;
    }
    if (n) {
        memcpy(saved, ts->m.from, n * sizeof(*saved));
        memcpy(saved + n, ts->m.to, n * sizeof(*saved));
    }
    if (assignable(ts, t1, t2))
        return 1;
    ts->m.n = n;
    if (n) {
        memcpy(ts->m.from, saved, n * sizeof(*saved));
        memcpy(ts->m.to, saved + n, n * sizeof(*saved));
    }
    return 0;
}

int cel__type_assignable_list(struct cel__types *ts, const struct cel__type *const *l1,
                              const struct cel__type *const *l2, size_t n)
{
    size_t keep = ts->m.n;
    const struct cel__type **saved = NULL;

    if (keep && !(saved = cel__alloc(ts->arena, keep * sizeof(*saved) * 2))) {
        ts->oom = 1;
        return 0;
    }
    if (keep) {
        memcpy(saved, ts->m.from, keep * sizeof(*saved));
        memcpy(saved + keep, ts->m.to, keep * sizeof(*saved));
    }
    for (size_t i = 0; i < n; i++)
        if (!assignable(ts, l1[i], l2[i])) {
            ts->m.n = keep;
            if (keep) {
                memcpy(ts->m.from, saved, keep * sizeof(*saved));
                memcpy(ts->m.to, saved + keep, keep * sizeof(*saved));
            }
            return 0;
        }
    return 1;
}

const struct cel__type *cel__type_subst(struct cel__types *ts, const struct cel__type *t,
                                        int params_to_dyn)
{
    const struct cel__type *sub = find(&ts->m, t), *a, *b;
    int depth = 0;

    /* A chain of bindings ends: not_referenced_in keeps the mapping acyclic. */
    while (sub && depth++ < 64) {
        t = sub;
        sub = find(&ts->m, t);
    }
    if (t->kind == CEL_T_PARAM)
        return params_to_dyn ? &cel__t_dyn : t;
    if (!t->np)
        return t;
    a = cel__type_subst(ts, t->p[0], params_to_dyn);
    b = t->np > 1 ? cel__type_subst(ts, t->p[1], params_to_dyn) : NULL;
    if (a == t->p[0] && (t->np < 2 || b == t->p[1]))
        return t;
    return cel__type_new(ts, t->kind, a, b);
}

static void put(char *buf, size_t n, size_t *pos, const char *s)
{
    size_t len = strlen(s);

    if (*pos + 1 >= n)
        return;
    if (len > n - *pos - 1)
        len = n - *pos - 1;
    memcpy(buf + *pos, s, len);
    *pos += len;
    buf[*pos] = '\0';
}

static const char *const kind_names[] = {
    [CEL_T_DYN] = "dyn", [CEL_T_ANY] = "any", [CEL_T_ERROR] = "*error*", [CEL_T_BOOL] = "bool",
    [CEL_T_INT] = "int", [CEL_T_UINT] = "uint", [CEL_T_DOUBLE] = "double",
    [CEL_T_STRING] = "string", [CEL_T_BYTES] = "bytes", [CEL_T_NULL] = "null_type",
    [CEL_T_TIMESTAMP] = "google.protobuf.Timestamp", [CEL_T_DURATION] = "google.protobuf.Duration",
    [CEL_T_LIST] = "list", [CEL_T_MAP] = "map", [CEL_T_TYPE] = "type",
    [CEL_T_OPTIONAL] = "optional_type", [CEL_T_SEMVER] = "kubernetes.Semver",
    [CEL_T_QUANTITY] = "kubernetes.Quantity", [CEL_T_IP] = "net.IP", [CEL_T_CIDR] = "net.CIDR",
    [CEL_T_URL] = "kubernetes.URL", [CEL_T_FORMAT] = "kubernetes.NamedFormat", [CEL_T_DEVICE] = "kubernetes.DRADevice", [CEL_T_PARAM] = "?",
};

static void type_put(const struct cel__type *t, char *buf, size_t n, size_t *pos)
{
    put(buf, n, pos, t->kind == CEL_T_PARAM ? t->name : kind_names[t->kind]);
    if (!t->np)
        return;
    put(buf, n, pos, "(");
    for (int i = 0; i < t->np; i++) {
        if (i)
            put(buf, n, pos, ", ");
        type_put(t->p[i], buf, n, pos);
    }
    put(buf, n, pos, ")");
}

void cel__type_str(const struct cel__type *t, char *buf, size_t n)
{
    size_t pos = 0;

    if (!n)
        return;
    buf[0] = '\0';
    type_put(t, buf, n, &pos);
}

const struct cel__type *cel__type_parse(struct cel__types *ts, const char **s)
{
    static const struct {
        const char *name;
        const struct cel__type *t;
        enum cel__tkind k;
        int np;
    } names[] = {
        {"dyn", &cel__t_dyn, 0, 0}, {"bool", &cel__t_bool, 0, 0}, {"int", &cel__t_int, 0, 0},
        {"uint", &cel__t_uint, 0, 0}, {"double", &cel__t_double, 0, 0},
        {"string", &cel__t_string, 0, 0}, {"bytes", &cel__t_bytes, 0, 0},
        {"null", &cel__t_null, 0, 0}, {"timestamp", &cel__t_timestamp, 0, 0},
        {"duration", &cel__t_duration, 0, 0}, {"semver", &cel__t_semver, 0, 0},
        {"quantity", &cel__t_quantity, 0, 0}, {"ip", &cel__t_ip, 0, 0},
        {"cidr", &cel__t_cidr, 0, 0}, {"url", &cel__t_url, 0, 0},
        {"format", &cel__t_format, 0, 0},
        {"list", NULL, CEL_T_LIST, 1}, {"map", NULL, CEL_T_MAP, 2},
        {"opt", NULL, CEL_T_OPTIONAL, 1}, {"type", NULL, CEL_T_TYPE, 1},
    };
    const char *p = *s;
    size_t len = 0;

    while (p[len] >= 'a' && p[len] <= 'z')
        len++;
    if (len == 0 && p[0] >= 'A' && p[0] <= 'Z') {
        struct cel__type *t = cel__alloc(ts->arena, sizeof(*t));
        if (!t || !(t->name = cel__strndup(ts->arena, p, 1))) {
            ts->oom = 1;
            return &cel__t_error;
        }
        t->kind = CEL_T_PARAM;
        *s = p + 1;
        return t;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const struct cel__type *a = NULL, *b = NULL;
        if (strlen(names[i].name) != len || memcmp(names[i].name, p, len) != 0)
            continue;
        p += len;
        if (names[i].t && *p != '(') {
            *s = p;
            return names[i].t;
        }
        if (*p != '(')
            break;
        p++;
        a = cel__type_parse(ts, &p);
        if (names[i].np == 2 && *p == ',') {
            p++;
            b = cel__type_parse(ts, &p);
        }
        if (*p == ')')
            p++;
        *s = p;
        return cel__type_new(ts, names[i].k, a, b);
    }
    ts->oom = 1; /* a malformed signature in the library table: fails every compile */
    *s = p + len;
    return &cel__t_error;
}
