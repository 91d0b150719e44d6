/*
 * manifest.c - files, directories and stdin to Kubernetes objects.
 *
 * YAML (and JSON) parsing lives behind lib/formats/yaml.c; this file reads bytes,
 * walks directories, flattens Lists, and keeps the node -> position index.
 */
#include "formats/manifest.h"
#include "formats/yaml.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Directory nesting a walk follows.  Real repositories are a few levels
 * deep; the bound keeps a pathological tree from exhausting the C stack.
 */
#define MAX_DIR_DEPTH 64

/* Position index: open addressing, linear probing, keys are node addresses. */
struct mf_pos_entry {
    const cJSON *node; /* NULL marks a free slot */
    int line, col;     /* 1-based */
};

struct mf_pos_map {
    struct mf_pos_entry *slot; /* slot[0..cap); cap is a power of two */
    size_t cap, n;             /* n <= cap * 3 / 4 */
};

struct load {
    struct mf_set *set; /* borrowed */
    const char *file;   /* interned in set */
    int chart_root;     /* the file lies in a Helm chart's root directory (next to
                           Chart.yaml): its non-Kubernetes documents are the chart's own */
};

/*
 * What reading files keeps from one file to the next: the read buffer, and
 * whether the last directory asked about holds a Chart.yaml (files come
 * directory by directory, so each is looked at once, not once per file).
 */
struct reader {
    const struct mf_limits *lim; /* borrowed; defaults filled in */
    char *buf;                   /* owned; cap bytes */
    size_t cap;
    char *dir;                   /* owned; NULL before the first question */
    int dir_chart;               /* dir holds a Chart.yaml */
};

static size_t pos_hash(const struct mf_pos_map *m, const cJSON *node)
{
    uint64_t a = (uint64_t)(uintptr_t)node;

    /*
     * Nodes are 16-byte aligned heap addresses, and a document's nodes are
     * mostly allocated one after the other.  Keeping the order of addresses
     * inside each 64 KiB region (and scattering the regions) turns the
     * inserts of a document into a near-sequential walk of the table; a
     * Fibonacci hash of the whole address made every insert a cache miss,
     * a sixth of the loader's time once YAML parsing got fast.
     */
    return (size_t)((a >> 4) + (((a >> 16) * 0x9E3779B97F4A7C15ULL) >> 40)) & (m->cap - 1);
}

static struct mf_pos_entry *pos_slot(const struct mf_pos_map *m, const cJSON *node)
{
    size_t mask = m->cap - 1, i = pos_hash(m, node);

    while (m->slot[i].node && m->slot[i].node != node)
        i = (i + 1) & mask;
    return &m->slot[i];
}

/* Makes room for `more` entries at once, so a document never rehashes twice. */
static enum dd_rc pos_reserve(struct mf_set *set, size_t more)
{
    struct mf_pos_map *m = set->pos;
    struct mf_pos_entry *old;
    size_t need, ncap, oldcap, i;

    if (!m) {
        m = calloc(1, sizeof(*m));
        if (!m)
            return DD_ENOMEM;
        set->pos = m;
    }
    need = m->n + more;
    if (need <= m->cap / 4 * 3)
        return DD_OK;
    ncap = m->cap ? m->cap : 1024;
    while (ncap / 4 * 3 < need) {
        if (ncap > SIZE_MAX / 2 / sizeof(*old))
            return DD_ENOMEM;
        ncap *= 2;
    }
    old = m->slot;
    oldcap = m->cap;
    m->slot = calloc(ncap, sizeof(*m->slot));
    if (!m->slot) {
        m->slot = old;
        return DD_ENOMEM;
    }
    m->cap = ncap;
    for (i = 0; i < oldcap; i++)
        if (old[i].node)
            *pos_slot(m, old[i].node) = old[i];
    free(old);
    return DD_OK;
}

