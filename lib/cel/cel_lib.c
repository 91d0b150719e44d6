/*
 * cel_lib.c - the extension libraries of the DRA environment beyond the
 * standard functions: cel-go's strings (v2), lists (v3), sets and optional
 * types, and Kubernetes' lists, regex (find/findAll) and DRA's includes().
 *
 * Each function follows its cel-go / k8s.io/apiserver implementation,
 * including its errors, which are runtime errors that abort allocation.
 * Strings are indexed by code point (Go's []rune), as cel-go does.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

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

static struct cel__val oom(struct cel__ctx *c)
{
    c->aborted = 1;
    c->abort_rc = DD_ENOMEM;
    return cel__abort_val(c);
}

static struct cel__val vstr(struct cel__ctx *c, const char *s, size_t n)
{
    struct cel__val v = {.kind = CEL_V_STRING};
    char *p;

    if (n > CEL__MAX_BUILD)
        return cel__err(c, "string too large");
    if (!(p = cel__strndup(&c->scratch, s ? s : "", n)))
        return oom(c);
    v.v.str.s = p;
    v.v.str.n = n;
    return v;
}

static struct cel__val vlist(struct cel__ctx *c, size_t n, struct cel__list **out)
{
    struct cel__val v = {.kind = CEL_V_LIST};
    struct cel__list *l;

    if (n > CEL__MAX_BUILD / sizeof(struct cel__val))
        return cel__err(c, "list too large");
    if (!(l = cel__alloc(&c->scratch, sizeof(*l))) ||
        (n && !(l->items = cel__alloc(&c->scratch, n * sizeof(*l->items)))))
        return oom(c);
    v.v.list = l;
    *out = l;
    return v;
}

/* ---- Code points ---------------------------------------------------------------- */

/* Decodes the code point at s[*i..n), as Go's []rune conversion does (bad bytes are U+FFFD). */
static uint32_t next_rune(const char *s, size_t n, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s + *i;
    size_t left = n - *i, k;
    uint32_t cp;

    if (u[0] < 0x80) {
        (*i)++;
        return u[0];
    }
    if ((u[0] & 0xE0) == 0xC0) { k = 1; cp = u[0] & 0x1F; }
    else if ((u[0] & 0xF0) == 0xE0) { k = 2; cp = u[0] & 0x0F; }
    else if ((u[0] & 0xF8) == 0xF0) { k = 3; cp = u[0] & 0x07; }
    else { (*i)++; return 0xFFFD; }
    if (left <= k) {
        (*i)++;
        return 0xFFFD;
    }
    for (size_t j = 1; j <= k; j++) {
        if ((u[j] & 0xC0) != 0x80) {
            (*i)++;
            return 0xFFFD;
        }
        cp = (cp << 6) | (u[j] & 0x3F);
    }
    *i += k + 1;
    return cp;
}

/* Byte offsets of every code point of s (and n at the end): offs[0..*count]. */
static size_t *rune_offsets(struct cel__ctx *c, const char *s, size_t n, size_t *count)
{
    size_t *offs = cel__alloc(&c->scratch, (n + 1) * sizeof(*offs)), k = 0, i = 0;

    if (!offs)
        return NULL;
    while (i < n) {
        offs[k++] = i;
        next_rune(s, n, &i);
    }
    offs[k] = n;
    *count = k;
    return offs;
}

/* ---- strings extension (cel-go ext/strings.go, version 2) ------------------------- */

CEL__FN(cel__fn_char_at)
{
    size_t cnt, *offs;
    int64_t i = a[1].v.i;

    (void)call; (void)n;
    if (cel__charge(c, a[0].v.str.n / 16))
        return cel__abort_val(c);
    if (!(offs = rune_offsets(c, a[0].v.str.s, a[0].v.str.n, &cnt)))
        return oom(c);
    if (i < 0 || (uint64_t)i > cnt)
        return cel__err(c, "index out of range: %" PRId64, i);
    if ((size_t)i == cnt)
        return vstr(c, "", 0);
    return vstr(c, a[0].v.str.s + offs[i], offs[i + 1] - offs[i]);
}

static int runes_at(const char *s, const size_t *so, size_t i, const char *sub, const size_t *uo,
                    size_t un)
{
    return memcmp(s + so[i], sub, uo[un]) == 0 && so[i + un] - so[i] == uo[un];
}

/* Where the empty string matches from off in a string of sn code points: off itself until
 * cel-go v0.29 (Kubernetes 1.37), which refuses a negative one and clamps to the end. */
