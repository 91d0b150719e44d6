/*
 * cel_explain.c - why a selector is false or fails on a device: the smallest
 * sub-expression that decided it and the values it saw, for `dra-doctor explain`.
 *
 * The walk follows CEL's own evaluation: a false `a && b` is decided by a false
 * side, a true `a || b` never needs explaining, a failing one by a failing side
 * that nothing absorbed, `c ? x : y` by c and the branch taken, `!x` by x.  A
 * comparison or call is a leaf: it is shown with the value of each operand that
 * is not a literal.  The tree is printed back as CEL (cel__unparse), not sliced
 * from the source, so macros and nested expressions read as written.
 */
#include <stdio.h>
#include <string.h>

#include "cel_int.h"

struct text {
    char *b;
    size_t n, cap;
};

static void put(struct text *t, const char *s)
{
    size_t l = strlen(s);

    if (t->n + 1 >= t->cap)
        return;
    if (l > t->cap - t->n - 1)
        l = t->cap - t->n - 1;
    memcpy(t->b + t->n, s, l);
    t->n += l;
    t->b[t->n] = '\0';
}

static void unparse(struct text *t, const struct cel__node *n);

/* Binding strength, to print parentheses only where CEL needs them. */
static int prec(const struct cel__node *n)
{
    if (n->kind == CEL_N_COND)
        return 0;
    if (n->kind == CEL_N_UNARY)
        return 6;
    if (n->kind != CEL_N_BINARY)
        return 7;
    switch (n->op) {
    case CEL_OP_OR: return 1;
    case CEL_OP_AND: return 2;
    case CEL_OP_ADD: case CEL_OP_SUB: return 4;
    case CEL_OP_MUL: case CEL_OP_DIV: case CEL_OP_MOD: return 5;
    default: return 3;
    }
}

static void operand(struct text *t, const struct cel__node *n, int min)
{
    int paren = prec(n) < min;

    if (paren)
        put(t, "(");
    unparse(t, n);
    if (paren)
        put(t, ")");
}

static void literal_text(struct text *t, const struct cel__node *n)
{
    char buf[64];

    switch (n->kind) {
    case CEL_N_INT: snprintf(buf, sizeof(buf), "%lld", (long long)n->lit.i); put(t, buf); return;
    case CEL_N_UINT:
        snprintf(buf, sizeof(buf), "%lluu", (unsigned long long)n->lit.u);
        put(t, buf);
        return;
    case CEL_N_DOUBLE: cel__fmt_double(n->lit.d, buf, sizeof(buf)); put(t, buf); return;
    case CEL_N_BOOL: put(t, n->lit.b ? "true" : "false"); return;
    case CEL_N_NULL: put(t, "null"); return;
    default: break;
    }
    put(t, n->kind == CEL_N_BYTES ? "b\"" : "\"");
    for (size_t i = 0; i < n->lit.str.n && t->n + 8 < t->cap; i++) {
        unsigned char c = (unsigned char)n->lit.str.s[i];
        if (c == '"' || c == '\\') {
            char e[3] = {'\\', (char)c, 0};
            put(t, e);
        } else if (c < 0x20) {
            snprintf(buf, sizeof(buf), "\\x%02x", c);
            put(t, buf);
        } else {
            char e[2] = {(char)c, 0};
            put(t, e);
        }
    }
    put(t, "\"");
}

static const char *const macro_names[] = {
    [CEL_M_ALL] = "all", [CEL_M_EXISTS] = "exists", [CEL_M_EXISTS_ONE] = "exists_one",
    [CEL_M_MAP] = "map", [CEL_M_FILTER] = "filter", [CEL_M_ALL2] = "all",
    [CEL_M_EXISTS2] = "exists", [CEL_M_EXISTS_ONE2] = "existsOne",
    [CEL_M_TLIST] = "transformList", [CEL_M_TMAP] = "transformMap",
    [CEL_M_TMAPENTRY] = "transformMapEntry", [CEL_M_BIND] = "bind", [CEL_M_OPTMAP] = "optMap",
    [CEL_M_OPTFLATMAP] = "optFlatMap", [CEL_M_SORTBY] = "sortBy",
};

