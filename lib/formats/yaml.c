/*
 * yaml.c - libyaml events to cJSON trees; see yaml.h for the typing rules.
 *
 * The event API is used (not yaml_parser_load) so that no libyaml document
 * tree is built only to be copied again, and so that limits apply while
 * parsing: a depth or alias bomb is refused at the event that crosses the
 * limit, before the memory is spent.
 */
#include "formats/yaml.h"

#include <yaml.h> /* libyaml's: only this file sees it */

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

/*
 * Duplicate keys are found by scanning the mapping's children while it is
 * small (nearly every mapping of a manifest) and through the string table
 * once it grows past this, so a hostile mapping with a million keys stays
 * linear.
 */
#define SMALL_MAP 8

#define NO_RESUME SIZE_MAX

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
    const struct ydoc_skim *skim; /* borrowed; NULL: every document is built */
    struct ydoc_arena *arena;     /* borrowed (sink->arena); NULL: trees of their own */
    struct frame *stack;          /* stack[0..depth): open containers, root first */
    int depth, capstack;
    cJSON *root;                  /* owned: the document being built */
    struct ydoc_pos *pos;         /* pos[0..npos): every node of root */
    size_t npos, cappos;
    struct stab tab;
    size_t ndocs;                 /* documents started, over all restarts */
    size_t nalias;                /* nodes created by aliases, whole stream */
    int skipping;                 /* the current document failed; wait for its end */
    size_t skip_docs;             /* documents libyaml passes over (the fast path delivered them) */
    int in_skip;                  /* inside such a document */
    int handback;                 /* the fast path may take over after a libyaml document */
    size_t resume;                /* where it takes over; NO_RESUME while libyaml goes on */
    int resume_line;              /* 1-based line of resume */
    size_t cur_off;               /* line cursor for line_offset: a line start at or after off */
    int cur_line;                 /* its 1-based line */
    size_t fast_docs, fallbacks;  /* for ydoc_stats */
    size_t skimmed;               /* documents reported through skim->skipped */
    int stop;                     /* a limit ends the stream (not an allocation failure) */
    cJSON *grave;                 /* owned: values a repeated key replaced, freed with the
                                     document (an alias may still point into them) */
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

/*
 * --- the arena (struct ydoc_arena) ---
 *
 * Nodes live in chunks aligned to their size, so a node's chunk is its
 * address with the low bits cleared; each chunk ends with the positions of its
 * nodes, by index.  Texts live in blocks, a long text in a block of its own.
 * Space is handed out in order and taken back to a mark (the start of the
 * document being built), so a dropped or failed document costs nothing
 * afterwards.  Chunks and blocks after the mark are kept for reuse.
 */
#define YA_CHUNK ((size_t)1 << 20)
#define YA_BLOCK YA_CHUNK
#define YA_BIG (YA_BLOCK / 16) /* texts at least this long get a block of their own */

struct ya_pos {
    int line, col;
};

#define YA_NODES (YA_CHUNK / (sizeof(cJSON) + sizeof(struct ya_pos)))

struct ya_mark {
    size_t cur, used;   /* chunks in use, nodes used in the last of them */
    size_t bcur, boff;  /* blocks in use, bytes used in the last of them */
    size_t nbig;
};

struct ydoc_arena {
    char **chunk;        /* chunk[0..nchunk): chunk[0..cur) in use, the others spare */
    size_t nchunk, capchunk;
    size_t *index;       /* chunk address -> 1 + its number; open addressing; 0: free */
    size_t icap;         /* a power of two, at least twice nchunk; 0 before the first chunk */
    char **block;        /* block[0..nblock): block[0..bcur) in use, the others spare */
    size_t nblock, capblock;
    char **big;          /* big[0..nbig): long texts */
    size_t nbig, capbig;
    struct ya_mark at;   /* where the next node and text go */
    struct ya_mark doc;  /* where the document being built (or delivered) starts */
};

static size_t ya_hash(uintptr_t chunk, size_t icap)
{
    return (size_t)(((uint64_t)(chunk / YA_CHUNK) * 0x9E3779B97F4A7C15ULL) >> 32) & (icap - 1);
}

/* Appends p to *arr (n items, cap of them). */
static int ya_push(char ***arr, size_t *n, size_t *cap, char *p)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        char **na = realloc(*arr, ncap * sizeof(*na));
        if (!na)
            return -1;
        *arr = na;
        *cap = ncap;
    }
    (*arr)[(*n)++] = p;
    return 0;
}

/*
 * An arena uses all it takes, in order: a chunk's pages are mapped by one
 * call rather than by a page fault each (5 % of a 500,000-object lint).
 * Advice only: kernels before 5.14 refuse it, and the pages fault in as usual.
 */
static char *ya_map(void)
{
    char *c = aligned_alloc(YA_CHUNK, YA_CHUNK);

#ifdef MADV_POPULATE_WRITE
    if (c)
        madvise(c, YA_CHUNK, MADV_POPULATE_WRITE);
#endif
    return c;
}

static int ya_new_chunk(struct ydoc_arena *a)
{
    char *c = ya_map();
    size_t i, k;

    if (!c)
        return -1;
    if ((a->nchunk + 1) * 2 > a->icap) {
        size_t ncap = a->icap ? a->icap * 2 : 64;
        size_t *ni = calloc(ncap, sizeof(*ni));
        if (!ni) {
            free(c);
            return -1;
        }
        for (i = 0; i < a->nchunk; i++) {
            for (k = ya_hash((uintptr_t)a->chunk[i], ncap); ni[k]; k = (k + 1) & (ncap - 1))
                ;
            ni[k] = i + 1;
        }
        free(a->index);
        a->index = ni;
        a->icap = ncap;
    }
    if (ya_push(&a->chunk, &a->nchunk, &a->capchunk, c)) {
        free(c);
        return -1;
    }
    for (k = ya_hash((uintptr_t)c, a->icap); a->index[k]; k = (k + 1) & (a->icap - 1))
        ;
    a->index[k] = a->nchunk;
    return 0;
}

/* A zeroed node of a type (cJSON_*) at line:col, or NULL when out of memory. */
static cJSON *ya_node(struct ydoc_arena *a, int type, int line, int col)
{
    struct ya_pos *pos;
    cJSON *node;

    if (a->at.used == YA_NODES) {
        if (a->at.cur == a->nchunk && ya_new_chunk(a))
            return NULL;
        a->at.cur++;
        a->at.used = 0;
    }
    node = (cJSON *)a->chunk[a->at.cur - 1] + a->at.used;
    pos = (struct ya_pos *)(a->chunk[a->at.cur - 1] + YA_NODES * sizeof(cJSON));
    memset(node, 0, sizeof(*node));
    node->type = type;
    pos[a->at.used].line = line;
    pos[a->at.used].col = col;
    a->at.used++;
    return node;
}

/* n bytes for text, or NULL when out of memory. */
static char *ya_alloc(struct ydoc_arena *a, size_t n)
{
    char *r;

    if (n >= YA_BIG) {
        r = malloc(n);
        if (r && ya_push(&a->big, &a->nbig, &a->capbig, r)) {
            free(r);
            r = NULL;
        }
        return r;
    }
    if (YA_BLOCK - a->at.boff < n) {
        if (a->at.bcur == a->nblock) {
            r = ya_map();
            if (!r || ya_push(&a->block, &a->nblock, &a->capblock, r)) {
                free(r);
                return NULL;
            }
        }
        a->at.bcur++;
        a->at.boff = 0;
    }
    r = a->block[a->at.bcur - 1] + a->at.boff;
    a->at.boff += n;
    return r;
}

/* Gives back the end of the last text allocated, r (n bytes), keeping its first keep bytes. */
static void ya_shrink(struct ydoc_arena *a, char *r, size_t n, size_t keep)
{
    if (n < YA_BIG && a->at.bcur && r + n == a->block[a->at.bcur - 1] + a->at.boff)
        a->at.boff -= n - keep;
}

