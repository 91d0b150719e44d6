/*
 * cel_int.h - private interface between the CEL lexer, parser, checker,
 * analyser and evaluator.  Nothing here is part of the public API; every name
 * carries the cel__ prefix.
 *
 * Ownership: a program owns one arena (struct cel__arena) holding a copy of
 * the source, every AST node, every decoded literal and the static-analysis
 * results.  Evaluation uses a second, per-call scratch arena so that the
 * program itself is never written after cel_compile returns (which is what
 * makes cel_eval_device reentrant).
 */
#ifndef DD_CEL_INT_H
#define DD_CEL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cel.h"

/* ---- Arena ---------------------------------------------------------------- */

struct cel__chunk;

struct cel__arena {
    struct cel__chunk *head; /* newest chunk first; all freed together */
    size_t used;             /* total bytes handed out, for the cap below */
    size_t cap;              /* 0 = unlimited; else allocations past it fail */
};

/* Returns zeroed memory aligned for any scalar, or NULL (out of memory or cap). */
void *cel__alloc(struct cel__arena *a, size_t n);
/* Copies s[0..n) and appends a NUL; NULL on failure. */
char *cel__strndup(struct cel__arena *a, const char *s, size_t n);
/* Frees every chunk; the arena may be reused afterwards. */
void cel__arena_free(struct cel__arena *a);

/* ---- Lexer ---------------------------------------------------------------- */

/* Token types, defined once: (name, spelling used in error messages). */
#define CEL_TOKENS(X)                                                          \
    X(EOF, "<EOF>")                                                            \
    X(ILLEGAL, "illegal character")                                            \
    X(SPACE, "whitespace")                                                     \
    X(COMMENT, "comment")                                                      \
    X(IDENT, "identifier")                                                     \
    X(RESERVED, "reserved word")                                               \
    X(INT, "integer literal")                                                  \
    X(UINT, "unsigned integer literal")                                        \
    X(DOUBLE, "double literal")                                                \
    X(STRING, "string literal")                                                \
    X(BYTES, "bytes literal")                                                  \
    X(TRUE, "true")                                                            \
    X(FALSE, "false")                                                          \
    X(NUL, "null")                                                             \
    X(IN, "in")                                                                \
    X(EQ, "==")                                                                \
    X(NE, "!=")                                                                \
    X(LT, "<")                                                                 \
    X(LE, "<=")                                                                \
    X(GT, ">")                                                                 \
    X(GE, ">=")                                                                \
    X(AND, "&&")                                                               \
    X(OR, "||")                                                                \
    X(NOT, "!")                                                                \
    X(PLUS, "+")                                                               \
    X(MINUS, "-")                                                              \
    X(STAR, "*")                                                               \
    X(SLASH, "/")                                                              \
    X(PERCENT, "%")                                                            \
    X(QUESTION, "?")                                                           \
    X(COLON, ":")                                                              \
    X(DOT, ".")                                                                \
    X(COMMA, ",")                                                              \
    X(LBRACKET, "[")                                                           \
    X(RBRACKET, "]")                                                           \
    X(LPAREN, "(")                                                             \
    X(RPAREN, ")")                                                             \
    X(LBRACE, "{")                                                             \
    X(RBRACE, "}")

enum cel__tok {
#define CEL__TOK_ENUM(name, text) CEL_TK_##name,
    CEL_TOKENS(CEL__TOK_ENUM)
#undef CEL__TOK_ENUM
    CEL_TK__COUNT
};

/* Spelling of a token type for messages ("==", "identifier", ...). */
const char *cel__tok_name(int type);

/*
 * Scans one token at z[0..n).  Returns its length in bytes (0 only when
 * n == 0, with *type = CEL_TK_EOF).  Pure: no allocation, no state.  A
 * malformed token (unterminated string, stray byte) is CEL_TK_ILLEGAL with
 * the length of the bytes that could not be tokenised.
 */
size_t cel__next_token(const char *z, size_t n, int *type);

/*
 * Decodes a string or bytes literal token tok[0..n) (including prefix and
 * quotes) into arena memory.  *out / *outlen receive the bytes (NUL
 * terminated for convenience).  On a bad escape returns -1 and *bad_off is
 * the byte offset of the offending backslash within tok; on out of memory
 * returns -2.
 */
int cel__unescape(struct cel__arena *a, const char *tok, size_t n, int is_bytes, char **out,
                  size_t *outlen, size_t *bad_off);

/* ---- Types (checker) ------------------------------------------------------ */

enum cel__tkind {
    CEL_T_DYN, CEL_T_BOOL, CEL_T_INT, CEL_T_UINT, CEL_T_DOUBLE, CEL_T_STRING, CEL_T_BYTES,
    CEL_T_NULL, CEL_T_LIST, CEL_T_MAP, CEL_T_TYPE, CEL_T_SEMVER, CEL_T_QUANTITY, CEL_T_DEVICE
};

