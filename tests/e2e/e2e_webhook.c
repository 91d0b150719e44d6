/*
 * e2e_webhook.c - the admission webhook as deploy/ installs it: two pods on the real
 * node behind the Service dra-doctor-webhook, which the API server calls at the pods'
 * IPs (--enable-aggregator-routing), registered by the ValidatingWebhookConfiguration
 * dra-doctor whose caBundle and Secret the certs Job wrote:
 *   - the seed's typo DeviceClass is denied with the did-you-mean; the
 *     correct one is admitted; --dry-run=server gives the same verdicts;
 *   - the second claim gets dra-doctor's quota warning, then the real quota
 *     admission refuses it; a Pod whose template claim would exceed the quota
 *     gets the warning;
 *   - a DeviceClass and the claim and template using it, in one
 *     `kubectl apply -f`, are not warned that the class does not exist (its
 *     creation reaches the webhook before a view holding it does);
 *   - certificates rotate (`dra-doctor certs` as the certs Job runs it, under its
 *     ServiceAccount: a new serving certificate in the Secret, which the kubelet
 *     updates in the pods' volume, then a new CA through the caBundle) while a load
 *     runs through the API server: zero failures;
 *   - failover: one pod deleted while a load runs through the API server: zero
 *     failures (its /readyz fails for --shutdown-delay, it is taken out of the
 *     Service's endpoints, it drains); one pod's process SIGKILLed: requests fail
 *     only until the kubelet has seen it die, and it comes back;
 *   - SIGTERM (the pod deleted) while a load runs against that pod: every request
 *     started before the signal is answered.
 * Needs scripts/e2e.sh's environment (KUBECONFIG, DD_CLUSTER_DIR, DD_BIN).
 */
#include "harness.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "formats/json.h"
#include "client/kube.h"
#include "formats/manifest.h"

#define VWC "dra-doctor"
#define NS "wh-test"
#define SVC_HOST "dra-doctor-webhook.dra-doctor.svc"
#define WAIT_S 120

static char bin[1024], dir[256], certs_kcfg[512];

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The webhook's pods: name, IP, containerd container id. */
struct wh_pod {
    char name[128], ip[64], container[80];
};

static int wh_pods(struct wh_pod *p, int max, int ready_only)
{
    cJSON *o, *it;
    int n = 0;

    if (sh("kubectl get pods -n dra-doctor -l app.kubernetes.io/component=webhook -o json "
           "2>/dev/null") || !(o = cJSON_Parse(out)))
        return 0;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, "items")) {
        const cJSON *st = cJSON_GetObjectItem(it, "status"), *cs, *c;
        const char *name = dd_json_str(it, "metadata", "name", NULL);
        const char *ip = dd_json_str(st, "podIP", NULL), *cid;
        int ready = 0;
        if (!name || !ip || n == max || dd_json_path(it, "metadata", "deletionTimestamp", NULL))
            continue;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(st, "conditions"))
            ready |= !strcmp(dd_json_str(c, "type", NULL) ? dd_json_str(c, "type", NULL) : "",
                             "Ready") &&
                     !strcmp(dd_json_str(c, "status", NULL) ? dd_json_str(c, "status", NULL) : "",
                             "True");
        if (ready_only && !ready)
            continue;
        cs = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "containerStatuses"), 0);
        cid = dd_json_str(cs, "containerID", NULL);
        snprintf(p[n].name, sizeof(p[n].name), "%s", name);
        snprintf(p[n].ip, sizeof(p[n].ip), "%s", ip);
        snprintf(p[n].container, sizeof(p[n].container), "%s",
                 cid && !strncmp(cid, "containerd://", 13) ? cid + 13 : "");
        n++;
    }
    cJSON_Delete(o);
    return n;
}

