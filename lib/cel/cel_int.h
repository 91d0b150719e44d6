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

#include "cel/cel.h"

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

/*
 * The checker's types are cel-go's (common/types): dyn and Kubernetes' AnyType
 * (dyn-like, but not a comprehension range), parameterised list/map/optional/
 * type, the opaque library types, and type parameters that the checker binds
 * while it resolves overloads (cel_types.c, a port of cel-go's checker/types.go).
 */
enum cel__tkind {
    CEL_T_DYN, CEL_T_ANY, CEL_T_ERROR, CEL_T_BOOL, CEL_T_INT, CEL_T_UINT, CEL_T_DOUBLE,
    CEL_T_STRING, CEL_T_BYTES, CEL_T_NULL, CEL_T_TIMESTAMP, CEL_T_DURATION,
    CEL_T_LIST,     /* p[0] element */
    CEL_T_MAP,      /* p[0] key, p[1] value */
    CEL_T_TYPE,     /* type(p[0]); np == 0 for the bare `type` */
    CEL_T_OPTIONAL, /* optional_type(p[0]) */
    CEL_T_SEMVER, CEL_T_QUANTITY, CEL_T_IP, CEL_T_CIDR, CEL_T_URL, CEL_T_FORMAT,
    CEL_T_DEVICE,   /* kubernetes.DRADevice */
    CEL_T_PARAM     /* a type parameter, named */
};

struct cel__type {
    enum cel__tkind kind;
    const char *name;              /* CEL_T_PARAM */
    const struct cel__type *p[2];  /* parameters */
    int np;
};

extern const struct cel__type cel__t_dyn, cel__t_any, cel__t_error, cel__t_bool, cel__t_int,
    cel__t_uint, cel__t_double, cel__t_string, cel__t_bytes, cel__t_null, cel__t_timestamp,
    cel__t_duration, cel__t_semver, cel__t_quantity, cel__t_ip, cel__t_cidr, cel__t_url,
    cel__t_format, cel__t_device, cel__t_type;

/* Type-parameter bindings of one check (cel-go's mapping); copied to backtrack. */
struct cel__mapping {
    const struct cel__type **from, **to;
    size_t n, cap;
};

struct cel__types {
    struct cel__arena *arena;   /* the program's: every type made lives there */
    struct cel__mapping m;
    int next_var;
    int oom;
};

const struct cel__type *cel__type_new(struct cel__types *ts, enum cel__tkind k,
                                      const struct cel__type *p0, const struct cel__type *p1);
const struct cel__type *cel__type_var(struct cel__types *ts);
int cel__type_is_dyn(const struct cel__type *t);        /* dyn or any */
int cel__type_assignable(struct cel__types *ts, const struct cel__type *t1,
                         const struct cel__type *t2);   /* binds on success only */
int cel__type_assignable_list(struct cel__types *ts, const struct cel__type *const *l1,
                              const struct cel__type *const *l2, size_t n);
const struct cel__type *cel__type_subst(struct cel__types *ts, const struct cel__type *t,
                                        int params_to_dyn);
const struct cel__type *cel__type_most_general(const struct cel__type *a,
                                               const struct cel__type *b);
int cel__type_exact(const struct cel__type *a, const struct cel__type *b);
/* "map(string, list(int))"; truncated to n. */
void cel__type_str(const struct cel__type *t, char *buf, size_t n);
/* Parses a signature type ("list(A)", "map(K, V)", "optional_type(A)"; capital
 * letters are type parameters) into static storage owned by the library. */
const struct cel__type *cel__type_parse(struct cel__types *ts, const char **s);

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

/*
 * Macros (cel-go's parser macros and those of the extension libraries the DRA
 * environment loads).  kid[0] is the range (BIND: the value; OPTMAP and
 * OPTFLATMAP: the optional); name/name2 the variables; then:
 *   ALL EXISTS EXISTS_ONE FILTER ALL2 EXISTS2 EXISTS_ONE2: kid[1] predicate
 *   MAP TLIST TMAP TMAPENTRY: kid[1] transform, kid[2] filter when present
 *   BIND OPTMAP OPTFLATMAP SORTBY: kid[1] the expression over the variable
 */
