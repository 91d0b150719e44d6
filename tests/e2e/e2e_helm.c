/*
 * e2e_helm.c - the Helm chart (deploy/helm/dra-doctor) with helm built from its Go
 * module ($DD_HELM, e2e/node/build.sh helm), against the real cluster:
 *
 *   1. `helm lint --strict`; values.schema.json refuses bad values at install with the
 *      value's path, and the templates' own checks say what to change;
 *   2. `helm template` with default values renders the objects of `kubectl kustomize
 *      deploy/overlays/builtin-certs`, and with certs.source=cert-manager those of the
 *      cert-manager overlay, field for field, but for what deploy/helm/differences.yaml
 *      lists (each listed difference must occur);
 *   3. values reach the objects they name (another release name and namespace, k3s
 *      host paths, the webhook's flags and policies, replicas, components switched
 *      off), and that rendering passes `kubectl apply --dry-run=server`;
 *   4. on the real node: the kustomize install scripts/e2e.sh made is removed, then
 *      `helm install --wait`; the seed's typo DeviceClass is refused through the
 *      installed webhook; a pod stuck on a missing DeviceClass gets its root cause,
 *      which the controller's dra_doctor_pods_with_root_cause reports and
 *      `kubectl dra-doctor diagnose` (the binary as a kubectl plugin, with
 *      --kubeconfig, --context and -n) prints; `helm upgrade` changes the webhook
 *      (--unknown-driver=warn admits the typo with a warning) without renewing the
 *      certificates; `helm uninstall` leaves no object behind, and while it and the
 *      upgrade run, DeviceClass writes never fail for want of a webhook (the webhook
 *      configuration goes first).  Then the kustomize install is put back
 *      (scripts/stack.sh deploy), for the programs after this one.
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
#include "formats/yaml.h"

#define CHART "deploy/helm/dra-doctor"
#define DIFFS "deploy/helm/differences.yaml"
#define BUILTIN "deploy/overlays/builtin-certs"
#define CERTMGR "deploy/overlays/cert-manager"
#define NS "dra-doctor"
#define APP_NS "dd-e2e-helm"
#define DRY_NS "dd-e2e-helm-dry"
#define TYPO "tests/data/lint/seed/fault-2-typo/deviceclass.yaml"
#define WAIT_S 180

static const char *helm;
static char dir[256];
static int removed_kustomize; /* this test took scripts/e2e.sh's install away: put it back */
static cJSON *diffs;          /* deploy/helm/differences.yaml */

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t0;

static void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void step(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "  [%5.1f s] ", now_s() - t0);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- renderings ----------------------------------------------------------------- */

static void load(struct mf_set *set, const char *what)
{
    size_t i;

    mf_set_init(set);
    if (mf_load_buffer(set, what, out, strlen(out), NULL) != DD_OK || set->nerrors) {
        for (i = 0; i < set->ndiags; i++)
            fprintf(stderr, "  %s\n", set->diags[i].text);
        fail_msg("%s renders to unreadable YAML", what);
    }
}

/* helm template RELEASE CHART -n NS ARGS into set. */
static void helm_template(struct mf_set *set, const char *release, const char *ns,
                          const char *args)
{
    if (sh("%s template %s " CHART " -n %s %s 2>&1", helm, release, ns, args))
        fail_msg("helm template %s: %s", args, out);
    load(set, "helm template");
}

static void kustomize(struct mf_set *set, const char *kdir)
{
    if (sh("kubectl kustomize %s 2>&1", kdir))
        fail_msg("kubectl kustomize %s: %s", kdir, out);
    load(set, kdir);
}

/* A container's args joined with single spaces. */
static const char *args_of(const cJSON *workload, const char *container)
{
    static char buf[4096];
    const cJSON *pod = dd_json_path(workload, "spec", "template", "spec", NULL), *c, *a;
    size_t n = 0;

    if (!pod)
        pod = dd_json_path(workload, "spec", "jobTemplate", "spec", "template", "spec", NULL);
    buf[0] = '\0';
    cJSON_ArrayForEach(c, dd_json_arr(pod, "containers", NULL))
        if (!strcmp(dd_json_str(c, "name", NULL) ? dd_json_str(c, "name", NULL) : "", container))
            cJSON_ArrayForEach(a, dd_json_arr(c, "args", NULL))
                if (cJSON_IsString(a) && n < sizeof(buf))
                    n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? " " : "",
                                          a->valuestring);
    return buf;
}

/* The first path at which a and b differ, into path; 0 when they are equal. */
static int first_diff(const cJSON *a, const cJSON *b, char *path, size_t size)
{
    size_t n = strlen(path);
    const cJSON *x, *y;
    int i;

    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        cJSON_ArrayForEach(x, a) {
            snprintf(path + n, size - n, ".%s", x->string);
            if (!(y = cJSON_GetObjectItemCaseSensitive(b, x->string))) {
                snprintf(path + strlen(path), size - strlen(path), " (kustomize only)");
                return 1;
            }
            if (first_diff(x, y, path, size))
                return 1;
        }
        cJSON_ArrayForEach(y, b)
            if (!cJSON_GetObjectItemCaseSensitive(a, y->string)) {
                snprintf(path + n, size - n, ".%s (helm only)", y->string);
                return 1;
            }
        path[n] = '\0';
        return 0;
    }
    if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
            snprintf(path + n, size - n, " (%d items in kustomize, %d in helm)",
                     cJSON_GetArraySize(a), cJSON_GetArraySize(b));
            return 1;
        }
        for (i = 0; i < cJSON_GetArraySize(a); i++) {
            snprintf(path + n, size - n, "[%d]", i);
            if (first_diff(cJSON_GetArrayItem(a, i), cJSON_GetArrayItem(b, i), path, size))
                return 1;
        }
        path[n] = '\0';
        return 0;
    }
    if (cJSON_Compare(a, b, 1))
        return 0;
    {
        char *sa = cJSON_PrintUnformatted(a), *sb = cJSON_PrintUnformatted(b);
        snprintf(path + n, size - n, ": kustomize %.200s, helm %.200s", sa ? sa : "?",
                 sb ? sb : "?");
        free(sa);
        free(sb);
    }
    return 1;
}

