/*
 * yaml.c - libyaml events to cJSON trees; see yaml.h for the typing rules.
 *
 * The event API is used (not yaml_parser_load) so that no libyaml document
 * tree is built only to be copied again, and so that limits apply while
 * parsing: a depth or alias bomb is refused at the event that crosses the
 * limit, before the memory is spent.
 */
#define DD_YAML_SEAM
#include <yaml.h> /* this module's header, then libyaml's; see yaml.h */

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

/*
 * Duplicate keys are found by scanning the mapping's children while it is
 * small (nearly every mapping of a manifest) and through the string table
 * once it grows past this, so a hostile mapping with a million keys stays
 * linear.
 */
#define SMALL_MAP 8

struct frame {
    cJSON *node;       /* the open mapping or sequence; owned by the document tree */
    char *anchor;      /* owned; registered when the container ends; NULL if none */
    char *key;         /* owned; key waiting for its value; NULL when a key is expected */
    size_t nkeys;      /* keys seen so far (mappings) */
    int hashed;        /* 1: this mapping's keys are in the string table */
};

/*
 * One open-addressing table serves anchors (owner NULL, str owned by the
 * table) and the keys of big mappings (owner = the mapping, str borrowed
 * from the child's ->string).  Emptied at every document boundary.
 */
struct stab_entry {
    const void *owner; /* see above */
    char *str;         /* NULL marks a free slot */
    uint64_t hash;     /* of owner and str */
    cJSON *val;        /* anchors: the anchored node, borrowed from the tree */
};

struct stab {
    struct stab_entry *e; /* e[0..cap); cap is 0 or a power of two */
    size_t cap, n;        /* n used slots, kept <= cap / 2 */
};

struct ps {
    yaml_parser_t yp;
    int yp_live;                  /* yp needs yaml_parser_delete */
    const char *buf;              /* borrowed: the whole stream */
    size_t len;
    size_t off;                   /* where yp's input starts in buf (moves on restart) */
    int line_base;                /* lines of buf before off */
    const struct ydoc_limits *lim;
    const struct ydoc_sink *sink;
    struct frame *stack;          /* stack[0..depth): open containers, root first */
    int depth, capstack;
    cJSON *root;                  /* owned: the document being built */
    struct ydoc_pos *pos;         /* pos[0..npos): every node of root */
    size_t npos, cappos;
    struct stab tab;
    size_t ndocs;                 /* documents started, over all restarts */
    size_t nalias;                /* nodes created by aliases, whole stream */
    int skipping;                 /* the current document failed; wait for its end */
    int stop;                     /* a limit ends the stream (not an allocation failure) */
    enum dd_rc first;             /* first input error */
    struct dd_err err;
};

/*
 * Takes a string libyaml allocated out of its event.  libyaml allocates with
 * malloc and cJSON frees with free (no cJSON_InitHooks in this project), so a
 * scalar's text can become a node's string without a copy: that saves one
 * allocation and one copy per scalar, which is most of the loader's work.
 * If cJSON hooks are ever installed, this must copy with cJSON_malloc.
 */
static char *steal(yaml_char_t **s)
{
    char *r = (char *)*s;

    *s = NULL;
    return r;
}

static uint64_t hash_str(const void *owner, const char *s)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)owner;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

static struct stab_entry *stab_slot(const struct stab *t, const void *owner, const char *s,
                                    uint64_t h)
{
    size_t mask = t->cap - 1, i = (size_t)h & mask;

    for (;;) {
        struct stab_entry *e = &t->e[i];
        if (!e->str || (e->hash == h && e->owner == owner && strcmp(e->str, s) == 0))
            return e;
        i = (i + 1) & mask;
    }
}

static struct stab_entry *stab_find(const struct stab *t, const void *owner, const char *s)
{
    struct stab_entry *e;

    if (!t->n)
        return NULL;
    e = stab_slot(t, owner, s, hash_str(owner, s));
    return e->str ? e : NULL;
}