/* Room must have been reserved. */
static void pos_put(struct mf_pos_map *m, const cJSON *node, int line, int col)
{
    struct mf_pos_entry *e = pos_slot(m, node);

    if (!e->node)
        m->n++;
    e->node = node;
    e->line = line;
    e->col = col;
}

int mf_pos(const struct mf_set *set, const cJSON *node, int *line, int *col)
{
    const struct mf_pos_entry *e;

    if (set && ydoc_arena_pos(set->arena, node, line, col))
        return 1;
    if (!set || !set->pos || !set->pos->n || !node)
        return 0;
    e = pos_slot(set->pos, node);
    if (!e->node)
        return 0;
    if (line)
        *line = e->line;
    if (col)
        *col = e->col;
    return 1;
}

/* Grows *arr (of elem-sized items, *cap of them) to hold n + 1. */
static enum dd_rc grow(void *arr, size_t *cap, size_t n, size_t elem)
{
    void **pa = arr;
    size_t ncap;
    void *na;

    if (n < *cap)
        return DD_OK;
    ncap = *cap ? *cap * 2 : 16;
    if (ncap > SIZE_MAX / elem)
        return DD_ENOMEM;
    na = realloc(*pa, ncap * elem);
    if (!na)
        return DD_ENOMEM;
    *pa = na;
    *cap = ncap;
    return DD_OK;
}

void mf_set_init(struct mf_set *set)
{
    memset(set, 0, sizeof(*set));
}

cJSON *mf_set_add_string(struct mf_set *set, cJSON *obj, const char *key, const char *value)
{
    cJSON *v;

    /* A compact tree's nodes are the arena's and are never freed one by one: a node added
     * to one is remembered and freed on its own. */
    if (!ydoc_arena_pos(set->arena, obj, NULL, NULL))
        return cJSON_AddStringToObject(obj, key, value);
    if (set->nadded == set->capadded) {
        size_t cap = set->capadded ? 2 * set->capadded : 16;
        cJSON **a = realloc(set->added, cap * sizeof(*a));
        if (!a)
            return NULL;
        set->added = a;
        set->capadded = cap;
    }
    if (!(v = cJSON_CreateString(value)))
        return NULL;
    if (!cJSON_AddItemToObject(obj, key, v)) {
        cJSON_Delete(v);
        return NULL;
    }
    set->added[set->nadded++] = v;
    return v;
}

void mf_set_release(struct mf_set *set)
{
    size_t i;

    if (!set)
        return;
    for (i = 0; i < set->nroots; i++)
        cJSON_Delete(set->roots[i]);
    for (i = 0; i < set->nadded; i++) {
        set->added[i]->next = set->added[i]->prev = NULL;
        cJSON_Delete(set->added[i]);
    }
    free(set->added);
    for (i = 0; i < set->ndiags; i++) {
        free(set->diags[i].text);
        free(set->diags[i].chart);
    }
    for (i = 0; i < set->nfiles; i++)
        free(set->files[i]);
    free(set->roots);
    free(set->diags);
    free(set->files);
    free(set->objs);
    if (set->pos)
        free(set->pos->slot);
    free(set->pos);
    ydoc_arena_free(set->arena);
    {
        mf_keep_fn keep = set->keep;
        mf_skim_fn skim = set->skim;
        const char *skim_unless = set->skim_unless, *skim_unless2 = set->skim_unless2;
        void *keep_ctx = set->keep_ctx;
        int compact = set->compact;
        mf_set_init(set);
        set->keep = keep;
        set->skim = skim;
        set->skim_unless = skim_unless;
        set->skim_unless2 = skim_unless2;
        set->keep_ctx = keep_ctx;
        set->compact = compact;
    }
}