struct cel__type {
    enum cel__tkind kind;
    const struct cel__type *key;  /* CEL_T_MAP key */
    const struct cel__type *elem; /* CEL_T_LIST element, CEL_T_MAP value */
};

/* ---- AST ------------------------------------------------------------------ */

/* Binary operators, defined once: (enum, token, CEL function name). */
#define CEL_BINOPS(X)                                                          \
    X(EQ, CEL_TK_EQ, "_==_")                                                   \
    X(NE, CEL_TK_NE, "_!=_")                                                   \
    X(LT, CEL_TK_LT, "_<_")                                                    \
    X(LE, CEL_TK_LE, "_<=_")                                                   \
    X(GT, CEL_TK_GT, "_>_")                                                    \
    X(GE, CEL_TK_GE, "_>=_")                                                   \
    X(IN, CEL_TK_IN, "@in")                                                    \
    X(ADD, CEL_TK_PLUS, "_+_")                                                 \
    X(SUB, CEL_TK_MINUS, "_-_")                                                \
    X(MUL, CEL_TK_STAR, "_*_")                                                 \
    X(DIV, CEL_TK_SLASH, "_/_")                                                \
    X(MOD, CEL_TK_PERCENT, "_%_")                                              \
    X(AND, CEL_TK_AND, "_&&_")                                                 \
    X(OR, CEL_TK_OR, "_||_")

enum cel__op {
#define CEL__OP_ENUM(name, tok, fn) CEL_OP_##name,
    CEL_BINOPS(CEL__OP_ENUM)
#undef CEL__OP_ENUM
    CEL_OP_NOT, /* unary ! */
    CEL_OP_NEG  /* unary - */
};

const char *cel__op_name(int op);

enum cel__nkind {
    CEL_N_INT, CEL_N_UINT, CEL_N_DOUBLE, CEL_N_STRING, CEL_N_BYTES, CEL_N_BOOL, CEL_N_NULL,
    CEL_N_IDENT,  /* name */
    CEL_N_SELECT, /* kid[0].name; test_only for has() */
    CEL_N_INDEX,  /* kid[0][kid[1]] */
    CEL_N_CALL,   /* name(kid...) or kid[0].name(kid[1]...) when recv */
    CEL_N_LIST,   /* [kid...] */
    CEL_N_MAP,    /* {kid[0]: kid[1], ...} */
    CEL_N_UNARY,  /* op kid[0] */
    CEL_N_BINARY, /* kid[0] op kid[1] */
    CEL_N_COND,   /* kid[0] ? kid[1] : kid[2] */
    CEL_N_COMP    /* macro: kid[0] range, kid[1] predicate/transform, kid[2] filter */
};

enum cel__macro { CEL_M_ALL, CEL_M_EXISTS, CEL_M_EXISTS_ONE, CEL_M_MAP, CEL_M_FILTER };

struct cel__node {
    enum cel__nkind kind;
    int line, col;     /* 1-based source position of the node's operator/name */
    int op;            /* enum cel__op for UNARY/BINARY; enum cel__macro for COMP */
    int recv;          /* CALL: 1 when called as kid[0].name(...) */
    int test_only;     /* SELECT: operand of has() */
    int depth;         /* height of the subtree, for the depth cap */
    int builtin;       /* CALL: index into the builtin table, set by the checker */
    union {
        int64_t i;
        uint64_t u;
        double d;
        int b;
        struct {
            const char *s; /* decoded bytes in the program arena, NUL-terminated */
            size_t n;
        } str;
    } lit;
    const char *name;  /* IDENT, SELECT field, CALL function, COMP variable */
    struct cel__node **kid;
    size_t nkid;
    const struct cel__type *type; /* static type, set by the checker */
};

/* Constructors: every AST node is made by one of these (arena memory). */
struct cel__node *cel__node_new(struct cel__arena *a, enum cel__nkind kind, int line, int col);
/* Appends k to n's children; returns 0 or -1 on out of memory. */
int cel__node_add(struct cel__arena *a, struct cel__node *n, struct cel__node *k);

/* ---- Program --------------------------------------------------------------- */

struct cel_program {
    struct cel__arena arena;        /* owns everything below */
    const char *src;                /* NUL-terminated copy of the source */
    size_t len;
    struct cel__node *root;
    enum cel_drivers_kind drivers_kind;
    struct cel_driver_ref *drivers;
    size_t ndrivers;
    struct cel_attr_ref *attrs;
    size_t nattrs;
    size_t cap_attrs;
};