/* The CA the webhook's serving certificate chains to, from the certs Job's Secret. */
static void fetch_ca(void)
{
    if (sh("kubectl get secret -n dra-doctor dra-doctor-webhook-tls "
           "-o jsonpath='{.data.ca\\.crt}' | base64 -d >%s/ca.crt 2>&1", dir))
        fail_msg("no CA in Secret dra-doctor-webhook-tls: %s", out);
}

/* Waits until the Deployment has two ready pods again. */
static void wait_two_ready(void)
{
    double end = now_s() + WAIT_S;
    struct wh_pod p[4];

    while (wh_pods(p, 4, 1) != 2) {
        if (now_s() > end)
            fail_msg("the webhook Deployment has not two ready pods");
        usleep(250000);
    }
}


static void write_file(const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_non_null(f = fopen(path, "w"));
    fputs(text, f);
    fclose(f);
}

/* A metric of the webhook pod at ip (its certificate names the Service, not the IP). */
static long metric(const char *ip, const char *name)
{
    char *p;

    if (sh("curl -s --max-time 2 --cacert %s/ca.crt --resolve " SVC_HOST ":8443:%s "
           "https://" SVC_HOST ":8443/metrics", dir, ip))
        return -1;
    for (p = out; (p = strstr(p, name)); p++)
        if ((p == out || p[-1] == '\n') && p[strlen(name)] == ' ')
            return strtol(p + strlen(name) + 1, NULL, 10);
    return -1;
}

static const char slice[] =
    "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: wh-slice\n"
    "spec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool:\n    name: wh-pool\n"
    "    generation: 1\n    resourceSliceCount: 1\n  devices:\n"
    "  - name: wh-0\n    attributes:\n      model: {string: WH-GPU}\n"
    "  - name: wh-1\n    attributes:\n      model: {string: WH-GPU}\n";

static const char typo_class[] =
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: wh-gpu\nspec:\n"
    "  selectors:\n  - cel:\n      expression: device.driver == 'gpu.exmaple.com'\n";

static const char good_class[] =
    "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: wh-gpu\nspec:\n"
    "  selectors:\n  - cel:\n      expression: device.driver == 'gpu.example.com'\n";

static const char setup_yaml[] =
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " NS "\n---\n"
    "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: wh-quota\n  namespace: " NS "\n"
    "spec:\n  hard:\n    wh-gpu.deviceclass.resource.k8s.io/devices: \"1\"\n";

#define CLAIM(name)                                                                           \
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: " name "\n"      \
    "  namespace: " NS "\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n" \
    "        deviceClassName: wh-gpu\n"

static const char template_yaml[] =
    "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: one-gpu\n"
    "  namespace: " NS "\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n"
    "        exactly:\n          deviceClassName: wh-gpu\n";

static const char pod_yaml[] =
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: wh-pod\n  namespace: " NS "\nspec:\n"
    "  containers:\n  - name: c\n    image: busybox\n    resources:\n      claims:\n"
    "      - name: gpu\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: one-gpu\n";

