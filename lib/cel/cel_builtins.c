/*
 * cel_builtins.c - the overload table of the DRA CEL environment (every
 * function and operator Kubernetes declares, with the library that brings it),
 * the standard conversions and string functions, the Kubernetes semver library
 * and the Kubernetes quantity library.  The extension libraries are in
 * cel_lib.c, timestamps and durations in cel_time.c, RE2 in cel_re2.cc.
 */
#include <pthread.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

#define FN(name) \
    static struct cel__val name(struct cel__ctx *c, const struct cel__node *call, \
                                struct cel__val *a, size_t n)

static struct cel__val vbool(int b)
{
    struct cel__val v = {.kind = CEL_V_BOOL};
    v.v.b = b != 0;
    return v;
}

static struct cel__val vint(int64_t i)
{
    struct cel__val v = {.kind = CEL_V_INT};
    v.v.i = i;
    return v;
}

static struct cel__val vstr(struct cel__ctx *c, enum cel__vkind k, const char *s, size_t len)
{
    struct cel__val v = {.kind = k};
    char *p = cel__strndup(&c->scratch, s, len);

    if (!p) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    v.v.str.s = p;
    v.v.str.n = len;
    return v;
}

static struct cel__val bad_args(struct cel__ctx *c, const struct cel__node *call,
                                const struct cel__val *a, size_t n)
{
    if (n >= 2)
        return cel__err(c, "no such overload: %s(%s, %s)", call->name,
                        cel__vkind_name(a[0].kind), cel__vkind_name(a[1].kind));
    if (n == 1)
        return cel__err(c, "no such overload: %s(%s)", call->name, cel__vkind_name(a[0].kind));
    return cel__err(c, "no such overload: %s", call->name);
}

static size_t utf8_len(const char *s, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            k++;
    return k;
}

/* ---- Standard functions ------------------------------------------------------ */

FN(fn_size)
{
    (void)n;
    switch (a[0].kind) {
    case CEL_V_STRING:
        if (cel__charge(c, a[0].v.str.n / 16))
            return cel__abort_val(c);
        return vint((int64_t)utf8_len(a[0].v.str.s, a[0].v.str.n));
    case CEL_V_BYTES: return vint((int64_t)a[0].v.str.n);
    case CEL_V_LIST: return vint((int64_t)a[0].v.list->n);
    case CEL_V_MAP: return vint((int64_t)a[0].v.map->n);
    default: return bad_args(c, call, a, 1);
    }
}

static int both_strings(const struct cel__val *a, size_t n)
{
    return n == 2 && a[0].kind == CEL_V_STRING && a[1].kind == CEL_V_STRING;
}

FN(fn_starts_with)
{
    if (!both_strings(a, n))
        return bad_args(c, call, a, n);
    if (cel__charge(c, a[1].v.str.n))
        return cel__abort_val(c);
    return vbool(a[1].v.str.n <= a[0].v.str.n &&
                 memcmp(a[0].v.str.s, a[1].v.str.s, a[1].v.str.n) == 0);
}

FN(fn_ends_with)
{
    if (!both_strings(a, n))
        return bad_args(c, call, a, n);
    if (cel__charge(c, a[1].v.str.n))
        return cel__abort_val(c);
    return vbool(a[1].v.str.n <= a[0].v.str.n &&
                 memcmp(a[0].v.str.s + a[0].v.str.n - a[1].v.str.n, a[1].v.str.s,
                        a[1].v.str.n) == 0);
}

FN(fn_contains)
{
    if (!both_strings(a, n))
        return bad_args(c, call, a, n);
    if (cel__charge(c, a[0].v.str.n + a[1].v.str.n))
        return cel__abort_val(c);
    if (a[1].v.str.n == 0)
        return vbool(1);
    return vbool(memmem(a[0].v.str.s, a[0].v.str.n, a[1].v.str.s, a[1].v.str.n) != NULL);
}

FN(fn_matches)
{
    const char *err = NULL;
    size_t mo, ml;
    int r;

    if (!both_strings(a, n))
        return bad_args(c, call, a, n);
    if (cel__charge(c, (a[0].v.str.n + a[1].v.str.n) / 16 + 1))
        return cel__abort_val(c);
    r = cel__re2_find(a[1].v.str.s, a[1].v.str.n, a[0].v.str.s, a[0].v.str.n, 0, &mo, &ml, &err);
    if (r < 0)
        return cel__err(c, "%s", err ? err : "invalid regular expression");
    return vbool(r);
}

static struct cel__val change_case(struct cel__ctx *c, const struct cel__val *s, int upper)
{
    struct cel__val v;
    char *p;

    if (cel__charge(c, s->v.str.n))
        return cel__abort_val(c);
    v = vstr(c, CEL_V_STRING, s->v.str.s, s->v.str.n);
    if (v.kind == CEL_V_ERROR)
        return v;
    p = (char *)v.v.str.s;
    for (size_t i = 0; i < v.v.str.n; i++) {
        if (upper && p[i] >= 'a' && p[i] <= 'z')
            p[i] = (char)(p[i] - 'a' + 'A');
        else if (!upper && p[i] >= 'A' && p[i] <= 'Z')
            p[i] = (char)(p[i] - 'A' + 'a');
    }
    return v;
}

FN(fn_lower)
{
    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    return change_case(c, &a[0], 0);
}

FN(fn_upper)
{
    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    return change_case(c, &a[0], 1);
}

/* Parses a whole string as a number with strto*; 0 on success. */
static int parse_whole(const struct cel__val *s, char *buf, size_t cap)
{
    if (s->v.str.n == 0 || s->v.str.n >= cap || memchr(s->v.str.s, '\0', s->v.str.n))
        return -1;
    memcpy(buf, s->v.str.s, s->v.str.n);
    buf[s->v.str.n] = '\0';
    /* strto* skip leading blanks; CEL's conversions do not. */
    return (buf[0] == ' ' || (buf[0] >= '\t' && buf[0] <= '\r')) ? -1 : 0;
}

FN(fn_int)
{
    char buf[64], *end;

    (void)n;
    switch (a[0].kind) {
    case CEL_V_INT: return a[0];
    case CEL_V_TIMESTAMP: return vint(a[0].v.ts.sec);
    case CEL_V_DURATION: return vint(a[0].v.dur);
    case CEL_V_UINT:
        if (a[0].v.u > INT64_MAX)
            return cel__err(c, "integer overflow");
        return vint((int64_t)a[0].v.u);
    case CEL_V_DOUBLE:
        /* Range check in double first: the cast of an out-of-range or NaN
         * double is undefined behaviour. */
        if (!(a[0].v.d > -9223372036854775809.0 && a[0].v.d < 9223372036854775808.0))
            return cel__err(c, "integer overflow");
        return vint((int64_t)a[0].v.d);
    case CEL_V_STRING: {
        long long v;
        if (parse_whole(&a[0], buf, sizeof(buf)))
            return cel__err(c, "cannot convert string to int");
        errno = 0;
        v = strtoll(buf, &end, 10);
        if (errno || *end)
            return cel__err(c, "cannot convert string to int");
        return vint(v);
    }
    default: return bad_args(c, call, a, 1);
    }
}

FN(fn_uint)
{
    char buf[64], *end;
    struct cel__val v = {.kind = CEL_V_UINT};

    (void)n;
    switch (a[0].kind) {
    case CEL_V_UINT: return a[0];
    case CEL_V_INT:
        if (a[0].v.i < 0)
            return cel__err(c, "unsigned integer overflow");
        v.v.u = (uint64_t)a[0].v.i;
        return v;
    case CEL_V_DOUBLE:
        if (!(a[0].v.d > -1.0 && a[0].v.d < 18446744073709551616.0))
            return cel__err(c, "unsigned integer overflow");
        v.v.u = (uint64_t)a[0].v.d;
        return v;
    case CEL_V_STRING:
        if (parse_whole(&a[0], buf, sizeof(buf)) || buf[0] == '-' || buf[0] == '+')
            return cel__err(c, "cannot convert string to uint");
        errno = 0;
        v.v.u = strtoull(buf, &end, 10);
        if (errno || *end)
            return cel__err(c, "cannot convert string to uint");
        return v;
    default: return bad_args(c, call, a, 1);
    }
}

