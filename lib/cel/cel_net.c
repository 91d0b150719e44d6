/*
 * cel_net.c - Kubernetes' IP and CIDR libraries (k8s.io/apiserver pkg/cel/library
 * ip.go, cidr.go) on the semantics of Go's net/netip: strict dotted quads (no
 * leading zeros), RFC 4291 IPv6 text with an optional embedded IPv4 tail, RFC 5952
 * output, no zones and no IPv4-mapped IPv6 addresses (both refused by Kubernetes).
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

static int parse_v4(const char *s, size_t n, unsigned char out[4])
{
    size_t i = 0;

    for (int k = 0; k < 4; k++) {
        unsigned v = 0, digits = 0;
        if (k && (i >= n || s[i++] != '.'))
            return -1;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (digits && v == 0)
                return -1; /* leading zero */
            v = v * 10 + (unsigned)(s[i++] - '0');
            if (++digits > 3 || v > 255)
                return -1;
        }
        if (!digits)
            return -1;
        out[k] = (unsigned char)v;
    }
    return i == n ? 0 : -1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Go's parseIPv6 (without zones: '%' is an error here, refused by Kubernetes). */
static int parse_v6(const char *s, size_t n, unsigned char out[16], int *has_zone)
{
    int ellipsis = -1, k = 0;
    size_t i = 0;

    *has_zone = memchr(s, '%', n) != NULL;
    if (*has_zone)
        n = (size_t)((const char *)memchr(s, '%', n) - s);
    memset(out, 0, 16);
    if (n >= 2 && s[0] == ':' && s[1] == ':') {
        ellipsis = 0;
        i = 2;
        if (i == n)
            return 0;
    }
    while (k < 16) {
        unsigned v = 0;
        int d = 0;
        size_t st = i;
        while (i < n && hexval(s[i]) >= 0 && d < 5) {
            v = v * 16 + (unsigned)hexval(s[i++]);
            d++;
        }
        if (d == 0 || d > 4)
            return -1;
        if (i < n && s[i] == '.') {
            /* An embedded IPv4 address ends the text. */
            if (ellipsis < 0 && k != 12)
                return -1;
            if (k + 4 > 16 || parse_v4(s + st, n - st, out + k))
                return -1;
            k += 4;
            i = n;
            break;
        }
        out[k++] = (unsigned char)(v >> 8);
        out[k++] = (unsigned char)v;
        if (i == n)
            break;
        if (s[i] != ':' || i + 1 == n)
            return -1;
        i++;
        if (s[i] == ':') {
            if (ellipsis >= 0)
                return -1;
            ellipsis = k;
            if (++i == n)
                break;
        }
    }
    if (i != n)
        return -1;
    if (k < 16) {
        if (ellipsis < 0)
            return -1;
        int nn = 16 - k;
        memmove(out + ellipsis + nn, out + ellipsis, (size_t)(k - ellipsis));
        memset(out + ellipsis, 0, (size_t)nn);
    } else if (ellipsis >= 0) {
        return -1; /* "::" must stand for at least one group */
    }
    return 0;
}

static int is_4in6(const struct cel__ip *ip)
{
    static const unsigned char pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return !ip->v4 && memcmp(ip->a, pre, 12) == 0;
}

/* 0, or -1 with a message (Kubernetes' wording). */
static int parse_ip(const char *s, size_t n, struct cel__ip *ip, const char **why)
{
    int zone = 0;

    memset(ip, 0, sizeof(*ip));
    if (memchr(s, ':', n)) {
        if (parse_v6(s, n, ip->a, &zone)) {
            *why = "parse error during conversion from string";
            return -1;
        }
        if (zone) {
            *why = "with zone value is not allowed";
            return -1;
        }
        if (is_4in6(ip)) {
            *why = "IPv4-mapped IPv6 address is not allowed";
            return -1;
        }
        return 0;
    }
    ip->v4 = 1;
    ip->a[10] = ip->a[11] = 0xff;
    if (parse_v4(s, n, ip->a + 12)) {
        *why = "parse error during conversion from string";
        return -1;
    }
    return 0;
}