/* Returns the set's copy of name (borrowed from the set), or NULL when out of memory. */
static const char *intern_file(struct mf_set *set, const char *name)
{
    size_t n = strlen(name);
    char *copy;

    /* Files come one at a time, so the last one is the only likely repeat. */
    if (set->nfiles && strcmp(set->files[set->nfiles - 1], name) == 0)
        return set->files[set->nfiles - 1];
    if (grow(&set->files, &set->capfiles, set->nfiles, sizeof(*set->files)) != DD_OK)
        return NULL;
    copy = malloc(n + 1);
    if (!copy)
        return NULL;
    memcpy(copy, name, n + 1);
    set->files[set->nfiles++] = copy;
    return copy;
}

static enum dd_rc add_diag(struct mf_set *set, enum mf_diag_kind kind, const char *file, int line,
                           int col, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static enum dd_rc add_diag(struct mf_set *set, enum mf_diag_kind kind, const char *file, int line,
                           int col, const char *fmt, ...)
{
    struct mf_diag *d;
    va_list ap;
    char *text;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(&set->diags, &set->capdiags, set->ndiags, sizeof(*set->diags)) != DD_OK)
        return DD_ENOMEM;
    text = malloc((size_t)n + 1);
    if (!text)
        return DD_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    d = &set->diags[set->ndiags++];
    d->kind = kind;
    d->is_error = kind == MF_DIAG_ERROR;
    d->file = (char *)file; /* interned: the set frees it through set->files */
    d->line = line;
    d->col = col;
    d->text = text;
    d->chart = NULL;
    set->nerrors += d->is_error;
    return DD_OK;
}

static const char *str_field(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int is_k8s(const cJSON *obj)
{
    return cJSON_IsObject(obj) && str_field(obj, "apiVersion") && str_field(obj, "kind");
}

static enum dd_rc add_object(struct mf_set *set, const char *file, cJSON *json, int line, int col)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(json, "metadata");
    struct mf_object *o;
    const char *s;

    if (grow(&set->objs, &set->cap, set->n, sizeof(*set->objs)) != DD_OK)
        return DD_ENOMEM;
    o = &set->objs[set->n++];
    o->json = json;
    o->file = file;
    o->line = line;
    o->col = col;
    o->api_version = str_field(json, "apiVersion");
    o->kind = str_field(json, "kind");
    o->namespace_ = "";
    o->name = "";
    if (cJSON_IsObject(meta)) {
        if ((s = str_field(meta, "namespace")) != NULL)
            o->namespace_ = s;
        if ((s = str_field(meta, "name")) != NULL || (s = str_field(meta, "generateName")) != NULL)
            o->name = s;
    }
    return DD_OK;
}

static int is_list(const cJSON *obj)
{
    const char *kind = str_field(obj, "kind");
    size_t n = kind ? strlen(kind) : 0;

    return n >= 4 && strcmp(kind + n - 4, "List") == 0 &&
           cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(obj, "items"));
}

/* A key of obj equal to name but for letter case ("apiversion", "Kind"), or NULL. */
static const char *miscased_key(const cJSON *obj, const char *name)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, obj)
        if (it->string && strcmp(it->string, name) && !strcasecmp(it->string, name))
            return it->string;
    return NULL;
}

/*
 * A document (item: index of a List item, or (size_t)-1) without a string apiVersion and kind.
 * One that has metadata or spec, or a miscased apiVersion/kind, was meant to be an object:
 * kubectl refuses it ("apiVersion not set"), so it is more than a file that is not a manifest.
 */
