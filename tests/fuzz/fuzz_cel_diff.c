/*
 * fuzz_cel_diff.c - differential libFuzzer harness: the input bytes drive a
 * generator of a selector (from a grammar of the DRA environment: literals of
 * every type, device fields, operators, the library functions, macros) and of a
 * device (attributes of every kind, capacities).  lib/cel compiles it as
 * kube-apiserver validates a new DeviceClass and evaluates it as the scheduler
 * does; when CEL_ORACLE names the oracle (e2e/peers/build-celoracle.sh), the same
 * case goes to Kubernetes' own code and any difference in the outcome (compile
 * error, runtime error, true, false) is a crash with both answers printed.
 * Without CEL_ORACLE it is a plain fuzzer of the generated selectors.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cel/cel.h"
#include "peer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct gen {
    const uint8_t *d;
    size_t n, i;
    char *out;
    size_t len, cap;
    int depth;
};

static unsigned pick(struct gen *g, unsigned k)
{
    return k ? (g->i < g->n ? g->d[g->i++] : 0) % k : 0;
}

static void emit(struct gen *g, const char *s)
{
    size_t l = strlen(s);

    if (g->len + l + 1 > g->cap)
        return; /* the cap keeps expressions below the 10 KiB limit */
    memcpy(g->out + g->len, s, l + 1);
    g->len += l;
}

static const char *const ints[] = {"0", "1", "-1", "2", "7", "10", "9223372036854775807",
                                   "-9223372036854775808", "4611686018427387904", "3"};
static const char *const uints[] = {"0u", "1u", "18446744073709551615u", "2u", "10u"};
static const char *const doubles[] = {"0.0", "1.5", "-2.5", "1e308", "1e19", "-0.0", "2.0",
                                      "9007199254740993.0"};
static const char *const strs[] = {"''", "'a'", "'abc'", "'gpu-0'", "'LATEST-GPU-MODEL'",
                                   "'1.2.3'", "'80Gi'", "'10.0.0.1'", "'10.0.0.0/8'", "'1h'",
                                   "'2024-01-01T00:00:00Z'", "'\\u00e9'", "'[a-z]+'", "'('",
                                   "'^g.*'", "'1'", "'true'", "' x '"};
static const char *const attr_names[] = {"model", "index", "healthy", "version", "big",
                                         "names", "missing", "uuid"};
static const char *const funcs1[] = {"size", "int", "uint", "double", "string", "bool", "dyn",
                                     "type", "bytes", "quantity", "semver", "isSemver", "ip",
                                     "isIP", "cidr", "isCIDR", "timestamp", "duration",
                                     "isQuantity", "sign", "optional.of", "strings.quote"};
static const char *const methods0[] = {"size", "lowerAscii", "upperAscii", "trim", "isInteger",
                                       "asInteger", "asApproximateFloat", "major", "minor",
                                       "hasValue", "value", "sort", "distinct", "reverse", "sum",
                                       "min", "max", "isSorted", "family", "isLoopback",
                                       "prefixLength", "masked", "getHours", "getFullYear"};
static const char *const methods1[] = {"contains", "startsWith", "endsWith", "matches",
                                       "indexOf", "lastIndexOf", "charAt", "split", "join",
                                       "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
                                       "orValue", "or", "containsIP", "containsCIDR", "find",
                                       "findAll", "substring", "format", "includes"};
static const char *const binops[] = {" == ", " != ", " < ", " <= ", " > ", " >= ", " + ",
                                     " - ", " * ", " / ", " % ", " && ", " || ", " in "};

static void expr(struct gen *g);

/* no_opt: no `.?` (has() through an optional attribute path is a known difference:
 * cel-go returns the optional itself there; docs/cel.md "Known differences"). */
static void device_ref_opt(struct gen *g, int no_opt);

static void device_ref(struct gen *g)
{
    device_ref_opt(g, 0);
}

static void device_ref_opt(struct gen *g, int no_opt)
{
    switch (pick(g, 6)) {
    case 0: emit(g, "device.driver"); break;
    case 1: emit(g, "device.allowMultipleAllocations"); break;
    case 2:
        emit(g, "device.capacity['dra.example.com'].");
        emit(g, pick(g, 2) ? "memory" : "gone");
        break;
    case 3:
        emit(g, "device.attributes[");
        emit(g, pick(g, 4) ? "'dra.example.com'" : "'other.io'");
        emit(g, "]");
        break;
    default:
        emit(g, pick(g, 3) || no_opt ? "device.attributes['dra.example.com']."
                                     : "device.attributes['dra.example.com'].?");
        emit(g, attr_names[pick(g, sizeof(attr_names) / sizeof(attr_names[0]))]);
        break;
    }
}

