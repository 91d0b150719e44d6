/*
 * cel_fmt.c - text of values as cel-go makes it: double to string (Go's
 * strconv.FormatFloat(d, 'g', -1, 64)), and the strings extension's
 * `<string>.format(<list>)` (ext/formatting.go, the version strings v2 uses),
 * including its locale printer for %f and %e (golang.org/x/text message with
 * en_US: digit grouping, "∞", and "×10ⁿ" exponents), and its compile-time check of
 * literal format strings.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

/* ---- Go's FormatFloat(d, 'g', -1, 64) ------------------------------------------- */

size_t cel__fmt_double(double d, char *buf, size_t cap)
{
    char e[64], digits[32];
    int p, exp, nd = 0, neg;
    const char *m;

    if (isnan(d))
        return (size_t)snprintf(buf, cap, "NaN");
    if (isinf(d))
        return (size_t)snprintf(buf, cap, d > 0 ? "+Inf" : "-Inf");
    if (d == 0)
        return (size_t)snprintf(buf, cap, signbit(d) ? "-0" : "0");
    /* The shortest digits that read back as d. */
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof(e), "%.*e", p - 1, d);
        if (strtod(e, NULL) == d)
            break;
    }
    neg = e[0] == '-';
    m = e + neg;
    for (const char *q = m; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9')
            digits[nd++] = *q;
    digits[nd] = '\0';
    exp = atoi(strchr(e, 'e') + 1);
    if (exp < -4 || exp >= 6) {
        size_t len = (size_t)snprintf(buf, cap, "%s%c", neg ? "-" : "", digits[0]);
        if (nd > 1)
            len += (size_t)snprintf(buf + len, cap - len, ".%s", digits + 1);
        len += (size_t)snprintf(buf + len, cap - len, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
        return len;
    }
    size_t len = (size_t)snprintf(buf, cap, "%s", neg ? "-" : "");
    if (exp < 0) {
        len += (size_t)snprintf(buf + len, cap - len, "0.");
        for (int k = -1; k > exp; k--)
            len += (size_t)snprintf(buf + len, cap - len, "0");
        len += (size_t)snprintf(buf + len, cap - len, "%s", digits);
        return len;
    }
    for (int k = 0; k <= exp; k++)
        len += (size_t)snprintf(buf + len, cap - len, "%c", k < nd ? digits[k] : '0');
    if (nd > exp + 1)
        len += (size_t)snprintf(buf + len, cap - len, ".%s", digits + exp + 1);
    return len;
}

/* ---- A growing output buffer in the scratch arena --------------------------------- */

struct out {
    struct cel__ctx *c;
    char *s;
    size_t n, cap;
    int bad;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->bad)
        return;
    if (o->n + n + 1 > o->cap) {
        size_t cap = (o->n + n + 1) * 2;
        char *p;
        if (cap > CEL__MAX_BUILD || !(p = cel__alloc(&o->c->scratch, cap))) {
            o->bad = 1;
            return;
        }
        if (o->n)
            memcpy(p, o->s, o->n);
        o->s = p;
        o->cap = cap;
    }
    memcpy(o->s + o->n, s, n);
    o->n += n;
    o->s[o->n] = '\0';
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* Go's %q of a string (strconv.Quote): printable runes as they are. */
static void put_quoted(struct out *o, const char *s, size_t n, int bytes)
{
    char b[8];

    puts_(o, bytes ? "b\"" : "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': puts_(o, "\\\""); continue;
        case '\\': puts_(o, "\\\\"); continue;
        case '\n': puts_(o, "\\n"); continue;
        case '\t': puts_(o, "\\t"); continue;
        case '\r': puts_(o, "\\r"); continue;
        default: break;
        }
        if (ch < 0x20 || ch == 0x7f) {
            snprintf(b, sizeof(b), "\\x%02x", ch);
            puts_(o, b);
        } else {
            put(o, (const char *)&ch, 1);
        }
    }
    puts_(o, "\"");
}

