/*
 * e2e.h - what the end-to-end programs (and tests/unit/test_install.c) share: a shell
 * runner that captures output.  Included by one .c file each (static definitions).
 */
#ifndef DD_E2E_H
#define DD_E2E_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

/* The last command's stdout and stderr, NUL-terminated. */
static char out[1 << 20];

/* Runs a shell command; returns its exit status and leaves stdout+stderr in out. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[16384];
    va_list ap;
    FILE *p;
    size_t n;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (!(p = popen(cmd, "r")))
        return -1;
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
