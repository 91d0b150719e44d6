#include "rules/finding.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const char *dd_severity_name(enum dd_severity s)
{
    switch (s) {
    case DD_SEV_ERROR: return "error";
    case DD_SEV_WARNING: return "warning";
    case DD_SEV_INFO: return "info";
    }
    return "info";
}

int dd_severity_parse(const char *s)
{
    if (!strcmp(s, "error"))
        return DD_SEV_ERROR;
    if (!strcmp(s, "warning"))
        return DD_SEV_WARNING;
    if (!strcmp(s, "info"))
        return DD_SEV_INFO;
    return -1;
}

/*
 * A finding's strings live in reference-counted blocks, its object's, file, message and fix in
 * one, each scope string in one of its own: a copy (dd_findings_copy: a snapshot's update keeps
 * most of the previous one's findings) shares them instead of copying every string.  Strings
 * are never changed in place, and a block goes with the last finding that names it (on any
 * thread: atomic).
 */
struct block {
    atomic_size_t refs;
    char s[];
};

static struct block *block_of(const char *s)
{
    return (struct block *)(void *)(s - offsetof(struct block, s));
}

static void str_ref(const char *s)
{
    if (s)
        atomic_fetch_add(&block_of(s)->refs, 1);
}

static void str_unref(const char *s)
{
    struct block *b = s ? block_of(s) : NULL;

    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        free(b);
}

/* The strings into one new block (each NULL taken as ""), pointers to them into out[]; the
 * block's first is out[0].  -1 on ENOMEM. */
static int block_new(const char *const *in, char **out, size_t n)
{
    size_t len[8], i, total = 0;
    struct block *b;
    char *p;

    for (i = 0; i < n; i++)
        total += (len[i] = in[i] ? strlen(in[i]) : 0) + 1;
    if (!(b = malloc(offsetof(struct block, s) + total)))
        return -1;
    atomic_init(&b->refs, 1);
    for (i = 0, p = b->s; i < n; i++) {
        memcpy(p, in[i] ? in[i] : "", len[i]);
        p[len[i]] = '\0';
        out[i] = p;
        p += len[i] + 1;
    }
    return 0;
}

int dd_finding_shared(const struct dd_finding *f)
{
    return f->obj.api_version && atomic_load(&block_of(f->obj.api_version)->refs) > 1;
}

static void finding_release(struct dd_finding *f)
{
    /* obj.api_version starts the block of the object, file, message and fix. */
    str_unref(f->obj.api_version);
    str_unref(f->scope_class);
    str_unref(f->scope_driver);
    str_unref(f->scope_node);
    memset(f, 0, sizeof(*f));
}

/* Room for one more finding at the end of list (not counted yet); NULL when out of memory. */
static struct dd_finding *slot(struct dd_findings *list)
{
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 16;
        struct dd_finding *v = realloc(list->v, cap * sizeof(*v));
        if (!v) {
            list->oom = 1;
            return NULL;
        }
        list->v = v;
        list->cap = cap;
    }
    return memset(&list->v[list->n], 0, sizeof(list->v[0]));
}

struct dd_finding *dd_findings_add(struct dd_findings *list, const char *code,
                                   enum dd_severity sev, const char *api_version,
                                   const char *kind, const char *ns, const char *name,
                                   const char *file, int line, const char *message,
                                   const char *fix)
{
    const char *in[7] = { api_version, kind, ns, name, message, fix, file };
    char *out[7];
    struct dd_finding *f;

    if (!(f = slot(list)))
        return NULL;
    if (block_new(in, out, file ? 7 : 6)) {
        list->oom = 1;
        return NULL;
    }
    f->code = code;
    f->severity = sev;
    f->line = line;
    f->obj.api_version = out[0];
    f->obj.kind = out[1];
    f->obj.namespace_ = out[2];
    f->obj.name = out[3];
    f->message = out[4];
    f->fix = out[5];
    f->file = file ? out[6] : NULL;
    list->n++;
    return f;
}

static int set_dup(char **dst, const char *src)
{
    str_unref(*dst);
    *dst = NULL;
    return src && block_new(&src, dst, 1) ? -1 : 0;
}