/* Inserts or finds (owner, s); *out is the slot, with str set.  s is stored as is. */
static enum dd_rc stab_put(struct stab *t, const void *owner, char *s, struct stab_entry **out)
{
    uint64_t h = hash_str(owner, s);
    struct stab_entry *e;

    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64, i;
        struct stab old = *t;
        struct stab_entry *ne = calloc(ncap, sizeof(*ne));
        if (!ne)
            return DD_ENOMEM;
        t->e = ne;
        t->cap = ncap;
        for (i = 0; i < old.cap; i++)
            if (old.e[i].str)
                *stab_slot(t, old.e[i].owner, old.e[i].str, old.e[i].hash) = old.e[i];
        free(old.e);
    }
    e = stab_slot(t, owner, s, h);
    if (!e->str) {
        e->owner = owner;
        e->str = s;
        e->hash = h;
        e->val = NULL;
        t->n++;
    }
    *out = e;
    return DD_OK;
}

static void stab_clear(struct stab *t)
{
    size_t i;

    if (!t->n)
        return;
    for (i = 0; i < t->cap; i++)
        if (t->e[i].str && !t->e[i].owner)
            free(t->e[i].str);
    memset(t->e, 0, t->cap * sizeof(*t->e));
    t->n = 0;
}

static void drop_document(struct ps *p)
{
    int i;

    for (i = 0; i < p->depth; i++) {
        free(p->stack[i].anchor);
        free(p->stack[i].key);
    }
    p->depth = 0;
    cJSON_Delete(p->root);
    p->root = NULL;
    p->npos = 0;
    stab_clear(&p->tab);
}

/* Reports an input error to the sink; returns what the sink says. */
static enum dd_rc report(struct ps *p, enum dd_rc rc, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum dd_rc report(struct ps *p, enum dd_rc rc, int line, int col, const char *fmt, ...)
{
    va_list ap;

    p->err.rc = rc;
    p->err.line = line;
    p->err.col = col;
    va_start(ap, fmt);
    vsnprintf(p->err.msg, sizeof(p->err.msg), fmt, ap);
    va_end(ap);
    if (p->first == DD_OK)
        p->first = rc;
    return p->sink->error ? p->sink->error(p->sink->ctx, &p->err) : DD_OK;
}

/* Drops the current document after an error in it and skips to its end. */
static enum dd_rc fail_doc(struct ps *p, enum dd_rc rc, const yaml_mark_t *m, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));

static enum dd_rc fail_doc(struct ps *p, enum dd_rc rc, const yaml_mark_t *m, const char *fmt, ...)
{
    char msg[DD_ERR_MSG_MAX];
    va_list ap;

    drop_document(p);
    p->skipping = 1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return report(p, rc, p->line_base + (int)m->line + 1, (int)m->column + 1, "%s", msg);
}

static enum dd_rc add_pos(struct ps *p, const cJSON *node, int line, int col)
{
    if (p->npos == p->cappos) {
        size_t ncap = p->cappos ? p->cappos * 2 : 256;
        struct ydoc_pos *np = realloc(p->pos, ncap * sizeof(*np));
        if (!np)
            return DD_ENOMEM;
        p->pos = np;
        p->cappos = ncap;
    }
    p->pos[p->npos].node = node;
    p->pos[p->npos].line = line;
    p->pos[p->npos].col = col;
    p->npos++;
    return DD_OK;
}

/* Hangs node (owned; consumed even on failure) under the open container, or makes it the root. */
static enum dd_rc attach(struct ps *p, cJSON *node, const yaml_mark_t *m)
{
    struct frame *top;
    struct stab_entry *e;

    if (p->depth == 0) {
        p->root = node;
    } else {
        top = &p->stack[p->depth - 1];
        if (cJSON_IsObject(top->node)) {
            /* cJSON frees ->string with the node unless cJSON_StringIsConst is set. */
            node->string = top->key;
            top->key = NULL;
        }
        cJSON_AddItemToArray(top->node, node);
        if (top->hashed && stab_put(&p->tab, top->node, node->string, &e) != DD_OK)
            return DD_ENOMEM;
    }
    return add_pos(p, node, p->line_base + (int)m->line + 1, (int)m->column + 1);
}

/* --- scalar resolution (go-yaml v2 rules, see yaml.h) --- */

enum kind { K_ANY, K_NULL, K_BOOL, K_INT, K_FLOAT, K_STRING };

struct scalar {
    enum kind kind;
    int b;      /* K_BOOL */
    double num; /* K_INT, K_FLOAT */
};

