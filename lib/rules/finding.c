#include "rules/finding.h"

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

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

static void finding_release(struct dd_finding *f)
{
    free(f->obj.api_version);
    free(f->obj.kind);
    free(f->obj.namespace_);
    free(f->obj.name);
    free(f->file);
    free(f->message);
    free(f->fix);
    free(f->scope_class);
    free(f->scope_driver);
    free(f->scope_node);
    memset(f, 0, sizeof(*f));
}

struct dd_finding *dd_findings_add(struct dd_findings *list, const char *code,
                                   enum dd_severity sev, const char *api_version,
                                   const char *kind, const char *ns, const char *name,
                                   const char *file, int line, const char *message,
                                   const char *fix)
{
    struct dd_finding *f;

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
    f = &list->v[list->n];
    memset(f, 0, sizeof(*f));
    f->code = code;
    f->severity = sev;
    f->line = line;
    f->obj.api_version = dup_or_empty(api_version);
    f->obj.kind = dup_or_empty(kind);
    f->obj.namespace_ = dup_or_empty(ns);
    f->obj.name = dup_or_empty(name);
    f->file = file ? strdup(file) : NULL;
    f->message = dup_or_empty(message);
    f->fix = dup_or_empty(fix);
    if (!f->obj.api_version || !f->obj.kind || !f->obj.namespace_ || !f->obj.name ||
        (file && !f->file) || !f->message || !f->fix) {
        finding_release(f);
        list->oom = 1;
        return NULL;
    }
    list->n++;
    return f;
}

static int set_dup(char **dst, const char *src)
{
    free(*dst);
    *dst = NULL;
    return src && !(*dst = strdup(src)) ? -1 : 0;
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

struct dd_finding *dd_findings_copy(struct dd_findings *list, const struct dd_finding *f)
{
    struct dd_finding *c = dd_findings_add(list, f->code, f->severity, f->obj.api_version,
                                           f->obj.kind, f->obj.namespace_, f->obj.name, f->file,
                                           f->line, f->message, f->fix);

    if (c) {
        c->col = f->col;
        if (dd_finding_scope(c, f->scope_class, f->scope_driver, f->scope_node))
            list->oom = 1;
    }
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
