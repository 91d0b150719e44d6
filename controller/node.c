/*
 * node.c - `dra-doctor node`: the node agent.  CDI being off leaves no trace
 * in the API (containerd silently skips the devices), so the agent reads the
 * node's containerd config and publishes what it says on the Node, where the
 * controller's rules read it (annotation dra-doctor.io/cdi, see lib/model/cri.h).
 *
 * It re-reads the config when the config or CDI directories change (inotify: an
 * administrator's edit shows within a second), and at least every --interval.  It also
 * remembers when it saw CDI turned on after it had been off: containers started
 * before then run without their devices until their pod is recreated, and nothing
 * else on the cluster can tell.
 */
#include "controller.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "model/cri.h"
#include "model/dra.h"
#include "formats/json.h"
#include "client/kube.h"

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
"version the Node reports (containerd 1.7: CDI off; 2.x: on).  containerd 2.4 and\n"
"later ignore enable_cdi (CDI is always on): the agent says so.  Changes to the\n"
"config or the CDI directories are published within a second (inotify), and the\n"
"time CDI was seen turned on, so that pods started before can be named.\n"
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

/* What the agent remembers from one publication to the next. */
struct agent {
    int cdi_seen;            /* -1 before the first reading, else the last enableCDI */
    char cdi_enabled_at[24]; /* see struct cri_config */
};

/* The Node's runtime version (NULL when unreported) and, the first time, what an earlier
 * agent published about CDI: a restarted agent goes on from there. */
static enum dd_rc read_node(struct kube_client *c, const char *node, struct agent *a,
                            char **runtime, struct dd_err *err)
{
    char path[512];
    const char *ver, *ann;
    cJSON *n = NULL, *prev;
    enum dd_rc rc;

    *runtime = NULL;
    kube_path(path, sizeof(path), "", "v1", "nodes", NULL, node, NULL);
    if ((rc = kube_get(c, path, &n, NULL, err)) != DD_OK)
        return rc;
    ver = dd_json_str(n, "status", "nodeInfo", "containerRuntimeVersion", NULL);
    ann = dd_json_str(n, "metadata", "annotations", DRA_NODE_CDI_ANNOTATION, NULL);
    if (a->cdi_seen < 0 && ann && (prev = cJSON_Parse(ann))) {
        struct cri_config old;
        if (cri_config_from_json(prev, &old, NULL) == DD_OK) {
            a->cdi_seen = old.enable_cdi;
            memcpy(a->cdi_enabled_at, old.cdi_enabled_at, sizeof(a->cdi_enabled_at));
            cri_config_release(&old);
        }
        cJSON_Delete(prev);
    }
    if (ver && !(*runtime = strdup(ver)))
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
    cJSON_Delete(n);
    return rc;
}

/*
 * No config file: containerd runs on its built-in defaults, which depend on
 * its version (what the Node reports).  The source names both.
 */
static enum dd_rc defaults_for_node(const char *runtime, const char *config,
                                    struct cri_config *cfg, struct dd_err *err)
{
    char src[600];
    enum dd_rc rc;

    if ((rc = cri_config_infer(runtime, cfg)) != DD_OK)
        return dd_failf(err, rc, "%s does not exist and the runtime %s has no known defaults",
                        config, runtime ? runtime : "(unreported)");
    snprintf(src, sizeof(src), "%s (absent: %s defaults)", config, runtime);
    free(cfg->file);
    cfg->file = strdup(src);
    return cfg->file ? DD_OK : dd_failf(err, DD_ENOMEM, "out of memory");
}

/* Records when CDI was seen turned on, forgets it when CDI goes off again. */
static void track_cdi(struct agent *a, struct cri_config *cfg)
{
    if (!cfg->enable_cdi) {
        a->cdi_enabled_at[0] = '\0';
    } else if (a->cdi_seen == 0) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(a->cdi_enabled_at, sizeof(a->cdi_enabled_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    a->cdi_seen = cfg->enable_cdi;
    memcpy(cfg->cdi_enabled_at, a->cdi_enabled_at, sizeof(cfg->cdi_enabled_at));
}

/* The facts as JSON text: the config's CDI settings plus the spec files found. */
static char *facts_json(struct kube_client *c, const char *node, const char *root,
                        const char *config, struct agent *a, struct dd_err *err)
{
    char path[4096], *runtime = NULL;
    struct cri_config cfg;
    cJSON *facts, *files;
    char *out = NULL;
    size_t i, nfiles = 0;

    if (read_node(c, node, a, &runtime, err) != DD_OK)
        return NULL;
    snprintf(path, sizeof(path), "%s%s", strcmp(root, "/") ? root : "", config);
    if (access(path, F_OK) && errno == ENOENT) {
        if (defaults_for_node(runtime, config, &cfg, err) != DD_OK) {
            free(runtime);
            return NULL;
        }
    } else {
        if (cri_config_load(path, &cfg, err) != DD_OK) {
            free(runtime);
            return NULL;
        }
        free(cfg.file);
        cfg.file = strdup(config); /* report the host's path, not the mount's */
    }
    if (cri_config_apply_runtime(&cfg, runtime) != DD_OK) {
        free(runtime);
        cri_config_release(&cfg);
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    free(runtime);
    track_cdi(a, &cfg);
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

/*
 * Watches the directories that hold what the facts say: the config's and the spec dirs
 * (through the host root).  Returns an inotify descriptor, or -1 when there is nothing to
 * watch (then the interval alone applies).
 */
static int watch_dirs(const char *root, const char *config)
{
    static const char *const spec_dirs[] = { "/etc/cdi", "/var/run/cdi" };
    const char *pre = strcmp(root, "/") ? root : "";
    char path[PATH_MAX], *slash;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), n = 0;
    size_t i;
    const uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE |
                          IN_ATTRIB;

    if (fd < 0)
        return -1;
    snprintf(path, sizeof(path), "%s%s", pre, config);
    if ((slash = strrchr(path, '/')) && slash != path)
        *slash = '\0';
    n += inotify_add_watch(fd, path, mask) >= 0;
    for (i = 0; i < sizeof(spec_dirs) / sizeof(spec_dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s%s", pre, spec_dirs[i]);
        n += inotify_add_watch(fd, path, mask) >= 0;
    }
    if (!n) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sleeps until the interval is over, SIGTERM, or (with fd >= 0) a change in a watched
 * directory, after which it waits 200 ms more for the rest of an editor's writes. */
static void wait_change(int fd, long interval)
{
    char buf[4096];
    long waited = 0;

    while (!stopping && waited < interval * 1000) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (fd < 0) {
            usleep(100000);
            waited += 100;
            continue;
        }
        if (poll(&p, 1, 100) > 0) {
            usleep(200000);
            while (read(fd, buf, sizeof(buf)) > 0)
                ;
            return;
        }
        waited += 100;
    }
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
    int once = 0, ch, code = 0, wfd = -1;
    struct agent agent = { -1, "" };
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
    if (!once)
        wfd = watch_dirs(root, config);
    while (!stopping) {
        char *facts = facts_json(c, node, root, config, &agent, &err);
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
        wait_change(wfd, code && interval > 5 ? 5 : interval);
    }
    if (wfd >= 0)
        close(wfd);
    free(last);
    kube_client_free(c);
    kube_config_release(&cfg);
    return code;
}
