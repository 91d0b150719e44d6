/*
 * whload.c - a small HTTPS load generator for bench/webhook-bench.sh.
 *
 * HTTP/1.1 over TLS (OpenSSL), keep-alive, one thread per connection, two modes:
 *
 *   closed loop  (no --rate)  every connection sends its next request as soon as
 *                the previous answer is in: the server's maximum throughput;
 *   open loop    (--rate R)   requests are scheduled at fixed intervals, R per second
 *                in total (connection i of N sends at t0 + i/R + k*N/R); latency is
 *                measured from the *scheduled* send time, so a slow answer that
 *                delays the next send on its connection shows up as queueing
 *                (no coordinated omission).
 *
 * Bodies: the files given with --body are sent in turn (request k gets body k mod n).
 * The text @@SEQ@@ in a body is replaced by the request's sequence number
 * (--seq-start + k), for requests that must create distinct objects.
 *
 * Latency: every sample is kept (nanoseconds), sorted at the end: exact
 * percentiles (nearest rank).  Samples whose scheduled (open loop) or actual
 * (closed loop) send time falls in the warm-up are dropped.
 *
 * Errors: a status not in --ok (default 200), or a transport failure (connect,
 * TLS, read, write, timeout, malformed response; the connection is then
 * re-opened).  Exit status 0 when the run completed (whatever the error count),
 * 2 on a usage error, 1 when nothing could be sent at all.
 *
 * The last line of the output is machine-readable:
 *   whload: mode=open rate=2000 conns=8 duration=30.00 requests=... errors=...
 *           rps=... p50_us=... p90_us=... p99_us=... p999_us=... max_us=... ...
 *
 * Built by bench/webhook-bench.sh (not part of dra-doctor):
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror ... bench/whload.c -lssl -lcrypto -pthread
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_BODIES 64
#define MAX_HEADERS 16
#define MAX_OK 8
#define SEQ_MARK "@@SEQ@@"
#define LATE_NS 1000000LL /* an open-loop send this late counts as "late" */

struct body {
    char *pre, *post;   /* split at SEQ_MARK; post NULL when there is no mark */
    size_t npre, npost;
};

static struct {
    char host[256], port[16], path[1024];
    const char *method, *ctype, *cacert, *cert, *key, *match;
    const char *headers[MAX_HEADERS];
    size_t nheaders;
    struct body bodies[MAX_BODIES];
    size_t nbodies;
    int conns, insecure, quiet;
    double duration, warmup, rate, timeout;
    long long max_requests, seq_start;
    int ok[MAX_OK];
    size_t nok;
} cfg;

static SSL_CTX *ctx;
static int64_t t_start, t_warm, t_end; /* CLOCK_MONOTONIC ns */
static atomic_llong issued;            /* requests handed out (for bodies and --max-requests) */
static atomic_int stop_all;

struct stats {
    int64_t *lat;      /* ns, measured requests only */
    size_t n, cap;
    long long requests, status_errors, transport_errors, matched, late, connects;
    long long status_count[6]; /* 1xx..5xx by first digit; [0] other */
    long long bytes_in;
    int64_t first_ok_ns, last_done_ns;
    char last_error[256];
};