static enum dd_rc not_k8s(struct mf_set *set, const char *file, const cJSON *obj, int line,
                          int col, size_t item)
{
    const char *bad_av = cJSON_IsObject(obj) ? miscased_key(obj, "apiVersion") : NULL;
    const char *bad_kind = cJSON_IsObject(obj) ? miscased_key(obj, "kind") : NULL;
    const char *av = str_field(obj, "apiVersion"), *kind = str_field(obj, "kind");
    char what[64] = "document";

    if (item != (size_t)-1)
        snprintf(what, sizeof(what), "list item %zu", item);
    if (bad_av || bad_kind)
        return add_diag(set, MF_DIAG_K8S_LIKE, file, line, col,
                        "%s has '%s' where Kubernetes wants '%s' (field names are "
                        "case-sensitive): kubectl rejects it (\"%s not set\") and it is not "
                        "checked", what, bad_av ? bad_av : bad_kind,
                        bad_av ? "apiVersion" : "kind", bad_av ? "apiVersion" : "kind");
    if (cJSON_IsObject(obj) && (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata")) ||
                                kind))
        return add_diag(set, MF_DIAG_K8S_LIKE, file, line, col,
                        "%s looks like a Kubernetes object but has no %s%s: kubectl rejects it "
                        "(\"%s not set\") and it is not checked", what,
                        av ? "kind" : kind ? "apiVersion" : "apiVersion and kind",
                        (av || kind) ? "" : " strings", av ? "kind" : "apiVersion");
    return add_diag(set, MF_DIAG_NOT_K8S, file, line, col,
                    "%s is not a Kubernetes object (no apiVersion and kind), so it is skipped",
                    what);
}

/* The document's positions are already in the index. */
static enum dd_rc add_document_objects(struct mf_set *set, const char *file, cJSON *root, int line,
                                       int col)
{
    cJSON *item;
    size_t i = 0;
    enum dd_rc rc;

    if (!is_list(root))
        return add_object(set, file, root, line, col);
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(root, "items")) {
        int il = 0, ic = 0;
        mf_pos(set, item, &il, &ic);
        if (is_k8s(item))
            rc = add_object(set, file, item, il, ic);
        else
            rc = not_k8s(set, file, item, il, ic, i);
        if (rc != DD_OK)
            return rc;
        i++;
    }
    return DD_OK;
}

/* With set->arena, root is the arena's and pos is NULL: the arena knows the positions. */
static enum dd_rc on_document(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    struct load *ld = ctx;
    struct mf_set *set = ld->set;
    enum dd_rc rc = DD_ENOMEM;
    int line = 0, col = 0;
    size_t i;

    if (!root)
        return DD_OK; /* empty document */
    if (set->arena) {
        ydoc_arena_pos(set->arena, root, &line, &col);
    } else {
        line = pos[0].line;
        col = pos[0].col;
    }
    if (!is_k8s(root)) {
        rc = ld->chart_root ? DD_OK : not_k8s(set, ld->file, root, line, col, (size_t)-1);
        goto out;
    }
    if (set->keep && !is_list(root) && !set->keep(set->keep_ctx, root)) {
        set->nfiltered++;
        rc = DD_OK;
        goto out;
    }
    if (!set->arena) {
        if (grow(&set->roots, &set->caproots, set->nroots, sizeof(*set->roots)) != DD_OK ||
            pos_reserve(set, npos) != DD_OK)
            goto out;
        set->roots[set->nroots++] = root;
        for (i = 0; i < npos; i++)
            pos_put(set->pos, pos[i].node, pos[i].line, pos[i].col);
    }
    rc = add_document_objects(set, ld->file, root, line, col);
    root = NULL;
out:
    if (set->arena && root)
        ydoc_arena_drop(set->arena);
    else
        cJSON_Delete(root);
    return rc;
}

static int on_skim(void *ctx, const char *api_version, const char *kind)
{
    struct mf_set *set = ((struct load *)ctx)->set;

    return set->skim(set->keep_ctx, api_version, kind);
}

/* A document the reader did not build: an object keep drops. */
static enum dd_rc on_skipped(void *ctx)
{
    ((struct load *)ctx)->set->nfiltered++;
    return DD_OK;
}

static enum dd_rc on_error(void *ctx, const struct dd_err *err)
{
    struct load *ld = ctx;

    return add_diag(ld->set, MF_DIAG_ERROR, ld->file, err->line, err->col, "%s", err->msg);
}

static enum dd_rc on_warning(void *ctx, const struct dd_err *err)
{
    struct load *ld = ctx;

    return add_diag(ld->set, MF_DIAG_DUPLICATE, ld->file, err->line, err->col, "%s", err->msg);
}