/* x/text's en-US digits: groups of three in the integer part. */
static void put_grouped(struct out *o, const char *num)
{
    const char *dot = strchr(num, '.'), *p = num;
    size_t ilen;

    if (*p == '-') {
        put(o, "-", 1);
        p++;
    }
    ilen = dot ? (size_t)(dot - p) : strlen(p);
    for (size_t i = 0; i < ilen; i++) {
        put(o, p + i, 1);
        if ((ilen - i - 1) % 3 == 0 && i + 1 < ilen)
            put(o, ",", 1);
    }
    if (dot)
        puts_(o, dot);
}

static void put_padded(struct out *o, const char *s, int width)
{
    int len = 0;

    for (const char *p = s; *p; p++)
        len += ((unsigned char)*p & 0xC0) != 0x80;
    for (; len < width; len++)
        put(o, " ", 1);
    puts_(o, s);
}

static const char *const superscript[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};

static int fmt_value(struct out *o, const struct cel__val *v, int nested, const char **why);

static int fmt_string(struct out *o, const struct cel__val *v, int nested, const char **why)
{
    char buf[64];

    switch (v->kind) {
    case CEL_V_STRING:
        if (nested)
            put_quoted(o, v->v.str.s, v->v.str.n, 0);
        else
            put(o, v->v.str.s, v->v.str.n);
        return 0;
    case CEL_V_BYTES: {
        /* string(bytes): invalid UTF-8 is an error. */
        size_t i = 0;
        while (i < v->v.str.n) {
            unsigned char b = (unsigned char)v->v.str.s[i];
            size_t k = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2
                                     : (b & 0xF8) == 0xF0 ? 3 : 9;
            if (k == 9 || i + k >= v->v.str.n + (k == 0))
                goto bad_utf8;
            for (size_t j = 1; j <= k; j++)
                if (((unsigned char)v->v.str.s[i + j] & 0xC0) != 0x80)
                    goto bad_utf8;
            i += k + 1;
        }
        if (nested)
            put_quoted(o, v->v.str.s, v->v.str.n, 1);
        else
            put(o, v->v.str.s, v->v.str.n);
        return 0;
    bad_utf8:
        *why = "error during formatting: could not convert argument \"invalid UTF-8 in bytes, "
               "cannot convert to string\" to string";
        return -1;
    }
    case CEL_V_BOOL: puts_(o, v->v.b ? "true" : "false"); return 0;
    case CEL_V_NULL: puts_(o, "null"); return 0;
    case CEL_V_INT: snprintf(buf, sizeof(buf), "%" PRId64, v->v.i); puts_(o, buf); return 0;
    case CEL_V_UINT: snprintf(buf, sizeof(buf), "%" PRIu64, v->v.u); puts_(o, buf); return 0;
    case CEL_V_DOUBLE:
        if (nested) {
            /* clauseForType: "%.6f", quoted when not finite. */
            if (isnan(v->v.d) || isinf(v->v.d)) {
                cel__fmt_double(v->v.d, buf, sizeof(buf));
                put_quoted(o, buf, strlen(buf), 0);
            } else {
                snprintf(buf, sizeof(buf), "%.6f", v->v.d);
                puts_(o, buf);
            }
            return 0;
        }
        cel__fmt_double(v->v.d, buf, sizeof(buf));
        puts_(o, buf);
        return 0;
    case CEL_V_TIMESTAMP:
        cel__format_rfc3339(v->v.ts.sec, v->v.ts.nsec, buf, sizeof(buf));
        if (nested) {
            puts_(o, "timestamp(");
            put_quoted(o, buf, strlen(buf), 0);
            puts_(o, ")");
        } else {
            puts_(o, buf);
        }
        return 0;
    case CEL_V_DURATION:
        cel__format_duration(v->v.dur, buf, sizeof(buf));
        if (nested) {
            puts_(o, "duration(");
            put_quoted(o, buf, strlen(buf), 0);
            puts_(o, ")");
        } else {
            puts_(o, buf);
        }
        return 0;
    case CEL_V_TYPE:
        if (nested) {
            puts_(o, "type(");
            puts_(o, v->v.tname);
            puts_(o, ")");
        } else {
            puts_(o, v->v.tname);
        }
        return 0;
    case CEL_V_LIST:
        puts_(o, "[");
        for (size_t i = 0; i < v->v.list->n; i++) {
            if (i)
                puts_(o, ", ");
            if (fmt_value(o, &v->v.list->items[i], 1, why))
                return -1;
        }
        puts_(o, "]");
        return 0;
    case CEL_V_MAP: {
        /* Entries sorted by the text of their keys (ext/formatting.go formatMap). */
        size_t n = v->v.map->n, *idx;
        struct out *keys;
        if (!(idx = cel__alloc(&o->c->scratch, (n + 1) * sizeof(*idx))) ||
            !(keys = cel__alloc(&o->c->scratch, (n + 1) * sizeof(*keys)))) {
            o->bad = 1;
            return 0;
        }
        for (size_t i = 0; i < n; i++) {
            const struct cel__val *k = &v->v.map->keys[i];
            memset(&keys[i], 0, sizeof(keys[i]));
            keys[i].c = o->c;
            if (k->kind != CEL_V_STRING && k->kind != CEL_V_BOOL && k->kind != CEL_V_INT &&
                k->kind != CEL_V_UINT) {
                *why = "no formatting function for map key";
                return -1;
            }
            fmt_value(&keys[i], k, 1, why);
            if (keys[i].bad || !keys[i].s) {
                o->bad = 1;
                return 0;
            }
            idx[i] = i;
        }
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[idx[j - 1]].s, keys[idx[j]].s) > 0; j--) {
                size_t t = idx[j];
                idx[j] = idx[j - 1];
                idx[j - 1] = t;
            }
        puts_(o, "{");
        for (size_t i = 0; i < n; i++) {
            if (i)
                puts_(o, ", ");
            puts_(o, keys[idx[i]].s);
            puts_(o, ":");
            if (fmt_value(o, &v->v.map->vals[idx[i]], 1, why))
                return -1;
        }
        puts_(o, "}");
        return 0;
    }
    default:
        *why = "error during formatting: string clause can only be used on strings, bools, "
               "bytes, ints, doubles, maps, lists, types, durations, and timestamps";
        return -1;
    }
}