/* Go's underscoreOK: underscores only between digits, or after a base prefix. */
static int go_underscores_ok(const char *s)
{
    char saw = '^';
    int hex = 0;

    if (*s == '-' || *s == '+')
        s++;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || s[1] == 'b' || s[1] == 'B' ||
                        s[1] == 'o' || s[1] == 'O')) {
        hex = s[1] == 'x' || s[1] == 'X';
        s += 2;
        saw = '0';
    }
    for (; *s; s++) {
        if (isdigit((unsigned char)*s) || (hex && isxdigit((unsigned char)*s))) {
            saw = '0';
        } else if (*s == '_') {
            if (saw != '0')
                return 0;
            saw = '_';
        } else {
            if (saw == '_')
                return 0;
            saw = '!';
        }
    }
    return saw != '_';
}

/* strconv.ParseFloat(s, 64), which cel-go's string-to-double conversion is: digit
 * separators, a hexadecimal mantissa only with a 'p' exponent, "inf"/"infinity"/"nan" but
 * not "nan(...)" or a signed NaN, and an overflow is an error.  0, or -1. */
static int go_parse_float(const char *s, double *out)
{
    char buf[128], *end;
    const char *p = s;
    size_t k = 0;

    if (strchr(s, '_')) {
        if (!go_underscores_ok(s))
            return -1;
        for (; *p && k + 1 < sizeof(buf); p++)
            if (*p != '_')
                buf[k++] = *p;
        buf[k] = '\0';
        s = buf;
    }
    p = s + (*s == '-' || *s == '+');
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && !strpbrk(p, "pP"))
        return -1;
    if (strchr(s, '(') || ((*s == '-' || *s == '+') && (p[0] == 'n' || p[0] == 'N')))
        return -1;
    errno = 0;
    *out = strtod(s, &end);
    if (*end || end == s)
        return -1;
    return errno == ERANGE && isinf(*out) ? -1 : 0;
}

FN(fn_double)
{
    char buf[128];
    struct cel__val v = {.kind = CEL_V_DOUBLE};

    (void)n;
    switch (a[0].kind) {
    case CEL_V_DOUBLE: return a[0];
    case CEL_V_INT: v.v.d = (double)a[0].v.i; return v;
    case CEL_V_UINT: v.v.d = (double)a[0].v.u; return v;
    case CEL_V_STRING:
        if (parse_whole(&a[0], buf, sizeof(buf)) || go_parse_float(buf, &v.v.d))
            return cel__err(c, "cannot convert string to double");
        return v;
    default: return bad_args(c, call, a, 1);
    }
}

static int valid_utf8(const char *s, size_t n)
{
    size_t i = 0;

    while (i < n) {
        unsigned char b = (unsigned char)s[i];
        size_t k;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        }
        if ((b & 0xE0) == 0xC0) { k = 1; cp = b & 0x1F; }
        else if ((b & 0xF0) == 0xE0) { k = 2; cp = b & 0x0F; }
        else if ((b & 0xF8) == 0xF0) { k = 3; cp = b & 0x07; }
        else return 0;
        if (n - i <= k)
            return 0;
        for (size_t j = 1; j <= k; j++) {
            if (((unsigned char)s[i + j] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | ((unsigned char)s[i + j] & 0x3F);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k + 1;
    }
    return 1;
}

FN(fn_string)
{
    char buf[64];

    (void)n;
    switch (a[0].kind) {
    case CEL_V_STRING: return a[0];
    case CEL_V_INT: snprintf(buf, sizeof(buf), "%" PRId64, a[0].v.i); break;
    case CEL_V_UINT: snprintf(buf, sizeof(buf), "%" PRIu64, a[0].v.u); break;
    case CEL_V_DOUBLE: cel__fmt_double(a[0].v.d, buf, sizeof(buf)); break;
    case CEL_V_BOOL: snprintf(buf, sizeof(buf), "%s", a[0].v.b ? "true" : "false"); break;
    case CEL_V_BYTES:
        if (!valid_utf8(a[0].v.str.s, a[0].v.str.n))
            return cel__err(c, "invalid UTF-8 in bytes, cannot convert to string");
        return vstr(c, CEL_V_STRING, a[0].v.str.s, a[0].v.str.n);
    case CEL_V_SEMVER: return vstr(c, CEL_V_STRING, a[0].v.sv->text, strlen(a[0].v.sv->text));
    case CEL_V_TIMESTAMP: {
        size_t len = cel__format_rfc3339(a[0].v.ts.sec, a[0].v.ts.nsec, buf, sizeof(buf));
        return vstr(c, CEL_V_STRING, buf, len);
    }
    case CEL_V_DURATION: {
        size_t len = cel__format_duration(a[0].v.dur, buf, sizeof(buf));
        return vstr(c, CEL_V_STRING, buf, len);
    }
    default: return bad_args(c, call, a, 1);
    }
    return vstr(c, CEL_V_STRING, buf, strlen(buf));
}

FN(fn_bytes)
{
    if (a[0].kind == CEL_V_BYTES)
        return a[0];
    if (a[0].kind == CEL_V_STRING)
        return vstr(c, CEL_V_BYTES, a[0].v.str.s, a[0].v.str.n);
    return bad_args(c, call, a, n);
}

FN(fn_bool)
{
    if (a[0].kind == CEL_V_BOOL)
        return a[0];
    if (a[0].kind == CEL_V_STRING) {
        static const char *const t[] = {"1", "t", "true", "TRUE", "True"};
        static const char *const f[] = {"0", "f", "false", "FALSE", "False"};
        for (size_t i = 0; i < 5; i++) {
            if (a[0].v.str.n == strlen(t[i]) && memcmp(a[0].v.str.s, t[i], a[0].v.str.n) == 0)
                return vbool(1);
            if (a[0].v.str.n == strlen(f[i]) && memcmp(a[0].v.str.s, f[i], a[0].v.str.n) == 0)
                return vbool(0);
        }
        return cel__err(c, "type conversion error from 'string' to 'bool'");
    }
    return bad_args(c, call, a, n);
}

FN(fn_dyn)
{
    (void)c; (void)call; (void)n;
    return a[0];
}

FN(fn_type)
{
    struct cel__val v = {.kind = CEL_V_TYPE};

    (void)c; (void)call; (void)n;
    v.v.tname = cel__vkind_name(a[0].kind);
    return v;
}

/* ---- Semantic versions (k8s.io/apiserver/pkg/cel/library/semverlib.go) ------- */

static int ident_ok(const char *s, size_t n, int numeric_no_lead)
{
    int all_digits = 1;

    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              ch == '-'))
            return 0;
        if (ch < '0' || ch > '9')
            all_digits = 0;
    }
    return !(numeric_no_lead && all_digits && n > 1 && s[0] == '0');
}