enum cel__macro {
    CEL_M_ALL, CEL_M_EXISTS, CEL_M_EXISTS_ONE, CEL_M_MAP, CEL_M_FILTER,
    CEL_M_ALL2, CEL_M_EXISTS2, CEL_M_EXISTS_ONE2, CEL_M_TLIST, CEL_M_TMAP, CEL_M_TMAPENTRY,
    CEL_M_BIND, CEL_M_OPTMAP, CEL_M_OPTFLATMAP, CEL_M_SORTBY
};

struct cel__node {
    enum cel__nkind kind;
    int line, col;     /* 1-based source position of the node's operator/name */
    int op;            /* enum cel__op for UNARY/BINARY; enum cel__macro for COMP */
    int recv;          /* CALL: 1 when called as kid[0].name(...) */
    int test_only;     /* SELECT: operand of has() */
    int depth;         /* cel-go's visitor depth below the node (cel_parse.c) */
    int optional;      /* SELECT `.?f`, INDEX `[?k]` */
    const unsigned char *optk; /* LIST/MAP: per element/entry, 1 for `?e` / `?k: v` */
    const short *cand; /* CALL/UNARY/BINARY/INDEX: overloads the checker kept */
    int ncand;
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
    const char *name2; /* COMP: the second variable of a two-variable macro */
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
    struct cel_env env;             /* what it was compiled for */
    uint64_t est_cost;              /* the API server's estimated maximum cost */
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

/* Evaluates the conversions of constants that cel-go folds when it builds the
 * program; a failing one is a compile error (kube-apiserver rejects it). */
enum dd_rc cel__fold(struct cel_program *p, struct dd_err *err);

/* The literal-argument validators of the environment for one call (regex,
 * duration, timestamp, format strings); 0, or -1 with err filled. */
int cel__validate_literal_call(struct cel_program *p, const struct cel__node *call,
                               struct dd_err *err);

/* The estimated maximum cost of p (cel_cost.c); ts holds the checker's bindings. */
uint64_t cel__estimate_cost(struct cel_program *p, struct cel__types *ts);

/* resource.k8s.io CELSelectorExpressionMaxCost: the estimate the API server allows. */
#define CEL__MAX_ESTIMATED_COST 1000000u

/* Fills the driver and attribute analyses of p. */
enum dd_rc cel__analyse(struct cel_program *p, struct dd_err *err);

/* ---- The function library -------------------------------------------------- */

struct cel__val;
struct cel__ctx;

typedef struct cel__val (*cel__fn)(struct cel__ctx *c, const struct cel__node *call,
                                   struct cel__val *args, size_t nargs);

/* Which library declares an overload: decides the Kubernetes version (and
 * feature gate) from which the API server accepts it (cel__lib_since). */
enum cel__lib {
    CEL_LIB_STD, CEL_LIB_K8S_URLS, CEL_LIB_K8S_REGEX, CEL_LIB_K8S_LISTS, CEL_LIB_QUANTITY,
    CEL_LIB_OPTIONAL, CEL_LIB_STRINGS, CEL_LIB_SETS, CEL_LIB_IP, CEL_LIB_CIDR, CEL_LIB_FORMAT,
    CEL_LIB_BIND, CEL_LIB_TWOVAR, CEL_LIB_SEMVER, CEL_LIB_LISTS, CEL_LIB_INCLUDES,
    CEL_LIB_INT_DURATION, /* duration(int): declared by cel-go up to v0.26 (Kubernetes 1.36) */
    CEL_LIB__COUNT
};

struct cel__overload {
    const char *fn;   /* CEL name: "size", "_+_", "optional.of" */
    int member;       /* 1: receiver style x.f(...), the receiver is argument 0 */
    const char *sig;  /* "string,string>bool"; capitals are type parameters */
    enum cel__lib lib;
    cel__fn impl;     /* NULL: an operator the evaluator implements itself */
};

extern const struct cel__overload cel__ovl[];
extern const size_t cel__novl;

/* The parsed signatures of cel__ovl (built once, immutable after). */
struct cel__sig {
    const struct cel__type *arg[4];
    const struct cel__type *result;
    int nargs;
};
const struct cel__sig *cel__sigs(void);

/* The environment a program is compiled in (see cel.h struct cel_env). */
int cel__lib_enabled(const struct cel_env *env, enum cel__lib lib);
/* What the release's device declaration gives a selector compiled in env: attributes of type
 * dyn (else the unknown type), the allowMultipleAllocations field, list-valued attributes as
 * lists (else "unsupported attribute value"). */
int cel__env_dyn_attributes(const struct cel_env *env);
int cel__env_multi_alloc(const struct cel_env *env);
int cel__env_list_values(const struct cel_env *env);

/* Whether a runtime value fits a parameter type (kinds only, as cel-go dispatches). */
int cel__val_fits(const struct cel__val *v, const struct cel__type *t);

/* ---- Values ---------------------------------------------------------------- */

/* One byte (packed), so that a value with its quantity fields takes 24 bytes, not 32. */
enum __attribute__((packed)) cel__vkind {
    CEL_V_NULL, CEL_V_BOOL, CEL_V_INT, CEL_V_UINT, CEL_V_DOUBLE, CEL_V_STRING, CEL_V_BYTES,
    CEL_V_LIST, CEL_V_MAP, CEL_V_TYPE, CEL_V_SEMVER, CEL_V_QUANTITY, CEL_V_TIMESTAMP,
    CEL_V_DURATION, CEL_V_OPTIONAL, CEL_V_IP, CEL_V_CIDR, CEL_V_URL, CEL_V_FORMAT, CEL_V_ERROR
};

/* A timestamp: seconds since the epoch and nanoseconds (0..999999999), UTC.  cel-go
 * keeps them within years 0001..9999; a duration is Go's time.Duration (int64 ns). */
struct cel__ts {
    int64_t sec;
    int32_t nsec;
};

/* An IP address (Go's netip.Addr): 16 bytes, IPv4 in the last four when v4. */
struct cel__ip {
    unsigned char a[16];
    int v4;
};

/* A parsed URL (Go's net/url): every part a NUL-terminated string in scratch. */
struct cel__url {
    const char *text, *scheme, *host, *hostname, *port, *path, *query;
};

struct cel__semver {
    uint64_t major, minor, patch;
    const char *pre;    /* prerelease without '-', "" when none */
    const char *text;   /* canonical text */
};

/* A quantity at 8-byte alignment: 16 would make every value 32 bytes, and a snapshot holds
 * each device's values (cel_device_value) for its life.  Never take its address as a plain
 * __int128 *. */
typedef __int128 cel__q128 __attribute__((aligned(8)));

struct cel__val {
    enum cel__vkind kind;
    /* QUANTITY: how Go's resource.Quantity holds it, which decides isInteger and asInteger:
     * an int64 times 10^qscale, or (qdec) an arbitrary-precision decimal. */
    unsigned char qdec;
    int32_t qscale;
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
        const char *tname;             /* TYPE: the type's name ("int", "list", ...) */
        struct cel__ts ts;             /* TIMESTAMP */
        int64_t dur;                   /* DURATION, nanoseconds */
        const struct cel__val *opt;    /* OPTIONAL: the value, NULL for none */
        const struct cel__ip *ip;      /* IP */
        const struct cel__cidr *cidr;  /* CIDR */
        const struct cel__url *url;    /* URL */
        int fmt;                       /* FORMAT: which named format */
        const struct cel__semver *sv;
        cel__q128 q;                   /* QUANTITY in units of 10^-9 */
        const char *err;               /* ERROR message (scratch arena) */
    } v;
};

