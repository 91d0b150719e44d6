/*
 * e2e_shapes.c - issue 21's eight allocation shapes, live: each shape of tests/data/lint/
 * alloc/<shape>/broken and its fixed twin (fixed/) is applied to the real control plane as a
 * cluster would hold it - its Nodes, the ResourceSlices a driver would publish, its
 * DeviceClasses, its ResourceClaimTemplates, then its Pod - and the real kube-scheduler's
 * verdict (PodScheduled=False "cannot allocate all claims" for a shape, bound for a twin) is
 * followed by what the deployed controller writes on the pod: a shape's root cause is
 * DevicesDoNotFit, its message naming each node and why it does not fit (the request,
 * constraint or count that fails), with the matching Event; a twin never gets DevicesDoNotFit,
 * and nothing else but the one finding the simulation earns (StaleResourceSlices: below).
 *
 * The manifests are the lint tests' own, read as they are; what the real cluster needs
 * beside them is added here (e2e/README.md): each Node's status (Ready, room for pods) as a
 * kubelet would report it - the Nodes are plain API objects, simulated: no kubelet, so a
 * twin's pod is bound but never started - and the pod's tolerations of the node lifecycle
 * controller's not-ready/unreachable taints, which such a Node gets.  Each case renames its
 * drivers and classes (`gpu.example.com` becomes `gpu.<case>.example.com`, in attribute
 * names and selectors alike): the real node's DRA example driver is `gpu.example.com` too,
 * and no case may see another's devices.  The cases run one after the other, each deleting
 * what it made before the next (its namespace goes in the background): a shape's message
 * names every node of the cluster, and one case's nodes must not crowd another's.
 */
#include "harness.h"

#include "apply.h"
#include "formats/json.h"
#include "formats/manifest.h"
#include "rules/diagnose.h"

#define ALLOC "tests/data/lint/alloc/"
#define WAIT_S 30
#define TWIN_QUIET_S 3 /* a twin's watch after binding: the controller answers within 1 s */
#define REPORTER "dra-doctor"
#define MAX_NODES 4

/* A shape, and what DevicesDoNotFit says of it live, beside each of its nodes' names: per
 * node, the reason, as lint says it but for the names of the claims (the resourceclaim
 * controller generates them from the templates, with a random suffix: the words leave them
 * out) and of the classes and drivers (the case's). */