static int parse_component(const char *s, size_t n, int normalize, uint64_t *out,
                           const char **why)
{
    uint64_t v = 0;

    if (n == 0) {
        *why = "empty version component";
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            *why = "invalid character(s) found in version number";
            return -1;
        }
        if (v > (UINT64_MAX - 9) / 10) {
            *why = "version number out of range";
            return -1;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (!normalize && n > 1 && s[0] == '0') {
        *why = "version number must not contain leading zeroes";
        return -1;
    }
    *out = v;
    return 0;
}

int cel__semver_parse(struct cel__arena *ar, const char *s, size_t n, int normalize,
                      struct cel__semver *out, const char **why)
{
    const char *plus = memchr(s, '+', n), *dash;
    size_t core_end = plus ? (size_t)(plus - s) : n, pre_beg = 0, pre_end = 0;
    uint64_t num[3] = {0, 0, 0};
    size_t ncomp = 0, i, start;
    char buf[96];

    if (n == 0) {
        *why = "version string empty";
        return -1;
    }
    if (normalize && (s[0] == 'v' || s[0] == 'V')) {
        s++;
        n--;
        core_end--;
    }
    if (plus) {
        /* Build metadata: dot-separated identifiers, ignored for precedence. */
        size_t b = core_end + 1;
        for (i = b; i <= n; i++) {
            if (i == n || s[i] == '.') {
                if (!ident_ok(s + b, i - b, 0)) {
                    *why = "invalid build metadata";
                    return -1;
                }
                b = i + 1;
            }
        }
    }
    dash = memchr(s, '-', core_end);
    if (dash) {
        pre_beg = (size_t)(dash - s) + 1;
        pre_end = core_end;
        core_end = (size_t)(dash - s);
        size_t b = pre_beg;
        for (i = b; i <= pre_end; i++) {
            if (i == pre_end || s[i] == '.') {
                if (!ident_ok(s + b, i - b, 1)) {
                    *why = "invalid prerelease identifier";
                    return -1;
                }
                b = i + 1;
            }
        }
    }
    start = 0;
    for (i = 0; i <= core_end; i++) {
        if (i == core_end || s[i] == '.') {
            if (ncomp == 3) {
                *why = "too many version components";
                return -1;
            }
            if (parse_component(s + start, i - start, normalize, &num[ncomp], why))
                return -1;
            ncomp++;
            start = i + 1;
        }
    }
    if (ncomp != 3 && !normalize) {
        *why = "no Major.Minor.Patch elements found";
        return -1;
    }
    out->major = num[0];
    out->minor = num[1];
    out->patch = num[2];
    out->pre = cel__strndup(ar, dash ? s + pre_beg : "", dash ? pre_end - pre_beg : 0);
    if (!out->pre) {
        *why = "out of memory";
        return -1;
    }
    snprintf(buf, sizeof(buf), "%" PRIu64 ".%" PRIu64 ".%" PRIu64 "%s", num[0], num[1], num[2],
             dash ? "-" : "");
    size_t bl = strlen(buf), pl = strlen(out->pre);
    char *text = cel__alloc(ar, bl + pl + 1);
    if (!text) {
        *why = "out of memory";
        return -1;
    }
    memcpy(text, buf, bl);
    memcpy(text + bl, out->pre, pl + 1);
    out->text = text;
    return 0;
}

/* One prerelease identifier ordering (semver 2.0.0 section 11). */
static int pre_ident_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int ad = an > 0, bd = bn > 0;

    for (size_t i = 0; i < an; i++)
        if (a[i] < '0' || a[i] > '9')
            ad = 0;
    for (size_t i = 0; i < bn; i++)
        if (b[i] < '0' || b[i] > '9')
            bd = 0;
    if (ad && bd) {
        /* No leading zeroes, so a longer numeral is the larger number. */
        if (an != bn)
            return an < bn ? -1 : 1;
        int r = memcmp(a, b, an);
        return r < 0 ? -1 : r > 0;
    }
    if (ad != bd)
        return ad ? -1 : 1;
    size_t m = an < bn ? an : bn;
    int r = m ? memcmp(a, b, m) : 0;
    if (r)
        return r < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn;
}

int cel__semver_cmp(const struct cel__semver *a, const struct cel__semver *b)
{
    const char *p, *q;

    if (a->major != b->major)
        return a->major < b->major ? -1 : 1;
    if (a->minor != b->minor)
        return a->minor < b->minor ? -1 : 1;
    if (a->patch != b->patch)
        return a->patch < b->patch ? -1 : 1;
    if (!*a->pre || !*b->pre)
        return (!*a->pre && !*b->pre) ? 0 : (!*a->pre ? 1 : -1);
    p = a->pre;
    q = b->pre;
    for (;;) {
        size_t pn = strcspn(p, "."), qn = strcspn(q, ".");
        int r = pre_ident_cmp(p, pn, q, qn);
        if (r)
            return r;
        p += pn;
        q += qn;
        if (!*p || !*q)
            return (!*p && !*q) ? 0 : (!*p ? -1 : 1);
        p++;
        q++;
    }
}

static struct cel__val make_semver(struct cel__ctx *c, const struct cel__val *s, int normalize,
                                   int test_only)
{
    struct cel__semver *sv = cel__alloc(&c->scratch, sizeof(*sv));
    struct cel__val v = {.kind = CEL_V_SEMVER};
    const char *why = "";

    if (!sv) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    if (cel__charge(c, s->v.str.n / 16))
        return cel__abort_val(c);
    if (cel__semver_parse(&c->scratch, s->v.str.s, s->v.str.n, normalize, sv, &why) != 0) {
        if (test_only)
            return vbool(0);
        return cel__err(c, "could not parse semver: %s", why);
    }
    if (test_only)
        return vbool(1);
    v.v.sv = sv;
    return v;
}

FN(fn_semver)
{
    if (a[0].kind != CEL_V_STRING || (n == 2 && a[1].kind != CEL_V_BOOL))
        return bad_args(c, call, a, n);
    return make_semver(c, &a[0], n == 2 && a[1].v.b, 0);
}

FN(fn_is_semver)
{
    if (a[0].kind != CEL_V_STRING || (n == 2 && a[1].kind != CEL_V_BOOL))
        return bad_args(c, call, a, n);
    return make_semver(c, &a[0], n == 2 && a[1].v.b, 1);
}

FN(fn_sv_major)
{
    (void)call; (void)n;
    if (a[0].v.sv->major > INT64_MAX)
        return cel__err(c, "integer overflow");
    return vint((int64_t)a[0].v.sv->major);
}

FN(fn_sv_minor)
{
    (void)call; (void)n;
    if (a[0].v.sv->minor > INT64_MAX)
        return cel__err(c, "integer overflow");
    return vint((int64_t)a[0].v.sv->minor);
}

FN(fn_sv_patch)
{
    (void)call; (void)n;
    if (a[0].v.sv->patch > INT64_MAX)
        return cel__err(c, "integer overflow");
    return vint((int64_t)a[0].v.sv->patch);
}

static int sv_cmp_args(struct cel__ctx *c, const struct cel__node *call, struct cel__val *a,
                       size_t n, int *r, struct cel__val *e)
{
    if (n != 2 || a[1].kind != CEL_V_SEMVER) {
        *e = bad_args(c, call, a, n);
        return -1;
    }
    *r = cel__semver_cmp(a[0].v.sv, a[1].v.sv);
    return 0;
}

FN(fn_sv_gt)
{
    struct cel__val e;
    int r;
    return sv_cmp_args(c, call, a, n, &r, &e) ? e : vbool(r > 0);
}

FN(fn_sv_lt)
{
    struct cel__val e;
    int r;
    return sv_cmp_args(c, call, a, n, &r, &e) ? e : vbool(r < 0);
}

FN(fn_sv_cmp)
{
    struct cel__val e;
    int r;
    return sv_cmp_args(c, call, a, n, &r, &e) ? e : vint(r);
}

/* ---- Quantities (k8s.io/apimachinery resource.Quantity) ----------------------- */

/*
 * A quantity is held exactly as a 128-bit count of nano-units (10^-9), the
 * finest scale Kubernetes keeps (smaller fractions round up, as
 * resource.Quantity does).  |value| is capped at 10^36 nano-units (10^27
 * units, far beyond "1000E" = 10^21), so sums and differences cannot
 * overflow and all comparisons are exact across suffixes.
 */
#define NANO ((__int128)1000000000)
#define QMAX ((__int128)1000000000000000000 * (__int128)1000000000000000000)

