/*
 * cel_parse.c - recursive-descent parser for the cel-spec grammar.
 *
 * Each production only consumes tokens and calls an AST constructor; type
 * rules live in cel_check.c.  `&&` and `||` chains are built as balanced
 * trees (as CEL-Go does) so that a long, flat conjunction of selectors does
 * not count against the depth limit; the operators are commutative in CEL,
 * so the shape does not change the result.
 *
 * The depth limit (max_depth, 250 in Kubernetes) is cel-go's parser's
 * (parser/parser.go), which applies it twice:
 * - its ANTLR parse listener counts, for each grammar rule, the invocations of
 *   that rule in progress, and refuses the expression when one count exceeds
 *   the limit ("expression recursion limit exceeded").  A left-recursive
 *   rule (relation, calc, member) loops over a flat chain `a + b + c`,
 *   `a.b.c` without adding a count, but its right operand is a new invocation:
 *   `1 + (1 + (...))` counts calc twice a level.  Only expr, relation and calc
 *   need counting: every other rule's count stays at or below one of these.
 * - its visitor then counts the nesting of ternaries, relations, arithmetic,
 *   selections, indexes and member calls in the tree ("max recursion depth
 *   exceeded"): a chain `a.b.c` counts one a link.
 * The listener also bounds this parser's recursion (every nesting goes
 * through parse_expr), the two together the height of the tree.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

struct tok {
    int type;
    size_t off, len; /* bytes in the source */
    int line, col;
};

struct parser {
    struct cel_program *p;
    const char *src;
    size_t len;
    size_t pos;       /* next byte to scan */
    int line, col;    /* position of src[pos] */
    struct tok tok;   /* lookahead */
    int rule[3], max_depth; /* open invocations of cel-go's expr, relation, calc */
    struct dd_err *err;
    enum dd_rc rc;    /* first failure; parsing stops at it */
};

static const char *const op_names[] = {
#define CEL__OP_NAME(name, tok, fn) fn,
    CEL_BINOPS(CEL__OP_NAME)
#undef CEL__OP_NAME
    "!_", "-_"
};

const char *cel__op_name(int op)
{
    if (op < 0 || (size_t)op >= sizeof(op_names) / sizeof(op_names[0]))
        return "?";
    return op_names[op];
}

/* ---- AST constructors ------------------------------------------------------- */

struct cel__node *cel__node_new(struct cel__arena *a, enum cel__nkind kind, int line, int col)
{
    struct cel__node *n = cel__alloc(a, sizeof(*n));

    if (!n)
        return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    return n;
}

/* Whether cel-go's visitor counts a level for n (comprehensions are member calls). */
static int visit_level(const struct cel__node *n)
{
    switch (n->kind) {
    case CEL_N_COND: case CEL_N_SELECT: case CEL_N_INDEX: case CEL_N_COMP: return 1;
    case CEL_N_BINARY: return n->op != CEL_OP_AND && n->op != CEL_OP_OR;
    case CEL_N_CALL: return n->recv;
    default: return 0;
    }
}

int cel__node_add(struct cel__arena *a, struct cel__node *n, struct cel__node *k)
{
    /* Children arrays grow by doubling inside the arena; the old array is
     * abandoned, which at most doubles the memory of long lists. */
    if ((n->nkid & (n->nkid - 1)) == 0) {
        size_t cap = n->nkid ? n->nkid * 2 : 1;
        struct cel__node **kid = cel__alloc(a, cap * sizeof(*kid));
        if (!kid)
            return -1;
        if (n->nkid)
            memcpy(kid, n->kid, n->nkid * sizeof(*kid));
        n->kid = kid;
    }
    n->kid[n->nkid++] = k;
    if (k->depth + visit_level(k) > n->depth)
        n->depth = k->depth + visit_level(k);
    return 0;
}

/* ---- Error reporting ----------------------------------------------------------- */

/* Byte offset of the 1-based (line, col) in src; col counts code points. */
static size_t offset_of(const char *src, size_t len, int line, int col, size_t *line_start)
{
    size_t i = 0;
    int l = 1, c = 1;

    while (i < len && l < line) {
        if (src[i] == '\n')
            l++;
        i++;
    }
    *line_start = i;
    while (i < len && c < col && src[i] != '\n') {
        i++;
        while (i < len && ((unsigned char)src[i] & 0xC0) == 0x80)
            i++;
        c++;
    }
    return i;
}