static enum dd_rc keep_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    (void)pos;
    (void)npos;
    cJSON_Delete(*(cJSON **)ctx);
    *(cJSON **)ctx = root;
    return DD_OK;
}

static enum dd_rc doc_error(void *ctx, const struct dd_err *err)
{
    (void)ctx;
    fprintf(stderr, "  " DIFFS ": %s\n", err->msg);
    return DD_EPARSE;
}

/* 1 when name is base-XXXXXXXX (eight lower-case hex digits). */
static int renamed_from(const char *name, const char *base)
{
    size_t n = strlen(base);

    return !strncmp(name, base, n) && name[n] == '-' && strlen(name + n + 1) == 8 &&
           strspn(name + n + 1, "0123456789abcdef") == 8;
}

/*
 * Helm's rendering (args) against the overlay kdir, with exactly the differences of
 * deploy/helm/differences.yaml taken out.  Each listed difference must occur.
 */
static void same_as_kustomize(const char *kdir, const char *args)
{
    struct mf_set k, h;
    const cJSON *d, *e;
    size_t i, hooks = 0, renamed = 0, matched = 0;
    char path[2048];

    kustomize(&k, kdir);
    helm_template(&h, NS, NS, args);
    for (i = 0; i < h.n; i++) {
        cJSON *o = h.objs[i].json, *labels = cJSON_GetObjectItemCaseSensitive(
                                        cJSON_GetObjectItemCaseSensitive(o, "metadata"), "labels");
        const char *hook = dd_json_str(o, "metadata", "annotations", "helm.sh/hook", NULL);
        const char *kname = NULL;
        const cJSON *ko;

        if (hook) {
            int listed = 0;
            cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(diffs, "hooks"))
                listed |= !strcmp(dd_json_str(d, "hook", NULL), hook);
            if (!listed)
                fail_msg("%s %s: a %s hook that differences.yaml does not list", h.objs[i].kind,
                         h.objs[i].name, hook);
            hooks++;
            continue;
        }
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(diffs, "labels")) {
            if (!cJSON_GetObjectItemCaseSensitive(labels, e->valuestring))
                fail_msg("%s %s: no label %s (differences.yaml says Helm adds it everywhere)",
                         h.objs[i].kind, h.objs[i].name, e->valuestring);
            cJSON_DeleteItemFromObjectCaseSensitive(labels, e->valuestring);
        }
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(diffs, "renamed"))
            if (!strcmp(dd_json_str(d, "kind", NULL), h.objs[i].kind) &&
                renamed_from(h.objs[i].name, dd_json_str(d, "name", NULL))) {
                kname = dd_json_str(d, "name", NULL);
                cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "metadata"),
                                                       "name", cJSON_CreateString(kname));
                renamed++;
            }
        if (!kname)
            kname = h.objs[i].name;
        if (!(ko = find(&k, h.objs[i].kind, kname)))
            fail_msg("%s %s: rendered by helm only, and not in differences.yaml", h.objs[i].kind,
                     kname);
        path[0] = '\0';
        if (first_diff(ko, o, path, sizeof(path)))
            fail_msg("%s %s differs: %s", h.objs[i].kind, kname, path);
        matched++;
    }
    for (i = 0; i < k.n; i++) {
        int listed = 0;
        if (find(&h, k.objs[i].kind, k.objs[i].name))
            continue;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(diffs, "kustomizeOnly"))
            listed |= !strcmp(dd_json_str(d, "kind", NULL), k.objs[i].kind) &&
                      !strcmp(dd_json_str(d, "name", NULL), k.objs[i].name);
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(diffs, "renamed"))
            listed |= !strcmp(dd_json_str(d, "kind", NULL), k.objs[i].kind) &&
                      !strcmp(dd_json_str(d, "name", NULL), k.objs[i].name);
        if (!listed)
            fail_msg("%s %s: rendered by kustomize only, and not in differences.yaml",
                     k.objs[i].kind, k.objs[i].name);
    }
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(diffs, "kustomizeOnly"))
        if (!find(&k, dd_json_str(d, "kind", NULL), dd_json_str(d, "name", NULL)))
            fail_msg("differences.yaml: kustomize renders no %s %s", dd_json_str(d, "kind", NULL),
                     dd_json_str(d, "name", NULL));
    if (!strcmp(kdir, BUILTIN))
        assert_int_equal(renamed, cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diffs, "renamed")));
    assert_true(hooks > 0);
    assert_int_equal(matched + cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(diffs, "kustomizeOnly")),
                     k.n);
    step("%s: %zu objects the same, %zu hook objects, %zu renamed", kdir, matched, hooks, renamed);
    mf_set_release(&k);
    mf_set_release(&h);
}

