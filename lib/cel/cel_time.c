/*
 * cel_time.c - CEL timestamps and durations as cel-go implements them on Go's
 * time package: timestamps within years 0001..9999 (UTC, nanoseconds),
 * durations as int64 nanoseconds (time.Duration), RFC 3339 parsing and
 * formatting, Go's ParseDuration grammar, and the calendar accessors with an
 * optional time zone (a fixed "+hh:mm" offset or an IANA name read from the
 * system's zoneinfo, as Go's time.LoadLocation does).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cel_int.h"

#define MIN_SEC (-62135596800LL) /* 0001-01-01T00:00:00Z */
#define MAX_SEC 253402300799LL   /* 9999-12-31T23:59:59Z */

static struct cel__val vint(int64_t i)
{
    struct cel__val v = {.kind = CEL_V_INT};
    v.v.i = i;
    return v;
}

struct cel__val cel__timestamp(struct cel__ctx *c, int64_t sec, int32_t nsec)
{
    struct cel__val v = {.kind = CEL_V_TIMESTAMP};

    if (sec < MIN_SEC || sec > MAX_SEC)
        return cel__err(c, "timestamp overflow");
    v.v.ts.sec = sec;
    v.v.ts.nsec = nsec;
    return v;
}

static struct cel__val vdur(int64_t ns)
{
    struct cel__val v = {.kind = CEL_V_DURATION};
    v.v.dur = ns;
    return v;
}

/* ---- Civil calendar (days from 1970-01-01, proleptic Gregorian) ---------------- */

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floordiv(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* ---- RFC 3339 (Go's time.Parse(time.RFC3339, s)) ----------------------------------- */

static int digits(const char *s, size_t n, size_t at, int k, int *out)
{
    int v = 0;

    if (at + (size_t)k > n)
        return -1;
    for (int i = 0; i < k; i++) {
        if (s[at + i] < '0' || s[at + i] > '9')
            return -1;
        v = v * 10 + (s[at + i] - '0');
    }
    *out = v;
    return 0;
}

static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

static int leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* 0 and the instant, or -1 (malformed), -2 (out of range). */
int cel__parse_rfc3339(const char *s, size_t n, int64_t *sec, int32_t *nsec)
{
    int y, mo, d, h, mi, se, oh = 0, om = 0, sign = 0;
    size_t i = 19;
    int32_t ns = 0;

    if (digits(s, n, 0, 4, &y) || n < 20 || s[4] != '-' || digits(s, n, 5, 2, &mo) ||
        s[7] != '-' || digits(s, n, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        digits(s, n, 11, 2, &h) || s[13] != ':' || digits(s, n, 14, 2, &mi) || s[16] != ':' ||
        digits(s, n, 17, 2, &se))
        return -1;
    if (i < n && s[i] == '.') {
        int k = 0;
        i++;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (k < 9)
                ns = ns * 10 + (s[i] - '0');
            k++;
            i++;
        }
        if (k == 0)
            return -1;
        for (; k < 9; k++)
            ns *= 10;
    }
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        sign = s[i] == '-' ? -1 : 1;
        if (digits(s, n, i + 1, 2, &oh) || i + 3 >= n || s[i + 3] != ':' ||
            digits(s, n, i + 4, 2, &om))
            return -1;
        i += 6;
    } else {
        return -1;
    }
    if (i != n || mo < 1 || mo > 12 || h > 23 || mi > 59 || se > 59 || oh > 23 || om > 59)
        return -1;
    if (d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)))
        return -1;
    *sec = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se -
           sign * (oh * 3600 + om * 60);
    *nsec = ns;
    return *sec < MIN_SEC || *sec > MAX_SEC ? -2 : 0;
}

/* Go's Format(time.RFC3339Nano) in UTC: trailing zeros of the fraction dropped. */
size_t cel__format_rfc3339(int64_t sec, int32_t nsec, char *buf, size_t cap)
{
    int64_t days = floordiv(sec, 86400), y, rem = sec - days * 86400;
    int m, d;
    size_t len;

    civil_from_days(days, &y, &m, &d);
    len = (size_t)snprintf(buf, cap, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d", y, m, d,
                           (int)(rem / 3600), (int)(rem / 60 % 60), (int)(rem % 60));
    if (nsec) {
        char frac[16];
        int k = 9;
        snprintf(frac, sizeof(frac), "%09d", (int)nsec);
        while (k > 0 && frac[k - 1] == '0')
            k--;
        frac[k] = '\0';
        len += (size_t)snprintf(buf + len, cap - len, ".%s", frac);
    }
    len += (size_t)snprintf(buf + len, cap - len, "Z");
    return len;
}