/* Formats "LINE:COL: what\n | line\n |    ^" into err with rc. */
enum dd_rc cel__fail_at(struct dd_err *err, enum dd_rc rc, const char *src, size_t len, int line,
                        int col, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* Parses p->src into p->root.  Returns DD_OK or the error (err filled). */
enum dd_rc cel__parse(struct cel_program *p, const struct cel_limits *lim, struct dd_err *err);

/* Type-checks p->root against the DRA environment; resolves builtins. */
enum dd_rc cel__check(struct cel_program *p, struct dd_err *err);

/* Fills the driver and attribute analyses of p. */
enum dd_rc cel__analyse(struct cel_program *p, struct dd_err *err);

/* ---- Builtins ---------------------------------------------------------------- */

struct cel__val;
struct cel__ctx;

typedef struct cel__val (*cel__fn)(struct cel__ctx *c, const struct cel__node *call,
                                   struct cel__val *args, size_t nargs);

struct cel__builtin {
    const char *name;
    int recv;                   /* 1: receiver style x.f(...); 0: global f(...) */
    int nargs;                  /* arguments including the receiver */
    enum cel__tkind arg0;       /* static kind the first argument must have (DYN: any) */
    enum cel__tkind result;     /* static result kind */
    cel__fn fn;
};

extern const struct cel__builtin cel__builtins[];
extern const size_t cel__nbuiltins;

/* Finds the first builtin matching name/style/arity and (when known) first-argument kind.
 * Returns its index, -1 when the name is unknown, -2 when no overload fits. */
int cel__builtin_find(const char *name, int recv, size_t nargs, enum cel__tkind arg0);

/* ---- Values ---------------------------------------------------------------- */

enum cel__vkind {
    CEL_V_NULL, CEL_V_BOOL, CEL_V_INT, CEL_V_UINT, CEL_V_DOUBLE, CEL_V_STRING, CEL_V_BYTES,
    CEL_V_LIST, CEL_V_MAP, CEL_V_TYPE, CEL_V_SEMVER, CEL_V_QUANTITY, CEL_V_ERROR
};

struct cel__semver {
    uint64_t major, minor, patch;
    const char *pre;    /* prerelease without '-', "" when none */
    const char *text;   /* canonical text */
};

struct cel__val {
    enum cel__vkind kind;
    union {
        int b;
        int64_t i;
        uint64_t u;
        double d;
        struct {
            const char *s;
            size_t n;
        } str;                         /* STRING, BYTES */
        struct cel__list *list;
        struct cel__map *map;
        enum cel__vkind type;          /* TYPE: the kind it names */
        const struct cel__semver *sv;
        __int128 q;                    /* QUANTITY in units of 10^-9 */
        const char *err;               /* ERROR message (scratch arena) */
    } v;
};

struct cel__list {
    struct cel__val *items;
    size_t n;
};

struct cel__map {
    struct cel__val *keys, *vals;
    size_t n;
    int missing_is_empty; /* device.attributes: an unknown domain is an empty map */
};

/* Per-evaluation state; lives on the caller's stack. */
struct cel__ctx {
    struct cel__arena scratch;  /* every value built during the call */
    uint64_t cost, max_cost;
    int aborted;                /* cost/memory limit hit: errors are no longer absorbed */
    enum dd_rc abort_rc;
    struct cel__scope *scope;   /* comprehension variables, innermost first */
    struct cel__val device;
};

struct cel__scope {
    const char *name;
    struct cel__val val;
    struct cel__scope *up;
};

/* Builds an error value; formats into the scratch arena. */
struct cel__val cel__err(struct cel__ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Adds n to the cost; returns -1 (and marks the context aborted) past the limit. */
int cel__charge(struct cel__ctx *c, uint64_t n);
struct cel__val cel__abort_val(struct cel__ctx *c);

/* Name of a value's type as CEL prints it ("int", "string", ...). */
const char *cel__vkind_name(enum cel__vkind k);
const char *cel__tkind_name(enum cel__tkind k);

/* Equality with CEL semantics (cross-numeric allowed).  Returns 1/0, or -1 when
 * the operands are of incomparable types. */
int cel__val_equal(const struct cel__val *a, const struct cel__val *b);

/* Parses a Kubernetes quantity; 0 on success. */
int cel__quantity_parse(const char *s, size_t n, __int128 *out);
/* Parses a semantic version; 0 on success, else -1 with a reason in *why. */
int cel__semver_parse(struct cel__arena *a, const char *s, size_t n, int normalize,
                      struct cel__semver *out, const char **why);
int cel__semver_cmp(const struct cel__semver *a, const struct cel__semver *b);

/* Cap on any string or list built during evaluation; larger results become errors.
 * 1 MiB is far beyond any selector's needs and keeps a hostile expression from
 * exhausting memory before the cost limit trips. */
#define CEL__MAX_BUILD (1u << 20)
/* Hard cap on the per-call scratch arena. */
#define CEL__MAX_SCRATCH (64u << 20)

#endif
