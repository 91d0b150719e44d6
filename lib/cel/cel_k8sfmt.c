/*
 * cel_k8sfmt.c - Kubernetes' format library (k8s.io/apiserver pkg/cel/library
 * format.go): `format.<name>()` values of type kubernetes.NamedFormat,
 * `format.named(name)` and `<format>.validate(string)`, which is optional.none()
 * for a valid string and optional.of(the errors) otherwise.  The checks are
 * apimachinery's validation functions and kube-openapi's strfmt formats.
 */
#include <stdio.h>
#include <string.h>

#include "cel_int.h"

static int re(const char *pat, const char *s, size_t n)
{
    const char *err;
    size_t mo, ml;

    return cel__re2_find(pat, strlen(pat), s, n, 0, &mo, &ml, &err) == 1;
}

#define LABEL "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define LABEL1035 "[a-z]([-a-z0-9]*[a-z0-9])?"
#define QNAME "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

/* NameIs*(name, prefix): a prefix may end in '-' (it is masked to a letter). */
static const char *dns(const char *s, size_t n, int prefix, int kind)
{
    char buf[300];

    if (prefix && n && s[n - 1] == '-') {
        if (n >= sizeof(buf))
            return "must be no more than 253 characters";
        memcpy(buf, s, n);
        buf[n - 1] = 'a';
        s = buf;
    }
    switch (kind) {
    case 0:
        if (n > 63)
            return "must be no more than 63 characters";
        return re("^" LABEL "$", s, n) ? NULL
               : "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                 "characters or '-', and must start and end with an alphanumeric character";
    case 1:
        if (n > 253)
            return "must be no more than 253 characters";
        return re("^" LABEL "(\\." LABEL ")*$", s, n) ? NULL
               : "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character";
    default:
        if (n > 63)
            return "must be no more than 63 characters";
        return re("^" LABEL1035 "$", s, n) ? NULL
               : "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                 "start with an alphabetic character, and end with an alphanumeric character";
    }
}

static const char *qualified_name(const char *s, size_t n)
{
    const char *slash = memchr(s, '/', n), *name = s;
    size_t nn = n;

    if (slash) {
        if (memchr(slash + 1, '/', n - (size_t)(slash - s) - 1))
            return "a qualified name must consist of alphanumeric characters";
        if (slash == s)
            return "prefix part must be non-empty";
        if (dns(s, (size_t)(slash - s), 0, 1))
            return "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
                   "alphanumeric characters";
        name = slash + 1;
        nn = n - (size_t)(slash - s) - 1;
    }
    if (nn == 0)
        return "name part must be non-empty";
    if (nn > 63)
        return "name part must be no more than 63 characters";
    return re("^" QNAME "$", name, nn) ? NULL
           : "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character";
}

static const char *label_value(const char *s, size_t n)
{
    if (n > 63)
        return "must be no more than 63 characters";
    return n == 0 || re("^" QNAME "$", s, n) ? NULL
           : "a valid label must be an empty string or consist of alphanumeric characters, "
             "'-', '_' or '.', and must start and end with an alphanumeric character";
}