static int fmt_value(struct out *o, const struct cel__val *v, int nested, const char **why)
{
    return fmt_string(o, v, nested, why);
}

static int is_float_string(const struct cel__val *v, double *d)
{
    if (v->kind != CEL_V_STRING)
        return 0;
    if (v->v.str.n == 3 && !memcmp(v->v.str.s, "NaN", 3))
        *d = NAN;
    else if (v->v.str.n == 8 && !memcmp(v->v.str.s, "Infinity", 8))
        *d = INFINITY;
    else if (v->v.str.n == 9 && !memcmp(v->v.str.s, "-Infinity", 9))
        *d = -INFINITY;
    else
        return 0;
    return 1;
}

/* One clause after '%' at f[*i]; appends to o.  0, or -1 with *why. */
static int clause(struct out *o, const char *f, size_t n, size_t *i, const struct cel__val *v,
                  const char **why)
{
    int prec = -1;
    char buf[128], spec = 0;

    if (*i < n && f[*i] == '.') {
        size_t st = ++*i;
        prec = 0;
        while (*i < n && f[*i] >= '0' && f[*i] <= '9' && prec < 1000)
            prec = prec * 10 + (f[(*i)++] - '0');
        if (*i >= n) {
            *why = "could not parse formatting clause: error while parsing precision: could not "
                   "find end of precision specifier";
            return -1;
        }
        if (*i == st) {
            *why = "could not parse formatting clause: error while parsing precision";
            return -1;
        }
    }
    if (*i >= n) {
        *why = "unexpected end of string";
        return -1;
    }
    spec = f[(*i)++];
    switch (spec) {
    case 's': return fmt_value(o, v, 0, why);
    case 'd':
        if (v->kind != CEL_V_INT && v->kind != CEL_V_UINT)
            goto bad;
        return fmt_value(o, v, 0, why);
    case 'f': case 'e': {
        double d;
        if (v->kind == CEL_V_DOUBLE)
            d = v->v.d;
        else if (!is_float_string(v, &d))
            goto bad;
        /* x/text's number printer writes a negative zero as 0. */
        if (d == 0)
            d = 0;
        if (spec == 'f') {
            if (isnan(d)) {
                puts_(o, "NaN");
            } else if (isinf(d)) {
                puts_(o, d > 0 ? "∞" : "-∞");
            } else {
                /* Up to 309 integer digits (1.8e308) plus the precision's. */
                int len = snprintf(buf, sizeof(buf), "%.*f", prec < 0 ? 6 : prec, d);
                char *big = len >= (int)sizeof(buf) ? malloc((size_t)len + 1) : NULL;
                if (big)
                    snprintf(big, (size_t)len + 1, "%.*f", prec < 0 ? 6 : prec, d);
                else if (len >= (int)sizeof(buf)) {
                    *why = "out of memory";
                    return -1;
                }
                /* x/text keeps the minimum of fraction digits in a uint8: from a precision
                 * of 256 on, the exact digits are trimmed of trailing zeros down to
                 * precision % 256 of them. */
                if (prec >= 256) {
                    char *t = big ? big : buf, *dot = strchr(t, '.');
                    size_t keep = (size_t)(prec & 255), nf = dot ? strlen(dot + 1) : 0;
                    while (dot && nf > keep && dot[nf] == '0')
                        dot[nf--] = '\0';
                    if (dot && nf == 0)
                        *dot = '\0';
                }
                put_grouped(o, big ? big : buf);
                free(big);
            }
            return 0;
        }
        /* fmt.Sprintf("%%%de", precision): the "precision" is a width. */
        int width = prec < 0 ? 6 : prec;
        if (isnan(d) || isinf(d)) {
            put_padded(o, isnan(d) ? "NaN" : d > 0 ? "∞" : "-∞", width);
            return 0;
        }
        snprintf(buf, sizeof(buf), "%.6e", d);
        char *e = strchr(buf, 'e');
        int ex = atoi(e + 1);
        char sup[64] = "";
        *e = '\0';
        snprintf(sup, sizeof(sup), "%02d", abs(ex));
        char full[160];
        size_t len = (size_t)snprintf(full, sizeof(full), "%s×10%s", buf, ex < 0 ? "⁻" : "");
        for (char *q = sup; *q; q++)
            len += (size_t)snprintf(full + len, sizeof(full) - len, "%s", superscript[*q - '0']);
        put_padded(o, full, width);
        return 0;
    }
    case 'b':
        if (v->kind == CEL_V_BOOL) {
            puts_(o, v->v.b ? "1" : "0");
            return 0;
        }
        if (v->kind != CEL_V_INT && v->kind != CEL_V_UINT)
            goto bad;
        {
            uint64_t u = v->kind == CEL_V_INT && v->v.i < 0 ? 0 - (uint64_t)v->v.i
                         : v->kind == CEL_V_INT ? (uint64_t)v->v.i : v->v.u;
            char bits[70];
            int k = 0;
            if (v->kind == CEL_V_INT && v->v.i < 0)
                puts_(o, "-");
            do {
                bits[k++] = (char)('0' + (u & 1));
                u >>= 1;
            } while (u);
            while (k)
                put(o, &bits[--k], 1);
        }
        return 0;
    case 'x': case 'X': {
        const char *hex = spec == 'x' ? "0123456789abcdef" : "0123456789ABCDEF";
        if (v->kind == CEL_V_STRING || v->kind == CEL_V_BYTES) {
            for (size_t k = 0; k < v->v.str.n; k++) {
                unsigned char ch = (unsigned char)v->v.str.s[k];
                char two[2] = {hex[ch >> 4], hex[ch & 15]};
                put(o, two, 2);
            }
            return 0;
        }
        if (v->kind == CEL_V_INT)
            snprintf(buf, sizeof(buf), spec == 'x' ? "%s%" PRIx64 : "%s%" PRIX64,
                     v->v.i < 0 ? "-" : "", v->v.i < 0 ? 0 - (uint64_t)v->v.i : (uint64_t)v->v.i);
        else if (v->kind == CEL_V_UINT)
            snprintf(buf, sizeof(buf), spec == 'x' ? "%" PRIx64 : "%" PRIX64, v->v.u);
        else
            goto bad;
        puts_(o, buf);
        return 0;
    }
    case 'o':
        if (v->kind == CEL_V_INT)
            snprintf(buf, sizeof(buf), "%s%" PRIo64, v->v.i < 0 ? "-" : "",
                     v->v.i < 0 ? 0 - (uint64_t)v->v.i : (uint64_t)v->v.i);
        else if (v->kind == CEL_V_UINT)
            snprintf(buf, sizeof(buf), "%" PRIo64, v->v.u);
        else
            goto bad;
        puts_(o, buf);
        return 0;
    default:
        *why = "could not parse formatting clause: unrecognized formatting clause";
        return -1;
    }
bad:
    *why = "error during formatting: the clause does not apply to the argument's type";
    return -1;
}

