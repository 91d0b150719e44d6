/*
 * event-bench - the controller's CPU per watch event, in process: what its builder does
 * after one pod changes (lib/rules/snapshot over every cached object, then that pod's
 * diagnosis), on clusters of several sizes in one run, and the ratio of the largest to the
 * smallest (issue 18: at 50,000 pods within 2x of 5,000).
 *
 *   event-bench [-e EVENTS] [-u] [-a|-v] PODS...   (default: 5000 50000)
 *
 * The cluster has the shape: one node per 50 pods with 10 devices each (50,000 pods:
 * 1,000 nodes, 10,000 devices), one driver, two DeviceClasses, a claim of its own per pod;
 * half the pods run on an allocated device, the others are Pending with the scheduler's
 * Event.  An event replaces one Pending pod by a copy whose status changed (what a watch
 * delivers and the controller's changed hook counts), as the store does; the previous
 * snapshot is freed after the new one is built, as the live cache does.  No API server:
 * SubjectAccessReviews are not asked (the controller caches those across builds anyway).
 *
 * Each event is handled twice, each way on its own chain of snapshots: built from scratch
 * (snapshot_build, what the controller did before rule scopes) and updated from the previous
 * snapshot (snapshot_update: CLUSTER rules, and POD rules for the changed pod only); the two
 * must agree on the findings and the pod's diagnosis (the bench stops otherwise).  -u: updates
 * only (no chain built from scratch, nothing compared), for runs long enough to cross the
 * full builds the updates make now and then (a quarter of the pods replaced since the last).
 * -a: an event adds what a reaction sample of bench/controller-bench.sh adds (a Pending pod,
 * its claim, the scheduler's Event) instead; -v: it replaces a scheduler's Event (another
 * message, as the scheduler's next attempt writes).
 *
 * Prints per size: objects, the first build (CPU s), a diagnosis of every pod (CPU s: what the
 * controller did after any change of a claim before it asked snapshot_affected_pods), CPU per
 * event (ms, mean of EVENTS) of the full build and of the update, the update's split into
 * model, rules, index and "diag" (the pods the change may reach, snapshot_affected_pods, and
 * the pod's diagnosis), each way's ratio to the first size, and the pods reached per event;
 * then the costliest rules of the updates.
 * Built by `make build/release/event-bench`; not part of the binary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "rules/diagnose.h"
#include "rules/snapshot.h"

#define PODS_PER_NODE 50
#define DEVICES_PER_NODE 10

/* A memory stream for the generated JSON (exits when out of memory). */
static FILE *stream(char **s, size_t *n)
{
    FILE *f = open_memstream(s, n);

    if (!f) {
        fprintf(stderr, "event-bench: out of memory\n");
        exit(1);
    }
    return f;
}

static void pod(FILE *b, size_t i, size_t node, int running, int gen)
{
    char on[64] = "";

    if (running)
        snprintf(on, sizeof(on), "\"nodeName\":\"node-%zu\",", node);
    fprintf(b, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pod-%zu\","
           "\"namespace\":\"ns-%zu\",\"uid\":\"u%zu\"},\"spec\":{%s\"resourceClaims\":[{"
           "\"name\":\"gpu\",\"resourceClaimName\":\"claim-%zu\"}],\"containers\":[{\"name\":"
           "\"app\",\"image\":\"app:1\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]},",
        i, i % 50, i, on, i);
    if (running)
        fprintf(b, "\"status\":{\"phase\":\"Running\"}}");
    else
        fprintf(b, "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"PodScheduled\","
               "\"status\":\"False\",\"reason\":\"Unschedulable\",\"message\":\"try %d\"}]}}",
            gen);
}

/* The start of pod i's claim (its status, if any, and closing brace follow). */
static void claim(FILE *b, size_t i)
{
    fprintf(b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":"
            "{\"name\":\"claim-%zu\",\"namespace\":\"ns-%zu\"},\"spec\":{\"devices\":{"
            "\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"%s\"}}]}}",
        i, i % 50, i % 3 ? "gpu.example.com" : "gpu-big.example.com");
}

