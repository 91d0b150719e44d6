/*
 * review-bench - the admission decision alone, without TLS or HTTP: builds the
 * webhook's view from manifests (as `dra-doctor webhook --objects` does) and
 * times wh_review over AdmissionReview bodies, one body at a time, on one
 * thread.  It prints, per body, the verdict, the median and the best of 7
 * rounds in microseconds per decision, and how many malloc, calloc and realloc
 * calls one decision makes (counted by the wrappers below).
 *
 *   review-bench OBJECTS_DIR REVIEW.json... [-n ITERATIONS] [-c KIB]
 *
 * -c KIB writes KIB KiB of other memory before each decision and times each
 * decision alone: in a server, TLS, HTTP, the kernel and the client run between
 * two decisions on a core and leave its caches cold; back-to-back decisions
 * find everything they touch still cached.
 *
 * Built and run by bench/webhook-bench.sh ("decision alone"); not part of the binary.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "formats/manifest.h"
#include "review.h"

#define ROUNDS 7

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
static unsigned long nmalloc;

/* Counts calls only; the allocator stays glibc's. */
void *malloc(size_t n)
{
    nmalloc++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    nmalloc++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    nmalloc++;
    return __libc_realloc(p, n);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = 0;
        *len = (size_t)n;
    } else {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static struct wh_view *load_view(const char *dir)
{
    struct mf_limits lim = MF_LIMITS_DEFAULT;
    static struct mf_set set;      /* the view borrows its objects: kept until exit */
    const cJSON **objs;
    struct wh_view *v = NULL;
    struct dd_err err;
    double t0;
    size_t i;

    mf_set_init(&set);
    if (mf_load_path(&set, dir, &lim) != DD_OK || set.nerrors) {
        fprintf(stderr, "review-bench: cannot load %s\n", dir);
        return NULL;
    }
    if ((objs = calloc(set.n + 1, sizeof(*objs)))) {
        for (i = 0; i < set.n; i++)
            objs[i] = set.objs[i].json;
        dd_err_clear(&err);
        t0 = now_us();
        v = wh_view_build(objs, set.n, NULL, &err);
        printf("view: %zu objects, built in %.1f ms\n", set.n, (now_us() - t0) / 1e3);
        if (!v)
            fprintf(stderr, "review-bench: %s\n", err.msg);
        free(objs);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const char *const verdicts[] = { "allowed", "warned", "denied" };
    struct wh_view *v;
    long iters = 20000, cold_kib = 0;
    volatile unsigned char *junk = NULL;
    int i, first = 2;

    while (argc >= 5 && (!strcmp(argv[argc - 2], "-n") || !strcmp(argv[argc - 2], "-c"))) {
        *(argv[argc - 2][1] == 'n' ? &iters : &cold_kib) = strtol(argv[argc - 1], NULL, 10);
        argc -= 2;
    }
    if (argc < 3 || iters <= 0 || cold_kib < 0 ||
        (cold_kib && !(junk = calloc((size_t)cold_kib, 1024)))) {
        fprintf(stderr, "usage: review-bench OBJECTS_DIR REVIEW.json... [-n ITERATIONS] [-c KIB]\n");
        return 2;
    }
    if (!(v = load_view(argv[1])))
        return 1;
    printf("%-40s %-8s %10s %10s %14s\n", "body", "verdict", "median µs", "best µs",
           "mallocs/dec");
    for (i = first; i < argc; i++) {
        struct wh_result res;
        struct dd_err err;
        double round[ROUNDS], t0;
        unsigned long m0;
        size_t len;
        char *body = slurp(argv[i], &len);
        const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        long k;
        int r;

        if (!body || wh_review(v, NULL, 0, body, len, &res, &err) != DD_OK) {
            fprintf(stderr, "review-bench: %s: %s\n", argv[i], body ? err.msg : "cannot read");
            free(body);
            wh_view_free(v);
            return 1;
        }
        free(res.body);
        m0 = nmalloc;
        if (wh_review(v, NULL, 0, body, len, &res, &err) != DD_OK)
            return 1;
        m0 = nmalloc - m0;
        for (r = 0; r < ROUNDS; r++) {
            double spent = 0;
            t0 = now_us();
            for (k = 0; k < iters / ROUNDS; k++) {
                struct wh_result x;
                size_t b;
                if (junk) {
                    for (b = 0; b < (size_t)cold_kib * 1024; b += 64)
                        junk[b]++;
                    t0 = now_us();
                }
                if (wh_review(v, NULL, 0, body, len, &x, &err) != DD_OK)
                    return 1;
                free(x.body);
                if (junk)
                    spent += now_us() - t0;
            }
            round[r] = (junk ? spent : now_us() - t0) / (double)(iters / ROUNDS);
        }
        qsort(round, ROUNDS, sizeof(*round), cmp_double);
        printf("%-40s %-8s %10.2f %10.2f %14lu\n", base, verdicts[res.verdict], round[ROUNDS / 2],
               round[0], m0);
        free(res.body);
        free(body);
    }
    wh_view_free(v);
    free((void *)junk);
    malloc_trim(0);
    return 0;
}
