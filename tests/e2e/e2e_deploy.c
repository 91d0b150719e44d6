/*
 * e2e_deploy.c - the manifests of deploy/ against the real API server (see
 * docs/deploy.md).  scripts/e2e.sh has deployed them on the real node already
 * (e2e_webhook and e2e_faults exercise the running pods); this checks the
 * manifests themselves:
 *
 *   1. both overlays render (`kubectl kustomize`) to the expected objects, every
 *      image tagged with VERSION; cert-manager's chain of Issuers and
 *      Certificates ends in the Secret the webhook mounts;
 *   2. the ValidatingWebhookConfiguration: timeouts <= 5 s, failurePolicy per
 *      webhook, admissionReviewVersions [v1], sideEffects None, kube-system and
 *      dra-doctor excluded, the Service and port it calls exist;
 *   3. every container is locked down (non-root 65532, read-only root, no
 *      privilege escalation, no capabilities, RuntimeDefault seccomp) and has
 *      requests and limits; the webhook's replicas, budget, anti-affinity and
 *      probes; the node agent tolerates everything and mounts host paths
 *      read-only; the commands match each subcommand's flags;
 *   4. `kubectl apply --dry-run=server` accepts every object of builtin-certs,
 *      and every object of cert-manager but its cert-manager.io ones (no CRDs
 *      here);
 *   5. RBAC, really applied (only the namespace, ServiceAccounts, roles and
 *      bindings): each ServiceAccount's rules as the API server resolves them
 *      (SelfSubjectRulesReview) are exactly the documented ones, and
 *      `kubectl auth can-i --as` spot checks (the webhook may list
 *      DeviceClasses but neither create them nor read Secrets; the certs Job
 *      may patch only the webhook configuration named dra-doctor); then
 *      `dra-doctor certs` with the Job's exact arguments under the certs
 *      ServiceAccount's token: Secret created, caBundle set, a second run
 *      writes nothing, a forced renewal patches the Secret;
 *   6. the rendered rules and matchConditions select what they should: a copy
 *      of the configuration, limited to objects carrying a probe label, failing
 *      closed and pointed at a Service that does not exist (so every request
 *      sent to it fails), is registered: DRA pods and workloads are sent, plain
 *      ones are not, kube-system is not, DeviceClass creates and updates are.
 *
 * What the test creates is removed at the end; the RBAC objects scripts/stack.sh
 * applied (deploy/base/rbac, which the controller and node agent run under)
 * are left as they were.  The real configuration is only ever dry-run: failing
 * closed on DeviceClasses with no webhook behind it would break later tests; what
 * is registered are copies limited to objects carrying the probe label.
 */
#include "harness.h"

#include "e2e.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "formats/json.h"
#include "formats/manifest.h"
#include "rendered.h"

#define NS "dra-doctor"
#define IMAGE "ghcr.io/dra-doctor/dra-doctor"
#define UID 65532
#define BUILTIN "deploy/overlays/builtin-certs"
#define CERTMGR "deploy/overlays/cert-manager"
#define PROBE_NS "dd-e2e-deploy"
#define PROBE_VWC "dd-e2e-deploy-probe"
#define PROBE_LABEL "e2e.dra-doctor.io/probe"
#define WAIT_S 30

static char dir[256];       /* scratch files */
static char version[64];    /* VERSION */
static cJSON *created;      /* [kind, namespace, name] of RBAC objects this test created */

/* ---- rendering and finding objects -------------------------------------------- */

static void render(const char *kdir, struct mf_set *set)
{
    size_t i;

    if (sh("kubectl kustomize %s 2>&1", kdir))
        fail_msg("kubectl kustomize %s: %s", kdir, out);
    mf_set_init(set);
    if (mf_load_buffer(set, kdir, out, strlen(out), NULL) != DD_OK || set->nerrors) {
        for (i = 0; i < set->ndiags; i++)
            fprintf(stderr, "  %s\n", set->diags[i].text);
        fail_msg("%s renders to unreadable YAML", kdir);
    }
}

static size_t count_kind(const struct mf_set *set, const char *kind)
{
    size_t i, n = 0;

    for (i = 0; i < set->n; i++)
        n += !strcmp(set->objs[i].kind, kind);
    return n;
}

/* Equal strings, either possibly NULL (a missing field): NULL equals nothing. */
static int streq(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

/* The pod spec of a workload (Deployment, DaemonSet, Job: spec.template; CronJob:
 * spec.jobTemplate.spec.template), or NULL for other kinds. */
static const cJSON *pod_spec(const cJSON *o)
{
    const char *kind = dd_json_str(o, "kind", NULL);

    if (!kind)
        return NULL;
    if (!strcmp(kind, "CronJob"))
        return dd_json_path(o, "spec", "jobTemplate", "spec", "template", "spec", NULL);
    if (!strcmp(kind, "Deployment") || !strcmp(kind, "DaemonSet") || !strcmp(kind, "Job") ||
        !strcmp(kind, "StatefulSet"))
        return dd_json_path(o, "spec", "template", "spec", NULL);
    return NULL;
}

static const cJSON *container(const cJSON *o, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, dd_json_arr(pod_spec(o), "containers", NULL)) {
        const char *n = dd_json_str(c, "name", NULL);
        if (n && !strcmp(n, name))
            return c;
    }
    fail_msg("no container %s", name);
    return NULL;
}

/* The args of a container joined with single spaces. */
static void args_of(const cJSON *c, char *buf, size_t size)
{
    const cJSON *a;
    size_t n = 0;

    buf[0] = '\0';
    cJSON_ArrayForEach(a, dd_json_arr(c, "args", NULL))
        if (cJSON_IsString(a) && n < size)
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? " " : "", a->valuestring);
}

static void write_file(const char *name, const char *text)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---- 1. rendering ------------------------------------------------------------------ */

static void check_images(const struct mf_set *set)
{
    char want[256];
    size_t i;

    snprintf(want, sizeof(want), IMAGE ":%s", version);
    for (i = 0; i < set->n; i++) {
        const cJSON *c;
        cJSON_ArrayForEach(c, dd_json_arr(pod_spec(set->objs[i].json), "containers", NULL)) {
            const char *img = dd_json_str(c, "image", NULL);
            if (!img || strcmp(img, want))
                fail_msg("%s %s: image %s, want %s (VERSION)", set->objs[i].kind,
                         set->objs[i].name, img ? img : "(none)", want);
        }
    }
}

static const char *const common[][2] = {
    { "Namespace", NS },
    { "ServiceAccount", "dra-doctor-webhook" },
    { "ServiceAccount", "dra-doctor-controller" },
    { "ServiceAccount", "dra-doctor-node" },
    { "ClusterRole", "dra-doctor-webhook" },
    { "ClusterRoleBinding", "dra-doctor-webhook" },
    { "ClusterRole", "dra-doctor-controller" },
    { "ClusterRoleBinding", "dra-doctor-controller" },
    { "Role", "dra-doctor-controller-leader-election" },
    { "RoleBinding", "dra-doctor-controller-leader-election" },
    { "ClusterRole", "dra-doctor-node" },
    { "ClusterRoleBinding", "dra-doctor-node" },
    { "Deployment", "dra-doctor-webhook" },
    { "Service", "dra-doctor-webhook" },
    { "PodDisruptionBudget", "dra-doctor-webhook" },
    { "Deployment", "dra-doctor-controller" },
    { "DaemonSet", "dra-doctor-node" },
    { "ValidatingWebhookConfiguration", "dra-doctor" },
};