/* The scheduler's Event about Pending pod i. */
static void event(FILE *b, size_t i, size_t nodes)
{
    fprintf(b, "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e-%zu\","
            "\"namespace\":\"ns-%zu\"},\"type\":\"Warning\",\"reason\":"
            "\"FailedScheduling\",\"message\":\"0/%zu nodes are available: cannot "
            "allocate all claims.\",\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":"
            "\"ns-%zu\",\"name\":\"pod-%zu\"}}", i, i % 50, nodes, i % 50, i);
}

/* The cluster of pods pods (a JSON array; exits on failure). */
static cJSON *cluster(size_t pods)
{
    size_t nodes = (pods + PODS_PER_NODE - 1) / PODS_PER_NODE, i, d;
    char *text;
    size_t len;
    FILE *b = stream(&text, &len);
    cJSON *all;

    fprintf(b, "[{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{"
            "\"name\":\"gpu.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'gpu.example.com'\"}}]}},"
            "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{"
            "\"name\":\"gpu-big.example.com\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"
            "\"device.driver == 'gpu.example.com' && device.capacity['gpu.example.com'].memory"
            ".compareTo(quantity('40Gi')) >= 0\"}}]}},"
            "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"plugin\","
            "\"namespace\":\"dra\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"plugin\"}},"
            "\"template\":{\"metadata\":{\"labels\":{\"app\":\"plugin\"}},\"spec\":{"
            "\"serviceAccountName\":\"driver\",\"containers\":[{\"name\":\"plugin\",\"image\":"
            "\"registry.k8s.io/dra-example-driver/dra-example-driver:v0.2.0\",\"env\":[{\"name\":"
            "\"DRIVER_NAME\",\"value\":\"gpu.example.com\"}]}]}}}}");
    for (i = 0; i < nodes; i++) {
        fprintf(b, ",{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%zu\","
                "\"labels\":{\"kubernetes.io/hostname\":\"node-%zu\"}},\"status\":{\"nodeInfo\":"
                "{\"containerRuntimeVersion\":\"containerd://2.0.4\"}}}", i, i);
        fprintf(b, ",{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":"
                "{\"name\":\"node-%zu-gpu\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":"
                "\"node-%zu\",\"pool\":{\"name\":\"node-%zu\",\"generation\":1,"
                "\"resourceSliceCount\":1},\"devices\":[", i, i, i);
        for (d = 0; d < DEVICES_PER_NODE; d++)
            fprintf(b, "%s{\"name\":\"gpu-%zu\",\"attributes\":{\"index\":{\"int\":%zu}},"
                    "\"capacity\":{\"memory\":{\"value\":\"%s\"}}}", d ? "," : "", d, d,
                d % 2 ? "40Gi" : "80Gi");
        fprintf(b, "]}}");
        fprintf(b, ",{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"plugin-%zu\","
                "\"namespace\":\"dra\",\"ownerReferences\":[{\"kind\":\"DaemonSet\",\"name\":"
                "\"plugin\"}]},\"spec\":{\"nodeName\":\"node-%zu\",\"containers\":[{\"name\":"
                "\"plugin\",\"image\":\"i\"}],\"volumes\":[{\"name\":\"reg\",\"hostPath\":"
                "{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]},\"status\":{\"phase\":"
                "\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}", i, i);
    }
    for (i = 0; i < pods; i++) {
        size_t node = i / PODS_PER_NODE;
        int running = i % 2;
        fprintf(b, ",");
        claim(b, i);
        if (running)
            fprintf(b, ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\","
                    "\"driver\":\"gpu.example.com\",\"pool\":\"node-%zu\",\"device\":\"gpu-%zu\"}]},"
                    "\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":"
                    "\"metadata.name\",\"operator\":\"In\",\"values\":[\"node-%zu\"]}]}]}},"
                    "\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"pod-%zu\",\"uid\":\"u%zu\"}]}",
                node, (i / 2) % DEVICES_PER_NODE, node, i, i);
        fprintf(b, "},");
        pod(b, i, node, running, 0);
        if (!running) {
            fprintf(b, ",");
            event(b, i, nodes);
        }
    }
    fprintf(b, "]");
    fclose(b);
    if (!(all = cJSON_Parse(text))) {
        fprintf(stderr, "event-bench: generated JSON does not parse\n");
        exit(1);
    }
    free(text);
    return all;
}