static void effective_limits(const struct mf_limits *in, struct mf_limits *out)
{
    static const struct mf_limits def = MF_LIMITS_DEFAULT;

    *out = def;
    if (!in)
        return;
    if (in->max_file_bytes)
        out->max_file_bytes = in->max_file_bytes;
    /* read_all needs cap + 1 to see the end of a file exactly cap long. */
    if (out->max_file_bytes == SIZE_MAX)
        out->max_file_bytes--;
    if (in->max_depth > 0)
        out->max_depth = in->max_depth;
    if (in->max_documents)
        out->max_documents = in->max_documents;
    if (in->max_alias_nodes)
        out->max_alias_nodes = in->max_alias_nodes;
}

static void note_rc(enum dd_rc *first, enum dd_rc rc)
{
    if (*first == DD_OK)
        *first = rc;
}

/* ---- templates ------------------------------------------------------------ */

/* How far up a file's directories a chart's templates/ is looked for (charts nest a few). */
#define MAX_CHART_UP 8

static int is_file(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* 1 when directory dir[0..n) holds a Chart.yaml. */
static int has_chart_yaml(const char *dir, size_t n)
{
    char p[4096];

    if (n + sizeof("/Chart.yaml") > sizeof(p))
        return 0;
    snprintf(p, sizeof(p), "%.*s/Chart.yaml", (int)n, n ? dir : ".");
    return is_file(p);
}

/* Length of the directory part of path ("" has 0), without the trailing slash. */
static size_t dir_len(const char *path, size_t n)
{
    while (n > 0 && path[n - 1] != '/')
        n--;
    while (n > 1 && path[n - 1] == '/')
        n--;
    return n;
}

/*
 * The chart a file under a chart's templates/ belongs to: the directory above the nearest
 * "templates" ancestor when it holds Chart.yaml.  Returns the chart directory's length in
 * path (0 with *found = 0 when none).
 */
static size_t template_chart(const char *path, int *found)
{
    size_t n = dir_len(path, strlen(path)), up;

    *found = 0;
    for (up = 0; n > 0 && up < MAX_CHART_UP; up++) {
        size_t parent = dir_len(path, n), base = parent ? parent + 1 : 0;
        if (n - base == 9 && !strncmp(path + base, "templates", 9)) {
            if (has_chart_yaml(path, parent)) {
                *found = 1;
                return parent;
            }
        }
        if (parent == n)
            break;
        n = parent;
    }
    return 0;
}

/*
 * The first template action ("{{") where YAML would begin a value: at a line's first
 * non-blank, after "- " or after ": ".  There YAML would read a flow mapping whose first key
 * is a mapping, which no manifest means; inside a string or a block scalar "{{" is text.
 */
static int structural_action(const char *buf, size_t len, int *line, int *col)
{
    const char *end = buf + len, *p = buf, *bol = buf, *seen = buf, *nl, *k;
    int ln = 1;

    /* Most files have no "{{": it is looked for first, and lines are counted only for a hit. */
    while (p + 1 < end && (p = memchr(p, '{', (size_t)(end - p - 1))) != NULL) {
        if (p[1] != '{') {
            p++;
            continue;
        }
        /* The line's start, searching only what no earlier hit has searched. */
        if ((nl = memrchr(seen, '\n', (size_t)(p - seen))) != NULL)
            bol = nl + 1;
        seen = p;
        for (k = p; k > bol && (k[-1] == ' ' || k[-1] == '\t'); k--)
            ;
        if (k == bol || ((k[-1] == '-' || k[-1] == ':') && k != p)) {
            for (nl = buf; (nl = memchr(nl, '\n', (size_t)(bol - nl))) != NULL; nl++)
                ln++;
            *line = ln;
            *col = (int)(p - bol) + 1;
            return 1;
        }
        p++;
    }
    return 0;
}

static enum dd_rc discard_document(void *ctx, cJSON *root, const struct ydoc_pos *pos,
                                   size_t npos)
{
    (void)ctx;
    (void)pos;
    (void)npos;
    cJSON_Delete(root);
    return DD_OK;
}

static enum dd_rc note_error(void *ctx, const struct dd_err *err)
{
    (void)err;
    *(int *)ctx = 1;
    return DD_OK;
}

/* 1 when buf is well-formed YAML within the limits. */
static int parses(const char *buf, size_t len, const struct ydoc_limits *yl)
{
    int failed = 0;
    struct ydoc_sink sink = { &failed, discard_document, note_error, NULL, NULL };

    return ydoc_parse_stream(buf, len, yl, &sink) == DD_OK && !failed;
}

static enum dd_rc add_template(struct mf_set *set, const char *file, int line, int col,
                               const char *chart, size_t chart_len)
{
    struct mf_diag *d;

    if (add_diag(set, MF_DIAG_TEMPLATE, file, line, col,
                 "a Go/Helm template (\"{{\" where YAML starts a value): not read as a manifest"))
        return DD_ENOMEM;
    d = &set->diags[set->ndiags - 1];
    if (chart && !(d->chart = strndup(chart_len ? chart : ".", chart_len ? chart_len : 1)))
        return DD_ENOMEM;
    return DD_OK;
}

/* 1 when file's directory holds a Chart.yaml. */
static int in_chart_root(struct reader *rd, const char *file)
{
    size_t n = dir_len(file, strlen(file));
    char *d;

    if (rd->dir && strlen(rd->dir) == n && !memcmp(rd->dir, file, n))
        return rd->dir_chart;
    if ((d = strndup(file, n)) != NULL) {
        free(rd->dir);
        rd->dir = d;
        rd->dir_chart = has_chart_yaml(file, n);
        return rd->dir_chart;
    }
    return has_chart_yaml(file, n);
}

/* Parses one named buffer; lim already has its defaults.  rd (NULL for a buffer): file is a
 * path whose directories may be looked at (a chart's files are told by its Chart.yaml). */
static enum dd_rc load_named(struct mf_set *set, const char *file, const char *buf, size_t len,
                             const struct mf_limits *lim, struct reader *rd)
{
    struct ydoc_limits yl = { lim->max_depth, lim->max_documents, lim->max_alias_nodes };
    struct load ld = { set, file, 0 };
    struct ydoc_sink sink = { &ld, on_document, on_error, on_warning, NULL };
    struct ydoc_skim skim = { &ld, on_skim, set->skim_unless, set->skim_unless2, on_skipped };
    int line = 1, col = 1, in_chart = 0, action;
    size_t chart = 0;

    if (len > lim->max_file_bytes) {
        if (add_diag(set, MF_DIAG_ERROR, file, 0, 0, "file is larger than %zu bytes", lim->max_file_bytes))
            return DD_ENOMEM;
        return DD_ETOOBIG;
    }
    if (rd) {
        chart = template_chart(file, &in_chart);
        ld.chart_root = in_chart_root(rd, file);
    }
    action = structural_action(buf, len, &line, &col);
    if (in_chart || (action && !parses(buf, len, &yl))) {
        /* A template file without an action where YAML starts a value: its first "{{". */
        if (!action) {
            const char *a = len ? memmem(buf, len, "{{", 2) : NULL;
            const char *p;
            line = 1;
            col = 1;
            for (p = buf; a && p < a; p++) {
                col++;
                if (*p == '\n') {
                    line++;
                    col = 1;
                }
            }
        }
        return add_template(set, file, line, col, in_chart ? file : NULL, chart);
    }
    if (set->compact && !set->arena && !(set->arena = ydoc_arena_new()))
        return DD_ENOMEM;
    sink.arena = set->arena;
    return ydoc_parse_stream_skim(buf, len, &yl, &sink, set->keep && set->skim ? &skim : NULL, 0,
                                  NULL);
}

enum dd_rc mf_load_buffer(struct mf_set *set, const char *name, const char *buf, size_t len,
                          const struct mf_limits *lim)
{
    struct mf_limits l;
    const char *file;

    if (!set || (!buf && len))
        return DD_EINVAL;
    effective_limits(lim, &l);
    file = intern_file(set, name ? name : "<buffer>");
    if (!file)
        return DD_ENOMEM;
    return load_named(set, file, buf ? buf : "", len, &l, NULL);
}

/*
 * Reads fd to its end into rd->buf (*outlen bytes), refusing more than
 * rd->lim->max_file_bytes.  A regular file's size is checked before anything is read.
 */
static enum dd_rc read_all(int fd, struct reader *rd, size_t *outlen, int *err_no)
{
    size_t cap = rd->lim->max_file_bytes, len = 0, size = 64 * 1024;
    struct stat st;
    ssize_t got;
    char *nb;

    *outlen = 0;
    *err_no = 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        if ((uintmax_t)st.st_size > cap)
            return DD_ETOOBIG;
        size = (size_t)st.st_size + 1; /* +1: reading 0 bytes at the end proves EOF */
    }
    for (;;) {
        if (len == rd->cap || rd->cap < size) {
            if (len == rd->cap && rd->cap >= size)
                size = rd->cap > cap / 2 ? cap + 1 : rd->cap * 2;
            if (!(nb = realloc(rd->buf, size)))
                return DD_ENOMEM;
            rd->buf = nb;
            rd->cap = size;
        }
        got = read(fd, rd->buf + len, rd->cap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            *err_no = errno;
            return DD_EIO;
        }
        if (got == 0)
            break;
        len += (size_t)got;
        if (len > cap)
            return DD_ETOOBIG;
    }
    *outlen = len;
    return DD_OK;
}