/* Go's Addr.String(). */
static size_t ip_text(const struct cel__ip *ip, char *buf, size_t cap)
{
    int best = -1, bestlen = 0;
    size_t len = 0;

    if (ip->v4)
        return (size_t)snprintf(buf, cap, "%u.%u.%u.%u", ip->a[12], ip->a[13], ip->a[14],
                                ip->a[15]);
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && ip->a[2 * j] == 0 && ip->a[2 * j + 1] == 0)
            j++;
        if (j - i > bestlen && j - i >= 2) {
            best = i;
            bestlen = j - i;
        }
        i = j > i ? j : i + 1;
    }
    for (int i = 0; i < 8; i++) {
        if (i == best) {
            len += (size_t)snprintf(buf + len, cap - len, "::");
            i += bestlen - 1;
            continue;
        }
        if (i && i != best + bestlen)
            len += (size_t)snprintf(buf + len, cap - len, ":");
        len += (size_t)snprintf(buf + len, cap - len, "%x", ip->a[2 * i] << 8 | ip->a[2 * i + 1]);
    }
    return len;
}

static struct cel__val ip_value(struct cel__ctx *c, const struct cel__ip *ip)
{
    struct cel__ip *p = cel__alloc(&c->scratch, sizeof(*p));
    struct cel__val v = {.kind = CEL_V_IP};

    if (!p) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    *p = *ip;
    v.v.ip = p;
    return v;
}

static struct cel__val str_value(struct cel__ctx *c, const char *s, size_t n)
{
    struct cel__val v = {.kind = CEL_V_STRING};
    char *p = cel__strndup(&c->scratch, s, n);

    if (!p) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    v.v.str.s = p;
    v.v.str.n = n;
    return v;
}

#define SHOW(a) (int)((a).v.str.n > 64 ? 64 : (a).v.str.n), (a).v.str.s

CEL__FN(cel__fn_ip)
{
    struct cel__ip ip;
    const char *why;

    (void)call; (void)n;
    if (a[0].kind == CEL_V_CIDR)
        return ip_value(c, &a[0].v.cidr->ip);
    if (parse_ip(a[0].v.str.s, a[0].v.str.n, &ip, &why))
        return cel__err(c, "IP Address \"%.*s\" %s", SHOW(a[0]), why);
    return ip_value(c, &ip);
}

CEL__FN(cel__fn_is_ip)
{
    struct cel__ip ip;
    const char *why;

    (void)c; (void)call; (void)n;
    return vbool(parse_ip(a[0].v.str.s, a[0].v.str.n, &ip, &why) == 0);
}

CEL__FN(cel__fn_ip_is_canonical)
{
    struct cel__ip ip;
    const char *why;
    char buf[64];
    size_t len;

    (void)call; (void)n;
    if (parse_ip(a[0].v.str.s, a[0].v.str.n, &ip, &why))
        return cel__err(c, "IP Address \"%.*s\" %s", SHOW(a[0]), why);
    len = ip_text(&ip, buf, sizeof(buf));
    return vbool(len == a[0].v.str.n && memcmp(buf, a[0].v.str.s, len) == 0);
}

CEL__FN(cel__fn_ip_family)
{
    struct cel__val v = {.kind = CEL_V_INT};

    (void)c; (void)call; (void)n;
    v.v.i = a[0].v.ip->v4 ? 4 : 6;
    return v;
}

enum ip_test { IP_UNSPEC, IP_LOOPBACK, IP_LL_MULTICAST, IP_LL_UNICAST, IP_GLOBAL_UNICAST };

static int ip_test(const struct cel__ip *ip, enum ip_test t)
{
    const unsigned char *a = ip->a, *v4 = ip->a + 12;
    static const unsigned char zero[16] = {0};
    int unspec = ip->v4 ? !v4[0] && !v4[1] && !v4[2] && !v4[3] : !memcmp(a, zero, 16);
    int loop = ip->v4 ? v4[0] == 127 : !memcmp(a, zero, 15) && a[15] == 1;
    int llm = ip->v4 ? v4[0] == 224 && v4[1] == 0 && v4[2] == 0 : a[0] == 0xff && (a[1] & 0x0f) == 2;
    int llu = ip->v4 ? v4[0] == 169 && v4[1] == 254 : a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
    int mc = ip->v4 ? (v4[0] & 0xf0) == 0xe0 : a[0] == 0xff;
    int bcast = ip->v4 && v4[0] == 255 && v4[1] == 255 && v4[2] == 255 && v4[3] == 255;

    switch (t) {
    case IP_UNSPEC: return unspec;
    case IP_LOOPBACK: return loop;
    case IP_LL_MULTICAST: return llm;
    case IP_LL_UNICAST: return llu;
    default: return !unspec && !loop && !mc && !llu && !bcast;
    }
}