int dd_finding_scope(struct dd_finding *f, const char *cls, const char *driver, const char *node)
{
    return set_dup(&f->scope_class, cls) | set_dup(&f->scope_driver, driver) |
           set_dup(&f->scope_node, node);
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* What a finding is about and where: its code, object, file and line. */
static int cmp_place(const struct dd_finding *a, const struct dd_finding *b)
{
    int c;

    if ((c = strcmp(a->code, b->code)) || (c = strcmp(a->obj.kind, b->obj.kind)) ||
        (c = strcmp(a->obj.namespace_, b->obj.namespace_)) ||
        (c = strcmp(a->obj.name, b->obj.name)) || (c = cmp_str(a->file, b->file)))
        return c;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int cmp_place_q(const void *a, const void *b)
{
    return cmp_place(a, b);
}

void dd_findings_merge(struct dd_findings *into, struct dd_findings *from)
{
    size_t i, n0;

    if (into->n > 1)
        qsort(into->v, into->n, sizeof(into->v[0]), cmp_place_q);
    n0 = into->n;
    for (i = 0; i < from->n; i++) {
        struct dd_finding *f = &from->v[i];
        if (n0 && bsearch(f, into->v, n0, sizeof(*f), cmp_place_q)) {
            finding_release(f);
            continue;
        }
        if (into->n == into->cap) {
            size_t cap = into->cap ? into->cap * 2 : 16;
            struct dd_finding *v = realloc(into->v, cap * sizeof(*v));
            if (!v) {
                into->oom = 1;
                finding_release(f);
                continue;
            }
            into->v = v;
            into->cap = cap;
        }
        into->v[into->n++] = *f;
    }
    into->oom |= from->oom;
    free(from->v);
    memset(from, 0, sizeof(*from));
}

int dd_finding_cmp(const struct dd_finding *a, const struct dd_finding *b)
{
    int c;

    if ((c = cmp_str(a->file, b->file)))
        return c;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if ((c = strcmp(a->code, b->code)) || (c = strcmp(a->obj.kind, b->obj.kind)) ||
        (c = strcmp(a->obj.namespace_, b->obj.namespace_)) ||
        (c = strcmp(a->obj.name, b->obj.name)) || (c = strcmp(a->message, b->message)))
        return c;
    /* The rest only orders what the above leaves equal, so the order is total. */
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    if (a->severity != b->severity)
        return a->severity < b->severity ? -1 : 1;
    if ((c = strcmp(a->obj.api_version, b->obj.api_version)) || (c = strcmp(a->fix, b->fix)) ||
        (c = cmp_str(a->scope_class, b->scope_class)) ||
        (c = cmp_str(a->scope_driver, b->scope_driver)) ||
        (c = cmp_str(a->scope_node, b->scope_node)))
        return c;
    /* NULL and "" compared equal so far. */
    return (!a->file - !b->file) * 8 + (!a->scope_class - !b->scope_class) * 4 +
           (!a->scope_driver - !b->scope_driver) * 2 + (!a->scope_node - !b->scope_node);
}

static int cmp_finding(const void *pa, const void *pb)
{
    return dd_finding_cmp(pa, pb);
}

void dd_findings_sort(struct dd_findings *list)
{
    if (list->n > 1)
        qsort(list->v, list->n, sizeof(list->v[0]), cmp_finding);
}

void dd_findings_sort_tail(struct dd_findings *list, size_t k)
{
    struct dd_finding *v;
    size_t i, j, o, at;

    if (k > list->n)
        k = list->n;
    if (list->n - k > 1)
        qsort(list->v + k, list->n - k, sizeof(list->v[0]), cmp_finding);
    if (!k || k == list->n || cmp_finding(&list->v[k - 1], &list->v[k]) <= 0)
        return;
    if (!(v = malloc(list->n * sizeof(*v)))) {
        dd_findings_sort(list); /* in place, slower */
        return;
    }
    /* The few new ones each find their place among the kept by bisection, and the kept go
     * over in runs: comparing every kept finding would read all of them.  The kept first on
     * ties (the order is total anyway). */
    for (i = 0, j = k, o = 0; j < list->n; j++) {
        size_t lo = i, hi = k;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_finding(&list->v[mid], &list->v[j]) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        at = lo;
        memcpy(v + o, list->v + i, (at - i) * sizeof(*v));
        o += at - i;
        i = at;
        v[o++] = list->v[j];
    }
    memcpy(v + o, list->v + i, (k - i) * sizeof(*v));
    free(list->v);
    list->v = v;
    list->cap = list->n;
}

void dd_findings_remove(struct dd_findings *list, const struct dd_findings *gone)
{
    size_t i, j, o;
    unsigned char *drop;

    if (!gone->n || !list->n)
        return;
    if (!(drop = calloc(list->n, 1))) {
        list->oom = 1;
        return;
    }
    for (j = 0; j < gone->n; j++)
        for (i = 0; i < list->n; i++)
            if (!drop[i] && list->v[i].code == gone->v[j].code &&
                !dd_finding_cmp(&list->v[i], &gone->v[j])) {
                drop[i] = 1;
                break;
            }
    for (i = o = 0; i < list->n; i++) {
        if (drop[i])
            finding_release(&list->v[i]);
        else
            list->v[o++] = list->v[i];
    }
    list->n = o;
    free(drop);
}

struct dd_finding *dd_findings_copy(struct dd_findings *list, const struct dd_finding *f)
{
    struct dd_finding *c = slot(list);

    if (!c)
        return NULL;
    *c = *f;
    str_ref(c->obj.api_version);
    str_ref(c->scope_class);
    str_ref(c->scope_driver);
    str_ref(c->scope_node);
    list->n++;
    return c;
}

size_t dd_findings_count(const struct dd_findings *list, enum dd_severity sev)
{
    size_t i, n = 0;

    for (i = 0; i < list->n; i++)
        if (list->v[i].severity >= sev)
            n++;
    return n;
}

void dd_findings_drop_live(struct dd_findings *list)
{
    size_t i, n = 0;

    for (i = 0; i < list->n; i++) {
        if (list->v[i].file)
            list->v[n++] = list->v[i];
        else
            finding_release(&list->v[i]);
    }
    list->n = n;
}

void dd_findings_release(struct dd_findings *list)
{
    size_t i;

    for (i = 0; i < list->n; i++)
        finding_release(&list->v[i]);
    free(list->v);
    memset(list, 0, sizeof(*list));
}