enum dd_rc cel__fail_at(struct dd_err *err, enum dd_rc rc, const char *src, size_t len, int line,
                        int col, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    size_t ls, at, start, end;
    int ellipsis, ncaret = 0;

    if (!err)
        return rc;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    at = offset_of(src, len, line, col, &ls);
    /* Show at most ~200 bytes of a long line, centred on the fault, so the
     * caret line still fits in DD_ERR_MSG_MAX. */
    start = ls;
    ellipsis = 0;
    if (at - ls > 120) {
        start = at - 100;
        while (start < at && ((unsigned char)src[start] & 0xC0) == 0x80)
            start++;
        ellipsis = 1;
    }
    end = start;
    while (end < len && src[end] != '\n' && src[end] != '\r' && end - start < 200)
        end++;
    while (end > start && end < len && ((unsigned char)src[end] & 0xC0) == 0x80)
        end--;
    char caret[256];
    size_t ci = 0;
    if (ellipsis) {
        memcpy(caret, "   ", 3);
        ci = 3;
    }
    for (size_t i = start; i < at && ci < sizeof(caret) - 2; i++) {
        if (((unsigned char)src[i] & 0xC0) == 0x80)
            continue;
        caret[ci++] = src[i] == '\t' ? '\t' : ' ';
        ncaret++;
    }
    caret[ci++] = '^';
    caret[ci] = '\0';
    err->line = line;
    err->col = col;
    err->rc = rc;
    snprintf(err->msg, sizeof(err->msg), "%d:%d: %s\n | %s%.*s\n | %s", line, col, what,
             ellipsis ? "..." : "", (int)(end - start), src + start, caret);
    /* Control characters in the echoed source would garble a terminal. */
    for (char *m = err->msg; *m; m++)
        if ((unsigned char)*m < 0x20 && *m != '\n' && *m != '\t')
            *m = ' ';
    return rc;
}

static int failed(struct parser *ps)
{
    return ps->rc != DD_OK;
}

static void fail_tok(struct parser *ps, const struct tok *t, enum dd_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_tok(struct parser *ps, const struct tok *t, enum dd_rc rc, const char *fmt, ...)
{
    char what[400];
    va_list ap;

    if (failed(ps))
        return;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    ps->rc = cel__fail_at(ps->err, rc, ps->src, ps->len, t->line, t->col, "%s", what);
}

static void fail_oom(struct parser *ps)
{
    if (!failed(ps))
        ps->rc = dd_failf(ps->err, DD_ENOMEM, "out of memory while parsing CEL");
}

/* "mismatched input 'X' expecting Y" in CEL-Go's words. */
static void syntax_error(struct parser *ps, const char *expecting)
{
    const struct tok *t = &ps->tok;

    if (t->type == CEL_TK_EOF) {
        fail_tok(ps, t, DD_EPARSE, "Syntax error: mismatched input '<EOF>' expecting %s",
                 expecting);
    } else if (t->type == CEL_TK_ILLEGAL) {
        int n = t->len > 20 ? 20 : (int)t->len;
        fail_tok(ps, t, DD_EPARSE, "Syntax error: token recognition error at: '%.*s'", n,
                 ps->src + t->off);
    } else if (t->type == CEL_TK_RESERVED) {
        fail_tok(ps, t, DD_EPARSE, "Syntax error: reserved identifier: %.*s", (int)t->len,
                 ps->src + t->off);
    } else {
        int n = t->len > 40 ? 40 : (int)t->len;
        fail_tok(ps, t, DD_EPARSE, "Syntax error: mismatched input '%.*s' expecting %s", n,
                 ps->src + t->off, expecting);
    }
}

/* ---- Token stream ----------------------------------------------------------------- */

static void advance_pos(struct parser *ps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)ps->src[ps->pos + i];
        if (ch == '\n') {
            ps->line++;
            ps->col = 1;
        } else if ((ch & 0xC0) != 0x80) {
            ps->col++;
        }
    }
    ps->pos += n;
}

static void next(struct parser *ps)
{
    for (;;) {
        int type;
        size_t n = cel__next_token(ps->src + ps->pos, ps->len - ps->pos, &type);

        ps->tok.type = type;
        ps->tok.off = ps->pos;
        ps->tok.len = n;
        ps->tok.line = ps->line;
        ps->tok.col = ps->col;
        advance_pos(ps, n);
        if (type != CEL_TK_SPACE && type != CEL_TK_COMMENT)
            return;
    }
}

static int accept(struct parser *ps, int type)
{
    if (ps->tok.type != type)
        return 0;
    next(ps);
    return 1;
}

