/*
 * toml.c - a small strict TOML v1.0 reader (see toml.h for the subset).
 *
 * One pass, recursive descent over buf[0..len).  The input is validated as
 * UTF-8 up front, so the scanner below only ever looks at ASCII bytes to make
 * decisions and copies everything else through.  Values are allocated as
 * struct node, which starts with the public struct toml_value and adds what
 * the strictness rules need to remember about each table.
 */
#include "formats/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* containerd configs are a few KiB; 4 MiB leaves room for generated ones
 * while keeping a hostile file from costing more than a few hundred MiB. */
#define TOML_MAX_INPUT ((size_t)4 << 20)
/* Arrays and inline tables recurse; 64 levels is far beyond real configs and
 * keeps the C stack bounded. */
#define TOML_MAX_DEPTH 64
/* Bounds the depth of the tree (and so of toml_free's recursion) that one
 * header or dotted key can add. */
#define TOML_MAX_KEY_PARTS 64
/* A 4 MiB "a=[1,1,1,...]" would otherwise become two million allocations. */
#define TOML_MAX_VALUES ((size_t)1 << 20)
/* Tables with at least this many keys get a hash index: a flat file of
 * many keys would otherwise make duplicate detection quadratic. */
#define TOML_INDEX_MIN 8

enum {
    T_IMPLICIT = 1 << 0, /* created as the parent in a [header]; may be defined once later */
    T_DEFINED = 1 << 1,  /* defined by [header] or as an element of [[header]] */
    T_DOTTED = 1 << 2,   /* created (or extended) by a dotted key */
    T_INLINE = 1 << 3,   /* inline table or static array: closed once written */
    T_AOT = 1 << 4       /* array created by [[header]]; the only appendable array */
};

struct node {
    struct toml_value v; /* first, so a struct toml_value * from us is a struct node * */
    unsigned flags;      /* T_* */
    size_t *slot;        /* open-addressed index+1 into v.u.tab.kv; NULL when small */
    size_t nslot;        /* power of two, > 2 * number of keys */
};

struct parser {
    const char *p, *end; /* cursor and end of input */
    const char *bol;     /* start of the current line, for columns */
    int line;            /* 1-based line of p */
    int depth;           /* current array / inline table nesting */
    size_t nvalues;      /* values allocated so far */
    struct node *root;
    struct dd_err *err;  /* never NULL inside the parser */
};

static struct node *N(struct toml_value *v)
{
    return (struct node *)v;
}

/* ---- errors ------------------------------------------------------------ */

static enum dd_rc vfail(struct parser *ps, enum dd_rc rc, int line, int col, const char *fmt,
                        va_list ap)
{
    char msg[DD_ERR_MSG_MAX - 32];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    return dd_failf_at(ps->err, rc, line, col, "line %d: %s", line, msg);
}

__attribute__((format(printf, 2, 3))) static enum dd_rc perr(struct parser *ps, const char *fmt,
                                                              ...)
{
    va_list ap;
    enum dd_rc rc;

    va_start(ap, fmt);
    rc = vfail(ps, DD_EPARSE, ps->line, (int)(ps->p - ps->bol) + 1, fmt, ap);
    va_end(ap);
    return rc;
}

__attribute__((format(printf, 4, 5))) static enum dd_rc perr_at(struct parser *ps, enum dd_rc rc,
                                                                 int line, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rc = vfail(ps, rc, line, 0, fmt, ap);
    va_end(ap);
    return rc;
}