static struct cel__val empty_match(struct cel__ctx *c, int64_t off, size_t sn)
{
    if (c->kube_minor >= 37 && off < 0)
        return cel__err(c, "index out of range: %" PRId64, off);
    if (c->kube_minor >= 37 && (uint64_t)off > sn)
        return vint((int64_t)sn);
    return vint(off);
}

static struct cel__val index_of(struct cel__ctx *c, struct cel__val *a, size_t n, int last)
{
    size_t sn, un, *so, *uo;
    int64_t off;

    if (cel__charge(c, (a[0].v.str.n + a[1].v.str.n) / 16))
        return cel__abort_val(c);
    if (!(so = rune_offsets(c, a[0].v.str.s, a[0].v.str.n, &sn)) ||
        !(uo = rune_offsets(c, a[1].v.str.s, a[1].v.str.n, &un)))
        return oom(c);
    if (!last) {
        off = n > 2 ? a[2].v.i : 0;
        if (un == 0)
            return empty_match(c, off, sn);
        if (off < 0)
            return cel__err(c, "index out of range: %" PRId64, off);
        if ((uint64_t)off >= sn)
            return vint(-1);
        for (size_t i = (size_t)off; i + un <= sn; i++)
            if (runes_at(a[0].v.str.s, so, i, a[1].v.str.s, uo, un))
                return vint((int64_t)i);
        return vint(-1);
    }
    if (n <= 2) {
        if (un == 0)
            return vint((int64_t)sn);
        if (a[0].v.str.n < a[1].v.str.n)
            return vint(-1);
        off = (int64_t)sn - 1;
    } else {
        off = a[2].v.i;
        if (un == 0)
            return empty_match(c, off, sn);
    }
    if (off < 0)
        return cel__err(c, "index out of range: %" PRId64, off);
    if ((uint64_t)off >= sn)
        return vint(-1);
    if ((size_t)off > sn - un)
        off = (int64_t)sn - (int64_t)un;
    for (int64_t i = off; i >= 0; i--)
        if (runes_at(a[0].v.str.s, so, (size_t)i, a[1].v.str.s, uo, un))
            return vint(i);
    return vint(-1);
}

CEL__FN(cel__fn_index_of)
{
    (void)call;
    return index_of(c, a, n, 0);
}

CEL__FN(cel__fn_last_index_of)
{
    (void)call;
    return index_of(c, a, n, 1);
}

CEL__FN(cel__fn_replace)
{
    const char *s = a[0].v.str.s, *old = a[1].v.str.s, *new = a[2].v.str.s;
    size_t sl = a[0].v.str.n, ol = a[1].v.str.n, nl = a[2].v.str.n, cap = 0, len = 0, i = 0;
    int64_t limit = n > 3 ? a[3].v.i : -1, done = 0;
    char *out = NULL;

    (void)call;
    if (cel__charge(c, (sl + nl) / 16))
        return cel__abort_val(c);
    /* Go's strings.Replace: an empty old matches before every code point and at the end. */
    for (;;) {
        const char *hit = NULL;
        size_t at = sl;
        if (limit < 0 || done < limit) {
            if (ol == 0) {
                hit = i <= sl ? s + i : NULL;
            } else if (i + ol <= sl) {
                hit = memmem(s + i, sl - i, old, ol);
            }
        }
        if (hit)
            at = (size_t)(hit - s);
        size_t need = len + (at - i) + (hit ? nl : 0) + 1;
        if (need > CEL__MAX_BUILD)
            return cel__err(c, "string too large");
        if (need > cap) {
            size_t ncap = need * 2;
            char *o = cel__alloc(&c->scratch, ncap);
            if (!o)
                return oom(c);
            if (len)
                memcpy(o, out, len);
            out = o;
            cap = ncap;
        }
        memcpy(out + len, s + i, at - i);
        len += at - i;
        if (!hit)
            break;
        memcpy(out + len, new, nl);
        len += nl;
        done++;
        if (ol == 0) {
            if (at >= sl)
                break;
            size_t j = at;
            next_rune(s, sl, &j);
            memcpy(out + len, s + at, j - at);
            len += j - at;
            i = j;
            if (i == sl && (limit < 0 || done < limit)) {
                memcpy(out + len, new, nl);
                len += nl;
                break;
            }
        } else {
            i = at + ol;
        }
        if (cel__charge(c, 1))
            return cel__abort_val(c);
    }
    return vstr(c, out ? out : "", len);
}