static int expect(struct parser *ps, int type, const char *expecting)
{
    if (accept(ps, type))
        return 1;
    syntax_error(ps, expecting);
    return 0;
}

static struct cel__node *new_node(struct parser *ps, enum cel__nkind kind, const struct tok *t)
{
    struct cel__node *n = cel__node_new(&ps->p->arena, kind, t->line, t->col);

    if (!n)
        fail_oom(ps);
    return n;
}

static int add_kid(struct parser *ps, struct cel__node *n, struct cel__node *k)
{
    if (cel__node_add(&ps->p->arena, n, k) != 0) {
        fail_oom(ps);
        return -1;
    }
    return 0;
}

static struct cel__node *binary(struct parser *ps, int op, const struct tok *at,
                                struct cel__node *l, struct cel__node *r)
{
    struct cel__node *n = new_node(ps, CEL_N_BINARY, at);

    if (!n || add_kid(ps, n, l) || add_kid(ps, n, r))
        return NULL;
    n->op = op;
    return n;
}

enum { R_EXPR, R_RELATION, R_CALC };

/* An invocation of cel-go's grammar rule r begins (see the top of the file). */
static int enter(struct parser *ps, int r)
{
    if (++ps->rule[r] > ps->max_depth) {
        fail_tok(ps, &ps->tok, DD_ETOOBIG, "expression recursion limit exceeded: %d",
                 ps->max_depth);
        return 0;
    }
    return 1;
}

static void leave(struct parser *ps, int r)
{
    ps->rule[r]--;
}

/* ---- Grammar ------------------------------------------------------------------------- */

static struct cel__node *parse_expr(struct parser *ps);

static struct cel__node *literal_int(struct parser *ps, const struct tok *t, int is_uint)
{
    const char *s = ps->src + t->off;
    char buf[64];
    size_t n = t->len - (is_uint ? 1 : 0);
    struct cel__node *node;
    uint64_t v;
    char *end;

    if (n >= sizeof(buf)) {
        fail_tok(ps, t, DD_EPARSE, "integer literal out of range: %.*s", 40, s);
        return NULL;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtoull(buf, &end, 0);
    /* strtoull would treat a leading 0 as octal; CEL decimals are decimal. */
    if (buf[0] == '0' && buf[1] != 'x' && buf[1] != 'X' && n > 1)
        v = strtoull(buf, &end, 10);
    if (errno == ERANGE || (!is_uint && v > (uint64_t)INT64_MAX + 1)) {
        fail_tok(ps, t, DD_EPARSE, "integer literal out of range: %s", buf);
        return NULL;
    }
    node = new_node(ps, is_uint ? CEL_N_UINT : CEL_N_INT, t);
    if (!node)
        return NULL;
    if (is_uint) {
        node->lit.u = v;
    } else if (v == (uint64_t)INT64_MAX + 1) {
        /* Only valid as the operand of unary minus: marked, folded there. */
        node->lit.u = v;
        node->op = 1;
    } else {
        node->lit.i = (int64_t)v;
    }
    return node;
}

static struct cel__node *literal_string(struct parser *ps, const struct tok *t, int is_bytes)
{
    struct cel__node *n = new_node(ps, is_bytes ? CEL_N_BYTES : CEL_N_STRING, t);
    char *out;
    size_t outlen, bad;
    int rc;

    if (!n)
        return NULL;
    rc = cel__unescape(&ps->p->arena, ps->src + t->off, t->len, is_bytes, &out, &outlen, &bad);
    if (rc == -2) {
        fail_oom(ps);
        return NULL;
    }
    if (rc != 0) {
        struct tok at = *t;
        /* Columns count code points; the escape's offset is in bytes. */
        for (size_t i = 0; i < bad; i++)
            if (((unsigned char)ps->src[t->off + i] & 0xC0) != 0x80) {
                if (ps->src[t->off + i] == '\n') {
                    at.line++;
                    at.col = 1;
                } else {
                    at.col++;
                }
            }
        fail_tok(ps, &at, DD_EPARSE, "Syntax error: invalid escape sequence in %s literal",
                 is_bytes ? "bytes" : "string");
        return NULL;
    }
    n->lit.str.s = out;
    n->lit.str.n = outlen;
    return n;
}

/* args := [expr {',' expr}] ')' ; the '(' is already consumed. */
static int parse_args(struct parser *ps, struct cel__node *call)
{
    if (accept(ps, CEL_TK_RPAREN))
        return 0;
    for (;;) {
        struct cel__node *a = parse_expr(ps);
        if (!a || add_kid(ps, call, a))
            return -1;
        if (accept(ps, CEL_TK_COMMA))
            continue;
        if (!expect(ps, CEL_TK_RPAREN, "{',', ')'}"))
            return -1;
        return 0;
    }
}

static const char *tok_text(struct parser *ps, const struct tok *t)
{
    char *s = cel__strndup(&ps->p->arena, ps->src + t->off, t->len);

    if (!s)
        fail_oom(ps);
    return s;
}

/* has(x.f): the only global macro. */
static struct cel__node *macro_has(struct parser *ps, struct cel__node *call)
{
    struct cel__node *arg;