/* ---- 1. lint and values -------------------------------------------------------------- */

static void lint_and_schema(void **state)
{
    static const char *const bad[][2] = {
        { "webhook.failurePolicy.deviceClasses=Sometimes",
          "at '/webhook/failurePolicy/deviceClasses': value must be one of 'Fail', 'Ignore'" },
        { "webhook.replica=3", "at '/webhook': additional properties 'replica' not allowed" },
        { "controller.replicas=0", "at '/controller/replicas': minimum: got 0, want 1" },
        { "webhook.unknownDriver=allow", "at '/webhook/unknownDriver'" },
        { "certs.source=vault", "at '/certs/source': value must be one of 'builtin', 'cert-manager'" },
        { "node.hostPaths[0].path=etc", "at '/node/hostPaths/0/path'" },
        { "controller.resources.limits.memory=lots", "at '/controller/resources/limits/memory'" },
        /* The templates' own checks: what no schema can say. */
        { "node.containerdConfig=/opt/containerd.toml",
          "node.containerdConfig /opt/containerd.toml is in none of node.hostPaths" },
        { "controller.leaderElection.retryPeriod=12",
          "need leaseDuration (15) > renewDeadline (10) > retryPeriod (12)" },
    };
    size_t i;

    (void)state;
    if (sh("%s lint --strict " CHART " 2>&1", helm))
        fail_msg("helm lint --strict: %s", out);
    assert_contains(out, "1 chart(s) linted, 0 chart(s) failed");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (!sh("%s template " NS " " CHART " -n " NS " --set '%s' 2>&1", helm, bad[i][0]))
            fail_msg("helm template --set %s was accepted", bad[i][0]);
        assert_contains(out, bad[i][1]);
    }
    step("helm lint --strict passes; %zu bad values refused with their path", i);
}

/* ---- 2. the same objects as kustomize ------------------------------------------------ */

static void template_matches_kustomize(void **state)
{
    (void)state;
    same_as_kustomize(BUILTIN, "");
    same_as_kustomize(CERTMGR, "--set certs.source=cert-manager");
}

/* ---- 3. values reach the objects -------------------------------------------------- */

#define K3S_DIR "/var/lib/rancher/k3s/agent/etc/containerd"

static const char *const custom =
    "--set image.repository=registry.example/dd --set image.tag=9.9.9 "
    "--set image.pullPolicy=Always "
    "--set webhook.replicas=3 --set webhook.unknownDriver=warn "
    "--set 'webhook.knownDrivers={a.example.com,b.example.com}' "
    "--set webhook.failurePolicy.deviceClasses=Ignore "
    "--set 'webhook.excludedNamespaces={kube-system,gpu-system}' "
    "--set webhook.namespaceSelector.matchLabels.dra=enabled "
    "--set controller.replicas=1 --set controller.podDisruptionBudget.enabled=false "
    "--set controller.resources.limits.memory=1Gi --set controller.leaderElection.leaseDuration=30 "
    "--set node.containerdConfig=" K3S_DIR "/config.toml "
    "--set 'node.hostPaths[0].name=k3s-containerd,node.hostPaths[0].path=" K3S_DIR "' "
    "--set 'node.hostPaths[1].name=cdi-etc,node.hostPaths[1].path=/etc/cdi' ";