CEL__FN(cel__fn_split)
{
    const char *s = a[0].v.str.s, *sep = a[1].v.str.s;
    size_t sl = a[0].v.str.n, pl = a[1].v.str.n, i = 0, cnt = 0;
    int64_t limit = n > 2 ? a[2].v.i : -1;
    struct cel__list *l;
    struct cel__val v;

    (void)call;
    if (limit == 0)
        return vlist(c, 0, &l);
    if (cel__charge(c, sl / 16))
        return cel__abort_val(c);
    /* Upper bound on the parts: one per byte plus one. */
    v = vlist(c, sl + 1, &l);
    if (v.kind == CEL_V_ERROR)
        return v;
    if (pl == 0) {
        /* Go: explode into code points (at most limit parts, the last is the rest). */
        while (i < sl) {
            size_t j = i;
            if (limit > 0 && (int64_t)cnt == limit - 1) {
                j = sl;
            } else {
                next_rune(s, sl, &j);
            }
            l->items[cnt++] = vstr(c, s + i, j - i);
            i = j;
        }
        l->n = cnt;
        return v;
    }
    for (;;) {
        const char *hit = (limit < 0 || (int64_t)cnt < limit - 1) && i <= sl
                              ? memmem(s + i, sl - i, sep, pl) : NULL;
        size_t at = hit ? (size_t)(hit - s) : sl;
        l->items[cnt++] = vstr(c, s + i, at - i);
        if (l->items[cnt - 1].kind == CEL_V_ERROR)
            return l->items[cnt - 1];
        if (!hit)
            break;
        i = at + pl;
    }
    l->n = cnt;
    return v;
}

CEL__FN(cel__fn_substring)
{
    size_t cnt, *offs;
    int64_t st = a[1].v.i, en;

    (void)call;
    if (cel__charge(c, a[0].v.str.n / 16))
        return cel__abort_val(c);
    if (!(offs = rune_offsets(c, a[0].v.str.s, a[0].v.str.n, &cnt)))
        return oom(c);
    en = n > 2 ? a[2].v.i : (int64_t)cnt;
    if (n > 2 && st > en)
        return cel__err(c, "invalid substring range. start: %" PRId64 ", end: %" PRId64, st, en);
    if (st < 0 || (uint64_t)st > cnt)
        return cel__err(c, "index out of range: %" PRId64, st);
    if (en < 0 || (uint64_t)en > cnt)
        return cel__err(c, "index out of range: %" PRId64, en);
    return vstr(c, a[0].v.str.s + offs[st], offs[en] - offs[st]);
}

/* Go's unicode.IsSpace. */
static int is_space(uint32_t r)
{
    switch (r) {
    case '\t': case '\n': case '\v': case '\f': case '\r': case ' ': case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default: return r >= 0x2000 && r <= 0x200A;
    }
}

CEL__FN(cel__fn_trim)
{
    const char *s = a[0].v.str.s;
    size_t len = a[0].v.str.n, st = 0, en = len, i = 0;

    (void)call; (void)n;
    if (cel__charge(c, len / 16))
        return cel__abort_val(c);
    while (i < len) {
        size_t j = i;
        if (!is_space(next_rune(s, len, &j)))
            break;
        i = st = j;
    }
    st = i;
    /* From the end: find the last non-space code point. */
    en = st;
    i = st;
    while (i < len) {
        size_t j = i;
        if (!is_space(next_rune(s, len, &j)))
            en = j;
        i = j;
    }
    return vstr(c, s + st, en - st);
}

CEL__FN(cel__fn_join)
{
    const struct cel__list *l = a[0].v.list;
    const char *sep = n > 1 ? a[1].v.str.s : "";
    size_t sl = n > 1 ? a[1].v.str.n : 0, len = 0, pos = 0;
    char *out;

    (void)call;
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].kind != CEL_V_STRING)
            return cel__err(c, "no such overload: join");
        len += l->items[i].v.str.n + (i ? sl : 0);
        if (len > CEL__MAX_BUILD)
            return cel__err(c, "string too large");
    }
    if (cel__charge(c, len / 16 + l->n))
        return cel__abort_val(c);
    if (!(out = cel__alloc(&c->scratch, len + 1)))
        return oom(c);
    for (size_t i = 0; i < l->n; i++) {
        if (i && sl) {
            memcpy(out + pos, sep, sl);
            pos += sl;
        }
        memcpy(out + pos, l->items[i].v.str.s, l->items[i].v.str.n);
        pos += l->items[i].v.str.n;
    }
    struct cel__val v = {.kind = CEL_V_STRING};
    v.v.str.s = out;
    v.v.str.n = len;
    return v;
}