struct word {
    const char *s;
    enum kind kind;
    int b;
    double num;
};

static int is_word(const char *s, size_t n, struct scalar *v)
{
    static const struct word words[] = {
        { "~", K_NULL, 0, 0 },      { "null", K_NULL, 0, 0 },   { "Null", K_NULL, 0, 0 },
        { "NULL", K_NULL, 0, 0 },   { "y", K_BOOL, 1, 0 },      { "Y", K_BOOL, 1, 0 },
        { "yes", K_BOOL, 1, 0 },    { "Yes", K_BOOL, 1, 0 },    { "YES", K_BOOL, 1, 0 },
        { "true", K_BOOL, 1, 0 },   { "True", K_BOOL, 1, 0 },   { "TRUE", K_BOOL, 1, 0 },
        { "on", K_BOOL, 1, 0 },     { "On", K_BOOL, 1, 0 },     { "ON", K_BOOL, 1, 0 },
        { "n", K_BOOL, 0, 0 },      { "N", K_BOOL, 0, 0 },      { "no", K_BOOL, 0, 0 },
        { "No", K_BOOL, 0, 0 },     { "NO", K_BOOL, 0, 0 },     { "false", K_BOOL, 0, 0 },
        { "False", K_BOOL, 0, 0 },  { "FALSE", K_BOOL, 0, 0 },  { "off", K_BOOL, 0, 0 },
        { "Off", K_BOOL, 0, 0 },    { "OFF", K_BOOL, 0, 0 },    { ".inf", K_FLOAT, 0, 1 },
        { ".Inf", K_FLOAT, 0, 1 },  { ".INF", K_FLOAT, 0, 1 },  { "+.inf", K_FLOAT, 0, 1 },
        { "+.Inf", K_FLOAT, 0, 1 }, { "+.INF", K_FLOAT, 0, 1 }, { "-.inf", K_FLOAT, 0, -1 },
        { "-.Inf", K_FLOAT, 0, -1 }, { "-.INF", K_FLOAT, 0, -1 }, { ".nan", K_FLOAT, 0, 2 },
        { ".NaN", K_FLOAT, 0, 2 },  { ".NAN", K_FLOAT, 0, 2 },
    };
    size_t i;

    if (n > 5)
        return 0;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (strlen(words[i].s) == n && memcmp(words[i].s, s, n) == 0) {
            v->kind = words[i].kind;
            v->b = words[i].b;
            if (v->kind == K_FLOAT)
                v->num = words[i].num == 2 ? (double)NAN : words[i].num * (double)INFINITY;
            return 1;
        }
    }
    return 0;
}

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/* Go's strconv.ParseInt(s, 0, 64) syntax, which go-yaml v2 uses. */
static int parse_int(const char *t, size_t m, double *out)
{
    size_t i = 0;
    int neg = 0, base = 10, overflow = 0;
    uint64_t acc = 0;

    if (t[0] == '+' || t[0] == '-') {
        neg = t[0] == '-';
        i++;
    }
    if (i == m)
        return 0;
    if (t[i] == '0' && i + 1 < m) {
        char c = t[i + 1];
        if (c == 'x' || c == 'X')
            base = 16, i += 2;
        else if (c == 'o' || c == 'O')
            base = 8, i += 2;
        else if (c == 'b' || c == 'B')
            base = 2, i += 2;
        else
            base = 8, i += 1;
        if (i == m)
            return 0;
    }
    for (; i < m; i++) {
        int d = digit_value(t[i]);
        if (d >= base)
            return 0;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            overflow = 1;
        acc = acc * (uint64_t)base + (uint64_t)d;
    }
    if (overflow)
        return 0; /* go-yaml then tries a float, which accepts long decimals only */
    *out = neg ? -(double)acc : (double)acc;
    return 1;
}

static size_t skip_digits(const char *t, size_t i, size_t m)
{
    while (i < m && t[i] >= '0' && t[i] <= '9')
        i++;
    return i;
}