static void check_custom(const struct mf_set *s, const char *ns)
{
    const cJSON *wh, *vwc, *ctl, *ds, *job = NULL, *hook = NULL, *c, *e, *v;
    char want[512];
    size_t i;
    int selector_ok = 0, mount_ok = 0, vol_ok = 0;

    for (i = 0; i < s->n; i++) {
        const cJSON *pod = dd_json_path(s->objs[i].json, "spec", "template", "spec", NULL);
        if (strncmp(s->objs[i].name, "dd-dra-doctor", 13))
            fail_msg("%s %s: not named after the release", s->objs[i].kind, s->objs[i].name);
        if (s->objs[i].namespace_[0] && strcmp(s->objs[i].namespace_, ns))
            fail_msg("%s %s: in namespace %s", s->objs[i].kind, s->objs[i].name,
                     s->objs[i].namespace_);
        if (!pod)
            pod = dd_json_path(s->objs[i].json, "spec", "jobTemplate", "spec", "template", "spec", NULL);
        cJSON_ArrayForEach(c, dd_json_arr(pod, "containers", NULL)) {
            assert_string_equal(dd_json_str(c, "image", NULL), "registry.example/dd:9.9.9");
            assert_string_equal(dd_json_str(c, "imagePullPolicy", NULL), "Always");
        }
        if (!strcmp(s->objs[i].kind, "Job") &&
            dd_json_str(s->objs[i].json, "metadata", "annotations", "helm.sh/hook", NULL))
            hook = s->objs[i].json;
        else if (!strcmp(s->objs[i].kind, "Job"))
            job = s->objs[i].json;
    }
    wh = need(s, "Deployment", "dd-dra-doctor-webhook");
    assert_true(dd_json_path(wh, "spec", "replicas", NULL)->valuedouble == 3);
    assert_contains(args_of(wh, "webhook"), "--unknown-driver=warn --known-driver=a.example.com "
                                            "--known-driver=b.example.com");
    vwc = need(s, "ValidatingWebhookConfiguration", "dd-dra-doctor");
    cJSON_ArrayForEach(e, dd_json_arr(vwc, "webhooks", NULL)) {
        const cJSON *x;
        assert_string_equal(dd_json_str(e, "failurePolicy", NULL), "Ignore");
        assert_string_equal(dd_json_str(e, "clientConfig", "service", "name", NULL),
                            "dd-dra-doctor-webhook");
        assert_string_equal(dd_json_str(e, "clientConfig", "service", "namespace", NULL), ns);
        assert_string_equal(dd_json_str(e, "namespaceSelector", "matchLabels", "dra", NULL), "enabled");
        cJSON_ArrayForEach(x, dd_json_arr(e, "namespaceSelector", "matchExpressions", NULL))
            selector_ok += str_in(dd_json_arr(x, "values", NULL), "kube-system") &&
                           str_in(dd_json_arr(x, "values", NULL), "gpu-system") &&
                           str_in(dd_json_arr(x, "values", NULL), ns);
    }
    assert_int_equal(selector_ok, 2);
    ctl = need(s, "Deployment", "dd-dra-doctor-controller");
    assert_true(dd_json_path(ctl, "spec", "replicas", NULL)->valuedouble == 1);
    assert_null(find(s, "PodDisruptionBudget", "dd-dra-doctor-controller"));
    need(s, "PodDisruptionBudget", "dd-dra-doctor-webhook");
    snprintf(want, sizeof(want), "controller --leader-elect-namespace=%s "
             "--leader-elect-name=dd-dra-doctor-controller --metrics-bind-address=0.0.0.0:8080 "
             "--leader-elect-lease-duration=30", ns);
    assert_string_equal(args_of(ctl, "controller"), want);
    c = cJSON_GetArrayItem(dd_json_arr(ctl, "spec", "template", "spec", "containers", NULL), 0);
    assert_string_equal(dd_json_str(c, "resources", "limits", "memory", NULL), "1Gi");
    ds = need(s, "DaemonSet", "dd-dra-doctor-node");
    assert_string_equal(args_of(ds, "node"), "node --host-root=/host --containerd-config="
                                             K3S_DIR "/config.toml --interval=30");
    c = cJSON_GetArrayItem(dd_json_arr(ds, "spec", "template", "spec", "containers", NULL), 0);
    cJSON_ArrayForEach(v, dd_json_arr(c, "volumeMounts", NULL))
        mount_ok += !strcmp(dd_json_str(v, "mountPath", NULL), "/host" K3S_DIR) &&
                    dd_json_true(v, "readOnly", NULL);
    cJSON_ArrayForEach(v, dd_json_arr(ds, "spec", "template", "spec", "volumes", NULL))
        vol_ok += !strcmp(dd_json_str(v, "hostPath", "path", NULL) ? dd_json_str(v, "hostPath", "path", NULL) : "", K3S_DIR);
    assert_int_equal(mount_ok, 1);
    assert_int_equal(vol_ok, 1);
    assert_int_equal(cJSON_GetArraySize(dd_json_arr(ds, "spec", "template", "spec", "volumes", NULL)), 2);
    assert_non_null(job);
    snprintf(want, sizeof(want), "certs --service dd-dra-doctor-webhook --namespace %s --secret "
             "%s/dd-dra-doctor-webhook-tls --webhook-config dd-dra-doctor", ns, ns);
    assert_string_equal(args_of(job, "certs"), want);
    assert_true(str_in(dd_json_arr(cJSON_GetArrayItem(dd_json_arr(need(s, "ClusterRole", "dd-dra-doctor-certs"),
                                                                   "rules", NULL), 0),
                                   "resourceNames", NULL), "dd-dra-doctor"));
    assert_non_null(hook);
    snprintf(want, sizeof(want), "delete --namespace=%s --timeout=120 "
             "validatingwebhookconfiguration/dd-dra-doctor cronjob/dd-dra-doctor-certs "
             "deployment/dd-dra-doctor-controller lease/dd-dra-doctor-controller "
             "secret/dd-dra-doctor-webhook-tls", ns);
    assert_string_equal(args_of(hook, "cleanup"), want);
}

/* Every object the cleanup Job deletes is one its Role or ClusterRole lets it get and delete,
 * by name, and nothing else. */
