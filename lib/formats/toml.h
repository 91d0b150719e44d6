/*
 * toml.h - a small strict TOML reader, enough for containerd's config.toml.
 *
 * Supported: tables [a.b], arrays of tables [[a.b]], dotted and quoted keys
 * ("..." and '...'), inline tables, basic and literal strings (and their
 * multi-line forms) with escapes, booleans, integers (decimal, hex, octal,
 * binary, underscores), floats, arrays (mixed allowed, multi-line, trailing
 * comma), comments.  Dates/times are rejected with a clear error.
 * Strict: duplicate keys, redefined tables and malformed values are errors
 * with "line N:" positions.  Input is capped (size, nesting).
 */
#ifndef DD_TOML_H
#define DD_TOML_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum toml_type { TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_ARRAY, TOML_TABLE };

struct toml_value;

struct toml_kv {
    char *key;               /* owned by the table */
    struct toml_value *val;  /* owned by the table */
};

struct toml_value {
    enum toml_type type;
    int line;                /* 1-based line where the value (or table header) appears */
    union {
        char *s;             /* TOML_STRING, NUL-terminated, owned */
        int64_t i;           /* TOML_INT */
        double f;            /* TOML_FLOAT */
        int b;               /* TOML_BOOL */
        struct {
            struct toml_value **items;
            size_t n, cap;
        } arr;               /* TOML_ARRAY; items owned */
        struct {
            struct toml_kv *kv;
            size_t n, cap;
        } tab;               /* TOML_TABLE; in definition order */
    } u;
};

/*
 * Parses buf[0..len).  Returns the root table (free with toml_free) or NULL
 * with err filled: DD_EPARSE (err->line set, message "line N: ..."),
 * DD_ETOOBIG, DD_ENOMEM.
 */
struct toml_value *toml_parse(const char *buf, size_t len, struct dd_err *err);
/*
 * Details of the contract above: buf is borrowed and need not be
 * NUL-terminated.  Caps: 4 MiB of input, 64 levels of arrays / inline tables,
 * 64 parts per key, 2^20 values (all DD_ETOOBIG).  The whole input must be
 * valid UTF-8 (a leading BOM is skipped).  Strings may not contain NUL
 * (\u0000 is an error); CRLF inside multi-line strings becomes LF.  The root
 * table has line 1; an implicitly created table gets the line of the header
 * or key that created it, and a later [header] that defines it moves it there.
 * Table rules: a [header] may define a table that earlier headers only
 * implied, never one created by dotted keys or an inline table; dotted keys
 * may extend tables made by dotted keys (or only implied by headers) but not
 * [header]-defined or inline ones; [[x]] appends only to arrays made by [[x]].
 * Error messages name keys relative to the current table, as written.
 */

/* Frees v and everything below it.  NULL is allowed. */
/* v must be a tree returned by toml_parse (its nodes carry private state). */
void toml_free(struct toml_value *v);

/* The value of key in table t, or NULL (also when t is not a table).  Borrowed. */
const struct toml_value *toml_get(const struct toml_value *t, const char *key);

/* Follows keys (NULL-terminated list) from t.  Borrowed; NULL when any step is missing. */
const struct toml_value *toml_get_path(const struct toml_value *t, const char *const *keys);

#endif