/* go-yaml v2's float pattern: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int float_syntax(const char *t, size_t m)
{
    size_t i = 0, j;

    if (i < m && (t[i] == '+' || t[i] == '-'))
        i++;
    if (i < m && t[i] == '.') {
        j = skip_digits(t, i + 1, m);
        if (j == i + 1)
            return 0;
        i = j;
    } else {
        j = skip_digits(t, i, m);
        if (j == i)
            return 0;
        i = j;
        if (i < m && t[i] == '.')
            i = skip_digits(t, i + 1, m);
    }
    if (i < m && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < m && (t[i] == '+' || t[i] == '-'))
            i++;
        j = skip_digits(t, i, m);
        if (j == i)
            return 0;
        i = j;
    }
    return i == m;
}

static void resolve_plain(const char *s, size_t n, struct scalar *v)
{
    char t[128];
    size_t i, m = 0;

    v->kind = K_STRING;
    if (n == 0) {
        v->kind = K_NULL;
        return;
    }
    /* Most scalars are names and text: one test rules them out. */
    if (!strchr("~nNyYtTfFoO.+-0123456789", s[0]))
        return;
    if (is_word(s, n, v))
        return;
    /* go-yaml drops '_' before parsing numbers; longer texts are not numbers we care about. */
    for (i = 0; i < n; i++) {
        if (s[i] == '_')
            continue;
        if (m + 1 >= sizeof(t))
            return;
        t[m++] = s[i];
    }
    t[m] = '\0';
    if (m == 0)
        return;
    if (parse_int(t, m, &v->num)) {
        v->kind = K_INT;
    } else if (float_syntax(t, m)) {
        v->kind = K_FLOAT;
        v->num = strtod(t, NULL);
    }
}

static enum kind tag_kind(const char *tag, int *force_string)
{
    static const struct {
        const char *name;
        enum kind kind;
    } tags[] = { { "null", K_NULL }, { "bool", K_BOOL }, { "int", K_INT }, { "float", K_FLOAT } };
    size_t i;

    *force_string = 0;
    if (strcmp(tag, "!") == 0 || strcmp(tag, TAG_PREFIX "str") == 0) {
        *force_string = 1;
        return K_ANY;
    }
    if (strncmp(tag, TAG_PREFIX, sizeof(TAG_PREFIX) - 1) != 0)
        return K_ANY;
    for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
        if (strcmp(tag + sizeof(TAG_PREFIX) - 1, tags[i].name) == 0)
            return tags[i].kind;
    return K_ANY;
}

static const char *kind_name(enum kind k)
{
    switch (k) {
    case K_NULL: return "!!null";
    case K_BOOL: return "!!bool";
    case K_INT: return "!!int";
    case K_FLOAT: return "!!float";
    default: return "!!str";
    }
}

/* Makes the node for a scalar in value position; *out is NULL after an input error. */
static enum dd_rc make_scalar(struct ps *p, yaml_event_t *ev, cJSON **out)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE, force_string = 0;
    enum kind want = K_ANY;
    struct scalar v = { K_STRING, 0, 0 };
    cJSON *node = NULL;

    *out = NULL;
    if (ev->data.scalar.tag)
        want = tag_kind((const char *)ev->data.scalar.tag, &force_string);
    if (!force_string && (plain || want != K_ANY))
        resolve_plain(s, n, &v);
    if (want != K_ANY && v.kind != want && !(want == K_FLOAT && v.kind == K_INT))
        return fail_doc(p, DD_EPARSE, &ev->start_mark, "cannot decode \"%.64s\" as %s", s,
                        kind_name(want));
    switch (v.kind) {
    case K_NULL: node = cJSON_CreateNull(); break;
    case K_BOOL: node = cJSON_CreateBool(v.b); break;
    case K_INT:
    case K_FLOAT: node = cJSON_CreateNumber(v.num); break;
    default:
        node = cJSON_CreateStringReference(s);
        if (node) {
            /* The node owns the stolen text: it is no reference any more. */
            node->type &= ~cJSON_IsReference;
            steal(&ev->data.scalar.value);
        }
        break;
    }
    if (!node)
        return DD_ENOMEM;
    *out = node;
    return DD_OK;
}

/* Registers an anchor (name owned, consumed) for node, replacing an earlier one of that name. */
static enum dd_rc add_anchor(struct ps *p, char *name, cJSON *node)
{
    struct stab_entry *e;

    if (stab_put(&p->tab, NULL, name, &e) != DD_OK) {
        free(name);
        return DD_ENOMEM;
    }
    if (e->str != name)
        free(name);
    e->val = node;
    return DD_OK;
}