static const struct shape {
    const char *dir;
    const char *words[5]; /* NULL-ended */
} shapes[] = {
    {"all-plus-another",
     {"apab-n1: claim ", "each of its requests has enough devices, but not all of them together"}},
    {"capacity-not-reached",
     {"cnrb-n1: claim ", ", request gpu asks for 1 device of class gpu.cnrb.example.com",
      "the node has 2 devices, 0 matching the request's selectors"}},
    {"class-keeps-two-of-four",
     {"cktofb-n1: claim ", ", request gpu asks for 3 devices of class gpu-a.cktofb.example.com",
      "the node has 4 devices, 2 accepted by the class"}},
    {"nic-pool-other-node",
     {"nponb-n1: claim ", ", request nic asks for 1 device of class nic.nponb.example.com",
      "nponb-n2: claim ", ", request gpu asks for 1 device of class gpu.nponb.example.com"}},
    {"pcie-root-not-shared",
     {"prnsb-n1: claim ",
      "each request has enough devices, but no set of them satisfies matchAttribute: "
      "gpu.prnsb.example.com/pcieRoot"}},
    {"two-claims-one-gpu-each-node",
     {"tcogenb-n1, tcogenb-n2: each of the pod's claims fits alone, but not all of them together"}},
    {"two-nodes-one-gpu-each",
     {"tnogeb-n1, tnogeb-n2: claim ", ", request gpu asks for 2 devices of class gpu.tnogeb.example.com",
      "the node has 1 device; 1 usable"}},
    {"two-requests-same-model",
     {"trsmb-n1, trsmb-n2: claim ",
      "each request has enough devices, but no set of them satisfies matchAttribute: "
      "gpu.trsmb.example.com/model"}},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* One case: a shape or its twin. */
struct run {
    const struct shape *s;
    int fixed;
    char name[96];                 /* "<shape>/broken" */
    char id[32];                   /* the prefix of its Nodes' names: "tnogeb" */
    char ns[64], pod[64];
    char nodes[MAX_NODES][64];
    size_t nnodes;
    struct made m;
};

static struct run runs[2 * NSHAPES];
static char namespaces[2 * NSHAPES][64];
static size_t nnamespaces;
static double t_start;

static void step(const struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void step(const struct run *r, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "  [%5.1f s] %s: ", now_s() - t_start, r->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- the case's objects ------------------------------------------------------------------- */

/* The case's manifests, loaded into set with its drivers and classes renamed; r->id, r->ns
 * and r->nodes filled. */
static void load(struct run *r, struct mf_set *set)
{
    char path[256], to[64];
    char *text, *renamed;
    size_t i;

    snprintf(path, sizeof(path), ALLOC "%s/%s/cluster.yaml", r->s->dir, r->fixed ? "fixed" : "broken");
    text = test_read_file(path);
    assert_int_equal(mf_load_buffer(set, path, text, strlen(text), NULL), DD_OK);
    /* The case's name: its Nodes' common prefix (apab-n1 -> apab), unique among the cases. */
    for (i = 0; i < set->n && strcmp(set->objs[i].kind, "Node"); i++)
        ;
    assert_true(i < set->n);
    snprintf(r->id, sizeof(r->id), "%.*s", (int)(strrchr(set->objs[i].name, '-') - set->objs[i].name),
             set->objs[i].name);
    mf_set_release(set);
    snprintf(to, sizeof(to), ".%s.example.com", r->id);
    renamed = replace(text, ".example.com", to);
    free(text);
    assert_int_equal(mf_load_buffer(set, path, renamed, strlen(renamed), NULL), DD_OK);
    free(renamed);
    r->nnodes = 0;
    for (i = 0; i < set->n; i++) {
        if (!strcmp(set->objs[i].kind, "Pod")) {
            snprintf(r->ns, sizeof(r->ns), "%s", set->objs[i].namespace_);
            snprintf(r->pod, sizeof(r->pod), "%s", set->objs[i].name);
        }
        if (!strcmp(set->objs[i].kind, "Node") && r->nnodes < MAX_NODES)
            snprintf(r->nodes[r->nnodes++], sizeof(r->nodes[0]), "%s", set->objs[i].name);
    }
    assert_true(*r->ns);
}

/* Creates what the cluster holds before the pod: the Namespace, then the set's objects kind
 * by kind (a slice's Node before it, a claim's class before it, ...), the Pod last. */
static void plant(struct run *r, const struct mf_set *set)
{
    static const struct {
        const char *kind, *group, *resource;
        int namespaced;
    } kinds[] = {
        {"Node", "", "nodes", 0},
        {"ResourceSlice", "resource.k8s.io", "resourceslices", 0},
        {"DeviceClass", "resource.k8s.io", "deviceclasses", 0},
        {"ResourceClaimTemplate", "resource.k8s.io", "resourceclaimtemplates", 1},
        {"ResourceClaim", "resource.k8s.io", "resourceclaims", 1},
        {"Pod", "", "pods", 1},
    };
    char why[2048] = "";
    size_t i, k, done = 0;
    cJSON *ns = cJSON_CreateObject();

    cJSON_AddStringToObject(cJSON_AddObjectToObject(ns, "metadata"), "name", r->ns);
    if (create(&r->m, "", "v1", "Namespace", "namespaces", NULL, ns, why, sizeof(why)))
        fail_msg("%s", why);
    cJSON_Delete(ns);
    snprintf(namespaces[nnamespaces++], sizeof(namespaces[0]), "%s", r->ns);
    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        for (i = 0; i < set->n; i++) {
            cJSON *o;
            double until = now_s() + 10;
            int rc;
            if (strcmp(set->objs[i].kind, kinds[k].kind))
                continue;
            o = cJSON_Duplicate(set->objs[i].json, 1);
            if (!strcmp(kinds[k].kind, "Node"))
                simulated_node_status(o, "a plain API object (e2e_shapes): no kubelet");
            if (!strcmp(kinds[k].kind, "Pod"))
                tolerate_simulated_nodes(cJSON_GetObjectItem(o, "spec"));
            /* The namespace's default ServiceAccount comes from a controller, a moment after
             * the namespace. */
            while ((rc = create(&r->m, kinds[k].group, "v1", kinds[k].kind, kinds[k].resource,
                                kinds[k].namespaced ? r->ns : NULL, o, why, sizeof(why))) &&
                   strstr(why, "service account") && now_s() < until)
                msleep(100);
            cJSON_Delete(o);
            if (rc)
                fail_msg("%s: refused by the API server: %s", r->name, why);
            done++;
        }
    /* Every object of the shape is applied: a kind this program does not know would be a
     * shape it only half builds. */
    assert_int_equal(done, set->n);
    step(r, "applied %zu objects in namespace %s (%zu simulated node(s))", done, r->ns, r->nnodes);
}

/* ---- what the cluster says -------------------------------------------------------------- */

static cJSON *get_pod(const struct run *r)
{
    char path[192];
    cJSON *pod = NULL;
    struct kube_status st;
    struct dd_err err;

    kube_path(path, sizeof(path), "", "v1", "pods", r->ns, r->pod, NULL);
    if (kube_get(kc, path, &pod, &st, &err) != DD_OK)
        return NULL;
    return pod;
}

static const char *annotation(const cJSON *pod, const char *key)
{
    return dd_json_str(pod, "metadata", "annotations", key, NULL);
}

/*
 * The scheduler's verdict on the pod: 1 bound (node filled), 0 unschedulable with "cannot
 * allocate all claims" (msg filled), -1 neither within WAIT_S (msg: the last condition).  A
 * pod whose claims are not generated yet has no verdict: the scheduler waits for them.
 */
static int verdict(const struct run *r, char *node, size_t nsize, char *msg, size_t msize)
{
    double end = now_s() + WAIT_S;

    snprintf(msg, msize, "(no PodScheduled condition)");
    for (;;) {
        cJSON *pod = get_pod(r);
        const cJSON *c;
        const char *bound = dd_json_str(pod, "spec", "nodeName", NULL);
        int unsched = 0;

        if (bound && *bound) {
            snprintf(node, nsize, "%s", bound);
            cJSON_Delete(pod);
            return 1;
        }
        cJSON_ArrayForEach(c, dd_json_path(pod, "status", "conditions", NULL))
            if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "type")), "PodScheduled") &&
                !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "status")), "False")) {
                const char *m = cJSON_GetStringValue(cJSON_GetObjectItem(c, "message"));
                snprintf(msg, msize, "%s: %s", cJSON_GetStringValue(cJSON_GetObjectItem(c, "reason")),
                         m ? m : "");
                unsched = m && strstr(m, "cannot allocate all claims");
            }
        cJSON_Delete(pod);
        if (unsched)
            return 0;
        if (now_s() > end)
            return -1;
        msleep(100);
    }
}