struct conn {
    int fd;
    SSL *ssl;
    char *rbuf;
    size_t rlen, rcap;  /* bytes buffered, capacity */
    size_t roff;        /* consumed */
    char *wbuf;
    size_t wcap;
    char *resp;         /* the response body, for --match */
    size_t resp_len, resp_cap;
    long long nread;    /* bytes read from TLS */
};

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000LL), (long)(t % 1000000000LL) };

    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "whload: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    exit(2);
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: whload [options] https://HOST:PORT/PATH\n"
"  -c, --connections N   keep-alive connections, one thread each (default 8)\n"
"  -d, --duration S      measured seconds (default 10)\n"
"  -w, --warmup S        seconds run before measuring (default 1)\n"
"  -r, --rate R          open loop: R requests/s in total, latency from the\n"
"                        scheduled send time (default: closed loop)\n"
"  -n, --max-requests N  stop after N requests (then the duration is a bound)\n"
"  -b, --body FILE       request body (repeatable; sent in turn); @@SEQ@@ in it\n"
"                        becomes the request's sequence number\n"
"      --seq-start N     first sequence number (default 0)\n"
"  -m, --method M        default POST\n"
"  -T, --content-type T  default application/json\n"
"  -H, --header 'N: V'   extra header (repeatable)\n"
"      --cacert FILE     verify the server against this CA (else -k is needed)\n"
"  -k, --insecure        do not verify the server\n"
"      --cert FILE       client certificate (PEM), --key FILE its key\n"
"      --ok CODES        statuses that count as success, comma-separated (default 200)\n"
"      --match STR       count responses whose body contains STR\n"
"      --timeout S       per-request socket timeout (default 10)\n"
"  -q, --quiet           only the machine-readable last line\n");
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, r;

    if (!f)
        return NULL;
    do {
        if (n == cap) {
            char *p = realloc(buf, cap = cap ? cap * 2 : 65536);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
    } while (r > 0);
    fclose(f);
    *len = n;
    return buf;
}

static void add_body(const char *path)
{
    struct body *b;
    size_t len;
    char *text, *mark;

    if (cfg.nbodies == MAX_BODIES)
        die("at most %s bodies", "64");
    if (!(text = read_file(path, &len)))
        die("cannot read %s", path);
    b = &cfg.bodies[cfg.nbodies++];
    b->pre = text;
    mark = memmem(text, len, SEQ_MARK, strlen(SEQ_MARK));
    if (mark) {
        b->npre = (size_t)(mark - text);
        b->post = mark + strlen(SEQ_MARK);
        b->npost = len - b->npre - strlen(SEQ_MARK);
    } else {
        b->npre = len;
    }
}

static void parse_url(const char *url)
{
    const char *p, *slash, *colon;

    if (strncmp(url, "https://", 8))
        die("only https:// URLs: %s", url);
    p = url + 8;
    slash = strchr(p, '/');
    if (!slash)
        slash = p + strlen(p);
    if (*p == '[') {
        const char *rb = strchr(p, ']');
        if (!rb || rb > slash)
            die("bad URL %s", url);
        snprintf(cfg.host, sizeof(cfg.host), "%.*s", (int)(rb - p - 1), p + 1);
        colon = rb + 1 < slash && rb[1] == ':' ? rb + 1 : NULL;
    } else {
        colon = memchr(p, ':', (size_t)(slash - p));
        snprintf(cfg.host, sizeof(cfg.host), "%.*s", (int)((colon ? colon : slash) - p), p);
    }
    if (colon)
        snprintf(cfg.port, sizeof(cfg.port), "%.*s", (int)(slash - colon - 1), colon + 1);
    else
        snprintf(cfg.port, sizeof(cfg.port), "443");
    snprintf(cfg.path, sizeof(cfg.path), "%s", *slash ? slash : "/");
}

static void parse_ok(const char *s)
{
    char *end;

    cfg.nok = 0;
    while (*s) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 100 || v > 599 || cfg.nok == MAX_OK)
            die("bad --ok %s", s);
        cfg.ok[cfg.nok++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            die("bad --ok %s", s);
    }
}

static double parse_num(const char *s, const char *what)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end || v < 0 || !isfinite(v))
        die("bad number for %s", what);
    return v;
}

/* ---- connections ----------------------------------------------------------- */