static char *ya_strdup(struct ydoc_arena *a, const char *s, size_t n)
{
    char *r = ya_alloc(a, n + 1);

    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* Everything after the document mark goes back to the arena. */
static void ya_rewind(struct ydoc_arena *a)
{
    while (a->nbig > a->doc.nbig)
        free(a->big[--a->nbig]);
    a->at = a->doc;
}

static void ya_mark(struct ydoc_arena *a)
{
    a->doc = a->at;
}

struct ydoc_arena *ydoc_arena_new(void)
{
    struct ydoc_arena *a = calloc(1, sizeof(*a));

    if (a) {
        a->at.used = YA_NODES;
        a->at.boff = YA_BLOCK;
        a->doc = a->at;
    }
    return a;
}

void ydoc_arena_free(struct ydoc_arena *a)
{
    size_t i;

    if (!a)
        return;
    for (i = 0; i < a->nchunk; i++)
        free(a->chunk[i]);
    for (i = 0; i < a->nblock; i++)
        free(a->block[i]);
    for (i = 0; i < a->nbig; i++)
        free(a->big[i]);
    free(a->chunk);
    free(a->block);
    free(a->big);
    free(a->index);
    free(a);
}

int ydoc_arena_pos(const struct ydoc_arena *a, const cJSON *node, int *line, int *col)
{
    uintptr_t u = (uintptr_t)node, base = u & ~(uintptr_t)(YA_CHUNK - 1);
    const struct ya_pos *pos;
    size_t k, c, i;

    if (!a || !a->icap || !node)
        return 0;
    for (k = ya_hash(base, a->icap); a->index[k]; k = (k + 1) & (a->icap - 1))
        if ((uintptr_t)a->chunk[a->index[k] - 1] == base)
            break;
    if (!a->index[k])
        return 0;
    c = a->index[k] - 1;
    i = (u - base) / sizeof(cJSON);
    if ((u - base) % sizeof(cJSON) || i >= YA_NODES || c >= a->at.cur ||
        (c + 1 == a->at.cur && i >= a->at.used))
        return 0;
    pos = (const struct ya_pos *)(a->chunk[c] + YA_NODES * sizeof(cJSON));
    if (line)
        *line = pos[i].line;
    if (col)
        *col = pos[i].col;
    return 1;
}

void ydoc_arena_drop(struct ydoc_arena *a)
{
    if (a)
        ya_rewind(a);
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
    cJSON_Delete(p->grave);
    p->grave = NULL;
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
static enum dd_rc link_node(struct ps *p, cJSON *node)
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
    return DD_OK;
}

/* link_node, then records the node's position. */
static enum dd_rc attach(struct ps *p, cJSON *node, const yaml_mark_t *m)
{
    if (link_node(p, node) != DD_OK)
        return DD_ENOMEM;
    return add_pos(p, node, p->line_base + (int)m->line + 1, (int)m->column + 1);
}

/* --- scalar resolution (go-yaml v2 rules, see yaml.h) --- */

enum kind { K_ANY, K_NULL, K_BOOL, K_INT, K_FLOAT, K_STRING };

struct scalar {
    enum kind kind;
    int b;      /* K_BOOL */
    double num; /* K_INT, K_FLOAT */
    int exact;  /* K_INT within int64: i is the value (a double loses digits past 2^53) */
    int64_t i;
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
        if (words[i].s[0] == s[0] && strncmp(words[i].s, s, n) == 0 && words[i].s[n] == '\0') {
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
static int parse_int(const char *t, size_t m, double *out, int *exact, int64_t *iv)
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
    *exact = neg ? acc <= (uint64_t)INT64_MAX + 1 : acc <= (uint64_t)INT64_MAX;
    *iv = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return 1;
}

/*
 * A number node.  An integer that fits int64 also keeps its exact decimal text in
 * valuestring (cJSON frees it with the node; printing ignores it), for readers
 * that need every digit (DRA int attributes, dd_json_int64).
 */
static cJSON *number_node(const struct scalar *v)
{
    cJSON *node = cJSON_CreateNumber(v->num);
    char buf[24];

    if (node && v->kind == K_INT && v->exact) {
        snprintf(buf, sizeof(buf), "%" PRId64, v->i);
        if (!(node->valuestring = strdup(buf))) {
            cJSON_Delete(node);
            return NULL;
        }
    }
    return node;
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
    if (parse_int(t, m, &v->num, &v->exact, &v->i)) {
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
    struct scalar v = { K_STRING, 0, 0, 0, 0 };
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
    case K_FLOAT: node = number_node(&v); break;
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

/* Drops the recorded positions of node's subtree, keeping the order (pos[0] is the root's). */
static void forget_positions(struct ps *p, const cJSON *node)
{
    const cJSON *c;
    size_t i, j;

    for (i = j = 0; i < p->npos; i++)
        if (p->pos[i].node != node)
            p->pos[j++] = p->pos[i];
    p->npos = j;
    for (c = node->child; c; c = c->next)
        forget_positions(p, c);
}

/*
 * A key the mapping has already: kubectl (sigs.k8s.io/yaml) keeps the last value and drops
 * the earlier one without a word, so the earlier goes (to the grave, where an alias may still
 * point) and the sink hears a warning.
 */
static enum dd_rc repeated_key(struct ps *p, struct frame *top, yaml_event_t *ev)
{
    const char *key = (const char *)ev->data.scalar.value;
    struct stab_entry *e = top->hashed ? stab_find(&p->tab, top->node, key) : NULL;
    cJSON *old;
    enum dd_rc rc = DD_OK;

    for (old = top->node->child; old && strcmp(old->string, key); old = old->next)
        ;
    if (!old)
        return DD_OK;
    if (p->sink->warning) {
        p->err.rc = DD_EPARSE;
        p->err.line = p->line_base + (int)ev->start_mark.line + 1;
        p->err.col = (int)ev->start_mark.column + 1;
        snprintf(p->err.msg, sizeof(p->err.msg),
                 "duplicate key \"%.200s\": kubectl keeps this value and drops the earlier one",
                 key);
        rc = p->sink->warning(p->sink->ctx, &p->err);
    }
    if (!p->grave && !(p->grave = cJSON_CreateArray()))
        return DD_ENOMEM;
    forget_positions(p, old);
    cJSON_DetachItemViaPointer(top->node, old);
    cJSON_AddItemToArray(p->grave, old);
    /* The table's entry must not keep the old node's string: it goes with the grave. */
    if (e)
        e->str = (char *)key;
    return rc;
}

/* A scalar where a mapping expects a key. */
static enum dd_rc take_key(struct ps *p, struct frame *top, yaml_event_t *ev)
{
    const char *key = (const char *)ev->data.scalar.value;
    const cJSON *c;
    int dup = 0;
    enum dd_rc rc;

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
    if (dup && (rc = repeated_key(p, top, ev)) != DD_OK)
        return rc;
    top->key = steal(&ev->data.scalar.value);
    top->nkeys += !dup;
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
    else if (cJSON_IsNumber(src)) {
        dst = cJSON_CreateNumber(src->valuedouble);
        if (dst && src->valuestring && !(dst->valuestring = strdup(src->valuestring))) {
            cJSON_Delete(dst);
            dst = NULL;
        }
    }
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
    /* copy_tree recorded the copy's positions already, in pre-order. */
    return link_node(p, copy);
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

/*
 * A copy of src (a tree libyaml's events built, positions in p->pos) in the
 * arena; *k: where src's position is expected in p->pos.  NULL when out of memory.
 */
static cJSON *arena_copy(struct ps *p, const cJSON *src, size_t *k)
{
    struct ydoc_arena *a = p->arena;
    const cJSON *c;
    cJSON *dst, *cc;
    size_t i = *k;

    /* Positions are recorded in pre-order, as the copy is made: the search never runs. */
    if (i >= p->npos || p->pos[i].node != src)
        for (i = 0; i < p->npos && p->pos[i].node != src; i++)
            ;
    if (i == p->npos)
        return NULL;
    *k = i + 1;
    dst = ya_node(a, src->type & 0xff, p->pos[i].line, p->pos[i].col);
    if (!dst)
        return NULL;
    dst->valueint = src->valueint;
    dst->valuedouble = src->valuedouble;
    if (src->string && !(dst->string = ya_strdup(a, src->string, strlen(src->string))))
        return NULL;
    if (src->valuestring &&
        !(dst->valuestring = ya_strdup(a, src->valuestring, strlen(src->valuestring))))
        return NULL;
    for (c = src->child; c; c = c->next) {
        if (!(cc = arena_copy(p, c, k)))
            return NULL;
        cJSON_AddItemToArray(dst, cc);
    }
    return dst;
}

/*
 * Delivers p->root.  in_arena: the fast path built it in p->arena; else it
 * is a tree of its own, which goes to the arena (if any) first.
 */
static enum dd_rc end_document(struct ps *p, int in_arena)
{
    cJSON *root = p->root;
    enum dd_rc rc;
    size_t k = 0;

    p->root = NULL;
    if (root && cJSON_IsNull(root)) {
        if (in_arena)
            ya_rewind(p->arena);
        else
            cJSON_Delete(root);
        root = NULL;
    }
    if (root && p->arena && !in_arena) {
        cJSON *copy;
        ya_mark(p->arena);
        copy = arena_copy(p, root, &k);
        cJSON_Delete(root);
        if (!(root = copy)) {
            ya_rewind(p->arena);
            rc = DD_ENOMEM;
            goto out;
        }
    }
    if (p->arena)
        rc = p->sink->document ? p->sink->document(p->sink->ctx, root, NULL, 0)
                               : (ya_rewind(p->arena), DD_OK);
    else
        rc = p->sink->document ? p->sink->document(p->sink->ctx, root, p->pos,
                                                   root ? p->npos : 0)
                               : (cJSON_Delete(root), DD_OK);
out:
    p->npos = 0;
    stab_clear(&p->tab);
    cJSON_Delete(p->grave);
    p->grave = NULL;
    return rc;
}

static void offer_handback(struct ps *p, const yaml_event_t *ev);

static enum dd_rc on_event(struct ps *p, yaml_event_t *ev)
{
    enum dd_rc rc;

    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (p->skip_docs) {
            p->skip_docs--;
            p->in_skip = 1;
            return DD_OK;
        }
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
        rc = DD_OK;
        if (p->in_skip || p->skipping)
            p->in_skip = p->skipping = 0;
        else
            rc = end_document(p, 0);
        offer_handback(p, ev);
        return rc;
    default:
        break;
    }
    if (p->skipping || p->in_skip)
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
    p->off = off;
    p->line_base = line_base;
    p->cur_off = off;
    p->cur_line = line_base + 1;
    if (!yaml_parser_initialize(&p->yp))
        return;
    p->yp_live = 1;
    yaml_parser_set_input_string(&p->yp, (const unsigned char *)p->buf + off, p->len - off);
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

/* Offset of the start of absolute line `line` (1-based), at or after libyaml's input start. */
static size_t line_offset(struct ps *p, int line)
{
    while (p->cur_line < line && p->cur_off < p->len) {
        p->cur_off = next_line(p->buf, p->len, p->cur_off);
        p->cur_line++;
    }
    return p->cur_off;
}

/*
 * After a document that libyaml read, hands the stream back to the fast path
 * when the next token is a "---" at column 0: a fresh start there is exactly
 * libyaml's own state at that point.  An explicit end ("...") keeps libyaml,
 * because what may follow it differs between a fresh and a running parser.
 */
static void offer_handback(struct ps *p, const yaml_event_t *ev)
{
    int line = p->line_base + (int)ev->start_mark.line + 1;
    size_t o;

    if (!p->handback || !ev->data.document_end.implicit || ev->start_mark.column != 0)
        return;
    o = line_offset(p, line);
    if (p->cur_line == line && o > p->off && is_doc_start(p->buf + o, p->len - o)) {
        p->resume = o;
        p->resume_line = line;
    }
}

/*
 * libyaml cannot go on after an error, so a new parser starts at the next
 * "---" line at or after the error's line: a document separator at column 0
 * always ends the broken document.  An error after column 1 of a "---" line
 * is in the document that line starts, so the search begins past it (else
 * the same error would be found and reported again).  Returns 0 when there
 * is none, else 1 with *at and *at_line (1-based) set.
 */
static int find_restart(struct ps *p, int err_line, int err_col, size_t *at, int *at_line)
{
    size_t i = p->off;
    int line = p->line_base + 1;

    while (line < err_line && i < p->len) {
        i = next_line(p->buf, p->len, i);
        line++;
    }
    if (err_col > 1 && i < p->len && is_doc_start(p->buf + i, p->len - i)) {
        i = next_line(p->buf, p->len, i);
        line++;
    }
    while (i < p->len && !(i > p->off && is_doc_start(p->buf + i, p->len - i))) {
        i = next_line(p->buf, p->len, i);
        line++;
    }
    if (i >= p->len)
        return 0;
    *at = i;
    *at_line = line;
    return 1;
}

/* Reports libyaml's error; *err_line and *err_col get its absolute position. */
static enum dd_rc libyaml_error(struct ps *p, int *err_line, int *err_col)
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
        *err_col = col;
        if (y->problem_value != -1)
            return report(p, DD_EPARSE, line, col, "%s (byte 0x%02x)", problem,
                          (unsigned)y->problem_value & 0xffu);
        return report(p, DD_EPARSE, line, col, "%s", problem);
    }
    line = p->line_base + (int)y->problem_mark.line + 1;
    col = (int)y->problem_mark.column + 1;
    *err_line = line;
    *err_col = col;
    if (y->context && (y->context_mark.line != y->problem_mark.line ||
                       y->context_mark.column != y->problem_mark.column))
        return report(p, DD_EPARSE, line, col, "%s %s that started at line %d, column %d",
                      problem, y->context, p->line_base + (int)y->context_mark.line + 1,
                      (int)y->context_mark.column + 1);
    if (y->context)
        return report(p, DD_EPARSE, line, col, "%s %s", problem, y->context);
    return report(p, DD_EPARSE, line, col, "%s", problem);
}

/*
 * Reads with libyaml from off (a line start with line_base lines before it),
 * passing over the first `skip` documents, which the fast path has already
 * delivered.  Returns at the end of the stream, or with p->resume set where
 * the fast path may take over.
 */
static enum dd_rc run_libyaml(struct ps *p, size_t off, int line_base, size_t skip)
{
    enum dd_rc rc = DD_OK;
    int err_line, err_col, at_line, done = 0;
    size_t at;

    p->resume = NO_RESUME;
    p->skip_docs = skip;
    p->in_skip = 0;
    start_parser(p, off, line_base);
    if (!p->yp_live)
        return DD_ENOMEM;
    while (!done && rc == DD_OK && !p->stop && p->resume == NO_RESUME) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p->yp, &ev)) {
            p->skip_docs = 0;
            p->in_skip = 0;
            rc = libyaml_error(p, &err_line, &err_col);
            if (rc != DD_OK)
                break;
            if (!find_restart(p, err_line, err_col, &at, &at_line)) {
                done = 1;
            } else if (p->handback) {
                p->resume = at;
                p->resume_line = at_line;
            } else {
                start_parser(p, at, at_line - 1);
                if (!p->yp_live)
                    rc = DD_ENOMEM;
            }
            continue;
        }
        rc = on_event(p, &ev);
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    return rc;
}

/*
 * --- the fast path ---
 *
 * libyaml copies every character through several buffers and alone caps the
 * loader below the throughput Kubernetes repositories need, while manifests
 * use a small part of YAML.  So a document is first read directly from the
 * buffer by the scanner below, for the block-style subset manifests use
 * (block mappings and sequences, one-line plain and quoted scalars, block
 * scalars, flow collections, JSON).  It accepts a document only when libyaml
 * would build exactly the same tree with the same positions; for anything
 * else (anchors, tags, multi-line scalars, tabs, any error at all) it gives
 * up, and libyaml re-reads that document from a point where a fresh libyaml
 * parser is in the state a running one would be in: the start of the stream
 * or a "---" line.  So errors, messages and positions are always libyaml's.
 */

enum { FP_OK, FP_BAIL, FP_NOMEM };

/* Results of fp_content besides an indentation. */
#define FP_EOF (-1)   /* end of the stream */
#define FP_MARK (-2)  /* a "---" or "..." line */
#define FP_TAB (-3)   /* a tab in indentation: left to libyaml */

/* libyaml's limit for a simple key is 1024 characters; bytes >= characters. */
#define FP_MAX_KEY 1000

/*
 * Keys a skimmed document may have open at once (over all its open
 * mappings; duplicates are found by a linear scan), and in one mapping.
 * Beyond either the document is built instead.
 */
#define FP_SKIM_KEYS 256
#define FP_SKIM_MAP_KEYS 64

enum fp_ctx {
    CTX_ROOT,     /* the document's node */
    CTX_NEXTLINE, /* a value that starts on a line of its own */
    CTX_ITEM,     /* after "- " on the same line */
    CTX_VALUE     /* after "key: " on the same line */
};

struct fp {
    struct ps *p;
    const char *b;       /* borrowed: the stream */
    size_t n;            /* its length */
    size_t ls, le, nl;   /* current line: start, end of its text, start of the next */
    int line;            /* 1-based number of the current line */
    int utf8;            /* the stream has non-ASCII text: columns count characters */
    size_t cc_ls, cc_off; /* column cache for utf8 streams */
    int cc_col;
    size_t ct_ls;        /* fp_content's last answer, ct, was for the line at ct_ls */
    int ct;
    char *sb;            /* owned: block scalar text being built */
    size_t sbn, sbcap;
    /*
     * Skimming (see struct ydoc_skim): the document is read with the same
     * code and the same checks, but no node, key or string is made.  Any
     * FP_BAIL while skimming means "read it again, building it", which then
     * decides between the tree and libyaml as usual; so skimming accepts a
     * document only when building it would succeed too.
     */
    int skim;            /* the current document is being skimmed */
    int sk_state;        /* SK_* bits */
    size_t sk_av, sk_ave, sk_kd, sk_kde; /* the root's apiVersion and kind values */
    size_t sk_vs, sk_ve; /* the last plain scalar skimmed */
    size_t unless_len;   /* strlen(p->skim->unless_key) */
    size_t unless_len2;  /* strlen(p->skim->unless_key2) */
    struct fp_span { size_t s, n; } ks[FP_SKIM_KEYS]; /* keys of the open mappings */
    size_t nks;
};

#define SK_AV 1     /* sk_av..sk_ave is the root's apiVersion */
#define SK_KIND 2   /* sk_kd..sk_kde is the root's kind */
#define SK_SKIP 4   /* skim->skip said the document may be skipped */

/*
 * 1 when nothing in buf makes libyaml's reader or line counting differ from
 * a plain byte view: no control characters, no lone CR, valid UTF-8 without
 * BOM, NEL, LS, PS or the non-characters the reader refuses.  *utf8 is set
 * when there is non-ASCII text (columns then count characters, as libyaml's
 * do).
 */
static int fp_clean(const char *buf, size_t len, int *utf8)
{
    static unsigned char plain[256]; /* 1: printable ASCII, tab or LF */
    const unsigned char *b = (const unsigned char *)buf;
    size_t i = 0;
    unsigned c;

    if (!plain['a']) {
        for (c = 0x20; c < 0x7f; c++)
            plain[c] = 1;
        plain['\t'] = plain['\n'] = 1;
    }
    *utf8 = 0;
    for (;;) {
        unsigned v, k, j;
        while (i + 4 <= len && plain[b[i]] & plain[b[i + 1]] & plain[b[i + 2]] & plain[b[i + 3]])
            i += 4;
        while (i < len && plain[b[i]])
            i++;
        if (i >= len)
            return 1;
        c = b[i];
        if (c == '\r') {
            if (i + 1 < len && b[i + 1] == '\n') {
                i += 2;
                continue;
            }
            return 0;
        }
        if (c < 0xc2 || c > 0xf4)
            return 0;
        k = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
        if (len - i <= k)
            return 0;
        v = c & (0x3fu >> k);
        for (j = 1; j <= k; j++) {
            if ((b[i + j] & 0xc0) != 0x80)
                return 0;
            v = (v << 6) | (b[i + j] & 0x3fu);
        }
        if ((k == 2 && v < 0x800) || (k == 3 && (v < 0x10000 || v > 0x10ffff)) ||
            (v >= 0xd800 && v <= 0xdfff) || v < 0xa0 || v == 0x2028 || v == 0x2029 ||
            v == 0xfeff || v == 0xfffe || v == 0xffff)
            return 0;
        *utf8 = 1;
        i += k + 1;
    }
}

static void fp_at(struct fp *f, size_t ls, int line)
{
    const char *e;

    f->ls = ls;
    f->line = line;
    if (ls >= f->n) {
        f->ls = f->le = f->nl = f->n;
        return;
    }
    e = memchr(f->b + ls, '\n', f->n - ls);
    f->nl = e ? (size_t)(e - f->b) + 1 : f->n;
    f->le = e ? (size_t)(e - f->b) : f->n;
    if (f->le > ls && f->b[f->le - 1] == '\r')
        f->le--;
}

static void fp_next(struct fp *f)
{
    fp_at(f, f->nl, f->line + 1);
}

/* 1-based column of off, which is on the current line. */
static int fp_col(struct fp *f, size_t off)
{
    size_t i = f->ls;
    int col = 1;

    if (!f->utf8)
        return (int)(off - f->ls) + 1;
    if (f->cc_ls == f->ls && f->cc_off <= off) {
        i = f->cc_off;
        col = f->cc_col;
    }
    for (; i < off; i++)
        col += ((unsigned char)f->b[i] & 0xc0) != 0x80;
    f->cc_ls = f->ls;
    f->cc_off = off;
    f->cc_col = col;
    return col;
}

/* A space, a tab or the end of the current line at i (libyaml's IS_BLANKZ). */
static int fp_blankz(const struct fp *f, size_t i)
{
    return i >= f->le || f->b[i] == ' ' || f->b[i] == '\t';
}

static int fp_is_mark(const struct fp *f)
{
    const char *s = f->b + f->ls;

    return f->le - f->ls >= 3 &&
           (memcmp(s, "---", 3) == 0 || memcmp(s, "...", 3) == 0) && fp_blankz(f, f->ls + 3);
}

/*
 * Moves to the next line at or after the current one that has content (not
 * blank, not only a comment).  Returns its indentation, or FP_EOF, FP_MARK
 * or FP_TAB.
 */
static int fp_content(struct fp *f)
{
    /* Callers ask again for the line they stopped at: its answer is kept. */
    if (f->ls == f->ct_ls && f->ls < f->n)
        return f->ct;
    for (;;) {
        size_t i = f->ls;
        uint64_t w;
        if (i >= f->n)
            return FP_EOF;
        /* Indentation eight spaces at a time. */
        while (i + 8 <= f->le && (memcpy(&w, f->b + i, 8), w == 0x2020202020202020ULL))
            i += 8;
        while (i < f->le && f->b[i] == ' ')
            i++;
        if (i < f->le && f->b[i] == '\t')
            return FP_TAB;
        if (i == f->le || f->b[i] == '#') {
            fp_next(f);
            continue;
        }
        f->ct_ls = f->ls;
        f->ct = i == f->ls && fp_is_mark(f) ? FP_MARK : (int)(i - f->ls);
        return f->ct;
    }
}

/* 1 when only spaces, then nothing or a comment, remain on the current line from i. */
static int fp_rest_empty(const struct fp *f, size_t i)
{
    size_t j = i;

    while (j < f->le && f->b[j] == ' ')
        j++;
    return j == f->le || (f->b[j] == '#' && j > i);
}

/*
 * Whether a plain scalar may start at s.  Stricter than libyaml: "-", "?"
 * and ":" starts and the indicators are left to it.
 */
static int fp_plain_start(const struct fp *f, size_t s, int flow)
{
    unsigned char c = (unsigned char)f->b[s];

    if (c == '-') {
        if (fp_blankz(f, s + 1))
            return 0;
        return !(flow && strchr(",[]{}", f->b[s + 1]));
    }
    switch (c) {
    case '\0': case '?': case ':': case ',': case '[': case ']': case '{': case '}': case '#':
    case '&': case '*': case '!': case '|': case '>': case '\'': case '"': case '%': case '@':
    case '`': case ' ': case '\t':
        return 0;
    default:
        return 1;
    }
}

/*
 * A one-line plain scalar in block context from s; its text is [s, *e).
 * Returns ':' when ": " (or ':' at the end of the line) follows it, with *c
 * at the ':'; '#' when a comment ends the line; '\n' when the line ends; 0
 * for what the fast path leaves to libyaml (tabs).
 */
static int fp_plain(const struct fp *f, size_t s, size_t *e, size_t *c)
{
    static const unsigned char stop[256] = { [' '] = 1, ['\t'] = 1, [':'] = 1 };
    const char *b = f->b;
    size_t i = s, end = s, run;

    while (i < f->le) {
        char ch;
        for (run = i; i < f->le && !stop[(unsigned char)b[i]]; i++)
            ;
        if (i > run)
            end = i;
        if (i == f->le)
            break;
        ch = b[i];
        if (ch == ' ') {
            i++;
            if (i < f->le && b[i] == '#') {
                *e = end;
                return '#';
            }
            continue;
        }
        if (ch == '\t')
            return 0;
        if (ch == ':' && (i + 1 == f->le || b[i + 1] == ' ' || b[i + 1] == '\t')) {
            if (i + 1 < f->le && b[i + 1] == '\t')
                return 0;
            *e = end;
            *c = i;
            return ':';
        }
        end = ++i;
    }
    *e = end;
    return '\n';
}

/*
 * After a one-line plain scalar in block context, with the cursor on the
 * next line: 1 when libyaml would not continue the scalar there (the next
 * non-blank line is a comment, or not indented past the enclosing
 * collection, or there is none).
 */
static int fp_plain_done(const struct fp *f, int indent)
{
    const char *b = f->b;
    size_t ls = f->ls;

    while (ls < f->n) {
        size_t i = ls;
        while (i < f->n && b[i] == ' ')
            i++;
        if (i < f->n && b[i] == '\t')
            return 0;
        if (i < f->n && b[i] == '\r')
            i++;
        if (i >= f->n)
            return 1;
        if (b[i] != '\n')
            return b[i] == '#' || (int)(i - ls) <= indent;
        ls = i + 1;
    }
    return 1;
}

static int hexval(const char *s, int n, unsigned *v)
{
    int i, d;

    *v = 0;
    for (i = 0; i < n; i++) {
        d = digit_value(s[i]);
        if (d > 15)
            return 0;
        *v = *v * 16 + (unsigned)d;
    }
    return 1;
}

/*
 * Texts and nodes come from the arena when there is one, else from malloc
 * (freed with the tree).  Before a document is delivered, a failure takes
 * back everything it made (ya_rewind or cJSON_Delete of the partial tree).
 */
static char *fp_alloc(struct fp *f, size_t n)
{
    return f->p->arena ? ya_alloc(f->p->arena, n) : malloc(n);
}

static char *fp_strdup(struct fp *f, const char *s, size_t n)
{
    char *r = fp_alloc(f, n + 1);

    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* Gives back all but the first keep of the n bytes at str, the last text allocated. */
static void fp_shrink(struct fp *f, char *str, size_t n, size_t keep)
{
    if (f->p->arena)
        ya_shrink(f->p->arena, str, n, keep);
}

/* The last text allocated, str (n bytes; may be NULL), goes unused. */
static void fp_unalloc(struct fp *f, char *str, size_t n)
{
    if (!f->p->arena)
        free(str);
    else if (str)
        ya_shrink(f->p->arena, str, n, 0);
}

/* A text of the document being built that goes unused (NULL: none). */
static void fp_free(struct fp *f, char *str)
{
    fp_unalloc(f, str, str && f->p->arena ? strlen(str) + 1 : 0);
}

/*
 * A one-line quoted scalar at s.  *str: its value (malloc'd, see steal()),
 * *q: just past the closing quote.  Escapes outside the JSON set, and the
 * ones producing NUL or surrogates, are left to libyaml.
 */
static int fp_quoted(struct fp *f, size_t s, char **str, size_t *q)
{
    const char *b = f->b;
    const size_t i0 = s + 1;
    size_t i = i0, j, o = 0;
    char *out;

    *str = NULL;
    if (b[s] == '\'') {
        for (j = i;; j += 2) {
            const char *e = memchr(b + j, '\'', f->le - j);
            if (!e)
                return FP_BAIL;
            j = (size_t)(e - b);
            if (j + 1 >= f->le || b[j + 1] != '\'')
                break;
        }
        if (f->skim) {
            *q = j + 1;
            return FP_OK;
        }
        out = fp_alloc(f, j - i + 1);
        if (!out)
            return FP_NOMEM;
        while (i < j) {
            out[o++] = b[i];
            i += b[i] == '\'' ? 2 : 1;
        }
        out[o] = '\0';
        fp_shrink(f, out, j - i0 + 1, o + 1);
        *str = out;
        *q = j + 1;
        return FP_OK;
    }
    for (j = i; j < f->le && b[j] != '"'; j++)
        if (b[j] == '\\')
            j++;
    if (j >= f->le)
        return FP_BAIL;
    /* While skimming, out stays NULL: the escapes are checked, nothing is written. */
    out = f->skim ? NULL : fp_alloc(f, j - i0 + 1);
    if (!out && !f->skim)
        return FP_NOMEM;
    while (i < j) {
        const char *r;
        char c[3];
        size_t nc = 1;
        unsigned v;
        if (b[i] != '\\') {
            r = memchr(b + i, '\\', j - i);
            size_t k = r ? (size_t)(r - b) : j;
            if (out)
                memcpy(out + o, b + i, k - i);
            o += k - i;
            i = k;
            continue;
        }
        switch (b[i + 1]) {
        case '"': c[0] = '"'; break;
        case '\\': c[0] = '\\'; break;
        case '/': c[0] = '/'; break;
        case 'b': c[0] = '\b'; break;
        case 'f': c[0] = '\f'; break;
        case 'n': c[0] = '\n'; break;
        case 'r': c[0] = '\r'; break;
        case 't': c[0] = '\t'; break;
        case 'u':
            if (i + 6 > j || !hexval(b + i + 2, 4, &v) || v == 0 || (v >= 0xdc00 && v <= 0xdfff))
                goto bail;
            if (v >= 0xd800 && v <= 0xdbff) {
                /* JSON writes a code point past U+FFFF as a surrogate pair (kubectl and
                 * json.dumps do); libyaml refuses surrogates, so the pair is joined here. */
                unsigned lo;
                char u[4];
                if (i + 12 > j || b[i + 6] != '\\' || b[i + 7] != 'u' ||
                    !hexval(b + i + 8, 4, &lo) || lo < 0xdc00 || lo > 0xdfff)
                    goto bail;
                v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
                u[0] = (char)(0xf0 | (v >> 18));
                u[1] = (char)(0x80 | ((v >> 12) & 0x3f));
                u[2] = (char)(0x80 | ((v >> 6) & 0x3f));
                u[3] = (char)(0x80 | (v & 0x3f));
                if (out)
                    memcpy(out + o, u, 4);
                o += 4;
                i += 12;
                continue;
            }
            if (v < 0x80) {
                c[0] = (char)v;
            } else if (v < 0x800) {
                c[0] = (char)(0xc0 | (v >> 6));
                c[1] = (char)(0x80 | (v & 0x3f));
                nc = 2;
            } else {
                c[0] = (char)(0xe0 | (v >> 12));
                c[1] = (char)(0x80 | ((v >> 6) & 0x3f));
                c[2] = (char)(0x80 | (v & 0x3f));
                nc = 3;
            }
            i += 4;
            break;
        default:
            goto bail;
        }
        if (out)
            memcpy(out + o, c, nc);
        o += nc;
        i += 2;
    }
    if (out) {
        out[o] = '\0';
        fp_shrink(f, out, j - i0 + 1, o + 1);
    }
    *str = out;
    *q = j + 1;
    return FP_OK;
bail:
    fp_unalloc(f, out, j - i0 + 1);
    return FP_BAIL;
}

/* A new node of a type (cJSON_*), its position recorded; its other fields are zero. */
static cJSON *fp_new(struct fp *f, int type, int line, int col)
{
    cJSON *node;

    if (f->p->arena)
        return ya_node(f->p->arena, type, line, col);
    if (!(node = cJSON_CreateNull()))
        return NULL;
    node->type = type;
    if (add_pos(f->p, node, line, col) != DD_OK) {
        cJSON_Delete(node);
        return NULL;
    }
    return node;
}

/* A string node owning str (from fp_alloc; consumed even on failure). */
static cJSON *fp_string(struct fp *f, char *str, int line, int col)
{
    cJSON *node = fp_new(f, cJSON_String, line, col);

    if (!node) {
        fp_free(f, str);
        return NULL;
    }
    node->valuestring = str; /* owned, as in make_scalar */
    return node;
}

/* A number node as number_node makes it. */
static cJSON *fp_number(struct fp *f, const struct scalar *v, int line, int col)
{
    char buf[24];
    cJSON *node;
    int n;

    if (!f->p->arena) {
        node = number_node(v);
        if (node && add_pos(f->p, node, line, col) != DD_OK) {
            cJSON_Delete(node);
            node = NULL;
        }
        return node;
    }
    if (!(node = ya_node(f->p->arena, cJSON_Number, line, col)))
        return NULL;
    /* cJSON_SetNumberValue's valueint (a NaN gets what x86 gives cJSON's cast). */
    node->valuedouble = v->num;
    node->valueint = v->num >= INT_MAX                   ? INT_MAX
                     : v->num <= (double)INT_MIN || isnan(v->num) ? INT_MIN
                                                          : (int)v->num;
    if (v->kind == K_INT && v->exact) {
        n = snprintf(buf, sizeof(buf), "%" PRId64, v->i);
        if (!(node->valuestring = ya_strdup(f->p->arena, buf, (size_t)n)))
            return NULL;
    }
    return node;
}

/* The node for a plain scalar [s, e) on the current line, typed as make_scalar does. */
static int fp_plain_node(struct fp *f, size_t s, size_t e, cJSON **out)
{
    struct scalar v = { K_STRING, 0, 0, 0, 0 };
    int line = f->line, col;
    cJSON *node;
    char *str;

    if (f->skim) {
        f->sk_vs = s;
        f->sk_ve = e;
        return FP_OK;
    }
    col = fp_col(f, s);
    resolve_plain(f->b + s, e - s, &v);
    switch (v.kind) {
    case K_NULL: node = fp_new(f, cJSON_NULL, line, col); break;
    case K_BOOL: node = fp_new(f, v.b ? cJSON_True : cJSON_False, line, col); break;
    case K_INT:
    case K_FLOAT: node = fp_number(f, &v, line, col); break;
    default:
        str = fp_strdup(f, f->b + s, e - s);
        node = str ? fp_string(f, str, line, col) : NULL;
        break;
    }
    *out = node;
    return node ? FP_OK : FP_NOMEM;
}

/*
 * Is key already in map (nkeys keys so far)?  The same small-scan-then-hash
 * rule as take_key.  Returns 1, 0, or -1 when out of memory.
 */
static int fp_dup(struct ps *p, cJSON *map, size_t nkeys, int *hashed, const char *key)
{
    struct stab_entry *e;
    const cJSON *c;

    if (!*hashed && nkeys >= SMALL_MAP) {
        for (c = map->child; c; c = c->next)
            if (stab_put(&p->tab, map, c->string, &e) != DD_OK)
                return -1;
        *hashed = 1;
    }
    if (*hashed)
        return stab_find(&p->tab, map, key) != NULL;
    for (c = map->child; c; c = c->next)
        if (c->string[0] == key[0] && strcmp(c->string, key) == 0)
            return 1;
    return 0;
}

/* Adds child (may be NULL) under key (owned; consumed) to map. */
static int fp_put(struct fp *f, cJSON *map, int hashed, char *key, cJSON *child)
{
    struct stab_entry *e;

    if (!child) {
        fp_free(f, key);
        return FP_OK;
    }
    child->string = key;
    cJSON_AddItemToArray(map, child);
    if (hashed && stab_put(&f->p->tab, map, key, &e) != DD_OK)
        return FP_NOMEM;
    return FP_OK;
}

/*
 * While skimming: the plain key [s, e) of a mapping whose keys are
 * ks[base..nks).  Pushes it; FP_BAIL when it repeats one (building would
 * bail), is the skim's unless_key, or there are too many keys to scan.
 */
static int fp_skim_key(struct fp *f, size_t base, size_t s, size_t e)
{
    const char *k = f->b + s;
    size_t i, n = e - s;

    if (f->p->skim->unless_key && n == f->unless_len && memcmp(k, f->p->skim->unless_key, n) == 0)
        return FP_BAIL;
    if (f->p->skim->unless_key2 && n == f->unless_len2 &&
        memcmp(k, f->p->skim->unless_key2, n) == 0)
        return FP_BAIL;
    if (f->nks == FP_SKIM_KEYS || f->nks - base >= FP_SKIM_MAP_KEYS)
        return FP_BAIL;
    for (i = base; i < f->nks; i++)
        if (f->ks[i].n == n && memcmp(f->b + f->ks[i].s, k, n) == 0)
            return FP_BAIL;
    f->ks[f->nks].s = s;
    f->ks[f->nks].n = n;
    f->nks++;
    return FP_OK;
}

/*
 * While skimming, after the root mapping's key [ks, ke) and its value (at v
 * when on the key's line): notes apiVersion and kind, and once both are known
 * asks skim->skip.  FP_BAIL (build the document) unless both are one-line
 * plain scalars typed as strings and skip says yes.
 */
static int fp_skim_root(struct fp *f, size_t ks, size_t ke, size_t v)
{
    struct scalar sv = { K_STRING, 0, 0, 0, 0 };
    char av[256], kind[256];
    size_t n = ke - ks, avn, kn;
    int bit;

    if (n == 10 && memcmp(f->b + ks, "apiVersion", 10) == 0)
        bit = SK_AV;
    else if (n == 4 && memcmp(f->b + ks, "kind", 4) == 0)
        bit = SK_KIND;
    else
        return FP_OK;
    if (f->sk_vs != v)
        return FP_BAIL;
    resolve_plain(f->b + f->sk_vs, f->sk_ve - f->sk_vs, &sv);
    if (sv.kind != K_STRING)
        return FP_BAIL;
    if (bit == SK_AV) {
        f->sk_av = f->sk_vs;
        f->sk_ave = f->sk_ve;
    } else {
        f->sk_kd = f->sk_vs;
        f->sk_kde = f->sk_ve;
    }
    f->sk_state |= bit;
    if ((f->sk_state & (SK_AV | SK_KIND)) != (SK_AV | SK_KIND))
        return FP_OK;
    avn = f->sk_ave - f->sk_av;
    kn = f->sk_kde - f->sk_kd;
    /* *List kinds may be lists, which consumers flatten: always built. */
    if (avn >= sizeof(av) || kn >= sizeof(kind) ||
        (kn >= 4 && memcmp(f->b + f->sk_kde - 4, "List", 4) == 0))
        return FP_BAIL;
    memcpy(av, f->b + f->sk_av, avn);
    av[avn] = '\0';
    memcpy(kind, f->b + f->sk_kd, kn);
    kind[kn] = '\0';
    if (!f->p->skim->skip(f->p->skim->ctx, av, kind))
        return FP_BAIL;
    f->sk_state |= SK_SKIP;
    return FP_OK;
}

static int fp_sb_put(struct fp *f, const char *s, size_t n)
{
    if (f->skim)
        return FP_OK;
    if (f->sbn + n + 1 > f->sbcap) {
        size_t ncap = f->sbcap ? f->sbcap : 256;
        char *nb;
        while (ncap < f->sbn + n + 1)
            ncap *= 2;
        nb = realloc(f->sb, ncap);
        if (!nb)
            return FP_NOMEM;
        f->sb = nb;
        f->sbcap = ncap;
    }
    memcpy(f->sb + f->sbn, s, n);
    f->sbn += n;
    return FP_OK;
}

static int fp_sb_breaks(struct fp *f, int k)
{
    for (; k > 0; k--)
        if (fp_sb_put(f, "\n", 1) != FP_OK)
            return FP_NOMEM;
    return FP_OK;
}

/*
 * libyaml's yaml_parser_scan_block_scalar_breaks, from the start of the
 * current line: eats indentation and empty lines (counted in *trail), fixes
 * *ind when it is 0, and leaves *i at the first content character (or the
 * end of the stream).
 */
static int fp_bs_breaks(struct fp *f, int *ind, int parent, int *trail, size_t *i)
{
    int max = 0, col;

    for (;;) {
        *i = f->ls;
        while ((!*ind || (int)(*i - f->ls) < *ind) && *i < f->le && f->b[*i] == ' ')
            (*i)++;
        col = (int)(*i - f->ls);
        if (col > max)
            max = col;
        if ((!*ind || col < *ind) && *i < f->le && f->b[*i] == '\t')
            return FP_BAIL;
        if (*i < f->le || f->le == f->n)
            break;
        (*trail)++;
        fp_next(f);
    }
    if (!*ind) {
        *ind = max;
        if (*ind < parent + 1)
            *ind = parent + 1;
        if (*ind < 1)
            *ind = 1;
    }
    return FP_OK;
}

/*
 * A block scalar whose indicator is at s; parent: libyaml's indentation of
 * the enclosing collection.  A port of yaml_parser_scan_block_scalar for the
 * headers |, |-, |+, >, >-, >+ (no indentation indicator).  Leaves the
 * cursor on the first line after the scalar.
 */
static int fp_block_scalar(struct fp *f, size_t s, int parent, cJSON **out)
{
    const char *b = f->b;
    int literal = b[s] == '|', chomp = 0, ind = 0, lead_break = 0, trail = 0;
    int lead_blank = 0, trail_blank, line = f->line, col = fp_col(f, s), rc;
    size_t i = s + 1;
    cJSON *node;
    char *str;

    *out = NULL;
    if (i < f->le && (b[i] == '+' || b[i] == '-'))
        chomp = b[i++] == '+' ? 1 : -1;
    if ((i < f->le && b[i] != ' ') || !fp_rest_empty(f, i))
        return FP_BAIL;
    f->sbn = 0;
    fp_next(f);
    if ((rc = fp_bs_breaks(f, &ind, parent, &trail, &i)) != FP_OK)
        return rc;
    while (i < f->n && (int)(i - f->ls) == ind) {
        trail_blank = b[i] == ' ' || b[i] == '\t';
        if (!literal && lead_break && !lead_blank && !trail_blank) {
            if (!trail && fp_sb_put(f, " ", 1) != FP_OK)
                return FP_NOMEM;
            lead_break = 0;
        } else {
            if (fp_sb_breaks(f, lead_break) != FP_OK)
                return FP_NOMEM;
            lead_break = 0;
        }
        if (fp_sb_breaks(f, trail) != FP_OK)
            return FP_NOMEM;
        trail = 0;
        lead_blank = trail_blank;
        if (fp_sb_put(f, b + i, f->le - i) != FP_OK)
            return FP_NOMEM;
        lead_break = f->le < f->n;
        fp_next(f);
        if ((rc = fp_bs_breaks(f, &ind, parent, &trail, &i)) != FP_OK)
            return rc;
    }
    if (chomp != -1 && fp_sb_breaks(f, lead_break) != FP_OK)
        return FP_NOMEM;
    if (chomp == 1 && fp_sb_breaks(f, trail) != FP_OK)
        return FP_NOMEM;
    if (f->skim)
        return FP_OK;
    str = fp_strdup(f, f->sb ? f->sb : "", f->sbn);
    node = str ? fp_string(f, str, line, col) : NULL;
    *out = node;
    return node ? FP_OK : FP_NOMEM;
}

/*
 * Skips blanks, line breaks and comments inside a flow collection.  Lines
 * inside must be indented past the enclosing block collection (stricter than
 * libyaml, which is left the rest).
 */
static int fp_fws(struct fp *f, size_t *i, int block_indent)
{
    const char *b = f->b;
    size_t j = *i;

    for (;;) {
        while (j < f->le && (b[j] == ' ' || b[j] == '\t'))
            j++;
        if (j < f->le && b[j] == '#') {
            if (j == f->ls || (b[j - 1] != ' ' && b[j - 1] != '\t'))
                return FP_BAIL;
            j = f->le;
        }
        if (j < f->le)
            break;
        if (f->nl >= f->n)
            return FP_BAIL;
        fp_next(f);
        if (fp_is_mark(f))
            return FP_BAIL;
        j = f->ls;
        while (j < f->le && (b[j] == ' ' || b[j] == '\t'))
            j++;
        if (j < f->le && b[j] != '#' && (int)(j - f->ls) <= block_indent)
            return FP_BAIL;
    }
    *i = j;
    return FP_OK;
}

static int fp_flow(struct fp *f, size_t s, int block_indent, int depth, size_t *endp,
                   cJSON **out);

/* A flow node at *i: a flow collection, a quoted scalar, or a one-word plain scalar. */
static int fp_flow_value(struct fp *f, size_t *i, int block_indent, int depth, cJSON **out)
{
    const char *b = f->b;
    size_t s = *i, j;
    char *str;
    int rc, line = f->line;

    *out = NULL;
    if (b[s] == '[' || b[s] == '{')
        return fp_flow(f, s, block_indent, depth, i, out);
    if (b[s] == '"' || b[s] == '\'') {
        rc = fp_quoted(f, s, &str, i);
        if (rc != FP_OK || f->skim)
            return rc;
        *out = fp_string(f, str, line, fp_col(f, s));
        return *out ? FP_OK : FP_NOMEM;
    }
    if (!fp_plain_start(f, s, 1))
        return FP_BAIL;
    for (j = s; j < f->le && !strchr(" \t,[]{}", b[j]); j++)
        if (b[j] == ':')
            return FP_BAIL;
    *i = j;
    return fp_plain_node(f, s, j, out);
}

/*
 * A flow collection at s ('[' or '{'), possibly over several lines; *endp
 * gets the offset just past its closing bracket, on the cursor's line.
 */
static int fp_flow(struct fp *f, size_t s, int block_indent, int depth, size_t *endp,
                   cJSON **out)
{
    const char *b = f->b;
    int is_map = b[s] == '{', rc, hashed = 0, d;
    char close = is_map ? '}' : ']';
    size_t i = s + 1, nkeys = 0, kbase = f->nks;
    cJSON *node = NULL, *child;

    *out = NULL;
    if (depth > f->p->lim->max_depth)
        return FP_BAIL;
    if (!f->skim) {
        node = fp_new(f, is_map ? cJSON_Object : cJSON_Array, f->line, fp_col(f, s));
        *out = node;
        if (!node)
            return FP_NOMEM;
    }
    if ((rc = fp_fws(f, &i, block_indent)) != FP_OK)
        return rc;
    if (b[i] == close) {
        *endp = i + 1;
        return FP_OK;
    }
    for (;;) {
        char *key = NULL;
        if (is_map) {
            size_t ks = i, colon, e;
            if (b[i] == '"' || b[i] == '\'') {
                if (f->skim)
                    return FP_BAIL; /* keys are compared as spans of the input */
                if ((rc = fp_quoted(f, i, &key, &e)) != FP_OK)
                    return rc;
                colon = e;
                while (colon < f->le && (b[colon] == ' ' || b[colon] == '\t'))
                    colon++;
            } else {
                if (!fp_plain_start(f, i, 1))
                    return FP_BAIL;
                for (e = i; e < f->le && !strchr(" \t,[]{}:", b[e]); e++)
                    ;
                colon = e;
                while (colon < f->le && (b[colon] == ' ' || b[colon] == '\t'))
                    colon++;
                if (colon >= f->le || b[colon] != ':' || !fp_blankz(f, colon + 1))
                    return FP_BAIL;
                if (f->skim) {
                    if (colon - ks > FP_MAX_KEY || (rc = fp_skim_key(f, kbase, i, e)) != FP_OK)
                        return FP_BAIL;
                } else if (!(key = fp_strdup(f, b + i, e - i))) {
                    return FP_NOMEM;
                }
            }
            if (colon >= f->le || b[colon] != ':' || colon - ks > FP_MAX_KEY) {
                fp_free(f, key);
                return FP_BAIL;
            }
            d = f->skim ? 0 : fp_dup(f->p, node, nkeys, &hashed, key);
            if (d != 0) {
                fp_free(f, key);
                return d < 0 ? FP_NOMEM : FP_BAIL;
            }
            i = colon + 1;
            if ((rc = fp_fws(f, &i, block_indent)) != FP_OK) {
                fp_free(f, key);
                return rc;
            }
            if (b[i] == ',' || b[i] == close) {
                fp_free(f, key);
                return FP_BAIL;
            }
            nkeys++;
        }
        rc = fp_flow_value(f, &i, block_indent, depth + 1, &child);
        if (is_map) {
            if (fp_put(f, node, hashed, key, child) != FP_OK)
                return FP_NOMEM;
        } else if (child) {
            cJSON_AddItemToArray(node, child);
        }
        if (rc != FP_OK || (rc = fp_fws(f, &i, block_indent)) != FP_OK)
            return rc;
        if (b[i] == close) {
            *endp = i + 1;
            f->nks = kbase;
            return FP_OK;
        }
        if (b[i] != ',')
            return FP_BAIL;
        i++;
        if ((rc = fp_fws(f, &i, block_indent)) != FP_OK)
            return rc;
        if (b[i] == close || b[i] == ',')
            return FP_BAIL;
    }
}

static int fp_node(struct fp *f, size_t s, int indent, enum fp_ctx ctx, int depth, cJSON **out);

/* A block mapping whose first key starts at s on the current line. */
static int fp_map(struct fp *f, size_t s, int depth, cJSON **out)
{
    const char *b = f->b;
    int n = (int)(s - f->ls), hashed = 0, rc, d, ind;
    size_t nkeys = 0, kbase = f->nks;
    cJSON *map = NULL, *child;

    *out = NULL;
    if (depth > f->p->lim->max_depth)
        return FP_BAIL;
    if (!f->skim) {
        map = fp_new(f, cJSON_Object, f->line, fp_col(f, s));
        *out = map;
        if (!map)
            return FP_NOMEM;
    }
    for (;;) {
        size_t colon, e, v;
        char *key = NULL;
        if (b[s] == '"' || b[s] == '\'') {
            if (f->skim)
                return FP_BAIL; /* keys are compared as spans of the input */
            if ((rc = fp_quoted(f, s, &key, &e)) != FP_OK)
                return rc;
            colon = e;
            while (colon < f->le && b[colon] == ' ')
                colon++;
            if (colon >= f->le || b[colon] != ':' || !fp_blankz(f, colon + 1)) {
                fp_free(f, key);
                return FP_BAIL;
            }
        } else {
            if (!fp_plain_start(f, s, 0) || fp_plain(f, s, &e, &colon) != ':')
                return FP_BAIL;
            if (!f->skim && !(key = fp_strdup(f, b + s, e - s)))
                return FP_NOMEM;
        }
        if (colon - s > FP_MAX_KEY || (colon + 1 < f->le && b[colon + 1] == '\t')) {
            fp_free(f, key);
            return FP_BAIL;
        }
        if (f->skim) {
            if ((rc = fp_skim_key(f, kbase, s, e)) != FP_OK)
                return rc;
            d = 0;
        } else {
            d = fp_dup(f->p, map, nkeys, &hashed, key);
        }
        if (d != 0) {
            fp_free(f, key);
            return d < 0 ? FP_NOMEM : FP_BAIL;
        }
        nkeys++;
        v = colon + 1;
        while (v < f->le && b[v] == ' ')
            v++;
        child = NULL;
        f->sk_vs = SIZE_MAX;
        if (v == f->le || b[v] == '#') {
            int nline = f->line, ncol = fp_col(f, colon) + 1;
            fp_next(f);
            ind = fp_content(f);
            if (ind > n) {
                rc = fp_node(f, f->ls + (size_t)ind, n, CTX_NEXTLINE, depth + 1, &child);
            } else if (ind == n && b[f->ls + n] == '-' && fp_blankz(f, f->ls + (size_t)n + 1)) {
                rc = fp_node(f, f->ls + (size_t)n, n, CTX_NEXTLINE, depth + 1, &child);
            } else if (ind == FP_TAB) {
                rc = FP_BAIL;
            } else if (f->skim) {
                rc = FP_OK;
            } else {
                child = fp_new(f, cJSON_NULL, nline, ncol);
                rc = child ? FP_OK : FP_NOMEM;
            }
        } else {
            rc = fp_node(f, v, n, CTX_VALUE, depth + 1, &child);
        }
        if (fp_put(f, map, hashed, key, child) != FP_OK)
            return FP_NOMEM;
        if (rc != FP_OK)
            return rc;
        if (f->skim && depth == 1 && !(f->sk_state & SK_SKIP) &&
            (rc = fp_skim_root(f, s, e, v)) != FP_OK)
            return rc;
        ind = fp_content(f);
        if (ind == FP_TAB || ind > n)
            return FP_BAIL;
        if (ind < n) {
            f->nks = kbase;
            return FP_OK;
        }
        s = f->ls + (size_t)n;
    }
}

/*
 * A block sequence whose first '-' is at s on the current line.  indentless:
 * it is the value of a mapping key in the same column, and a line there that
 * is not an entry ends it.
 */
static int fp_seq(struct fp *f, size_t s, int indentless, int depth, cJSON **out)
{
    const char *b = f->b;
    int m = (int)(s - f->ls), rc, ind;
    cJSON *seq = NULL, *child;

    *out = NULL;
    if (depth > f->p->lim->max_depth)
        return FP_BAIL;
    if (!f->skim) {
        seq = fp_new(f, cJSON_Array, f->line, fp_col(f, s));
        *out = seq;
        if (!seq)
            return FP_NOMEM;
    }
    for (;;) {
        size_t v = s + 1;
        while (v < f->le && b[v] == ' ')
            v++;
        if (v < f->le && b[v] == '\t')
            return FP_BAIL;
        child = NULL;
        if (v == f->le || b[v] == '#') {
            int nline = f->line, ncol = fp_col(f, s) + 1;
            fp_next(f);
            ind = fp_content(f);
            if (ind > m) {
                rc = fp_node(f, f->ls + (size_t)ind, m, CTX_NEXTLINE, depth + 1, &child);
            } else if (ind == FP_TAB) {
                rc = FP_BAIL;
            } else if (f->skim) {
                rc = FP_OK;
            } else {
                child = fp_new(f, cJSON_NULL, nline, ncol);
                rc = child ? FP_OK : FP_NOMEM;
            }
        } else {
            rc = fp_node(f, v, m, CTX_ITEM, depth + 1, &child);
        }
        if (child)
            cJSON_AddItemToArray(seq, child);
        if (rc != FP_OK)
            return rc;
        ind = fp_content(f);
        if (ind == FP_TAB || ind > m)
            return FP_BAIL;
        if (ind < m)
            return FP_OK;
        s = f->ls + (size_t)m;
        if (b[s] != '-' || !fp_blankz(f, s + 1))
            return indentless ? FP_OK : FP_BAIL;
    }
}

/*
 * The node starting at s on the current line.  indent: libyaml's indentation
 * of the enclosing block collection (-1 at the root), which decides where a
 * plain scalar could continue and where a block scalar's text starts.  A
 * scalar leaves the cursor on the line after it.
 */
static int fp_node(struct fp *f, size_t s, int indent, enum fp_ctx ctx, int depth, cJSON **out)
{
    const char *b = f->b;
    size_t e, colon;
    char *str;
    int rc, stop, line = f->line;

    *out = NULL;
    if (b[s] == '-' && fp_blankz(f, s + 1)) {
        if (ctx == CTX_VALUE)
            return FP_BAIL;
        return fp_seq(f, s, ctx == CTX_NEXTLINE && (int)(s - f->ls) == indent, depth, out);
    }
    if (b[s] == '[' || b[s] == '{') {
        if (ctx == CTX_NEXTLINE)
            return FP_BAIL;
        rc = fp_flow(f, s, indent, depth, &e, out);
        if (rc != FP_OK)
            return rc;
        if (!fp_rest_empty(f, e))
            return FP_BAIL;
        fp_next(f);
        return FP_OK;
    }
    if (b[s] == '"' || b[s] == '\'') {
        rc = fp_quoted(f, s, &str, &e);
        if (rc != FP_OK)
            return rc;
        colon = e;
        while (colon < f->le && b[colon] == ' ')
            colon++;
        if (colon < f->le && b[colon] == ':') {
            fp_free(f, str);
            return ctx == CTX_VALUE ? FP_BAIL : fp_map(f, s, depth, out);
        }
        if (ctx == CTX_ROOT || ctx == CTX_NEXTLINE || !fp_rest_empty(f, e)) {
            fp_free(f, str);
            return FP_BAIL;
        }
        if (f->skim) {
            fp_next(f);
            return FP_OK;
        }
        *out = fp_string(f, str, line, fp_col(f, s));
        if (!*out)
            return FP_NOMEM;
        fp_next(f);
        return FP_OK;
    }
    if (b[s] == '|' || b[s] == '>')
        return ctx == CTX_ITEM || ctx == CTX_VALUE ? fp_block_scalar(f, s, indent, out) : FP_BAIL;
    if (!fp_plain_start(f, s, 0))
        return FP_BAIL;
    stop = fp_plain(f, s, &e, &colon);
    if (stop == ':')
        return ctx == CTX_VALUE ? FP_BAIL : fp_map(f, s, depth, out);
    if (!stop || ctx == CTX_ROOT || ctx == CTX_NEXTLINE)
        return FP_BAIL;
    rc = fp_plain_node(f, s, e, out);
    if (rc != FP_OK)
        return rc;
    fp_next(f);
    return stop == '#' || fp_plain_done(f, indent) ? FP_OK : FP_BAIL;
}

/* The content of one document, from the cursor; *root NULL for an empty one. */
static int fp_document(struct fp *f, cJSON **root)
{
    int ind = fp_content(f), rc;

    *root = NULL;
    if (ind == FP_TAB)
        return FP_BAIL;
    if (ind < 0)
        return FP_OK;
    /* Skimming needs a block mapping with plain keys at the root. */
    if (f->skim && !fp_plain_start(f, f->ls + (size_t)ind, 0))
        return FP_BAIL;
    rc = fp_node(f, f->ls + (size_t)ind, -1, CTX_ROOT, 1, root);
    if (rc != FP_OK)
        return rc;
    ind = fp_content(f);
    return ind == FP_EOF || ind == FP_MARK ? FP_OK : FP_BAIL;
}

/*
 * Reads documents with the fast path from *off (a line start; *line_base
 * lines before it) until the end of the stream, an error from the sink, or a
 * document it leaves to libyaml.  In the last case *bail is set and *off,
 * *line_base and *skip say where libyaml must start and how many documents
 * it must pass over.
 */
static enum dd_rc fp_stream(struct ps *p, int utf8, size_t *off, int *line_base, size_t *skip,
                            int *bail)
{
    struct fp f;
    size_t delivered = 0;
    int after_doc = 0, ind, rc = FP_OK;
    enum dd_rc out = DD_OK;
    cJSON *root;

    memset(&f, 0, sizeof(f));
    f.p = p;
    f.b = p->buf;
    f.n = p->len;
    f.utf8 = utf8;
    f.cc_col = 1;
    f.ct_ls = SIZE_MAX;
    if (p->skim && p->skim->unless_key)
        f.unless_len = strlen(p->skim->unless_key);
    if (p->skim && p->skim->unless_key2)
        f.unless_len2 = strlen(p->skim->unless_key2);
    fp_at(&f, *off, *line_base + 1);
    *bail = 0;
    for (;;) {
        ind = fp_content(&f);
        if (ind == FP_EOF)
            break;
        if (ind == FP_TAB)
            goto bail;
        if (ind == FP_MARK && f.b[f.ls] == '.') {
            /* Extra document end markers; before any document they would start one. */
            if (!after_doc || !fp_rest_empty(&f, f.ls + 3))
                goto bail;
            fp_next(&f);
            continue;
        }
        if (ind == FP_MARK) {
            *off = f.ls;
            *line_base = f.line - 1;
            delivered = 0;
            after_doc = 0;
            if (!fp_rest_empty(&f, f.ls + 3))
                goto bail;
            fp_next(&f);
        } else if (after_doc) {
            goto bail; /* content after "..." without "---" */
        }
        if (p->ndocs >= p->lim->max_documents)
            goto bail;
        if (p->skim) {
            size_t ls = f.ls;
            int line = f.line;
            f.skim = 1;
            f.sk_state = 0;
            f.nks = 0;
            rc = fp_document(&f, &root);
            f.skim = 0;
            if (rc == FP_OK && (f.sk_state & SK_SKIP)) {
                p->ndocs++;
                p->fast_docs++;
                p->skimmed++;
                out = p->skim->skipped ? p->skim->skipped(p->skim->ctx) : DD_OK;
                if (out != DD_OK)
                    break;
                delivered++;
                after_doc = 1;
                continue;
            }
            if (rc == FP_NOMEM) {
                out = DD_ENOMEM;
                break;
            }
            fp_at(&f, ls, line); /* build it after all */
        }
        if (p->arena)
            ya_mark(p->arena);
        rc = fp_document(&f, &root);
        if (rc != FP_OK) {
            if (p->arena)
                ya_rewind(p->arena);
            else
                cJSON_Delete(root);
            p->npos = 0;
            stab_clear(&p->tab);
            if (rc == FP_NOMEM) {
                out = DD_ENOMEM;
                break;
            }
            goto bail;
        }
        p->ndocs++;
        p->fast_docs++;
        p->root = root;
        out = end_document(p, p->arena != NULL);
        if (out != DD_OK)
            break;
        delivered++;
        after_doc = 1;
    }
    free(f.sb);
    return out;
bail:
    free(f.sb);
    *skip = delivered;
    *bail = 1;
    return DD_OK;
}

enum dd_rc ydoc_parse_stream_skim(const char *buf, size_t len, const struct ydoc_limits *lim,
                                  const struct ydoc_sink *sink, const struct ydoc_skim *skim,
                                  unsigned flags, struct ydoc_stats *stats)
{
    struct ps p;
    enum dd_rc rc = DD_OK;
    size_t off = 0, skip = 0;
    int line_base = 0, utf8 = 0, bail;

    memset(&p, 0, sizeof(p));
    p.buf = buf;
    p.len = len;
    p.lim = lim;
    p.sink = sink;
    p.skim = skim && skim->skip ? skim : NULL;
    p.arena = sink->arena;
    p.handback = !(flags & YDOC_LIBYAML_ONLY) && fp_clean(buf, len, &utf8);
    if (!p.handback) {
        rc = run_libyaml(&p, 0, 0, 0);
        p.fallbacks++;
    }
    while (p.handback && rc == DD_OK) {
        rc = fp_stream(&p, utf8, &off, &line_base, &skip, &bail);
        if (rc != DD_OK || !bail)
            break;
        p.fallbacks++;
        rc = run_libyaml(&p, off, line_base, skip);
        if (rc != DD_OK || p.stop || p.resume == NO_RESUME)
            break;
        off = p.resume;
        line_base = p.resume_line - 1;
    }
    if (stats) {
        stats->fast_docs += p.fast_docs;
        stats->fallbacks += p.fallbacks;
        stats->skimmed += p.skimmed;
    }
    drop_document(&p);
    if (p.yp_live)
        yaml_parser_delete(&p.yp);
    free(p.stack);
    free(p.pos);
    free(p.tab.e);
    return rc != DD_OK ? rc : p.first;
}

enum dd_rc ydoc_parse_stream_ex(const char *buf, size_t len, const struct ydoc_limits *lim,
                                const struct ydoc_sink *sink, unsigned flags,
                                struct ydoc_stats *stats)
{
    return ydoc_parse_stream_skim(buf, len, lim, sink, NULL, flags, stats);
}

enum dd_rc ydoc_parse_stream(const char *buf, size_t len, const struct ydoc_limits *lim,
                             const struct ydoc_sink *sink)
{
    return ydoc_parse_stream_ex(buf, len, lim, sink, 0, NULL);
}