/* The pod's Events from dra-doctor's controller, as "reason: message" lines (a new string;
 * "" when none). */
static char *our_events(const struct run *r)
{
    char path[192], sel[128], *text = calloc(1, 1);
    size_t len = 0;
    cJSON *items = NULL, *e;
    struct kube_status st;
    struct dd_err err;

    assert_non_null(text);
    kube_path(path, sizeof(path), "", "v1", "events", r->ns, NULL, NULL);
    snprintf(sel, sizeof(sel), "fieldSelector=involvedObject.name%%3D%s", r->pod);
    if (kube_list(kc, path, sel, 0, &items, NULL, &st, &err) != DD_OK)
        fail_msg("%s: listing events: %s", r->name, st.message);
    cJSON_ArrayForEach(e, items) {
        const char *src = dd_json_str(e, "source", "component", NULL);
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(e, "reason"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(e, "message"));
        size_t n;
        if (!src || strcmp(src, REPORTER))
            continue;
        n = strlen(reason ? reason : "") + strlen(msg ? msg : "") + 4;
        text = realloc(text, len + n);
        assert_non_null(text);
        len += (size_t)snprintf(text + len, n, "%s: %s\n", reason ? reason : "", msg ? msg : "");
    }
    cJSON_Delete(items);
    return text;
}