static void conn_close(struct conn *c)
{
    if (c->ssl) {
        SSL_free(c->ssl);
        c->ssl = NULL;
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->rlen = c->roff = 0;
}

static void set_err(struct stats *st, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[160];

    if (e) {
        ERR_error_string_n(e, buf, sizeof(buf));
        snprintf(st->last_error, sizeof(st->last_error), "%s: %s", what, buf);
    } else {
        snprintf(st->last_error, sizeof(st->last_error), "%s: %s", what,
                 errno ? strerror(errno) : "closed");
    }
    ERR_clear_error();
}

static int conn_open(struct conn *c, struct stats *st)
{
    struct addrinfo hints, *ai = NULL, *a;
    struct timeval tv;
    int one = 1, rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    if ((rc = getaddrinfo(cfg.host, cfg.port, &hints, &ai))) {
        snprintf(st->last_error, sizeof(st->last_error), "resolve %.100s: %s", cfg.host,
                 gai_strerror(rc));
        return -1;
    }
    c->fd = -1;
    for (a = ai; a; a = a->ai_next) {
        if ((c->fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol)) < 0)
            continue;
        if (!connect(c->fd, a->ai_addr, a->ai_addrlen))
            break;
        close(c->fd);
        c->fd = -1;
    }
    freeaddrinfo(ai);
    if (c->fd < 0) {
        set_err(st, "connect");
        return -1;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tv.tv_sec = (time_t)cfg.timeout;
    tv.tv_usec = (suseconds_t)((cfg.timeout - (double)tv.tv_sec) * 1e6);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (!(c->ssl = SSL_new(ctx))) {
        set_err(st, "SSL_new");
        conn_close(c);
        return -1;
    }
    SSL_set_fd(c->ssl, c->fd);
    {
        struct in6_addr a6;
        struct in_addr a4;
        int is_ip = inet_pton(AF_INET, cfg.host, &a4) == 1 || inet_pton(AF_INET6, cfg.host, &a6) == 1;

        if (!is_ip)
            SSL_set_tlsext_host_name(c->ssl, cfg.host);
        if (!cfg.insecure) {
            X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);
            if (is_ip)
                X509_VERIFY_PARAM_set1_ip_asc(vp, cfg.host);
            else
                X509_VERIFY_PARAM_set1_host(vp, cfg.host, 0);
        }
    }
    if (SSL_connect(c->ssl) != 1) {
        set_err(st, "TLS handshake");
        conn_close(c);
        return -1;
    }
    st->connects++;
    return 0;
}

/* Makes sure at least want bytes are buffered after roff; 0, or -1 on EOF/error. */
static int fill(struct conn *c, size_t want)
{
    if (c->roff && c->roff == c->rlen)
        c->roff = c->rlen = 0;
    while (c->rlen - c->roff < want) {
        int n;
        if (c->rlen == c->rcap) {
            if (c->roff) {
                memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
                c->rlen -= c->roff;
                c->roff = 0;
                continue;
            }
            char *p = realloc(c->rbuf, c->rcap = c->rcap ? c->rcap * 2 : 65536);
            if (!p)
                return -1;
            c->rbuf = p;
        }
        n = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(c->rcap - c->rlen));
        if (n <= 0)
            return -1;
        c->rlen += (size_t)n;
        c->nread += n;
    }
    return 0;
}

/* Index of "\r\n" at or after roff+from, reading more as needed; -1 on error. */
static long find_crlf(struct conn *c, size_t from)
{
    for (;;) {
        char *s = c->rbuf + c->roff + from, *e = c->rbuf + c->rlen;
        char *p = s < e ? memmem(s, (size_t)(e - s), "\r\n", 2) : NULL;
        if (p)
            return (long)(p - (c->rbuf + c->roff));
        from = c->rlen - c->roff > 0 ? c->rlen - c->roff - 1 : 0;
        if (fill(c, c->rlen - c->roff + 1))
            return -1;
    }
}

static int resp_append(struct conn *c, const char *p, size_t n)
{
    if (!cfg.match)
        return 0;
    if (c->resp_len + n + 1 > c->resp_cap) {
        size_t cap = c->resp_cap ? c->resp_cap : 16384;
        char *q;
        while (cap < c->resp_len + n + 1)
            cap *= 2;
        if (!(q = realloc(c->resp, cap)))
            return -1;
        c->resp = q;
        c->resp_cap = cap;
    }
    memcpy(c->resp + c->resp_len, p, n);
    c->resp_len += n;
    c->resp[c->resp_len] = '\0';
    return 0;
}

/* Reads n body bytes. */
static int read_body(struct conn *c, size_t n)
{
    while (n) {
        size_t have, take;
        if (fill(c, 1))
            return -1;
        have = c->rlen - c->roff;
        take = have < n ? have : n;
        if (resp_append(c, c->rbuf + c->roff, take))
            return -1;
        c->roff += take;
        n -= take;
    }
    return 0;
}