struct cel__cidr {
    struct cel__ip ip;   /* as written (not masked) */
    int bits;
};

struct cel__list {
    struct cel__val *items;
    size_t n;
};

struct cel__map {
    struct cel__val *keys, *vals;
    size_t n;
    int missing_is_empty; /* device.attributes: an unknown domain is an empty map */
    int go_keyed;         /* a map literal: cel-go keys a Go map by the values themselves */
};

/* Per-evaluation state; lives on the caller's stack. */
struct cel__ctx {
    struct cel__arena scratch;  /* every value built during the call */
    uint64_t cost, max_cost;
    int aborted;                /* cost/memory limit hit or a panic: errors are no longer absorbed */
    enum dd_rc abort_rc;
    const char *panic;          /* a Go panic cel-go recovers: the whole evaluation's error */
    struct cel__scope *scope;   /* comprehension variables, innermost first */
    struct cel__val device;
    int kube_minor;             /* the program's release, whose cel-go evaluates (0: the default):
                                   includes() and or/orValue changed in 1.37 */
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
/* Where cel-go panics, which its evaluation recovers: ends the evaluation with that error. */
struct cel__val cel__panic(struct cel__ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Name of a value's type as CEL prints it ("int", "string", ...). */
const char *cel__vkind_name(enum cel__vkind k);
const char *cel__tkind_name(enum cel__tkind k);

/* Equality with CEL semantics (cross-numeric allowed).  Returns 1/0, or -1 when
 * the operands are of incomparable types. */
int cel__val_equal(const struct cel__val *a, const struct cel__val *b);

/* Parses a Kubernetes quantity; 0 on success. */
int cel__quantity_parse(const char *s, size_t n, __int128 *out);
/* The same, and Go's representation of it (struct cel__val's qscale and qdec). */
int cel__quantity_parse_rep(const char *s, size_t n, cel__q128 *out, int32_t *scale, int *dec);
/* Parses a semantic version; 0 on success, else -1 with a reason in *why. */
int cel__semver_parse(struct cel__arena *a, const char *s, size_t n, int normalize,
                      struct cel__semver *out, const char **why);
int cel__semver_cmp(const struct cel__semver *a, const struct cel__semver *b);

/* Ordering with CEL semantics (cross-numeric): -1, 0, 1; 2 unordered (NaN); -2 when
 * the operands cannot be ordered (different or unorderable types). */
/* a op b for the arithmetic operators (+ - * / %), as cel-go's traits dispatch them. */
struct cel__val cel__arith(struct cel__ctx *c, int op, const struct cel__val *a,
                           const struct cel__val *b);
int cel__val_compare(const struct cel__val *a, const struct cel__val *b);

/* ---- Library functions shared between files ---------------------------------- */

#define CEL__FN(name) \
    struct cel__val name(struct cel__ctx *c, const struct cel__node *call, struct cel__val *a, \
                         size_t n)

#define CEL__LIB_FNS(X) \
    X(cel__fn_char_at) X(cel__fn_index_of) X(cel__fn_last_index_of) X(cel__fn_replace) \
    X(cel__fn_split) X(cel__fn_substring) X(cel__fn_trim) X(cel__fn_join) X(cel__fn_quote) \
    X(cel__fn_find) X(cel__fn_find_all) X(cel__fn_is_sorted) X(cel__fn_sum) X(cel__fn_min) \
    X(cel__fn_max) X(cel__fn_list_index_of) X(cel__fn_list_last_index_of) \
    X(cel__fn_lists_range) X(cel__fn_slice) X(cel__fn_flatten) X(cel__fn_distinct) \
    X(cel__fn_reverse) X(cel__fn_sort) X(cel__fn_sets_contains) X(cel__fn_sets_equivalent) \
    X(cel__fn_sets_intersects) X(cel__fn_opt_of) X(cel__fn_opt_of_non_zero) \
    X(cel__fn_opt_none) X(cel__fn_opt_value) X(cel__fn_opt_has_value) X(cel__fn_opt_or) \
    X(cel__fn_opt_or_value) X(cel__fn_opt_unwrap) X(cel__fn_list_first) X(cel__fn_list_last) \
    X(cel__fn_includes) X(cel__fn_timestamp) X(cel__fn_duration) X(cel__fn_get_full_year) \
    X(cel__fn_get_month) X(cel__fn_get_day_of_year) X(cel__fn_get_day_of_month) \
    X(cel__fn_get_date) X(cel__fn_get_day_of_week) X(cel__fn_get_hours) \
    X(cel__fn_get_minutes) X(cel__fn_get_seconds) X(cel__fn_get_milliseconds) \
    X(cel__fn_ip) X(cel__fn_is_ip) X(cel__fn_ip_is_canonical) X(cel__fn_ip_family) \
    X(cel__fn_ip_is_unspecified) X(cel__fn_ip_is_loopback) \
    X(cel__fn_ip_is_link_local_multicast) X(cel__fn_ip_is_link_local_unicast) \
    X(cel__fn_ip_is_global_unicast) X(cel__fn_cidr) X(cel__fn_is_cidr) \
    X(cel__fn_cidr_contains_ip) X(cel__fn_cidr_contains_cidr) X(cel__fn_cidr_prefix_length) \
    X(cel__fn_cidr_masked) X(cel__fn_net_string) X(cel__fn_format) X(cel__fn_k8s_format) \
    X(cel__fn_k8s_format_named) X(cel__fn_k8s_format_validate) X(cel__fn_url) \
    X(cel__fn_is_url) X(cel__fn_url_part) X(cel__fn_url_query)

#define CEL__DECLARE_FN(name) CEL__FN(name);
CEL__LIB_FNS(CEL__DECLARE_FN)
#undef CEL__DECLARE_FN

struct cel__val cel__optional(struct cel__ctx *c, const struct cel__val *v); /* NULL: none */
struct cel__val cel__sorted(struct cel__ctx *c, const struct cel__list *in,
                            const struct cel__list *keys);
struct cel__val cel__timestamp(struct cel__ctx *c, int64_t sec, int32_t nsec);
struct cel__val cel__time_arith(struct cel__ctx *c, int add, const struct cel__val *x,
                                const struct cel__val *y, int *handled);
int cel__parse_rfc3339(const char *s, size_t n, int64_t *sec, int32_t *nsec);
size_t cel__format_rfc3339(int64_t sec, int32_t nsec, char *buf, size_t cap);
int cel__parse_duration(const char *s, size_t n, int64_t *out);
size_t cel__format_duration(int64_t ns, char *buf, size_t cap);

/* Go's strconv.FormatFloat(d, 'g', -1, 64). */
size_t cel__fmt_double(double d, char *buf, size_t cap);
/* The strings extension's check of a literal format string with a list literal;
 * 0, or -1 with *why.  type_of gives an argument's final type. */
int cel__check_format(const struct cel__node *call,
                      const struct cel__type *(*type_of)(const struct cel__node *, void *),
                      void *ctx, const char **why);

/* RE2 (cel_re2.cc): 1 match at s[*mo, *mo + *ml), 0 none, -1 bad pattern (*err). */
int cel__re2_find(const char *pat, size_t pn, const char *s, size_t sn, size_t from, size_t *mo,
                  size_t *ml, const char **err);
int cel__re2_valid(const char *pat, size_t pn, const char **err);

/* Evaluation outside cel_eval_device, for explanations: a context on dev (0, or -1 when the
 * device itself cannot be evaluated), any node's value, and the context's release. */
int cel__ctx_init(struct cel__ctx *c, const struct cel_program *p, const struct cel_device *dev);
struct cel__val cel__eval_node(struct cel__ctx *c, const struct cel__node *n);
void cel__ctx_free(struct cel__ctx *c);
/* A value as CEL text; n printed back as CEL source. Both truncate to cap. */
size_t cel__val_text(struct cel__ctx *c, const struct cel__val *v, char *buf, size_t cap);
size_t cel__unparse(const struct cel__node *n, char *buf, size_t cap);

/* Cap on any string or list built during evaluation; larger results become errors.
 * 1 MiB is far beyond any selector's needs and keeps a hostile expression from
 * exhausting memory before the cost limit trips. */
#define CEL__MAX_BUILD (1u << 20)
/* Hard cap on the per-call scratch arena. */
#define CEL__MAX_SCRATCH (64u << 20)

#endif