static void unparse(struct text *t, const struct cel__node *n)
{
    switch (n->kind) {
    case CEL_N_IDENT: put(t, n->name); return;
    case CEL_N_SELECT:
        if (n->test_only)
            put(t, "has(");
        operand(t, n->kid[0], 7);
        put(t, n->optional ? ".?" : ".");
        put(t, n->name);
        if (n->test_only)
            put(t, ")");
        return;
    case CEL_N_INDEX:
        operand(t, n->kid[0], 7);
        put(t, n->optional ? "[?" : "[");
        unparse(t, n->kid[1]);
        put(t, "]");
        return;
    case CEL_N_CALL:
        if (n->recv) {
            operand(t, n->kid[0], 7);
            put(t, ".");
        }
        put(t, n->name);
        put(t, "(");
        for (size_t i = (size_t)n->recv; i < n->nkid; i++) {
            if (i > (size_t)n->recv)
                put(t, ", ");
            unparse(t, n->kid[i]);
        }
        put(t, ")");
        return;
    case CEL_N_LIST:
    case CEL_N_MAP:
        put(t, n->kind == CEL_N_LIST ? "[" : "{");
        for (size_t i = 0; i < n->nkid; i++) {
            if (i)
                put(t, n->kind == CEL_N_MAP && i % 2 ? ": " : ", ");
            unparse(t, n->kid[i]);
        }
        put(t, n->kind == CEL_N_LIST ? "]" : "}");
        return;
    case CEL_N_UNARY:
        put(t, n->op == CEL_OP_NOT ? "!" : "-");
        operand(t, n->kid[0], 7);
        return;
    case CEL_N_BINARY: {
        static const char *const sym[] = {
            [CEL_OP_EQ] = " == ", [CEL_OP_NE] = " != ", [CEL_OP_LT] = " < ", [CEL_OP_LE] = " <= ",
            [CEL_OP_GT] = " > ", [CEL_OP_GE] = " >= ", [CEL_OP_IN] = " in ", [CEL_OP_ADD] = " + ",
            [CEL_OP_SUB] = " - ", [CEL_OP_MUL] = " * ", [CEL_OP_DIV] = " / ",
            [CEL_OP_MOD] = " % ", [CEL_OP_AND] = " && ", [CEL_OP_OR] = " || ",
        };
        /* Left-associative: the right operand needs parentheses at equal strength. */
        operand(t, n->kid[0], prec(n));
        put(t, sym[n->op]);
        operand(t, n->kid[1], prec(n) + (n->op == CEL_OP_AND || n->op == CEL_OP_OR ? 0 : 1));
        return;
    }
    case CEL_N_COND:
        operand(t, n->kid[0], 1);
        put(t, " ? ");
        operand(t, n->kid[1], 1);
        put(t, " : ");
        unparse(t, n->kid[2]);
        return;
    case CEL_N_COMP:
        if (n->op == CEL_M_BIND) {
            put(t, "cel.bind(");
            put(t, n->name);
            put(t, ", ");
            unparse(t, n->kid[0]);
            put(t, ", ");
            unparse(t, n->kid[1]);
            put(t, ")");
            return;
        }
        operand(t, n->kid[0], 7);
        put(t, ".");
        put(t, macro_names[n->op]);
        put(t, "(");
        put(t, n->name);
        if (n->name2) {
            put(t, ", ");
            put(t, n->name2);
        }
        if (n->nkid > 2) {
            put(t, ", ");
            unparse(t, n->kid[2]);
        }
        put(t, ", ");
        unparse(t, n->kid[1]);
        put(t, ")");
        return;
    default: literal_text(t, n); return;
    }
}

size_t cel__unparse(const struct cel__node *n, char *buf, size_t cap)
{
    struct text t = {buf, 0, cap};

    if (cap)
        buf[0] = '\0';
    unparse(&t, n);
    return t.n;
}

static int is_literal(const struct cel__node *n)
{
    return n->kind <= CEL_N_NULL;
}

/* A leaf: "EXPR is false: A is V, B is W" or "EXPR fails: ERR (A is V)". */
static void leaf(struct cel__ctx *c, const struct cel__node *n, const struct cel__val *v,
                 struct text *t)
{
    char buf[512];
    int shown = 0;

