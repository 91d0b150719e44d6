/*
 * e2e_webhook.c - the admission webhook registered in the real kube-apiserver
 * (URL clientConfig to 127.0.0.1, caBundle from `dra-doctor certs`):
 *   - the seed's typo DeviceClass is denied with the did-you-mean; the
 *     correct one is admitted; --dry-run=server gives the same verdicts;
 *   - the second claim gets dra-doctor's quota warning, then the real quota
 *     admission refuses it; a Pod whose template claim would exceed the quota
 *     gets the warning;
 *   - a DeviceClass and the claim and template using it, in one
 *     `kubectl apply -f`, are not warned that the class does not exist (its
 *     creation reaches the webhook before a view holding it does);
 *   - certificates rotate (serving certificate, then a new CA through the
 *     caBundle) while a load runs through the API server: zero failures;
 *   - SIGTERM while a load runs against the webhook: every request started
 *     before the signal is answered.
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
#include "json.h"
#include "kube.h"
#include "manifest.h"

#define VWC "dra-doctor-e2e"
#define NS "wh-test"

static char bin[1024], dir[256], kcfg[2048], cluster[1024];
static int port;
static long wh_pid;

/* 1 while pid runs (a zombie nobody reaps counts as gone). */
static int alive(long pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z';
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
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

static int ready(void)
{
    return sh("curl -sf --max-time 2 --cacert %s/ca.crt https://127.0.0.1:%d/readyz", dir, port) == 0;
}

static long metric(const char *name)
{
    char *p;

    if (sh("curl -s --max-time 2 --cacert %s/ca.crt https://127.0.0.1:%d/metrics", dir, port))
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

static void register_webhook(void)
{
    char yaml[32768], ca[8192];
    size_t n;

    assert_int_equal(sh("base64 -w0 %s/ca.crt", dir), 0);
    n = strlen(out);
    assert_true(n > 0 && n < sizeof(ca));
    memcpy(ca, out, n + 1);
    snprintf(yaml, sizeof(yaml),
             "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\n"
             "metadata:\n  name: " VWC "\nwebhooks:\n"
             "- name: deviceclasses.dra-doctor.io\n  admissionReviewVersions: [v1]\n"
             "  sideEffects: None\n  timeoutSeconds: 5\n  failurePolicy: Fail\n"
             "  matchPolicy: Equivalent\n"
             "  clientConfig:\n    url: https://127.0.0.1:%d/validate\n    caBundle: %s\n"
             "  rules:\n  - apiGroups: [resource.k8s.io]\n    apiVersions: ['*']\n"
             "    resources: [deviceclasses]\n    operations: [CREATE, UPDATE]\n"
             "- name: claims.dra-doctor.io\n  admissionReviewVersions: [v1]\n"
             "  sideEffects: None\n  timeoutSeconds: 5\n  failurePolicy: Ignore\n"
             "  matchPolicy: Equivalent\n"
             "  namespaceSelector:\n    matchExpressions:\n    - key: kubernetes.io/metadata.name\n"
             "      operator: NotIn\n      values: [kube-system, dra-doctor]\n"
             "  clientConfig:\n    url: https://127.0.0.1:%d/validate\n    caBundle: %s\n"
             "  rules:\n  - apiGroups: [resource.k8s.io]\n    apiVersions: ['*']\n"
             "    resources: [resourceclaims, resourceclaimtemplates]\n    operations: [CREATE]\n"
             "  - apiGroups: ['']\n    apiVersions: [v1]\n    resources: [pods]\n"
             "    operations: [CREATE]\n",
             port, ca, port, ca);
    write_file("vwc.yaml", yaml);
    assert_int_equal(sh("kubectl apply -f %s/vwc.yaml 2>&1", dir), 0);
}

static int setup(void **state)
{
    const char *b = getenv("DD_BIN"), *c = getenv("DD_CLUSTER_DIR"), *k = getenv("KUBECONFIG");
    char path[1200];
    int i;

    (void)state;
    if (!b || !c || !k) {
        fprintf(stderr, "e2e_webhook: run me through scripts/e2e.sh\n");
        return -1;
    }
    snprintf(bin, sizeof(bin), "%s", b);
    snprintf(cluster, sizeof(cluster), "%s", c);
    /* The webhook runs under its own ServiceAccount when the stack made one. */
    snprintf(path, sizeof(path), "%s/webhook.kubeconfig", cluster);
    snprintf(kcfg, sizeof(kcfg), "%s", access(path, R_OK) ? k : path);
    snprintf(dir, sizeof(dir), "/tmp/dd-e2e-wh-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    if (sh("%s certs --service dra-doctor-webhook --namespace dra-doctor --out-dir %s "
           "--ip 127.0.0.1 2>&1", bin, dir)) {
        fprintf(stderr, "certs: %s\n", out);
        return -1;
    }
    if (sh("scripts/stack.sh port"))
        return -1;
    port = atoi(out);
    if (sh("%s webhook --kubeconfig %s --tls-cert-file %s/tls.crt --tls-key-file %s/tls.key "
           "--bind 127.0.0.1 --port %d >%s/webhook.log 2>&1 & echo $!",
           bin, kcfg, dir, dir, port, dir))
        return -1;
    wh_pid = strtol(out, NULL, 10);
    sh("echo %ld >> %s/extra-pids", wh_pid, cluster);
    for (i = 0; i < 120 && !ready(); i++)
        usleep(250000);
    if (!ready()) {
        sh("cat %s/webhook.log", dir);
        fprintf(stderr, "webhook not ready: %s\n", out);
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
    sh("kubectl delete validatingwebhookconfiguration " VWC " --ignore-not-found 2>&1");
    sh("kubectl delete namespace " NS " --wait=false --ignore-not-found 2>&1");
    sh("kubectl delete resourceslice wh-slice deviceclass wh-gpu --ignore-not-found 2>&1");
    sh("kubectl delete deviceclass wh-pre-0 wh-pre-1 wh-pre-2 wh-new-0 wh-new-1 wh-new-2 "
       "--ignore-not-found 2>&1");
    if (wh_pid > 0)
        kill((pid_t)wh_pid, SIGTERM);
    sh("rm -rf %s", dir);
    return 0;
}

static void test_typo_denied_good_admitted(void **state)
{
    int i, rc = 0;

    (void)state;
    register_webhook();
    /* The API server picks up a new webhook configuration within a second or so. */
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
                       "1 in use; claim second needs 1";
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
                       "1 in use; Pod wh-pod needs 1";
    int i;

    (void)state;
    /* The template first (each claim from it would exceed the quota too): the pod's review
     * reads it from the cache. */
    assert_int_equal(sh("kubectl apply -f %s/template.yaml 2>&1", dir), 0);
    assert_contains(out, "Warning: QuotaExceeded: ResourceQuota wh-quota allows 1 wh-gpu devices, "
                         "1 in use; each claim of template one-gpu needs 1");
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

static void test_rotation_under_load(void **state)
{
    struct load l;
    pthread_t t[2];
    long before = metric("dra_doctor_webhook_cert_reloads_total");
    int i;

    (void)state;
    memset(&l, 0, sizeof(l));
    pthread_mutex_init(&l.mu, NULL);
    for (i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, api_load, &l), 0);
    sleep(1);
    /* A new serving certificate from the same CA. */
    assert_int_equal(sh("%s certs --service dra-doctor-webhook --namespace dra-doctor --out-dir %s "
                        "--ip 127.0.0.1 --force 2>&1", bin, dir), 0);
    for (i = 0; i < 40 && metric("dra_doctor_webhook_cert_reloads_total") < before + 1; i++)
        usleep(100000);
    assert_true(metric("dra_doctor_webhook_cert_reloads_total") >= before + 1);
    sleep(1);
    /* A new CA: the bundle (new + old) reaches the API server before the new certificate is served. */
    assert_int_equal(sh("%s certs --service dra-doctor-webhook --namespace dra-doctor --out-dir %s "
                        "--ip 127.0.0.1 --new-ca --webhook-config " VWC " --propagation-delay 3 2>&1",
                        bin, dir), 0);
    for (i = 0; i < 40 && metric("dra_doctor_webhook_cert_reloads_total") < before + 2; i++)
        usleep(100000);
    assert_true(metric("dra_doctor_webhook_cert_reloads_total") >= before + 2);
    sleep(2);
    atomic_store(&l.stop, 1);
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "rotation under load: %ld requests through the API server, %ld failed%s%s\n",
            atomic_load(&l.ok), atomic_load(&l.failed), l.last_error[0] ? ": " : "", l.last_error);
    assert_int_equal(atomic_load(&l.failed), 0);
    assert_true(atomic_load(&l.ok) > 50);
    /* The new CA is in the bundle, and so is the old one during the overlap. */
    assert_int_equal(sh("kubectl get validatingwebhookconfiguration " VWC " -o "
                        "jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d | "
                        "grep -c 'BEGIN CERTIFICATE'"), 0);
    assert_int_equal(atoi(out), 2);
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

/* Keep-alive HTTPS requests straight to the webhook until it is gone. */
static void *direct_load(void *arg)
{
    struct load *l = arg;
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char url[128], ca[300];
    double deadline = 0;

    snprintf(url, sizeof(url), "https://127.0.0.1:%d/validate", port);
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    curl_easy_setopt(c, CURLOPT_URL, url);
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
            deadline = sig + 10;
        if (deadline && now_s() > deadline)
            break;
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return NULL;
}

static void test_sigterm_drains(void **state)
{
    struct load l;
    pthread_t t[4];
    long ok_before;
    int i;

    (void)state;
    /* Unregister first: the other tests must not depend on a webhook that is going away. */
    assert_int_equal(sh("kubectl delete validatingwebhookconfiguration " VWC " 2>&1"), 0);
    memset(&l, 0, sizeof(l));
    pthread_mutex_init(&l.mu, NULL);
    for (i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, direct_load, &l), 0);
    sleep(2);
    ok_before = atomic_load(&l.ok);
    pthread_mutex_lock(&l.mu);
    l.sigterm_at = now_s();
    pthread_mutex_unlock(&l.mu);
    assert_int_equal(kill((pid_t)wh_pid, SIGTERM), 0);
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* In-flight requests, then up to 5 s for the API server's idle connections to go. */
    for (i = 0; i < 200 && alive(wh_pid); i++)
        usleep(100000);
    fprintf(stderr, "SIGTERM under load: %ld answered before the signal, %ld in all, %ld failed "
            "that had started before it%s%s\n", ok_before, atomic_load(&l.ok),
            atomic_load(&l.failed_before), l.last_error[0] ? ": " : "", l.last_error);
    assert_true(ok_before > 100);
    assert_int_equal(atomic_load(&l.failed_before), 0);
    assert_false(alive(wh_pid)); /* it exited */
    sh("cat %s/webhook.log", dir);
    assert_contains(out, "draining");
    wh_pid = 0;
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
        cmocka_unit_test(test_sigterm_drains),
    };

    curl_global_init(CURL_GLOBAL_DEFAULT);
    return cmocka_run_group_tests_name("e2e_webhook", tests, setup, teardown);
}