/* Loads one file (or stdin for "-"); input failures become diags and the return code. */
static enum dd_rc load_file(struct mf_set *set, const char *path, struct reader *rd)
{
    int is_stdin = strcmp(path, "-") == 0;
    const char *file = intern_file(set, is_stdin ? "<stdin>" : path);
    int fd = -1, err_no = 0;
    size_t len = 0;
    enum dd_rc rc;

    if (!file)
        return DD_ENOMEM;
    fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err_no = errno;
        rc = DD_EIO;
    } else {
        rc = read_all(fd, rd, &len, &err_no);
    }
    if (fd >= 0 && !is_stdin)
        close(fd);
    if (rc == DD_ETOOBIG) {
        if (add_diag(set, MF_DIAG_ERROR, file, 0, 0, "file is larger than %zu bytes",
                     rd->lim->max_file_bytes))
            rc = DD_ENOMEM;
    } else if (rc == DD_EIO) {
        if (add_diag(set, MF_DIAG_ERROR, file, 0, 0, "cannot read: %s", strerror(err_no)))
            rc = DD_ENOMEM;
    } else if (rc == DD_OK) {
        rc = load_named(set, file, rd->buf, len, rd->lim, is_stdin ? NULL : rd);
    }
    return rc;
}

static int wanted_extension(const char *name)
{
    const char *dot = strrchr(name, '.');

    return dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 ||
                   strcmp(dot, ".json") == 0);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum dd_rc walk(struct mf_set *set, const char *dir, struct reader *rd, int level,
                       enum dd_rc *first);