    if (call->nkid != 1 || call->kid[0]->kind != CEL_N_SELECT) {
        struct tok at = {0, 0, 0, call->line, call->col};
        fail_tok(ps, &at, DD_EPARSE, "invalid argument to has() macro");
        return NULL;
    }
    arg = call->kid[0];
    arg->test_only = 1;
    return arg;
}

/* Receiver-style macros: name, arguments after the target, library. */
static const struct {
    const char *name;
    int macro;
    size_t nargs;
    enum cel__lib lib;
} macros[] = {
    {"all", CEL_M_ALL, 2, CEL_LIB_STD},
    {"exists", CEL_M_EXISTS, 2, CEL_LIB_STD},
    {"exists_one", CEL_M_EXISTS_ONE, 2, CEL_LIB_STD},
    {"map", CEL_M_MAP, 2, CEL_LIB_STD},
    {"map", CEL_M_MAP, 3, CEL_LIB_STD},
    {"filter", CEL_M_FILTER, 2, CEL_LIB_STD},
    {"all", CEL_M_ALL2, 3, CEL_LIB_TWOVAR},
    {"exists", CEL_M_EXISTS2, 3, CEL_LIB_TWOVAR},
    {"existsOne", CEL_M_EXISTS_ONE2, 3, CEL_LIB_TWOVAR},
    {"exists_one", CEL_M_EXISTS_ONE2, 3, CEL_LIB_TWOVAR},
    {"transformList", CEL_M_TLIST, 3, CEL_LIB_TWOVAR},
    {"transformList", CEL_M_TLIST, 4, CEL_LIB_TWOVAR},
    {"transformMap", CEL_M_TMAP, 3, CEL_LIB_TWOVAR},
    {"transformMap", CEL_M_TMAP, 4, CEL_LIB_TWOVAR},
    {"transformMapEntry", CEL_M_TMAPENTRY, 3, CEL_LIB_TWOVAR},
    {"transformMapEntry", CEL_M_TMAPENTRY, 4, CEL_LIB_TWOVAR},
    {"optMap", CEL_M_OPTMAP, 2, CEL_LIB_OPTIONAL},
    {"optFlatMap", CEL_M_OPTFLATMAP, 2, CEL_LIB_OPTIONAL},
    {"sortBy", CEL_M_SORTBY, 2, CEL_LIB_LISTS},
};

static int simple_name(struct parser *ps, const struct cel__node *var)
{
    if (var->kind == CEL_N_IDENT)
        return 1;
    struct tok at = {0, 0, 0, var->line, var->col};
    fail_tok(ps, &at, DD_EPARSE, "argument must be a simple name");
    return 0;
}

/* target.all(x, p) and friends become one comprehension node (cel.bind too:
 * the "target" is the namespace identifier `cel`). */
static struct cel__node *macro_comp(struct parser *ps, struct cel__node *call)
{
    int bind = strcmp(call->name, "bind") == 0 && call->nkid == 4 &&
               call->kid[0]->kind == CEL_N_IDENT && strcmp(call->kid[0]->name, "cel") == 0 &&
               cel__lib_enabled(&ps->p->env, CEL_LIB_BIND);