CEL__FN(cel__fn_quote)
{
    const char *s = a[0].v.str.s;
    size_t len = a[0].v.str.n, i = 0, pos = 0;
    char *out;

    (void)call; (void)n;
    if (len > CEL__MAX_BUILD / 4)
        return cel__err(c, "string too large");
    if (cel__charge(c, len / 16 + 1))
        return cel__abort_val(c);
    if (!(out = cel__alloc(&c->scratch, len * 3 + 3)))
        return oom(c);
    out[pos++] = '"';
    while (i < len) {
        size_t j = i;
        uint32_t r = next_rune(s, len, &j);
        const char *esc = NULL;
        switch (r) {
        case '\a': esc = "\\a"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\v': esc = "\\v"; break;
        case '\\': esc = "\\\\"; break;
        case '"': esc = "\\\""; break;
        }
        if (esc) {
            memcpy(out + pos, esc, 2);
            pos += 2;
        } else if (r == 0xFFFD && (j - i == 1 || memcmp(s + i, "\xEF\xBF\xBD", 3) != 0)) {
            /* sanitize(): invalid UTF-8 becomes U+FFFD. */
            memcpy(out + pos, "\xEF\xBF\xBD", 3);
            pos += 3;
        } else {
            memcpy(out + pos, s + i, j - i);
            pos += j - i;
        }
        i = j;
    }
    out[pos++] = '"';
    return vstr(c, out, pos);
}

/* ---- Kubernetes regex library (find, findAll) -------------------------------- */

CEL__FN(cel__fn_find)
{
    const char *err = NULL;
    size_t mo, ml;
    int r;

    (void)call; (void)n;
    if (cel__charge(c, (a[0].v.str.n + a[1].v.str.n) / 16 + 1))
        return cel__abort_val(c);
    r = cel__re2_find(a[1].v.str.s, a[1].v.str.n, a[0].v.str.s, a[0].v.str.n, 0, &mo, &ml, &err);
    if (r < 0)
        return cel__err(c, "%s", err ? err : "invalid regular expression");
    return r ? vstr(c, a[0].v.str.s + mo, ml) : vstr(c, "", 0);
}

CEL__FN(cel__fn_find_all)
{
    const char *err = NULL;
    int64_t limit = n > 2 ? a[2].v.i : -1;
    size_t pos = 0, cnt = 0, len = a[0].v.str.n;
    struct cel__list *l;
    struct cel__val v;

    (void)call;
    if (cel__charge(c, (a[0].v.str.n + a[1].v.str.n) / 16 + 1))
        return cel__abort_val(c);
    v = vlist(c, len + 1, &l);
    if (v.kind == CEL_V_ERROR)
        return v;
    if (limit == 0)
        return v;
    /* Go's FindAllString: after an empty match, the next starts one code point on,
     * and an empty match right after a previous match is skipped. */
    size_t prev_end = (size_t)-1;
    while (pos <= len && (limit < 0 || (int64_t)cnt < limit)) {
        size_t mo, ml;
        int r = cel__re2_find(a[1].v.str.s, a[1].v.str.n, a[0].v.str.s, len, pos, &mo, &ml, &err);
        if (r < 0)
            return cel__err(c, "%s", err ? err : "invalid regular expression");
        if (!r)
            break;
        if (!(ml == 0 && mo == prev_end)) {
            l->items[cnt++] = vstr(c, a[0].v.str.s + mo, ml);
        }
        prev_end = mo + ml;
        if (ml == 0) {
            if (mo >= len)
                break;
            size_t j = mo;
            next_rune(a[0].v.str.s, len, &j);
            pos = j;
        } else {
            pos = mo + ml;
        }
        if (cel__charge(c, 1))
            return cel__abort_val(c);
    }
    l->n = cnt;
    return v;
}

/* ---- Kubernetes lists library ---------------------------------------------------- */

/* The values cel-go can order (traits.Comparer); Kubernetes' lists functions refuse others.
 * Two of them that cannot be ordered together (a string and an int, NaN) are passed over, as
 * the error Compare returns is neither "less" nor "greater". */
static int comparer(const struct cel__val *v)
{
    switch (v->kind) {
    case CEL_V_BOOL: case CEL_V_INT: case CEL_V_UINT: case CEL_V_DOUBLE: case CEL_V_STRING:
    case CEL_V_BYTES: case CEL_V_TIMESTAMP: case CEL_V_DURATION:
        return 1;
    default:
        return 0;
    }
}

CEL__FN(cel__fn_is_sorted)
{
    const struct cel__list *l = a[0].v.list;

    (void)call; (void)n;
    if (cel__charge(c, l->n))
        return cel__abort_val(c);
    for (size_t i = 0; i < l->n; i++) {
        if (!comparer(&l->items[i]))
            return cel__err(c, "no such overload: isSorted(list)");
        if (i && cel__val_compare(&l->items[i - 1], &l->items[i]) == 1)
            return vbool(0);
    }
    return vbool(1);
}

