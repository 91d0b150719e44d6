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
