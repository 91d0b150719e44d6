/*
 * test_scaling.c - how cost grows: lint (its loader reading the cluster from files, the
 * evidence --cluster-inventory keeps of a cluster, then its model and rules), a controller snapshot and a webhook decision over the
 * same generated cluster at N and at 10·N (claims, pods, templates, workloads, namespaces,
 * nodes and their devices each scaled), timed in one run.  Linear work takes about 10 times
 * as long at 10·N; one step that loops over everything once per element takes about 100
 * times as long.  Each guard times its steps apart (model build, each rule, the diagnosis of
 * every pod, ...) and fails naming the step whose ratio passes the limit.  Ratios of thread
 * CPU time, the best of a few rounds, never absolute times: a busy or slow machine (or ASan)
 * changes both sizes alike.
 */
#include "harness.h"

#include <ftw.h>
#include <time.h>
#include <unistd.h>

#include "formats/manifest.h"
#include "model/dra.h"
#include "rules/diagnose.h"
#include "rules/rules.h"
#include "model/keep.h"
#include "rules/snapshot.h"
#include "review.h"
#include "inventory.h"

#define RATIO_MAX 15.0
/* One step alone may reach 20: a step that walks a larger working set (the allocator judging
 * every node for a pod that fits nowhere, 10x the devices no longer in the caches) pays 1.3-1.6x
 * per element at 10*N, which is memory, not a loop over everything; a quadratic step is ~100,
 * an N log N one ~14. */
#define STEP_RATIO_MAX 20.0
#define ROUNDS 3
#define STEPS_MAX 64

/* ---- a generated cluster ------------------------------------------------------------- */

struct buf {
    char *s;
    size_t n, cap;
};

static void put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if (b->n + (size_t)n < b->cap)
            break;
        b->cap = 2 * b->cap + (size_t)n + 1024;
        assert_non_null(b->s = realloc(b->s, b->cap));
    }
    b->n += (size_t)n;
}

static const char *const gpu_models[] = { "LATEST-GPU-MODEL", "PREVIOUS-GPU-MODEL" };

/*
 * The objects of a cluster of n units: n Nodes with a GPU slice each (and a NIC slice every
 * 4th), n/10 namespaces (a quota, a Role and a RoleBinding each), per unit a ResourceClaim and
 * the Pod that names it, every 4th unit a template and a Deployment of 2 replicas using it,
 * every 8th a Deployment of 3 replicas sharing one claim; fixed: 5 DeviceClasses and the
 * driver (DaemonSet, ServiceAccount, ClusterRole and binding).  live adds what a cluster
 * shows: pod statuses (half Running on a node, half Pending), allocated claims reserved for
 * their pods, Events, the driver's pod on every node, the nodes' runtime.
 */