#define IP_PRED(fname, t)                               \
    CEL__FN(fname)                                      \
    {                                                   \
        (void)c; (void)call; (void)n;                   \
        return vbool(ip_test(a[0].v.ip, t));            \
    }

IP_PRED(cel__fn_ip_is_unspecified, IP_UNSPEC)
IP_PRED(cel__fn_ip_is_loopback, IP_LOOPBACK)
IP_PRED(cel__fn_ip_is_link_local_multicast, IP_LL_MULTICAST)
IP_PRED(cel__fn_ip_is_link_local_unicast, IP_LL_UNICAST)
IP_PRED(cel__fn_ip_is_global_unicast, IP_GLOBAL_UNICAST)

/* ---- CIDR ------------------------------------------------------------------------- */

static int parse_cidr(const char *s, size_t n, struct cel__cidr *out, const char **why)
{
    const char *slash = memchr(s, '/', n);
    size_t i;
    int bits = 0;

    *why = "parse error during conversion from string";
    if (!slash)
        return -1;
    if (parse_ip(s, (size_t)(slash - s), &out->ip, why)) {
        if (strstr(*why, "zone"))
            *why = "parse error during conversion from string";
        return -1;
    }
    i = (size_t)(slash - s) + 1;
    if (i == n || (s[i] == '0' && i + 1 < n))
        return -1;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        bits = bits * 10 + (s[i] - '0');
        if (bits > 128)
            return -1;
    }
    if (bits > (out->ip.v4 ? 32 : 128))
        return -1;
    out->bits = bits;
    return 0;
}

static struct cel__val cidr_value(struct cel__ctx *c, const struct cel__cidr *x)
{
    struct cel__cidr *p = cel__alloc(&c->scratch, sizeof(*p));
    struct cel__val v = {.kind = CEL_V_CIDR};

    if (!p) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    *p = *x;
    v.v.cidr = p;
    return v;
}

static void mask(struct cel__cidr *x)
{
    int bits = x->bits + (x->ip.v4 ? 96 : 0);

    for (int i = 0; i < 16; i++) {
        int keep = bits - i * 8;
        if (i < 12 && x->ip.v4)
            continue;
        if (keep >= 8)
            continue;
        x->ip.a[i] &= keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
    }
}

static int contains(const struct cel__cidr *x, const struct cel__ip *ip)
{
    struct cel__cidr m = *x, o = {*ip, x->bits};

    if (x->ip.v4 != ip->v4)
        return 0;
    mask(&m);
    mask(&o);
    return memcmp(m.ip.a, o.ip.a, 16) == 0;
}

CEL__FN(cel__fn_cidr)
{
    struct cel__cidr x;
    const char *why;

    (void)call; (void)n;
    if (parse_cidr(a[0].v.str.s, a[0].v.str.n, &x, &why))
        return cel__err(c, "network address parse error during conversion from string: "
                           "network address parse error during conversion from string: "
                           "netip.ParsePrefix(\"%.*s\"): %s", SHOW(a[0]), why);
    return cidr_value(c, &x);
}

CEL__FN(cel__fn_is_cidr)
{
    struct cel__cidr x;
    const char *why;

    (void)c; (void)call; (void)n;
    return vbool(parse_cidr(a[0].v.str.s, a[0].v.str.n, &x, &why) == 0);
}

CEL__FN(cel__fn_cidr_contains_ip)
{
    struct cel__ip ip;
    const char *why;

    (void)call; (void)n;
    if (a[1].kind == CEL_V_IP)
        return vbool(contains(a[0].v.cidr, a[1].v.ip));
    if (parse_ip(a[1].v.str.s, a[1].v.str.n, &ip, &why))
        return cel__err(c, "IP Address \"%.*s\" %s", SHOW(a[1]), why);
    return vbool(contains(a[0].v.cidr, &ip));
}