    cel__unparse(n, buf, sizeof(buf));
    put(t, buf);
    if (v->kind == CEL_V_ERROR) {
        put(t, " fails: ");
        put(t, v->v.err);
    } else {
        put(t, " is ");
        cel__val_text(c, v, buf, sizeof(buf));
        put(t, buf);
    }
    /* The operands the evaluation read (the receiver and arguments of a call, the
     * sides of an operator), except literals, which say themselves. */
    for (size_t i = 0; i < n->nkid && n->kind != CEL_N_COMP; i++) {
        const struct cel__node *k = n->kid[i];
        struct cel__val kv;
        if (is_literal(k) || k->kind == CEL_N_LIST || k->kind == CEL_N_MAP)
            continue;
        kv = cel__eval_node(c, k);
        put(t, shown++ ? ", " : ": ");
        cel__unparse(k, buf, sizeof(buf));
        put(t, buf);
        put(t, " is ");
        cel__val_text(c, &kv, buf, sizeof(buf));
        put(t, buf);
    }
}

/* Explains why n evaluated to v (false or an error). */
static void explain(struct cel__ctx *c, const struct cel__node *n, const struct cel__val *v,
                    struct text *t, int depth)
{
    if (depth < 32 && n->kind == CEL_N_BINARY && (n->op == CEL_OP_AND || n->op == CEL_OP_OR)) {
        struct cel__val l = cel__eval_node(c, n->kid[0]), r = cel__eval_node(c, n->kid[1]);
        int want_false = v->kind != CEL_V_ERROR;
        /* && false: a false side decides; || false: both sides are false, show each;
         * an error: the failing side that nothing absorbed. */
        if (n->op == CEL_OP_OR && want_false) {
            explain(c, n->kid[0], &l, t, depth + 1);
            put(t, "; and ");
            explain(c, n->kid[1], &r, t, depth + 1);
            return;
        }
        if (want_false) {
            if (l.kind == CEL_V_BOOL && !l.v.b)
                explain(c, n->kid[0], &l, t, depth + 1);
            else
                explain(c, n->kid[1], &r, t, depth + 1);
            return;
        }
        explain(c, l.kind == CEL_V_ERROR ? n->kid[0] : n->kid[1],
                l.kind == CEL_V_ERROR ? &l : &r, t, depth + 1);
        return;
    }
    if (depth < 32 && n->kind == CEL_N_UNARY && n->op == CEL_OP_NOT && v->kind != CEL_V_ERROR) {
        char buf[512];
        cel__unparse(n->kid[0], buf, sizeof(buf));
        put(t, buf);
        put(t, " is true");
        return;
    }
    if (depth < 32 && n->kind == CEL_N_COND) {
        struct cel__val k = cel__eval_node(c, n->kid[0]);
        if (k.kind != CEL_V_BOOL) {
            explain(c, n->kid[0], &k, t, depth + 1);
            return;
        }
        explain(c, n->kid[k.v.b ? 1 : 2], v, t, depth + 1);
        return;
    }
    if (depth < 32 && v->kind == CEL_V_ERROR) {
        /* The innermost operand that fails is the cause. */
        for (size_t i = 0; i < n->nkid && n->kind != CEL_N_COMP; i++) {
            struct cel__val kv = cel__eval_node(c, n->kid[i]);
            if (kv.kind == CEL_V_ERROR && !c->aborted) {
                explain(c, n->kid[i], &kv, t, depth + 1);
                return;
            }
        }
    }
    leaf(c, n, v, t);
}

enum cel_verdict cel_explain_device(const struct cel_program *p, const struct cel_device *dev,
                                    char *buf, size_t cap, struct dd_err *err)
{
    struct cel__ctx c;
    struct cel__val v;
    struct text t = {buf, 0, cap};
    enum cel_verdict verdict;

    if (cap)
        buf[0] = '\0';
    verdict = cel_eval_device(p, dev, NULL, err);
    if (verdict == CEL_TRUE || cap == 0)
        return verdict;
    if (cel__ctx_init(&c, p, dev) != 0) {
        put(&t, err && err->msg[0] ? err->msg : "the device cannot be evaluated");
        return verdict;
    }
    v = cel__eval_node(&c, p->root);
    if (c.aborted) {
        put(&t, c.panic ? c.panic : "the cost limit was reached");
    } else if (v.kind == CEL_V_ERROR || (v.kind == CEL_V_BOOL && !v.v.b)) {
        explain(&c, p->root, &v, &t, 0);
    } else {
        char vb[256];
        cel__val_text(&c, &v, vb, sizeof(vb));
        put(&t, "the result is ");
        put(&t, vb);
        put(&t, ", not a bool");
    }
    cel__ctx_free(&c);
    return verdict;
}