/*
 * Reads one response: returns its status (100..599), *close set when the server
 * will close the connection; -1 on a transport error or a malformed response.
 */
static int read_response(struct conn *c, int *close_after)
{
    long e;
    int status = -1, chunked = 0;
    long long clen = -1;

    *close_after = 0;
    c->resp_len = 0;
    for (;;) {
        if ((e = find_crlf(c, 0)) < 0)
            return -1;
        if (status < 0) {
            /* "HTTP/1.1 200 OK" */
            if (e < 12 || strncmp(c->rbuf + c->roff, "HTTP/1.", 7))
                return -1;
            status = atoi(c->rbuf + c->roff + 9);
            if (!strncmp(c->rbuf + c->roff, "HTTP/1.0", 8))
                *close_after = 1;
        } else if (e == 0) {
            c->roff += 2;
            break;
        } else {
            char *h = c->rbuf + c->roff;
            if (!strncasecmp(h, "content-length:", 15))
                clen = atoll(h + 15);
            else if (!strncasecmp(h, "transfer-encoding:", 18) &&
                     memmem(h, (size_t)e, "chunked", 7))
                chunked = 1;
            else if (!strncasecmp(h, "connection:", 11) && memmem(h, (size_t)e, "close", 5))
                *close_after = 1;
        }
        c->roff += (size_t)e + 2;
    }
    if (status == 204 || status == 304 || (status >= 100 && status < 200)) {
        /* no body */
    } else if (chunked) {
        for (;;) {
            unsigned long long n;
            if ((e = find_crlf(c, 0)) < 0)
                return -1;
            n = strtoull(c->rbuf + c->roff, NULL, 16);
            c->roff += (size_t)e + 2;
            if (n == 0) {
                /* trailers, then an empty line */
                for (;;) {
                    if ((e = find_crlf(c, 0)) < 0)
                        return -1;
                    c->roff += (size_t)e + 2;
                    if (e == 0)
                        break;
                }
                break;
            }
            if (read_body(c, (size_t)n) || fill(c, 2))
                return -1;
            c->roff += 2;
        }
    } else if (clen >= 0) {
        if (read_body(c, (size_t)clen))
            return -1;
    } else {
        return -1; /* read-until-close bodies: not from the servers we load */
    }
    return status;
}

/* Formats request seq into c->wbuf; returns its length. */
static size_t build_request(struct conn *c, long long seq)
{
    const struct body *b = &cfg.bodies[seq % (long long)cfg.nbodies];
    char num[32];
    size_t nnum = 0, blen, hlen, i, need;
    char hdr[4096];

    if (b->post)
        nnum = (size_t)snprintf(num, sizeof(num), "%lld", cfg.seq_start + seq);
    blen = b->npre + (b->post ? nnum + b->npost : 0);
    hlen = (size_t)snprintf(hdr, sizeof(hdr),
                            "%s %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: %s\r\n"
                            "Accept: application/json\r\nContent-Length: %zu\r\n",
                            cfg.method, cfg.path, cfg.host, cfg.port, cfg.ctype, blen);
    for (i = 0; i < cfg.nheaders && hlen < sizeof(hdr); i++)
        hlen += (size_t)snprintf(hdr + hlen, sizeof(hdr) - hlen, "%s\r\n", cfg.headers[i]);
    if (hlen + 2 >= sizeof(hdr))
        die("%s", "headers too long");
    memcpy(hdr + hlen, "\r\n", 2);
    hlen += 2;
    need = hlen + blen;
    if (need > c->wcap) {
        char *p = realloc(c->wbuf, need);
        if (!p)
            die("%s", "out of memory");
        c->wbuf = p;
        c->wcap = need;
    }
    memcpy(c->wbuf, hdr, hlen);
    memcpy(c->wbuf + hlen, b->pre, b->npre);
    if (b->post) {
        memcpy(c->wbuf + hlen + b->npre, num, nnum);
        memcpy(c->wbuf + hlen + b->npre + nnum, b->post, b->npost);
    }
    return need;
}

static void record(struct stats *st, int64_t ns)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16384;
        int64_t *p = realloc(st->lat, cap * sizeof(*p));
        if (!p)
            return;
        st->lat = p;
        st->cap = cap;
    }
    st->lat[st->n++] = ns;
}

