#include "err.h"

#include <stdarg.h>
#include <stdio.h>

const char *dd_strerror(enum dd_rc rc)
{
    switch (rc) {
    case DD_OK: return "success";
    case DD_ENOMEM: return "out of memory";
    case DD_EINVAL: return "invalid argument";
    case DD_ETOOBIG: return "input exceeds a limit";
    case DD_EPARSE: return "malformed input";
    case DD_ETYPE: return "type error";
    case DD_EIO: return "I/O error";
    case DD_ENOTFOUND: return "not found";
    }
    return "unknown error";
}

static void vfail(struct dd_err *err, enum dd_rc rc, const char *fmt, va_list ap)
{
    err->rc = rc;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
}

enum dd_rc dd_failf(struct dd_err *err, enum dd_rc rc, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return rc;
    va_start(ap, fmt);
    vfail(err, rc, fmt, ap);
    va_end(ap);
    return rc;
}

enum dd_rc dd_failf_at(struct dd_err *err, enum dd_rc rc, int line, int col,
                       const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return rc;
    err->line = line;
    err->col = col;
    va_start(ap, fmt);
    vfail(err, rc, fmt, ap);
    va_end(ap);
    return rc;
}

void dd_err_clear(struct dd_err *err)
{
    if (!err)
        return;
    err->rc = DD_OK;
    err->line = 0;
    err->col = 0;
    err->msg[0] = '\0';
}
