#include "json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *vpath(const cJSON *o, va_list ap)
{
    const char *k;

    while (o && (k = va_arg(ap, const char *)))
        o = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return o;
}

const cJSON *dd_json_path(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return o;
}

const char *dd_json_str(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsString(o) ? o->valuestring : NULL;
}

const cJSON *dd_json_arr(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsArray(o) ? o : NULL;
}

int dd_json_true(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsTrue(o);
}

int dd_json_int(const cJSON *o, int64_t *out, ...)
{
    va_list ap;
    double d;

    va_start(ap, out);
    o = vpath(o, ap);
    va_end(ap);
    if (cJSON_IsString(o))
        return dd_quantity_int(o->valuestring, out);
    if (!cJSON_IsNumber(o))
        return 0;
    d = o->valuedouble;
    /* 2^63 is exact in a double; anything at or above it does not fit. */
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return 0;
    *out = (int64_t)d;
    return 1;
}

int dd_quantity_int(const char *s, int64_t *out)
{
    static const struct { const char *suffix; int64_t mult; } suffixes[] = {
        { "Ki", 1LL << 10 }, { "Mi", 1LL << 20 }, { "Gi", 1LL << 30 },
        { "Ti", 1LL << 40 }, { "Pi", 1LL << 50 }, { "Ei", 1LL << 60 },
        { "k", 1000LL }, { "M", 1000000LL }, { "G", 1000000000LL },
        { "T", 1000000000000LL }, { "P", 1000000000000000LL },
        { "E", 1000000000000000000LL }, { "", 1 },
    };
    char *end;
    long long v;
    size_t i;

    if (!s || !*s || *s == ' ')
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == 'e' || *end == 'E') {
        char *e2;
        long x = strtol(end + 1, &e2, 10);
        if (*e2 || x < 0 || x > 18)
            return 0;
        while (x-- > 0) {
            if (v > LLONG_MAX / 10 || v < LLONG_MIN / 10)
                return 0;
            v *= 10;
        }
        *out = v;
        return 1;
    }
    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcmp(end, suffixes[i].suffix))
            continue;
        if (v > LLONG_MAX / suffixes[i].mult || v < LLONG_MIN / suffixes[i].mult)
            return 0;
        *out = v * suffixes[i].mult;
        return 1;
    }
    return 0;
}

/* Deepest [ / { nesting of buf, outside strings; stops counting past limit. */
static int json_depth(const char *buf, size_t len, int limit)
{
    int depth = 0, max = 0, in_str = 0;
    size_t i;

    for (i = 0; i < len && max <= limit; i++) {
        char c = buf[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                max = depth;
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return max;
}

static void json_position(const char *buf, const char *at, int *line, int *col)
{
    const char *p;

    *line = 1;
    *col = 1;
    for (p = buf; p < at; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

cJSON *dd_json_parse(const char *buf, size_t len, int max_depth, struct dd_err *err)
{
    const char *end = NULL;
    cJSON *root;
    int line, col;

    if (json_depth(buf, len, max_depth) > max_depth) {
        dd_failf(err, DD_ETOOBIG, "JSON nests deeper than %d levels", max_depth);
        return NULL;
    }
    root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
    if (root) {
        while (end < buf + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
            end++;
        if (end == buf + len)
            return root;
        cJSON_Delete(root);
    }
    if (!end || end < buf || end > buf + len)
        end = buf + len;
    json_position(buf, end, &line, &col);
    dd_failf(err, DD_EPARSE, "malformed JSON at line %d, column %d%s", line, col,
             root ? ": unexpected data after the value" : "");
    return NULL;
}