static const char *const certs_objs[][2] = {
    { "ServiceAccount", "dra-doctor-certs" },
    { "Role", "dra-doctor-certs" },
    { "RoleBinding", "dra-doctor-certs" },
    { "ClusterRole", "dra-doctor-certs" },
    { "ClusterRoleBinding", "dra-doctor-certs" },
    { "Job", "dra-doctor-certs" },
    { "CronJob", "dra-doctor-certs" },
};

static void overlays_render(void **state)
{
    struct mf_set b, c;
    const cJSON *vwc, *ca, *serving, *ca_issuer, *self;
    size_t i;

    (void)state;
    render(BUILTIN, &b);
    render(CERTMGR, &c);
    for (i = 0; i < sizeof(common) / sizeof(common[0]); i++) {
        need(&b, common[i][0], common[i][1]);
        need(&c, common[i][0], common[i][1]);
    }
    for (i = 0; i < sizeof(certs_objs) / sizeof(certs_objs[0]); i++) {
        need(&b, certs_objs[i][0], certs_objs[i][1]);
        if (find(&c, certs_objs[i][0], certs_objs[i][1]))
            fail_msg("the cert-manager overlay has %s %s", certs_objs[i][0], certs_objs[i][1]);
    }
    assert_int_equal(b.n, sizeof(common) / sizeof(common[0]) +
                              sizeof(certs_objs) / sizeof(certs_objs[0]) + 1 /* controller PDB */);
    check_images(&b);
    check_images(&c);

    /* builtin-certs: no cert-manager; the caBundle is left to dra-doctor certs. */
    for (i = 0; i < b.n; i++)
        assert_null(strstr(b.objs[i].api_version, "cert-manager.io"));
    vwc = need(&b, "ValidatingWebhookConfiguration", "dra-doctor");
    assert_null(dd_json_path(vwc, "metadata", "annotations", "cert-manager.io/inject-ca-from",
                             NULL));

    /* cert-manager: self-signed Issuer -> CA Certificate -> CA Issuer -> serving Certificate
     * in the Secret the webhook mounts, for the Service's DNS names; the CA injected. */
    vwc = need(&c, "ValidatingWebhookConfiguration", "dra-doctor");
    assert_string_equal(dd_json_str(vwc, "metadata", "annotations",
                                    "cert-manager.io/inject-ca-from", NULL),
                        NS "/dra-doctor-webhook");
    assert_int_equal(count_kind(&c, "Issuer"), 2);
    assert_int_equal(count_kind(&c, "Certificate"), 2);
    serving = need(&c, "Certificate", "dra-doctor-webhook");
    assert_string_equal(dd_json_str(serving, "metadata", "namespace", NULL), NS);
    assert_string_equal(dd_json_str(serving, "spec", "secretName", NULL), "dra-doctor-webhook-tls");
    assert_true(str_in(dd_json_arr(serving, "spec", "dnsNames", NULL),
                       "dra-doctor-webhook.dra-doctor.svc"));
    assert_true(str_in(dd_json_arr(serving, "spec", "dnsNames", NULL),
                       "dra-doctor-webhook.dra-doctor.svc.cluster.local"));
    assert_true(str_in(dd_json_arr(serving, "spec", "usages", NULL), "server auth"));
    ca_issuer = need(&c, "Issuer", dd_json_str(serving, "spec", "issuerRef", "name", NULL));
    ca = NULL;
    for (i = 0; i < c.n; i++)
        if (!strcmp(c.objs[i].kind, "Certificate") &&
            streq(dd_json_str(c.objs[i].json, "spec", "secretName", NULL),
                    dd_json_str(ca_issuer, "spec", "ca", "secretName", NULL)))
            ca = c.objs[i].json;
    if (!ca)
        fail_msg("no Certificate writes the CA Issuer's secret");
    assert_true(dd_json_true(ca, "spec", "isCA", NULL));
    self = need(&c, "Issuer", dd_json_str(ca, "spec", "issuerRef", "name", NULL));
    assert_non_null(dd_json_path(self, "spec", "selfSigned", NULL));
    mf_set_release(&b);
    mf_set_release(&c);
}

/* ---- 2. the webhook configuration ----------------------------------------------------- */

static int covers(const cJSON *wh, const char *group, const char *resource, const char *op)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, dd_json_arr(wh, "rules", NULL))
        if ((str_in(dd_json_arr(r, "apiGroups", NULL), group) ||
             str_in(dd_json_arr(r, "apiGroups", NULL), "*")) &&
            str_in(dd_json_arr(r, "resources", NULL), resource) &&
            str_in(dd_json_arr(r, "operations", NULL), op))
            return 1;
    return 0;
}

static void check_vwc(const struct mf_set *set)
{
    const cJSON *vwc = need(set, "ValidatingWebhookConfiguration", "dra-doctor"), *wh, *svc, *p;
    const cJSON *dep = need(set, "Deployment", "dra-doctor-webhook"), *sel, *lab;
    int n = 0, port_ok = 0;
    static const char *const claim_kinds[][2] = {
        { "resource.k8s.io", "resourceclaims" }, { "resource.k8s.io", "resourceclaimtemplates" },
        { "", "pods" }, { "apps", "deployments" }, { "apps", "statefulsets" },
        { "apps", "daemonsets" }, { "apps", "replicasets" }, { "batch", "jobs" },
        { "batch", "cronjobs" },
    };

    cJSON_ArrayForEach(wh, dd_json_arr(vwc, "webhooks", NULL)) {
        const char *name = dd_json_str(wh, "name", NULL), *fp = dd_json_str(wh, "failurePolicy", NULL);
        const cJSON *e, *av = dd_json_arr(wh, "admissionReviewVersions", NULL);
        int64_t t = 0;
        int excl = 0;
        size_t k;

        assert_non_null(name);
        if (!dd_json_int(wh, &t, "timeoutSeconds", NULL) || t < 1 || t > 5)
            fail_msg("webhook %s: timeoutSeconds must be set and at most 5", name);
        assert_int_equal(cJSON_GetArraySize(av), 1);
        assert_true(str_in(av, "v1"));
        assert_string_equal(dd_json_str(wh, "sideEffects", NULL), "None");
        assert_string_equal(dd_json_str(wh, "matchPolicy", NULL), "Equivalent");
        cJSON_ArrayForEach(e, dd_json_arr(wh, "namespaceSelector", "matchExpressions", NULL))
            if (streq(dd_json_str(e, "key", NULL), "kubernetes.io/metadata.name") &&
                streq(dd_json_str(e, "operator", NULL), "NotIn") &&
                str_in(dd_json_arr(e, "values", NULL), "kube-system") &&
                str_in(dd_json_arr(e, "values", NULL), NS))
                excl = 1;
        if (!excl)
            fail_msg("webhook %s: namespaceSelector does not exclude kube-system and " NS, name);
        assert_string_equal(dd_json_str(wh, "clientConfig", "service", "name", NULL),
                            "dra-doctor-webhook");
        assert_string_equal(dd_json_str(wh, "clientConfig", "service", "namespace", NULL), NS);
        assert_string_equal(dd_json_str(wh, "clientConfig", "service", "path", NULL), "/validate");
        assert_true(dd_json_int(wh, &t, "clientConfig", "service", "port", NULL) && t == 443);
        assert_null(dd_json_path(wh, "clientConfig", "url", NULL));
        if (!strcmp(name, "deviceclasses.dra-doctor.io")) {
            assert_string_equal(fp, "Fail");
            assert_true(covers(wh, "resource.k8s.io", "deviceclasses", "CREATE"));
            assert_true(covers(wh, "resource.k8s.io", "deviceclasses", "UPDATE"));
            cJSON_ArrayForEach(e, dd_json_arr(wh, "rules", NULL))
                assert_true(str_in(dd_json_arr(e, "apiVersions", NULL), "*"));
        } else if (!strcmp(name, "claims.dra-doctor.io")) {
            assert_string_equal(fp, "Ignore");
            for (k = 0; k < sizeof(claim_kinds) / sizeof(claim_kinds[0]); k++)
                if (!covers(wh, claim_kinds[k][0], claim_kinds[k][1], "CREATE"))
                    fail_msg("claims.dra-doctor.io does not see %s/%s CREATE", claim_kinds[k][0],
                             claim_kinds[k][1]);
        } else {
            fail_msg("unexpected webhook %s", name);
        }
        n++;
    }
    assert_int_equal(n, 2);

    /* The Service it calls: 443 -> 8443, selecting the webhook's pods, which listen there. */
    svc = need(set, "Service", "dra-doctor-webhook");
    cJSON_ArrayForEach(p, dd_json_arr(svc, "spec", "ports", NULL)) {
        int64_t port = 0, target = 0;
        if (dd_json_int(p, &port, "port", NULL) && port == 443 &&
            dd_json_int(p, &target, "targetPort", NULL) && target == 8443)
            port_ok = 1;
    }
    assert_true(port_ok);
    sel = dd_json_path(svc, "spec", "selector", NULL);
    assert_non_null(sel);
    cJSON_ArrayForEach(lab, sel) {
        const char *v = dd_json_str(dep, "spec", "template", "metadata", "labels", lab->string, NULL);
        if (!v || strcmp(v, lab->valuestring))
            fail_msg("the Service selects %s=%s, the webhook's pods do not carry it", lab->string,
                     lab->valuestring);
    }
    port_ok = 0;
    cJSON_ArrayForEach(p, dd_json_arr(container(dep, "webhook"), "ports", NULL)) {
        int64_t cp = 0;
        port_ok |= dd_json_int(p, &cp, "containerPort", NULL) && cp == 8443;
    }
    assert_true(port_ok);
}