/* Keys can hold any character through escapes; keep messages on one line. */
static const char *show(const char *s, char *buf, size_t size)
{
    size_t i = 0;

    for (; *s && i + 4 < size; s++)
        buf[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
    if (*s) {
        buf[i++] = '.';
        buf[i++] = '.';
        buf[i++] = '.';
    }
    buf[i] = '\0';
    return buf;
}

static const char *type_name(enum toml_type t)
{
    switch (t) {
    case TOML_STRING: return "a string";
    case TOML_INT: return "an integer";
    case TOML_FLOAT: return "a float";
    case TOML_BOOL: return "a boolean";
    case TOML_ARRAY: return "an array";
    case TOML_TABLE: return "a table";
    }
    return "a value";
}

/* ---- values and tables ------------------------------------------------- */

static void node_free(struct toml_value *v)
{
    size_t i;

    if (!v)
        return;
    switch (v->type) {
    case TOML_STRING:
        free(v->u.s);
        break;
    case TOML_ARRAY:
        for (i = 0; i < v->u.arr.n; i++)
            node_free(v->u.arr.items[i]);
        free(v->u.arr.items);
        break;
    case TOML_TABLE:
        for (i = 0; i < v->u.tab.n; i++) {
            free(v->u.tab.kv[i].key);
            node_free(v->u.tab.kv[i].val);
        }
        free(v->u.tab.kv);
        free(N(v)->slot);
        break;
    default:
        break;
    }
    free(v);
}

void toml_free(struct toml_value *v)
{
    node_free(v);
}

static struct node *node_new(struct parser *ps, enum toml_type type, int line)
{
    struct node *n;

    if (++ps->nvalues > TOML_MAX_VALUES) {
        perr_at(ps, DD_ETOOBIG, line, "more than %zu values", TOML_MAX_VALUES);
        return NULL;
    }
    n = calloc(1, sizeof(*n));
    if (!n) {
        dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", line);
        return NULL;
    }
    n->v.type = type;
    n->v.line = line;
    return n;
}

static size_t hash_str(const char *s)
{
    size_t h = 2166136261u;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static void index_put(struct node *t, size_t i)
{
    size_t mask = t->nslot - 1, h = hash_str(t->v.u.tab.kv[i].key) & mask;

    while (t->slot[h])
        h = (h + 1) & mask;
    t->slot[h] = i + 1;
}

static enum dd_rc index_grow(struct parser *ps, struct node *t)
{
    size_t n = t->v.u.tab.n, want = 16, i;
    size_t *slot;

    while (want <= 2 * n)
        want *= 2;
    slot = calloc(want, sizeof(*slot));
    if (!slot)
        return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
    free(t->slot);
    t->slot = slot;
    t->nslot = want;
    for (i = 0; i < n; i++)
        index_put(t, i);
    return DD_OK;
}

static struct toml_value *tab_find(const struct node *t, const char *key)
{
    size_t i;

    if (t->slot) {
        size_t mask = t->nslot - 1, h = hash_str(key) & mask;

        for (; t->slot[h]; h = (h + 1) & mask)
            if (strcmp(t->v.u.tab.kv[t->slot[h] - 1].key, key) == 0)
                return t->v.u.tab.kv[t->slot[h] - 1].val;
        return NULL;
    }
    for (i = 0; i < t->v.u.tab.n; i++)
        if (strcmp(t->v.u.tab.kv[i].key, key) == 0)
            return t->v.u.tab.kv[i].val;
    return NULL;
}

/* Takes ownership of key and val, also on failure.  The caller has checked
 * that key is new. */
static enum dd_rc tab_add(struct parser *ps, struct node *t, char *key, struct node *val)
{
    struct toml_value *tv = &t->v;

    if (tv->u.tab.n == tv->u.tab.cap) {
        size_t cap = tv->u.tab.cap ? 2 * tv->u.tab.cap : 4;
        struct toml_kv *kv = realloc(tv->u.tab.kv, cap * sizeof(*kv));

        if (!kv) {
            free(key);
            node_free(&val->v);
            return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
        }
        tv->u.tab.kv = kv;
        tv->u.tab.cap = cap;
    }
    tv->u.tab.kv[tv->u.tab.n].key = key;
    tv->u.tab.kv[tv->u.tab.n].val = &val->v;
    tv->u.tab.n++;
    if (tv->u.tab.n >= TOML_INDEX_MIN) {
        if (2 * tv->u.tab.n >= t->nslot)
            return index_grow(ps, t);
        index_put(t, tv->u.tab.n - 1);
    }
    return DD_OK;
}

/* Takes ownership of item, also on failure. */
static enum dd_rc arr_push(struct parser *ps, struct node *a, struct node *item)
{
    struct toml_value *av = &a->v;

    if (av->u.arr.n == av->u.arr.cap) {
        size_t cap = av->u.arr.cap ? 2 * av->u.arr.cap : 4;
        struct toml_value **items = realloc(av->u.arr.items, cap * sizeof(*items));

        if (!items) {
            node_free(&item->v);
            return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
        }
        av->u.arr.items = items;
        av->u.arr.cap = cap;
    }
    av->u.arr.items[av->u.arr.n++] = &item->v;
    return DD_OK;
}

/* ---- string buffer ----------------------------------------------------- */

struct sbuf {
    char *s;
    size_t n, cap;
};

static int sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        char *ns;

        while (cap < b->n + n + 1)
            cap *= 2;
        ns = realloc(b->s, cap);
        if (!ns)
            return -1;
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int sb_putc(struct sbuf *b, char c)
{
    return sb_put(b, &c, 1);
}

/* Returns the finished string (empty strings allocated too). */
static char *sb_done(struct sbuf *b)
{
    if (!b->s && sb_put(b, "", 0) < 0)
        return NULL;
    return b->s;
}

/* ---- scanning helpers -------------------------------------------------- */

/* Length of a valid UTF-8 sequence at s (at most n bytes), 0 when invalid:
 * overlong forms, surrogates and code points above U+10FFFF are invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len, i;
    unsigned lo = 0x80, hi = 0xbf;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        len = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        len = 3;
        if (s[0] == 0xe0)
            lo = 0xa0;
        else if (s[0] == 0xed)
            hi = 0x9f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        len = 4;
        if (s[0] == 0xf0)
            lo = 0x90;
        else if (s[0] == 0xf4)
            hi = 0x8f;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

static enum dd_rc check_utf8(struct parser *ps, const char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)buf;
    size_t i = 0, k;
    int line = 1;

    while (i < len) {
        if (s[i] == '\n')
            line++;
        k = utf8_seq(s + i, len - i);
        if (!k)
            return perr_at(ps, DD_EPARSE, line, "invalid UTF-8");
        i += k;
    }
    return DD_OK;
}

static int is_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int is_bare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

static int is_dec(char c)
{
    return c >= '0' && c <= '9';
}

/* Length of the line break at p: 1 for LF, 2 for CRLF, else 0. */
static int nl_len(const struct parser *ps)
{
    if (ps->p < ps->end && *ps->p == '\n')
        return 1;
    if (ps->end - ps->p >= 2 && ps->p[0] == '\r' && ps->p[1] == '\n')
        return 2;
    return 0;
}

static void take_nl(struct parser *ps, int n)
{
    ps->p += n;
    ps->line++;
    ps->bol = ps->p;
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

static enum dd_rc skip_comment(struct parser *ps)
{
    if (ps->p >= ps->end || *ps->p != '#')
        return DD_OK;
    for (ps->p++; ps->p < ps->end && !nl_len(ps); ps->p++)
        if (is_ctl((unsigned char)*ps->p))
            return perr(ps, "control character U+%04X in comment", (unsigned char)*ps->p);
    return DD_OK;
}

/* Whitespace, comments and line breaks, as allowed between array elements. */
static enum dd_rc skip_blank(struct parser *ps)
{
    int n;

    for (;;) {
        skip_ws(ps);
        if (skip_comment(ps))
            return ps->err->rc;
        n = nl_len(ps);
        if (!n)
            return DD_OK;
        take_nl(ps, n);
    }
}

/* The rest of the line must be blank (or a comment); consumes the break. */
static enum dd_rc end_line(struct parser *ps, const char *what)
{
    int n;

    skip_ws(ps);
    if (skip_comment(ps))
        return ps->err->rc;
    if (ps->p >= ps->end)
        return DD_OK;
    n = nl_len(ps);
    if (!n) {
        if (*ps->p == '\r')
            return perr(ps, "carriage return without a line feed");
        return perr(ps, "unexpected text after %s", what);
    }
    take_nl(ps, n);
    return DD_OK;
}

/* ---- strings ----------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t utf8_put(unsigned long cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* \uXXXX or \UXXXXXXXX with p just after the u/U. */
static enum dd_rc unicode_escape(struct parser *ps, int digits, struct sbuf *b)
{
    unsigned long cp = 0;
    char out[4];
    int i, h;

    if (ps->end - ps->p < digits)
        return perr(ps, "escape needs %d hex digits", digits);
    for (i = 0; i < digits; i++) {
        h = hexval(ps->p[i]);
        if (h < 0)
            return perr(ps, "escape needs %d hex digits", digits);
        cp = cp * 16 + (unsigned long)h;
    }
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return perr(ps, "escape \\%c%.*s is not a Unicode scalar value", digits == 4 ? 'u' : 'U',
                    digits, ps->p);
    /* Values are NUL-terminated C strings; an embedded NUL would silently
     * cut them short, so refuse it instead. */
    if (cp == 0)
        return perr(ps, "NUL characters in strings are not supported");
    ps->p += digits;
    if (sb_put(b, out, utf8_put(cp, out)) < 0)
        return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
    return DD_OK;
}

/* p is at the backslash. */
static enum dd_rc escape(struct parser *ps, int multi, struct sbuf *b)
{
    char c;
    const char *s;

    ps->p++;
    if (ps->p >= ps->end)
        return perr(ps, "unterminated string");
    c = *ps->p;
    if (multi && (c == ' ' || c == '\t' || nl_len(ps))) {
        /* Line-ending backslash: only whitespace may follow it on its line,
         * and it swallows all whitespace and breaks up to the next text. */
        skip_ws(ps);
        if (!nl_len(ps))
            return ps->p >= ps->end ? perr(ps, "unterminated string")
                                    : perr(ps, "invalid escape: text after a line-ending backslash");
        for (;;) {
            int n = nl_len(ps);

            if (n)
                take_nl(ps, n);
            else if (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
                ps->p++;
            else
                return DD_OK;
        }
    }
    ps->p++;
    switch (c) {
    case 'b': s = "\b"; break;
    case 't': s = "\t"; break;
    case 'n': s = "\n"; break;
    case 'f': s = "\f"; break;
    case 'r': s = "\r"; break;
    case '"': s = "\""; break;
    case '\\': s = "\\"; break;
    case 'u': return unicode_escape(ps, 4, b);
    case 'U': return unicode_escape(ps, 8, b);
    default:
        ps->p--;
        if (is_ctl((unsigned char)c) || (unsigned char)c >= 0x80)
            return perr(ps, "invalid escape sequence");
        return perr(ps, "invalid escape sequence \\%c", c);
    }
    if (sb_putc(b, *s) < 0)
        return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
    return DD_OK;
}

/*
 * Basic ("...", """...""") and literal ('...', '''...''') strings, p at the
 * first quote.  On success *out is a new string.  CRLF inside multi-line
 * strings is normalised to LF, as the spec allows.
 */
static enum dd_rc parse_string(struct parser *ps, char **out)
{
    char q = *ps->p;
    int literal = q == '\'', start = ps->line, multi, n;
    struct sbuf b = {0};
    enum dd_rc rc = DD_OK;

    multi = ps->end - ps->p >= 3 && ps->p[1] == q && ps->p[2] == q;
    ps->p += multi ? 3 : 1;
    if (multi && (n = nl_len(ps)))
        take_nl(ps, n);
    for (;;) {
        unsigned char c;

        if (ps->p >= ps->end) {
            rc = perr_at(ps, DD_EPARSE, start, "unterminated string");
            break;
        }
        c = (unsigned char)*ps->p;
        if (c == (unsigned char)q) {
            const char *s = ps->p;

            if (!multi) {
                ps->p++;
                break;
            }
            while (ps->p < ps->end && *ps->p == q)
                ps->p++;
            n = (int)(ps->p - s);
            if (n > 5) {
                rc = perr(ps, "too many quotes at the end of a multi-line string");
                break;
            }
            if (sb_put(&b, s, (size_t)(n >= 3 ? n - 3 : n)) < 0)
                goto nomem;
            if (n >= 3)
                break;
            continue;
        }
        if (c == '\\' && !literal) {
            if ((rc = escape(ps, multi, &b)))
                break;
            continue;
        }
        if ((n = nl_len(ps))) {
            if (!multi) {
                rc = perr(ps, "unterminated string");
                break;
            }
            take_nl(ps, n);
            if (sb_putc(&b, '\n') < 0)
                goto nomem;
            continue;
        }
        if (is_ctl(c)) {
            if (c == '\r')
                rc = perr(ps, "carriage return without a line feed in string");
            else
                rc = perr(ps, "control character U+%04X in string (use an escape)", c);
            break;
        }
        if (sb_putc(&b, (char)c) < 0)
            goto nomem;
        ps->p++;
    }
    if (rc) {
        free(b.s);
        return rc;
    }
    *out = sb_done(&b);
    if (*out)
        return DD_OK;
nomem:
    free(b.s);
    return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
}

/* ---- keys -------------------------------------------------------------- */

struct key {
    char *part[TOML_MAX_KEY_PARTS]; /* owned until moved out (then NULL) */
    int n;
    int line;
};

static void key_release(struct key *k)
{
    int i;

    for (i = 0; i < k->n; i++)
        free(k->part[i]);
    k->n = 0;
}

/* Joins the first n parts with dots, for messages. */
static const char *key_show(const struct key *k, int n, char *buf, size_t size)
{
    size_t used = 0;
    int i;
    char one[128];

    buf[0] = '\0';
    for (i = 0; i < n && used + 1 < size; i++) {
        int w = snprintf(buf + used, size - used, "%s%s", i ? "." : "",
                         show(k->part[i] ? k->part[i] : "", one, sizeof(one)));
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

/* A dotted key: simple keys separated by dots with optional blanks. */
static enum dd_rc parse_key(struct parser *ps, struct key *k)
{
    k->n = 0;
    k->line = ps->line;
    for (;;) {
        char *part;

        skip_ws(ps);
        if (ps->p >= ps->end)
            return perr(ps, "expected a key");
        if (*ps->p == '"' || *ps->p == '\'') {
            if (ps->end - ps->p >= 3 && ps->p[1] == *ps->p && ps->p[2] == *ps->p)
                return perr(ps, "a multi-line string cannot be a key");
            if (parse_string(ps, &part))
                return ps->err->rc;
        } else {
            const char *s = ps->p;

            while (ps->p < ps->end && is_bare(*ps->p))
                ps->p++;
            if (ps->p == s) {
                unsigned char c = (unsigned char)*ps->p;

                if (is_ctl(c))
                    return perr(ps, "expected a key, found control character U+%04X", c);
                if (c == '=')
                    return perr(ps, "expected a key before '='");
                if (c >= 0x80)
                    return perr(ps, "expected a key (non-ASCII keys must be quoted)");
                return perr(ps, "expected a key, found '%c'", c);
            }
            part = strndup(s, (size_t)(ps->p - s));
            if (!part)
                return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
        }
        if (k->n == TOML_MAX_KEY_PARTS) {
            free(part);
            return perr_at(ps, DD_ETOOBIG, ps->line, "key has more than %d parts",
                           TOML_MAX_KEY_PARTS);
        }
        k->part[k->n++] = part;
        skip_ws(ps);
        if (ps->p >= ps->end || *ps->p != '.')
            return DD_OK;
        ps->p++;
    }
}

/* ---- values ------------------------------------------------------------ */

static enum dd_rc parse_value(struct parser *ps, struct node **out);
static enum dd_rc keyval(struct parser *ps, struct node *t);

static int is_value_end(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' || c == ']' ||
           c == '}' || c == '#';
}

/* digits (with single underscores between them) of the given base. */
static int digits_ok(const char *s, size_t n, int base)
{
    size_t i;

    if (n == 0)
        return 0;
    for (i = 0; i < n; i++) {
        int d;

        if (s[i] == '_') {
            if (i == 0 || i + 1 == n || s[i + 1] == '_')
                return 0;
            continue;
        }
        d = hexval(s[i]);
        if (d < 0 || d >= base)
            return 0;
    }
    return 1;
}

/* s[0..n) already passed digits_ok; returns 0 on overflow past limit. */
static int accumulate(const char *s, size_t n, int base, uint64_t limit, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        uint64_t d;

        if (s[i] == '_')
            continue;
        d = (uint64_t)hexval(s[i]);
        if (v > (limit - d) / (uint64_t)base)
            return 0;
        v = v * (uint64_t)base + d;
    }
    *out = v;
    return 1;
}

static enum dd_rc parse_int(struct parser *ps, const char *s, size_t n, struct node *v)
{
    int neg = 0, base = 10;
    uint64_t u;

    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
        base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
        s += 2;
        n -= 2;
    } else {
        if (s[0] == '+' || s[0] == '-') {
            neg = s[0] == '-';
            s++;
            n--;
            if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b'))
                return perr(ps, "a sign is not allowed on hex, octal or binary integers");
        }
        if (n > 1 && s[0] == '0')
            return perr(ps, "leading zeros are not allowed in integers");
    }
    if (!digits_ok(s, n, base))
        return perr(ps, "invalid integer");
    if (!accumulate(s, n, base, neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, &u))
        return perr(ps, "integer does not fit in 64 bits");
    v->v.type = TOML_INT;
    if (!neg)
        v->v.u.i = (int64_t)u;
    else
        v->v.u.i = u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
    return DD_OK;
}

/* Float grammar of TOML: sign? int ( frac exp? | exp ), with int as for
 * decimal integers and at least one digit on each side of the dot. */
static int float_ok(const char *s, size_t n)
{
    size_t i = 0, j;

    if (s[i] == '+' || s[i] == '-')
        i++;
    for (j = i; j < n && (is_dec(s[j]) || s[j] == '_'); j++)
        ;
    if (!digits_ok(s + i, j - i, 10) || (j - i > 1 && s[i] == '0'))
        return 0;
    i = j;
    if (i < n && s[i] == '.') {
        i++;
        for (j = i; j < n && (is_dec(s[j]) || s[j] == '_'); j++)
            ;
        if (!digits_ok(s + i, j - i, 10))
            return 0;
        i = j;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!digits_ok(s + i, n - i, 10))
            return 0;
        i = n;
    }
    return i == n;
}

static enum dd_rc parse_float(struct parser *ps, const char *s, size_t n, struct node *v)
{
    char *buf, *endp;
    size_t i, k = 0;
    double d;

    if (!float_ok(s, n))
        return perr(ps, "invalid number");
    buf = malloc(n + 1);
    if (!buf)
        return dd_failf(ps->err, DD_ENOMEM, "line %d: out of memory", ps->line);
    for (i = 0; i < n; i++)
        if (s[i] != '_')
            buf[k++] = s[i];
    buf[k] = '\0';
    /* The grammar is checked above, so strtod only converts; this assumes the
     * C numeric locale (dra-doctor never calls setlocale). */
    errno = 0;
    d = strtod(buf, &endp);
    i = (size_t)(endp - buf);
    free(buf);
    if (i != k)
        return perr(ps, "invalid number");
    if (errno == ERANGE && (d > 1.0 || d < -1.0))
        return perr(ps, "float is out of range");
    v->v.type = TOML_FLOAT;
    v->v.u.f = d;
    return DD_OK;
}

/* 0x... (also with a sign, which parse_int rejects): its digits may be 'e'. */
static int is_hex_int(const char *s, size_t n)
{
    if (n && (s[0] == '+' || s[0] == '-')) {
        s++;
        n--;
    }
    return n >= 2 && s[0] == '0' && s[1] == 'x';
}

/* Everything that is not a string, array or inline table. */
static enum dd_rc parse_scalar(struct parser *ps, struct node *v)
{
    const char *s = ps->p;
    size_t n;

    while (ps->p < ps->end && !is_value_end(*ps->p))
        ps->p++;
    n = (size_t)(ps->p - s);
    ps->p = s; /* errors point at the start of the value */
    if (n == 0)
        return perr(ps, "expected a value");
    if ((n >= 5 && is_dec(s[0]) && is_dec(s[1]) && is_dec(s[2]) && is_dec(s[3]) && s[4] == '-') ||
        (n >= 3 && is_dec(s[0]) && is_dec(s[1]) && s[2] == ':'))
        return perr(ps, "dates and times are not supported");
    if ((n == 4 && memcmp(s, "true", 4) == 0) || (n == 5 && memcmp(s, "false", 5) == 0)) {
        v->v.type = TOML_BOOL;
        v->v.u.b = n == 4;
    } else if ((n == 3 && (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0)) ||
               (n == 4 && (s[0] == '+' || s[0] == '-') &&
                (memcmp(s + 1, "inf", 3) == 0 || memcmp(s + 1, "nan", 3) == 0))) {
        int neg = s[0] == '-';
        const char *w = n == 4 ? s + 1 : s;

        v->v.type = TOML_FLOAT;
        v->v.u.f = w[0] == 'i' ? (neg ? -HUGE_VAL : HUGE_VAL) : (neg ? -NAN : NAN);
    } else if (!is_dec(s[0]) && s[0] != '+' && s[0] != '-') {
        return perr(ps, "invalid value (strings must be quoted)");
    } else if (!is_hex_int(s, n) &&
               (memchr(s, '.', n) || memchr(s, 'e', n) || memchr(s, 'E', n))) {
        if (parse_float(ps, s, n, v))
            return ps->err->rc;
    } else if (parse_int(ps, s, n, v)) {
        return ps->err->rc;
    }
    ps->p = s + n;
    return DD_OK;
}

static enum dd_rc enter(struct parser *ps)
{
    if (++ps->depth > TOML_MAX_DEPTH)
        return perr_at(ps, DD_ETOOBIG, ps->line, "arrays and inline tables nest deeper than %d",
                       TOML_MAX_DEPTH);
    return DD_OK;
}

static enum dd_rc parse_array(struct parser *ps, struct node *a)
{
    int start = ps->line;

    if (enter(ps))
        return ps->err->rc;
    ps->p++;
    for (;;) {
        struct node *item;

        if (skip_blank(ps))
            return ps->err->rc;
        if (ps->p >= ps->end)
            return perr_at(ps, DD_EPARSE, start, "unterminated array");
        if (*ps->p == ']')
            break;
        if (parse_value(ps, &item) || arr_push(ps, a, item))
            return ps->err->rc;
        if (skip_blank(ps))
            return ps->err->rc;
        if (ps->p >= ps->end)
            return perr_at(ps, DD_EPARSE, start, "unterminated array");
        if (*ps->p == ']')
            break;
        if (*ps->p != ',')
            return perr(ps, "expected ',' or ']' after an array element");
        ps->p++;
    }
    ps->p++;
    ps->depth--;
    return DD_OK;
}

static enum dd_rc one_line(struct parser *ps)
{
    return perr(ps, "unterminated inline table (inline tables must be on one line)");
}

static enum dd_rc parse_inline(struct parser *ps, struct node *t)
{
    if (enter(ps))
        return ps->err->rc;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '}') {
        ps->p++;
        goto done;
    }
    for (;;) {
        if (ps->p >= ps->end || nl_len(ps) || *ps->p == '\r' || keyval(ps, t))
            return ps->err->rc ? ps->err->rc : one_line(ps);
        skip_ws(ps);
        if (ps->p >= ps->end || nl_len(ps) || *ps->p == '\r')
            return one_line(ps);
        if (*ps->p == '}') {
            ps->p++;
            break;
        }
        if (*ps->p != ',')
            return perr(ps, "expected ',' or '}' after a value in an inline table");
        ps->p++;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '}')
            return perr(ps, "trailing comma in an inline table");
    }
done:
    t->flags |= T_INLINE;
    ps->depth--;
    return DD_OK;
}