/* One directory entry; symlinks to files are followed, symlinks to directories are not (no cycles). */
static enum dd_rc visit(struct mf_set *set, const char *path, const char *name, unsigned char type,
                        struct reader *rd, int level, enum dd_rc *first)
{
    struct stat st;
    int is_dir = type == DT_DIR, is_reg = type == DT_REG;
    enum dd_rc rc;

    if (type == DT_UNKNOWN && lstat(path, &st) == 0) {
        is_dir = S_ISDIR(st.st_mode);
        is_reg = S_ISREG(st.st_mode);
        type = S_ISLNK(st.st_mode) ? DT_LNK : type;
    }
    if (type == DT_LNK && stat(path, &st) == 0)
        is_reg = S_ISREG(st.st_mode);
    if (is_dir)
        return walk(set, path, rd, level + 1, first);
    if (!is_reg || !wanted_extension(name))
        return DD_OK;
    rc = load_file(set, path, rd);
    if (rc == DD_ENOMEM)
        return rc;
    if (rc != DD_OK)
        note_rc(first, rc);
    return DD_OK;
}

static enum dd_rc walk(struct mf_set *set, const char *dir, struct reader *rd, int level,
                       enum dd_rc *first)
{
    enum dd_rc rc = DD_ENOMEM;
    struct dirent *de;
    DIR *d = NULL;
    char **names = NULL, *path = NULL;
    size_t n = 0, cap = 0, i, dlen = strlen(dir);
    const char *file;