/* The first word of the shape, or node of it, text does not say; NULL when it says all. */
static const char *unsaid(const struct run *r, const char *text)
{
    size_t i;

    for (i = 0; r->s->words[i]; i++)
        if (!text || !strstr(text, r->s->words[i]))
            return r->s->words[i];
    for (i = 0; i < r->nnodes; i++)
        if (!text || !strstr(text, r->nodes[i]))
            return r->nodes[i];
    return NULL;
}

/* What else the controller says of every case, and rightly: no kubelet plugin of the
 * case's drivers runs anywhere (no DaemonSet of them; the simulated nodes have no kubelet to
 * run one), so a pod sent to their devices would never be prepared. */
#define STALE "StaleResourceSlices"
#define STALE_WORDS "but no kubelet plugin of that driver is installed (no DaemonSet of it)"

/* A shape: the controller's root cause is DevicesDoNotFit, saying why of every node; so
 * does its Event. */
static void expect_diagnosis(const struct run *r, double t_verdict)
{
    double end = now_s() + WAIT_S;
    char root[64] = "", list[256] = "", *msg = NULL, *ev = NULL;

    for (;;) {
        cJSON *pod = get_pod(r);
        const char *a = annotation(pod, DIAG_ANN_ROOT_CAUSE), *l = annotation(pod, DIAG_ANN_FINDINGS);
        snprintf(root, sizeof(root), "%s", a ? a : "");
        snprintf(list, sizeof(list), "%s", l ? l : "");
        free(msg);
        msg = annotation(pod, DIAG_ANN_MESSAGE) ? strdup(annotation(pod, DIAG_ANN_MESSAGE)) : NULL;
        cJSON_Delete(pod);
        if (!strcmp(root, "DevicesDoNotFit") && !strcmp(list, "DevicesDoNotFit," STALE) &&
            !unsaid(r, msg))
            break;
        if (now_s() > end)
            fail_msg("%s: expected root cause DevicesDoNotFit [DevicesDoNotFit," STALE "] "
                     "saying \"%s\", have %s [%s]: %s", r->name, unsaid(r, msg) ? unsaid(r, msg) :
                     "", *root ? root : "(none)", list, msg ? msg : "");
        msleep(100);
    }
    step(r, "annotated %.1f s after the scheduler's verdict: %s [%s]", now_s() - t_verdict, root, list);
    step(r, "%s: %s", DIAG_ANN_MESSAGE, msg);
    /* The Event: one per change of diagnosis, its reason the code. */
    for (end = now_s() + WAIT_S;; msleep(100)) {
        const char *p;
        free(ev);
        ev = our_events(r);
        for (p = ev; (p = strstr(p, "DevicesDoNotFit: ")); p++)
            if (p == ev || p[-1] == '\n') {
                char line[4096];
                snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
                if (!unsaid(r, line))
                    break;
            }
        if (p)
            break;
        if (now_s() > end)
            fail_msg("%s: no DevicesDoNotFit Event from %s saying why; its Events: %s", r->name,
                     REPORTER, ev);
    }
    step(r, "Event DevicesDoNotFit from %s", REPORTER);
    free(msg);
    free(ev);
}

/* A twin: bound where its devices are, and nothing said of it but what the simulation
 * lacks (STALE, naming the case's driver) - neither now nor while it waited for its claims
 * (an Event would remain). */