/* Go's url.ParseRequestURI, in the parts that decide validity. */
static const char *request_uri(const char *s, size_t n)
{
    size_t i = 0;

    for (size_t k = 0; k < n; k++)
        if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f)
            return "net/url: invalid control character in URL";
    if (n && s[0] == '/')
        return NULL;
    /* scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                     (i && ((s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '-' ||
                            s[i] == '.'))))
        i++;
    if (i == 0 || i >= n || s[i] != ':')
        return "invalid URI for request";
    for (size_t k = i; k < n; k++)
        if (s[k] == '%' && (k + 2 >= n || !strchr("0123456789abcdefABCDEF", s[k + 1]) ||
                            !strchr("0123456789abcdefABCDEF", s[k + 2])))
            return "invalid URL escape";
    return NULL;
}

static const char *base64(const char *s, size_t n)
{
    size_t pad = 0;

    if (n % 4)
        return "invalid base64";
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '=') {
            pad++;
            continue;
        }
        if (pad || !((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                     (ch >= '0' && ch <= '9') || ch == '+' || ch == '/'))
            return "invalid base64";
    }
    return pad > 2 ? "invalid base64" : NULL;
}

static const char *date(const char *s, size_t n)
{
    char buf[40];
    int64_t sec;
    int32_t ns;

    if (n != 10 || n + 10 >= sizeof(buf))
        return "invalid date";
    memcpy(buf, s, n);
    memcpy(buf + n, "T00:00:00Z", 10);
    return cel__parse_rfc3339(buf, n + 10, &sec, &ns) == -1 ? "invalid date" : NULL;
}

static const char *datetime(const char *s, size_t n)
{
    int64_t sec;
    int32_t ns;

    return cel__parse_rfc3339(s, n, &sec, &ns) == -1 ? "invalid datetime" : NULL;
}

static const char *uuid(const char *s, size_t n)
{
    return re("^(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", s, n)
               ? NULL : "does not match the UUID format";
}

enum { F_LABEL, F_SUBDOMAIN, F_1035, F_QNAME, F_LABEL_P, F_SUBDOMAIN_P, F_1035_P, F_LABELVALUE,
       F_URI, F_UUID, F_BYTE, F_DATE, F_DATETIME, F__COUNT };

static const char *const names[F__COUNT] = {
    "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix",
    "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte",
    "date", "datetime",
};

static const char *check(int f, const char *s, size_t n)
{
    switch (f) {
    case F_LABEL: return dns(s, n, 0, 0);
    case F_SUBDOMAIN: return dns(s, n, 0, 1);
    case F_1035: return dns(s, n, 0, 2);
    case F_QNAME: return qualified_name(s, n);
    case F_LABEL_P: return dns(s, n, 1, 0);
    case F_SUBDOMAIN_P: return dns(s, n, 1, 1);
    case F_1035_P: return dns(s, n, 1, 2);
    case F_LABELVALUE: return label_value(s, n);
    case F_URI: return request_uri(s, n);
    case F_UUID: return uuid(s, n);
    case F_BYTE: return base64(s, n);
    case F_DATE: return date(s, n);
    default: return datetime(s, n);
    }
}

static struct cel__val vformat(int f)
{
    struct cel__val v = {.kind = CEL_V_FORMAT};
    v.v.fmt = f;
    return v;
}

/* format.<name>(): the call's name says which. */
CEL__FN(cel__fn_k8s_format)
{
    (void)c; (void)a; (void)n;
    for (int f = 0; f < F__COUNT; f++)
        if (strcmp(call->name + 7, names[f]) == 0)
            return vformat(f);
    return cel__err(c, "unknown format %s", call->name);
}

CEL__FN(cel__fn_k8s_format_named)
{
    (void)call; (void)n;
    for (int f = 0; f < F__COUNT; f++)
        if (strlen(names[f]) == a[0].v.str.n && !memcmp(names[f], a[0].v.str.s, a[0].v.str.n)) {
            struct cel__val v = vformat(f);
            return cel__optional(c, &v);
        }
    return cel__optional(c, NULL);
}

CEL__FN(cel__fn_k8s_format_validate)
{
    const char *why;
    struct cel__list *l;
    struct cel__val v = {.kind = CEL_V_LIST}, s = {.kind = CEL_V_STRING};

    (void)call; (void)n;
    if (cel__charge(c, a[1].v.str.n / 10 + 1))
        return cel__abort_val(c);
    if (!(why = check(a[0].v.fmt, a[1].v.str.s, a[1].v.str.n)))
        return cel__optional(c, NULL);
    if (!(l = cel__alloc(&c->scratch, sizeof(*l))) ||
        !(l->items = cel__alloc(&c->scratch, sizeof(*l->items)))) {
        c->aborted = 1;
        c->abort_rc = DD_ENOMEM;
        return cel__abort_val(c);
    }
    s.v.str.s = why;
    s.v.str.n = strlen(why);
    l->items[0] = s;
    l->n = 1;
    v.v.list = l;
    return cel__optional(c, &v);
}
