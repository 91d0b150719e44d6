/*
 * err.h - the one error vocabulary of dra-doctor's core.
 *
 * Every fallible function in lib/ either returns an enum dd_rc, or returns a
 * pointer that is NULL on failure; in both cases the reason is written into a
 * caller-supplied struct dd_err (which may be NULL when the caller does not
 * care).  Messages are complete sentences for people, already carrying the
 * position ("file:line:col: ...") when one is known.
 */
#ifndef DD_ERR_H
#define DD_ERR_H

#include <stddef.h>

enum dd_rc {
    DD_OK = 0,
    DD_ENOMEM,   /* allocation failed */
    DD_EINVAL,   /* caller passed something unusable (usage error) */
    DD_ETOOBIG,  /* input exceeded a configured cap (size, depth, aliases, cost) */
    DD_EPARSE,   /* malformed input: YAML, JSON, TOML or CEL syntax */
    DD_ETYPE,    /* well-formed, but of the wrong type (CEL type check, field types) */
    DD_EIO,      /* reading a file or stream failed */
    DD_ENOTFOUND /* a named thing does not exist */
};

#define DD_ERR_MSG_MAX 1024

struct dd_err {
    enum dd_rc rc;              /* DD_OK until a failure is recorded */
    int line;                   /* 1-based line of the failure, 0 when unknown */
    int col;                    /* 1-based column, 0 when unknown */
    char msg[DD_ERR_MSG_MAX];   /* human-readable, NUL-terminated */
};

/* Returns a static, lower-case description of rc; never NULL. */
const char *dd_strerror(enum dd_rc rc);

/*
 * Records rc and a printf-style message in err (err may be NULL) and returns
 * rc, so callers can write `return dd_failf(err, DD_EPARSE, "...")`.
 * The position fields are left as they are.
 */
enum dd_rc dd_failf(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Same, and also records line and col. */
enum dd_rc dd_failf_at(struct dd_err *err, enum dd_rc rc, int line, int col,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Resets err to DD_OK with an empty message.  err may be NULL. */
void dd_err_clear(struct dd_err *err);

#endif