CEL__FN(cel__fn_format)
{
    const char *f = a[0].v.str.s, *why = NULL;
    size_t len = a[0].v.str.n, i = 0, arg = 0;
    const struct cel__list *args = a[1].v.list;
    struct out o = {c, NULL, 0, 0, 0};

    (void)call; (void)n;
    if (cel__charge(c, len / 10 + 1))
        return cel__abort_val(c);
    put(&o, "", 0);
    while (i < len) {
        if (f[i] != '%') {
            size_t j = i;
            while (j < len && f[j] != '%')
                j++;
            put(&o, f + i, j - i);
            i = j;
            continue;
        }
        if (i + 1 < len && f[i + 1] == '%') {
            put(&o, "%", 1);
            i += 2;
            continue;
        }
        if (arg >= args->n)
            return cel__err(c, "index %zu out of range", arg);
        if (i + 1 >= len)
            return cel__err(c, "unexpected end of string");
        i++;
        if (clause(&o, f, len, &i, &args->items[arg++], &why))
            return cel__err(c, "%s", why);
        if (o.bad)
            break;
    }
    if (o.bad)
        return cel__err(c, "string too large");
    struct cel__val v = {.kind = CEL_V_STRING};
    v.v.str.s = o.s ? o.s : "";
    v.v.str.n = o.n;
    return v;
}