/* On success *out is a new value; on failure nothing is left allocated. */
static enum dd_rc parse_value(struct parser *ps, struct node **out)
{
    struct node *v;
    enum dd_rc rc;
    char c;

    if (ps->p >= ps->end || nl_len(ps))
        return perr(ps, "expected a value");
    c = *ps->p;
    v = node_new(ps, c == '[' ? TOML_ARRAY : c == '{' ? TOML_TABLE : TOML_STRING, ps->line);
    if (!v)
        return ps->err->rc;
    if (c == '"' || c == '\'')
        rc = parse_string(ps, &v->v.u.s);
    else if (c == '[') {
        v->flags = T_INLINE;
        rc = parse_array(ps, v);
    } else if (c == '{')
        rc = parse_inline(ps, v);
    else
        rc = parse_scalar(ps, v);
    if (rc) {
        node_free(&v->v);
        return rc;
    }
    *out = v;
    return DD_OK;
}

/* ---- key/value pairs and headers --------------------------------------- */

/* key = value into table t (the current section or an inline table). */
static enum dd_rc keyval(struct parser *ps, struct node *t)
{
    struct key k;
    struct node *val;
    struct toml_value *old;
    char name[256];
    int i;

    if (parse_key(ps, &k))
        goto out;
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '=') {
        perr(ps, "expected '=' after key %s%s", key_show(&k, k.n, name, sizeof(name)),
             ps->p < ps->end && (unsigned char)*ps->p >= 0x80
                 ? " (non-ASCII keys must be quoted)"
                 : "");
        goto out;
    }
    ps->p++;
    skip_ws(ps);
    for (i = 0; i < k.n - 1; i++) {
        old = tab_find(t, k.part[i]);
        if (!old) {
            struct node *nt = node_new(ps, TOML_TABLE, k.line);

            if (!nt)
                goto out;
            nt->flags = T_DOTTED;
            if (tab_add(ps, t, k.part[i], nt)) {
                k.part[i] = NULL;
                goto out;
            }
            k.part[i] = NULL;
            t = nt;
            continue;
        }
        if (old->type != TOML_TABLE) {
            perr(ps, "key %s is already %s (line %d), not a table",
                 key_show(&k, i + 1, name, sizeof(name)), type_name(old->type), old->line);
            goto out;
        }
        if (N(old)->flags & T_INLINE) {
            perr(ps, "cannot add keys to inline table %s (line %d)",
                 key_show(&k, i + 1, name, sizeof(name)), old->line);
            goto out;
        }
        if ((N(old)->flags & T_DEFINED) ||
            !(N(old)->flags & (T_DOTTED | T_IMPLICIT))) {
            perr(ps, "cannot add keys to table %s defined on line %d",
                 key_show(&k, i + 1, name, sizeof(name)), old->line);
            goto out;
        }
        N(old)->flags |= T_DOTTED;
        t = N(old);
    }
    old = tab_find(t, k.part[k.n - 1]);
    if (old) {
        perr_at(ps, DD_EPARSE, k.line, "duplicate key %s (first defined on line %d)",
                key_show(&k, k.n, name, sizeof(name)), old->line);
        goto out;
    }
    if (parse_value(ps, &val))
        goto out;
    tab_add(ps, t, k.part[k.n - 1], val);
    k.part[k.n - 1] = NULL;