static void expect_clean(const struct run *r, const char *node)
{
    char driver[96], *ev, *line, *save = NULL;
    const char *root, *list, *msg;
    size_t i;
    cJSON *pod;

    for (i = 0; i < r->nnodes && strcmp(r->nodes[i], node); i++)
        ;
    if (i == r->nnodes)
        fail_msg("%s: bound to %s, not a node of the case", r->name, node);
    msleep(TWIN_QUIET_S * 1000);
    pod = get_pod(r);
    assert_non_null(pod);
    root = annotation(pod, DIAG_ANN_ROOT_CAUSE);
    list = annotation(pod, DIAG_ANN_FINDINGS);
    msg = annotation(pod, DIAG_ANN_MESSAGE);
    snprintf(driver, sizeof(driver), "driver gpu.%s.example.com ", r->id);
    if (!root || strcmp(root, STALE) || !list || strcmp(list, STALE) || !msg ||
        !strstr(msg, STALE_WORDS) || !strstr(msg, driver))
        fail_msg("%s: the twin fits (bound to %s); dra-doctor must say only " STALE " of %s"
                 "(the simulation has no kubelet plugin), yet says: %s [%s] %s", r->name, node,
                 driver, root ? root : "-", list ? list : "", msg ? msg : "");
    ev = our_events(r);
    for (line = strtok_r(ev, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, STALE ": ", strlen(STALE) + 2))
            fail_msg("%s: the twin fits (bound to %s), yet dra-doctor's Event says: %s", r->name,
                     node, line);
    step(r, "%d s after binding: only %s [%s] (no plugin simulated), no other Event",
         TWIN_QUIET_S, root, list);
    free(ev);
    cJSON_Delete(pod);
}

/* ---- the tests -------------------------------------------------------------------------- */

static void shape_live(void **state)
{
    struct run *r = *state;
    struct mf_set set = MF_SET_INIT;
    char node[128] = "", msg[2048];
    double t0 = now_s();
    int v;

    load(r, &set);
    plant(r, &set);
    mf_set_release(&set);
    v = verdict(r, node, sizeof(node), msg, sizeof(msg));
    if (v < 0)
        fail_msg("%s: no verdict from the scheduler in %d s: %s", r->name, WAIT_S, msg);
    if (r->fixed) {
        if (v != 1)
            fail_msg("%s: the twin must fit; the scheduler: %s", r->name, msg);
        step(r, "the scheduler bound it to %s in %.1f s", node, now_s() - t0);
        expect_clean(r, node);
    } else {
        if (v != 0)
            fail_msg("%s: the shape must not fit; the scheduler bound it to %s", r->name, node);
        step(r, "the scheduler in %.1f s: %s", now_s() - t0, msg);
        expect_diagnosis(r, now_s());
    }
}

static int case_teardown(void **state)
{
    struct run *r = *state;

    delete_all(&r->m);
    return 0;
}

/* What the cases made is gone: their namespaces last (the claims' finalizers are the
 * resourceclaim controller's), everything else was deleted at once. */
static void nothing_left(void **state)
{
    size_t left = namespaces_left(namespaces[0], sizeof(namespaces[0]), nnamespaces, 60);

    (void)state;
    if (left)
        fail_msg("%zu namespace(s) of the cases still there after 60 s", left);
    fprintf(stderr, "  [%5.1f s] %zu cases, their namespaces gone\n", now_s() - t_start, nnamespaces);
}

int main(void)
{
    struct CMUnitTest tests[2 * NSHAPES + 1];
    const char *only = getenv("DD_SHAPES_ONLY");
    size_t i, n = 0;

    t_start = now_s();
    for (i = 0; i < 2 * NSHAPES; i++) {
        struct run *r = &runs[i];
        if (only && strcmp(only, shapes[i / 2].dir))
            continue;
        r->s = &shapes[i / 2];
        r->fixed = (int)(i % 2);
        snprintf(r->name, sizeof(r->name), "%s/%s", r->s->dir, r->fixed ? "fixed" : "broken");
        tests[n++] = (struct CMUnitTest){r->name, shape_live, NULL, case_teardown, r};
    }
    tests[n++] = (struct CMUnitTest){"nothing_left", nothing_left, NULL, NULL, NULL};
    return _cmocka_run_group_tests("e2e-shapes", tests, n, apply_setup, apply_teardown);
}