static cJSON *cluster(size_t n, int live)
{
    struct buf b = { NULL, 0, 0 };
    size_t i, nns = n / 10 ? n / 10 : 1;
    cJSON *all;

    put(&b, "[");
    /* Classes and the driver. */
    put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
            "\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'gpu.example.com'\"}}]}},");
    put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
            "\"gpu-latest.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'gpu.example.com' && device.attributes['gpu.example.com'].model "
            "== 'LATEST-GPU-MODEL'\"}}]}},");
    put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
            "\"gpu-large.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'gpu.example.com'\"}},{\"cel\":{\"expression\":"
            "\"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0\"}}]}},");
    put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
            "\"nic.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'nic.example.com'\"}}]}},");
    put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
            "\"nic-rdma.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'nic.example.com' && device.attributes['nic.example.com'].rdma\"}}]}},");
    put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":\"driver\","
            "\"namespace\":\"dra\"}},"
            "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"
            "{\"name\":\"driver\"},\"rules\":[{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":"
            "[\"resourceslices\"],\"verbs\":[\"get\",\"list\",\"watch\",\"create\",\"update\","
            "\"patch\",\"delete\"]}]},"
            "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
            "\"metadata\":{\"name\":\"driver\"},\"roleRef\":{\"apiGroup\":"
            "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"driver\"},"
            "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"driver\",\"namespace\":\"dra\"}]},"
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"plugin\","
            "\"namespace\":\"dra\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"plugin\"}},"
            "\"template\":{\"metadata\":{\"labels\":{\"app\":\"plugin\"}},\"spec\":{"
            "\"serviceAccountName\":\"driver\",\"tolerations\":[{\"operator\":\"Exists\"}],"
            "\"containers\":[{\"name\":\"plugin\",\"image\":"
            "\"registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0\",\"command\":"
            "[\"dra-example-kubeletplugin\"],\"env\":[{\"name\":\"CDI_ROOT\",\"value\":"
            "\"/var/run/cdi\"},{\"name\":\"DRIVER_NAME\",\"value\":\"gpu.example.com\"}],"
            "\"volumeMounts\":[{\"name\":\"reg\",\"mountPath\":\"/var/lib/kubelet/plugins_registry\"},"
            "{\"name\":\"cdi\",\"mountPath\":\"/var/run/cdi\"}]}],\"volumes\":[{\"name\":\"reg\","
            "\"hostPath\":{\"path\":\"/var/lib/kubelet/plugins_registry\"}},{\"name\":\"cdi\","
            "\"hostPath\":{\"path\":\"/var/run/cdi\"}}]}}}},");
    /* Nodes and what they publish. */
    for (i = 0; i < n; i++) {
        size_t d;
        put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%zu\","
                "\"labels\":{\"zone\":\"%s\",\"kubernetes.io/hostname\":\"node-%zu\"}},"
                "\"spec\":{%s}%s},", i, i % 2 ? "b" : "a", i,
            i % 16 == 3 ? "\"taints\":[{\"key\":\"gpu.example.com/present\",\"effect\":\"NoSchedule\"}]"
                        : "",
            live ? ",\"status\":{\"nodeInfo\":{\"containerRuntimeVersion\":\"containerd://2.0.4\"}}"
                 : "");
        put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
                "{\"name\":\"node-%zu-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":"
                "\"node-%zu\",\"pool\":{\"name\":\"node-%zu\",\"generation\":1,"
                "\"resourceSliceCount\":1},\"devices\":[", i, i, i);
        for (d = 0; d < 4; d++)
            put(&b, "%s{\"name\":\"gpu-%zu\",\"attributes\":{\"index\":{\"int\":%zu},\"uuid\":"
                    "{\"string\":\"gpu-%zu-%zu\"},\"model\":{\"string\":\"%s\"},\"driverVersion\":"
                    "{\"version\":\"1.0.%zu\"}},\"capacity\":{\"memory\":{\"value\":\"%s\"}}%s}",
                d ? "," : "", d, d, i, d, gpu_models[i % 2], d, i % 2 ? "40Gi" : "80Gi",
                i % 32 == 5 && d == 0
                    ? ",\"taints\":[{\"key\":\"example.com/bad\",\"effect\":\"NoSchedule\"}]" : "");
        put(&b, "]}},");
        if (i % 4 == 0)
            put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
                    "\"metadata\":{\"name\":\"node-%zu-nic\"},\"spec\":{\"driver\":"
                    "\"nic.example.com\",\"nodeName\":\"node-%zu\",\"pool\":{\"name\":\"node-%zu\","
                    "\"generation\":1,\"resourceSliceCount\":1},\"devices\":[{\"name\":\"nic-0\","
                    "\"attributes\":{\"rdma\":{\"bool\":true}}},{\"name\":\"nic-1\",\"attributes\":"
                    "{\"rdma\":{\"bool\":false}}}]}},", i, i, i);
        if (live)
            put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"plugin-%zu\","
                    "\"namespace\":\"dra\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":"
                    "\"plugin\"}]},\"spec\":{\"nodeName\":\"node-%zu\",\"containers\":[{\"name\":"
                    "\"plugin\",\"image\":\"i\"}],\"volumes\":[{\"name\":\"reg\",\"hostPath\":"
                    "{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]},\"status\":{\"phase\":"
                    "\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}},", i, i);
    }
    /* Namespaces. */
    for (i = 0; i < nns; i++)
        put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"ns-%zu\"}},"
                "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"q\","
                "\"namespace\":\"ns-%zu\"},\"spec\":{\"hard\":{\"count/resourceclaims.resource.k8s.io\":"
                "\"1000\",\"gpu.example.com.deviceclass.resource.k8s.io/devices\":\"1000\"}}%s},"
                "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":"
                "{\"name\":\"dev\",\"namespace\":\"ns-%zu\"},\"rules\":[{\"apiGroups\":"
                "[\"resource.k8s.io\"],\"resources\":[\"resourceclaims\"],\"verbs\":[\"get\"]}]},"
                "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
                "\"metadata\":{\"name\":\"dev\",\"namespace\":\"ns-%zu\"},\"roleRef\":{\"apiGroup\":"
                "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"dev\"},\"subjects\":"
                "[{\"kind\":\"ServiceAccount\",\"name\":\"default\",\"namespace\":\"ns-%zu\"}]},",
            i, i, live ? ",\"status\":{\"used\":{\"gpu.example.com.deviceclass.resource.k8s.io/"
                         "devices\":\"10\"}}" : "", i, i, i);
    /* Claims, pods and workloads. */
    for (i = 0; i < n; i++) {
        static const char *const classes[] = { "gpu.example.com", "gpu-latest.example.com",
                                               "gpu-large.example.com", "nic.example.com" };
        size_t ns = i % nns, node = (i * 7) % n;
        int running = live && i % 2, pending = live && !running;
        const char *cls = classes[i % 4];
        char sel[200] = "", tol[200] = "", req[800], on[64] = "";

        if (running)
            snprintf(on, sizeof(on), "\"nodeName\":\"node-%zu\",", node);
        if (i % 3 == 0 && i % 4 != 3)
            snprintf(sel, sizeof(sel), ",\"selectors\":[{\"cel\":{\"expression\":"
                     "\"device.attributes['gpu.example.com'].model == '%s'\"}}]",
                     gpu_models[(i / 3) % 2]);
        if (i % 5 == 0)
            snprintf(tol, sizeof(tol), ",\"tolerations\":[{\"key\":\"example.com/bad\","
                     "\"operator\":\"Exists\"}]");
        if (i % 7 == 0)
            snprintf(req, sizeof(req), "{\"name\":\"dev\",\"firstAvailable\":[{\"name\":\"big\","
                     "\"deviceClassName\":\"gpu-large.example.com\"},{\"name\":\"any\","
                     "\"deviceClassName\":\"gpu.example.com\"%s}]}", tol);
        else if (i % 11 == 0)
            snprintf(req, sizeof(req), "{\"name\":\"dev\",\"exactly\":{\"deviceClassName\":"
                     "\"nic-rdma.example.com\",\"allocationMode\":\"All\"}}");
        else
            snprintf(req, sizeof(req), "{\"name\":\"dev\",\"exactly\":{\"deviceClassName\":\"%s\","
                     "\"count\":%d%s%s}}", cls, 1 + (int)(i % 2), sel, tol);
        put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
                "{\"name\":\"claim-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"devices\":"
                "{\"requests\":[%s]}}", i, ns, req);
        if (running)
            put(&b, ",\"status\":{\"allocation\":{\"devices\":{\"results\":[]},\"nodeSelector\":"
                    "{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\","
                    "\"operator\":\"In\",\"values\":[\"node-%zu\"]}]}]}},\"reservedFor\":[{"
                    "\"resource\":\"pods\",\"name\":\"pod-%zu\",\"uid\":\"u%zu\"}]}", node, i, i);
        put(&b, "},{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%zu\","
                "\"namespace\":\"ns-%zu\"},\"spec\":{%s\"tolerations\":[{\"key\":"
                "\"gpu.example.com/present\",\"operator\":\"Exists\"}],\"resourceClaims\":"
                "[{\"name\":\"dev\",\"resourceClaimName\":\"claim-%zu\"}],\"containers\":[{\"name\":"
                "\"app\",\"image\":\"app:1\",\"resources\":{\"claims\":[{\"name\":\"dev\"}]}}]}",
            i, ns, on, i);
        if (running)
            put(&b, ",\"status\":{\"phase\":\"Running\"}");
        if (pending)
            put(&b, ",\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":"
                    "\"PodScheduled\",\"status\":\"False\",\"reason\":\"Unschedulable\"}]}");
        put(&b, "},");
        if (pending)
            put(&b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e-%zu\","
                    "\"namespace\":\"ns-%zu\"},\"type\":\"Warning\",\"reason\":"
                    "\"FailedScheduling\",\"message\":\"0/%zu nodes are available: cannot "
                    "allocate all claims.\",\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":"
                    "\"ns-%zu\",\"name\":\"pod-%zu\"}},", i, ns, n, ns, i);
        if (i % 4 == 0)
            put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
                    "\"metadata\":{\"name\":\"tmpl-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"spec\":"
                    "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
                    "\"gpu.example.com\"%s}}]}}}},"
                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
                    "\"dep-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"replicas\":2,\"template\":"
                    "{\"spec\":{\"nodeSelector\":{\"zone\":\"%s\"},\"resourceClaims\":[{\"name\":"
                    "\"gpu\",\"resourceClaimTemplateName\":\"tmpl-%zu\"}],\"containers\":[{\"name\":"
                    "\"app\",\"image\":\"app:1\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}}}},",
                i, ns, sel, i, ns, i % 8 ? "a" : "b", i);
        if (i % 8 == 0)
            put(&b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
                    "\"metadata\":{\"name\":\"shared-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":"
                    "{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":"
                    "\"gpu.example.com\"}}]}}},"
                    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
                    "\"shared-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"replicas\":3,\"template\":"
                    "{\"spec\":{\"affinity\":{\"podAntiAffinity\":{"
                    "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"topologyKey\":"
                    "\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{\"app\":"
                    "\"shared-%zu\"}}}]}},\"resourceClaims\":[{\"name\":\"gpu\","
                    "\"resourceClaimName\":\"shared-%zu\"}],\"containers\":[{\"name\":\"app\","
                    "\"image\":\"app:1\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},"
                    "\"metadata\":{\"labels\":{\"app\":\"shared-%zu\"}}}}},",
                i, ns, i, ns, i, i, i);
    }
    b.s[b.n - 1] = ']';
    all = cJSON_Parse(b.s);
    assert_non_null(all);
    free(b.s);
    return all;
}