CEL__FN(cel__fn_cidr_contains_cidr)
{
    struct cel__cidr o;
    const struct cel__cidr *x = a[0].v.cidr, *y = &o;
    const char *why;

    (void)call; (void)n;
    if (a[1].kind == CEL_V_CIDR)
        y = a[1].v.cidr;
    else if (parse_cidr(a[1].v.str.s, a[1].v.str.n, &o, &why))
        return cel__err(c, "network address parse error during conversion from string: %s", why);
    return vbool(x->bits <= y->bits && contains(x, &y->ip));
}

CEL__FN(cel__fn_cidr_prefix_length)
{
    struct cel__val v = {.kind = CEL_V_INT};

    (void)c; (void)call; (void)n;
    v.v.i = a[0].v.cidr->bits;
    return v;
}

CEL__FN(cel__fn_cidr_masked)
{
    struct cel__cidr x = *a[0].v.cidr;

    (void)call; (void)n;
    mask(&x);
    return cidr_value(c, &x);
}

/* string(ip), string(cidr). */
CEL__FN(cel__fn_net_string)
{
    char buf[80];
    size_t len;

    (void)call; (void)n;
    if (a[0].kind == CEL_V_IP)
        return str_value(c, buf, ip_text(a[0].v.ip, buf, sizeof(buf)));
    len = ip_text(&a[0].v.cidr->ip, buf, sizeof(buf));
    len += (size_t)snprintf(buf + len, sizeof(buf) - len, "/%d", a[0].v.cidr->bits);
    return str_value(c, buf, len);
}

/* ---- URLs (k8s.io/apiserver pkg/cel/library urls.go, Go's net/url) ---------------- */

static char *sdup(struct cel__ctx *c, const char *s, size_t n)
{
    return cel__strndup(&c->scratch, s, n);
}

/* url.ParseRequestURI, then url.Parse: an absolute URI or an absolute path; NULL with *why. */
static struct cel__url *parse_url(struct cel__ctx *c, const char *s, size_t n, const char **why)
{
    struct cel__url *u = cel__alloc(&c->scratch, sizeof(*u));
    size_t i = 0, hs, he, ps, pe, qs, qe;

    *why = "invalid URI for request";
    if (!u)
        return NULL;
    for (size_t k = 0; k < n; k++)
        if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f) {
            *why = "net/url: invalid control character in URL";
            return NULL;
        }
    if (n && s[0] == '/') {
        u->scheme = "";
    } else {
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                         (i && ((s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '-' ||
                                s[i] == '.'))))
            i++;
        if (i == 0 || i >= n || s[i] != ':')
            return NULL;
        u->scheme = sdup(c, s, i);
        i++;
    }
    hs = he = i;
    if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
        hs = i + 2;
        he = hs;
        while (he < n && s[he] != '/' && s[he] != '?' && s[he] != '#')
            he++;
        for (size_t k = hs; k < he; k++)
            if (s[k] == ' ' || s[k] == '<' || s[k] == '>' || s[k] == '"') {
                *why = "invalid character in host name";
                return NULL;
            }
        i = he;
    }
    ps = i;
    while (i < n && s[i] != '?' && s[i] != '#')
        i++;
    pe = i;
    qs = qe = i;
    if (i < n && s[i] == '?') {
        qs = i + 1;
        while (i < n && s[i] != '#')
            i++;
        qe = i;
    }
    for (size_t k = ps; k < n; k++)
        if (s[k] == '%' && (k + 2 >= n || !strchr("0123456789abcdefABCDEF", s[k + 1]) ||
                            !strchr("0123456789abcdefABCDEF", s[k + 2]))) {
            *why = "invalid URL escape";
            return NULL;
        }
    u->text = sdup(c, s, n);
    u->host = sdup(c, s + hs, he - hs);
    u->path = sdup(c, s + ps, pe - ps);
    u->query = sdup(c, s + qs, qe - qs);
    /* Hostname and Port: a trailing ":digits" is the port; [v6] loses its brackets. */
    {
        const char *h = u->host, *colon = strrchr(h, ':'), *rb = strchr(h, ']');
        size_t hl = strlen(h);
        if (colon && (!rb || colon > rb)) {
            u->port = sdup(c, colon + 1, hl - (size_t)(colon + 1 - h));
            hl = (size_t)(colon - h);
        } else {
            u->port = "";
        }
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
            u->hostname = sdup(c, h + 1, hl - 2);
        else
            u->hostname = sdup(c, h, hl);
    }
    if (!u->text || !u->host || !u->path || !u->query || !u->port || !u->hostname ||
        !u->scheme)
        return NULL;
    return u;
}