/* ---- The compile-time check of literal format strings (stringFormatValidator) ---- */

static int kind_ok(const struct cel__type *t, const enum cel__tkind *ok, size_t n)
{
    if (t->kind == CEL_T_DYN)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (t->kind == ok[i])
            return 1;
    return 0;
}

static int string_ok(const struct cel__node *e, const struct cel__type *(*type_of)(const struct cel__node *, void *),
                     void *ctx)
{
    static const enum cel__tkind ok[] = {
        CEL_T_LIST, CEL_T_MAP, CEL_T_INT, CEL_T_UINT, CEL_T_DOUBLE, CEL_T_BOOL, CEL_T_STRING,
        CEL_T_TIMESTAMP, CEL_T_BYTES, CEL_T_DURATION, CEL_T_TYPE, CEL_T_NULL};

    if (!kind_ok(type_of(e, ctx), ok, sizeof(ok) / sizeof(ok[0])))
        return 0;
    if (e->kind == CEL_N_LIST || e->kind == CEL_N_MAP)
        for (size_t i = 0; i < e->nkid; i++)
            if (!string_ok(e->kid[i], type_of, ctx))
                return 0;
    return 1;
}

int cel__check_format(const struct cel__node *call,
                      const struct cel__type *(*type_of)(const struct cel__node *, void *),
                      void *ctx, const char **why)
{
    const struct cel__node *fmt = call->kid[0], *list = call->kid[1];
    const char *f;
    size_t len, i = 0, arg = 0;

    if (!call->recv || call->nkid != 2 || fmt->kind != CEL_N_STRING || list->kind != CEL_N_LIST)
        return 0;
    f = fmt->lit.str.s;
    len = fmt->lit.str.n;
    while (i < len) {
        const struct cel__node *e;
        enum cel__tkind ok[4];
        size_t nok = 0;
        int prec_seen = 0;
        if (f[i] != '%') {
            i++;
            continue;
        }
        if (i + 1 < len && f[i + 1] == '%') {
            i += 2;
            continue;
        }
        if (arg >= list->nkid) {
            *why = "index out of range";
            return -1;
        }
        if (++i >= len) {
            *why = "unexpected end of string";
            return -1;
        }
        if (f[i] == '.') {
            prec_seen = 1;
            i++;
            while (i < len && f[i] >= '0' && f[i] <= '9')
                i++;
            if (i >= len) {
                *why = "could not find end of precision specifier";
                return -1;
            }
        }
        (void)prec_seen;
        e = list->kid[arg++];
        switch (f[i++]) {
        case 's':
            if (!string_ok(e, type_of, ctx)) {
                *why = "string clause can only be used on strings, bools, bytes, ints, doubles, "
                       "maps, lists, types, durations, and timestamps";
                return -1;
            }
            continue;
        case 'd': ok[nok++] = CEL_T_INT; ok[nok++] = CEL_T_UINT; break;
        case 'f': case 'e': ok[nok++] = CEL_T_DOUBLE; ok[nok++] = CEL_T_STRING; break;
        case 'b': ok[nok++] = CEL_T_INT; ok[nok++] = CEL_T_UINT; ok[nok++] = CEL_T_BOOL; break;
        case 'x': case 'X':
            ok[nok++] = CEL_T_INT; ok[nok++] = CEL_T_UINT; ok[nok++] = CEL_T_STRING;
            ok[nok++] = CEL_T_BYTES;
            break;
        case 'o': ok[nok++] = CEL_T_INT; ok[nok++] = CEL_T_UINT; break;
        default:
            *why = "unrecognized formatting clause";
            return -1;
        }
        if (!kind_ok(type_of(e, ctx), ok, nok)) {
            *why = "the formatting clause does not apply to the argument's type";
            return -1;
        }
    }
    if (list->nkid > arg) {
        *why = "too many arguments supplied to string.format";
        return -1;
    }
    return 0;
}