/* ---- timing ---------------------------------------------------------------------------- */

/*
 * Every step at N starts with cold caches, as every step at 10*N does (its objects are more
 * than the caches hold): otherwise the small cluster's objects stay in the caches from one
 * step to the next and linear work looks 20 to 40 times as slow at 10*N as at N.  Writing more
 * than the last-level cache holds evicts what a step left there.
 */
#define EVICT_BYTES (40u << 20)

/* Evicts when arg (an int, the size) is 0, the small cluster. */
static void evict(void *arg)
{
    static unsigned char *junk, round;
    const char *e = getenv("DD_SCALING_EVICT"); /* 0: not (under valgrind, say) */

    if ((arg && *(const int *)arg) || (e && !strcmp(e, "0")))
        return;
    if (!junk)
        assert_non_null(junk = malloc(EVICT_BYTES));
    memset(junk, ++round, EVICT_BYTES);
}

static double cpu_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The steps of one guard, each timed at both sizes (the best of the rounds). */
struct steps {
    const char *name[STEPS_MAX];
    double t[2][STEPS_MAX];   /* [0]: at N, [1]: at 10·N; 0 until measured */
    size_t n;
};

/* Records seconds for step name at size z (0 or 1), keeping the best of the rounds. */
static void step(struct steps *s, int z, const char *name, double seconds)
{
    size_t i;

    for (i = 0; i < s->n && strcmp(s->name[i], name); i++)
        ;
    if (i == s->n) {
        assert_true(s->n < STEPS_MAX);
        s->name[s->n++] = name;
    }
    if (!s->t[z][i] || seconds < s->t[z][i])
        s->t[z][i] = seconds;
}