static void webhook_configuration(void **state)
{
    struct mf_set b, c;

    (void)state;
    render(BUILTIN, &b);
    render(CERTMGR, &c);
    check_vwc(&b);
    check_vwc(&c);
    mf_set_release(&b);
    mf_set_release(&c);
}

/* ---- 3. pods ------------------------------------------------------------------------ */

/* A securityContext field: the container's, else the pod's (where the field exists there). */
static const cJSON *sc(const cJSON *pod, const cJSON *c, const char *k1, const char *k2)
{
    const cJSON *v = dd_json_path(c, "securityContext", k1, k2, NULL);

    return v ? v : dd_json_path(pod, "securityContext", k1, k2, NULL);
}

static void check_container(const char *what, const cJSON *pod, const cJSON *c)
{
    const char *name = dd_json_str(c, "name", NULL);
    const cJSON *v;
    static const char *const res[][2] = {
        { "requests", "cpu" }, { "requests", "memory" }, { "limits", "cpu" }, { "limits", "memory" }
    };
    size_t i;
    int64_t uid = 0;

    v = sc(pod, c, "runAsNonRoot", NULL);
    if (!cJSON_IsTrue(v))
        fail_msg("%s/%s: runAsNonRoot is not true", what, name);
    v = sc(pod, c, "runAsUser", NULL);
    if (!v || !cJSON_IsNumber(v) || (uid = (int64_t)v->valuedouble) != UID)
        fail_msg("%s/%s: runAsUser %lld, want %d", what, name, (long long)uid, UID);
    if (!dd_json_true(c, "securityContext", "readOnlyRootFilesystem", NULL))
        fail_msg("%s/%s: readOnlyRootFilesystem is not true", what, name);
    v = dd_json_path(c, "securityContext", "allowPrivilegeEscalation", NULL);
    if (!cJSON_IsFalse(v))
        fail_msg("%s/%s: allowPrivilegeEscalation is not false", what, name);
    if (dd_json_true(c, "securityContext", "privileged", NULL))
        fail_msg("%s/%s: privileged", what, name);
    if (!str_in(dd_json_arr(c, "securityContext", "capabilities", "drop", NULL), "ALL"))
        fail_msg("%s/%s: capabilities do not drop ALL", what, name);
    if (cJSON_GetArraySize(dd_json_path(c, "securityContext", "capabilities", "add", NULL)))
        fail_msg("%s/%s: adds capabilities", what, name);
    v = sc(pod, c, "seccompProfile", "type");
    if (!cJSON_IsString(v) || strcmp(v->valuestring, "RuntimeDefault"))
        fail_msg("%s/%s: seccompProfile is not RuntimeDefault", what, name);
    for (i = 0; i < sizeof(res) / sizeof(res[0]); i++)
        if (!dd_json_str(c, "resources", res[i][0], res[i][1], NULL))
            fail_msg("%s/%s: no resources.%s.%s", what, name, res[i][0], res[i][1]);
}

static void check_pods(const struct mf_set *set)
{
    size_t i, n = 0;

    for (i = 0; i < set->n; i++) {
        const cJSON *pod = pod_spec(set->objs[i].json), *c;
        char what[256];
        if (!pod)
            continue;
        snprintf(what, sizeof(what), "%s %s", set->objs[i].kind, set->objs[i].name);
        if (dd_json_true(pod, "hostNetwork", NULL) || dd_json_true(pod, "hostPID", NULL) ||
            dd_json_true(pod, "hostIPC", NULL))
            fail_msg("%s shares a host namespace", what);
        if (!dd_json_str(pod, "serviceAccountName", NULL))
            fail_msg("%s runs as the namespace's default ServiceAccount", what);
        need(set, "ServiceAccount", dd_json_str(pod, "serviceAccountName", NULL));
        cJSON_ArrayForEach(c, dd_json_arr(pod, "containers", NULL)) {
            check_container(what, pod, c);
            n++;
        }
        cJSON_ArrayForEach(c, dd_json_arr(pod, "initContainers", NULL))
            check_container(what, pod, c);
    }
    assert_true(n >= 3);
}

/* Every label of a selector is on the pod template. */
static int selects(const cJSON *selector, const cJSON *workload)
{
    const cJSON *lab;

    cJSON_ArrayForEach(lab, selector) {
        const char *v = dd_json_str(workload, "spec", "template", "metadata", "labels",
                                    lab->string, NULL);
        if (!v || strcmp(v, lab->valuestring))
            return 0;
    }
    return selector != NULL;
}