static const struct {
    const char *suffix;
    int exp10, exp2;
} q_suffixes[] = {
    {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
    {"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},    {"k", 3, 0},   {"M", 6, 0},
    {"G", 9, 0},   {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
};

/* suffixHandler.interpret: a suffix of the table, or e/E and an int64 (that Go then
 * truncates to int32). */
static int q_suffix(const char *s, size_t n, int64_t *e10, int *e2)
{
    for (size_t i = 0; i < sizeof(q_suffixes) / sizeof(q_suffixes[0]); i++) {
        if (strlen(q_suffixes[i].suffix) == n && memcmp(q_suffixes[i].suffix, s, n) == 0) {
            *e10 = q_suffixes[i].exp10;
            *e2 = q_suffixes[i].exp2;
            return 0;
        }
    }
    if (n >= 2 && (s[0] == 'e' || s[0] == 'E')) {
        size_t i = 1;
        int neg = 0;
        uint64_t v = 0;
        if (s[i] == '+' || s[i] == '-')
            neg = s[i++] == '-';
        if (i == n)
            return -1;
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9')
                return -1;
            if (v > (UINT64_MAX - 9) / 10)
                return -1;
            v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (v > (uint64_t)INT64_MAX + (uint64_t)neg)
            return -1; /* strconv.ParseInt's range */
        *e10 = (int32_t)(uint32_t)(neg ? -v : v);
        *e2 = 0;
        return 0;
    }
    return -1;
}

/*
 * resource.ParseQuantity: [+-] digits [. digits] suffix, where every part may be empty ("+",
 * "Ki" and "." are zeros), rounded up to nano-units, binary values capped at the largest int64.
 * 0, -1 when s is no quantity, -2 when it is one beyond what is held here (10^27 units, or more
 * than 36 significant digits above the nano-unit).
 */
int cel__quantity_parse(const char *s, size_t n, __int128 *out)
{
    int32_t scale;
    int dec;

    return cel__quantity_parse_rep(s, n, out, &scale, &dec);
}

/* ParseQuantity's fast path: an int64Amount when the digits fit its precision estimate and
 * the value its int64, else an inf.Dec. */
static void q_rep(size_t num, size_t nden, int64_t e10, int e2, __int128 nano, int32_t *scale,
                  int *dec)
{
    *dec = 1;
    *scale = 0;
    if (e2) {
        int64_t precision = 15 - (int64_t)num - (e2 * 3) / 10 - 1;
        if (nden == 0 && precision >= 0 && nano / NANO <= INT64_MAX && nano / NANO >= INT64_MIN)
            *dec = 0;
        return;
    }
    if (18 - (int64_t)(num + nden) >= 0 && e10 - (int64_t)nden >= -9) {
        *dec = 0;
        *scale = (int32_t)(e10 - (int64_t)nden);
    }
}

int cel__quantity_parse_rep(const char *s, size_t n, cel__q128 *out, int32_t *qscale, int *qdec)
{
    size_t i = 0, d0, nd = 0, nden = 0, sig, numlen;
    int neg = 0, e2;
    int64_t e10, scale;
    const char *digits;
    char buf[80];
    __int128 m = 0;
    int round_up = 0, tail = 0;

    if (n == 0)
        return -1;
    if (s[0] == '+' || s[0] == '-')
        neg = s[i++] == '-';
    *qscale = 0;
    *qdec = 0;
    while (i < n && s[i] == '0')
        i++;
    if (i == n) {
        *out = 0;
        return 0;
    }
    d0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, nd++;
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++, nden++;
    }
    {
        size_t sfx = i;
        while (i < n && strchr("eEinumkKMGTP", s[i]))
            i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i < n || q_suffix(s + sfx, n - sfx, &e10, &e2) != 0)
            return -1;
    }
    /* The digits of num and denom together, without leading zeros. */
    digits = s + d0;
    sig = 0;
    for (size_t k = 0; k < nd + nden + (nden ? 1 : 0); k++) {
        char ch = digits[k];
        if (ch == '.' || (sig == 0 && ch == '0'))
            continue;
        if (sig < sizeof(buf))
            buf[sig] = ch;
        else if (ch != '0')
            tail = 1; /* beyond what is kept: it only rounds up */
        sig++;
    }
    /* num without its leading zeros, "0" when none is left (ParseQuantity's len(num)). */
    numlen = nd ? nd : 1;
    if (sig == 0) {
        *out = 0;
        q_rep(numlen, nden, e10, e2, 0, qscale, qdec);
        return 0;
    }
    /* value = D * 10^(e10 - len(denom) + 9) * 2^e2 nano-units; the digits of D below the
     * nano-unit only decide the rounding up. */
    scale = e10 - (int64_t)nden + 9;
    if (scale < 0 && (int64_t)sig + scale <= 0) {
        m = 0;
        round_up = 1;
    } else {
        size_t keep = scale < 0 ? (size_t)((int64_t)sig + scale) : sig;
        if (keep > 36)
            return -2;
        for (size_t k = 0; k < keep; k++)
            m = m * 10 + (buf[k] - '0');
        for (size_t k = keep; k < sig && k < sizeof(buf); k++)
            if (buf[k] != '0')
                round_up = 1;
        round_up |= tail;
        if (e2 && scale < 0 && (round_up || keep < sig)) {
            /* A binary suffix on a value finer than the nano-unit: Go scales before rounding. */
            __int128 whole = 0, p10 = 1;
            size_t drop = sig - keep;
            if (sig > 19 || drop > 18 || tail)
                return -2;
            for (size_t k = 0; k < sig; k++)
                whole = whole * 10 + (buf[k] - '0');
            for (size_t k = 0; k < drop; k++)
                p10 *= 10;
            whole <<= e2;
            m = whole / p10;
            round_up = whole % p10 != 0;
            e2 = 0;
        }
    }
    for (int k = 0; k < e2; k++) {
        if (m > QMAX)
            return -2;
        m *= 2;
    }
    for (int64_t k = 0; scale > 0 && k < scale && m; k++) {
        if (m > QMAX)
            return -2;
        m *= 10;
    }
    if (round_up)
        m += 1;
    /* Binary values beyond the largest int64 are capped there. */
    if (e2 && m > (__int128)INT64_MAX * NANO)
        m = (__int128)INT64_MAX * NANO;
    if (m > QMAX)
        return -2;
    *out = neg ? -m : m;
    q_rep(numlen, nden, e10, e2, m, qscale, qdec);
    return 0;
}

int cel_quantity_parse(const char *s, size_t n, __int128 *nano)
{
    return s ? cel__quantity_parse(s, n, nano) : -1;
}

FN(fn_quantity)
{
    struct cel__val v = {.kind = CEL_V_QUANTITY};

    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    int dec;

    switch (cel__quantity_parse_rep(a[0].v.str.s, a[0].v.str.n, &v.v.q, &v.qscale, &dec)) {
    case 0:
        v.qdec = (unsigned char)dec;
        return v;
    case -2:
        return cel__err(c, "quantity %.*s is beyond what dra-doctor holds exactly (10^27 units, "
                           "36 significant digits); Kubernetes accepts it",
                        (int)(a[0].v.str.n > 64 ? 64 : a[0].v.str.n), a[0].v.str.s);
    default:
        return cel__err(c, "quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    }
}

FN(fn_is_quantity)
{
    __int128 q;

    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    /* A quantity too large to hold here is a quantity all the same. */
    return vbool(cel__quantity_parse(a[0].v.str.s, a[0].v.str.n, &q) != -1);
}

static int q_cmp_args(struct cel__ctx *c, const struct cel__node *call, struct cel__val *a,
                      size_t n, int *r, struct cel__val *e)
{
    if (n != 2 || a[1].kind != CEL_V_QUANTITY) {
        *e = bad_args(c, call, a, n);
        return -1;
    }
    *r = a[0].v.q < a[1].v.q ? -1 : a[0].v.q > a[1].v.q;
    return 0;
}

FN(fn_q_gt)
{
    struct cel__val e;
    int r;
    return q_cmp_args(c, call, a, n, &r, &e) ? e : vbool(r > 0);
}

FN(fn_q_lt)
{
    struct cel__val e;
    int r;
    return q_cmp_args(c, call, a, n, &r, &e) ? e : vbool(r < 0);
}

FN(fn_q_cmp)
{
    struct cel__val e;
    int r;
    return q_cmp_args(c, call, a, n, &r, &e) ? e : vint(r);
}

/* 10^k as a 128-bit integer (k small). */
static __int128 pow10_128(int k)
{
    __int128 p = 1;

    while (k-- > 0)
        p *= 10;
    return p;
}

/* The int64 of an int64Amount (value = nano / 10^(scale + 9)). */
static int64_t q_ival(const struct cel__val *q)
{
    return (int64_t)(q->v.q / pow10_128(q->qscale + 9));
}

static int fits64(__int128 x)
{
    return x <= INT64_MAX && x >= INT64_MIN;
}

/* int64Amount.Add: the representation of a + b when both are int64Amounts (Quantity.Add falls
 * back to inf.Dec when it overflows). */
static void q_add_rep(const struct cel__val *a, const struct cel__val *b, struct cel__val *r)
{
    __int128 av, bv, sum;
    int32_t scale;

    r->qdec = 1;
    r->qscale = 0;
    if (a->qdec || b->qdec)
        return;
    av = q_ival(a);
    bv = q_ival(b);
    if (bv == 0) {
        r->qdec = 0;
        r->qscale = a->qscale;
        return;
    }
    if (av == 0) {
        r->qdec = 0;
        r->qscale = b->qscale;
        return;
    }
    if (a->qscale > b->qscale) {
        if (a->qscale - b->qscale > 18 || !fits64(av *= pow10_128(a->qscale - b->qscale)))
            return;
        scale = b->qscale;
    } else {
        if (b->qscale - a->qscale > 18 || !fits64(bv *= pow10_128(b->qscale - a->qscale)))
            return;
        scale = a->qscale;
    }
    sum = av + bv;
    if (!fits64(sum))
        return;
    r->qdec = 0;
    r->qscale = scale;
}

static struct cel__val q_arith(struct cel__ctx *c, const struct cel__node *call,
                               struct cel__val *a, size_t n, int sign)
{
    struct cel__val v = {.kind = CEL_V_QUANTITY}, rhs = {.kind = CEL_V_QUANTITY};

    if (n == 2 && a[1].kind == CEL_V_QUANTITY)
        rhs = a[1];
    else if (n == 2 && a[1].kind == CEL_V_INT)
        rhs.v.q = (__int128)a[1].v.i * NANO; /* NewQuantity(i, DecimalExponent): scale 0 */
    else
        return bad_args(c, call, a, n);
    if (sign < 0)
        rhs.v.q = -rhs.v.q;
    v.v.q = a[0].v.q + rhs.v.q;
    if (v.v.q > QMAX || v.v.q < -QMAX)
        return cel__err(c, "return error for overflow");
    q_add_rep(&a[0], &rhs, &v);
    return v;
}

FN(fn_q_add)
{
    return q_arith(c, call, a, n, 1);
}

FN(fn_q_sub)
{
    return q_arith(c, call, a, n, -1);
}

FN(fn_q_sign)
{
    (void)c; (void)call; (void)n;
    return vint(a[0].v.q < 0 ? -1 : a[0].v.q > 0);
}

/* Quantity.AsInt64: an int64Amount of a scale of zero or more that fits an int64 (1000m, an
 * int64 at scale -3, does not). */
static int q_is_int64(const struct cel__val *q)
{
    return !q->qdec && q->qscale >= 0 && q->v.q % NANO == 0 && fits64(q->v.q / NANO);
}

FN(fn_q_is_integer)
{
    (void)c; (void)call; (void)n;
    return vbool(q_is_int64(&a[0]));
}

FN(fn_q_as_integer)
{
    (void)call; (void)n;
    if (!q_is_int64(&a[0]))
        return cel__err(c, "cannot convert value to integer");
    return vint((int64_t)(a[0].v.q / NANO));
}

FN(fn_q_as_float)
{
    struct cel__val v = {.kind = CEL_V_DOUBLE};

    (void)c; (void)call; (void)n;
    v.v.d = (double)(a[0].v.q / NANO) + (double)(a[0].v.q % NANO) / 1e9;
    return v;
}

/* ---- The table ------------------------------------------------------------------ */

#define M 1 /* member: x.f(...) */
#define G 0 /* global: f(x, ...) */
#define CMP(op)                                                                          \
    {op, G, "bool,bool>bool", CEL_LIB_STD, NULL}, {op, G, "int,int>bool", CEL_LIB_STD, NULL}, \
    {op, G, "int,double>bool", CEL_LIB_STD, NULL}, {op, G, "int,uint>bool", CEL_LIB_STD, NULL}, \
    {op, G, "uint,uint>bool", CEL_LIB_STD, NULL}, {op, G, "uint,double>bool", CEL_LIB_STD, NULL}, \
    {op, G, "uint,int>bool", CEL_LIB_STD, NULL}, {op, G, "double,double>bool", CEL_LIB_STD, NULL}, \
    {op, G, "double,int>bool", CEL_LIB_STD, NULL}, {op, G, "double,uint>bool", CEL_LIB_STD, NULL}, \
    {op, G, "string,string>bool", CEL_LIB_STD, NULL}, {op, G, "bytes,bytes>bool", CEL_LIB_STD, NULL}, \
    {op, G, "timestamp,timestamp>bool", CEL_LIB_STD, NULL},                              \
    {op, G, "duration,duration>bool", CEL_LIB_STD, NULL}
/* k8s lists.go comparableTypes: the result is the element (min, max) or a bool (isSorted). */
#define LIST_OF(fn, t, res, impl, lib) {fn, M, "list(" t ")>" res, lib, impl}
#define COMPARABLE_IN(fn, impl, R, lib)                                                       \
    LIST_OF(fn, "int", R("int"), impl, lib), LIST_OF(fn, "uint", R("uint"), impl, lib),      \
    LIST_OF(fn, "double", R("double"), impl, lib), LIST_OF(fn, "bool", R("bool"), impl, lib),\
    LIST_OF(fn, "duration", R("duration"), impl, lib),                                       \
    LIST_OF(fn, "timestamp", R("timestamp"), impl, lib),                                     \
    LIST_OF(fn, "string", R("string"), impl, lib), LIST_OF(fn, "bytes", R("bytes"), impl, lib)
#define COMPARABLE(fn, impl, R) COMPARABLE_IN(fn, impl, R, CEL_LIB_K8S_LISTS)
#define ELEM(t) t
#define BOOL(t) "bool"
#define LIST(t) "list(" t ")"
#define TS_ACCESSOR(fn, impl)                                                            \
    {fn, M, "timestamp>int", CEL_LIB_STD, impl}, {fn, M, "timestamp,string>int", CEL_LIB_STD, impl}

const struct cel__overload cel__ovl[] = {
    /* Operators (cel-go common/stdlib/standard.go); the evaluator implements them. */
    {"_?_:_", G, "bool,A,A>A", CEL_LIB_STD, NULL},
    {"!_", G, "bool>bool", CEL_LIB_STD, NULL},
    /* Declaration order matters: the first overload an unbound type parameter fits binds it
     * (cel-go resolveOverload), so `-x.value()` is a double as in cel-go. */
    {"-_", G, "double>double", CEL_LIB_STD, NULL},
    {"-_", G, "int>int", CEL_LIB_STD, NULL},
    {"_==_", G, "A,A>bool", CEL_LIB_STD, NULL},
    {"_!=_", G, "A,A>bool", CEL_LIB_STD, NULL},
    CMP("_<_"), CMP("_<=_"), CMP("_>_"), CMP("_>=_"),
    {"_+_", G, "bytes,bytes>bytes", CEL_LIB_STD, NULL},
    {"_+_", G, "double,double>double", CEL_LIB_STD, NULL},
    {"_+_", G, "duration,duration>duration", CEL_LIB_STD, NULL},
    {"_+_", G, "duration,timestamp>timestamp", CEL_LIB_STD, NULL},
    {"_+_", G, "timestamp,duration>timestamp", CEL_LIB_STD, NULL},
    {"_+_", G, "int,int>int", CEL_LIB_STD, NULL},
    {"_+_", G, "list(A),list(A)>list(A)", CEL_LIB_STD, NULL},
    {"_+_", G, "string,string>string", CEL_LIB_STD, NULL},
    {"_+_", G, "uint,uint>uint", CEL_LIB_STD, NULL},
    {"_-_", G, "double,double>double", CEL_LIB_STD, NULL},
    {"_-_", G, "duration,duration>duration", CEL_LIB_STD, NULL},
    {"_-_", G, "int,int>int", CEL_LIB_STD, NULL},
    {"_-_", G, "timestamp,duration>timestamp", CEL_LIB_STD, NULL},
    {"_-_", G, "timestamp,timestamp>duration", CEL_LIB_STD, NULL},
    {"_-_", G, "uint,uint>uint", CEL_LIB_STD, NULL},
    {"_*_", G, "double,double>double", CEL_LIB_STD, NULL},
    {"_*_", G, "int,int>int", CEL_LIB_STD, NULL},
    {"_*_", G, "uint,uint>uint", CEL_LIB_STD, NULL},
    {"_/_", G, "double,double>double", CEL_LIB_STD, NULL},
    {"_/_", G, "int,int>int", CEL_LIB_STD, NULL},
    {"_/_", G, "uint,uint>uint", CEL_LIB_STD, NULL},
    {"_%_", G, "int,int>int", CEL_LIB_STD, NULL},
    {"_%_", G, "uint,uint>uint", CEL_LIB_STD, NULL},
    {"_[_]", G, "list(A),int>A", CEL_LIB_STD, NULL},
    {"_[_]", G, "map(A,B),A>B", CEL_LIB_STD, NULL},
    {"_[_]", G, "opt(list(A)),int>opt(A)", CEL_LIB_OPTIONAL, NULL},
    {"_[_]", G, "opt(map(A,B)),A>opt(B)", CEL_LIB_OPTIONAL, NULL},
    {"_[?_]", G, "list(A),int>opt(A)", CEL_LIB_OPTIONAL, NULL},
    {"_[?_]", G, "map(A,B),A>opt(B)", CEL_LIB_OPTIONAL, NULL},
    {"_[?_]", G, "opt(list(A)),int>opt(A)", CEL_LIB_OPTIONAL, NULL},
    {"_[?_]", G, "opt(map(A,B)),A>opt(B)", CEL_LIB_OPTIONAL, NULL},
    {"@in", G, "A,list(A)>bool", CEL_LIB_STD, NULL},
    {"@in", G, "A,map(A,B)>bool", CEL_LIB_STD, NULL},

    /* Standard functions. */
    {"size", G, "bytes>int", CEL_LIB_STD, fn_size}, {"size", M, "bytes>int", CEL_LIB_STD, fn_size},
    {"size", G, "list(A)>int", CEL_LIB_STD, fn_size}, {"size", M, "list(A)>int", CEL_LIB_STD, fn_size},
    {"size", G, "map(A,B)>int", CEL_LIB_STD, fn_size}, {"size", M, "map(A,B)>int", CEL_LIB_STD, fn_size},
    {"size", G, "string>int", CEL_LIB_STD, fn_size}, {"size", M, "string>int", CEL_LIB_STD, fn_size},
    {"type", G, "A>type(A)", CEL_LIB_STD, fn_type},
    {"bool", G, "bool>bool", CEL_LIB_STD, fn_bool}, {"bool", G, "string>bool", CEL_LIB_STD, fn_bool},
    {"bytes", G, "bytes>bytes", CEL_LIB_STD, fn_bytes},
    {"bytes", G, "string>bytes", CEL_LIB_STD, fn_bytes},
    {"double", G, "double>double", CEL_LIB_STD, fn_double},
    {"double", G, "int>double", CEL_LIB_STD, fn_double},
    {"double", G, "string>double", CEL_LIB_STD, fn_double},
    {"double", G, "uint>double", CEL_LIB_STD, fn_double},
    {"duration", G, "duration>duration", CEL_LIB_STD, cel__fn_duration},
    {"duration", G, "int>duration", CEL_LIB_INT_DURATION, cel__fn_duration},
    {"duration", G, "string>duration", CEL_LIB_STD, cel__fn_duration},
    {"dyn", G, "A>dyn", CEL_LIB_STD, fn_dyn},
    {"int", G, "int>int", CEL_LIB_STD, fn_int}, {"int", G, "double>int", CEL_LIB_STD, fn_int},
    {"int", G, "duration>int", CEL_LIB_STD, fn_int}, {"int", G, "string>int", CEL_LIB_STD, fn_int},
    {"int", G, "timestamp>int", CEL_LIB_STD, fn_int}, {"int", G, "uint>int", CEL_LIB_STD, fn_int},
    {"string", G, "string>string", CEL_LIB_STD, fn_string},
    {"string", G, "bool>string", CEL_LIB_STD, fn_string},
    {"string", G, "bytes>string", CEL_LIB_STD, fn_string},
    {"string", G, "double>string", CEL_LIB_STD, fn_string},
    {"string", G, "duration>string", CEL_LIB_STD, fn_string},
    {"string", G, "int>string", CEL_LIB_STD, fn_string},
    {"string", G, "timestamp>string", CEL_LIB_STD, fn_string},
    {"string", G, "uint>string", CEL_LIB_STD, fn_string},
    {"timestamp", G, "timestamp>timestamp", CEL_LIB_STD, cel__fn_timestamp},
    {"timestamp", G, "int>timestamp", CEL_LIB_STD, cel__fn_timestamp},
    {"timestamp", G, "string>timestamp", CEL_LIB_STD, cel__fn_timestamp},
    {"uint", G, "uint>uint", CEL_LIB_STD, fn_uint}, {"uint", G, "double>uint", CEL_LIB_STD, fn_uint},
    {"uint", G, "int>uint", CEL_LIB_STD, fn_uint}, {"uint", G, "string>uint", CEL_LIB_STD, fn_uint},
    {"contains", M, "string,string>bool", CEL_LIB_STD, fn_contains},
    {"endsWith", M, "string,string>bool", CEL_LIB_STD, fn_ends_with},
    {"startsWith", M, "string,string>bool", CEL_LIB_STD, fn_starts_with},
    {"matches", G, "string,string>bool", CEL_LIB_STD, fn_matches},
    {"matches", M, "string,string>bool", CEL_LIB_STD, fn_matches},
    TS_ACCESSOR("getFullYear", cel__fn_get_full_year),
    TS_ACCESSOR("getMonth", cel__fn_get_month),
    TS_ACCESSOR("getDayOfYear", cel__fn_get_day_of_year),
    TS_ACCESSOR("getDayOfMonth", cel__fn_get_day_of_month),
    TS_ACCESSOR("getDate", cel__fn_get_date),
    TS_ACCESSOR("getDayOfWeek", cel__fn_get_day_of_week),
    TS_ACCESSOR("getHours", cel__fn_get_hours),
    TS_ACCESSOR("getMinutes", cel__fn_get_minutes),
    TS_ACCESSOR("getSeconds", cel__fn_get_seconds),
    TS_ACCESSOR("getMilliseconds", cel__fn_get_milliseconds),
    {"getHours", M, "duration>int", CEL_LIB_STD, cel__fn_get_hours},
    {"getMinutes", M, "duration>int", CEL_LIB_STD, cel__fn_get_minutes},
    {"getSeconds", M, "duration>int", CEL_LIB_STD, cel__fn_get_seconds},
    {"getMilliseconds", M, "duration>int", CEL_LIB_STD, cel__fn_get_milliseconds},

    /* cel-go ext.Strings(2). */
    {"charAt", M, "string,int>string", CEL_LIB_STRINGS, cel__fn_char_at},
    {"indexOf", M, "string,string>int", CEL_LIB_STRINGS, cel__fn_index_of},
    {"indexOf", M, "string,string,int>int", CEL_LIB_STRINGS, cel__fn_index_of},
    {"lastIndexOf", M, "string,string>int", CEL_LIB_STRINGS, cel__fn_last_index_of},
    {"lastIndexOf", M, "string,string,int>int", CEL_LIB_STRINGS, cel__fn_last_index_of},
    {"lowerAscii", M, "string>string", CEL_LIB_STRINGS, fn_lower},
    {"upperAscii", M, "string>string", CEL_LIB_STRINGS, fn_upper},
    {"replace", M, "string,string,string>string", CEL_LIB_STRINGS, cel__fn_replace},
    {"replace", M, "string,string,string,int>string", CEL_LIB_STRINGS, cel__fn_replace},
    {"split", M, "string,string>list(string)", CEL_LIB_STRINGS, cel__fn_split},
    {"split", M, "string,string,int>list(string)", CEL_LIB_STRINGS, cel__fn_split},
    {"substring", M, "string,int>string", CEL_LIB_STRINGS, cel__fn_substring},
    {"substring", M, "string,int,int>string", CEL_LIB_STRINGS, cel__fn_substring},
    {"trim", M, "string>string", CEL_LIB_STRINGS, cel__fn_trim},
    {"join", M, "list(string)>string", CEL_LIB_STRINGS, cel__fn_join},
    {"join", M, "list(string),string>string", CEL_LIB_STRINGS, cel__fn_join},
    {"strings.quote", G, "string>string", CEL_LIB_STRINGS, cel__fn_quote},
    {"format", M, "string,list(dyn)>string", CEL_LIB_STRINGS, cel__fn_format},

    /* k8s.io/apiserver/pkg/cel/library: regex, lists. */
    {"find", M, "string,string>string", CEL_LIB_K8S_REGEX, cel__fn_find},
    {"findAll", M, "string,string>list(string)", CEL_LIB_K8S_REGEX, cel__fn_find_all},
    {"findAll", M, "string,string,int>list(string)", CEL_LIB_K8S_REGEX, cel__fn_find_all},
    COMPARABLE("isSorted", cel__fn_is_sorted, BOOL),
    {"sum", M, "list(int)>int", CEL_LIB_K8S_LISTS, cel__fn_sum},
    {"sum", M, "list(uint)>uint", CEL_LIB_K8S_LISTS, cel__fn_sum},
    {"sum", M, "list(double)>double", CEL_LIB_K8S_LISTS, cel__fn_sum},
    {"sum", M, "list(duration)>duration", CEL_LIB_K8S_LISTS, cel__fn_sum},
    COMPARABLE("max", cel__fn_max, ELEM),
    COMPARABLE("min", cel__fn_min, ELEM),
    {"indexOf", M, "list(A),A>int", CEL_LIB_K8S_LISTS, cel__fn_list_index_of},
    {"lastIndexOf", M, "list(A),A>int", CEL_LIB_K8S_LISTS, cel__fn_list_last_index_of},

    /* cel-go ext.Lists(3). */
    {"lists.range", G, "int>list(int)", CEL_LIB_LISTS, cel__fn_lists_range},
    {"slice", M, "list(A),int,int>list(A)", CEL_LIB_LISTS, cel__fn_slice},
    {"flatten", M, "list(list(A))>list(A)", CEL_LIB_LISTS, cel__fn_flatten},
    {"flatten", M, "list(A),int>list(dyn)", CEL_LIB_LISTS, cel__fn_flatten},
    {"distinct", M, "list(A)>list(A)", CEL_LIB_LISTS, cel__fn_distinct},
    {"reverse", M, "list(A)>list(A)", CEL_LIB_LISTS, cel__fn_reverse},
    COMPARABLE_IN("sort", cel__fn_sort, LIST, CEL_LIB_LISTS),

    /* cel-go ext.Sets(). */
    {"sets.contains", G, "list(A),list(A)>bool", CEL_LIB_SETS, cel__fn_sets_contains},
    {"sets.equivalent", G, "list(A),list(A)>bool", CEL_LIB_SETS, cel__fn_sets_equivalent},
    {"sets.intersects", G, "list(A),list(A)>bool", CEL_LIB_SETS, cel__fn_sets_intersects},

    /* cel.OptionalTypes(). */
    {"optional.of", G, "A>opt(A)", CEL_LIB_OPTIONAL, cel__fn_opt_of},
    {"optional.ofNonZeroValue", G, "A>opt(A)", CEL_LIB_OPTIONAL, cel__fn_opt_of_non_zero},
    {"optional.none", G, ">opt(A)", CEL_LIB_OPTIONAL, cel__fn_opt_none},
    {"value", M, "opt(A)>A", CEL_LIB_OPTIONAL, cel__fn_opt_value},
    {"hasValue", M, "opt(A)>bool", CEL_LIB_OPTIONAL, cel__fn_opt_has_value},
    {"or", M, "opt(A),opt(A)>opt(A)", CEL_LIB_OPTIONAL, cel__fn_opt_or},
    {"orValue", M, "opt(A),A>A", CEL_LIB_OPTIONAL, cel__fn_opt_or_value},
    {"optional.unwrap", G, "list(opt(A))>list(A)", CEL_LIB_OPTIONAL, cel__fn_opt_unwrap},
    {"unwrapOpt", M, "list(opt(A))>list(A)", CEL_LIB_OPTIONAL, cel__fn_opt_unwrap},
    {"first", M, "list(A)>opt(A)", CEL_LIB_OPTIONAL, cel__fn_list_first},
    {"last", M, "list(A)>opt(A)", CEL_LIB_OPTIONAL, cel__fn_list_last},

    /* k8s.io/apiserver/pkg/cel/library: semver (version 1), quantity. */
    {"semver", G, "string>semver", CEL_LIB_SEMVER, fn_semver},
    {"semver", G, "string,bool>semver", CEL_LIB_SEMVER, fn_semver},
    {"isSemver", G, "string>bool", CEL_LIB_SEMVER, fn_is_semver},
    {"isSemver", G, "string,bool>bool", CEL_LIB_SEMVER, fn_is_semver},
    {"isGreaterThan", M, "semver,semver>bool", CEL_LIB_SEMVER, fn_sv_gt},
    {"isLessThan", M, "semver,semver>bool", CEL_LIB_SEMVER, fn_sv_lt},
    {"compareTo", M, "semver,semver>int", CEL_LIB_SEMVER, fn_sv_cmp},
    {"major", M, "semver>int", CEL_LIB_SEMVER, fn_sv_major},
    {"minor", M, "semver>int", CEL_LIB_SEMVER, fn_sv_minor},
    {"patch", M, "semver>int", CEL_LIB_SEMVER, fn_sv_patch},
    {"quantity", G, "string>quantity", CEL_LIB_QUANTITY, fn_quantity},
    {"isQuantity", G, "string>bool", CEL_LIB_QUANTITY, fn_is_quantity},
    {"sign", G, "quantity>int", CEL_LIB_QUANTITY, fn_q_sign},
    {"isGreaterThan", M, "quantity,quantity>bool", CEL_LIB_QUANTITY, fn_q_gt},
    {"isLessThan", M, "quantity,quantity>bool", CEL_LIB_QUANTITY, fn_q_lt},
    {"compareTo", M, "quantity,quantity>int", CEL_LIB_QUANTITY, fn_q_cmp},
    {"asApproximateFloat", M, "quantity>double", CEL_LIB_QUANTITY, fn_q_as_float},
    {"asInteger", M, "quantity>int", CEL_LIB_QUANTITY, fn_q_as_integer},
    {"isInteger", M, "quantity>bool", CEL_LIB_QUANTITY, fn_q_is_integer},
    {"add", M, "quantity,quantity>quantity", CEL_LIB_QUANTITY, fn_q_add},
    {"add", M, "quantity,int>quantity", CEL_LIB_QUANTITY, fn_q_add},
    {"sub", M, "quantity,quantity>quantity", CEL_LIB_QUANTITY, fn_q_sub},
    {"sub", M, "quantity,int>quantity", CEL_LIB_QUANTITY, fn_q_sub},

    /* k8s.io/apiserver/pkg/cel/library: urls. */
    {"url", G, "string>url", CEL_LIB_K8S_URLS, cel__fn_url},
    {"isURL", G, "string>bool", CEL_LIB_K8S_URLS, cel__fn_is_url},
    {"getScheme", M, "url>string", CEL_LIB_K8S_URLS, cel__fn_url_part},
    {"getHost", M, "url>string", CEL_LIB_K8S_URLS, cel__fn_url_part},
    {"getHostname", M, "url>string", CEL_LIB_K8S_URLS, cel__fn_url_part},
    {"getPort", M, "url>string", CEL_LIB_K8S_URLS, cel__fn_url_part},
    {"getEscapedPath", M, "url>string", CEL_LIB_K8S_URLS, cel__fn_url_part},
    {"getQuery", M, "url>map(string,list(string))", CEL_LIB_K8S_URLS, cel__fn_url_query},

    /* k8s.io/apiserver/pkg/cel/library: ip, cidr. */
    {"ip", G, "string>ip", CEL_LIB_IP, cel__fn_ip},
    {"isIP", G, "string>bool", CEL_LIB_IP, cel__fn_is_ip},
    {"ip.isCanonical", G, "string>bool", CEL_LIB_IP, cel__fn_ip_is_canonical},
    {"family", M, "ip>int", CEL_LIB_IP, cel__fn_ip_family},
    {"isUnspecified", M, "ip>bool", CEL_LIB_IP, cel__fn_ip_is_unspecified},
    {"isLoopback", M, "ip>bool", CEL_LIB_IP, cel__fn_ip_is_loopback},
    {"isLinkLocalMulticast", M, "ip>bool", CEL_LIB_IP, cel__fn_ip_is_link_local_multicast},
    {"isLinkLocalUnicast", M, "ip>bool", CEL_LIB_IP, cel__fn_ip_is_link_local_unicast},
    {"isGlobalUnicast", M, "ip>bool", CEL_LIB_IP, cel__fn_ip_is_global_unicast},
    {"string", G, "ip>string", CEL_LIB_IP, cel__fn_net_string},
    {"cidr", G, "string>cidr", CEL_LIB_CIDR, cel__fn_cidr},
    {"isCIDR", G, "string>bool", CEL_LIB_CIDR, cel__fn_is_cidr},
    {"containsIP", M, "cidr,string>bool", CEL_LIB_CIDR, cel__fn_cidr_contains_ip},
    {"containsIP", M, "cidr,ip>bool", CEL_LIB_CIDR, cel__fn_cidr_contains_ip},
    {"containsCIDR", M, "cidr,string>bool", CEL_LIB_CIDR, cel__fn_cidr_contains_cidr},
    {"containsCIDR", M, "cidr,cidr>bool", CEL_LIB_CIDR, cel__fn_cidr_contains_cidr},
    {"ip", M, "cidr>ip", CEL_LIB_CIDR, cel__fn_ip},
    {"prefixLength", M, "cidr>int", CEL_LIB_CIDR, cel__fn_cidr_prefix_length},
    {"masked", M, "cidr>cidr", CEL_LIB_CIDR, cel__fn_cidr_masked},
    {"string", G, "cidr>string", CEL_LIB_CIDR, cel__fn_net_string},

    /* k8s.io/apiserver/pkg/cel/library: format. */
    {"format.dns1123Label", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.dns1123Subdomain", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.dns1035Label", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.qualifiedName", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.dns1123LabelPrefix", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.dns1123SubdomainPrefix", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.dns1035LabelPrefix", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.labelValue", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.uri", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.uuid", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.byte", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.date", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.datetime", G, ">format", CEL_LIB_FORMAT, cel__fn_k8s_format},
    {"format.named", G, "string>opt(format)", CEL_LIB_FORMAT, cel__fn_k8s_format_named},
    {"validate", M, "format,string>opt(list(string))", CEL_LIB_FORMAT, cel__fn_k8s_format_validate},

    /* k8s.io/dynamic-resource-allocation, DRAListTypeAttributes (1.36). */
    {"includes", M, "dyn,dyn>bool", CEL_LIB_INCLUDES, cel__fn_includes},
};

const size_t cel__novl = sizeof(cel__ovl) / sizeof(cel__ovl[0]);

static struct cel__sig *sigs;
static pthread_once_t sigs_once = PTHREAD_ONCE_INIT;
static struct cel__arena sig_arena; /* lives for the process: the table is static */

static void parse_sigs(void)
{
    struct cel__types ts = {&sig_arena, {0}, 0, 0};
    struct cel__sig *s = calloc(cel__novl, sizeof(*s));

    if (!s)
        return;
    for (size_t i = 0; i < cel__novl; i++) {
        const char *p = cel__ovl[i].sig;
        while (*p && *p != '>') {
            if (s[i].nargs == 4) {
                ts.oom = 1;
                break;
            }
            s[i].arg[s[i].nargs++] = cel__type_parse(&ts, &p);
            if (*p == ',')
                p++;
        }
        if (*p == '>')
            p++;
        s[i].result = cel__type_parse(&ts, &p);
    }
    if (ts.oom) {
        free(s);
        return;
    }
    sigs = s;
}

const struct cel__sig *cel__sigs(void)
{
    pthread_once(&sigs_once, parse_sigs);
    return sigs;
}

/* The Kubernetes minor version whose base environment first declares each library
 * (k8s.io/apiserver pkg/cel/environment/base.go; DRA's cel/compile.go). */
static const int lib_since[CEL_LIB__COUNT] = {
    [CEL_LIB_STD] = 0, [CEL_LIB_K8S_URLS] = 0, [CEL_LIB_K8S_REGEX] = 0,
    [CEL_LIB_K8S_LISTS] = 0, [CEL_LIB_QUANTITY] = 28, [CEL_LIB_OPTIONAL] = 28,
    [CEL_LIB_STRINGS] = 29, [CEL_LIB_SETS] = 29, [CEL_LIB_IP] = 30, [CEL_LIB_CIDR] = 30,
    [CEL_LIB_FORMAT] = 31, [CEL_LIB_BIND] = 31, [CEL_LIB_TWOVAR] = 32, [CEL_LIB_SEMVER] = 33,
    [CEL_LIB_LISTS] = 34, [CEL_LIB_INCLUDES] = 36,
};

int cel__lib_enabled(const struct cel_env *env, enum cel__lib lib)
{
    /* New objects are validated against the minimum compatibility version (one
     * minor back), so that a rollback can still read what was written. */
    int v = env->stored ? env->kube_minor : env->kube_minor - 1;

    /* A feature-gated option is in the new-expression environment when its gate is on,
     * whatever its version (environment.VersionedOptions.FeatureEnabled); the stored
     * environment ignores gates and versions (DRA's includes from 1.36, the lists
     * library's version 1 from 1.37). */
    if (lib == CEL_LIB_INCLUDES)
        return (env->features & CEL_FEATURE_LIST_ATTRIBUTES) != 0 ||
               (env->stored && env->kube_minor >= 36);
    /* Which cel-go the release's binaries link, not a compatibility version: 1.37's
     * (v0.29) no longer declares duration(int), for new and stored expressions alike. */
    if (lib == CEL_LIB_INT_DURATION)
        return env->kube_minor <= 36;
    return lib_since[lib] <= v;
}

/* The stored environment holds every device declaration, the newest last (it wins): from 1.37
 * the one with dyn attributes and allowMultipleAllocations; before, allowMultipleAllocations
 * with attributes of the unknown type. */
int cel__env_dyn_attributes(const struct cel_env *env)
{
    return (env->features & CEL_FEATURE_LIST_ATTRIBUTES) ||
           (env->stored && env->kube_minor >= 37);
}

int cel__env_multi_alloc(const struct cel_env *env)
{
    return (env->features & CEL_FEATURE_CONSUMABLE_CAPACITY) || env->stored;
}

int cel__env_list_values(const struct cel_env *env)
{
    return (env->features & CEL_FEATURE_LIST_ATTRIBUTES) || env->kube_minor >= 37;
}

int cel__val_fits(const struct cel__val *v, const struct cel__type *t)
{
    switch (t->kind) {
    case CEL_T_DYN: case CEL_T_ANY: case CEL_T_PARAM: case CEL_T_ERROR: return 1;
    case CEL_T_BOOL: return v->kind == CEL_V_BOOL;
    case CEL_T_INT: return v->kind == CEL_V_INT;
    case CEL_T_UINT: return v->kind == CEL_V_UINT;
    case CEL_T_DOUBLE: return v->kind == CEL_V_DOUBLE;
    case CEL_T_STRING: return v->kind == CEL_V_STRING;
    case CEL_T_BYTES: return v->kind == CEL_V_BYTES;
    case CEL_T_NULL: return v->kind == CEL_V_NULL;
    case CEL_T_TIMESTAMP: return v->kind == CEL_V_TIMESTAMP;
    case CEL_T_DURATION: return v->kind == CEL_V_DURATION;
    /* cel-go's type guard (defaultIsAssignableRuntimeType) looks at the first element of a
     * list, the first entry of a map: ['a'] is no list(int). */
    case CEL_T_LIST:
        return v->kind == CEL_V_LIST &&
               (!t->np || !v->v.list->n || cel__val_fits(&v->v.list->items[0], t->p[0]));
    case CEL_T_MAP:
        return v->kind == CEL_V_MAP &&
               (t->np < 2 || !v->v.map->n ||
                (cel__val_fits(&v->v.map->keys[0], t->p[0]) &&
                 cel__val_fits(&v->v.map->vals[0], t->p[1])));
    case CEL_T_TYPE: return v->kind == CEL_V_TYPE;
    case CEL_T_OPTIONAL: return v->kind == CEL_V_OPTIONAL;
    case CEL_T_SEMVER: return v->kind == CEL_V_SEMVER;
    case CEL_T_QUANTITY: return v->kind == CEL_V_QUANTITY;
    case CEL_T_IP: return v->kind == CEL_V_IP;
    case CEL_T_CIDR: return v->kind == CEL_V_CIDR;
    case CEL_T_URL: return v->kind == CEL_V_URL;
    case CEL_T_FORMAT: return v->kind == CEL_V_FORMAT;
    case CEL_T_DEVICE: return v->kind == CEL_V_MAP;
    }
    return 0;
}

/* ---- Validators of literal arguments ---------------------------------------------- */

int cel__validate_literal_call(struct cel_program *p, const struct cel__node *call,
                               struct dd_err *err)
{
    const struct cel__node *arg;
    const char *why = NULL;
    int64_t sec, ns;
    int32_t nsec;

    if (call->nkid < (call->recv ? 2u : 1u))
        return 0;
    /* The pattern of matches, receiver's or global (cel.ValidateRegexLiterals, and the
     * planner's compiling of constant patterns). */
    if (strcmp(call->name, "matches") == 0 && call->nkid == 2) {
        arg = call->kid[1];
        if (arg->kind == CEL_N_STRING && cel__re2_valid(arg->lit.str.s, arg->lit.str.n, &why))
            goto bad;
        return 0;
    }
    arg = call->kid[call->recv ? 1 : 0];
    if (arg->kind != CEL_N_STRING && arg->kind != CEL_N_INT)
        return 0;
    /* duration(int) is declared but cel-go v0.26 cannot convert an int at run time. */
    if (strcmp(call->name, "duration") == 0 && !call->recv &&
        (arg->kind != CEL_N_STRING ||
         cel__parse_duration(arg->lit.str.s, arg->lit.str.n, &ns) != 0))
        goto bad;
    if (strcmp(call->name, "timestamp") == 0 && !call->recv &&
        (arg->kind == CEL_N_STRING
             ? cel__parse_rfc3339(arg->lit.str.s, arg->lit.str.n, &sec, &nsec) != 0
             : arg->lit.i < -62135596800LL || arg->lit.i > 253402300799LL))
        goto bad;
    return 0;
bad:
    cel__fail_at(err, DD_ETYPE, p->src, p->len, arg->line, arg->col, "invalid %s argument%s%s",
                 call->name, why ? ": " : "", why ? why : "");
    return -1;
}