/* A value as CEL source text (strings quoted), for explanations; truncated to cap. */
size_t cel__val_text(struct cel__ctx *c, const struct cel__val *v, char *buf, size_t cap)
{
    struct out o = {c, NULL, 0, 0, 0};
    const char *why = NULL;

    if (v->kind == CEL_V_ERROR) {
        snprintf(buf, cap, "error: %s", v->v.err);
        return strlen(buf);
    }
    if (v->kind == CEL_V_OPTIONAL) {
        if (!v->v.opt)
            return (size_t)snprintf(buf, cap, "optional.none()");
        size_t k = (size_t)snprintf(buf, cap, "optional.of(");
        if (k < cap)
            k += cel__val_text(c, v->v.opt, buf + k, cap - k);
        if (k < cap)
            k += (size_t)snprintf(buf + k, cap - k, ")");
        return k < cap ? k : cap - 1;
    }
    if (v->kind == CEL_V_SEMVER)
        return (size_t)snprintf(buf, cap, "semver(\"%s\")", v->v.sv->text);
    if (v->kind == CEL_V_QUANTITY) {
        long long whole = (long long)(v->v.q / 1000000000), frac = (long long)(v->v.q % 1000000000);
        if (frac)
            return (size_t)snprintf(buf, cap, "quantity(\"%lld.%09lld\")", whole, frac < 0 ? -frac : frac);
        return (size_t)snprintf(buf, cap, "quantity(\"%lld\")", whole);
    }
    if (v->kind == CEL_V_LIST || v->kind == CEL_V_MAP) {
        /* Element by element, in the order the value holds them. */
        int map = v->kind == CEL_V_MAP;
        size_t n = map ? v->v.map->n : v->v.list->n, k = 0;
        k += (size_t)snprintf(buf + k, cap - k, map ? "{" : "[");
        for (size_t i = 0; i < n && k + 5 < cap; i++) {
            if (i)
                k += (size_t)snprintf(buf + k, cap - k, ", ");
            if (map) {
                k += cel__val_text(c, &v->v.map->keys[i], buf + k, cap - k);
                if (k + 3 < cap)
                    k += (size_t)snprintf(buf + k, cap - k, ": ");
            }
            if (k + 1 < cap)
                k += cel__val_text(c, map ? &v->v.map->vals[i] : &v->v.list->items[i], buf + k,
                                   cap - k);
        }
        if (k + 1 < cap)
            k += (size_t)snprintf(buf + k, cap - k, map ? "}" : "]");
        return k < cap ? k : cap - 1;
    }
    if (fmt_value(&o, v, 1, &why) || o.bad || !o.s)
        return (size_t)snprintf(buf, cap, "<%s>", cel__vkind_name(v->kind));
    snprintf(buf, cap, "%s", o.s);
    if (o.n >= cap && cap > 4)
        memcpy(buf + cap - 4, "...", 4);
    return strlen(buf);
}