static double cpu_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define MAX_RULES 256
#define TOP 6 /* rules listed */

/* The store: the objects of all, borrowed, in an array where a replaced object keeps its
 * place (as lib/client/informer's stores keep them). */
static const cJSON **store_of(const cJSON *all, size_t *n)
{
    const cJSON **objs = malloc(((size_t)cJSON_GetArraySize(all) + 1) * sizeof(*objs));
    const cJSON *it;

    if (!objs)
        exit(1);
    *n = 0;
    cJSON_ArrayForEach(it, all)
        objs[(*n)++] = it;
    return objs;
}

/* A snapshot of every object of the store: from scratch (prev NULL), or updated from prev (as
 * the controller's build hook does, after the live cache's collect copied the stores' arrays);
 * each rule's CPU seconds added to secs[] (dd_rules() order). */
static struct snapshot *build(const struct snapshot *prev, const cJSON *const *store, size_t n,
                              struct dra_cel_cache *cel, double *secs)
{
    struct rule_options opt = RULE_OPTIONS_INIT;
    const cJSON **objs = malloc((n + 1) * sizeof(*objs));
    struct snapshot *s;
    struct dd_err err;

    if (!objs)
        exit(1);
    memcpy(objs, store, n * sizeof(*objs));
    opt.seconds = secs;
    dd_err_clear(&err);
    s = prev ? snapshot_update(prev, objs, n, NULL, cel, &opt, &err)
             : snapshot_build(NULL, objs, n, NULL, cel, &opt, &err);
    if (!s) {
        fprintf(stderr, "event-bench: %s\n", err.msg);
        exit(1);
    }
    return s;
}

/* old's place in array all goes to new; old is out of it but not freed (cJSON has no call
 * for that: its insert at a position fails in 1.7.15).  The first item's prev is the last. */
static void splice(cJSON *all, cJSON *old, cJSON *new)
{
    new->next = old->next;
    new->prev = old->prev;
    if (old->next)
        old->next->prev = new;
    else
        all->child->prev = new;
    if (all->child == old)
        all->child = new;
    else
        old->prev->next = new;
    if (all->child->prev == old)
        all->child->prev = new; /* old was the only item */
    old->next = old->prev = NULL;
}

/* CPU seconds over the events, and the snapshot steps' share. */
struct cost {
    double total, model, rules, index;
};

struct result {
    size_t pods, objects;
    double first, diag, every; /* every: a diagnosis of every pod (what the controller did
                                   after each change of a claim before snapshot_affected_pods) */
    struct cost full, delta;
    int deltas;                 /* updates that were deltas */
    size_t reached;             /* pods snapshot_affected_pods named, over the events */
    double rule[MAX_RULES];     /* per rule, over the events (updated snapshots) */
};

static void count_pod(void *ctx, const char *ns, const char *name)
{
    (void)ns;
    (void)name;
    ++*(size_t *)ctx;
}

static void account(struct cost *c, const struct snapshot *s, double t)
{
    c->total += t;
    c->model += s->steps.model + s->steps.assume;
    c->rules += s->steps.rules;
    c->index += s->steps.index;
}

/* Parses what b wrote into *text (its stream's buffer: set when b closes; exits when it does
 * not parse). */
static cJSON *parsed(FILE *b, char **text)
{
    cJSON *o;

    fclose(b);
    o = cJSON_Parse(*text);
    free(*text);
    if (!o) {
        fprintf(stderr, "event-bench: generated JSON does not parse\n");
        exit(1);
    }
    return o;
}

/* What a reaction sample of bench/controller-bench.sh adds: Pending pod i, its claim (not
 * allocated) and the scheduler's Event, appended to all and to store (as a store appends). */
static void add_pending(cJSON *all, const cJSON **store, size_t *nstore, size_t i, size_t pods)
{
    size_t nodes = (pods + PODS_PER_NODE - 1) / PODS_PER_NODE, k;
    cJSON *o[3];
    char *text;
    size_t len;
    FILE *b;

    b = stream(&text, &len);
    claim(b, i);
    fprintf(b, "}");
    o[0] = parsed(b, &text);
    b = stream(&text, &len);
    pod(b, i, 0, 0, 1);
    o[1] = parsed(b, &text);
    b = stream(&text, &len);
    event(b, i, nodes);
    o[2] = parsed(b, &text);
    for (k = 0; k < 3; k++) {
        cJSON_AddItemToArray(all, o[k]);
        store[(*nstore)++] = o[k];
    }
}