CEL__FN(cel__fn_url)
{
    const char *why;
    struct cel__url *u;
    struct cel__val v = {.kind = CEL_V_URL};

    (void)call; (void)n;
    if (!(u = parse_url(c, a[0].v.str.s, a[0].v.str.n, &why)))
        return cel__err(c, "URL parse error during conversion from string: parse \"%.*s\": %s",
                        SHOW(a[0]), why);
    v.v.url = u;
    return v;
}

CEL__FN(cel__fn_is_url)
{
    const char *why;

    (void)call; (void)n;
    return vbool(parse_url(c, a[0].v.str.s, a[0].v.str.n, &why) != NULL);
}

/* getScheme, getHost, getHostname, getPort, getEscapedPath: the call's name says which. */
CEL__FN(cel__fn_url_part)
{
    const struct cel__url *u = a[0].v.url;
    const char *f = call->name + 3, *s;

    (void)n;
    s = !strcmp(f, "Scheme") ? u->scheme : !strcmp(f, "Host") ? u->host
        : !strcmp(f, "Hostname") ? u->hostname : !strcmp(f, "Port") ? u->port : u->path;
    return str_value(c, s, strlen(s));
}

static size_t unescape_query(const char *s, size_t n, char *out)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            out[o++] = ' ';
        } else if (s[i] == '%' && i + 2 < n) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            out[o++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

CEL__FN(cel__fn_url_query)
{
    const char *q = a[0].v.url->query;
    size_t qn = strlen(q), nparts = 1;
    struct cel__map *m;
    struct cel__val v = {.kind = CEL_V_MAP};

    (void)call; (void)n;
    for (size_t i = 0; i < qn; i++)
        nparts += q[i] == '&';
    if (!(m = cel__alloc(&c->scratch, sizeof(*m))) ||
        !(m->keys = cel__alloc(&c->scratch, nparts * sizeof(*m->keys))) ||
        !(m->vals = cel__alloc(&c->scratch, nparts * sizeof(*m->vals))))
        goto oom;
    for (size_t i = 0; i < qn;) {
        size_t e = i, eq;
        char *k, *val;
        size_t kl, vl, j;
        while (e < qn && q[e] != '&')
            e++;
        for (eq = i; eq < e && q[eq] != '='; eq++)
            ;
        if (e > i) {
            if (!(k = cel__alloc(&c->scratch, eq - i + 1)) ||
                !(val = cel__alloc(&c->scratch, e - eq + 1)))
                goto oom;
            kl = unescape_query(q + i, eq - i, k);
            vl = eq < e ? unescape_query(q + eq + 1, e - eq - 1, val) : 0;
            for (j = 0; j < m->n; j++)
                if (m->keys[j].v.str.n == kl && !memcmp(m->keys[j].v.str.s, k, kl))
                    break;
            if (j == m->n) {
                struct cel__list *l = cel__alloc(&c->scratch, sizeof(*l));
                if (!l || !(l->items = cel__alloc(&c->scratch, nparts * sizeof(*l->items))))
                    goto oom;
                m->keys[j].kind = CEL_V_STRING;
                m->keys[j].v.str.s = k;
                m->keys[j].v.str.n = kl;
                m->vals[j].kind = CEL_V_LIST;
                m->vals[j].v.list = l;
                m->n++;
            }
            struct cel__list *l = m->vals[j].v.list;
            l->items[l->n].kind = CEL_V_STRING;
            l->items[l->n].v.str.s = val;
            l->items[l->n++].v.str.n = vl;
        }
        i = e + 1;
    }
    v.v.map = m;
    return v;
oom:
    c->aborted = 1;
    c->abort_rc = DD_ENOMEM;
    return cel__abort_val(c);
}