/* A scalar where a mapping expects a key. */
static enum dd_rc take_key(struct ps *p, struct frame *top, yaml_event_t *ev)
{
    const char *key = (const char *)ev->data.scalar.value;
    const cJSON *c;
    int dup = 0;

    if (!top->hashed && top->nkeys >= SMALL_MAP) {
        struct stab_entry *e;
        for (c = top->node->child; c; c = c->next)
            if (stab_put(&p->tab, top->node, c->string, &e) != DD_OK)
                return DD_ENOMEM;
        top->hashed = 1;
    }
    if (top->hashed) {
        dup = stab_find(&p->tab, top->node, key) != NULL;
    } else {
        for (c = top->node->child; c && !dup; c = c->next)
            dup = strcmp(c->string, key) == 0;
    }
    if (dup)
        return fail_doc(p, DD_EPARSE, &ev->start_mark, "duplicate key \"%.200s\"", key);
    top->key = steal(&ev->data.scalar.value);
    top->nkeys++;
    return DD_OK;
}

/*
 * Deep-copies src for an alias at mark m, at nesting level `level` (the level
 * the copy's root takes).  Returns DD_ETOOBIG (unreported) past a limit.
 */
static enum dd_rc copy_tree(struct ps *p, const cJSON *src, int level, const yaml_mark_t *m,
                            cJSON **out)
{
    enum dd_rc rc = DD_ENOMEM;
    cJSON *dst = NULL, *cc = NULL;
    const cJSON *c;

    *out = NULL;
    if (++p->nalias > p->lim->max_alias_nodes)
        return DD_ETOOBIG;
    if ((cJSON_IsObject(src) || cJSON_IsArray(src)) && level > p->lim->max_depth)
        return DD_ETOOBIG;
    if (cJSON_IsObject(src))
        dst = cJSON_CreateObject();
    else if (cJSON_IsArray(src))
        dst = cJSON_CreateArray();
    else if (cJSON_IsString(src))
        dst = cJSON_CreateString(src->valuestring);
    else if (cJSON_IsNumber(src))
        dst = cJSON_CreateNumber(src->valuedouble);
    else if (cJSON_IsBool(src))
        dst = cJSON_CreateBool(cJSON_IsTrue(src));
    else
        dst = cJSON_CreateNull();
    if (!dst || add_pos(p, dst, p->line_base + (int)m->line + 1, (int)m->column + 1) != DD_OK)
        goto out;
    for (c = src->child; c; c = c->next) {
        rc = copy_tree(p, c, level + 1, m, &cc);
        if (rc != DD_OK)
            goto out;
        if (c->string) {
            if (!cJSON_AddItemToObject(dst, c->string, cc)) {
                rc = DD_ENOMEM;
                goto out;
            }
        } else {
            cJSON_AddItemToArray(dst, cc);
        }
        cc = NULL;
    }
    *out = dst;
    dst = NULL;
    rc = DD_OK;
out:
    cJSON_Delete(cc);
    cJSON_Delete(dst);
    return rc;
}

static enum dd_rc on_alias(struct ps *p, yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    const struct stab_entry *e = stab_find(&p->tab, NULL, name);
    cJSON *copy = NULL;
    enum dd_rc rc;

    if (!e)
        return fail_doc(p, DD_EPARSE, &ev->start_mark, "unknown anchor \"%.200s\"", name);
    rc = copy_tree(p, e->val, p->depth + 1, &ev->start_mark, &copy);
    if (rc == DD_ETOOBIG && p->nalias > p->lim->max_alias_nodes)
        return fail_doc(p, rc, &ev->start_mark, "alias expansion exceeds %zu nodes",
                        p->lim->max_alias_nodes);
    if (rc == DD_ETOOBIG)
        return fail_doc(p, rc, &ev->start_mark, "nesting exceeds %d levels", p->lim->max_depth);
    if (rc != DD_OK)
        return rc;
    return attach(p, copy, &ev->start_mark);
}

static enum dd_rc on_start(struct ps *p, yaml_event_t *ev, int is_map)
{
    struct frame *f;
    cJSON *node;
    enum dd_rc rc;

