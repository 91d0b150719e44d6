/*
 * cel_builtins.c - the function table of the DRA CEL environment: standard
 * conversions and string functions, the Kubernetes semver library and the
 * Kubernetes quantity library.
 *
 * Regular expressions: CEL specifies RE2 syntax; we approximate it with
 * PCRE2 (PCRE2_UTF), which accepts a superset of RE2 for the patterns found
 * in selectors.  Backtracking is bounded with a match limit, and a pattern
 * PCRE2 rejects is a runtime error as in CEL-Go.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

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
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mc;
    int errcode, rc;
    PCRE2_SIZE erroff;

    if (!both_strings(a, n))
        return bad_args(c, call, a, n);
    if (cel__charge(c, a[0].v.str.n + a[1].v.str.n))
        return cel__abort_val(c);
    /* Compiled per call: a program is immutable and shared between threads,
     * and selectors are short; caching is a later optimisation. */
    re = pcre2_compile((PCRE2_SPTR)a[1].v.str.s, a[1].v.str.n, PCRE2_UTF | PCRE2_NO_UTF_CHECK,
                       &errcode, &erroff, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(errcode, msg, sizeof(msg));
        return cel__err(c, "invalid regular expression at offset %zu: %s", (size_t)erroff,
                        (const char *)msg);
    }
    md = pcre2_match_data_create_from_pattern(re, NULL);
    mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        pcre2_code_free(re);
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    /* RE2 is linear-time; PCRE2 backtracks, so bound the work. */
    pcre2_set_match_limit(mc, 100000);
    pcre2_set_depth_limit(mc, 1000);
    rc = pcre2_match(re, (PCRE2_SPTR)a[0].v.str.s, a[0].v.str.n, 0, 0, md, mc);
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    pcre2_code_free(re);
    if (rc == PCRE2_ERROR_NOMATCH)
        return vbool(0);
    if (rc < 0) {
        /* Invalid UTF-8 in the subject, or the backtracking bound. */
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        return cel__err(c, "matches: %s", (const char *)msg);
    }
    return vbool(1);
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