out:
    key_release(&k);
    return ps->err->rc;
}

/* Steps from t into the table named by part i of a header; creates it
 * implicitly when missing. */
static struct node *header_step(struct parser *ps, struct node *t, struct key *k, int i)
{
    struct toml_value *v = tab_find(t, k->part[i]);
    struct node *nt;
    char name[256];

    if (!v) {
        nt = node_new(ps, TOML_TABLE, k->line);
        if (!nt)
            return NULL;
        nt->flags = T_IMPLICIT;
        if (tab_add(ps, t, k->part[i], nt)) {
            k->part[i] = NULL;
            return NULL;
        }
        k->part[i] = NULL;
        return nt;
    }
    if (v->type == TOML_ARRAY && (N(v)->flags & T_AOT))
        return N(v->u.arr.items[v->u.arr.n - 1]);
    if (v->type != TOML_TABLE) {
        perr_at(ps, DD_EPARSE, k->line, "key %s is already %s (line %d), not a table",
                key_show(k, i + 1, name, sizeof(name)), type_name(v->type), v->line);
        return NULL;
    }
    if (N(v)->flags & T_INLINE) {
        perr_at(ps, DD_EPARSE, k->line, "cannot add to inline table %s defined on line %d",
                key_show(k, i + 1, name, sizeof(name)), v->line);
        return NULL;
    }
    return N(v);
}