/*
 * The verdict: the whole's ratio at most RATIO_MAX, each step's at most STEP_RATIO_MAX (the
 * returned figure scales a step's ratio to RATIO_MAX, so both are held to one limit).  A step
 * too small at N
 * to be timed apart from noise is measured against a floor of 5 % of the whole: one that
 * grows with the square of the input still passes the limit at 10·N only if it took less
 * than 0.75 % of the whole at N.
 * Returns the worst step's ratio; *worst names it.
 */
static double verdict(const char *guard, const struct steps *s, const char **worst, int print)
{
    double all[2] = { 0, 0 }, floor, r[STEPS_MAX], max;
    size_t i;

    for (i = 0; i < s->n; i++) {
        all[0] += s->t[0][i];
        all[1] += s->t[1][i];
    }
    floor = all[0] / 20;
    /* A guard of one step (the webhook's view build) is that step, held to a step's limit. */
    max = s->n > 1 ? all[1] / all[0] : 0;
    *worst = "(all)";
    for (i = 0; i < s->n; i++) {
        r[i] = s->t[1][i] / (s->t[0][i] > floor ? s->t[0][i] : floor);
        /* Scaled to the whole's limit, so that one number says how far from failing it is. */
        if (r[i] * RATIO_MAX / STEP_RATIO_MAX > max) {
            max = r[i] * RATIO_MAX / STEP_RATIO_MAX;
            *worst = s->name[i];
        }
    }
    if (!print)
        return max;
    print_message("%s: %zu steps, %.2f ms at N, %.2f ms at 10*N: ratio %.1f (at most %.0f), "
                  "worst %s, %.1f of the limit\n", guard, s->n, all[0] * 1e3, all[1] * 1e3,
                  all[1] / all[0], s->n > 1 ? RATIO_MAX : STEP_RATIO_MAX, *worst, max / RATIO_MAX);
    for (i = 0; i < s->n; i++)
        if (s->t[1][i] > all[1] / 50 || r[i] > STEP_RATIO_MAX)
            print_message("  %-36s %9.3f ms %9.3f ms  x%.1f\n", s->name[i], s->t[0][i] * 1e3,
                          s->t[1][i] * 1e3, r[i]);
    return max;
}