/* ---- Go's time.ParseDuration ---------------------------------------------------------- */

int cel__parse_duration(const char *s, size_t n, int64_t *out)
{
    static const struct {
        const char *u;
        uint64_t ns;
    } units[] = {
        {"ns", 1}, {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000}, {"ms", 1000000},
        {"s", 1000000000ULL}, {"m", 60000000000ULL}, {"h", 3600000000000ULL},
    };
    size_t i = 0;
    int neg = 0;
    uint64_t total = 0;

    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (n - i == 1 && s[i] == '0') {
        *out = 0;
        return 0;
    }
    if (i == n)
        return -1;
    while (i < n) {
        uint64_t v = 0, f = 0, scale = 1, unit = 0;
        int pre = 0, post = 0, overflow = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (v > (UINT64_C(1) << 63) / 10)
                overflow = 1;
            v = v * 10 + (uint64_t)(s[i] - '0');
            if (v > (UINT64_C(1) << 63))
                overflow = 1;
            i++;
            pre = 1;
        }
        if (overflow)
            return -1;
        if (i < n && s[i] == '.') {
            i++;
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                if (scale <= UINT64_C(1000000000000000000) / 10 && !overflow) {
                    f = f * 10 + (uint64_t)(s[i] - '0');
                    scale *= 10;
                }
                i++;
                post = 1;
            }
        }
        if (!pre && !post)
            return -1;
        size_t us = i;
        while (i < n && s[i] != '.' && !(s[i] >= '0' && s[i] <= '9'))
            i++;
        for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
            if (strlen(units[k].u) == i - us && memcmp(units[k].u, s + us, i - us) == 0)
                unit = units[k].ns;
        if (!unit)
            return -1;
        if (v > (UINT64_C(1) << 63) / unit)
            return -1;
        v *= unit;
        if (f) {
            /* Go: v += uint64(float64(f) * (float64(unit) / scale)) */
            v += (uint64_t)((double)f * ((double)unit / (double)scale));
            if (v > (UINT64_C(1) << 63))
                return -1;
        }
        total += v;
        if (total > (UINT64_C(1) << 63))
            return -1;
    }
    if (!neg && total > (UINT64_C(1) << 63) - 1)
        return -1;
    *out = neg ? (int64_t)(0 - total) : (int64_t)total;
    return 0;
}