FN(fn_double)
{
    char buf[128], *end;
    struct cel__val v = {.kind = CEL_V_DOUBLE};

    (void)n;
    switch (a[0].kind) {
    case CEL_V_DOUBLE: return a[0];
    case CEL_V_INT: v.v.d = (double)a[0].v.i; return v;
    case CEL_V_UINT: v.v.d = (double)a[0].v.u; return v;
    case CEL_V_STRING:
        if (parse_whole(&a[0], buf, sizeof(buf)))
            return cel__err(c, "cannot convert string to double");
        v.v.d = strtod(buf, &end);
        if (*end)
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

/* Shortest "%.*g" that reads back as the same double, as Go's 'g' -1 does. */
static void fmt_double(double d, char *buf, size_t cap)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

FN(fn_string)
{
    char buf[64];

    (void)n;
    switch (a[0].kind) {
    case CEL_V_STRING: return a[0];
    case CEL_V_INT: snprintf(buf, sizeof(buf), "%" PRId64, a[0].v.i); break;
    case CEL_V_UINT: snprintf(buf, sizeof(buf), "%" PRIu64, a[0].v.u); break;
    case CEL_V_DOUBLE: fmt_double(a[0].v.d, buf, sizeof(buf)); break;
    case CEL_V_BOOL: snprintf(buf, sizeof(buf), "%s", a[0].v.b ? "true" : "false"); break;
    case CEL_V_BYTES:
        if (!valid_utf8(a[0].v.str.s, a[0].v.str.n))
            return cel__err(c, "invalid UTF-8 in bytes, cannot convert to string");
        return vstr(c, CEL_V_STRING, a[0].v.str.s, a[0].v.str.n);
    case CEL_V_SEMVER: return vstr(c, CEL_V_STRING, a[0].v.sv->text, strlen(a[0].v.sv->text));
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
    v.v.type = a[0].kind;
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

static int q_suffix(const char *s, size_t n, int *e10, int *e2)
{
    for (size_t i = 0; i < sizeof(q_suffixes) / sizeof(q_suffixes[0]); i++) {
        if (strlen(q_suffixes[i].suffix) == n && memcmp(q_suffixes[i].suffix, s, n) == 0) {
            *e10 = q_suffixes[i].exp10;
            *e2 = q_suffixes[i].exp2;
            return 0;
        }
    }
    /* Decimal exponent: e or E followed by an optionally signed integer. */
    if (n >= 2 && (s[0] == 'e' || s[0] == 'E')) {
        size_t i = 1;
        int neg = 0, v = 0;
        if (s[i] == '+' || s[i] == '-')
            neg = s[i++] == '-';
        if (i == n)
            return -1;
        for (; i < n; i++) {
            if (s[i] < '0' || s[i] > '9' || v > 1000)
                return -1;
            v = v * 10 + (s[i] - '0');
        }
        *e10 = neg ? -v : v;
        *e2 = 0;
        return 0;
    }
    return -1;
}

int cel__quantity_parse(const char *s, size_t n, __int128 *out)
{
    size_t i = 0;
    int neg = 0, digits = 0, frac = 0, sig = 0, seen_dot = 0, e10, e2;
    __int128 m = 0;

    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    for (; i < n; i++) {
        if (s[i] == '.' && !seen_dot) {
            seen_dot = 1;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            break;
        digits++;
        if (seen_dot)
            frac++;
        if (m == 0 && s[i] == '0')
            continue;
        if (++sig > 36)
            return -1;
        m = m * 10 + (s[i] - '0');
    }
    if (digits == 0 || q_suffix(s + i, n - i, &e10, &e2) != 0)
        return -1;
    /* value = m * 10^(e10 - frac + 9) * 2^e2 nano-units. */
    int scale = e10 - frac + 9;
    /* Checked before each step, so m never exceeds 10 * QMAX < 2^127. */
    for (int k = 0; k < e2 && m; k++) {
        if (m > QMAX)
            return -1;
        m *= 2;
    }
    if (scale >= 0) {
        for (int k = 0; k < scale && m; k++) {
            if (m > QMAX)
                return -1;
            m *= 10;
        }
    } else {
        int round_up = 0;
        for (int k = 0; k < -scale && m; k++) {
            if (m % 10)
                round_up = 1;
            m /= 10;
        }
        if (round_up || (m == 0 && sig > 0))
            m += 1;
    }
    if (m > QMAX)
        return -1;
    *out = neg ? -m : m;
    return 0;
}

FN(fn_quantity)
{
    struct cel__val v = {.kind = CEL_V_QUANTITY};

    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    if (cel__quantity_parse(a[0].v.str.s, a[0].v.str.n, &v.v.q) != 0)
        return cel__err(c, "quantities must match the regular expression "
                           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
    return v;
}

FN(fn_is_quantity)
{
    __int128 q;

    if (a[0].kind != CEL_V_STRING)
        return bad_args(c, call, a, n);
    return vbool(cel__quantity_parse(a[0].v.str.s, a[0].v.str.n, &q) == 0);
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

static struct cel__val q_arith(struct cel__ctx *c, const struct cel__node *call,
                               struct cel__val *a, size_t n, int sign)
{
    struct cel__val v = {.kind = CEL_V_QUANTITY};
    __int128 rhs;

    if (n == 2 && a[1].kind == CEL_V_QUANTITY)
        rhs = a[1].v.q;
    else if (n == 2 && a[1].kind == CEL_V_INT)
        rhs = (__int128)a[1].v.i * NANO;
    else
        return bad_args(c, call, a, n);
    v.v.q = sign > 0 ? a[0].v.q + rhs : a[0].v.q - rhs;
    if (v.v.q > QMAX || v.v.q < -QMAX)
        return cel__err(c, "return error for overflow");
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

static int q_is_int64(__int128 q)
{
    return q % NANO == 0 && q / NANO <= INT64_MAX && q / NANO >= INT64_MIN;
}

FN(fn_q_is_integer)
{
    (void)c; (void)call; (void)n;
    return vbool(q_is_int64(a[0].v.q));
}

FN(fn_q_as_integer)
{
    (void)call; (void)n;
    if (!q_is_int64(a[0].v.q))
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

#define G 0 /* global: f(x, ...) */
#define R 1 /* receiver: x.f(...) */

const struct cel__builtin cel__builtins[] = {
    {"size", G, 1, CEL_T_DYN, CEL_T_INT, fn_size},
    {"size", R, 1, CEL_T_DYN, CEL_T_INT, fn_size},
    {"startsWith", R, 2, CEL_T_STRING, CEL_T_BOOL, fn_starts_with},
    {"endsWith", R, 2, CEL_T_STRING, CEL_T_BOOL, fn_ends_with},
    {"contains", R, 2, CEL_T_STRING, CEL_T_BOOL, fn_contains},
    {"matches", R, 2, CEL_T_STRING, CEL_T_BOOL, fn_matches},
    {"matches", G, 2, CEL_T_STRING, CEL_T_BOOL, fn_matches},
    {"lowerAscii", R, 1, CEL_T_STRING, CEL_T_STRING, fn_lower},
    {"upperAscii", R, 1, CEL_T_STRING, CEL_T_STRING, fn_upper},
    {"int", G, 1, CEL_T_DYN, CEL_T_INT, fn_int},
    {"uint", G, 1, CEL_T_DYN, CEL_T_UINT, fn_uint},
    {"double", G, 1, CEL_T_DYN, CEL_T_DOUBLE, fn_double},
    {"string", G, 1, CEL_T_DYN, CEL_T_STRING, fn_string},
    {"bytes", G, 1, CEL_T_DYN, CEL_T_BYTES, fn_bytes},
    {"bool", G, 1, CEL_T_DYN, CEL_T_BOOL, fn_bool},
    {"dyn", G, 1, CEL_T_DYN, CEL_T_DYN, fn_dyn},
    {"type", G, 1, CEL_T_DYN, CEL_T_TYPE, fn_type},
    {"semver", G, 1, CEL_T_STRING, CEL_T_SEMVER, fn_semver},
    {"semver", G, 2, CEL_T_STRING, CEL_T_SEMVER, fn_semver},
    {"isSemver", G, 1, CEL_T_STRING, CEL_T_BOOL, fn_is_semver},
    {"isSemver", G, 2, CEL_T_STRING, CEL_T_BOOL, fn_is_semver},
    {"major", R, 1, CEL_T_SEMVER, CEL_T_INT, fn_sv_major},
    {"minor", R, 1, CEL_T_SEMVER, CEL_T_INT, fn_sv_minor},
    {"patch", R, 1, CEL_T_SEMVER, CEL_T_INT, fn_sv_patch},
    {"isGreaterThan", R, 2, CEL_T_SEMVER, CEL_T_BOOL, fn_sv_gt},
    {"isLessThan", R, 2, CEL_T_SEMVER, CEL_T_BOOL, fn_sv_lt},
    {"compareTo", R, 2, CEL_T_SEMVER, CEL_T_INT, fn_sv_cmp},
    {"quantity", G, 1, CEL_T_STRING, CEL_T_QUANTITY, fn_quantity},
    {"isQuantity", G, 1, CEL_T_STRING, CEL_T_BOOL, fn_is_quantity},
    {"isGreaterThan", R, 2, CEL_T_QUANTITY, CEL_T_BOOL, fn_q_gt},
    {"isLessThan", R, 2, CEL_T_QUANTITY, CEL_T_BOOL, fn_q_lt},
    {"compareTo", R, 2, CEL_T_QUANTITY, CEL_T_INT, fn_q_cmp},
    {"add", R, 2, CEL_T_QUANTITY, CEL_T_QUANTITY, fn_q_add},
    {"sub", R, 2, CEL_T_QUANTITY, CEL_T_QUANTITY, fn_q_sub},
    {"sign", R, 1, CEL_T_QUANTITY, CEL_T_INT, fn_q_sign},
    {"isInteger", R, 1, CEL_T_QUANTITY, CEL_T_BOOL, fn_q_is_integer},
    {"asInteger", R, 1, CEL_T_QUANTITY, CEL_T_INT, fn_q_as_integer},
    {"asApproximateFloat", R, 1, CEL_T_QUANTITY, CEL_T_DOUBLE, fn_q_as_float},
};

const size_t cel__nbuiltins = sizeof(cel__builtins) / sizeof(cel__builtins[0]);

int cel__builtin_find(const char *name, int recv, size_t nargs, enum cel__tkind arg0)
{
    int known = 0;

    for (size_t i = 0; i < cel__nbuiltins; i++) {
        const struct cel__builtin *b = &cel__builtins[i];
        if (strcmp(b->name, name) != 0)
            continue;
        known = 1;
        if (b->recv != recv || (size_t)b->nargs != nargs)
            continue;
        if (arg0 != CEL_T_DYN && b->arg0 != CEL_T_DYN && b->arg0 != arg0)
            continue;
        return (int)i;
    }
    return known ? -2 : -1;
}