static void check_workloads(const struct mf_set *set)
{
    const cJSON *wh = need(set, "Deployment", "dra-doctor-webhook");
    const cJSON *ctl = need(set, "Deployment", "dra-doctor-controller");
    const cJSON *ds = need(set, "DaemonSet", "dra-doctor-node");
    const cJSON *pdb = need(set, "PodDisruptionBudget", "dra-doctor-webhook");
    const cJSON *c, *t, *m, *v, *term;
    char args[2048];
    int64_t n = 0;
    int tol = 0, hostpaths = 0, antiaff = 0, tls = 0;

    /* webhook: 2 replicas, a budget of 1, spread over nodes, HTTPS probes, its flags. */
    assert_true(dd_json_int(wh, &n, "spec", "replicas", NULL) && n == 2);
    assert_true(dd_json_int(pdb, &n, "spec", "minAvailable", NULL) && n == 1);
    assert_true(selects(dd_json_path(pdb, "spec", "selector", "matchLabels", NULL), wh));
    cJSON_ArrayForEach(term, dd_json_arr(wh, "spec", "template", "spec", "affinity",
                                         "podAntiAffinity",
                                         "preferredDuringSchedulingIgnoredDuringExecution", NULL)) {
        const char *key = dd_json_str(term, "podAffinityTerm", "topologyKey", NULL);
        if (key && !strcmp(key, "kubernetes.io/hostname") &&
            selects(dd_json_path(term, "podAffinityTerm", "labelSelector", "matchLabels", NULL),
                    wh))
            antiaff = 1;
    }
    assert_true(antiaff);
    c = container(wh, "webhook");
    assert_string_equal(dd_json_str(c, "readinessProbe", "httpGet", "scheme", NULL), "HTTPS");
    assert_string_equal(dd_json_str(c, "readinessProbe", "httpGet", "path", NULL), "/readyz");
    assert_string_equal(dd_json_str(c, "livenessProbe", "httpGet", "scheme", NULL), "HTTPS");
    assert_string_equal(dd_json_str(c, "livenessProbe", "httpGet", "path", NULL), "/healthz");
    args_of(c, args, sizeof(args));
    assert_contains(args, "webhook --bind 0.0.0.0 --port 8443 "
                          "--tls-cert-file /etc/dra-doctor/tls/tls.crt "
                          "--tls-key-file /etc/dra-doctor/tls/tls.key");
    assert_contains(args, "--unknown-driver=");
    assert_string_equal(dd_json_str(wh, "spec", "template", "spec", "serviceAccountName", NULL),
                        "dra-doctor-webhook");
    /* The key pair only (not the CA key), read-only, where the flags point. */
    cJSON_ArrayForEach(m, dd_json_arr(c, "volumeMounts", NULL))
        if (streq(dd_json_str(m, "mountPath", NULL), "/etc/dra-doctor/tls")) {
            const cJSON *vol;
            assert_true(dd_json_true(m, "readOnly", NULL));
            cJSON_ArrayForEach(vol, dd_json_arr(wh, "spec", "template", "spec", "volumes", NULL))
                if (streq(dd_json_str(vol, "name", NULL), dd_json_str(m, "name", NULL))) {
                    const cJSON *it;
                    assert_string_equal(dd_json_str(vol, "secret", "secretName", NULL),
                                        "dra-doctor-webhook-tls");
                    assert_int_equal(cJSON_GetArraySize(dd_json_arr(vol, "secret", "items", NULL)), 2);
                    cJSON_ArrayForEach(it, dd_json_arr(vol, "secret", "items", NULL)) {
                        const char *key = dd_json_str(it, "key", NULL);
                        assert_non_null(key);
                        assert_null(strstr(key, "ca."));
                    }
                    tls = 1;
                }
        }
    assert_true(tls);

    /* controller: leader election in its namespace, its ServiceAccount, HTTP probes. */
    c = container(ctl, "controller");
    args_of(c, args, sizeof(args));
    assert_contains(args, "controller");
    assert_contains(args, "--leader-elect-namespace=" NS);
    assert_string_equal(dd_json_str(ctl, "spec", "template", "spec", "serviceAccountName", NULL),
                        "dra-doctor-controller");
    assert_string_equal(dd_json_str(c, "readinessProbe", "httpGet", "path", NULL), "/readyz");
    assert_string_equal(dd_json_str(c, "livenessProbe", "httpGet", "path", NULL), "/healthz");

    /* node agent: every node, host paths read-only under --host-root, NODE_NAME. */
    cJSON_ArrayForEach(t, dd_json_arr(ds, "spec", "template", "spec", "tolerations", NULL))
        if (streq(dd_json_str(t, "operator", NULL), "Exists") &&
            !dd_json_str(t, "key", NULL) && !dd_json_str(t, "effect", NULL))
            tol = 1;
    if (!tol)
        fail_msg("the node agent does not tolerate every taint ({operator: Exists})");
    c = container(ds, "node");
    args_of(c, args, sizeof(args));
    assert_contains(args, "node --host-root=/host");
    cJSON_ArrayForEach(v, dd_json_arr(ds, "spec", "template", "spec", "volumes", NULL)) {
        const char *hp = dd_json_str(v, "hostPath", "path", NULL);
        int mounted = 0;
        if (!hp)
            continue;
        hostpaths++;
        cJSON_ArrayForEach(m, dd_json_arr(c, "volumeMounts", NULL)) {
            char want[512];
            if (!streq(dd_json_str(m, "name", NULL), dd_json_str(v, "name", NULL)))
                continue;
            if (!dd_json_true(m, "readOnly", NULL))
                fail_msg("host path %s is mounted writable", hp);
            snprintf(want, sizeof(want), "/host%s", hp);
            assert_string_equal(dd_json_str(m, "mountPath", NULL), want);
            mounted = 1;
        }
        assert_true(mounted);
        assert_true(!strcmp(hp, "/etc/containerd") || !strcmp(hp, "/etc/cdi") ||
                    !strcmp(hp, "/var/run/cdi"));
    }
    assert_int_equal(hostpaths, 3);
    tol = 0;
    cJSON_ArrayForEach(v, dd_json_arr(c, "env", NULL))
        if (streq(dd_json_str(v, "name", NULL), "NODE_NAME") &&
            streq(dd_json_str(v, "valueFrom", "fieldRef", "fieldPath", NULL), "spec.nodeName"))
            tol = 1;
    assert_true(tol);
}

static void pods_locked_down(void **state)
{
    struct mf_set b, c;
    const cJSON *job;
    char args[2048];

    (void)state;
    render(BUILTIN, &b);
    render(CERTMGR, &c);
    check_pods(&b);
    check_pods(&c);
    check_workloads(&b);
    check_workloads(&c);
    /* The certs Job and CronJob: their ServiceAccount, the certs contract. */
    job = need(&b, "Job", "dra-doctor-certs");
    assert_string_equal(dd_json_str(job, "spec", "template", "spec", "serviceAccountName", NULL),
                        "dra-doctor-certs");
    args_of(container(job, "certs"), args, sizeof(args));
    assert_string_equal(args, "certs --service dra-doctor-webhook --namespace " NS
                              " --secret " NS "/dra-doctor-webhook-tls --webhook-config dra-doctor");
    job = need(&b, "CronJob", "dra-doctor-certs");
    args_of(container(job, "certs"), args, sizeof(args));
    assert_string_equal(args, "certs --service dra-doctor-webhook --namespace " NS
                              " --secret " NS "/dra-doctor-webhook-tls --webhook-config dra-doctor");
    assert_string_equal(dd_json_str(job, "spec", "concurrencyPolicy", NULL), "Forbid");
    mf_set_release(&b);
    mf_set_release(&c);
}

/* ---- 4. server-side dry run --------------------------------------------------------------- */

static int not_cert_manager(const struct mf_object *o)
{
    return !strstr(o->api_version, "cert-manager.io");
}

static void server_dry_run(void **state)
{
    struct mf_set c;
    char path[512];
    size_t n;

    (void)state;
    if (sh("kubectl apply --dry-run=server -k " BUILTIN " 2>&1"))
        fail_msg("kubectl apply --dry-run=server -k " BUILTIN ": %s", out);
    assert_contains(out, "validatingwebhookconfiguration.admissionregistration.k8s.io/dra-doctor");
    assert_contains(out, "(server dry run)");

    render(CERTMGR, &c);
    n = write_list(&c, dir, "cert-manager.json", not_cert_manager, path, sizeof(path));
    assert_int_equal(n, c.n - 4);
    if (sh("kubectl apply --dry-run=server -f %s 2>&1", path))
        fail_msg("kubectl apply --dry-run=server (cert-manager overlay without its CRs): %s", out);
    assert_contains(out, "validatingwebhookconfiguration.admissionregistration.k8s.io/dra-doctor");
    mf_set_release(&c);
}