    if (p->depth + 1 > p->lim->max_depth)
        return fail_doc(p, DD_ETOOBIG, &ev->start_mark, "nesting exceeds %d levels",
                        p->lim->max_depth);
    if (p->depth == p->capstack) {
        int ncap = p->capstack ? p->capstack * 2 : 16;
        struct frame *ns = realloc(p->stack, (size_t)ncap * sizeof(*ns));
        if (!ns)
            return DD_ENOMEM;
        p->stack = ns;
        p->capstack = ncap;
    }
    node = is_map ? cJSON_CreateObject() : cJSON_CreateArray();
    if (!node)
        return DD_ENOMEM;
    rc = attach(p, node, &ev->start_mark);
    if (rc != DD_OK)
        return rc;
    f = &p->stack[p->depth++];
    memset(f, 0, sizeof(*f));
    f->node = node;
    f->anchor = steal(is_map ? &ev->data.mapping_start.anchor : &ev->data.sequence_start.anchor);
    return DD_OK;
}

static enum dd_rc on_end(struct ps *p)
{
    struct frame *f = &p->stack[--p->depth];
    char *anchor = f->anchor;

    free(f->key); /* always NULL: libyaml gives every key a value */
    f->key = NULL;
    f->anchor = NULL;
    return anchor ? add_anchor(p, anchor, f->node) : DD_OK;
}

static enum dd_rc on_scalar(struct ps *p, yaml_event_t *ev)
{
    cJSON *node = NULL;
    char *anchor;
    enum dd_rc rc;

    if (p->depth > 0) {
        struct frame *top = &p->stack[p->depth - 1];
        if (cJSON_IsObject(top->node) && !top->key)
            return take_key(p, top, ev);
    }
    rc = make_scalar(p, ev, &node);
    if (rc != DD_OK || !node)
        return rc;
    rc = attach(p, node, &ev->start_mark);
    if (rc != DD_OK)
        return rc;
    anchor = steal(&ev->data.scalar.anchor);
    return anchor ? add_anchor(p, anchor, node) : DD_OK;
}

static int in_key_position(const struct ps *p)
{
    const struct frame *top = p->depth > 0 ? &p->stack[p->depth - 1] : NULL;

    return top && cJSON_IsObject(top->node) && !top->key;
}

static enum dd_rc end_document(struct ps *p)
{
    cJSON *root = p->root;
    enum dd_rc rc;

    p->root = NULL;
    if (root && cJSON_IsNull(root)) {
        cJSON_Delete(root);
        root = NULL;
    }
    rc = p->sink->document ? p->sink->document(p->sink->ctx, root, p->pos, root ? p->npos : 0)
                           : (cJSON_Delete(root), DD_OK);
    p->npos = 0;
    stab_clear(&p->tab);
    return rc;
}

static enum dd_rc on_event(struct ps *p, yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        drop_document(p);
        p->skipping = 0;
        if (++p->ndocs > p->lim->max_documents) {
            p->stop = 1;
            return report(p, DD_ETOOBIG, p->line_base + (int)ev->start_mark.line + 1,
                          (int)ev->start_mark.column + 1, "more than %zu documents",
                          p->lim->max_documents);
        }
        return DD_OK;
    case YAML_DOCUMENT_END_EVENT:
        if (p->skipping) {
            p->skipping = 0;
            return DD_OK;
        }
        return end_document(p);
    default:
        break;
    }
    if (p->skipping)
        return DD_OK;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return on_scalar(p, ev);
    case YAML_ALIAS_EVENT:
        if (in_key_position(p))
            return fail_doc(p, DD_EPARSE, &ev->start_mark, "mapping keys must be scalars, not aliases");
        return on_alias(p, ev);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (in_key_position(p))
            return fail_doc(p, DD_EPARSE, &ev->start_mark, "mapping keys must be scalars");
        return on_start(p, ev, ev->type == YAML_MAPPING_START_EVENT);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return on_end(p);
    default:
        return DD_OK;
    }
}

static void start_parser(struct ps *p, size_t off, int line_base)
{
    if (p->yp_live)
        yaml_parser_delete(&p->yp);
    p->yp_live = 0;
    if (!yaml_parser_initialize(&p->yp))
        return;
    p->yp_live = 1;
    yaml_parser_set_input_string(&p->yp, (const unsigned char *)p->buf + off, p->len - off);
    p->off = off;
    p->line_base = line_base;
}