/* [a.b.c] or [[a.b.c]]; on success *cur is the table that following
 * key/value lines go into. */
static enum dd_rc header(struct parser *ps, struct node **cur)
{
    struct key k = {0};
    struct node *t = ps->root, *nt;
    struct toml_value *v;
    char name[256];
    int aot, i, line = ps->line;

    ps->p++;
    aot = ps->p < ps->end && *ps->p == '[';
    if (aot)
        ps->p++;
    if (parse_key(ps, &k))
        goto out;
    if (ps->p >= ps->end || *ps->p != ']' ||
        (aot && (ps->end - ps->p < 2 || ps->p[1] != ']'))) {
        perr(ps, "expected '%s' to close the table header", aot ? "]]" : "]");
        goto out;
    }
    ps->p += aot ? 2 : 1;
    if (end_line(ps, "table header"))
        goto out;
    for (i = 0; i < k.n - 1; i++)
        if (!(t = header_step(ps, t, &k, i)))
            goto out;
    key_show(&k, k.n, name, sizeof(name));
    v = tab_find(t, k.part[k.n - 1]);
    if (!aot) {
        if (!v) {
            if (!(nt = node_new(ps, TOML_TABLE, line)))
                goto out;
            nt->flags = T_DEFINED;
            if (tab_add(ps, t, k.part[k.n - 1], nt) == DD_OK)
                *cur = nt;
            k.part[k.n - 1] = NULL;
        } else if (v->type == TOML_TABLE && (N(v)->flags & T_IMPLICIT) &&
                   !(N(v)->flags & (T_DEFINED | T_DOTTED | T_INLINE))) {
            N(v)->flags |= T_DEFINED;
            v->line = line;
            *cur = N(v);
        } else if (v->type == TOML_TABLE && (N(v)->flags & T_INLINE)) {
            perr_at(ps, DD_EPARSE, line, "cannot add to inline table %s defined on line %d", name,
                    v->line);
        } else if (v->type == TOML_TABLE) {
            perr_at(ps, DD_EPARSE, line, "table [%s] is defined twice (first on line %d)", name,
                    v->line);
        } else if (v->type == TOML_ARRAY && (N(v)->flags & T_AOT)) {
            perr_at(ps, DD_EPARSE, line, "[%s] is an array of tables (line %d), not a table",
                    name, v->line);
        } else {
            perr_at(ps, DD_EPARSE, line, "key %s is already %s (line %d), not a table", name,
                    type_name(v->type), v->line);
        }
        goto out;
    }
    if (!v) {
        if (!(nt = node_new(ps, TOML_ARRAY, line)))
            goto out;
        nt->flags = T_AOT;
        if (tab_add(ps, t, k.part[k.n - 1], nt)) {
            k.part[k.n - 1] = NULL;
            goto out;
        }
        k.part[k.n - 1] = NULL;
        v = &nt->v;
    } else if (v->type != TOML_ARRAY || !(N(v)->flags & T_AOT)) {
        perr_at(ps, DD_EPARSE, line, "[[%s]] cannot extend %s defined on line %d", name,
                v->type == TOML_ARRAY ? "a static array" : type_name(v->type), v->line);
        goto out;
    }
    if (!(nt = node_new(ps, TOML_TABLE, line)))
        goto out;
    nt->flags = T_DEFINED;
    if (arr_push(ps, N(v), nt) == DD_OK)
        *cur = nt;
out:
    key_release(&k);
    return ps->err->rc;
}