CEL__FN(cel__fn_sum)
{
    const struct cel__list *l = a[0].v.list;
    struct cel__val acc;
    const struct cel__sig *sig = &cel__sigs()[call->cand[0]];

    (void)n;
    if (cel__charge(c, l->n))
        return cel__abort_val(c);
    /* The identity of the element type the checker chose (empty lists included). */
    memset(&acc, 0, sizeof(acc));
    switch (sig->result->kind) {
    case CEL_T_UINT: acc.kind = CEL_V_UINT; break;
    case CEL_T_DOUBLE: acc.kind = CEL_V_DOUBLE; break;
    case CEL_T_DURATION: acc.kind = CEL_V_DURATION; break;
    default: acc.kind = CEL_V_INT; break;
    }
    /* Kubernetes' sum(): the zero of the element type its dispatch picked (by the first
     * element), then each element added as `+` adds it ([duration, timestamp] is a
     * timestamp). */
    if (l->n) {
        enum cel__vkind k = l->items[0].kind;
        if (k != CEL_V_INT && k != CEL_V_UINT && k != CEL_V_DOUBLE && k != CEL_V_DURATION)
            return cel__err(c, "no such overload");
        acc.kind = k;
    }
    for (size_t i = 0; i < l->n; i++) {
        acc = cel__arith(c, CEL_OP_ADD, &acc, &l->items[i]);
        if (acc.kind == CEL_V_ERROR)
            return acc;
    }
    return acc;
}

/* want: the comparison of the best so far with the next that makes the next the best (min:
 * 1, max: -1), as lists.go's cmp. */
static struct cel__val min_max(struct cel__ctx *c, const struct cel__list *l, int want)
{
    size_t best = 0;

    if (cel__charge(c, l->n))
        return cel__abort_val(c);
    if (l->n == 0)
        return cel__err(c, "%s called on empty list", want > 0 ? "min" : "max");
    for (size_t i = 0; i < l->n; i++) {
        if (!comparer(&l->items[i]))
            return cel__err(c, "no such overload: %s(list)", want > 0 ? "min" : "max");
        if (i && cel__val_compare(&l->items[best], &l->items[i]) == want)
            best = i;
    }
    return l->items[best];
}

CEL__FN(cel__fn_min)
{
    (void)call; (void)n;
    return min_max(c, a[0].v.list, 1);
}

CEL__FN(cel__fn_max)
{
    (void)call; (void)n;
    return min_max(c, a[0].v.list, -1);
}

CEL__FN(cel__fn_list_index_of)
{
    const struct cel__list *l = a[0].v.list;

    (void)call; (void)n;
    if (cel__charge(c, l->n))
        return cel__abort_val(c);
    for (size_t i = 0; i < l->n; i++)
        if (cel__val_equal(&l->items[i], &a[1]) == 1)
            return vint((int64_t)i);
    return vint(-1);
}

CEL__FN(cel__fn_list_last_index_of)
{
    const struct cel__list *l = a[0].v.list;

    (void)call; (void)n;
    if (cel__charge(c, l->n))
        return cel__abort_val(c);
    for (size_t i = l->n; i-- > 0;)
        if (cel__val_equal(&l->items[i], &a[1]) == 1)
            return vint((int64_t)i);
    return vint(-1);
}

/* ---- lists extension (cel-go ext/lists.go, version 3) --------------------------- */

CEL__FN(cel__fn_lists_range)
{
    struct cel__list *l;
    struct cel__val v;
    int64_t k = a[0].v.i;

    (void)call; (void)n;
    /* cel-go v0.29 (Kubernetes 1.37) refuses what v0.26 took as an empty range. */
    if (c->kube_minor >= 37 && k < 0)
        return cel__err(c, "lists.range: size must be non-negative, got %lld", (long long)k);
    if (c->kube_minor >= 37 && k > 1000000)
        return cel__err(c, "lists.range: size %lld exceeds maximum allowed (1000000)",
                        (long long)k);
    if (k < 0)
        k = 0;
    if (cel__charge(c, (uint64_t)k))
        return cel__abort_val(c);
    v = vlist(c, (size_t)k, &l);
    if (v.kind == CEL_V_ERROR)
        return v;
    for (int64_t i = 0; i < k; i++)
        l->items[i] = vint(i);
    l->n = (size_t)k;
    return v;
}