static int is_doc_start(const char *s, size_t n)
{
    return n >= 3 && memcmp(s, "---", 3) == 0 &&
           (n == 3 || s[3] == ' ' || s[3] == '\t' || s[3] == '\n' || s[3] == '\r');
}

/* Index just past the line break at or after i (len when none). */
static size_t next_line(const char *b, size_t len, size_t i)
{
    while (i < len && b[i] != '\n' && b[i] != '\r')
        i++;
    if (i < len && b[i] == '\r' && i + 1 < len && b[i + 1] == '\n')
        i++;
    return i < len ? i + 1 : len;
}

/*
 * libyaml cannot go on after an error, so a new parser starts at the next
 * "---" line at or after the error's line: a document separator at column 0
 * always ends the broken document.  Returns 0 when there is none.
 */
static int restart(struct ps *p, int err_line)
{
    size_t i = p->off;
    int line = p->line_base + 1;

    while (line < err_line && i < p->len) {
        i = next_line(p->buf, p->len, i);
        line++;
    }
    while (i < p->len && !(i > p->off && is_doc_start(p->buf + i, p->len - i))) {
        i = next_line(p->buf, p->len, i);
        line++;
    }
    if (i >= p->len)
        return 0;
    start_parser(p, i, line - 1);
    return 1;
}

/* Reports libyaml's error; *err_line gets its absolute line. */
static enum dd_rc libyaml_error(struct ps *p, int *err_line)
{
    const yaml_parser_t *y = &p->yp;
    const char *problem = y->problem ? y->problem : "malformed YAML";
    int line, col;

    drop_document(p);
    if (y->error == YAML_MEMORY_ERROR)
        return DD_ENOMEM;
    if (y->error == YAML_READER_ERROR) {
        /* Reader errors carry a byte offset, not a mark. */
        size_t i, end = p->off + y->problem_offset;
        line = p->line_base + 1;
        col = 1;
        for (i = p->off; i < end && i < p->len; i++) {
            if (p->buf[i] == '\n')
                line++, col = 1;
            else
                col++;
        }
        *err_line = line;
        if (y->problem_value != -1)
            return report(p, DD_EPARSE, line, col, "%s (byte 0x%02x)", problem,
                          (unsigned)y->problem_value & 0xffu);
        return report(p, DD_EPARSE, line, col, "%s", problem);
    }
    line = p->line_base + (int)y->problem_mark.line + 1;
    col = (int)y->problem_mark.column + 1;
    *err_line = line;
    if (y->context && (y->context_mark.line != y->problem_mark.line ||
                       y->context_mark.column != y->problem_mark.column))
        return report(p, DD_EPARSE, line, col, "%s %s that started at line %d, column %d",
                      problem, y->context, p->line_base + (int)y->context_mark.line + 1,
                      (int)y->context_mark.column + 1);
    if (y->context)
        return report(p, DD_EPARSE, line, col, "%s %s", problem, y->context);
    return report(p, DD_EPARSE, line, col, "%s", problem);
}

enum dd_rc ydoc_parse_stream(const char *buf, size_t len, const struct ydoc_limits *lim,
                             const struct ydoc_sink *sink)
{
    struct ps p;
    enum dd_rc rc = DD_ENOMEM;
    int err_line, done = 0;

    memset(&p, 0, sizeof(p));
    p.buf = buf;
    p.len = len;
    p.lim = lim;
    p.sink = sink;
    start_parser(&p, 0, 0);
    if (!p.yp_live)
        goto out;
    rc = DD_OK;
    while (!done && rc == DD_OK && !p.stop) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p.yp, &ev)) {
            rc = libyaml_error(&p, &err_line);
            if (rc == DD_OK && !restart(&p, err_line))
                done = 1;
            else if (rc == DD_OK && !p.yp_live)
                rc = DD_ENOMEM;
            continue;
        }
        rc = on_event(&p, &ev);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
out:
    drop_document(&p);
    if (p.yp_live)
        yaml_parser_delete(&p.yp);
    free(p.stack);
    free(p.pos);
    free(p.tab.e);
    return rc != DD_OK ? rc : p.first;
}