/* A guard's name and its steps. */
struct guard {
    const char *name;
    struct steps s;
};

static void check(const struct guard *g)
{
    const char *worst;
    double r = verdict(g->name, &g->s, &worst, 1);

    if (r > RATIO_MAX) {
        int all = !strcmp(worst, "(all)");
        fail_msg("%s: cost grows faster than the input: %s%s takes %.1f times as long at "
                 "10*N as at N (at most %.0f)", g->name, all ? "the whole" : "step ",
                 all ? "" : worst, all ? r : r * STEP_RATIO_MAX / RATIO_MAX,
                 all ? RATIO_MAX : STEP_RATIO_MAX);
    }
}

/* The rules' codes, for naming steps. */
static const char *rule_code(size_t i)
{
    size_t n;

    return dd_rules(&n)[i].code;
}

/* ---- lint ------------------------------------------------------------------------------ */

#define LINT_N 200

/*
 * The cluster as a repository: YAML in Kubernetes' style, ten objects a file, every fifth
 * object a JSON file of its own, and a ConfigMap (which the loader skims: no rule reads it)
 * after every other object.
 */
static int yaml_plain(const char *s)
{
    static const char *const words[] = { "y", "n", "yes", "no", "on", "off", "true", "false",
                                         "null" };
    size_t i;

    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return 0;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (!strcasecmp(s, words[i]))
            return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") ==
           strlen(s);
}

static void yaml_scalar(struct buf *b, const cJSON *v)
{
    char *q;

    if (cJSON_IsString(v) && yaml_plain(v->valuestring)) {
        put(b, "%s", v->valuestring);
    } else if (cJSON_IsString(v)) {
        assert_non_null(q = cJSON_PrintUnformatted(v));
        put(b, "%s", q);
        free(q);
    } else if (cJSON_IsNumber(v)) {
        put(b, "%.17g", v->valuedouble);
    } else {
        put(b, "%s", cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null");
    }
}

static void yaml_map(struct buf *b, const cJSON *map, int indent);
static void yaml_seq(struct buf *b, const cJSON *seq, int indent);

/* The value of a key at indent, after its colon. */
static void yaml_value(struct buf *b, const cJSON *v, int indent)
{
    if (cJSON_IsObject(v) && v->child) {
        put(b, "\n");
        yaml_map(b, v, indent + 2);
    } else if (cJSON_IsArray(v) && v->child) {
        put(b, "\n");
        yaml_seq(b, v, indent);
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        put(b, " %s\n", cJSON_IsObject(v) ? "{}" : "[]");
    } else {
        put(b, " ");
        yaml_scalar(b, v);
        put(b, "\n");
    }
}

static void yaml_key(struct buf *b, const cJSON *c)
{
    cJSON *k = cJSON_CreateString(c->string);

    assert_non_null(k);
    yaml_scalar(b, k);
    cJSON_Delete(k);
    put(b, ":");
}

static void yaml_map(struct buf *b, const cJSON *map, int indent)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, map) {
        put(b, "%*s", indent, "");
        yaml_key(b, c);
        yaml_value(b, c, indent);
    }
}

static void yaml_seq(struct buf *b, const cJSON *seq, int indent)
{
    const cJSON *it, *c;

    cJSON_ArrayForEach(it, seq) {
        if (cJSON_IsObject(it) && it->child) {
            cJSON_ArrayForEach(c, it) {
                put(b, "%*s%s", indent, "", c == it->child ? "- " : "  ");
                yaml_key(b, c);
                yaml_value(b, c, indent + 2);
            }
        } else if (cJSON_IsArray(it) && it->child) {
            put(b, "%*s-\n", indent, "");
            yaml_seq(b, it, indent + 2);
        } else {
            put(b, "%*s-", indent, "");
            yaml_value(b, it, indent);
        }
    }
}