    for (size_t i = 0; i < sizeof(macros) / sizeof(macros[0]) || bind; i++) {
        int op = bind ? CEL_M_BIND : macros[i].macro, two;
        size_t nvars;
        if (!bind && (strcmp(macros[i].name, call->name) != 0 || macros[i].nargs + 1 != call->nkid ||
                      !cel__lib_enabled(&ps->p->env, macros[i].lib)))
            continue;
        two = op == CEL_M_ALL2 || op == CEL_M_EXISTS2 || op == CEL_M_EXISTS_ONE2 ||
              op == CEL_M_TLIST || op == CEL_M_TMAP || op == CEL_M_TMAPENTRY;
        nvars = two ? 2 : 1;
        for (size_t v = 1; v <= nvars; v++)
            if (!simple_name(ps, call->kid[v]))
                return NULL;
        if (two && strcmp(call->kid[1]->name, call->kid[2]->name) == 0) {
            struct tok at = {0, 0, 0, call->kid[2]->line, call->kid[2]->col};
            fail_tok(ps, &at, DD_EPARSE, "duplicate variable name: %s", call->kid[2]->name);
            return NULL;
        }
        struct tok at = {0, 0, 0, call->line, call->col};
        struct cel__node *c = new_node(ps, CEL_N_COMP, &at);
        if (!c)
            return NULL;
        c->op = op;
        c->name = call->kid[1]->name;
        c->name2 = two ? call->kid[2]->name : NULL;
        if (bind) {
            /* cel.bind(v, init, body): kid[0] init, kid[1] body. */
            if (add_kid(ps, c, call->kid[2]) || add_kid(ps, c, call->kid[3]))
                return NULL;
            return c;
        }
        if (add_kid(ps, c, call->kid[0]))
            return NULL;
        /* The transform first, the filter (when there is one) last. */
        if (call->nkid == nvars + 3) {
            if (add_kid(ps, c, call->kid[nvars + 2]) || add_kid(ps, c, call->kid[nvars + 1]))
                return NULL;
        } else if (add_kid(ps, c, call->kid[nvars + 1])) {
            return NULL;
        }
        return c;
    }
    return call;
}

/* Marks element i of a list or map literal as optional (`?e`, `?k: v`). */
static int mark_optional(struct parser *ps, struct cel__node *n, size_t i)
{
    unsigned char *o = cel__alloc(&ps->p->arena, i + 1);

    if (!o) {
        fail_oom(ps);
        return -1;
    }
    if (n->optk)
        memcpy(o, n->optk, i);
    o[i] = 1;
    n->optk = o;
    return 0;
}

/* Extends the optional marks of n to cover i elements (unmarked ones are 0). */
static int grow_optional(struct parser *ps, struct cel__node *n, size_t i)
{
    unsigned char *o;

    if (!n->optk)
        return 0;
    if (!(o = cel__alloc(&ps->p->arena, i + 1))) {
        fail_oom(ps);
        return -1;
    }
    memcpy(o, n->optk, i);
    n->optk = o;
    return 0;
}

static int optional_syntax(struct parser *ps)
{
    return cel__lib_enabled(&ps->p->env, CEL_LIB_OPTIONAL);
}

static struct cel__node *parse_primary(struct parser *ps)
{
    struct tok t = ps->tok;
    struct cel__node *n;