static int setup(void **state)
{
    const char *b = getenv("DD_BIN"), *c = getenv("DD_CLUSTER_DIR"), *k = getenv("KUBECONFIG");

    (void)state;
    if (!b || !c || !k) {
        fprintf(stderr, "e2e_webhook: run me through scripts/e2e.sh\n");
        return -1;
    }
    snprintf(bin, sizeof(bin), "%s", b);
    snprintf(dir, sizeof(dir), "/tmp/dd-e2e-wh-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    /* The certs Job's identity, for rotating as its CronJob would. */
    snprintf(certs_kcfg, sizeof(certs_kcfg), "%s/certs.kubeconfig", dir);
    if (sh("kubectl create token dra-doctor-certs -n dra-doctor --duration=1h >%s/token 2>&1 && "
           "kubectl config view --raw --minify >%s && "
           "KUBECONFIG=%s kubectl config set-credentials certs --token=\"$(cat %s/token)\" "
           ">/dev/null && KUBECONFIG=%s kubectl config set-context --current --user=certs "
           ">/dev/null 2>&1", dir, certs_kcfg, certs_kcfg, dir, certs_kcfg)) {
        fprintf(stderr, "certs kubeconfig: %s\n", out);
        return -1;
    }
    write_file("slice.yaml", slice);
    write_file("setup.yaml", setup_yaml);
    write_file("typo.yaml", typo_class);
    write_file("good.yaml", good_class);
    write_file("claim1.yaml", CLAIM("first"));
    write_file("claim2.yaml", CLAIM("second"));
    write_file("template.yaml", template_yaml);
    write_file("pod.yaml", pod_yaml);
    if (sh("kubectl apply -f %s/slice.yaml -f %s/setup.yaml 2>&1", dir, dir)) {
        fprintf(stderr, "setup: %s\n", out);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("kubectl delete namespace " NS " --wait=false --ignore-not-found 2>&1");
    sh("kubectl delete resourceslice wh-slice deviceclass wh-gpu --ignore-not-found 2>&1");
    sh("kubectl delete deviceclass wh-pre-0 wh-pre-1 wh-pre-2 wh-new-0 wh-new-1 wh-new-2 "
       "--ignore-not-found 2>&1");
    sh("rm -rf %s", dir);
    return 0;
}

static void test_typo_denied_good_admitted(void **state)
{
    int i, rc = 0;

    (void)state;
    for (i = 0; i < 60; i++) {
        rc = sh("kubectl create --dry-run=server -f %s/typo.yaml 2>&1", dir);
        if (rc && strstr(out, "denied the request"))
            break;
        usleep(250000);
    }
    assert_int_not_equal(rc, 0);
    assert_contains(out, "admission webhook \"deviceclasses.dra-doctor.io\" denied the request");
    assert_contains(out, "requires device.driver == 'gpu.exmaple.com'");
    assert_contains(out, "Did you mean 'gpu.example.com'?");

    assert_int_not_equal(sh("kubectl apply -f %s/typo.yaml 2>&1", dir), 0);
    assert_contains(out, "Did you mean 'gpu.example.com'?");
    assert_int_not_equal(sh("kubectl get deviceclass wh-gpu 2>&1"), 0);
    assert_contains(out, "NotFound");

    assert_int_equal(sh("kubectl apply --dry-run=server -f %s/good.yaml 2>&1", dir), 0);
    assert_int_equal(sh("kubectl apply -f %s/good.yaml 2>&1", dir), 0);
    assert_contains(out, "deviceclass.resource.k8s.io/wh-gpu created");
    assert_null(strstr(out, "Warning"));
}

static void test_quota_warning_then_denial(void **state)
{
    const char *want = "Warning: QuotaExceeded: ResourceQuota wh-quota allows 1 wh-gpu devices, "
                       "1 in use, and claim second needs 1";
    int i;

    (void)state;
    /* No wait for the class the previous test created: a view may not hold it yet, but the
     * webhook knows it was created. */
    assert_int_equal(sh("kubectl apply -f %s/claim1.yaml 2>&1", dir), 0);
    assert_null(strstr(out, "Warning"));
    /* The quota's status.used reaches the webhook's cache through a watch. */
    for (i = 0; i < 40; i++) {
        sh("kubectl create --dry-run=server -f %s/claim2.yaml 2>&1", dir);
        if (strstr(out, want))
            break;
        usleep(250000);
    }
    assert_contains(out, want);
    assert_contains(out, "exceeded quota: wh-quota");
    /* The real thing: our warning first, then the quota admission's refusal. */
    assert_int_not_equal(sh("kubectl apply -f %s/claim2.yaml 2>&1", dir), 0);
    assert_contains(out, want);
    assert_contains(out, "forbidden: exceeded quota: wh-quota");
    assert_true(strstr(out, want) < strstr(out, "exceeded quota"));
    assert_int_not_equal(sh("kubectl get resourceclaim second -n " NS " 2>&1"), 0);
}

static void test_pod_template_warning(void **state)
{
    const char *want = "Warning: QuotaExceeded: ResourceQuota wh-quota allows 1 wh-gpu devices, "
                       "1 in use, and Pod wh-pod needs 1";
    int i;

    (void)state;
    /* The template first: the pod's review reads it from the cache.  A template costs no
     * quota until a pod makes claims from it, so it is not warned about. */
    assert_int_equal(sh("kubectl apply -f %s/template.yaml 2>&1", dir), 0);
    assert_null(strstr(out, "Warning: QuotaExceeded"));
    for (i = 0; i < 40; i++) {
        sh("kubectl create --dry-run=server -f %s/pod.yaml 2>&1", dir);
        if (strstr(out, want))
            break;
        usleep(250000);
    }
    assert_contains(out, want);
    /* Created for real, the pod gets the same warning; KCM's claim for it is then refused. */
    assert_int_equal(sh("kubectl apply -f %s/pod.yaml 2>&1", dir), 0);
    assert_contains(out, want);
    sh("kubectl get pod wh-pod -n " NS " -o name 2>&1");
    assert_contains(out, "pod/wh-pod");
    sh("kubectl delete pod wh-pod -n " NS " --wait=false 2>&1");
}

#define NEW_ROUNDS 3 /* the names below and in teardown: wh-pre-0..2, wh-new-0..2 */

/*
 * `kubectl apply -f dir/` of classes and the claims using them: each object is created as
 * soon as the previous one is, long before the webhook's next view (the first class starts
 * a build, after which the builder rests BUILD_MIN_MS), so the claim and the template are
 * judged against a view without their class.  The class's creation reached the webhook's
 * informer, though: no DeviceClassNotFound.  Several rounds, each with classes of its own.
 */
static void test_new_class_and_claim_together(void **state)
{
    char yaml[8192];
    int i;

    (void)state;
    for (i = 0; i < NEW_ROUNDS; i++) {
        snprintf(yaml, sizeof(yaml),
                 "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: wh-pre-%d\n"
                 "spec:\n  selectors:\n  - cel:\n"
                 "      expression: device.driver == 'gpu.example.com'\n"
                 "---\n"
                 "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: wh-new-%d\n"
                 "spec:\n  selectors:\n  - cel:\n"
                 "      expression: device.driver == 'gpu.example.com'\n"
                 "---\n"
                 "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n"
                 "  name: new-%d\n  namespace: " NS "\nspec:\n  spec:\n    devices:\n"
                 "      requests:\n      - name: gpu\n        exactly:\n"
                 "          deviceClassName: wh-new-%d\n"
                 "---\n"
                 "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: new-%d\n"
                 "  namespace: " NS "\nspec:\n  devices:\n    requests:\n    - name: gpu\n"
                 "      exactly:\n        deviceClassName: wh-new-%d\n",
                 i, i, i, i, i, i);
        write_file("new.yaml", yaml);
        assert_int_equal(sh("kubectl apply -f %s/new.yaml 2>&1", dir), 0);
        assert_contains(out, "resourceclaim.resource.k8s.io/new-");
        assert_contains(out, "resourceclaimtemplate.resource.k8s.io/new-");
        if (strstr(out, "Warning"))
            fail_msg("round %d: unexpected warning:\n%s", i, out);
    }
    /* A claim naming a class nobody created is still warned about. */
    write_file("none.yaml", "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n"
                            "  name: none\n  namespace: " NS "\nspec:\n  devices:\n"
                            "    requests:\n    - name: gpu\n      exactly:\n"
                            "        deviceClassName: wh-none\n");
    assert_int_equal(sh("kubectl create --dry-run=server -f %s/none.yaml 2>&1", dir), 0);
    assert_contains(out, "Warning: DeviceClassNotFound: ");
    assert_contains(out, "wh-none");
    sh("kubectl delete deviceclass wh-pre-0 wh-pre-1 wh-pre-2 wh-new-0 wh-new-1 wh-new-2 "
       "--ignore-not-found 2>&1");
    sh("kubectl delete resourceclaim,resourceclaimtemplate -n " NS " new-0 new-1 new-2 "
       "--ignore-not-found 2>&1");
}

/*
 * Vendors' own charts (../shared/corpus/real/helm-rendered: eleven drivers' charts rendered with
 * their default values), each applied whole in one `kubectl apply` through the webhook, as a
 * user installs it: DaemonSet, RBAC and DeviceClasses together, before any slice exists.  No
 * class may be denied, and every resource.k8s.io/v1 class must exist afterwards (a chart's
 * class in a version 1.36 does not serve, AMD's v1beta1, fails in the API server, not here).
 */
#define CHARTS "../shared/corpus/real/helm-rendered"

static void test_vendor_charts_admitted(void **state)
{
    char files[8192], *file, *save = NULL;
    size_t nfiles = 0, nclasses = 0, i;

    (void)state;
    if (access(CHARTS, R_OK)) {
        print_message("skipped: %s is not here (CI has it)\n", CHARTS);
        skip();
    }
    assert_int_equal(sh("find " CHARTS " -name rendered.yaml | sort"), 0);
    snprintf(files, sizeof(files), "%.8000s", out);
    for (file = strtok_r(files, "\n", &save); file; file = strtok_r(NULL, "\n", &save)) {
        struct mf_set set = MF_SET_INIT;
        char nss[2048] = "", classes[2048] = "";
        mf_set_init(&set);
        assert_int_not_equal(mf_load_path(&set, file, NULL), DD_ENOMEM);
        for (i = 0; i < set.n; i++) {
            const struct mf_object *o = &set.objs[i];
            if (*o->namespace_ && !strstr(nss, o->namespace_))
                snprintf(nss + strlen(nss), sizeof(nss) - strlen(nss), " %s", o->namespace_);
            if (!strcmp(o->kind, "DeviceClass") && !strcmp(o->api_version, "resource.k8s.io/v1"))
                snprintf(classes + strlen(classes), sizeof(classes) - strlen(classes), " %s",
                         o->name);
        }
        mf_set_release(&set);
        /* helm install --create-namespace makes the release's namespace first. */
        if (*nss)
            sh("for n in%s; do kubectl create namespace $n; done 2>&1", nss);
        sh("kubectl apply -f %s 2>&1", file);
        if (strstr(out, "denied the request"))
            fail_msg("%s: a class was denied:\n%s", file, out);
        if (*classes) {
            if (sh("kubectl get deviceclass%s -o name 2>&1", classes))
                fail_msg("%s: classes%s not all created:\n%s", file, classes, out);
            for (const char *c = classes; *c; c++)
                nclasses += *c == ' ';
        }
        /* The drivers' DaemonSets would run on the simulated node: take the chart away. */
        sh("kubectl delete -f %s --ignore-not-found --wait=false 2>&1", file);
        nfiles++;
    }
    print_message("%zu charts applied through the webhook, %zu DeviceClasses admitted\n", nfiles,
                  nclasses);
    assert_true(nfiles >= 11);
    assert_true(nclasses >= 12);
}

/* ---- load ---------------------------------------------------------------------- */

struct load {
    atomic_int stop;
    atomic_long ok, failed;
    double sigterm_at;        /* SIGTERM test: when the signal was sent (0 before) */
    atomic_long failed_before; /* requests started before the signal that failed */
    char last_error[512];
    pthread_mutex_t mu;
};

static void load_fail(struct load *l, const char *what)
{
    pthread_mutex_lock(&l->mu);
    snprintf(l->last_error, sizeof(l->last_error), "%.500s", what);
    pthread_mutex_unlock(&l->mu);
}

/* Dry-run DeviceClass creations through the API server, which calls the webhook. */
static void *api_load(void *arg)
{
    struct load *l = arg;
    struct kube_config cfg;
    struct kube_client *c;
    struct dd_err err;
    cJSON *obj = cJSON_Parse("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                             "\"metadata\":{\"generateName\":\"wh-load-\"},\"spec\":{\"selectors\":"
                             "[{\"cel\":{\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}");

    dd_err_clear(&err);
    if (kube_config_load(&cfg, NULL, NULL, &err) != DD_OK || !(c = kube_client_new(&cfg, NULL, &err))) {
        load_fail(l, err.msg);
        atomic_fetch_add(&l->failed, 1);
        cJSON_Delete(obj);
        return NULL;
    }
    while (!atomic_load(&l->stop)) {
        struct kube_status st;
        cJSON *res = NULL;
        if (kube_create(c, "/apis/resource.k8s.io/v1/deviceclasses?dryRun=All", obj, &res, &st,
                        &err) == DD_OK) {
            atomic_fetch_add(&l->ok, 1);
        } else {
            char msg[1200];
            snprintf(msg, sizeof(msg), "HTTP %ld: %s", st.http, st.message);
            load_fail(l, msg);
            atomic_fetch_add(&l->failed, 1);
        }
        cJSON_Delete(res);
    }
    kube_client_free(c);
    kube_config_release(&cfg);
    cJSON_Delete(obj);
    return NULL;
}

/* Sum of a metric over the ready webhook pods, -1 when one does not answer. */
static long metric_all(const char *name, int *npods)
{
    struct wh_pod p[4];
    int n = wh_pods(p, 4, 1), i;
    long sum = 0, v;

    *npods = n;
    for (i = 0; i < n; i++) {
        if ((v = metric(p[i].ip, name)) < 0)
            return -1;
        sum += v;
    }
    return sum;
}

/* `dra-doctor certs` with the Job's arguments and extra ones, as its ServiceAccount. */
static void certs(const char *extra)
{
    if (sh("%s certs --service dra-doctor-webhook --namespace dra-doctor "
           "--secret dra-doctor/dra-doctor-webhook-tls --webhook-config " VWC " %s "
           "--kubeconfig %s 2>&1", bin, extra, certs_kcfg))
        fail_msg("dra-doctor certs %s: %s", extra, out);
}

/* Waits until every ready webhook pod has reloaded its certificate: the kubelet puts the
 * Secret's new content in their volume on its next sync of the pod. */
static void wait_reloads(long before, int npods)
{
    double end = now_s() + WAIT_S, t0 = now_s();
    int n;

    while (metric_all("dra_doctor_webhook_cert_reloads_total", &n) < before + npods) {
        if (now_s() > end)
            fail_msg("the webhook pods did not reload the new certificate within %d s", WAIT_S);
        usleep(250000);
    }
    fprintf(stderr, "  both pods reloaded the new certificate %.1f s after the Secret changed\n",
            now_s() - t0);
}

static void start_load(struct load *l, pthread_t *t, int n)
{
    int i;

    memset(l, 0, sizeof(*l));
    pthread_mutex_init(&l->mu, NULL);
    for (i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, api_load, l), 0);
}

static void stop_load(struct load *l, pthread_t *t, int n, const char *what)
{
    int i;

    atomic_store(&l->stop, 1);
    for (i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "%s: %ld requests through the API server, %ld failed%s%s\n", what,
            atomic_load(&l->ok), atomic_load(&l->failed), l->last_error[0] ? ": " : "",
            l->last_error);
}

static void test_rotation_under_load(void **state)
{
    struct load l;
    pthread_t t[2];
    long before;
    int npods;

    (void)state;
    fetch_ca();
    wait_two_ready();
    before = metric_all("dra_doctor_webhook_cert_reloads_total", &npods);
    assert_true(before >= 0);
    assert_int_equal(npods, 2);
    start_load(&l, t, 2);
    sleep(1);
    /* A new serving certificate from the same CA. */
    certs("--force");
    wait_reloads(before, npods);
    sleep(1);
    /* A new CA: the bundle (new + old) reaches the API server before the new certificate is
     * served. */
    before = metric_all("dra_doctor_webhook_cert_reloads_total", &npods);
    certs("--new-ca --propagation-delay 3");
    fetch_ca();
    wait_reloads(before, npods);
    sleep(2);
    stop_load(&l, t, 2, "rotation under load");
    assert_int_equal(atomic_load(&l.failed), 0);
    assert_true(atomic_load(&l.ok) > 50);
    /* The new CA is in the bundle, and so is the old one during the overlap. */
    assert_int_equal(sh("kubectl get validatingwebhookconfiguration " VWC " -o "
                        "jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d | "
                        "grep -c 'BEGIN CERTIFICATE'"), 0);
    assert_int_equal(atoi(out), 2);
    pthread_mutex_destroy(&l.mu);
}

/*
 * Failover through the API server: DeviceClass requests, which fail closed, while one pod
 * is deleted (a rolling update's or a drained node's way) and while another's process is
 * SIGKILLed (a crash).
 */
static void test_failover(void **state)
{
    struct load l;
    pthread_t t[2];
    struct wh_pod p[4];
    double t0, back;
    long ok;

    (void)state;
    fetch_ca();
    wait_two_ready();
    assert_int_equal(wh_pods(p, 4, 1), 2);
    start_load(&l, t, 2);
    sleep(2);
    /* Graceful: /readyz fails at once (--shutdown-delay), the endpoint goes, then it drains. */
    if (sh("kubectl delete pod -n dra-doctor %s --wait=true --timeout=60s 2>&1", p[0].name))
        fail_msg("delete webhook pod %s: %s", p[0].name, out);
    wait_two_ready();
    sleep(2);
    stop_load(&l, t, 2, "webhook pod deleted under load");
    assert_int_equal(atomic_load(&l.failed), 0);
    assert_true(atomic_load(&l.ok) > 50);
    pthread_mutex_destroy(&l.mu);

    /* A crash: requests fail only until the kubelet has seen the process die. */
    assert_int_equal(wh_pods(p, 4, 1), 2);
    start_load(&l, t, 2);
    sleep(1);
    if (sh("e2e/cluster ctr -n k8s.io task kill -s SIGKILL %s 2>&1", p[1].container))
        fail_msg("kill webhook container of %s: %s", p[1].name, out);
    t0 = now_s();
    /* Let the kubelet notice, then count only what fails from now on. */
    while (wh_pods(p, 4, 1) > 1 && now_s() - t0 < 20)
        usleep(100000);
    back = now_s() - t0;
    sleep(1);
    ok = atomic_load(&l.ok);
    fprintf(stderr, "  webhook pod %s SIGKILLed: out of the endpoints after %.1f s, %ld requests "
            "failed meanwhile%s%s\n", p[1].name, back, atomic_load(&l.failed),
            l.last_error[0] ? ": " : "", l.last_error);
    atomic_store(&l.failed, 0);
    l.last_error[0] = '\0';
    sleep(4);
    stop_load(&l, t, 2, "after the crash, with one pod left");
    assert_int_equal(atomic_load(&l.failed), 0);
    assert_true(atomic_load(&l.ok) > ok);
    wait_two_ready(); /* the kubelet restarted it */
    pthread_mutex_destroy(&l.mu);
}

static const char review_body[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":"
    "\"e2e\",\"kind\":{\"group\":\"resource.k8s.io\",\"version\":\"v1\",\"kind\":\"DeviceClass\"},"
    "\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
    "\"DeviceClass\",\"metadata\":{\"name\":\"x\"},\"spec\":{\"selectors\":[{\"cel\":{"
    "\"expression\":\"device.driver == 'gpu.example.com'\"}}]}}}}";

static size_t discard(char *p, size_t s, size_t n, void *u)
{
    (void)p;
    (void)u;
    return s * n;
}

static char direct_ip[64];

/* Keep-alive HTTPS requests straight to one webhook pod until it is gone. */
static void *direct_load(void *arg)
{
    struct load *l = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json"), *res;
    char ca[300], resolve[128];
    double deadline = 0;

    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    snprintf(resolve, sizeof(resolve), SVC_HOST ":8443:%s", direct_ip);
    res = curl_slist_append(NULL, resolve);
    curl_easy_setopt(c, CURLOPT_URL, "https://" SVC_HOST ":8443/validate");
    curl_easy_setopt(c, CURLOPT_RESOLVE, res);
    curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, review_body);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    for (;;) {
        double start = now_s(), sig;
        long code = 0;
        CURLcode rc = curl_easy_perform(c);

        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        pthread_mutex_lock(&l->mu);
        sig = l->sigterm_at;
        pthread_mutex_unlock(&l->mu);
        if (rc == CURLE_OK && code == 200) {
            atomic_fetch_add(&l->ok, 1);
        } else {
            atomic_fetch_add(&l->failed, 1);
            if (!sig || start < sig) {
                char msg[300];
                atomic_fetch_add(&l->failed_before, 1);
                snprintf(msg, sizeof(msg), "curl %d (%s), HTTP %ld", (int)rc, curl_easy_strerror(rc),
                         code);
                load_fail(l, msg);
            }
            if (sig)
                break; /* refused after the signal: the server is going away, as asked */
        }
        if (sig && !deadline)
            deadline = sig + 40;
        if (deadline && now_s() > deadline)
            break;
    }
    curl_slist_free_all(h);
    curl_slist_free_all(res);
    curl_easy_cleanup(c);
    return NULL;
}

/* The pod deleted (the kubelet's SIGTERM) while requests run straight at it: every request
 * started before the deletion is answered, then it drains and exits. */
static void test_sigterm_drains(void **state)
{
    struct load l;
    pthread_t t[4];
    struct wh_pod p[4];
    long ok_before;
    int i;

    (void)state;
    fetch_ca();
    wait_two_ready();
    assert_int_equal(wh_pods(p, 4, 1), 2);
    snprintf(direct_ip, sizeof(direct_ip), "%s", p[0].ip);
    /* Its log, followed until the container exits (the pod's log goes with the pod). */
    sh("kubectl logs -f -n dra-doctor %s >%s/wh.log 2>&1 & echo $!", p[0].name, dir);
    memset(&l, 0, sizeof(l));
    pthread_mutex_init(&l.mu, NULL);
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, direct_load, &l), 0);
    sleep(2);
    ok_before = atomic_load(&l.ok);
    pthread_mutex_lock(&l.mu);
    l.sigterm_at = now_s();
    pthread_mutex_unlock(&l.mu);
    if (sh("kubectl delete pod -n dra-doctor %s --wait=false 2>&1", p[0].name))
        fail_msg("delete %s: %s", p[0].name, out);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    sh("kubectl wait --for=delete pod -n dra-doctor %s --timeout=60s 2>&1", p[0].name);
    fprintf(stderr, "SIGTERM under load: %ld answered before the signal, %ld in all, %ld failed "
            "that had started before it%s%s\n", ok_before, atomic_load(&l.ok),
            atomic_load(&l.failed_before), l.last_error[0] ? ": " : "", l.last_error);
    assert_true(ok_before > 50);
    assert_int_equal(atomic_load(&l.failed_before), 0);
    sh("cat %s/wh.log", dir);
    assert_contains(out, "draining");
    wait_two_ready();
    pthread_mutex_destroy(&l.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typo_denied_good_admitted),
        cmocka_unit_test(test_quota_warning_then_denial),
        cmocka_unit_test(test_pod_template_warning),
        cmocka_unit_test(test_new_class_and_claim_together),
        cmocka_unit_test(test_vendor_charts_admitted),
        cmocka_unit_test(test_rotation_under_load),
        cmocka_unit_test(test_failover),
        cmocka_unit_test(test_sigterm_drains),
    };

    curl_global_init(CURL_GLOBAL_DEFAULT);
    return cmocka_run_group_tests_name("e2e_webhook", tests, setup, teardown);
}