static enum dd_rc parse_document(struct parser *ps)
{
    struct node *cur = ps->root;

    /* A UTF-8 byte order mark is not TOML, but editors write it. */
    if (ps->end - ps->p >= 3 && memcmp(ps->p, "\xef\xbb\xbf", 3) == 0)
        ps->p += 3;
    for (;;) {
        int n;

        skip_ws(ps);
        if (ps->p >= ps->end)
            return DD_OK;
        if ((n = nl_len(ps))) {
            take_nl(ps, n);
            continue;
        }
        if (*ps->p == '#' || *ps->p == '\r') {
            if (end_line(ps, "comment"))
                return ps->err->rc;
        } else if (*ps->p == '[') {
            if (header(ps, &cur))
                return ps->err->rc;
        } else if (keyval(ps, cur) || end_line(ps, "value")) {
            return ps->err->rc;
        }
    }
}

struct toml_value *toml_parse(const char *buf, size_t len, struct dd_err *err)
{
    struct dd_err local;
    struct parser ps;

    if (!err)
        err = &local;
    dd_err_clear(err);
    memset(&ps, 0, sizeof(ps));
    ps.err = err;
    ps.line = 1;
    if (!buf && len) {
        dd_failf(err, DD_EINVAL, "no input buffer");
        return NULL;
    }
    if (len > TOML_MAX_INPUT) {
        dd_failf(err, DD_ETOOBIG, "input is %zu bytes, more than the %zu allowed", len,
                 TOML_MAX_INPUT);
        return NULL;
    }
    ps.p = ps.bol = buf ? buf : "";
    ps.end = ps.p + len;
    if (check_utf8(&ps, ps.p, len))
        return NULL;
    ps.root = node_new(&ps, TOML_TABLE, 1);
    if (!ps.root)
        return NULL;
    ps.root->flags = T_DEFINED;
    if (parse_document(&ps)) {
        node_free(&ps.root->v);
        return NULL;
    }
    return &ps.root->v;
}

/* ---- lookups ----------------------------------------------------------- */

const struct toml_value *toml_get(const struct toml_value *t, const char *key)
{
    size_t i;

    if (!t || !key || t->type != TOML_TABLE)
        return NULL;
    for (i = 0; i < t->u.tab.n; i++)
        if (strcmp(t->u.tab.kv[i].key, key) == 0)
            return t->u.tab.kv[i].val;
    return NULL;
}

const struct toml_value *toml_get_path(const struct toml_value *t, const char *const *keys)
{
    if (!keys)
        return NULL;
    for (; t && *keys; keys++)
        t = toml_get(t, *keys);
    return t;
}