    switch (t.type) {
    case CEL_TK_INT:
    case CEL_TK_UINT:
        next(ps);
        return literal_int(ps, &t, t.type == CEL_TK_UINT);
    case CEL_TK_DOUBLE: {
        char buf[128];
        if (t.len >= sizeof(buf)) {
            /* Longer than any meaningful double: strtod on a bounded copy. */
            t.len = sizeof(buf) - 1;
        }
        memcpy(buf, ps->src + t.off, t.len);
        buf[t.len] = '\0';
        next(ps);
        n = new_node(ps, CEL_N_DOUBLE, &t);
        if (n)
            n->lit.d = strtod(buf, NULL);
        return n;
    }
    case CEL_TK_STRING:
    case CEL_TK_BYTES:
        next(ps);
        return literal_string(ps, &t, t.type == CEL_TK_BYTES);
    case CEL_TK_TRUE:
    case CEL_TK_FALSE:
        next(ps);
        n = new_node(ps, CEL_N_BOOL, &t);
        if (n)
            n->lit.b = t.type == CEL_TK_TRUE;
        return n;
    case CEL_TK_NUL:
        next(ps);
        return new_node(ps, CEL_N_NULL, &t);
    case CEL_TK_LPAREN:
        next(ps);
        n = parse_expr(ps);
        if (!n || !expect(ps, CEL_TK_RPAREN, "')'"))
            return NULL;
        return n;
    case CEL_TK_LBRACKET:
        next(ps);
        n = new_node(ps, CEL_N_LIST, &t);
        if (!n)
            return NULL;
        while (!accept(ps, CEL_TK_RBRACKET)) {
            int opt = optional_syntax(ps) && accept(ps, CEL_TK_QUESTION);
            size_t at = n->nkid;
            struct cel__node *e = parse_expr(ps);
            if (!e || add_kid(ps, n, e) || (opt ? mark_optional(ps, n, at) : grow_optional(ps, n, at)))
                return NULL;
            if (!accept(ps, CEL_TK_COMMA)) {
                if (!expect(ps, CEL_TK_RBRACKET, "{',', ']'}"))
                    return NULL;
                break;
            }
        }
        return n;
    case CEL_TK_LBRACE:
        next(ps);
        n = new_node(ps, CEL_N_MAP, &t);
        if (!n)
            return NULL;
        while (!accept(ps, CEL_TK_RBRACE)) {
            int opt = optional_syntax(ps) && accept(ps, CEL_TK_QUESTION);
            size_t at = n->nkid / 2;
            struct cel__node *k = parse_expr(ps), *v;
            if (!k || !expect(ps, CEL_TK_COLON, "':'"))
                return NULL;
            v = parse_expr(ps);
            if (!v || add_kid(ps, n, k) || add_kid(ps, n, v) ||
                (opt ? mark_optional(ps, n, at) : grow_optional(ps, n, at)))
                return NULL;
            if (!accept(ps, CEL_TK_COMMA)) {
                if (!expect(ps, CEL_TK_RBRACE, "{',', '}'}"))
                    return NULL;
                break;
            }
        }
        return n;
    case CEL_TK_DOT:
        /* A leading dot names the root scope: `.device` is `device`. */
        next(ps);
        if (ps->tok.type != CEL_TK_IDENT) {
            syntax_error(ps, "IDENTIFIER");
            return NULL;
        }
        t = ps->tok;
        /* fall through */
    case CEL_TK_IDENT:
        next(ps);
        if (ps->tok.type == CEL_TK_LPAREN) {
            next(ps);
            n = new_node(ps, CEL_N_CALL, &t);
            if (!n || !(n->name = tok_text(ps, &t)) || parse_args(ps, n))
                return NULL;
            if (strcmp(n->name, "has") == 0)
                return macro_has(ps, n);
            return n;
        }
        if (ps->tok.type == CEL_TK_LBRACE) {
            fail_tok(ps, &ps->tok, DD_EPARSE,
                     "Syntax error: message construction is not supported in DRA selectors");
            return NULL;
        }
        n = new_node(ps, CEL_N_IDENT, &t);
        if (n && !(n->name = tok_text(ps, &t)))
            return NULL;
        return n;
    default:
        syntax_error(ps, "an expression");
        return NULL;
    }
}

static struct cel__node *parse_member(struct parser *ps)
{
    struct cel__node *n = parse_primary(ps);

    while (n && !failed(ps)) {
        struct tok t = ps->tok;
        if (n->kind == CEL_N_INT && n->op == 1 &&
            (t.type == CEL_TK_DOT || t.type == CEL_TK_LBRACKET)) {
            struct tok at = {0, 0, 0, n->line, n->col};
            fail_tok(ps, &at, DD_EPARSE, "integer literal out of range");
            return NULL;
        }
        if (accept(ps, CEL_TK_DOT)) {
            int opt = optional_syntax(ps) && accept(ps, CEL_TK_QUESTION);
            struct tok id = ps->tok;
            /* Reserved words are only reserved as identifiers, not as field names. */
            if (id.type != CEL_TK_IDENT && id.type != CEL_TK_RESERVED) {
                syntax_error(ps, "IDENTIFIER");
                return NULL;
            }
            next(ps);
            if (!opt && accept(ps, CEL_TK_LPAREN)) {
                struct cel__node *c = new_node(ps, CEL_N_CALL, &id);
                if (!c || !(c->name = tok_text(ps, &id)) || add_kid(ps, c, n) ||
                    parse_args(ps, c))
                    return NULL;
                c->recv = 1;
                n = macro_comp(ps, c);
            } else {
                struct cel__node *s = new_node(ps, CEL_N_SELECT, &id);
                if (!s || !(s->name = tok_text(ps, &id)) || add_kid(ps, s, n))
                    return NULL;
                s->optional = opt;
                n = s;
            }
        } else if (accept(ps, CEL_TK_LBRACKET)) {
            struct cel__node *ix = new_node(ps, CEL_N_INDEX, &t), *k;
            int opt = optional_syntax(ps) && accept(ps, CEL_TK_QUESTION);
            if (!ix || add_kid(ps, ix, n) || !(k = parse_expr(ps)) || add_kid(ps, ix, k) ||
                !expect(ps, CEL_TK_RBRACKET, "']'"))
                return NULL;
            ix->optional = opt;
            n = ix;
        } else {
            break;
        }
    }
    return failed(ps) ? NULL : n;
}

/*
 * unary := member | '!'+ member | '-'+ member (cel-go's grammar): a run of one
 * operator, then a member, never another unary; an even run cancels out (cel-go
 * drops it without a call, so `--x` is `x` whatever x's type).  A single '-'
 * before a number literal is part of the literal.
 */
static struct cel__node *parse_unary(struct parser *ps)
{
    struct tok t = ps->tok;
    struct cel__node *n, *u;
    int op, count = 0;