/* ---- 5. RBAC ------------------------------------------------------------------------------ */

static int rbac_kind(const struct mf_object *o)
{
    static const char *const kinds[] = { "Namespace", "ServiceAccount", "Role", "RoleBinding",
                                         "ClusterRole", "ClusterRoleBinding" };
    size_t i;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(o->kind, kinds[i]))
            return 1;
    return 0;
}

/*
 * What each ServiceAccount may do (name: only on that object; ns: only in that
 * namespace), besides what every authenticated user may (self reviews).  The table of
 * docs/deploy.md; the webhook's row is its contract (list and watch only), the certs
 * rows the calls dra-doctor certs makes (get, create, merge and JSON patch).
 */
struct grant {
    const char *sa, *group, *resource, *verbs, *name, *ns; /* ns: only in this namespace */
};

static const struct grant grants[] = {
    { "dra-doctor-webhook", "resource.k8s.io", "deviceclasses", "list watch", NULL, NULL },
    { "dra-doctor-webhook", "resource.k8s.io", "resourceslices", "list watch", NULL, NULL },
    { "dra-doctor-webhook", "resource.k8s.io", "resourceclaims", "list watch", NULL, NULL },
    { "dra-doctor-webhook", "resource.k8s.io", "resourceclaimtemplates", "list watch", NULL, NULL },
    { "dra-doctor-webhook", "", "resourcequotas", "list watch", NULL, NULL },
    { "dra-doctor-webhook", "apps", "daemonsets", "list watch", NULL, NULL },

    { "dra-doctor-controller", "", "pods", "get list watch patch", NULL, NULL },
    { "dra-doctor-controller", "", "nodes", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "", "namespaces", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "", "resourcequotas", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "", "events", "get list watch create", NULL, NULL },
    { "dra-doctor-controller", "resource.k8s.io", "deviceclasses", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "resource.k8s.io", "resourceclaims", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "resource.k8s.io", "resourceclaimtemplates", "get list watch", NULL,
      NULL },
    { "dra-doctor-controller", "resource.k8s.io", "resourceslices", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "resource.k8s.io", "devicetaintrules", "get list watch", NULL,
      NULL },
    { "dra-doctor-controller", "apps", "daemonsets", "get list watch", NULL, NULL },
    { "dra-doctor-controller", "admissionregistration.k8s.io", "mutatingwebhookconfigurations",
      "get list watch", NULL, NULL },
    { "dra-doctor-controller", "admissionregistration.k8s.io", "mutatingadmissionpolicies",
      "get list watch", NULL, NULL },
    { "dra-doctor-controller", "rbac.authorization.k8s.io", "clusterroles", "get list watch", NULL,
      NULL },
    { "dra-doctor-controller", "rbac.authorization.k8s.io", "clusterrolebindings",
      "get list watch", NULL, NULL },
    { "dra-doctor-controller", "authorization.k8s.io", "subjectaccessreviews", "create", NULL,
      NULL },
    { "dra-doctor-controller", "coordination.k8s.io", "leases", "get create update", NULL, NS },

    { "dra-doctor-node", "", "nodes", "get patch", NULL, NULL },

    { "dra-doctor-certs", "", "secrets", "get patch", "dra-doctor-webhook-tls", NS },
    { "dra-doctor-certs", "", "secrets", "create", NULL, NS },
    { "dra-doctor-certs", "admissionregistration.k8s.io", "validatingwebhookconfigurations",
      "get patch", "dra-doctor", NULL },
};

static const char *const sas[] = { "dra-doctor-webhook", "dra-doctor-controller", "dra-doctor-node",
                                   "dra-doctor-certs" };

/* What the bootstrap policy gives every ServiceAccount: self reviews, and from 1.37 (the
 * ClusterTrustBundle gate on: system:cluster-trust-bundle-discovery bound to
 * system:serviceaccounts) reading ClusterTrustBundles. */
static int everyone_may(const char *group, const char *resource, const char *verb)
{
    if (!strcmp(group, "certificates.k8s.io") && !strcmp(resource, "clustertrustbundles"))
        return !strcmp(verb, "get") || !strcmp(verb, "list") || !strcmp(verb, "watch");
    return !strcmp(verb, "create") &&
           ((!strcmp(group, "authorization.k8s.io") &&
             (!strcmp(resource, "selfsubjectaccessreviews") ||
              !strcmp(resource, "selfsubjectrulesreviews"))) ||
            (!strcmp(group, "authentication.k8s.io") && !strcmp(resource, "selfsubjectreviews")));
}