static void run(size_t pods, int events, int full_chain, int mode, struct result *r)
{
    struct dra_cel_cache *cel = dra_cel_cache_new();
    cJSON *all = cluster(pods);
    struct snapshot *full, *cur;
    size_t nstore;
    const cJSON **store = store_of(all, &nstore);
    size_t *pod_at = malloc((pods + 1) * sizeof(*pod_at)), at;
    double t;
    int e;

    /* Where each pod is in the store (it stays there: a replacement takes its place). */
    for (at = 0; pod_at && at < nstore; at++) {
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(store[at], "kind"));
        const char *nm = cJSON_GetStringValue(
            cJSON_GetObjectItem(cJSON_GetObjectItem(store[at], "metadata"), "name"));
        if (kind && nm && !strcmp(kind, mode == 'v' ? "Event" : "Pod") &&
            !strncmp(nm, mode == 'v' ? "e-" : "pod-", mode == 'v' ? 2 : 4))
            pod_at[strtoul(nm + (mode == 'v' ? 2 : 4), NULL, 10) % pods] = at;
    }
    if (!pod_at) {
        fprintf(stderr, "event-bench: out of memory\n");
        exit(1);
    }

    memset(r, 0, sizeof(*r));
    r->pods = pods;
    r->objects = (size_t)cJSON_GetArraySize(all);
    t = cpu_now();
    full = build(NULL, store, nstore, cel, NULL);
    r->first = cpu_now() - t;
    t = cpu_now();
    for (at = 0; at < full->m.npods; at++) {
        struct diag_result dr;
        diag_pod_indexed(&full->m, &full->f, full->ix, full->m.pods[at], &dr);
    }
    r->every = cpu_now() - t;
    cur = build(NULL, store, nstore, cel, NULL);
    if (!full_chain) {
        snapshot_free(full);
        full = NULL;
    }
    if (mode == 'a') {
        const cJSON **v = realloc(store, (nstore + 3 * (size_t)events + 1) * sizeof(*v));
        if (!v) {
            fprintf(stderr, "event-bench: out of memory\n");
            exit(1);
        }
        store = v;
    }
    for (e = 0; e < events; e++) {
        /* A Pending pod (even index) somewhere in the cluster gets a new status (-v: a new Event;
         * -a: a new pod comes). */
        size_t i = mode == 'a' ? pods + (size_t)e : (((size_t)e * 7919) % pods) & ~(size_t)1;
        char name[64], ns[64];
        char *text;
        size_t len;
        FILE *b = stream(&text, &len);
        const struct dra_podspec *p;
        struct diag_result dr, df;
        struct snapshot *next;
        cJSON *it, *obj;
        double t0, t1;

        snprintf(name, sizeof(name), "pod-%zu", i);
        snprintf(ns, sizeof(ns), "ns-%zu", i % 50);
        it = NULL;
        if (mode == 'a') {
            fclose(b);
            free(text);
            add_pending(all, store, &nstore, i, pods);
        } else {
            if (mode == 'v')
                event(b, i, (size_t)e); /* a new message: "0/e nodes are available" */
            else
                pod(b, i, 0, 0, e + 1);
            obj = parsed(b, &text);
            at = pod_at[i];
            it = (cJSON *)store[at];
            /* The store replaces the object in its place; the old one lives as long as the
             * snapshots that hold it (the cache's graveyard). */
            splice(all, it, obj);
            store[at] = obj;
        }
        if (full_chain) {
            t0 = cpu_now();
            next = build(NULL, store, nstore, cel, NULL);
            snapshot_free(full);
            full = next;
            account(&r->full, full, cpu_now() - t0);
        }
        t0 = cpu_now();
        next = build(cur, store, nstore, cel, r->rule);
        t1 = cpu_now();
        if (!(p = snapshot_pod(next, ns, name))) {
            fprintf(stderr, "event-bench: the snapshot lost %s\n", name);
            exit(1);
        }
        /* What the controller does next: the pods the change may reach, then their diagnoses
         * (this pod's; those reached are rare on this cluster). */
        if (snapshot_affected_pods(cur, next, count_pod, &r->reached) < 0)
            exit(1);
        diag_pod_indexed(&next->m, &next->f, next->ix, p, &dr);
        r->diag += cpu_now() - t1;
        snapshot_free(cur);
        cur = next;
        account(&r->delta, cur, cpu_now() - t0);
        r->deltas += cur->steps.delta;
        /* The update must say what the full build says. */
        if (full_chain) {
            diag_pod_indexed(&full->m, &full->f, full->ix, snapshot_pod(full, ns, name), &df);
            if (snapshot_nfindings(cur) != snapshot_nfindings(full) ||
                strcmp(dr.list, df.list) || strcmp(dr.message, df.message)) {
                fprintf(stderr, "event-bench: the updated snapshot differs from the built one\n");
                exit(1);
            }
        }
        cJSON_Delete(it);
    }
    snapshot_free(cur);
    snapshot_free(full);
    free(pod_at);
    free(store);
    cJSON_Delete(all);
    dra_cel_cache_free(cel);
}