CEL__FN(cel__fn_slice)
{
    const struct cel__list *in = a[0].v.list;
    int64_t s = a[1].v.i, e = a[2].v.i;
    struct cel__list *l;
    struct cel__val v;

    (void)call; (void)n;
    if (s < 0 || e < 0)
        return cel__err(c, "cannot slice(%" PRId64 ", %" PRId64 "), negative indexes not supported",
                        s, e);
    if (s > e)
        return cel__err(c, "cannot slice(%" PRId64 ", %" PRId64 "), start index must be less than "
                           "or equal to end index", s, e);
    if ((uint64_t)e > in->n)
        return cel__err(c, "cannot slice(%" PRId64 ", %" PRId64 "), list is length %zu", s, e,
                        in->n);
    if (cel__charge(c, (uint64_t)(e - s)))
        return cel__abort_val(c);
    v = vlist(c, (size_t)(e - s), &l);
    if (v.kind == CEL_V_ERROR)
        return v;
    if (e > s)
        memcpy(l->items, in->items + s, (size_t)(e - s) * sizeof(*l->items));
    l->n = (size_t)(e - s);
    return v;
}

static int flatten_into(struct cel__ctx *c, const struct cel__list *in, int64_t depth,
                        struct cel__list *out, size_t cap)
{
    for (size_t i = 0; i < in->n; i++) {
        if (in->items[i].kind == CEL_V_LIST && depth > 0) {
            if (flatten_into(c, in->items[i].v.list, depth - 1, out, cap))
                return -1;
            continue;
        }
        if (out->n == cap)
            return -1;
        out->items[out->n++] = in->items[i];
    }
    return cel__charge(c, in->n);
}

static size_t flat_size(const struct cel__list *in, int64_t depth)
{
    size_t k = 0;

    for (size_t i = 0; i < in->n; i++)
        k += in->items[i].kind == CEL_V_LIST && depth > 0
                 ? flat_size(in->items[i].v.list, depth - 1) : 1;
    return k;
}

CEL__FN(cel__fn_flatten)
{
    int64_t depth = n > 1 ? a[1].v.i : 1;
    struct cel__list *l;
    struct cel__val v;
    size_t k;

    (void)call;
    /* Reached without type guards (see the dispatch in cel_eval.c). */
    if (a[0].kind != CEL_V_LIST || (n > 1 && a[1].kind != CEL_V_INT))
        return cel__err(c, "no such overload: %s.flatten(%s)", cel__vkind_name(a[0].kind),
                        n > 1 ? cel__vkind_name(a[1].kind) : "");
    if (depth < 0)
        return cel__err(c, "level must be non-negative");
    if (depth > 100)
        depth = 100; /* deeper than any value the scratch arena can hold */
    k = flat_size(a[0].v.list, depth);
    v = vlist(c, k, &l);
    if (v.kind == CEL_V_ERROR)
        return v;
    if (flatten_into(c, a[0].v.list, depth, l, k))
        return c->aborted ? cel__abort_val(c) : cel__err(c, "list too large");
    return v;
}

CEL__FN(cel__fn_distinct)
{
    const struct cel__list *in = a[0].v.list;
    struct cel__list *l;
    struct cel__val v = vlist(c, in->n, &l);

    (void)call; (void)n;
    if (v.kind == CEL_V_ERROR)
        return v;
    if (cel__charge(c, in->n * (in->n + 1) / 2))
        return cel__abort_val(c);
    for (size_t i = 0; i < in->n; i++) {
        size_t j;
        for (j = 0; j < l->n; j++)
            if (cel__val_equal(&l->items[j], &in->items[i]) == 1)
                break;
        if (j == l->n)
            l->items[l->n++] = in->items[i];
    }
    return v;
}

CEL__FN(cel__fn_reverse)
{
    const struct cel__list *in = a[0].v.list;
    struct cel__list *l;
    struct cel__val v = vlist(c, in->n, &l);

    (void)call; (void)n;
    if (v.kind == CEL_V_ERROR)
        return v;
    for (size_t i = 0; i < in->n; i++)
        l->items[i] = in->items[in->n - 1 - i];
    l->n = in->n;
    return v;
}