static int has_word(const char *words, const char *w)
{
    size_t n = strlen(w);
    const char *p;

    for (p = words; (p = strstr(p, w)); p += n)
        if ((p == words || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
            return 1;
    return 0;
}

/* The grant for (sa, group, resource, verb) in namespace ns, or NULL. */
static const struct grant *granted(const char *sa, const char *group, const char *resource,
                                   const char *verb, const char *ns)
{
    size_t i;

    for (i = 0; i < sizeof(grants) / sizeof(grants[0]); i++)
        if (!strcmp(grants[i].sa, sa) && !strcmp(grants[i].group, group) &&
            !strcmp(grants[i].resource, resource) && has_word(grants[i].verbs, verb) &&
            (!grants[i].ns || !strcmp(grants[i].ns, ns)))
            return &grants[i];
    return NULL;
}

/* The API server's resolution of sa's rules in ns equals the grants, no more, no less. */
static void rules_exactly(const char *sa, const char *ns)
{
    char path[512], body[512];
    cJSON *review;
    const cJSON *rule;
    size_t i;
    int seen[sizeof(grants) / sizeof(grants[0])] = { 0 };

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectRulesReview\","
             "\"spec\":{\"namespace\":\"%s\"}}", ns);
    write_file("ssrr.json", body);
    snprintf(path, sizeof(path), "%s/ssrr.json", dir);
    if (sh("kubectl create --validate=false -f %s -o json --as=system:serviceaccount:" NS
           ":%s 2>&1", path, sa))
        fail_msg("SelfSubjectRulesReview as %s: %s", sa, out);
    review = cJSON_Parse(out);
    assert_non_null(review);
    if (dd_json_true(review, "status", "incomplete", NULL))
        fail_msg("rules of %s incomplete: %s", sa, out);
    cJSON_ArrayForEach(rule, dd_json_arr(review, "status", "resourceRules", NULL)) {
        const cJSON *g, *r, *v, *names = dd_json_arr(rule, "resourceNames", NULL);
        cJSON_ArrayForEach(g, dd_json_arr(rule, "apiGroups", NULL))
        cJSON_ArrayForEach(r, dd_json_arr(rule, "resources", NULL))
        cJSON_ArrayForEach(v, dd_json_arr(rule, "verbs", NULL)) {
            const struct grant *gr;
            if (everyone_may(g->valuestring, r->valuestring, v->valuestring))
                continue;
            gr = granted(sa, g->valuestring, r->valuestring, v->valuestring, ns);
            if (!gr)
                fail_msg("%s may %s %s.%s in %s, which it should not", sa, v->valuestring,
                         r->valuestring, g->valuestring, ns);
            if (gr->name && (cJSON_GetArraySize(names) != 1 || !str_in(names, gr->name)))
                fail_msg("%s may %s %s.%s beyond the one named %s", sa, v->valuestring,
                         r->valuestring, g->valuestring, gr->name);
            seen[gr - grants] = 1;
        }
    }
    for (i = 0; i < sizeof(grants) / sizeof(grants[0]); i++)
        if (!strcmp(grants[i].sa, sa) && (!grants[i].ns || !strcmp(grants[i].ns, ns)) && !seen[i])
            fail_msg("%s lacks %s on %s.%s in %s", sa, grants[i].verbs, grants[i].resource,
                     grants[i].group, ns);
    cJSON_Delete(review);
}

/* kubectl auth can-i as a ServiceAccount: 1 yes, 0 no. */
static int can(const char *sa, const char *verb, const char *what, const char *ns)
{
    int rc = sh("kubectl auth can-i %s %s %s%s --as=system:serviceaccount:" NS ":%s 2>&1", verb,
                what, ns ? "-n " : "", ns ? ns : "", sa);

    if (rc != 0 && rc != 1)
        fail_msg("kubectl auth can-i %s %s: %s", verb, what, out);
    return rc == 0;
}

#define YES(sa, verb, what, ns) \
    do { if (!can(sa, verb, what, ns)) fail_msg("%s cannot %s %s", sa, verb, what); } while (0)
#define NO(sa, verb, what, ns) \
    do { if (can(sa, verb, what, ns)) fail_msg("%s can %s %s", sa, verb, what); } while (0)

/* Applies, for real, only the namespace, ServiceAccounts, roles and bindings of
 * builtin-certs, remembering which of them did not exist (to delete them at the end). */
static void apply_rbac(void)
{
    struct mf_set b;
    char path[512];
    size_t i, n;

    render(BUILTIN, &b);
    for (i = 0; i < b.n; i++) {
        cJSON *e;
        if (!rbac_kind(&b.objs[i]))
            continue;
        if (!sh("kubectl get %s %s %s%s -o name 2>&1", b.objs[i].kind, b.objs[i].name,
                *b.objs[i].namespace_ ? "-n " : "", b.objs[i].namespace_))
            continue;
        e = cJSON_CreateArray();
        cJSON_AddItemToArray(e, cJSON_CreateString(b.objs[i].kind));
        cJSON_AddItemToArray(e, cJSON_CreateString(b.objs[i].namespace_));
        cJSON_AddItemToArray(e, cJSON_CreateString(b.objs[i].name));
        cJSON_AddItemToArray(created, e);
    }
    n = write_list(&b, dir, "rbac.json", rbac_kind, path, sizeof(path));
    assert_int_equal(n, 17);
    if (sh("kubectl apply -f %s 2>&1", path))
        fail_msg("kubectl apply (RBAC of " BUILTIN "): %s", out);
    mf_set_release(&b);
}

static void rbac_least_privilege(void **state)
{
    size_t i;

    (void)state;
    apply_rbac();
    for (i = 0; i < sizeof(sas) / sizeof(sas[0]); i++) {
        rules_exactly(sas[i], NS);
        rules_exactly(sas[i], "default");
    }

    /* The webhook reads what its checks need, and nothing else. */
    YES("dra-doctor-webhook", "list", "deviceclasses.resource.k8s.io", NULL);
    YES("dra-doctor-webhook", "watch", "resourceclaims.resource.k8s.io", "default");
    YES("dra-doctor-webhook", "list", "daemonsets.apps", "kube-system");
    NO("dra-doctor-webhook", "create", "deviceclasses.resource.k8s.io", NULL);
    NO("dra-doctor-webhook", "update", "deviceclasses.resource.k8s.io", NULL);
    NO("dra-doctor-webhook", "get", "secrets", NS);
    NO("dra-doctor-webhook", "list", "secrets", NS);
    NO("dra-doctor-webhook", "patch", "validatingwebhookconfigurations/dra-doctor", NULL);
    /* The API server's feature gates, from its metrics: the webhook and the controller only. */
    YES("dra-doctor-webhook", "get", "/metrics", NULL);
    YES("dra-doctor-controller", "get", "/metrics", NULL);
    NO("dra-doctor-node", "get", "/metrics", NULL);
    NO("dra-doctor-certs", "get", "/metrics", NULL);
    /* certs: the one webhook configuration and the one Secret. */
    YES("dra-doctor-certs", "patch", "validatingwebhookconfigurations/dra-doctor", NULL);
    NO("dra-doctor-certs", "update", "validatingwebhookconfigurations/dra-doctor", NULL);
    NO("dra-doctor-certs", "patch", "validatingwebhookconfigurations/other", NULL);
    NO("dra-doctor-certs", "list", "validatingwebhookconfigurations", NULL);
    NO("dra-doctor-certs", "create", "validatingwebhookconfigurations", NULL);
    NO("dra-doctor-certs", "patch", "mutatingwebhookconfigurations/dra-doctor", NULL);
    YES("dra-doctor-certs", "get", "secrets/dra-doctor-webhook-tls", NS);
    YES("dra-doctor-certs", "patch", "secrets/dra-doctor-webhook-tls", NS);
    YES("dra-doctor-certs", "create", "secrets", NS);
    NO("dra-doctor-certs", "get", "secrets/other", NS);
    NO("dra-doctor-certs", "list", "secrets", NS);
    NO("dra-doctor-certs", "delete", "secrets/dra-doctor-webhook-tls", NS);
    NO("dra-doctor-certs", "create", "secrets", "default");
    /* controller and node agent, unchanged from what the other e2e tests run under. */
    YES("dra-doctor-controller", "patch", "pods", "default");
    YES("dra-doctor-controller", "update", "leases", NS);
    NO("dra-doctor-controller", "update", "leases", "kube-system");
    NO("dra-doctor-controller", "get", "secrets", NS);
    YES("dra-doctor-node", "patch", "nodes", NULL);
    NO("dra-doctor-node", "list", "pods", NULL);
}

/* ---- 5b. the certs Job's command under its ServiceAccount -------------------------------- */

static int own_vwc, own_secret; /* this test created them: delete at the end */

/* The Secret's resourceVersion and data.KEY into the buffers; 0 when it does not exist. */
static int secret(char *rv, size_t rvsize, const char *key, char *val, size_t valsize)
{
    cJSON *o;
    const char *v;

    if (sh("kubectl get secret dra-doctor-webhook-tls -n " NS " -o json 2>/dev/null") ||
        !(o = cJSON_Parse(out)))
        return 0;
    snprintf(rv, rvsize, "%s", dd_json_str(o, "metadata", "resourceVersion", NULL));
    assert_string_equal(dd_json_str(o, "type", NULL), "kubernetes.io/tls");
    v = dd_json_str(o, "data", key, NULL);
    if (!v)
        fail_msg("Secret dra-doctor-webhook-tls has no %s", key);
    snprintf(val, valsize, "%s", v);
    cJSON_Delete(o);
    return 1;
}

/*
 * `dra-doctor certs` with exactly the Job's arguments, under the certs ServiceAccount's
 * token: the Secret is created, the caBundle set; a second run writes nothing; a forced
 * renewal updates the Secret.  The configuration it patches is the real one's webhooks
 * limited to objects with the probe label (nothing else is ever sent to it).  When a
 * configuration named dra-doctor is already registered (another test's), it is left
 * alone and only the Secret part runs.
 */
static void certs_job_under_its_rbac(void **state)
{
    const char *bin = getenv("DD_BIN");
    struct mf_set b;
    const cJSON *job, *a;
    cJSON *vwc, *wh;
    char args[2048] = "", kcfg[512], rv1[64], rv2[64], rv3[64], ca[16384], path[512], *text;
    size_t n = 0;
    FILE *f;

    (void)state;
    assert_non_null(bin);
    apply_rbac();
    own_secret = !secret(rv1, sizeof(rv1), "ca.crt", ca, sizeof(ca));
    own_vwc = sh("kubectl get validatingwebhookconfiguration dra-doctor -o name 2>&1") != 0;

    render(BUILTIN, &b);
    if (own_vwc) {
        vwc = cJSON_Duplicate(need(&b, "ValidatingWebhookConfiguration", "dra-doctor"), 1);
        cJSON_ArrayForEach(wh, cJSON_GetObjectItem(vwc, "webhooks")) {
            cJSON *sel = cJSON_CreateObject(), *ml = cJSON_AddObjectToObject(sel, "matchLabels");
            cJSON_AddStringToObject(ml, PROBE_LABEL, "1");
            cJSON_AddItemToObject(wh, "objectSelector", sel);
            cJSON_ReplaceItemInObject(wh, "failurePolicy", cJSON_CreateString("Ignore"));
        }
        text = cJSON_Print(vwc);
        snprintf(path, sizeof(path), "%s/certs-vwc.json", dir);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        free(text);
        cJSON_Delete(vwc);
        if (sh("kubectl create -f %s 2>&1", path))
            fail_msg("webhook configuration dra-doctor: %s", out);
    } else {
        fprintf(stderr, "  (a configuration dra-doctor exists already: certs runs without "
                        "--webhook-config)\n");
    }
    /* The Job's arguments, word for word. */
    job = need(&b, "Job", "dra-doctor-certs");
    cJSON_ArrayForEach(a, dd_json_arr(container(job, "certs"), "args", NULL)) {
        if (!own_vwc && (!strcmp(a->valuestring, "--webhook-config") ||
                         (a->prev && !strcmp(a->prev->valuestring, "--webhook-config"))))
            continue;
        n += (size_t)snprintf(args + n, sizeof(args) - n, " '%s'", a->valuestring);
    }
    mf_set_release(&b);

    /* A kubeconfig with the certs ServiceAccount's token, as the Job's pod would have. */
    snprintf(kcfg, sizeof(kcfg), "%s/certs.kubeconfig", dir);
    if (sh("kubectl create token dra-doctor-certs -n " NS " --duration=10m >%s/token 2>&1 && "
           "kubectl config view --raw --minify >%s && "
           "KUBECONFIG=%s kubectl config set-credentials certs --token=\"$(cat %s/token)\" "
           ">/dev/null && "
           "KUBECONFIG=%s kubectl config set-context --current --user=certs >/dev/null 2>&1",
           dir, kcfg, kcfg, dir, kcfg))
        fail_msg("kubeconfig: %s", out);

    if (sh("%s%s --kubeconfig %s 2>&1", bin, args, kcfg))
        fail_msg("dra-doctor%s under the certs ServiceAccount: %s", args, out);
    fprintf(stderr, "%s", out);
    if (!secret(rv1, sizeof(rv1), "ca.crt", ca, sizeof(ca)))
        fail_msg("dra-doctor certs wrote no Secret");
    if (own_vwc) {
        int nwh = 0;
        assert_int_equal(sh("kubectl get validatingwebhookconfiguration dra-doctor -o json"), 0);
        vwc = cJSON_Parse(out);
        assert_non_null(vwc);
        cJSON_ArrayForEach(wh, cJSON_GetObjectItem(vwc, "webhooks")) {
            const char *bundle = dd_json_str(wh, "clientConfig", "caBundle", NULL);
            if (!bundle || strcmp(bundle, ca))
                fail_msg("webhook %s: caBundle is not the Secret's ca.crt",
                         dd_json_str(wh, "name", NULL));
            nwh++;
        }
        assert_int_equal(nwh, 2);
        cJSON_Delete(vwc);
    }

    /* Idempotent: the Job can run again (the CronJob does, daily) without writing. */
    if (sh("%s%s --kubeconfig %s 2>&1", bin, args, kcfg))
        fail_msg("second run: %s", out);
    assert_contains(out, "nothing to do");
    secret(rv2, sizeof(rv2), "ca.crt", ca, sizeof(ca));
    assert_string_equal(rv1, rv2);
    /* A renewal changes the existing Secret (its patch permission). */
    if (sh("%s%s --force --kubeconfig %s 2>&1", bin, args, kcfg))
        fail_msg("forced renewal: %s", out);
    secret(rv3, sizeof(rv3), "tls.crt", ca, sizeof(ca));
    assert_string_not_equal(rv2, rv3);
}

/* ---- 6. what the configuration sends --------------------------------------------------------- */

#define POD_SPEC_PLAIN "{\"restartPolicy\":\"%s\",\"containers\":[{\"name\":\"c\",\"image\":\"pause\"}]}"
#define POD_SPEC_DRA                                                                          \
    "{\"restartPolicy\":\"%s\",\"containers\":[{\"name\":\"c\",\"image\":\"pause\","           \
    "\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}],"                                      \
    "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"probe\"}]}"

/* Writes an object of kind into dir/probe.json: a workload whose pod template uses DRA or
 * not, labelled for the probe configuration; returns its path in a static buffer. */
static const char *probe_object(const char *kind, const char *ns, int dra)
{
    static char path[512];
    char spec[1024], obj[4096];
    const char *restart = !strcmp(kind, "Job") || !strcmp(kind, "CronJob") ? "Never" : "Always";
    const char *meta = "\"metadata\":{\"name\":\"probe\",\"namespace\":\"%s\","
                       "\"labels\":{\"" PROBE_LABEL "\":\"1\",\"app\":\"probe\"}}";
    char m[512], tmpl[1536];

    snprintf(spec, sizeof(spec), dra ? POD_SPEC_DRA : POD_SPEC_PLAIN, restart);
    snprintf(m, sizeof(m), meta, ns);
    snprintf(tmpl, sizeof(tmpl), "{\"metadata\":{\"labels\":{\"app\":\"probe\"}},\"spec\":%s}",
             spec);
    if (!strcmp(kind, "Pod"))
        snprintf(obj, sizeof(obj), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",%s,\"spec\":%s}", m,
                 spec);
    else if (!strcmp(kind, "Job"))
        snprintf(obj, sizeof(obj),
                 "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",%s,\"spec\":{\"template\":%s}}", m,
                 tmpl);
    else if (!strcmp(kind, "CronJob"))
        snprintf(obj, sizeof(obj),
                 "{\"apiVersion\":\"batch/v1\",\"kind\":\"CronJob\",%s,\"spec\":{\"schedule\":"
                 "\"0 0 * * *\",\"jobTemplate\":{\"spec\":{\"template\":%s}}}}", m, tmpl);
    else if (!strcmp(kind, "ResourceClaimTemplate"))
        snprintf(obj, sizeof(obj),
                 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",%s,"
                 "\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":"
                 "{\"deviceClassName\":\"probe\"}}]}}}}", m);
    else /* apps/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet */
        snprintf(obj, sizeof(obj),
                 "{\"apiVersion\":\"apps/v1\",\"kind\":\"%s\",%s,\"spec\":{\"selector\":"
                 "{\"matchLabels\":{\"app\":\"probe\"}},%s\"template\":%s}}",
                 kind, m, !strcmp(kind, "StatefulSet") ? "\"serviceName\":\"probe\"," : "", tmpl);
    write_file("probe.json", obj);
    snprintf(path, sizeof(path), "%s/probe.json", dir);
    return path;
}

/* 1 when the probe configuration's webhook `name` was called for this create (and failed, as
 * its Service does not exist), 0 when the create went through without it. */
static int sent(const char *kind, const char *ns, int dra, const char *name)
{
    const char *path = probe_object(kind, ns, dra);
    char want[256];
    int rc = sh("kubectl create --dry-run=server -f %s 2>&1", path);

    snprintf(want, sizeof(want), "failed calling webhook \"%s\"", name);
    if (rc == 0)
        return 0;
    if (!strstr(out, want))
        fail_msg("creating a %s%s in %s failed, not at the webhook: %s", dra ? "DRA " : "", kind,
                 ns, out);
    return 1;
}

static void configuration_selects_dra_objects(void **state)
{
    static const char *const workloads[] = { "Pod", "Deployment", "StatefulSet", "DaemonSet",
                                             "ReplicaSet", "Job", "CronJob" };
    struct mf_set b;
    const cJSON *vwc;
    cJSON *probe, *wh, *meta;
    char path[512], *text;
    size_t i;
    time_t end;
    FILE *f;

    (void)state;
    /* A namespace (with its default ServiceAccount, which pods need) and a DeviceClass to
     * update, both before the probe configuration exists. */
    assert_int_equal(sh("kubectl create namespace " PROBE_NS " 2>&1"), 0);
    write_file("class.json", "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                             "\"metadata\":{\"name\":\"" PROBE_VWC "\",\"labels\":{\""
                             PROBE_LABEL "\":\"1\"}}}");
    if (sh("kubectl apply -f %s/class.json 2>&1", dir))
        fail_msg("DeviceClass: %s", out);
    end = time(NULL) + WAIT_S;
    while (sh("kubectl get serviceaccount default -n " PROBE_NS " 2>&1")) {
        if (time(NULL) > end)
            fail_msg("no default ServiceAccount in " PROBE_NS);
        sleep(1);
    }

    /* The rendered configuration, limited to labelled objects and failing closed. */
    render(BUILTIN, &b);
    vwc = need(&b, "ValidatingWebhookConfiguration", "dra-doctor");
    probe = cJSON_Duplicate(vwc, 1);
    meta = cJSON_GetObjectItem(probe, "metadata");
    cJSON_ReplaceItemInObject(meta, "name", cJSON_CreateString(PROBE_VWC));
    cJSON_DeleteItemFromObject(meta, "labels");
    cJSON_ArrayForEach(wh, cJSON_GetObjectItem(probe, "webhooks")) {
        cJSON *sel = cJSON_CreateObject(), *ml = cJSON_AddObjectToObject(sel, "matchLabels");
        cJSON_AddStringToObject(ml, PROBE_LABEL, "1");
        cJSON_AddItemToObject(wh, "objectSelector", sel);
        cJSON_ReplaceItemInObject(wh, "failurePolicy", cJSON_CreateString("Fail"));
        /* A Service that does not exist: every request sent fails, and says so (the real
         * webhook may be running behind the real one). */
        cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(wh, "clientConfig"),
                                                      "service"),
                                  "name", cJSON_CreateString(PROBE_VWC "-nowhere"));
    }
    text = cJSON_Print(probe);
    snprintf(path, sizeof(path), "%s/probe-vwc.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(probe);
    mf_set_release(&b);
    if (sh("kubectl apply -f %s 2>&1", path))
        fail_msg("probe configuration: %s", out);

    /* The API server picks a new configuration up within a second or so. */
    end = time(NULL) + WAIT_S;
    while (!sent("ResourceClaimTemplate", PROBE_NS, 1, "claims.dra-doctor.io")) {
        if (time(NULL) > end)
            fail_msg("the probe configuration never took effect");
        usleep(250000);
    }

    for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
        if (!sent(workloads[i], PROBE_NS, 1, "claims.dra-doctor.io"))
            fail_msg("a %s with resourceClaims is not sent to claims.dra-doctor.io", workloads[i]);
        if (sent(workloads[i], PROBE_NS, 0, "claims.dra-doctor.io"))
            fail_msg("a %s without resourceClaims is sent to claims.dra-doctor.io", workloads[i]);
    }
    if (sent("Pod", "kube-system", 1, "claims.dra-doctor.io"))
        fail_msg("a DRA pod in kube-system is sent to the webhook");

    /* DeviceClasses: created and updated through deviceclasses.dra-doctor.io. */
    write_file("class2.json", "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
                              "\"metadata\":{\"name\":\"" PROBE_VWC "-2\",\"labels\":{\""
                              PROBE_LABEL "\":\"1\"}}}");
    assert_int_not_equal(sh("kubectl create --dry-run=server -f %s/class2.json 2>&1", dir), 0);
    assert_contains(out, "failed calling webhook \"deviceclasses.dra-doctor.io\"");
    assert_int_not_equal(sh("kubectl label --dry-run=server deviceclass " PROBE_VWC
                            " e2e.dra-doctor.io/x=1 2>&1"), 0);
    assert_contains(out, "failed calling webhook \"deviceclasses.dra-doctor.io\"");
}