    if (t.type != CEL_TK_NOT && t.type != CEL_TK_MINUS) {
        n = parse_member(ps);
        if (n && n->kind == CEL_N_INT && n->op == 1) {
            struct tok at = {0, 0, 0, n->line, n->col};
            fail_tok(ps, &at, DD_EPARSE, "integer literal out of range");
            return NULL;
        }
        return n;
    }
    op = t.type == CEL_TK_NOT ? CEL_OP_NOT : CEL_OP_NEG;
    while (ps->tok.type == t.type) {
        next(ps);
        count++;
    }
    if (op == CEL_OP_NEG && count == 1 &&
        (ps->tok.type == CEL_TK_INT || ps->tok.type == CEL_TK_DOUBLE)) {
        /* Fold "-literal" so that -9223372036854775808 is representable. */
        n = parse_member(ps);
        if (n && n->kind == CEL_N_INT) {
            if (n->op == 1) {
                n->lit.i = INT64_MIN;
                n->op = 0;
            } else {
                n->lit.i = -n->lit.i;
            }
            n->line = t.line;
            n->col = t.col;
            return n;
        }
        if (n && n->kind == CEL_N_DOUBLE) {
            n->lit.d = -n->lit.d;
            n->line = t.line;
            n->col = t.col;
            return n;
        }
    } else if (op == CEL_OP_NOT && ps->tok.type == CEL_TK_MINUS) {
        /* `!-1`: the member is a signed number literal (nothing else may follow '!'). */
        struct tok m = ps->tok;
        next(ps);
        if (ps->tok.type != CEL_TK_INT && ps->tok.type != CEL_TK_DOUBLE) {
            syntax_error(ps, "a number");
            return NULL;
        }
        n = parse_member(ps);
        if (n && n->kind == CEL_N_INT) {
            if (n->op == 1) {
                n->lit.i = INT64_MIN;
                n->op = 0;
            } else {
                n->lit.i = -n->lit.i;
            }
        } else if (n && n->kind == CEL_N_DOUBLE) {
            n->lit.d = -n->lit.d;
        }
        if (n) {
            n->line = m.line;
            n->col = m.col;
        }
    } else {
        n = parse_member(ps);
    }
    if (!n)
        return NULL;
    if (n->kind == CEL_N_INT && n->op == 1) {
        struct tok at = {0, 0, 0, n->line, n->col};
        fail_tok(ps, &at, DD_EPARSE, "integer literal out of range");
        return NULL;
    }
    if (count % 2 == 0)
        return n;
    u = new_node(ps, CEL_N_UNARY, &t);
    if (!u || add_kid(ps, u, n))
        return NULL;
    u->op = op;
    return u;
}

/* One left-associative precedence level: operand {op operand}. */
static struct cel__node *parse_level(struct parser *ps, int level);

static const struct {
    int tok, op;
} binops[] = {
#define CEL__OP_LEVEL(name, tok, fn) {tok, CEL_OP_##name},
    CEL_BINOPS(CEL__OP_LEVEL)
#undef CEL__OP_LEVEL
};

/* Precedence levels: 0 relations, 1 additive, 2 multiplicative. */
static int op_level(int op)
{
    switch (op) {
    case CEL_OP_ADD: case CEL_OP_SUB: return 1;
    case CEL_OP_MUL: case CEL_OP_DIV: case CEL_OP_MOD: return 2;
    case CEL_OP_AND: case CEL_OP_OR: return -1;
    default: return 0;
    }
}

static int tok_op(int tok, int level)
{
    for (size_t i = 0; i < sizeof(binops) / sizeof(binops[0]); i++)
        if (binops[i].tok == tok && op_level(binops[i].op) == level)
            return binops[i].op;
    return -1;
}

static struct cel__node *operand(struct parser *ps, int level)
{
    return level == 2 ? parse_unary(ps) : parse_level(ps, level + 1);
}

/* cel-go's relation is level 0, its calc levels 1 and 2 (one rule with two precedences);
 * a right operand is a new invocation of the rule. */
static struct cel__node *parse_level(struct parser *ps, int level)
{
    int rule = level == 0 ? R_RELATION : R_CALC;
    struct cel__node *n;

