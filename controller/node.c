/*
 * node.c - `dra-doctor node`: the node agent.  CDI being off leaves no trace
 * in the API (containerd silently skips the devices), so the agent reads the
 * node's containerd config and publishes what it says on the Node, where the
 * controller's rules read it (annotation dra-doctor.io/cdi, see lib/cri.h).
 */
#include "controller.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cri.h"
#include "dra.h"
#include "json.h"
#include "kube.h"

#define MAX_SPEC_FILES 64

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor node [options]\n"
"\n"
"Reads the node's containerd config (enable_cdi, cdi_spec_dirs; containerd 1.7 and\n"
"2.x layouts) and the CDI spec files present, and publishes them on the Node as\n"
"the annotation " DRA_NODE_CDI_ANNOTATION ", so the controller can tell that CDI\n"
"is off (which leaves no other trace).  Meant to run as a DaemonSet with the\n"
"host's /etc/containerd and CDI directories mounted read-only.  Without a config\n"
"file, containerd runs on its defaults: the agent publishes those of the runtime\n"
"version the Node reports (containerd 1.7: CDI off; 2.x: on).\n"
"\n"
"options:\n"
"  --node NAME               the Node to annotate (default: $NODE_NAME)\n"
"  --host-root DIR           where the host's filesystem is mounted (default /)\n"
"  --containerd-config FILE  path on the host (default /etc/containerd/config.toml)\n"
"  --interval SECONDS        re-read period (default 30)\n"
"  --once                    publish once and exit\n"
"  --kubeconfig FILE, --context NAME\n"
"  -h, --help\n");
}

/*
 * No config file: containerd runs on its built-in defaults, which depend on
 * its version (what the Node reports).  The source names both.
 */
static enum dd_rc defaults_for_node(struct kube_client *c, const char *node, const char *config,
                                    struct cri_config *cfg, struct dd_err *err)
{
    char path[512], src[600];
    const char *ver;
    cJSON *n = NULL;
    enum dd_rc rc;

    kube_path(path, sizeof(path), "", "v1", "nodes", NULL, node, NULL);
    if ((rc = kube_get(c, path, &n, NULL, err)) != DD_OK)
        return rc;
    ver = dd_json_str(n, "status", "nodeInfo", "containerRuntimeVersion", NULL);
    if ((rc = cri_config_infer(ver, cfg)) != DD_OK) {
        dd_failf(err, rc, "%s does not exist and the runtime %s has no known defaults", config,
                 ver ? ver : "(unreported)");
        cJSON_Delete(n);
        return rc;
    }
    snprintf(src, sizeof(src), "%s (absent: %s defaults)", config, ver);
    free(cfg->file);
    cfg->file = strdup(src);
    cJSON_Delete(n);
    return cfg->file ? DD_OK : dd_failf(err, DD_ENOMEM, "out of memory");
}

/* The facts as JSON text: the config's CDI settings plus the spec files found. */
static char *facts_json(struct kube_client *c, const char *node, const char *root,
                        const char *config, struct dd_err *err)
{
    char path[4096];
    struct cri_config cfg;
    cJSON *facts, *files;
    char *out = NULL;
    size_t i, nfiles = 0;

    snprintf(path, sizeof(path), "%s%s", strcmp(root, "/") ? root : "", config);
    if (access(path, F_OK) && errno == ENOENT) {
        if (defaults_for_node(c, node, config, &cfg, err) != DD_OK)
            return NULL;
    } else {
        if (cri_config_load(path, &cfg, err) != DD_OK)
            return NULL;
        free(cfg.file);
        cfg.file = strdup(config); /* report the host's path, not the mount's */
    }
    facts = cri_config_to_json(&cfg);
    files = facts ? cJSON_AddArrayToObject(facts, "specFiles") : NULL;
    for (i = 0; files && i < cfg.nspec_dirs; i++) {
        DIR *d;
        struct dirent *e;
        snprintf(path, sizeof(path), "%s%s", strcmp(root, "/") ? root : "", cfg.spec_dirs[i]);
        if (!(d = opendir(path)))
            continue;
        while ((e = readdir(d)) && nfiles < MAX_SPEC_FILES) {
            size_t n = strlen(e->d_name);
            if (e->d_name[0] == '.' || n < 6 ||
                (strcmp(e->d_name + n - 5, ".json") && strcmp(e->d_name + n - 5, ".yaml")))
                continue;
            snprintf(path, sizeof(path), "%s/%s", cfg.spec_dirs[i], e->d_name);
            cJSON_AddItemToArray(files, cJSON_CreateString(path));
            nfiles++;
        }
        closedir(d);
    }
    if (facts)
        out = cJSON_PrintUnformatted(facts);
    cJSON_Delete(facts);
    cri_config_release(&cfg);
    if (!out)
        dd_failf(err, DD_ENOMEM, "out of memory");
    return out;
}