static void check_cleanup_rbac(const struct mf_set *s, const char *full)
{
    char name[128], args[4096], *tok, *save = NULL;
    const cJSON *job = NULL, *r;
    size_t i, nobj = 0, nrules = 0;

    for (i = 0; i < s->n; i++)
        if (!strcmp(s->objs[i].kind, "Job") &&
            dd_json_str(s->objs[i].json, "metadata", "annotations", "helm.sh/hook", NULL))
            job = s->objs[i].json;
    assert_non_null(job);
    snprintf(args, sizeof(args), "%s", args_of(job, "cleanup"));
    snprintf(name, sizeof(name), "%s-cleanup", full);
    for (tok = strtok_r(args, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        const char *slash = strchr(tok, '/');
        const cJSON *role;
        char res[64];
        int ok = 0;
        if (tok[0] == '-' || !strcmp(tok, "delete"))
            continue;
        assert_non_null(slash);
        snprintf(res, sizeof(res), "%.*ss", (int)(slash - tok), tok);
        role = !strcmp(res, "validatingwebhookconfigurations") ? need(s, "ClusterRole", name)
                                                                : need(s, "Role", name);
        cJSON_ArrayForEach(r, dd_json_arr(role, "rules", NULL))
            ok |= str_in(dd_json_arr(r, "resources", NULL), res) &&
                  str_in(dd_json_arr(r, "resourceNames", NULL), slash + 1) &&
                  str_in(dd_json_arr(r, "verbs", NULL), "delete") &&
                  str_in(dd_json_arr(r, "verbs", NULL), "get") &&
                  cJSON_GetArraySize(dd_json_arr(r, "verbs", NULL)) == 2;
        if (!ok)
            fail_msg("the cleanup Job deletes %s, which its RBAC does not allow by name", tok);
        nobj++;
    }
    cJSON_ArrayForEach(r, dd_json_arr(need(s, "Role", name), "rules", NULL))
        nrules++;
    if (find(s, "ClusterRole", name))
        cJSON_ArrayForEach(r, dd_json_arr(need(s, "ClusterRole", name), "rules", NULL))
            nrules++;
    assert_int_equal(nobj, nrules); /* one rule per object: nothing more is granted */
}

static int dry_run_kind(const struct mf_object *o)
{
    return !strstr(o->api_version, "monitoring.coreos.com") && !strstr(o->api_version, "cert-manager.io");
}

static void values_reach_objects(void **state)
{
    struct mf_set s;
    size_t i, n;
    char path[512];
    char *text;

    (void)state;
    helm_template(&s, "dd", "tools", custom);
    check_custom(&s, "tools");
    check_cleanup_rbac(&s, "dd-dra-doctor");
    mf_set_release(&s);

    /* Components off: what goes with each. */
    helm_template(&s, NS, NS, "--set webhook.enabled=false");
    assert_null(find(&s, "ValidatingWebhookConfiguration", NS));
    assert_null(find(&s, "Service", "dra-doctor-webhook"));
    assert_null(find(&s, "CronJob", "dra-doctor-certs"));
    assert_null(find(&s, "ServiceAccount", "dra-doctor-certs"));
    need(&s, "Deployment", "dra-doctor-controller");
    assert_string_equal(args_of(need(&s, "Job", "dra-doctor-cleanup"), "cleanup"),
                        "delete --namespace=dra-doctor --timeout=120 "
                        "deployment/dra-doctor-controller lease/dra-doctor-controller");
    check_cleanup_rbac(&s, "dra-doctor");
    mf_set_release(&s);
    helm_template(&s, NS, NS, "--set controller.enabled=false --set node.enabled=false");
    assert_null(find(&s, "Deployment", "dra-doctor-controller"));
    assert_null(find(&s, "DaemonSet", "dra-doctor-node"));
    assert_null(find(&s, "ClusterRole", "dra-doctor-node"));
    need(&s, "Deployment", "dra-doctor-webhook");
    check_cleanup_rbac(&s, "dra-doctor");
    mf_set_release(&s);
    helm_template(&s, NS, NS, "--set webhook.enabled=false --set controller.enabled=false");
    for (i = 0; i < s.n; i++)
        if (!strstr(s.objs[i].name, "-node"))
            fail_msg("node agent alone: %s %s rendered", s.objs[i].kind, s.objs[i].name);
    need(&s, "DaemonSet", "dra-doctor-node");
    mf_set_release(&s);
    helm_template(&s, NS, NS, "--set certs.source=cert-manager");
    check_cleanup_rbac(&s, "dra-doctor");
    assert_contains(args_of(need(&s, "Job", "dra-doctor-cleanup"), "cleanup"),
                    "certificate/dra-doctor-webhook certificate/dra-doctor-ca "
                    "deployment/dra-doctor-controller lease/dra-doctor-controller "
                    "secret/dra-doctor-webhook-tls secret/dra-doctor-ca");
    mf_set_release(&s);

    /* Prometheus: the Service for the controller's metrics, the ServiceMonitor, the rule
     * on the metric the controller exports (checked live in helm_lifecycle). */
    helm_template(&s, NS, NS, "--set metrics.serviceMonitor.enabled=true "
                              "--set metrics.prometheusRule.enabled=true "
                              "--set metrics.serviceMonitor.labels.release=kps");
    need(&s, "Service", "dra-doctor-controller-metrics");
    assert_string_equal(dd_json_str(need(&s, "ServiceMonitor", NS), "metadata", "labels", "release", NULL),
                        "kps");
    text = cJSON_PrintUnformatted(need(&s, "PrometheusRule", NS));
    assert_contains(text, "max by (code) (dra_doctor_pods_with_root_cause{namespace=\\\"dra-doctor\\\"}) > 0");
    assert_contains(text, "\"for\":\"15m\"");
    free(text);
    mf_set_release(&s);

    /* The custom rendering is what the API server accepts (CRD kinds aside: not here). */
    if (sh("kubectl create namespace " DRY_NS " 2>&1") && !strstr(out, "AlreadyExists"))
        fail_msg("kubectl create namespace: %s", out);
    helm_template(&s, "dd", DRY_NS, custom);
    n = write_list(&s, dir, "custom.json", dry_run_kind, path, sizeof(path));
    mf_set_release(&s);
    if (sh("kubectl apply --dry-run=server -f %s 2>&1", path))
        fail_msg("kubectl apply --dry-run=server of the custom rendering: %s", out);
    sh("kubectl delete namespace " DRY_NS " --wait=false 2>&1");
    step("custom values reach their objects; %zu objects pass a server dry run", n);
}

/* ---- 4. install, upgrade, uninstall on the real cluster ----------------------------- */

/* A DeviceClass create, dry-run, every 0.2 s until dir/stop exists (at most 300 s); each
 * one the API server fails for want of a webhook goes to dir/NAME.fail. */
static void prober_start(const char *name)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/probe.json", dir);
    sh("rm -f %s/stop %s/%s.fail %s/%s.count", dir, dir, name, dir, name);
    sh("( end=$(( $(date +%%s) + 300 )); while [ ! -e %s/stop ] && [ $(date +%%s) -lt $end ]; do "
       "kubectl create --dry-run=server -f %s >/dev/null 2>%s/%s.err || cat %s/%s.err >> %s/%s.fail; "
       "echo >> %s/%s.count; sleep 0.2; done ) >/dev/null 2>&1 &",
       dir, path, dir, name, dir, name, dir, name, dir, name);
}