    if (level < 2 && !enter(ps, rule))
        return NULL;
    n = operand(ps, level);
    while (n && !failed(ps)) {
        struct tok t = ps->tok;
        int op = tok_op(t.type, level);
        struct cel__node *r;
        if (op < 0)
            break;
        next(ps);
        if (!enter(ps, rule))
            return NULL;
        r = operand(ps, level);
        leave(ps, rule);
        if (!r)
            return NULL;
        n = binary(ps, op, &t, n, r);
    }
    if (level < 2)
        leave(ps, rule);
    return failed(ps) ? NULL : n;
}

/* Builds a balanced tree over terms[lo..hi) joined by op; ops[i] is the
 * operator token between terms[i] and terms[i+1]. */
static struct cel__node *balance(struct parser *ps, int op, struct cel__node **terms,
                                 struct tok *ops, size_t lo, size_t hi)
{
    size_t mid;
    struct cel__node *l, *r;

    if (hi - lo == 1)
        return terms[lo];
    mid = lo + (hi - lo) / 2;
    l = balance(ps, op, terms, ops, lo, mid);
    r = l ? balance(ps, op, terms, ops, mid, hi) : NULL;
    return r ? binary(ps, op, &ops[mid - 1], l, r) : NULL;
}

static struct cel__node *parse_chain(struct parser *ps, int tok, int op)
{
    struct cel__node **terms = NULL;
    struct tok *ops = NULL;
    size_t n = 0, cap = 0;

    for (;;) {
        struct cel__node *e =
            op == CEL_OP_OR ? parse_chain(ps, CEL_TK_AND, CEL_OP_AND) : parse_level(ps, 0);
        if (!e)
            return NULL;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 4;
            struct cel__node **nt = cel__alloc(&ps->p->arena, ncap * sizeof(*nt));
            struct tok *no = cel__alloc(&ps->p->arena, ncap * sizeof(*no));
            if (!nt || !no) {
                fail_oom(ps);
                return NULL;
            }
            if (n) {
                memcpy(nt, terms, n * sizeof(*nt));
                memcpy(no, ops, n * sizeof(*no));
            }
            terms = nt;
            ops = no;
            cap = ncap;
        }
        terms[n++] = e;
        if (ps->tok.type != tok)
            break;
        ops[n - 1] = ps->tok;
        next(ps);
    }
    return balance(ps, op, terms, ops, 0, n);
}

static struct cel__node *parse_expr(struct parser *ps)
{
    struct cel__node *c, *a, *b, *n;
    struct tok q;

    if (!enter(ps, R_EXPR))
        return NULL;
    c = parse_chain(ps, CEL_TK_OR, CEL_OP_OR);
    if (c && ps->tok.type == CEL_TK_QUESTION) {
        q = ps->tok;
        next(ps);
        a = parse_chain(ps, CEL_TK_OR, CEL_OP_OR);
        if (!a || !expect(ps, CEL_TK_COLON, "':'"))
            return NULL;
        b = parse_expr(ps);
        if (!b)
            return NULL;
        n = new_node(ps, CEL_N_COND, &q);
        if (!n || add_kid(ps, n, c) || add_kid(ps, n, a) || add_kid(ps, n, b))
            return NULL;
        c = n;
    }
    leave(ps, R_EXPR);
    return failed(ps) ? NULL : c;
}

enum dd_rc cel__parse(struct cel_program *p, const struct cel_limits *lim, struct dd_err *err)
{
    struct parser ps = {
        .p = p, .src = p->src, .len = p->len, .line = 1, .col = 1,
        .max_depth = lim->max_depth > 0 ? lim->max_depth : 1, .err = err, .rc = DD_OK,
    };

    next(&ps);
    p->root = parse_expr(&ps);
    if (p->root && ps.tok.type != CEL_TK_EOF)
        syntax_error(&ps, "<EOF>");
    if (p->root && p->root->depth + visit_level(p->root) > ps.max_depth) {
        struct tok at = {0, 0, 0, p->root->line, p->root->col};
        fail_tok(&ps, &at, DD_ETOOBIG, "max recursion depth exceeded");
    }
    if (!failed(&ps) && !p->root)
        fail_oom(&ps);
    return ps.rc;
}