static void literal(struct gen *g)
{
    switch (pick(g, 10)) {
    case 0: emit(g, ints[pick(g, sizeof(ints) / sizeof(ints[0]))]); break;
    case 1: emit(g, uints[pick(g, sizeof(uints) / sizeof(uints[0]))]); break;
    case 2: emit(g, doubles[pick(g, sizeof(doubles) / sizeof(doubles[0]))]); break;
    case 3: case 4: emit(g, strs[pick(g, sizeof(strs) / sizeof(strs[0]))]); break;
    case 5: emit(g, pick(g, 2) ? "true" : "false"); break;
    case 6: emit(g, pick(g, 3) ? "b'ab'" : "null"); break;
    case 7:
        emit(g, "[");
        for (unsigned k = pick(g, 4); k; k--) {
            expr(g);
            if (k > 1)
                emit(g, ", ");
        }
        emit(g, "]");
        break;
    case 8:
        emit(g, "{");
        for (unsigned k = pick(g, 3); k; k--) {
            expr(g);
            emit(g, ": ");
            expr(g);
            if (k > 1)
                emit(g, ", ");
        }
        emit(g, "}");
        break;
    default: emit(g, ints[pick(g, 4)]); break;
    }
}

static void expr(struct gen *g)
{
    unsigned k;

    if (++g->depth > 6) {
        pick(g, 2) ? literal(g) : device_ref(g);
        g->depth--;
        return;
    }
    switch (pick(g, 12)) {
    case 0: case 1: literal(g); break;
    case 2: case 3: device_ref(g); break;
    case 4: case 5:
        emit(g, "(");
        expr(g);
        emit(g, binops[pick(g, sizeof(binops) / sizeof(binops[0]))]);
        expr(g);
        emit(g, ")");
        break;
    case 6:
        emit(g, funcs1[pick(g, sizeof(funcs1) / sizeof(funcs1[0]))]);
        emit(g, "(");
        expr(g);
        emit(g, ")");
        break;
    case 7:
        expr(g);
        emit(g, ".");
        emit(g, methods0[pick(g, sizeof(methods0) / sizeof(methods0[0]))]);
        emit(g, "()");
        break;
    case 8:
        expr(g);
        emit(g, ".");
        emit(g, methods1[pick(g, sizeof(methods1) / sizeof(methods1[0]))]);
        emit(g, "(");
        expr(g);
        emit(g, ")");
        break;
    case 9:
        expr(g);
        k = pick(g, 5);
        emit(g, k == 0 ? ".all(x, " : k == 1 ? ".exists(x, " : k == 2 ? ".map(x, "
                : k == 3 ? ".filter(x, " : ".exists_one(x, ");
        pick(g, 2) ? emit(g, "x") : expr(g);
        emit(g, pick(g, 2) ? " == x)" : ")");
        break;
    case 10:
        emit(g, pick(g, 2) ? "!" : "-");
        expr(g);
        break;
    default:
        if (pick(g, 2)) {
            emit(g, "(");
            expr(g);
            emit(g, " ? ");
            expr(g);
            emit(g, " : ");
            expr(g);
            emit(g, ")");
        } else {
            emit(g, "has(");
            device_ref_opt(g, 1);
            emit(g, ".x)");
        }
        break;
    }
    g->depth--;
}

/* ---- The oracle: one process, JSON lines both ways ----------------------------------- */

static struct peer oracle = {"CEL_ORACLE", 0, NULL, NULL, NULL, 0};

static void json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The device: a few attributes whose kinds and values the input picks. */
struct device {
    struct cel_attr attrs[8];
    struct cel_capacity caps[1];
    struct cel_device dev;
    char json[2048];
};