static void write_text(const char *dir, size_t n, const char *ext, const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/f%05zu.%s", dir, n, ext);
    assert_non_null(f = fopen(path, "w"));
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void write_repository(const char *dir, const cJSON *objs)
{
    struct buf b = { NULL, 0, 0 };
    const cJSON *it;
    size_t i = 0, files = 0;
    char *json;

    cJSON_ArrayForEach(it, objs) {
        if (i % 5 == 4) {
            assert_non_null(json = cJSON_Print(it));
            write_text(dir, files++, "json", json);
            free(json);
        } else {
            put(&b, "---\n");
            yaml_map(&b, it, 0);
        }
        if (i % 2)
            put(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%zu\n"
                    "  namespace: ns-0\ndata:\n  key: \"value %zu\"\n", i, i);
        if (++i % 10 == 0 && b.n) {
            write_text(dir, files++, "yaml", b.s);
            b.n = 0;
        }
    }
    if (b.n)
        write_text(dir, files, "yaml", b.s);
    free(b.s);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* The repositories of both sizes, written by the first round at each. */
struct repos {
    char dir[2][64];
    int written[2];
};

static int keep_relevant(void *ctx, const cJSON *obj)
{
    (void)ctx;
    return dra_object_relevant(obj);
}

static int skim_irrelevant(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    return dra_kind_relevant(api_version, kind) != DRA_KIND_USED;
}

/* lint's loader, as lint_collect sets it up, into g[1]. */
static void load_once(struct guard *g, int z, const cJSON *objs, struct repos *r)
{
    struct mf_set set = MF_SET_INIT;
    struct inventory_counts counts;
    const cJSON **evidence;
    size_t nevidence;
    double t;

    if (!r->written[z]) {
        snprintf(r->dir[z], sizeof(r->dir[z]), "/tmp/dd-scaling-XXXXXX");
        assert_non_null(mkdtemp(r->dir[z]));
        write_repository(r->dir[z], objs);
        r->written[z] = 1;
    }
    set.keep = keep_relevant;
    set.skim = skim_irrelevant;
    set.skim_unless = DRA_CLAIMS_KEY;
    set.compact = 1;
    evict(&z);
    t = cpu_now();
    assert_int_equal(mf_load_path(&set, r->dir[z], NULL), DD_OK);
    step(&g[1].s, z, "files read and parsed", cpu_now() - t);
    assert_int_equal(set.n + set.nfiltered, 3 * (size_t)cJSON_GetArraySize(objs) / 2);
    assert_int_equal(set.ndiags, 0);
    /* lint --cluster-inventory: which of a cluster's objects stand beside the manifests (here
     * the same objects: every one is looked up and replaced). */
    evict(&z);
    t = cpu_now();
    assert_int_equal(inventory_evidence(objs, &set, &evidence, &nevidence, &counts), 0);
    step(&g[1].s, z, "cluster evidence", cpu_now() - t);
    assert_true(counts.replaced > 0);
    assert_int_equal(counts.nodes + counts.slices + counts.classes + counts.claims, 0);
    free(evidence);
    evict(&z);
    t = cpu_now();
    mf_set_release(&set);
    step(&g[1].s, z, "objects released", cpu_now() - t);
}

static void lint_once(struct guard *g, int z, const cJSON *objs, void *repos)
{
    struct steps *s = &g->s;
    struct rule_options opt = RULE_OPTIONS_INIT;
    struct dd_findings f = DD_FINDINGS_INIT;
    double secs[STEPS_MAX] = { 0 }, t;
    struct dra_model m;
    const cJSON *it;
    size_t i, nrules;

    load_once(g, z, objs, repos);
    dd_rules(&nrules);
    assert_true(nrules <= STEPS_MAX);
    opt.seconds = secs;
    opt.before = evict;
    opt.before_arg = &z;
    evict(&z);
    t = cpu_now();
    dra_model_init(&m, NULL, NULL);
    cJSON_ArrayForEach(it, objs)
        assert_int_equal(dra_model_add(&m, it, "generated.yaml", 1), DD_OK);
    assert_int_equal(dra_model_finish(&m), DD_OK);
    step(s, z, "model build", cpu_now() - t);
    assert_int_equal(dd_rules_run(&m, &opt, &f), 0);
    evict(&z);
    t = cpu_now();
    dd_findings_sort(&f);
    step(s, z, "findings sorted", cpu_now() - t);
    for (i = 0; i < nrules; i++)
        step(s, z, rule_code(i), secs[i]);
    dd_findings_release(&f);
    dra_model_release(&m);
}

/* N for a guard: its default, or DD_SCALING_N (to look at other sizes by hand). */
static size_t size_n(size_t dflt)
{
    const char *e = getenv("DD_SCALING_N");

    return e && atoi(e) > 0 ? (size_t)atoi(e) : dflt;
}

/* One workload at a size (z: 0 at N, 1 at 10*N) over objs, its steps timed into g[0]'s
 * steps (and g[1]'s). */
typedef void (*once_fn)(struct guard *g, int z, const cJSON *objs, void *arg);

/*
 * The clusters of n (DD_SCALING_N, or dflt) and 10*n units, each run rounds times (the best
 * of each step counts), then g[0..ng) checked.  When one would fail, rounds more are run
 * first: a step that grows with the square of the input fails again, another process's
 * burst on a shared machine seldom twice.
 */
static void measure(struct guard *g, size_t ng, size_t dflt, int live, int rounds, once_fn once,
                    void *arg)
{
    size_t n = size_n(dflt), i;
    cJSON *small = cluster(n, live), *big = cluster(10 * n, live);
    const char *worst;
    int r, again, fails = 0;

    for (again = 0; again < 2; again++) {
        for (r = 0; r < rounds; r++) {
            once(g, 0, small, arg);
            once(g, 1, big, arg);
        }
        for (i = 0, fails = 0; i < ng; i++)
            fails |= verdict(g[i].name, &g[i].s, &worst, 0) > RATIO_MAX;
        if (!fails || again)
            break;
        for (i = 0; i < ng; i++)
            verdict(g[i].name, &g[i].s, &worst, 1);
        print_message("once more, to tell a step that grows faster from noise:\n");
    }
    cJSON_Delete(small);
    cJSON_Delete(big);
    for (i = 0; i < ng; i++)
        check(&g[i]);
}

static struct repos lint_repos;

static void lint_scaling(void **state)
{
    /* The loader has a guard of its own: its time would raise the floor of lint's steps. */
    struct guard g[2] = { { "lint", { { 0 }, { { 0 } }, 0 } },
                          { "lint loader", { { 0 }, { { 0 } }, 0 } } };

    (void)state;
    measure(g, 2, LINT_N, 0, ROUNDS, lint_once, &lint_repos);
}

/* The repositories go whether the guards passed or not. */
static int lint_teardown(void **state)
{
    int z;

    (void)state;
    for (z = 0; z < 2; z++)
        if (lint_repos.written[z])
            nftw(lint_repos.dir[z], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

/* ---- a controller snapshot ----------------------------------------------------------- */

#define SNAP_N 150

static void snapshot_once(struct guard *g, int z, const cJSON *objs, void *cache)
{
    struct steps *s = &g->s;
    struct rule_options opt = RULE_OPTIONS_INIT;
    double secs[STEPS_MAX] = { 0 }, t;
    const cJSON **borrowed;
    struct snapshot *snap;
    struct dd_err err;
    const cJSON *it;
    size_t i, n = 0, nrules, sick = 0;

    dd_rules(&nrules);
    opt.seconds = secs;
    opt.before = evict;
    opt.before_arg = &z;
    assert_non_null(borrowed = calloc((size_t)cJSON_GetArraySize(objs) + 1, sizeof(*borrowed)));
    cJSON_ArrayForEach(it, objs)
        borrowed[n++] = it;
    dd_err_clear(&err);
    evict(&z);
    /* What the controller's builder does: the objects of its caches, no API server. */
    snap = snapshot_build(NULL, borrowed, n, NULL, cache, &opt, &err);
    assert_non_null(snap);
    step(s, z, "snapshot: model build", snap->steps.model);
    step(s, z, "snapshot: stand-in claims", snap->steps.assume);
    step(s, z, "snapshot: findings indexed", snap->steps.index);
    for (i = 0; i < nrules; i++)
        step(s, z, rule_code(i), secs[i]);
    /* Then it diagnoses every pod (check_all_pods). */
    evict(&z);
    t = cpu_now();
    for (i = 0; i < snap->m.npods; i++) {
        struct diag_result r;
        if (strcmp(snap->m.pods[i]->o.kind, "Pod"))
            continue;
        assert_non_null(snapshot_pod(snap, snap->m.pods[i]->o.ns, snap->m.pods[i]->o.name));
        diag_pod_indexed(&snap->m, &snap->f, snap->ix, snap->m.pods[i], &r);
        sick += !r.healthy;
    }
    step(s, z, "diagnosis of every pod", cpu_now() - t);
    assert_true(sick > 0); /* the generated cluster has Pending pods to explain */
    snapshot_free(snap);
}

static void snapshot_scaling(void **state)
{
    struct guard g = { "controller snapshot", { { 0 }, { { 0 } }, 0 } };
    struct dra_cel_cache *cel = dra_cel_cache_new();

    (void)state;
    assert_non_null(cel);
    measure(&g, 1, SNAP_N, 1, ROUNDS, snapshot_once, cel);
    dra_cel_cache_free(cel);
}

/* ---- a webhook decision ------------------------------------------------------------ */

#define WH_N 150
#define WH_DECISIONS 50

static const struct {
    const char *name, *group, *kind, *ns, *obj;
    enum wh_verdict verdict;
} bodies[] = {
    { "decision: DeviceClass (misspelled driver)", "resource.k8s.io", "DeviceClass", "",
      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
      "\"new\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
      "'gpu.exmaple.com'\"}}]}}", WH_DENIED },
    { "decision: DeviceClass", "resource.k8s.io", "DeviceClass", "",
      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"
      "\"new\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"device.driver == "
      "'gpu.example.com' && device.attributes['gpu.example.com'].modle == 'X'\"}}]}}",
      WH_WARNED },
    { "decision: ResourceClaim", "resource.k8s.io", "ResourceClaim", "ns-1",
      "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
      "\"new\",\"namespace\":\"ns-1\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
      "\"exactly\":{\"deviceClassName\":\"gpu.example.com\",\"count\":2,\"selectors\":[{\"cel\":"
      "{\"expression\":\"device.attributes['gpu.example.com'].modle == 'X'\"}}]}}]}}}",
      WH_WARNED },
    { "decision: Pod", "", "Pod", "ns-4",
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"new\",\"namespace\":"
      "\"ns-4\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":"
      "\"tmpl-4\"}],\"containers\":[{\"name\":\"app\",\"image\":\"app:1\",\"resources\":"
      "{\"claims\":[{\"name\":\"gpu\"}]}}]}}", WH_ALLOWED },
};

static void webhook_once(struct guard *g, int z, const cJSON *objs, void *unused)
{
    struct steps *s = &g[0].s, *build = &g[1].s;
    const cJSON **v = calloc((size_t)cJSON_GetArraySize(objs) + 1, sizeof(*v));
    struct wh_view *view;
    struct dd_err err;
    const cJSON *it;
    size_t n = 0, i, k;
    double t;

    (void)unused;
    assert_non_null(v);
    cJSON_ArrayForEach(it, objs)
        v[n++] = it;
    evict(&z);
    t = cpu_now();
    assert_non_null(view = wh_view_build(v, n, NULL, &err));
    step(build, z, "view build", cpu_now() - t);
    free(v);
    for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char body[4096];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":"
                 "{\"uid\":\"u\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\",\"kind\":\"%s\"},"
                 "\"operation\":\"CREATE\",\"namespace\":\"%s\",\"object\":%s}}",
                 bodies[i].group, bodies[i].kind, bodies[i].ns, bodies[i].obj);
        evict(&z);
        t = cpu_now();
        for (k = 0; k < WH_DECISIONS; k++) {
            struct wh_result res;
            dd_err_clear(&err);
            assert_int_equal(wh_review(view, NULL, 0, body, strlen(body), &res, &err), DD_OK);
            assert_int_equal(res.verdict, bodies[i].verdict);
            free(res.body);
        }
        step(s, z, bodies[i].name, (cpu_now() - t) / WH_DECISIONS);
    }
    wh_view_free(view);
}

static void webhook_scaling(void **state)
{
    struct guard g[2] = { { "webhook decision", { { 0 }, { { 0 } }, 0 } },
                          { "webhook view build", { { 0 }, { { 0 } }, 0 } } };

    (void)state;
    /* The view build is one step of several passes over the objects: more rounds, for a
     * best time a busy machine's caches disturb less. */
    measure(g, 2, WH_N, 1, ROUNDS + 2, webhook_once, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(lint_scaling, lint_teardown),
        cmocka_unit_test(snapshot_scaling),
        cmocka_unit_test(webhook_scaling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