struct worker {
    pthread_t th;
    int id;
    struct stats st;
};

static void *run(void *arg)
{
    struct worker *w = arg;
    struct stats *st = &w->st;
    struct conn c;
    int64_t interval = 0, sched = 0;
    long long k = 0;

    memset(&c, 0, sizeof(c));
    c.fd = -1;
    if (cfg.rate > 0) {
        interval = (int64_t)((double)cfg.conns * 1e9 / cfg.rate);
        sched = t_start + (int64_t)((double)w->id * 1e9 / cfg.rate);
    }
    /* Connect first, so that no measured request pays for a handshake; then start together. */
    if (conn_open(&c, st))
        st->transport_errors++;
    if (now_ns() < t_start)
        sleep_until(t_start);
    while (!atomic_load(&stop_all)) {
        int64_t t0, t1, from;
        long long seq;
        size_t len;
        int status, close_after, ok = 0;
        size_t i;

        if (cfg.rate > 0) {
            sched = t_start + (int64_t)((double)w->id * 1e9 / cfg.rate) + k * interval;
            k++;
            if (sched >= t_end)
                break;
            if (now_ns() < sched)
                sleep_until(sched);
        } else if (now_ns() >= t_end) {
            break;
        }
        seq = atomic_fetch_add(&issued, 1);
        if (cfg.max_requests && seq >= cfg.max_requests)
            break;
        if (c.fd < 0 && conn_open(&c, st)) {
            st->transport_errors++;
            usleep(10000);
            continue;
        }
        t0 = now_ns();
        from = cfg.rate > 0 ? sched : t0;
        if (cfg.rate > 0 && t0 - sched > LATE_NS && from >= t_warm)
            st->late++;
        len = build_request(&c, seq);
        if (SSL_write(c.ssl, c.wbuf, (int)len) != (int)len) {
            set_err(st, "write");
            st->transport_errors++;
            conn_close(&c);
            continue;
        }
        status = read_response(&c, &close_after);
        t1 = now_ns();
        if (status < 0) {
            set_err(st, "read");
            st->transport_errors++;
            conn_close(&c);
            continue;
        }
        if (close_after)
            conn_close(&c);
        if (from < t_warm)
            continue;
        st->requests++;
        st->status_count[status / 100 <= 5 ? status / 100 : 0]++;
        for (i = 0; i < cfg.nok; i++)
            ok |= status == cfg.ok[i];
        if (!ok) {
            st->status_errors++;
            if (!st->last_error[0] || st->status_errors == 1) {
                snprintf(st->last_error, sizeof(st->last_error), "status %d: %.160s", status,
                         c.resp_len ? c.resp : "");
            }
        }
        if (cfg.match && c.resp_len && strstr(c.resp, cfg.match))
            st->matched++;
        if (!st->first_ok_ns)
            st->first_ok_ns = from;
        st->last_done_ns = t1;
        record(st, t1 - from);
    }
    conn_close(&c);
    st->bytes_in = c.nread;
    free(c.rbuf);
    free(c.wbuf);
    free(c.resp);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

static double pct_us(const int64_t *v, size_t n, double q)
{
    size_t r;

    if (!n)
        return 0;
    r = (size_t)ceil(q * (double)n);
    if (r < 1)
        r = 1;
    if (r > n)
        r = n;
    return (double)v[r - 1] / 1000.0;
}

int main(int argc, char **argv)
{
    static const struct option lopts[] = {
        { "connections", required_argument, NULL, 'c' },
        { "duration", required_argument, NULL, 'd' },
        { "warmup", required_argument, NULL, 'w' },
        { "rate", required_argument, NULL, 'r' },
        { "max-requests", required_argument, NULL, 'n' },
        { "body", required_argument, NULL, 'b' },
        { "seq-start", required_argument, NULL, 'S' },
        { "method", required_argument, NULL, 'm' },
        { "content-type", required_argument, NULL, 'T' },
        { "header", required_argument, NULL, 'H' },
        { "cacert", required_argument, NULL, 'A' },
        { "insecure", no_argument, NULL, 'k' },
        { "cert", required_argument, NULL, 'C' },
        { "key", required_argument, NULL, 'K' },
        { "ok", required_argument, NULL, 'o' },
        { "match", required_argument, NULL, 'M' },
        { "timeout", required_argument, NULL, 't' },
        { "quiet", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct worker *ws;
    struct stats tot;
    int64_t *all, window_ns;
    size_t nall = 0;
    double window_s, rps, sum = 0;
    int ch, i;

    cfg.conns = 8;
    cfg.duration = 10;
    cfg.warmup = 1;
    cfg.timeout = 10;
    cfg.method = "POST";
    cfg.ctype = "application/json";
    cfg.ok[0] = 200;
    cfg.nok = 1;
    while ((ch = getopt_long(argc, argv, "c:d:w:r:n:b:m:T:H:kqh", lopts, NULL)) != -1) {
        switch (ch) {
        case 'c': cfg.conns = (int)parse_num(optarg, "--connections"); break;
        case 'd': cfg.duration = parse_num(optarg, "--duration"); break;
        case 'w': cfg.warmup = parse_num(optarg, "--warmup"); break;
        case 'r': cfg.rate = parse_num(optarg, "--rate"); break;
        case 'n': cfg.max_requests = (long long)parse_num(optarg, "--max-requests"); break;
        case 'b': add_body(optarg); break;
        case 'S': cfg.seq_start = (long long)parse_num(optarg, "--seq-start"); break;
        case 'm': cfg.method = optarg; break;
        case 'T': cfg.ctype = optarg; break;
        case 'H':
            if (cfg.nheaders == MAX_HEADERS)
                die("at most %s headers", "16");
            cfg.headers[cfg.nheaders++] = optarg;
            break;
        case 'A': cfg.cacert = optarg; break;
        case 'k': cfg.insecure = 1; break;
        case 'C': cfg.cert = optarg; break;
        case 'K': cfg.key = optarg; break;
        case 'o': parse_ok(optarg); break;
        case 'M': cfg.match = optarg; break;
        case 't': cfg.timeout = parse_num(optarg, "--timeout"); break;
        case 'q': cfg.quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        return 2;
    }
    parse_url(argv[optind]);
    if (cfg.conns < 1 || cfg.conns > 4096)
        die("%s", "--connections must be 1..4096");
    if (!cfg.nbodies) {
        static char empty[1];
        cfg.bodies[0].pre = empty;
        cfg.nbodies = 1;
    }
    if (!cfg.cacert && !cfg.insecure)
        die("%s", "--cacert FILE or --insecure");
    if (cfg.timeout < 0.001)
        cfg.timeout = 0.001;
    if (!cfg.duration && !cfg.max_requests)
        die("%s", "--duration 0 needs --max-requests");
    if (!cfg.duration)
        cfg.duration = 86400;

    /* clock_nanosleep wakes this much late by default (50 us): too coarse for 2,000/s. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    if (!(ctx = SSL_CTX_new(TLS_client_method())))
        die("%s", "SSL_CTX_new failed");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    if (cfg.cacert) {
        if (SSL_CTX_load_verify_locations(ctx, cfg.cacert, NULL) != 1)
            die("cannot load CA %s", cfg.cacert);
    }
    SSL_CTX_set_verify(ctx, cfg.insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (cfg.cert && (SSL_CTX_use_certificate_chain_file(ctx, cfg.cert) != 1 ||
                     SSL_CTX_use_PrivateKey_file(ctx, cfg.key ? cfg.key : cfg.cert,
                                                 SSL_FILETYPE_PEM) != 1))
        die("cannot load client certificate %s", cfg.cert);

    if (!(ws = calloc((size_t)cfg.conns, sizeof(*ws))))
        die("%s", "out of memory");
    t_start = now_ns() + 200000000LL; /* let every thread start and connect first */
    t_warm = t_start + (int64_t)(cfg.warmup * 1e9);
    t_end = t_warm + (int64_t)(cfg.duration * 1e9);
    for (i = 0; i < cfg.conns; i++) {
        ws[i].id = i;
        if (pthread_create(&ws[i].th, NULL, run, &ws[i]))
            die("%s", "cannot start a thread");
    }
    memset(&tot, 0, sizeof(tot));
    for (i = 0; i < cfg.conns; i++) {
        struct stats *s = &ws[i].st;
        int j;
        pthread_join(ws[i].th, NULL);
        tot.requests += s->requests;
        tot.status_errors += s->status_errors;
        tot.transport_errors += s->transport_errors;
        tot.matched += s->matched;
        tot.late += s->late;
        tot.connects += s->connects;
        tot.bytes_in += s->bytes_in;
        for (j = 0; j < 6; j++)
            tot.status_count[j] += s->status_count[j];
        if (s->last_done_ns > tot.last_done_ns)
            tot.last_done_ns = s->last_done_ns;
        if (s->last_error[0])
            snprintf(tot.last_error, sizeof(tot.last_error), "%s", s->last_error);
        nall += s->n;
    }
    if (!(all = malloc((nall + 1) * sizeof(*all))))
        die("%s", "out of memory");
    nall = 0;
    for (i = 0; i < cfg.conns; i++) {
        memcpy(all + nall, ws[i].st.lat, ws[i].st.n * sizeof(*all));
        nall += ws[i].st.n;
        free(ws[i].st.lat);
    }
    qsort(all, nall, sizeof(*all), cmp_i64);
    for (size_t j = 0; j < nall; j++)
        sum += (double)all[j];
    /* The measured window: warm-up end to the end of the run (or the last answer, when
     * --max-requests ended it early). */
    window_ns = (cfg.max_requests && tot.last_done_ns && tot.last_done_ns < t_end ?
                 tot.last_done_ns : t_end) - t_warm;
    window_s = window_ns > 0 ? (double)window_ns / 1e9 : 1e-9;
    rps = (double)tot.requests / window_s;
    if (!cfg.quiet) {
        printf("%s loop, %d connections, %.2f s measured after %.2f s warm-up%s\n",
               cfg.rate > 0 ? "open" : "closed", cfg.conns, window_s, cfg.warmup,
               cfg.rate > 0 ? "" : " (latency from the actual send)");
        if (cfg.rate > 0)
            printf("  target rate %.0f/s; %lld sends more than 1 ms behind schedule\n", cfg.rate,
                   tot.late);
        printf("  %lld requests, %.1f req/s, %lld connects, %.1f MiB read\n", tot.requests, rps,
               tot.connects, (double)tot.bytes_in / 1048576.0);
        printf("  status 2xx %lld, 3xx %lld, 4xx %lld, 5xx %lld; errors: %lld status, %lld "
               "transport\n", tot.status_count[2], tot.status_count[3], tot.status_count[4],
               tot.status_count[5], tot.status_errors, tot.transport_errors);
        if (cfg.match)
            printf("  %lld responses contain \"%s\"\n", tot.matched, cfg.match);
        printf("  latency (us): p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f  mean %.0f\n",
               pct_us(all, nall, 0.5), pct_us(all, nall, 0.9), pct_us(all, nall, 0.99),
               pct_us(all, nall, 0.999), nall ? (double)all[nall - 1] / 1000.0 : 0,
               nall ? sum / (double)nall / 1000.0 : 0);
        if (tot.last_error[0])
            printf("  last error: %s\n", tot.last_error);
    }
    printf("whload: mode=%s rate=%.0f conns=%d duration=%.2f requests=%lld errors=%lld "
           "status_errors=%lld transport_errors=%lld matched=%lld late=%lld rps=%.1f "
           "p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f mean_us=%.0f\n",
           cfg.rate > 0 ? "open" : "closed", cfg.rate, cfg.conns, window_s, tot.requests,
           tot.status_errors + tot.transport_errors, tot.status_errors, tot.transport_errors,
           tot.matched, tot.late, rps, pct_us(all, nall, 0.5), pct_us(all, nall, 0.9),
           pct_us(all, nall, 0.99), pct_us(all, nall, 0.999),
           nall ? (double)all[nall - 1] / 1000.0 : 0, nall ? sum / (double)nall / 1000.0 : 0);
    free(all);
    free(ws);
    SSL_CTX_free(ctx);
    return tot.requests || tot.transport_errors == 0 ? 0 : 1;
}