    if (level > MAX_DIR_DEPTH) {
        file = intern_file(set, dir);
        if (!file || add_diag(set, MF_DIAG_ERROR, file, 0, 0, "directories nest deeper than %d levels",
                              MAX_DIR_DEPTH) != DD_OK)
            return DD_ENOMEM;
        note_rc(first, DD_ETOOBIG);
        return DD_OK;
    }
    d = opendir(dir);
    if (!d) {
        int e = errno;
        file = intern_file(set, dir);
        if (!file || add_diag(set, MF_DIAG_ERROR, file, 0, 0, "cannot read directory: %s", strerror(e)))
            return DD_ENOMEM;
        note_rc(first, DD_EIO);
        return DD_OK;
    }
    while ((de = readdir(d)) != NULL) {
        size_t nl;
        /* Hidden entries (.git, editor state) are never manifests of the repository. */
        if (de->d_name[0] == '.')
            continue;
        nl = strlen(de->d_name);
        if (grow(&names, &cap, n, sizeof(*names)) != DD_OK)
            goto out;
        names[n] = malloc(nl + 2);
        if (!names[n])
            goto out;
        /* The type rides after the name's NUL so sorting names keeps it attached. */
        memcpy(names[n], de->d_name, nl + 1);
        names[n][nl + 1] = (char)de->d_type;
        n++;
    }
    qsort(names, n, sizeof(*names), cmp_names);
    for (i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        int slash = dlen > 0 && dir[dlen - 1] != '/';
        free(path);
        path = malloc(dlen + (size_t)slash + nl + 1);
        if (!path)
            goto out;
        memcpy(path, dir, dlen);
        if (slash)
            path[dlen] = '/';
        memcpy(path + dlen + (size_t)slash, names[i], nl + 1);
        if (visit(set, path, names[i], (unsigned char)names[i][nl + 1], rd, level, first) !=
            DD_OK)
            goto out;
    }
    rc = DD_OK;
out:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(path);
    closedir(d);
    return rc;
}

enum dd_rc mf_load_path(struct mf_set *set, const char *path, const struct mf_limits *lim)
{
    struct mf_limits l;
    struct reader rd = { &l, NULL, 0, NULL, 0 };
    struct stat st;
    enum dd_rc first = DD_OK, rc;

    if (!set || !path)
        return DD_EINVAL;
    effective_limits(lim, &l);
    if (strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        rc = walk(set, path, &rd, 0, &first);
        if (rc == DD_OK)
            rc = first;
    } else {
        rc = load_file(set, path, &rd);
    }
    free(rd.buf);
    free(rd.dir);
    return rc;
}

const char *mf_diag_format(const struct mf_diag *d, char *buf, size_t size)
{
    const char *sev = d->is_error ? "error" : d->kind == MF_DIAG_DUPLICATE ? "warning" : "note";

    if (!size)
        return buf;
    if (d->line > 0)
        snprintf(buf, size, "%s:%d:%d: %s: %s", d->file, d->line, d->col, sev, d->text);
    else
        snprintf(buf, size, "%s: %s: %s", d->file, sev, d->text);
    return buf;
}