/* Stable merge sort of vals by keys (both of n), comparing with cel__val_compare. */
static int sort_by(struct cel__ctx *c, struct cel__val *vals, struct cel__val *keys, size_t n)
{
    struct cel__val *tv, *tk;

    if (n < 2)
        return 0;
    if (cel__charge(c, n))
        return -1;
    size_t h = n / 2;
    if (sort_by(c, vals, keys, h) || sort_by(c, vals + h, keys + h, n - h))
        return -1;
    if (!(tv = cel__alloc(&c->scratch, n * sizeof(*tv))) ||
        !(tk = cel__alloc(&c->scratch, n * sizeof(*tk))))
        return -1;
    size_t i = 0, j = h, k = 0;
    while (i < h || j < n) {
        int take_left;
        if (i == h)
            take_left = 0;
        else if (j == n)
            take_left = 1;
        else {
            int r = cel__val_compare(&keys[j], &keys[i]);
            if (r == 2 || r == -2)
                return -2;
            take_left = r >= 0;
        }
        if (take_left) {
            tv[k] = vals[i];
            tk[k++] = keys[i++];
        } else {
            tv[k] = vals[j];
            tk[k++] = keys[j++];
        }
    }
    memcpy(vals, tv, n * sizeof(*tv));
    memcpy(keys, tk, n * sizeof(*tk));
    return 0;
}

struct cel__val cel__sorted(struct cel__ctx *c, const struct cel__list *in,
                            const struct cel__list *keys)
{
    struct cel__list *l;
    struct cel__val v = vlist(c, in->n, &l), *k;
    int r;

    if (v.kind == CEL_V_ERROR)
        return v;
    if (!(k = cel__alloc(&c->scratch, (in->n + 1) * sizeof(*k))))
        return oom(c);
    if (in->n) {
        memcpy(l->items, in->items, in->n * sizeof(*l->items));
        memcpy(k, keys->items, in->n * sizeof(*k));
    }
    l->n = in->n;
    for (size_t i = 0; i < in->n; i++) {
        switch (k[i].kind) {
        case CEL_V_INT: case CEL_V_UINT: case CEL_V_DOUBLE: case CEL_V_BOOL: case CEL_V_STRING:
        case CEL_V_BYTES: case CEL_V_TIMESTAMP: case CEL_V_DURATION:
            if (k[i].kind != k[0].kind)
                return cel__err(c, "list elements must have the same type");
            break;
        default:
            return cel__err(c, "list elements must be comparable");
        }
    }
    r = sort_by(c, l->items, k, in->n);
    if (r == -1)
        return c->aborted ? cel__abort_val(c) : oom(c);
    if (r == -2)
        return cel__err(c, "list elements must have the same type");
    return v;
}

CEL__FN(cel__fn_sort)
{
    (void)call; (void)n;
    return cel__sorted(c, a[0].v.list, a[0].v.list);
}

/* ---- sets extension ----------------------------------------------------------------- */

static int list_has(const struct cel__list *l, const struct cel__val *x)
{
    for (size_t i = 0; i < l->n; i++)
        if (cel__val_equal(&l->items[i], x) == 1)
            return 1;
    return 0;
}

CEL__FN(cel__fn_sets_contains)
{
    const struct cel__list *x = a[0].v.list, *y = a[1].v.list;

    (void)call; (void)n;
    if (cel__charge(c, x->n * y->n + 1))
        return cel__abort_val(c);
    for (size_t i = 0; i < y->n; i++)
        if (!list_has(x, &y->items[i]))
            return vbool(0);
    return vbool(1);
}

CEL__FN(cel__fn_sets_equivalent)
{
    const struct cel__list *x = a[0].v.list, *y = a[1].v.list;

    (void)call; (void)n;
    if (cel__charge(c, 2 * x->n * y->n + 1))
        return cel__abort_val(c);
    for (size_t i = 0; i < y->n; i++)
        if (!list_has(x, &y->items[i]))
            return vbool(0);
    for (size_t i = 0; i < x->n; i++)
        if (!list_has(y, &x->items[i]))
            return vbool(0);
    return vbool(1);
}

CEL__FN(cel__fn_sets_intersects)
{
    const struct cel__list *x = a[0].v.list, *y = a[1].v.list;

    (void)call; (void)n;
    if (cel__charge(c, x->n * y->n + 1))
        return cel__abort_val(c);
    for (size_t i = 0; i < y->n; i++)
        if (list_has(x, &y->items[i]))
            return vbool(1);
    return vbool(0);
}

/* ---- optional types ------------------------------------------------------------------ */

struct cel__val cel__optional(struct cel__ctx *c, const struct cel__val *v)
{
    struct cel__val o = {.kind = CEL_V_OPTIONAL};
    struct cel__val *p;

    if (!v)
        return o;
    if (!(p = cel__alloc(&c->scratch, sizeof(*p))))
        return oom(c);
    *p = *v;
    o.v.opt = p;
    return o;
}

CEL__FN(cel__fn_opt_of)
{
    (void)call; (void)n;
    return cel__optional(c, &a[0]);
}