static int publish(struct kube_client *c, const char *node, const char *facts, struct dd_err *err)
{
    cJSON *patch = cJSON_CreateObject(), *a;
    char path[512], *body = NULL;
    struct kube_status st;
    enum dd_rc rc = DD_ENOMEM;

    if (patch && (a = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"),
                                              "annotations")) &&
        cJSON_AddStringToObject(a, DRA_NODE_CDI_ANNOTATION, facts) &&
        (body = cJSON_PrintUnformatted(patch))) {
        kube_path(path, sizeof(path), "", "v1", "nodes", NULL, node, NULL);
        rc = kube_patch(c, path, KUBE_PATCH_MERGE, body, NULL, 0, NULL, &st, err);
    }
    free(body);
    cJSON_Delete(patch);
    return rc == DD_OK ? 0 : -1;
}

int node_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "node", required_argument, NULL, 'n' },
        { "host-root", required_argument, NULL, 'r' },
        { "containerd-config", required_argument, NULL, 'f' },
        { "interval", required_argument, NULL, 'i' },
        { "once", no_argument, NULL, '1' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *node = getenv("NODE_NAME"), *root = "/", *config = "/etc/containerd/config.toml";
    const char *kubeconfig = NULL, *context = NULL;
    long interval = 30;
    int once = 0, ch, code = 0;
    struct kube_config cfg;
    struct kube_client *c;
    struct dd_err err;
    char *last = NULL;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': node = optarg; break;
        case 'r': root = optarg; break;
        case 'f': config = optarg; break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case '1': once = 1; break;
        case 'i':
            interval = strtol(optarg, NULL, 10);
            if (interval < 1 || interval > 86400) {
                fprintf(stderr, "dra-doctor node: --interval wants 1 to 86400 seconds\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "Try 'dra-doctor node --help'.\n");
            return 2;
        }
    }
    if (!node || !*node) {
        fprintf(stderr, "dra-doctor node: no node name: set --node or NODE_NAME\n");
        return 2;
    }
    dd_err_clear(&err);
    memset(&cfg, 0, sizeof(cfg));
    if (kube_config_load(&cfg, kubeconfig, context, &err) != DD_OK ||
        !(c = kube_client_new(&cfg, NULL, &err))) {
        fprintf(stderr, "dra-doctor node: %s\n", err.msg);
        kube_config_release(&cfg);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    while (!stopping) {
        char *facts = facts_json(c, node, root, config, &err);
        if (!facts) {
            fprintf(stderr, "dra-doctor node: %s\n", err.msg);
            code = 1;
        } else if (!last || strcmp(last, facts)) {
            /* Only changes are written: the Node object stays quiet otherwise. */
            if (publish(c, node, facts, &err)) {
                fprintf(stderr, "dra-doctor node: annotating node %s: %s\n", node, err.msg);
                code = 1;
                free(facts);
            } else {
                fprintf(stderr, "dra-doctor node: node %s: %s\n", node, facts);
                free(last);
                last = facts;
                code = 0;
            }
        } else {
            free(facts);
        }
        if (once)
            break;
        for (long t = 0; t < interval * 10 && !stopping; t++)
            usleep(100000);
    }
    free(last);
    kube_client_free(c);
    kube_config_release(&cfg);
    return code;
}