/* Stops the prober; returns how many requests it made, failing on any that failed. */
static int prober_stop(const char *name)
{
    int n;

    sh("touch %s/stop; sleep 0.5; wc -l < %s/%s.count 2>/dev/null", dir, dir, name);
    n = atoi(out);
    if (!sh("cat %s/%s.fail 2>/dev/null", dir, name) && out[0])
        fail_msg("%s: DeviceClass writes failed while it ran: %.2000s", name, out);
    assert_true(n > 0);
    return n;
}

static void wait_webhook(void)
{
    double end = now_s() + WAIT_S;
    char path[512];

    snprintf(path, sizeof(path), "%s/probe.json", dir);
    while (sh("kubectl create --dry-run=server -f %s 2>&1", path)) {
        if (now_s() > end)
            fail_msg("the API server does not reach the installed webhook: %s", out);
        usleep(250000);
    }
}

static void helm_or_fail(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void helm_or_fail(const char *what, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (sh("%s %s 2>&1", helm, cmd)) {
        char o[8192];
        snprintf(o, sizeof(o), "%.8000s", out);
        sh("kubectl get pods -n " NS " -o wide 2>&1; kubectl get events -n " NS " 2>&1 | tail -n 20");
        fail_msg("helm %s: %s\n%s", what, o, out);
    }
}

static char *json_field(const char *cmd, const char *jsonpath)
{
    if (sh("%s -o jsonpath='%s' 2>/dev/null", cmd, jsonpath))
        return strdup("");
    return strdup(out);
}

/* A pod whose claim names a DeviceClass nobody made: the controller's root cause for it. */
static void stuck_pod(char *code, size_t size)
{
    double end = now_s() + WAIT_S;
    static const char *const manifest =
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " APP_NS "\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: gpu\n"
        "  namespace: " APP_NS "\nspec:\n  devices:\n    requests:\n    - name: gpu\n"
        "      exactly:\n        deviceClassName: dd-e2e-helm-missing\n---\n"
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: " APP_NS "\nspec:\n"
        "  resourceClaims:\n  - name: gpu\n    resourceClaimName: gpu\n  containers:\n"
        "  - name: c\n    image: ubuntu:22.04\n    command: [sleep, '3600']\n"
        "    resources:\n      claims:\n      - name: gpu\n";
    char path[512];
    FILE *f;

    snprintf(path, sizeof(path), "%s/stuck.yaml", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(manifest, f);
    fclose(f);
    /* The namespace's default ServiceAccount, which admission wants for the pod, comes a
     * moment after the namespace. */
    while (sh("kubectl apply -f %s 2>&1", path)) {
        if (now_s() > end)
            fail_msg("kubectl apply %s: %s", path, out);
        usleep(250000);
    }
    while (sh("kubectl get pod -n " APP_NS " p -o jsonpath='{.metadata.annotations.dra-doctor\\.io/root-cause}' 2>&1") ||
           !out[0]) {
        if (now_s() > end)
            fail_msg("the helm-installed controller wrote no root cause on " APP_NS "/p: %s", out);
        usleep(250000);
    }
    snprintf(code, size, "%.100s", out);
    step("the controller says " APP_NS "/p is stuck on %s", code);
}

/* dra_doctor_pods_with_root_cause of every controller replica, straight from its pod. */
static void metric_counts(const char *code)
{
    char ips[1024], *ip, *save = NULL, want[256];
    double end = now_s() + WAIT_S;
    int n = 0;

    if (sh("kubectl get pods -n " NS " -l app.kubernetes.io/component=controller "
           "-o jsonpath='{.items[*].status.podIP}' 2>&1"))
        fail_msg("controller pods: %s", out);
    snprintf(ips, sizeof(ips), "%.1000s", out);
    snprintf(want, sizeof(want), "dra_doctor_pods_with_root_cause{code=\"%s\"} 1\n", code);
    for (ip = strtok_r(ips, " ", &save); ip; ip = strtok_r(NULL, " ", &save)) {
        while (sh("curl -sS --max-time 5 http://%s:8080/metrics 2>&1", ip) || !strstr(out, want)) {
            if (now_s() > end)
                fail_msg("controller %s: no \"%s\" in its /metrics: %.3000s", ip, want, out);
            usleep(500000);
        }
        n++;
    }
    assert_int_equal(n, 2);
    step("both controller replicas report %.*s", (int)strlen(want) - 1, want);
}

/* kubectl runs the binary as a plugin when it is on PATH as kubectl-dra_doctor. */
static void kubectl_plugin(const char *code)
{
    const char *kc = getenv("KUBECONFIG"), *bin = getenv("DD_BIN");
    char ctx[256], abs[1024];

    assert_non_null(kc);
    assert_non_null(bin);
    assert_non_null(realpath(bin, abs));
    if (sh("mkdir -p %s/plugins && ln -sf %s %s/plugins/kubectl-dra_doctor 2>&1", dir, abs, dir))
        fail_msg("%s", out);
    if (sh("kubectl config current-context 2>&1"))
        fail_msg("current-context: %s", out);
    snprintf(ctx, sizeof(ctx), "%.*s", (int)strcspn(out, "\n"), out);
    if (sh("PATH=%s/plugins:$PATH kubectl plugin list 2>&1", dir))
        fail_msg("kubectl plugin list: %s", out);
    assert_contains(out, "/plugins/kubectl-dra_doctor");
    /* kubectl's conventions: --kubeconfig (no $KUBECONFIG), --context, -n / --namespace. */
    assert_int_equal(sh("env -u KUBECONFIG PATH=%s/plugins:$PATH HOME=%s kubectl dra-doctor diagnose "
                        "-n " APP_NS " p --kubeconfig %s --context %s 2>&1", dir, dir, kc, ctx), 1);
    assert_contains(out, "Pod " APP_NS "/p");
    assert_contains(out, code);
    assert_int_equal(sh("env -u KUBECONFIG PATH=%s/plugins:$PATH HOME=%s kubectl dra-doctor diagnose "
                        "--namespace=" APP_NS " --kubeconfig=%s --context=no-such-context p 2>&1",
                        dir, dir, kc), 2);
    assert_contains(out, "no-such-context");
    assert_int_equal(sh("PATH=%s/plugins:$PATH kubectl dra-doctor 2>&1", dir), 2);
    assert_contains(out, "usage: kubectl dra-doctor");
    step("kubectl dra-doctor diagnose -n " APP_NS " p --kubeconfig --context: %s", code);
}

/* Pods of deleted workloads go after them (garbage collection, graceful termination). */
static void pods_gone(const char *after)
{
    double end = now_s() + WAIT_S;

    while (sh("kubectl get pods,replicasets,jobs -n " NS " -o name 2>&1") || out[0]) {
        if (now_s() > end)
            fail_msg("still there after %s: %s", after, out);
        usleep(250000);
    }
}

static int not_namespace(const struct mf_object *o)
{
    return strcmp(o->kind, "Namespace");
}

/* What may stay in the namespace after the release is gone: what the cluster makes in every
 * namespace (its default ServiceAccount, the root CA ConfigMap), and Events. */
static void nothing_left(void)
{
    pods_gone("helm uninstall");
    if (sh("kubectl get deployments,daemonsets,cronjobs,services,endpointslices,secrets,"
           "configmaps,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets "
           "-n " NS " -o name 2>&1"))
        fail_msg("kubectl get: %s", out);
    assert_string_equal(out, "configmap/kube-root-ca.crt\nserviceaccount/default\n");
    if (sh("kubectl get validatingwebhookconfigurations,clusterroles,clusterrolebindings "
           "-o name 2>&1"))
        fail_msg("kubectl get: %s", out);
    assert_null(strstr(out, "dra-doctor"));
    step("helm uninstall left nothing in " NS " and no cluster-wide object");
}

static void helm_lifecycle(void **state)
{
    char *ca1, *ca2, *rv1, *rv2, *job1, *job2, code[128], path[512];
    struct mf_set k;
    int n;

    (void)state;
    /* scripts/e2e.sh installed dra-doctor with kustomize: take its objects away, the webhook
     * configuration first.  The namespace stays: the namespace controller looks again at one
     * with terminating pods only after their grace period (30 s), the pods themselves go in
     * a few. */
    kustomize(&k, "e2e/deploy");
    write_list(&k, dir, "kustomize.json", not_namespace, path, sizeof(path));
    mf_set_release(&k);
    removed_kustomize = 1;
    if (sh("kubectl delete validatingwebhookconfiguration " NS " --ignore-not-found 2>&1 && "
           "kubectl delete -f %s --ignore-not-found --wait=true --timeout=%ds 2>&1", path, WAIT_S))
        fail_msg("kubectl delete e2e/deploy's objects: %s", out);
    pods_gone("kubectl delete");
    step("the kustomize install is gone");

    helm_or_fail("install", "install " NS " " CHART " -n " NS " --create-namespace --wait "
                 "--wait-for-jobs --timeout %ds", WAIT_S);
    assert_contains(out, "STATUS: deployed");
    step("helm install --wait: deployed");
    wait_webhook();
    step("the webhook answers through its Service");

    /* The seed's typo, refused at the door by the webhook Helm installed. */
    assert_int_not_equal(sh("kubectl apply --dry-run=server -f " TYPO " 2>&1"), 0);
    assert_contains(out, "admission webhook \"deviceclasses.dra-doctor.io\" denied the request");
    assert_contains(out, "'gpu.exmaple.com'");
    assert_contains(out, "Did you mean 'gpu.example.com'?");
    step("the seed's typo DeviceClass is refused: did you mean 'gpu.example.com'");

    stuck_pod(code, sizeof(code));
    metric_counts(code);
    kubectl_plugin(code);

    /* An upgrade that changes the webhook, not the certificates; DeviceClass writes go on. */
    ca1 = json_field("kubectl get validatingwebhookconfiguration " NS, "{.webhooks[0].clientConfig.caBundle}");
    rv1 = json_field("kubectl get secret -n " NS " dra-doctor-webhook-tls", "{.metadata.resourceVersion}");
    job1 = json_field("kubectl get jobs -n " NS " -l app.kubernetes.io/component=certs", "{.items[*].metadata.name}");
    prober_start("upgrade");
    helm_or_fail("upgrade", "upgrade " NS " " CHART " -n " NS " --reuse-values "
                 "--set webhook.unknownDriver=warn --wait --wait-for-jobs --timeout %ds", WAIT_S);
    n = prober_stop("upgrade");
    step("helm upgrade --set webhook.unknownDriver=warn: %d DeviceClass writes during it, none failed", n);
    if (sh("kubectl get deployment -n " NS " dra-doctor-webhook -o jsonpath='{.spec.template.spec.containers[0].args}' 2>&1"))
        fail_msg("%s", out);
    assert_contains(out, "--unknown-driver=warn");
    if (sh("helm_out=$(%s history " NS " -n " NS " 2>&1); echo \"$helm_out\"", helm))
        fail_msg("%s", out);
    assert_contains(out, "Upgrade complete");
    ca2 = json_field("kubectl get validatingwebhookconfiguration " NS, "{.webhooks[0].clientConfig.caBundle}");
    rv2 = json_field("kubectl get secret -n " NS " dra-doctor-webhook-tls", "{.metadata.resourceVersion}");
    job2 = json_field("kubectl get jobs -n " NS " -l app.kubernetes.io/component=certs", "{.items[*].metadata.name}");
    assert_true(ca1[0] && !strcmp(ca1, ca2));
    assert_true(rv1[0] && !strcmp(rv1, rv2));
    assert_true(job1[0] && !strcmp(job1, job2)); /* its pod template did not change */
    free(ca1); free(ca2); free(rv1); free(rv2); free(job1); free(job2);
    wait_webhook();
    /* The new pods answer: the typo is admitted now, with the same finding as a warning. */
    {
        double end = now_s() + WAIT_S;
        while (sh("kubectl apply --dry-run=server -f " TYPO " 2>&1") ||
               !strstr(out, "gpu.exmaple.com")) {
            if (now_s() > end)
                fail_msg("after the upgrade the typo is still refused, or admitted silently: %s", out);
            usleep(250000);
        }
        assert_contains(out, "Warning:");
    }
    step("after the upgrade the typo is admitted with a warning");

    /* Uninstall: the webhook configuration first, so no write ever finds it without pods. */
    prober_start("uninstall");
    helm_or_fail("uninstall", "uninstall " NS " -n " NS " --wait --timeout %ds", WAIT_S);
    n = prober_stop("uninstall");
    step("helm uninstall --wait: %d DeviceClass writes during it, none failed", n);
    nothing_left();
}

/* ---- setup ------------------------------------------------------------------------------ */

static int setup(void **state)
{
    struct ydoc_limits lim = { 64, 1, 0 };
    struct ydoc_sink sink;
    char *text, path[512];
    size_t len;
    FILE *f;

    (void)state;
    t0 = now_s();
    if (!getenv("KUBECONFIG") || !(helm = getenv("DD_HELM")) || !getenv("DD_CLUSTER_DIR")) {
        fprintf(stderr, "e2e_helm: run me through scripts/e2e.sh (KUBECONFIG, DD_HELM, "
                        "DD_CLUSTER_DIR)\n");
        return -1;
    }
    snprintf(dir, sizeof(dir), "/tmp/dd-e2e-helm-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    /* What wait_webhook and the probers create (dry run): a DeviceClass the webhook admits. */
    snprintf(path, sizeof(path), "%s/probe.json", dir);
    if (!(f = fopen(path, "w")))
        return -1;
    fputs("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
          "\"metadata\":{\"name\":\"dd-e2e-helm-probe\"}}", f);
    fclose(f);
    text = test_read_file(DIFFS);
    len = strlen(text);
    memset(&sink, 0, sizeof(sink));
    sink.ctx = &diffs;
    sink.document = keep_doc;
    sink.error = doc_error;
    if (ydoc_parse_stream(text, len, &lim, &sink) != DD_OK || !cJSON_IsObject(diffs)) {
        free(text);
        return -1;
    }
    free(text);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("touch %s/stop", dir);
    /* Whatever happened: no release, no namespace of this test, kustomize's install back. */
    if (!sh("%s status " NS " -n " NS " 2>&1", helm))
        sh("%s uninstall " NS " -n " NS " --wait --timeout %ds 2>&1", helm, WAIT_S);
    sh("kubectl delete namespace " APP_NS " " DRY_NS " --ignore-not-found --wait=false 2>&1");
    sh("kubectl delete deviceclass dd-e2e-helm-probe --ignore-not-found 2>&1");
    if (removed_kustomize) {
        sh("kubectl delete validatingwebhookconfiguration " NS " --ignore-not-found 2>&1");
        if (sh("scripts/stack.sh deploy %s e2e/deploy 2>&1", getenv("DD_CLUSTER_DIR")))
            fprintf(stderr, "e2e_helm: putting the kustomize install back failed: %s\n", out);
        else
            step("the kustomize install is back (scripts/stack.sh deploy)");
    }
    cJSON_Delete(diffs);
    sh("rm -rf %s", dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lint_and_schema),
        cmocka_unit_test(template_matches_kustomize),
        cmocka_unit_test(values_reach_objects),
        cmocka_unit_test(helm_lifecycle),
    };
    return cmocka_run_group_tests_name("e2e-helm", tests, setup, teardown);
}