static void make_device(struct gen *g, struct device *d)
{
    static const char *const models[] = {"LATEST-GPU-MODEL", "a100", "", "1.2.3"};
    static const char *const versions[] = {"1.0.0", "2.1.3-rc.1", "not-a-version", "0.0.1"};
    static const int64_t ivals[] = {0, 3, -1, 9007199254740993LL, INT64_MAX, INT64_MIN};
    size_t na = 0, len;

    memset(d, 0, sizeof(*d));
    len = (size_t)snprintf(d->json, sizeof(d->json), "{\"driver\":\"dra.example.com\"");
    d->dev.driver = "dra.example.com";
    d->dev.allow_multiple_allocations = (int)pick(g, 2);
    len += (size_t)snprintf(d->json + len, sizeof(d->json) - len,
                            ",\"allowMultipleAllocations\":%s,\"attributes\":{",
                            d->dev.allow_multiple_allocations ? "true" : "false");
    for (int k = 0; k < 4; k++) {
        struct cel_attr *a = &d->attrs[na];
        unsigned kind = pick(g, 5);
        a->name = attr_names[k];
        if (kind == 4 && k != 3)
            continue;
        len += (size_t)snprintf(d->json + len, sizeof(d->json) - len, "%s\"%s\":", na ? "," : "",
                                a->name);
        switch (kind) {
        case 0:
            a->kind = CEL_ATTR_STRING;
            a->s = models[pick(g, 4)];
            len += (size_t)snprintf(d->json + len, sizeof(d->json) - len, "{\"string\":\"%s\"}", a->s);
            break;
        case 1:
            a->kind = CEL_ATTR_INT;
            a->i = ivals[pick(g, 6)];
            len += (size_t)snprintf(d->json + len, sizeof(d->json) - len, "{\"int\":%lld}",
                                    (long long)a->i);
            break;
        case 2:
            a->kind = CEL_ATTR_BOOL;
            a->b = (int)pick(g, 2);
            len += (size_t)snprintf(d->json + len, sizeof(d->json) - len, "{\"bool\":%s}",
                                    a->b ? "true" : "false");
            break;
        default:
            a->kind = CEL_ATTR_VERSION;
            a->s = versions[pick(g, 4)];
            len += (size_t)snprintf(d->json + len, sizeof(d->json) - len, "{\"version\":\"%s\"}",
                                    a->s);
            break;
        }
        na++;
    }
    d->caps[0].name = "memory";
    d->caps[0].quantity = pick(g, 2) ? "80Gi" : "1500m";
    snprintf(d->json + len, sizeof(d->json) - len, "},\"capacity\":{\"memory\":{\"value\":\"%s\"}}}",
             d->caps[0].quantity);
    d->dev.attrs = d->attrs;
    d->dev.nattrs = na;
    d->dev.caps = d->caps;
    d->dev.ncaps = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[4096], *line;
    struct gen g = {data, size, 0, buf, 0, sizeof(buf), 0};
    struct device d;
    struct cel_env env = CEL_ENV_DEFAULT;
    struct dd_err err;
    struct cel_program *p;
    const char *ours;

    buf[0] = '\0';
    make_device(&g, &d);
    expr(&g);
    p = cel_compile_env(buf, g.len, NULL, &env, &err);
    if (!p) {
        ours = "compile_error";
    } else {
        enum cel_verdict v = cel_eval_device(p, &d.dev, NULL, &err);
        ours = v == CEL_TRUE ? "true" : v == CEL_FALSE ? "false" : "runtime_error";
        cel_program_free(p);
    }
    if (!peer_ready(&oracle))
        return 0;
    fputs("{\"expression\":", oracle.to);
    json_str(oracle.to, buf, g.len);
    fprintf(oracle.to, ",\"device\":%s}\n", d.json);
    line = (char *)peer_answer(&oracle);
    {
        char want[64];
        const char *o = strstr(line, "\"outcome\":\"");
        size_t k = 0;
        if (!o) {
            fprintf(stderr, "fuzz_cel_diff: not an answer: %.300s\n", line);
            abort();
        }
        o += 11;
        while (o[k] && o[k] != '"' && k < sizeof(want) - 1) {
            want[k] = o[k];
            k++;
        }
        want[k] = '\0';
        /* The known difference of quantities lib/cel does not hold (docs/cel.md). */
        if (strcmp(want, ours) != 0 &&
            !(!strcmp(ours, "runtime_error") && strstr(err.msg, "beyond what dra-doctor holds"))) {
            fprintf(stderr, "MISMATCH\n  expression: %s\n  device: %s\n  lib/cel: %s (%s)\n"
                            "  Kubernetes: %s",
                    buf, d.json, ours, strcmp(ours, "true") && strcmp(ours, "false") ? err.msg : "",
                    line);
            __builtin_trap();
        }
    }
    return 0;
}