/* cel-go's duration to string: strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s". */
size_t cel__format_duration(int64_t ns, char *buf, size_t cap)
{
    /* Go's Seconds(): sec + nsec/1e9 in float64, printed shortest. */
    int64_t sec = ns / 1000000000, rem = ns % 1000000000;
    double d = (double)sec + (double)rem / 1e9;
    char tmp[64];

    for (int prec = 0; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*f", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    return (size_t)snprintf(buf, cap, "%ss", tmp);
}

/* ---- Time zones ---------------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * The UTC offset in seconds of zone name at instant t: a fixed "[+-]hh:mm" (or
 * "hh:mm"), "UTC", or an IANA name from /usr/share/zoneinfo (TZif, version 1
 * data block).  -1 when the zone is unknown.
 */
static int zone_offset(const char *name, size_t len, int64_t t, int64_t *off)
{
    char path[300];
    unsigned char buf[1 << 16];
    ssize_t got;
    int fd;

    if (len == 3 && memcmp(name, "UTC", 3) == 0) {
        *off = 0;
        return 0;
    }
    {
        size_t i = 0;
        int sign = 1, h, m;
        if (i < len && (name[i] == '+' || name[i] == '-'))
            sign = name[i++] == '-' ? -1 : 1;
        if (len - i == 5 && !digits(name, len, i, 2, &h) && name[i + 2] == ':' &&
            !digits(name, len, i + 3, 2, &m)) {
            *off = sign * (h * 3600 + m * 60);
            return 0;
        }
    }
    if (len == 0 || len > 200 || memchr(name, '\0', len) || name[0] == '/' ||
        strstr(name, ".."))
        return -1;
    snprintf(path, sizeof(path), "/usr/share/zoneinfo/%.*s", (int)len, name);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    got = read(fd, buf, sizeof(buf));
    close(fd);
    if (got < 44 || memcmp(buf, "TZif", 4) != 0)
        return -1;
    uint32_t isutc = be32(buf + 20), isstd = be32(buf + 24), leapc = be32(buf + 28),
             timec = be32(buf + 32), typec = be32(buf + 36), charc = be32(buf + 40);
    size_t need = 44 + (size_t)timec * 5 + (size_t)typec * 6;
    (void)isutc; (void)isstd; (void)leapc; (void)charc;
    if (typec == 0 || (size_t)got < need)
        return -1;
    const unsigned char *times = buf + 44, *idx = times + timec * 4, *types = idx + timec;
    size_t ti = 0;
    /* Before the first transition: the first non-DST type (Go's lookupFirstZone, simplified). */
    for (size_t k = 0; k < typec; k++)
        if (!types[k * 6 + 4]) {
            ti = k;
            break;
        }
    for (uint32_t k = 0; k < timec; k++) {
        int32_t at = (int32_t)be32(times + k * 4);
        if (at > t)
            break;
        ti = idx[k];
    }
    if (ti >= typec)
        return -1;
    *off = (int32_t)be32(types + ti * 6);
    return 0;
}

/* ---- Functions ---------------------------------------------------------------------- */

CEL__FN(cel__fn_timestamp)
{
    int64_t sec;
    int32_t ns;
    int r;

    (void)call; (void)n;
    switch (a[0].kind) {
    case CEL_V_TIMESTAMP: return a[0];
    case CEL_V_INT: return cel__timestamp(c, a[0].v.i, 0);
    case CEL_V_STRING:
        r = cel__parse_rfc3339(a[0].v.str.s, a[0].v.str.n, &sec, &ns);
        if (r == -2)
            return cel__err(c, "timestamp overflow");
        if (r)
            return cel__err(c, "cannot parse timestamp: %.*s", (int)(a[0].v.str.n > 64 ? 64
                                                                      : a[0].v.str.n),
                            a[0].v.str.s);
        return cel__timestamp(c, sec, ns);
    default: return cel__err(c, "no such overload");
    }
}

CEL__FN(cel__fn_duration)
{
    int64_t ns;

    (void)call; (void)n;
    switch (a[0].kind) {
    case CEL_V_DURATION: return a[0];
    case CEL_V_INT:
        /* Declared (int_to_duration), not implemented by cel-go v0.26's Int. */
        return cel__err(c, "type conversion error from 'int' to 'google.protobuf.Duration'");
    case CEL_V_STRING:
        if (cel__parse_duration(a[0].v.str.s, a[0].v.str.n, &ns))
            return cel__err(c, "invalid duration: %.*s",
                            (int)(a[0].v.str.n > 64 ? 64 : a[0].v.str.n), a[0].v.str.s);
        return vdur(ns);
    default: return cel__err(c, "no such overload");
    }
}

/* The broken-down time of ts in zone tz (NULL: UTC). */
static int local(struct cel__ctx *c, const struct cel__val *a, size_t n, int64_t *y, int *mo,
                 int *d, int64_t *secs_of_day, int64_t *days, struct cel__val *err)
{
    int64_t off = 0, t = a[0].v.ts.sec;

    if (n > 1 && zone_offset(a[1].v.str.s, a[1].v.str.n, t, &off)) {
        *err = cel__err(c, "unknown time zone %.*s", (int)(a[1].v.str.n > 64 ? 64 : a[1].v.str.n),
                        a[1].v.str.s);
        return -1;
    }
    t += off;
    *days = floordiv(t, 86400);
    *secs_of_day = t - *days * 86400;
    civil_from_days(*days, y, mo, d);
    return 0;
}

enum ts_part { P_YEAR, P_MONTH, P_DOY, P_DOM, P_DATE, P_DOW, P_HOURS, P_MINUTES, P_SECONDS, P_MS };

static struct cel__val ts_part(struct cel__ctx *c, struct cel__val *a, size_t n, enum ts_part p)
{
    int64_t y, sod, days;
    int mo, d;
    struct cel__val e;

    if (local(c, a, n, &y, &mo, &d, &sod, &days, &e))
        return e;
    switch (p) {
    case P_YEAR: return vint(y);
    case P_MONTH: return vint(mo - 1);
    case P_DOY: return vint(days - days_from_civil(y, 1, 1));
    case P_DOM: return vint(d - 1);
    case P_DATE: return vint(d);
    case P_DOW: return vint(((days % 7) + 7 + 4) % 7);
    case P_HOURS: return vint(sod / 3600);
    case P_MINUTES: return vint(sod / 60 % 60);
    case P_SECONDS: return vint(sod % 60);
    default: return vint(a[0].v.ts.nsec / 1000000);
    }
}

#define TS_PART(fname, part)                                                   \
    CEL__FN(fname)                                                             \
    {                                                                          \
        (void)call;                                                            \
        if (a[0].kind == CEL_V_DURATION)                                       \
            return cel__dur_part(c, a[0].v.dur, part);                         \
        return ts_part(c, a, n, part);                                         \
    }

static struct cel__val cel__dur_part(struct cel__ctx *c, int64_t ns, enum ts_part p)
{
    (void)c;
    switch (p) {
    case P_HOURS: return vint(ns / 3600000000000LL);
    case P_MINUTES: return vint(ns / 60000000000LL);
    case P_SECONDS: return vint(ns / 1000000000LL);
    /* cel-go: time.Duration.Milliseconds(), the whole duration (unlike a timestamp's). */
    default: return vint(ns / 1000000LL);
    }
}

TS_PART(cel__fn_get_full_year, P_YEAR)
TS_PART(cel__fn_get_month, P_MONTH)
TS_PART(cel__fn_get_day_of_year, P_DOY)
TS_PART(cel__fn_get_day_of_month, P_DOM)
TS_PART(cel__fn_get_date, P_DATE)
TS_PART(cel__fn_get_day_of_week, P_DOW)
TS_PART(cel__fn_get_hours, P_HOURS)
TS_PART(cel__fn_get_minutes, P_MINUTES)
TS_PART(cel__fn_get_seconds, P_SECONDS)
TS_PART(cel__fn_get_milliseconds, P_MS)

/* Timestamp and duration arithmetic for the evaluator's + and -; *handled = 0 when the
 * operands are not of these kinds. */
struct cel__val cel__time_arith(struct cel__ctx *c, int add, const struct cel__val *x,
                                const struct cel__val *y, int *handled)
{
    *handled = 1;
    if (x->kind == CEL_V_DURATION && y->kind == CEL_V_DURATION) {
        int64_t r;
        if (add ? __builtin_add_overflow(x->v.dur, y->v.dur, &r)
                : __builtin_sub_overflow(x->v.dur, y->v.dur, &r))
            return cel__err(c, "integer overflow");
        return vdur(r);
    }
    if (add && x->kind == CEL_V_DURATION && y->kind == CEL_V_TIMESTAMP)
        return cel__time_arith(c, 1, y, x, handled);
    if (x->kind == CEL_V_TIMESTAMP && y->kind == CEL_V_DURATION) {
        int64_t d = add ? y->v.dur : -y->v.dur;
        if (!add && y->v.dur == INT64_MIN)
            return cel__err(c, "integer overflow");
        int64_t sec = x->v.ts.sec + d / 1000000000, ns = x->v.ts.nsec + d % 1000000000;
        if (ns < 0) {
            ns += 1000000000;
            sec--;
        } else if (ns >= 1000000000) {
            ns -= 1000000000;
            sec++;
        }
        return cel__timestamp(c, sec, (int32_t)ns);
    }
    if (!add && x->kind == CEL_V_TIMESTAMP && y->kind == CEL_V_TIMESTAMP) {
        /* Go's Time.Sub saturates, cel-go checks it fits: overflow is an error. */
        __int128 d = ((__int128)x->v.ts.sec - y->v.ts.sec) * 1000000000 +
                     (x->v.ts.nsec - y->v.ts.nsec);
        if (d > INT64_MAX || d < INT64_MIN)
            return cel__err(c, "integer overflow");
        return vdur((int64_t)d);
    }
    *handled = 0;
    return vint(0);
}