int main(int argc, char **argv)
{
    size_t sizes[8] = { 5000, 50000 }, nsizes = 0, i;
    static struct result r[8];
    size_t nrules, k, top[TOP] = { 0 };
    const struct dd_rule *rules = dd_rules(&nrules);
    int events = 20, full_chain = 1, mode = 'u', a;

    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-e") && a + 1 < argc) {
            events = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "-u")) {
            full_chain = 0;
        } else if (!strcmp(argv[a], "-a") || !strcmp(argv[a], "-v")) {
            mode = argv[a][1];
        } else if (argv[a][0] >= '1' && argv[a][0] <= '9' && nsizes < 8) {
            sizes[nsizes++] = (size_t)strtoul(argv[a], NULL, 10);
        } else {
            fprintf(stderr, "usage: event-bench [-e EVENTS] [-u] [-a|-v] PODS...\n");
            return 2;
        }
    }
    if (!nsizes)
        nsizes = 2;
    if (events < 1)
        events = 1;
    printf("%8s %9s %8s %8s | %8s %7s | %8s %7s %7s %7s %7s %7s %6s\n", "pods", "objects",
           "first s", "every s", "full ms", "ratio", "delta ms", "model", "rules", "index", "diag",
           "ratio", "reach");
    for (i = 0; i < nsizes; i++) {
        run(sizes[i], events, full_chain, mode, &r[i]);
        printf("%8zu %9zu %8.3f %8.3f | %8.2f %7.2f | %8.2f %7.2f %7.2f %7.2f %7.3f %7.2f %6.1f%s\n",
               r[i].pods, r[i].objects, r[i].first, r[i].every, 1e3 * r[i].full.total / events,
               r[0].full.total > 0 ? r[i].full.total / r[0].full.total : 0.0,
               1e3 * r[i].delta.total / events,
               1e3 * r[i].delta.model / events, 1e3 * r[i].delta.rules / events,
               1e3 * r[i].delta.index / events, 1e3 * r[i].diag / events,
               r[i].delta.total / r[0].delta.total, (double)r[i].reached / events,
               r[i].deltas == events ? "" : " (not all deltas)");
        fflush(stdout);
    }
    /* Where the largest size's rules spend it: the costliest. */
    for (a = 0; a < TOP; a++) {
        double best = -1;
        for (k = 0; k < nrules && k < MAX_RULES; k++) {
            int j, taken = 0;
            for (j = 0; j < a; j++)
                taken |= top[j] == k;
            if (!taken && r[nsizes - 1].rule[k] > best) {
                best = r[nsizes - 1].rule[k];
                top[a] = k;
            }
        }
    }
    printf("rules of the updates at %zu pods, ms per event (ratio to %zu pods):",
           r[nsizes - 1].pods, r[0].pods);
    for (k = 0; k < TOP; k++)
        printf(" %s %.2f (%.1f)", rules[top[k]].code, 1e3 * r[nsizes - 1].rule[top[k]] / events,
               r[0].rule[top[k]] > 0 ? r[nsizes - 1].rule[top[k]] / r[0].rule[top[k]] : 0.0);
    printf("\n");
    return 0;
}
