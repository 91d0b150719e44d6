/*
 * delete_cmd.c - `dra-doctor delete`: deletes objects one after the other, each
 * gone before the next is touched.
 *
 * The image has no kubectl, and `helm uninstall` needs an order Helm does not
 * give: the ValidatingWebhookConfiguration first (Helm deletes kinds it does not
 * know last, after the webhook's Service and pods), then the controller with its
 * pods (a standby replica would otherwise create the Lease again), then what no
 * chart object owns: the Lease, the certificate Secrets.  The chart's pre-delete
 * hook runs this (deploy/helm/dra-doctor/templates/cleanup-hook.yaml).
 *
 * Every DELETE asks for foreground propagation, so an object with dependents (a
 * Deployment: its ReplicaSets and pods) stays until they are gone; "gone" is a
 * 404, or an object of the same name with another uid, which is reported: what
 * was deleted was made again by something else.
 */
#include "controller.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "formats/json.h"
#include "client/kube.h"

#define POLL_MS 500
#define TIMEOUT_DEFAULT 120
#define TIMEOUT_MAX 3600
#define OBJECTS_MAX 64

struct kind {
    const char *name, *plural, *group, *version;
    int namespaced;
};

/* The kinds dra-doctor's installs leave for this command to remove. */
static const struct kind kinds[] = {
    { "validatingwebhookconfiguration", "validatingwebhookconfigurations",
      "admissionregistration.k8s.io", "v1", 0 },
    { "deployment", "deployments", "apps", "v1", 1 },
    { "daemonset", "daemonsets", "apps", "v1", 1 },
    { "cronjob", "cronjobs", "batch", "v1", 1 },
    { "job", "jobs", "batch", "v1", 1 },
    { "lease", "leases", "coordination.k8s.io", "v1", 1 },
    { "secret", "secrets", "", "v1", 1 },
    { "certificate", "certificates", "cert-manager.io", "v1", 1 },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void usage(FILE *f)
{
    size_t i;

    fprintf(f,
"usage: dra-doctor delete [-n NAMESPACE] [--timeout SECONDS] KIND/NAME...\n"
"\n"
"Deletes each object in the order given and waits until it is gone before the\n"
"next (foreground propagation: a Deployment is gone when its pods are).  An\n"
"object that does not exist is gone already.  For where there is no kubectl:\n"
"the Helm chart's pre-delete hook removes the webhook configuration first, then\n"
"the controller and what no chart object owns (its Lease, the certificates).\n"
"\n"
"KIND: ");
    for (i = 0; i < NKINDS; i++)
        fprintf(f, "%s%s", i ? ", " : "", kinds[i].name);
    fprintf(f,
" (or the plural)\n"
"\n"
"options:\n"
"  -n, --namespace NS     namespace of namespaced objects (default: the context's)\n"
"      --timeout SECONDS  how long to wait for each object (default %d, max %d)\n"
"      --kubeconfig FILE  default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
"      --context NAME     kubeconfig context (default: current-context)\n"
"  -h, --help\n"
"\n"
"exit status: 0 every object is gone, 1 an API error, a timeout or an object made\n"
"again, 2 usage error.\n", TIMEOUT_DEFAULT, TIMEOUT_MAX);
}

static const struct kind *find_kind(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < NKINDS; i++)
        if ((strlen(kinds[i].name) == n && !strncasecmp(s, kinds[i].name, n)) ||
            (strlen(kinds[i].plural) == n && !strncasecmp(s, kinds[i].plural, n)))
            return &kinds[i];
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* "Secret dra-doctor/x" or "ValidatingWebhookConfiguration x", for messages. */
static void describe(char *buf, size_t size, const struct kind *k, const char *ns, const char *name)
{
    snprintf(buf, size, "%s %s%s%s", k->name, k->namespaced ? ns : "", k->namespaced ? "/" : "",
             name);
}

/*
 * Deletes one object and waits until it is gone.  Returns 0, or 1 with the
 * reason printed.
 */
static int delete_one(struct kube_client *c, const struct kind *k, const char *ns,
                      const char *name, int timeout_s)
{
    char path[1024], del[1100], what[512], uid[128] = "";
    struct kube_status st;
    struct dd_err err;
    cJSON *obj = NULL;
    double deadline;
    enum dd_rc rc;

    describe(what, sizeof(what), k, ns, name);
    if (!kube_path(path, sizeof(path), k->group, k->version, k->plural,
                   k->namespaced ? ns : NULL, name, NULL)) {
        fprintf(stderr, "dra-doctor delete: %s: not a valid name\n", what);
        return 1;
    }
    dd_err_clear(&err);
    /* The uid first: what is deleted is this object, not one made again later. */
    rc = kube_get(c, path, &obj, &st, &err);
    if (rc == DD_ENOTFOUND && st.http == 404) {
        printf("%s: not found (gone already)\n", what);
        return 0;
    }
    if (rc != DD_OK) {
        fprintf(stderr, "dra-doctor delete: reading %s: %s\n", what, err.msg);
        return 1;
    }
    snprintf(uid, sizeof(uid), "%s", dd_json_str(obj, "metadata", "uid", NULL) ?
             dd_json_str(obj, "metadata", "uid", NULL) : "");
    cJSON_Delete(obj);
    obj = NULL;
    snprintf(del, sizeof(del), "%s?propagationPolicy=Foreground", path);
    rc = kube_delete(c, del, &st, &err);
    if (rc != DD_OK && !(rc == DD_ENOTFOUND && st.http == 404)) {
        fprintf(stderr, "dra-doctor delete: deleting %s: %s\n", what, err.msg);
        return 1;
    }
    deadline = now_ms() + timeout_s * 1e3;
    for (;;) {
        const char *u;

        rc = kube_get(c, path, &obj, &st, &err);
        if (rc == DD_ENOTFOUND && st.http == 404)
            break;
        if (rc != DD_OK) {
            fprintf(stderr, "dra-doctor delete: waiting for %s to go: %s\n", what, err.msg);
            return 1;
        }
        u = dd_json_str(obj, "metadata", "uid", NULL);
        if (u && uid[0] && strcmp(u, uid)) {
            fprintf(stderr, "dra-doctor delete: %s was deleted, but something made it again "
                    "(uid %s, was %s)\n", what, u, uid);
            cJSON_Delete(obj);
            return 1;
        }
        cJSON_Delete(obj);
        obj = NULL;
        if (now_ms() > deadline) {
            fprintf(stderr, "dra-doctor delete: %s is still there after %d s (finalizers or "
                    "dependents that do not go)\n", what, timeout_s);
            return 1;
        }
        sleep_ms(POLL_MS);
    }
    printf("%s: deleted\n", what);
    return 0;
}

int delete_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "namespace", required_argument, NULL, 'n' },
        { "timeout", required_argument, NULL, 't' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *ns = NULL, *kubeconfig = NULL, *context = NULL;
    const struct kind *k[OBJECTS_MAX];
    const char *names[OBJECTS_MAX];
    struct kube_config cfg;
    struct kube_client *c;
    struct dd_err err;
    int ch, i, n, timeout_s = TIMEOUT_DEFAULT, rc = 0;
    char *end;
    long v;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': ns = optarg; break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 't':
            errno = 0;
            v = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || v < 1 || v > TIMEOUT_MAX) {
                fprintf(stderr, "dra-doctor delete: --timeout \"%s\": not a number of seconds "
                        "1..%d\n", optarg, TIMEOUT_MAX);
                return 2;
            }
            timeout_s = (int)v;
            break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "Try 'dra-doctor delete --help'.\n");
            return 2;
        }
    }
    n = argc - optind;
    if (n < 1 || n > OBJECTS_MAX) {
        fprintf(stderr, "dra-doctor delete: give 1 to %d objects as KIND/NAME; see "
                "'dra-doctor delete --help'\n", OBJECTS_MAX);
        return 2;
    }
    /* Every argument is checked before anything is deleted. */
    for (i = 0; i < n; i++) {
        const char *a = argv[optind + i], *slash = strchr(a, '/');

        if (!slash || !slash[1] || strchr(slash + 1, '/') ||
            !(k[i] = find_kind(a, (size_t)(slash - a)))) {
            fprintf(stderr, "dra-doctor delete: \"%s\": not KIND/NAME with a KIND of "
                    "'dra-doctor delete --help'\n", a);
            return 2;
        }
        names[i] = slash + 1;
    }
    memset(&cfg, 0, sizeof(cfg));
    dd_err_clear(&err);
    if (kube_config_load(&cfg, kubeconfig, context, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor delete: %s\n", err.msg);
        return 2;
    }
    if (!ns)
        ns = cfg.namespace_ ? cfg.namespace_ : "default";
    if (!(c = kube_client_new(&cfg, NULL, &err))) {
        fprintf(stderr, "dra-doctor delete: %s\n", err.msg);
        kube_config_release(&cfg);
        return 1;
    }
    /* In order, and nothing after a failure: what follows may depend on it being gone. */
    for (i = 0; i < n && !rc; i++)
        rc = delete_one(c, k[i], ns, names[i], timeout_s);
    kube_client_free(c);
    kube_config_release(&cfg);
    return rc;
}