/* ---- setup -------------------------------------------------------------------------------- */

static int setup(void **state)
{
    FILE *f;
    size_t n;

    (void)state;
    if (!getenv("KUBECONFIG")) {
        fprintf(stderr, "e2e_deploy: run me through scripts/e2e.sh\n");
        return -1;
    }
    f = fopen("VERSION", "r");
    if (!f)
        return -1;
    n = fread(version, 1, sizeof(version) - 1, f);
    fclose(f);
    version[n] = '\0';
    version[strcspn(version, " \r\n")] = '\0';
    snprintf(dir, sizeof(dir), "/tmp/dd-e2e-deploy-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    created = cJSON_CreateArray();
    return 0;
}

static int teardown(void **state)
{
    const cJSON *e;

    (void)state;
    /* The probe configuration first: it fails closed for what carries its label. */
    sh("kubectl delete validatingwebhookconfiguration " PROBE_VWC " --ignore-not-found 2>&1");
    if (own_vwc)
        sh("kubectl delete validatingwebhookconfiguration dra-doctor --ignore-not-found 2>&1");
    if (own_secret)
        sh("kubectl delete secret dra-doctor-webhook-tls -n " NS " --ignore-not-found 2>&1");
    sh("kubectl delete deviceclass " PROBE_VWC " --ignore-not-found 2>&1");
    sh("kubectl delete namespace " PROBE_NS " --wait=false --ignore-not-found 2>&1");
    cJSON_ArrayForEach(e, created) {
        const char *ns = cJSON_GetArrayItem(e, 1)->valuestring;
        sh("kubectl delete %s %s %s%s --ignore-not-found 2>&1",
           cJSON_GetArrayItem(e, 0)->valuestring, cJSON_GetArrayItem(e, 2)->valuestring,
           *ns ? "-n " : "", ns);
    }
    cJSON_Delete(created);
    sh("rm -rf %s", dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overlays_render),
        cmocka_unit_test(webhook_configuration),
        cmocka_unit_test(pods_locked_down),
        cmocka_unit_test(server_dry_run),
        cmocka_unit_test(rbac_least_privilege),
        cmocka_unit_test(certs_job_under_its_rbac),
        cmocka_unit_test(configuration_selects_dra_objects),
    };
    return cmocka_run_group_tests_name("e2e-deploy", tests, setup, teardown);
}