/* cel-go isZeroValue: the type's default. */
static int is_zero(const struct cel__val *v)
{
    switch (v->kind) {
    case CEL_V_NULL: return 1;
    case CEL_V_BOOL: return !v->v.b;
    case CEL_V_INT: return v->v.i == 0;
    case CEL_V_UINT: return v->v.u == 0;
    case CEL_V_DOUBLE: return v->v.d == 0;
    case CEL_V_STRING: case CEL_V_BYTES: return v->v.str.n == 0;
    case CEL_V_LIST: return v->v.list->n == 0;
    case CEL_V_MAP: return v->v.map->n == 0;
    case CEL_V_DURATION: return v->v.dur == 0;
    case CEL_V_TIMESTAMP: return v->v.ts.sec == 0 && v->v.ts.nsec == 0;
    case CEL_V_OPTIONAL: return !v->v.opt;
    default: return 0;
    }
}

CEL__FN(cel__fn_opt_of_non_zero)
{
    (void)call; (void)n;
    return cel__optional(c, is_zero(&a[0]) ? NULL : &a[0]);
}

CEL__FN(cel__fn_opt_none)
{
    (void)call; (void)n; (void)a;
    return cel__optional(c, NULL);
}

CEL__FN(cel__fn_opt_value)
{
    (void)call; (void)n;
    if (!a[0].v.opt)
        return cel__err(c, "optional.none() dereference");
    return *a[0].v.opt;
}

CEL__FN(cel__fn_opt_has_value)
{
    (void)c; (void)call; (void)n;
    return vbool(a[0].v.opt != NULL);
}

CEL__FN(cel__fn_opt_or)
{
    (void)c; (void)call; (void)n;
    return a[0].v.opt ? a[0] : a[1];
}

CEL__FN(cel__fn_opt_or_value)
{
    (void)c; (void)call; (void)n;
    return a[0].v.opt ? *a[0].v.opt : a[1];
}

CEL__FN(cel__fn_opt_unwrap)
{
    const struct cel__list *in = a[0].v.list;
    struct cel__list *l;
    struct cel__val v = vlist(c, in->n, &l);

    (void)call; (void)n;
    if (v.kind == CEL_V_ERROR)
        return v;
    for (size_t i = 0; i < in->n; i++) {
        if (in->items[i].kind != CEL_V_OPTIONAL)
            return cel__err(c, "value is not optional");
        if (in->items[i].v.opt)
            l->items[l->n++] = *in->items[i].v.opt;
    }
    return v;
}

CEL__FN(cel__fn_list_first)
{
    (void)call; (void)n;
    return cel__optional(c, a[0].v.list->n ? &a[0].v.list->items[0] : NULL);
}

CEL__FN(cel__fn_list_last)
{
    const struct cel__list *l = a[0].v.list;

    (void)call; (void)n;
    return cel__optional(c, l->n ? &l->items[l->n - 1] : NULL);
}

/* ---- includes(): DRA's own in 1.36 (k8s.io/dynamic-resource-allocation cel/compile.go),
 * the lists library's from 1.37 (k8s.io/apiserver library/lists.go) ---------------------- */

/* ResourceSliceMaxAttributeValuesPerDevice: 1.36's includes() refuses longer lists. */
#define DRA_MAX_ATTRIBUTE_VALUES 48

/* library/cost.go traversalCost: what 1.37 charges includes() at run time. */
static uint64_t traversal_cost(const struct cel__val *v)
{
    uint64_t sum = 0;

    switch (v->kind) {
    case CEL_V_STRING: case CEL_V_BYTES: return (uint64_t)((double)v->v.str.n * 0.1);
    case CEL_V_LIST:
        for (size_t i = 0; i < v->v.list->n; i++)
            sum += traversal_cost(&v->v.list->items[i]);
        return sum;
    default: return 1;
    }
}

CEL__FN(cel__fn_includes)
{
    (void)call; (void)n;
    if (c->kube_minor >= 37 && cel__charge(c, traversal_cost(&a[0])))
        return cel__abort_val(c);
    if (a[0].kind == CEL_V_LIST) {
        const struct cel__list *l = a[0].v.list;
        for (size_t i = 0; i < l->n; i++) {
            if (i >= DRA_MAX_ATTRIBUTE_VALUES && c->kube_minor < 37)
                return cel__err(c, "'includes' function cannot be applied to lists longer than "
                                   "%d values", DRA_MAX_ATTRIBUTE_VALUES);
            if (cel__val_equal(&l->items[i], &a[1]) == 1)
                return vbool(1);
        }
        return vbool(0);
    }
    return vbool(cel__val_equal(&a[0], &a[1]) == 1);
}
