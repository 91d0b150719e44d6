/*
 * nodesim - a simulated Kubernetes node for dra-doctor's end-to-end tests.
 *
 * The control plane in the e2e tests is real (etcd, kube-apiserver,
 * kube-controller-manager, kube-scheduler).  What no API server can provide
 * is simulated here, in one single-threaded polling loop:
 *
 *   - the kubelet's node side: the Node object, its Lease in kube-node-lease,
 *     the Ready heartbeat, pod status, the final delete of terminating pods;
 *   - containerd: reads $ROOT/etc/containerd/config.toml (lib/model/cri.h) and
 *     resolves CDI devices from the spec dirs under $ROOT, failing container
 *     creation with containerd 1.7's exact message when a device is unknown;
 *   - the DRA example driver's kubelet plugin (gpu.example.com): publishes
 *     ResourceSlices with the driver ServiceAccount's own token (TokenRequest)
 *     and writes CDI spec files for prepared claims where the driver's
 *     CDI_ROOT really lands (a hostPath, or the container's private fs).
 *
 * See e2e/sim/README.md for what is simulated, and how faithfully.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "model/cri.h"
#include "err.h"
#include "formats/json.h"
#include "client/kube.h"

/* The kubelet it stands for: the release of the cluster it joins (e2e/cluster exports
 * DD_K8S_VERSION), else the release the e2e runs by default. */
#define SIM_KUBELET_VERSION_DEFAULT "v1.37.2"
#define SIM_RUNTIME_VERSION "containerd://1.7.24"
#define SIM_OS_IMAGE "Debian GNU/Linux 12 (bookworm)"
#define SIM_ENV_ANNOTATION "sim.dra-doctor.io/env"
#define SIM_DEFAULT_DRIVER "gpu.example.com"
#define SIM_DEFAULT_CDI_ROOT "/etc/cdi"
#define SIM_DEFAULT_NUM_DEVICES 8
#define SIM_CDI_CLASS "gpu"

#define LEASE_RENEW_S 10.0
#define LEASE_DURATION_S 40
#define HEARTBEAT_S 40.0
#define NODE_CHECK_S 10.0
#define DRIVER_SYNC_S 1.0
#define RETRY_S 3.0
#define TOKEN_SECONDS 3600

#define MAX_DRIVERS 8
#define MAX_PODS 512
#define MAX_ERRS 64
#define MAX_DEVICES 128
#define SPEC_FILE_CAP (1u << 20)

/* ---- state ---------------------------------------------------------------- */

struct driver {
    int used, seen;
    char ns[64], name[254], uid[64];
    char dname[64];            /* driver name, e.g. gpu.example.com */
    char sa[254];              /* serviceAccountName */
    long ndev;                 /* NUM_DEVICES */
    char cdi_root[512];        /* CDI_ROOT as the plugin container sees it */
    char host_dir[PATH_MAX];   /* where spec files land on the simulated fs */
    char host_desc[PATH_MAX];  /* "hostPath /var/run/cdi" or "container-private" */
    int shared;                /* host_dir is on a hostPath volume */
    char old_dirs[4][PATH_MAX];/* earlier shared host_dirs that may still hold claim specs */
    int common_written;
    /* the driver's own API identity */
    char *token;
    double token_until;
    char token_pod_uid[64];
    struct kube_client *dc;
    double next_try;           /* earliest next token / slice attempt */
    int64_t gen;               /* pool generation last published */
};

enum pod_state { POD_NEW, POD_CREATING, POD_RUNNING, POD_FAILING };

struct podst {
    int used, seen;
    char uid[64];
    enum pod_state state;
    char sig[4096];            /* what the last status write was about */
};

struct errslot {
    char what[160];
    char msg[1024];
};

static volatile sig_atomic_t g_stop;

static struct {
    char node[254];
    char root[PATH_MAX];
    char cluster_dir[PATH_MAX];
    long interval_ms;
    struct kube_config cfg;
    struct kube_client *kc;
    char node_uid[64];
    char since[40];            /* lastTransitionTime of our node conditions */
    double next_node_check, next_lease, next_heartbeat, next_driver_sync;
    struct driver drv[MAX_DRIVERS];
    struct podst pods[MAX_PODS];
    struct errslot errs[MAX_ERRS];
    /* container runtime */
    struct cri_config cri;
    int cri_state;             /* 0 unknown, 1 file, 2 defaults (no file), 3 unparsable */
    struct timespec cri_mtime;
    off_t cri_size;
    char cri_err[DD_ERR_MSG_MAX];
    uint64_t seq;              /* for unique-ish names */
} g;

/* ---- small utilities ------------------------------------------------------- */

static double mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* RFC 3339 UTC time: seconds ("...Z"), or with microseconds (MicroTime). */
static void now_str(char *buf, size_t n, int micro)
{
    struct timespec ts;
    struct tm tm;
    char base[24];

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    if (micro)
        snprintf(buf, n, "%s.%06dZ", base, (int)((ts.tv_nsec / 1000) % 1000000));
    else
        snprintf(buf, n, "%sZ", base);
}

static const char *kubelet_version(void)
{
    const char *v = getenv("DD_K8S_VERSION");

    return v && v[0] == 'v' && strlen(v) < 32 ? v : SIM_KUBELET_VERSION_DEFAULT;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    struct timespec ts;
    struct tm tm;
    char base[32];
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ nodesim[%s]: ", base, ts.tv_nsec / 1000000, g.node);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* snprintf that reports truncation: 0 on success, -1 when it did not fit. */
static int fmt(char *buf, size_t n, const char *f, ...) __attribute__((format(printf, 3, 4)));

static int fmt(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    int r;

    va_start(ap, f);
    r = vsnprintf(buf, n, f, ap);
    va_end(ap);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

static void copy(char *dst, size_t n, const char *src)
{
    snprintf(dst, n, "%s", src ? src : "");
}

static void rand_hex(char *buf, size_t nhex)
{
    unsigned char b[64];
    size_t i, nb = (nhex + 1) / 2;

    if (nb > sizeof(b))
        nb = sizeof(b);
    if (getrandom(b, nb, 0) != (ssize_t)nb) {
        uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ ++g.seq;

        for (i = 0; i < nb; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = (unsigned char)x;
        }
    }
    for (i = 0; i < nhex && i / 2 < nb; i++)
        buf[i] = "0123456789abcdef"[(b[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    buf[i] = '\0';
}

static uint64_t fnv64(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

static int mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    char *p;

    if (fmt(tmp, sizeof(tmp), "%s", path))
        return -1;
    for (p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return -1;
    return 0;
}

/* Reads a whole (small) file; NULL when missing, unreadable or over cap. */
static char *read_small(const char *path, size_t cap)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    size_t n;

    if (!f)
        return NULL;
    buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    n = fread(buf, 1, cap + 1, f);
    fclose(f);
    if (n > cap) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Writes data to path through a temporary file and rename (as the CDI library
 * does), creating the directory.  Returns 1 when written, 0 when the file
 * already held exactly data, -1 on failure (errno set). */
static int write_atomic(const char *path, const char *data)
{
    char tmp[PATH_MAX], dir[PATH_MAX];
    char *old, *slash;
    FILE *f;
    size_t len = strlen(data);

    old = read_small(path, SPEC_FILE_CAP);
    if (old && strcmp(old, data) == 0) {
        free(old);
        return 0;
    }
    free(old);
    if (fmt(dir, sizeof(dir), "%s", path) || !(slash = strrchr(dir, '/'))) {
        errno = ENAMETOOLONG;
        return -1;
    }
    *slash = '\0';
    if (dir[0] && mkdir_p(dir))
        return -1;
    if (fmt(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid())) {
        errno = ENAMETOOLONG;
        return -1;
    }
    f = fopen(tmp, "wb");
    if (!f)
        return -1;
    if (fwrite(data, 1, len, f) != len) {
        fclose(f);
        unlink(tmp);
        return -1;
    }
    if (fclose(f) || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 1;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);

    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Removes trailing slashes in place (keeping "/"). */
static void trim_slashes(char *s)
{
    size_t n = strlen(s);

    while (n > 1 && s[n - 1] == '/')
        s[--n] = '\0';
}

/* 1 when path equals dir or lies below it (whole path components). */
static int path_under(const char *path, const char *dir, const char **rest)
{
    size_t n = strlen(dir);

    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n == 1 && dir[0] == '/') {
        *rest = path;
        return path[0] == '/';
    }
    if (strncmp(path, dir, n) || (path[n] != '\0' && path[n] != '/'))
        return 0;
    *rest = path + n;
    return 1;
}

/* ---- API error bookkeeping ------------------------------------------------ */

static const char *fail_text(const struct kube_status *st, const struct dd_err *e)
{
    if (st->message[0])
        return st->message;
    return e->msg[0] ? e->msg : dd_strerror(e->rc);
}

static struct errslot *err_slot(const char *what, int create)
{
    size_t i;
    struct errslot *free_slot = NULL;

    for (i = 0; i < MAX_ERRS; i++) {
        if (g.errs[i].what[0] && strcmp(g.errs[i].what, what) == 0)
            return &g.errs[i];
        if (!g.errs[i].what[0] && !free_slot)
            free_slot = &g.errs[i];
    }
    if (!create)
        return NULL;
    if (!free_slot)
        free_slot = &g.errs[0];
    copy(free_slot->what, sizeof(free_slot->what), what);
    free_slot->msg[0] = '\0';
    return free_slot;
}

/* Logs a failure of `what` once until its text changes or it succeeds again. */
static void api_fail(const char *what, const char *msg)
{
    struct errslot *s = err_slot(what, 1);

    if (strcmp(s->msg, msg) == 0)
        return;
    copy(s->msg, sizeof(s->msg), msg);
    say("%s: %s (retrying)", what, msg);
}

static void api_ok(const char *what)
{
    struct errslot *s = err_slot(what, 0);

    if (!s)
        return;
    say("%s: ok again", what);
    s->what[0] = '\0';
    s->msg[0] = '\0';
}

/* ---- JSON helpers ------------------------------------------------------------ */

static cJSON *add_obj(cJSON *o, const char *key)
{
    cJSON *c = cJSON_CreateObject();

    if (!cJSON_AddItemToObject(o, key, c)) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static cJSON *add_arr(cJSON *o, const char *key)
{
    cJSON *c = cJSON_CreateArray();

    if (!cJSON_AddItemToObject(o, key, c)) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static cJSON *push_obj(cJSON *arr)
{
    cJSON *c = cJSON_CreateObject();

    if (!cJSON_AddItemToArray(arr, c)) {
        cJSON_Delete(c);
        return NULL;
    }
    return c;
}

static void add_str(cJSON *o, const char *key, const char *v)
{
    cJSON_AddStringToObject(o, key, v ? v : "");
}

static void set_str(cJSON *o, const char *key, const char *v)
{
    cJSON *s = cJSON_CreateString(v ? v : "");

    if (!s)
        return;
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, s);
    else if (!cJSON_AddItemToObject(o, key, s))
        cJSON_Delete(s);
}

static void push_str(cJSON *arr, const char *v)
{
    cJSON *s = cJSON_CreateString(v);

    if (!cJSON_AddItemToArray(arr, s))
        cJSON_Delete(s);
}

/* PATCH path with a merge patch built from obj (consumed). */
static enum dd_rc merge_patch(struct kube_client *c, const char *path, cJSON *obj,
                              struct kube_status *st, struct dd_err *err)
{
    char *body = obj ? cJSON_PrintUnformatted(obj) : NULL;
    enum dd_rc rc;

    cJSON_Delete(obj);
    if (!body)
        return dd_failf(err, DD_ENOMEM, "out of memory");
    rc = kube_patch(c, path, KUBE_PATCH_MERGE, body, NULL, 0, NULL, st, err);
    cJSON_free(body);
    return rc;
}

/* ---- Node, Lease, heartbeat ----------------------------------------------- */

static cJSON *node_conditions(void)
{
    static const char *const rows[][4] = {
        { "MemoryPressure", "False", "KubeletHasSufficientMemory",
          "kubelet has sufficient memory available" },
        { "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure" },
        { "PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available" },
        { "Ready", "True", "KubeletReady", "kubelet is posting ready status" },
    };
    cJSON *arr = cJSON_CreateArray(), *c;
    char now[40];
    size_t i;

    now_str(now, sizeof(now), 0);
    for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        if (!(c = push_obj(arr)))
            break;
        add_str(c, "type", rows[i][0]);
        add_str(c, "status", rows[i][1]);
        add_str(c, "lastHeartbeatTime", now);
        add_str(c, "lastTransitionTime", g.since);
        add_str(c, "reason", rows[i][2]);
        add_str(c, "message", rows[i][3]);
    }
    return arr;
}

static cJSON *node_status(void)
{
    cJSON *s = cJSON_CreateObject(), *cap, *alloc, *addrs, *a, *info, *ep;
    char id[40];

    cap = add_obj(s, "capacity");
    add_str(cap, "cpu", "8");
    add_str(cap, "memory", "32Gi");
    add_str(cap, "pods", "110");
    add_str(cap, "ephemeral-storage", "100Gi");
    alloc = add_obj(s, "allocatable");
    add_str(alloc, "cpu", "8");
    add_str(alloc, "memory", "32Gi");
    add_str(alloc, "pods", "110");
    add_str(alloc, "ephemeral-storage", "100Gi");
    cJSON_AddItemToObject(s, "conditions", node_conditions());
    addrs = add_arr(s, "addresses");
    if ((a = push_obj(addrs))) {
        add_str(a, "type", "InternalIP");
        add_str(a, "address", "127.0.0.1");
    }
    if ((a = push_obj(addrs))) {
        add_str(a, "type", "Hostname");
        add_str(a, "address", g.node);
    }
    ep = add_obj(add_obj(s, "daemonEndpoints"), "kubeletEndpoint");
    cJSON_AddNumberToObject(ep, "Port", 10250);
    info = add_obj(s, "nodeInfo");
    snprintf(id, sizeof(id), "%016llx%016llx", (unsigned long long)fnv64(g.node, 1469598103934665603ULL),
             (unsigned long long)fnv64(g.node, 7));
    add_str(info, "machineID", id);
    add_str(info, "systemUUID", id);
    add_str(info, "bootID", id);
    add_str(info, "kernelVersion", "6.1.0-sim-amd64");
    add_str(info, "osImage", SIM_OS_IMAGE);
    add_str(info, "containerRuntimeVersion", SIM_RUNTIME_VERSION);
    add_str(info, "kubeletVersion", kubelet_version());
    add_str(info, "operatingSystem", "linux");
    add_str(info, "architecture", "amd64");
    return s;
}

static int node_path(char *buf, size_t n, const char *sub)
{
    return kube_path(buf, n, "", "v1", "nodes", NULL, g.node, sub) ? 0 : -1;
}

/* Writes the whole status (create) or only the conditions (heartbeat). */
static void node_put_status(int full)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[512];
    cJSON *patch = cJSON_CreateObject();

    if (full)
        cJSON_AddItemToObject(patch, "status", node_status());
    else
        cJSON_AddItemToObject(add_obj(patch, "status"), "conditions", node_conditions());
    if (node_path(path, sizeof(path), "status")) {
        cJSON_Delete(patch);
        return;
    }
    if (merge_patch(g.kc, path, patch, &st, &err) != DD_OK) {
        api_fail("node status update", fail_text(&st, &err));
        return;
    }
    api_ok("node status update");
}

/* GET the Node; create it (POST with status, then the status subresource) when missing. */
static void node_ensure(void)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[512];
    cJSON *out = NULL, *node, *md, *labels;
    const char *uid;
    enum dd_rc rc;

    if (node_path(path, sizeof(path), NULL))
        return;
    rc = kube_get(g.kc, path, &out, &st, &err);
    if (rc == DD_OK) {
        api_ok("get node");
        uid = dd_json_str(out, "metadata", "uid", NULL);
        if (uid && strcmp(uid, g.node_uid)) {
            copy(g.node_uid, sizeof(g.node_uid), uid);
            say("node %s exists (uid %s): taking it over", g.node, uid);
            node_put_status(1);
        }
        cJSON_Delete(out);
        return;
    }
    if (rc != DD_ENOTFOUND) {
        api_fail("get node", fail_text(&st, &err));
        return;
    }
    api_ok("get node");
    node = cJSON_CreateObject();
    add_str(node, "apiVersion", "v1");
    add_str(node, "kind", "Node");
    md = add_obj(node, "metadata");
    add_str(md, "name", g.node);
    labels = add_obj(md, "labels");
    add_str(labels, "kubernetes.io/hostname", g.node);
    add_str(labels, "kubernetes.io/os", "linux");
    add_str(labels, "kubernetes.io/arch", "amd64");
    add_str(labels, "beta.kubernetes.io/os", "linux");
    add_str(labels, "beta.kubernetes.io/arch", "amd64");
    add_obj(node, "spec");
    cJSON_AddItemToObject(node, "status", node_status());
    if (!kube_path(path, sizeof(path), "", "v1", "nodes", NULL, NULL, NULL)) {
        cJSON_Delete(node);
        return;
    }
    rc = kube_create(g.kc, path, node, &out, &st, &err);
    cJSON_Delete(node);
    if (rc != DD_OK) {
        api_fail("create node", fail_text(&st, &err));
        return;
    }
    api_ok("create node");
    copy(g.node_uid, sizeof(g.node_uid), dd_json_str(out, "metadata", "uid", NULL));
    cJSON_Delete(out);
    say("created Node %s (uid %s, kubelet %s, runtime %s)", g.node, g.node_uid,
        kubelet_version(), SIM_RUNTIME_VERSION);
    node_put_status(1);
    g.next_heartbeat = mono() + HEARTBEAT_S;
    g.next_lease = 0;
}

static void lease_renew(void)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[512], now[40];
    cJSON *obj, *md, *spec, *ref;
    enum dd_rc rc;

    if (!kube_path(path, sizeof(path), "coordination.k8s.io", "v1", "leases", "kube-node-lease",
                   g.node, NULL))
        return;
    now_str(now, sizeof(now), 1);
    obj = cJSON_CreateObject();
    add_str(add_obj(obj, "spec"), "renewTime", now);
    rc = merge_patch(g.kc, path, obj, &st, &err);
    if (rc == DD_OK) {
        api_ok("renew lease");
        return;
    }
    if (rc != DD_ENOTFOUND) {
        api_fail("renew lease", fail_text(&st, &err));
        return;
    }
    obj = cJSON_CreateObject();
    add_str(obj, "apiVersion", "coordination.k8s.io/v1");
    add_str(obj, "kind", "Lease");
    md = add_obj(obj, "metadata");
    add_str(md, "name", g.node);
    add_str(md, "namespace", "kube-node-lease");
    if (g.node_uid[0] && (ref = push_obj(add_arr(md, "ownerReferences")))) {
        add_str(ref, "apiVersion", "v1");
        add_str(ref, "kind", "Node");
        add_str(ref, "name", g.node);
        add_str(ref, "uid", g.node_uid);
    }
    spec = add_obj(obj, "spec");
    add_str(spec, "holderIdentity", g.node);
    cJSON_AddNumberToObject(spec, "leaseDurationSeconds", LEASE_DURATION_S);
    add_str(spec, "renewTime", now);
    kube_path(path, sizeof(path), "coordination.k8s.io", "v1", "leases", "kube-node-lease", NULL,
              NULL);
    rc = kube_create(g.kc, path, obj, NULL, &st, &err);
    cJSON_Delete(obj);
    if (rc != DD_OK) {
        api_fail("create lease", fail_text(&st, &err));
        return;
    }
    api_ok("create lease");
    api_ok("renew lease");
    say("created Lease kube-node-lease/%s (renewed every %.0f s)", g.node, LEASE_RENEW_S);
}

static void node_tick(double now)
{
    if (now >= g.next_node_check) {
        node_ensure();
        g.next_node_check = now + NODE_CHECK_S;
    }
    if (!g.node_uid[0])
        return;
    if (now >= g.next_lease) {
        lease_renew();
        g.next_lease = now + LEASE_RENEW_S;
    }
    if (now >= g.next_heartbeat) {
        node_put_status(0);
        g.next_heartbeat = now + HEARTBEAT_S;
    }
}

/* ---- the simulated DRA driver: configuration from its DaemonSet --------------- */

static const cJSON *env_item(const cJSON *ctr, const char *name)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, dd_json_arr(ctr, "env", NULL)) {
        const char *n = dd_json_str(e, "name", NULL);

        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

static const char *env_value(const cJSON *ctr, const char *name)
{
    const cJSON *e = env_item(ctr, name);

    return e ? dd_json_str(e, "value", NULL) : NULL;
}

static int is_driver_ds(const cJSON *ds)
{
    const cJSON *spec = dd_json_path(ds, "spec", "template", "spec", NULL), *c, *v;

    cJSON_ArrayForEach(c, dd_json_arr(spec, "containers", NULL)) {
        const char *img = dd_json_str(c, "image", NULL);

        if (img && strstr(img, "dra-example-driver"))
            return 1;
    }
    cJSON_ArrayForEach(v, dd_json_arr(spec, "volumes", NULL)) {
        char p[PATH_MAX];

        copy(p, sizeof(p), dd_json_str(v, "hostPath", "path", NULL));
        trim_slashes(p);
        if (strcmp(p, "/var/lib/kubelet/plugins_registry") == 0)
            return 1;
    }
    return 0;
}

/* The plugin container: the one running the example driver's image, else the first. */
static const cJSON *plugin_container(const cJSON *podspec)
{
    const cJSON *c, *first = NULL;

    cJSON_ArrayForEach(c, dd_json_arr(podspec, "containers", NULL)) {
        const char *img = dd_json_str(c, "image", NULL);

        if (!first)
            first = c;
        if (img && strstr(img, "dra-example-driver"))
            return c;
    }
    return first;
}

/* A "--cdi-root=X" / "--cdi-root X" in command or args wins over the env (as urfave/cli flags). */
static const char *cdi_root_flag(const cJSON *ctr)
{
    static const char *const lists[] = { "command", "args" };
    const char *found = NULL;
    size_t i;

    for (i = 0; i < 2; i++) {
        const cJSON *a, *arr = dd_json_arr(ctr, lists[i], NULL);

        cJSON_ArrayForEach(a, arr) {
            if (!cJSON_IsString(a))
                continue;
            if (starts_with(a->valuestring, "--cdi-root="))
                found = a->valuestring + strlen("--cdi-root=");
            else if (strcmp(a->valuestring, "--cdi-root") == 0 && cJSON_IsString(a->next))
                found = a->next->valuestring;
        }
    }
    return found;
}

/*
 * Where the driver's CDI_ROOT lands as seen by the host: under the volumeMount
 * (longest match) of a hostPath volume -> $ROOT/<hostPath + rest>; otherwise
 * the container's own filesystem, which the runtime never sees.
 */
static void resolve_cdi_dir(struct driver *d, const cJSON *podspec, const cJSON *ctr)
{
    const cJSON *m, *best = NULL;
    const char *rest = NULL, *best_rest = NULL;
    size_t best_len = 0;

    cJSON_ArrayForEach(m, dd_json_arr(ctr, "volumeMounts", NULL)) {
        const char *mp = dd_json_str(m, "mountPath", NULL);

        if (mp && path_under(d->cdi_root, mp, &rest) && strlen(mp) >= best_len) {
            best = m;
            best_rest = rest;
            best_len = strlen(mp);
        }
    }
    if (best) {
        const char *vname = dd_json_str(best, "name", NULL), *sub = dd_json_str(best, "subPath", NULL);
        const cJSON *v;

        cJSON_ArrayForEach(v, dd_json_arr(podspec, "volumes", NULL)) {
            const char *n = dd_json_str(v, "name", NULL), *hp = dd_json_str(v, "hostPath", "path", NULL);
            char host[PATH_MAX];

            if (!n || !vname || strcmp(n, vname) || !hp)
                continue;
            if (fmt(host, sizeof(host), "%s%s%s%s", hp, sub && sub[0] ? "/" : "", sub ? sub : "",
                    best_rest ? best_rest : ""))
                break;
            trim_slashes(host);
            if (fmt(d->host_dir, sizeof(d->host_dir), "%s%s", g.root, host) ||
                fmt(d->host_desc, sizeof(d->host_desc), "hostPath %s, shared with the host", host))
                break;
            d->shared = 1;
            return;
        }
    }
    d->shared = 0;
    if (fmt(d->host_dir, sizeof(d->host_dir), "%s/../plugin-container%s", g.root, d->cdi_root))
        d->host_dir[0] = '\0';
    copy(d->host_desc, sizeof(d->host_desc),
         "not on a hostPath volume: the container's private filesystem, invisible to the runtime");
}

static void driver_configure(struct driver *d, const cJSON *ds)
{
    const cJSON *podspec = dd_json_path(ds, "spec", "template", "spec", NULL);
    const cJSON *ctr = plugin_container(podspec);
    const char *v, *sa;
    int64_t n;
    struct driver old = *d;

    copy(d->uid, sizeof(d->uid), dd_json_str(ds, "metadata", "uid", NULL));
    v = env_value(ctr, "DRIVER_NAME");
    copy(d->dname, sizeof(d->dname), v && v[0] ? v : SIM_DEFAULT_DRIVER);
    sa = dd_json_str(podspec, "serviceAccountName", NULL);
    if (!sa)
        sa = dd_json_str(podspec, "serviceAccount", NULL);
    copy(d->sa, sizeof(d->sa), sa && sa[0] ? sa : "default");
    d->ndev = SIM_DEFAULT_NUM_DEVICES;
    if (env_item(ctr, "NUM_DEVICES") && dd_json_int(env_item(ctr, "NUM_DEVICES"), &n, "value", NULL))
        d->ndev = n;
    if (d->ndev < 0)
        d->ndev = 0;
    if (d->ndev > MAX_DEVICES)
        d->ndev = MAX_DEVICES;
    v = cdi_root_flag(ctr);
    if (!v)
        v = env_value(ctr, "CDI_ROOT");
    copy(d->cdi_root, sizeof(d->cdi_root), v && v[0] ? v : SIM_DEFAULT_CDI_ROOT);
    trim_slashes(d->cdi_root);
    resolve_cdi_dir(d, podspec, ctr);

    if (!old.used || strcmp(old.sa, d->sa) || strcmp(old.dname, d->dname)) {
        free(d->token);
        d->token = NULL;
        d->token_until = 0;
        kube_client_free(d->dc);
        d->dc = NULL;
    }
    if (!old.used || old.ndev != d->ndev || strcmp(old.cdi_root, d->cdi_root) ||
        strcmp(old.host_dir, d->host_dir) || strcmp(old.sa, d->sa))
        say("driver %s: DaemonSet %s/%s: NUM_DEVICES=%ld, CDI_ROOT=%s -> %s (%s), serviceAccount %s",
            d->dname, d->ns, d->name, d->ndev, d->cdi_root, d->host_dir, d->host_desc, d->sa);
    if (old.used && strcmp(old.host_dir, d->host_dir)) {
        /* The driver restarted with another CDI root: it writes its common spec
         * again and re-creates claim specs there; a private dir went away
         * with the old container. */
        d->common_written = 0;
        if (old.shared) {
            size_t k, slot = 0;
            int known = 0;

            for (k = 0; k < 4; k++) {
                if (!strcmp(d->old_dirs[k], old.host_dir))
                    known = 1;
                if (!d->old_dirs[k][0])
                    slot = k;
            }
            if (!known && strcmp(old.host_dir, d->host_dir))
                copy(d->old_dirs[slot], sizeof(d->old_dirs[slot]), old.host_dir);
        } else {
            DIR *dir = opendir(old.host_dir);
            struct dirent *de;
            char p[PATH_MAX];

            while (dir && (de = readdir(dir)) != NULL) {
                if (ends_with(de->d_name, ".json") &&
                    !fmt(p, sizeof(p), "%s/%s", old.host_dir, de->d_name))
                    unlink(p);
            }
            if (dir)
                closedir(dir);
        }
    }
}

/* The driver's own pod on this node (created by the DaemonSet controller), if any. */
static const cJSON *driver_pod(const struct driver *d, const cJSON *pods)
{
    const cJSON *p, *r;

    cJSON_ArrayForEach(p, pods) {
        if (dd_json_path(p, "metadata", "deletionTimestamp", NULL))
            continue;
        cJSON_ArrayForEach(r, dd_json_arr(p, "metadata", "ownerReferences", NULL)) {
            const char *uid = dd_json_str(r, "uid", NULL);

            if (uid && strcmp(uid, d->uid) == 0)
                return p;
        }
    }
    return NULL;
}

static void driver_drop_token(struct driver *d)
{
    free(d->token);
    d->token = NULL;
    d->token_until = 0;
    d->token_pod_uid[0] = '\0';
    kube_client_free(d->dc);
    d->dc = NULL;
}

/* Gets a token for the driver's ServiceAccount (TokenRequest), bound to its pod. */
static int driver_token(struct driver *d, const cJSON *pods, double now)
{
    const cJSON *pod = driver_pod(d, pods);
    const char *puid = pod ? dd_json_str(pod, "metadata", "uid", NULL) : NULL;
    const char *pname = pod ? dd_json_str(pod, "metadata", "name", NULL) : NULL;
    struct kube_status st;
    struct dd_err err = { 0 };
    struct kube_client_opts o = KUBE_CLIENT_OPTS_INIT;
    struct kube_config c;
    char path[768], what[400];
    cJSON *req, *spec, *ref, *out = NULL;
    const char *tok;
    enum dd_rc rc;

    if (d->dc && now < d->token_until && strcmp(puid ? puid : "", d->token_pod_uid) == 0)
        return 0;
    if (!kube_path(path, sizeof(path), "", "v1", "serviceaccounts", d->ns, d->sa, "token"))
        return -1;
    req = cJSON_CreateObject();
    add_str(req, "apiVersion", "authentication.k8s.io/v1");
    add_str(req, "kind", "TokenRequest");
    spec = add_obj(req, "spec");
    cJSON_AddNumberToObject(spec, "expirationSeconds", TOKEN_SECONDS);
    if (puid && pname && (ref = add_obj(spec, "boundObjectRef"))) {
        add_str(ref, "kind", "Pod");
        add_str(ref, "apiVersion", "v1");
        add_str(ref, "name", pname);
        add_str(ref, "uid", puid);
    }
    rc = kube_create(g.kc, path, req, &out, &st, &err);
    cJSON_Delete(req);
    snprintf(what, sizeof(what), "driver %s: token for serviceaccount %s/%s", d->dname, d->ns, d->sa);
    if (rc != DD_OK) {
        api_fail(what, fail_text(&st, &err));
        return -1;
    }
    api_ok(what);
    tok = dd_json_str(out, "status", "token", NULL);
    if (!tok) {
        cJSON_Delete(out);
        return -1;
    }
    driver_drop_token(d);
    d->token = strdup(tok);
    cJSON_Delete(out);
    if (!d->token)
        return -1;
    memset(&c, 0, sizeof(c));
    c.server = g.cfg.server;
    c.ca_pem = g.cfg.ca_pem;
    c.insecure = g.cfg.insecure;
    c.token = d->token;
    c.namespace_ = d->ns;
    o.connect_timeout_ms = 2000;
    o.request_timeout_ms = 10000;
    o.max_retries = 1;
    o.backoff_max_ms = 1000;
    o.user_agent = "dra-example-kubeletplugin/v0.2.0 (nodesim)";
    d->dc = kube_client_new(&c, &o, &err);
    if (!d->dc) {
        say("driver %s: %s", d->dname, err.msg);
        driver_drop_token(d);
        return -1;
    }
    d->token_until = now + TOKEN_SECONDS * 0.8;
    copy(d->token_pod_uid, sizeof(d->token_pod_uid), puid);
    say("driver %s: got a token for system:serviceaccount:%s:%s (TokenRequest%s%s)", d->dname, d->ns,
        d->sa, pname ? ", bound to pod " : ", not bound: no driver pod on this node yet",
        pname ? pname : "");
    return 0;
}

/* ---- the simulated DRA driver: ResourceSlices ----------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* A stable, UUID-shaped id per (node, driver, device). */
static void device_uuid(const struct driver *d, long i, char *buf, size_t n)
{
    char key[512];
    uint64_t a, b;

    snprintf(key, sizeof(key), "%s/%s/gpu-%ld", g.node, d->dname, i);
    a = mix64(fnv64(key, 1469598103934665603ULL));
    b = mix64(a ^ 0x9e3779b97f4a7c15ULL);
    snprintf(buf, n, "gpu-%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffff,
             (unsigned)a & 0xffff, (unsigned)(b >> 48), (unsigned long long)(b & 0xffffffffffffULL));
}

static cJSON *slice_spec(const struct driver *d, int64_t gen)
{
    cJSON *spec = cJSON_CreateObject(), *pool, *devs, *dev, *attrs, *capm;
    char name[32], uuid[64];
    long i;

    add_str(spec, "driver", d->dname);
    add_str(spec, "nodeName", g.node);
    pool = add_obj(spec, "pool");
    add_str(pool, "name", g.node);
    cJSON_AddNumberToObject(pool, "generation", (double)gen);
    cJSON_AddNumberToObject(pool, "resourceSliceCount", 1);
    devs = add_arr(spec, "devices");
    for (i = 0; i < d->ndev; i++) {
        if (!(dev = push_obj(devs)))
            break;
        snprintf(name, sizeof(name), "gpu-%ld", i);
        device_uuid(d, i, uuid, sizeof(uuid));
        add_str(dev, "name", name);
        attrs = add_obj(dev, "attributes");
        cJSON_AddNumberToObject(add_obj(attrs, "index"), "int", (double)i);
        add_str(add_obj(attrs, "uuid"), "string", uuid);
        add_str(add_obj(attrs, "model"), "string", "LATEST-GPU-MODEL");
        add_str(add_obj(attrs, "driverVersion"), "version", "1.0.0");
        capm = add_obj(add_obj(dev, "capacity"), "memory");
        add_str(capm, "value", "80Gi");
    }
    return spec;
}

/* 1 when the published slice already describes what the driver has. */
static int slice_current(const struct driver *d, const cJSON *slice)
{
    const cJSON *devs = dd_json_arr(slice, "spec", "devices", NULL), *dev;
    const char *pool = dd_json_str(slice, "spec", "pool", "name", NULL);
    int64_t count = 0;
    long i = 0;
    char name[32];

    if (!pool || strcmp(pool, g.node) || !dd_json_int(slice, &count, "spec", "pool",
                                                       "resourceSliceCount", NULL) || count != 1)
        return 0;
    if (cJSON_GetArraySize(devs) != d->ndev)
        return 0;
    cJSON_ArrayForEach(dev, devs) {
        const char *n = dd_json_str(dev, "name", NULL);

        snprintf(name, sizeof(name), "gpu-%ld", i++);
        if (!n || strcmp(n, name) || !dd_json_path(dev, "attributes", "model", NULL))
            return 0;
    }
    return 1;
}

static int slice_selector(const struct driver *d, char *buf, size_t n)
{
    return fmt(buf, n, "fieldSelector=spec.driver%%3D%s%%2Cspec.nodeName%%3D%s", d->dname, g.node);
}

/* The driver's ResourceSlice publishing, with its own credentials. */
static void driver_slices(struct driver *d, double now)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[256], sel[512], what[400], one[768];
    cJSON *items = NULL, *out = NULL, *obj, *md, *ref;
    const cJSON *cur;
    char *body;
    enum dd_rc rc;
    int i, n;
    int64_t gen = 0;

    kube_path(path, sizeof(path), "resource.k8s.io", "v1", "resourceslices", NULL, NULL, NULL);
    if (slice_selector(d, sel, sizeof(sel)))
        return;
    snprintf(what, sizeof(what), "driver %s: list resource slices", d->dname);
    rc = kube_list(d->dc, path, sel, 500, &items, NULL, &st, &err);
    if (rc != DD_OK) {
        if (st.http == 401)
            driver_drop_token(d);
        api_fail(what, fail_text(&st, &err));
        d->next_try = now + RETRY_S;
        return;
    }
    api_ok(what);
    n = cJSON_GetArraySize(items);
    /* One pool, one slice: remove extras (the resourceslice controller does the same). */
    for (i = n - 1; i >= 1; i--) {
        const char *nm = dd_json_str(cJSON_GetArrayItem(items, i), "metadata", "name", NULL);

        if (!nm || !kube_path(one, sizeof(one), "resource.k8s.io", "v1", "resourceslices", NULL, nm,
                              NULL))
            continue;
        if (kube_delete(d->dc, one, &st, &err) == DD_OK || st.http == 404)
            say("driver %s: deleted surplus ResourceSlice %s", d->dname, nm);
        else
            say("driver %s: delete resource slice: %s", d->dname, fail_text(&st, &err));
    }
    cur = n > 0 ? cJSON_GetArrayItem(items, 0) : NULL;
    if (cur && slice_current(d, cur)) {
        dd_json_int(cur, &d->gen, "spec", "pool", "generation", NULL);
        cJSON_Delete(items);
        return;
    }
    obj = cJSON_CreateObject();
    add_str(obj, "apiVersion", "resource.k8s.io/v1");
    add_str(obj, "kind", "ResourceSlice");
    md = add_obj(obj, "metadata");
    if (cur) {
        dd_json_int(cur, &gen, "spec", "pool", "generation", NULL);
        gen++;
        add_str(md, "name", dd_json_str(cur, "metadata", "name", NULL));
        add_str(md, "resourceVersion", dd_json_str(cur, "metadata", "resourceVersion", NULL));
    } else {
        char gn[400];

        gen = d->gen;
        snprintf(gn, sizeof(gn), "%s-%s-", g.node, d->dname);
        add_str(md, "generateName", gn);
    }
    if ((ref = push_obj(add_arr(md, "ownerReferences")))) {
        add_str(ref, "apiVersion", "v1");
        add_str(ref, "kind", "Node");
        add_str(ref, "name", g.node);
        add_str(ref, "uid", g.node_uid);
        cJSON_AddBoolToObject(ref, "controller", 1);
    }
    cJSON_AddItemToObject(obj, "spec", slice_spec(d, gen));
    if (cur) {
        const char *nm = dd_json_str(cur, "metadata", "name", NULL);

        body = cJSON_PrintUnformatted(obj);
        rc = DD_ENOMEM;
        if (body && nm &&
            kube_path(one, sizeof(one), "resource.k8s.io", "v1", "resourceslices", NULL, nm, NULL))
            rc = kube_request(d->dc, "PUT", one, NULL, body, strlen(body), &out, &st, &err);
        cJSON_free(body);
        if (rc == DD_OK) {
            d->gen = gen;
            say("driver %s: updated ResourceSlice %s: %ld devices, pool %s generation %lld "
                "(as system:serviceaccount:%s:%s)", d->dname, nm, d->ndev, g.node, (long long)gen,
                d->ns, d->sa);
        } else {
            say("driver %s (%s/%s): update resource slice: %s", d->dname, d->ns, d->name,
                fail_text(&st, &err));
        }
    } else {
        rc = kube_create(d->dc, path, obj, &out, &st, &err);
        if (rc == DD_OK) {
            d->gen = gen;
            say("driver %s: published ResourceSlice %s: %ld devices, pool %s generation %lld "
                "(as system:serviceaccount:%s:%s)", d->dname,
                dd_json_str(out, "metadata", "name", NULL), d->ndev, g.node, (long long)gen, d->ns,
                d->sa);
        } else {
            /* The example driver's resourceslice controller: "create resource slice: %w". */
            say("driver %s (%s/%s): create resource slice: %s", d->dname, d->ns, d->name,
                fail_text(&st, &err));
        }
    }
    if (rc != DD_OK) {
        if (st.http == 401)
            driver_drop_token(d);
        d->next_try = now + RETRY_S;
    }
    cJSON_Delete(out);
    cJSON_Delete(obj);
    cJSON_Delete(items);
}

/* The driver is gone (DaemonSet deleted): the kubelet removes its slices. */
static void driver_remove(struct driver *d)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[256], sel[512], one[768];
    cJSON *items = NULL;
    const cJSON *it;

    say("driver %s: DaemonSet %s/%s is gone: removing its ResourceSlices on %s", d->dname, d->ns,
        d->name, g.node);
    kube_path(path, sizeof(path), "resource.k8s.io", "v1", "resourceslices", NULL, NULL, NULL);
    if (!slice_selector(d, sel, sizeof(sel)) &&
        kube_list(g.kc, path, sel, 500, &items, NULL, &st, &err) == DD_OK) {
        cJSON_ArrayForEach(it, items) {
            const char *nm = dd_json_str(it, "metadata", "name", NULL);

            if (nm && kube_path(one, sizeof(one), "resource.k8s.io", "v1", "resourceslices", NULL, nm,
                                NULL) &&
                kube_delete(g.kc, one, &st, &err) == DD_OK)
                say("deleted ResourceSlice %s", nm);
        }
    }
    cJSON_Delete(items);
    driver_drop_token(d);
    memset(d, 0, sizeof(*d));
}

/* ---- CDI spec files (what the example driver writes) ------------------------ */

static void cdi_kind(const struct driver *d, char *buf, size_t n)
{
    snprintf(buf, n, "k8s.%s/%s", d->dname, SIM_CDI_CLASS);
}

/* Transient spec file name: <vendor>-<class>_<id>.json */
static int cdi_spec_path(const struct driver *d, const char *id, char *buf, size_t n)
{
    return fmt(buf, n, "%s/k8s.%s-%s_%s.json", d->host_dir, d->dname, SIM_CDI_CLASS, id);
}

/* The CDI library's MinimumRequiredVersion for these specs: 0.5.0 once a
 * device name starts with something other than a letter, else 0.3.0. */
static const char *cdi_min_version(const cJSON *devs)
{
    const cJSON *dev;

    cJSON_ArrayForEach(dev, devs) {
        const char *n = dd_json_str(dev, "name", NULL);
        unsigned char c = n ? (unsigned char)n[0] : 'a';

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return "0.5.0";
    }
    return "0.3.0";
}

/* Serialises a spec as Go's encoding/json would write cdispec.Spec. */
static char *cdi_spec_text(const struct driver *d, cJSON *devs /* consumed */)
{
    cJSON *spec = cJSON_CreateObject();
    char kind[128];
    char *s;

    cdi_kind(d, kind, sizeof(kind));
    add_str(spec, "cdiVersion", cdi_min_version(devs));
    add_str(spec, "kind", kind);
    if (!cJSON_AddItemToObject(spec, "devices", devs))
        cJSON_Delete(devs);
    add_obj(spec, "containerEdits");
    s = cJSON_PrintUnformatted(spec);
    cJSON_Delete(spec);
    return s;
}

static void cdi_write_common(struct driver *d)
{
    cJSON *devs, *dev, *env;
    char path[PATH_MAX], line[512];
    char *text;
    int r;

    if (d->common_written || !d->host_dir[0])
        return;
    devs = cJSON_CreateArray();
    dev = push_obj(devs);
    add_str(dev, "name", "common");
    env = add_arr(add_obj(dev, "containerEdits"), "env");
    snprintf(line, sizeof(line), "KUBERNETES_NODE_NAME=%s", g.node);
    push_str(env, line);
    snprintf(line, sizeof(line), "DRA_RESOURCE_DRIVER_NAME=%s", d->dname);
    push_str(env, line);
    text = cdi_spec_text(d, devs);
    if (!text || cdi_spec_path(d, "common", path, sizeof(path))) {
        cJSON_free(text);
        return;
    }
    r = write_atomic(path, text);
    cJSON_free(text);
    if (r < 0) {
        say("driver %s: write common CDI spec %s: %s", d->dname, path, strerror(errno));
        return;
    }
    d->common_written = 1;
    if (r > 0)
        say("driver %s: wrote common CDI spec %s (%s)", d->dname, path, d->host_desc);
}

/* Device index N of "gpu-N", or -1. */
static long gpu_index(const char *dev)
{
    char *end;
    long v;

    if (!dev || !starts_with(dev, "gpu-") || !dev[4])
        return -1;
    errno = 0;
    v = strtol(dev + 4, &end, 10);
    return errno || *end || v < 0 ? -1 : v;
}

/* The claim's allocation results for driver d on this node. */
static int claim_results_for(const struct driver *d, const cJSON *claim, const cJSON **out,
                             int max)
{
    const cJSON *r;
    int n = 0;

    cJSON_ArrayForEach(r, dd_json_arr(claim, "status", "allocation", "devices", "results", NULL)) {
        const char *drv = dd_json_str(r, "driver", NULL), *pool = dd_json_str(r, "pool", NULL);

        if (drv && pool && strcmp(drv, d->dname) == 0 && strcmp(pool, g.node) == 0 && n < max)
            out[n++] = r;
    }
    return n;
}

static int pod_listed(const cJSON *pods, const char *uid)
{
    const cJSON *p;

    cJSON_ArrayForEach(p, pods) {
        const char *u = dd_json_str(p, "metadata", "uid", NULL);

        if (u && strcmp(u, uid) == 0)
            return 1;
    }
    return 0;
}

/* Reserved for a pod that is bound to this node (and still exists). */
static int claim_reserved_here(const cJSON *claim, const cJSON *pods)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, dd_json_arr(claim, "status", "reservedFor", NULL)) {
        const char *res = dd_json_str(r, "resource", NULL), *uid = dd_json_str(r, "uid", NULL);

        if (res && uid && strcmp(res, "pods") == 0 && pod_listed(pods, uid))
            return 1;
    }
    return 0;
}

/* Removes d's claim spec files in dir whose claims are no longer prepared here. */
static void unprepare_dir(const struct driver *d, const char *dirpath, const cJSON *claims,
                          const cJSON *pods)
{
    const cJSON *claim, *res[MAX_DEVICES];
    char path[PATH_MAX], prefix[256];
    DIR *dir;
    struct dirent *de;

    snprintf(prefix, sizeof(prefix), "k8s.%s-%s_", d->dname, SIM_CDI_CLASS);
    dir = opendir(dirpath);
    while (dir && (de = readdir(dir)) != NULL) {
        char id[256];
        size_t len;
        int want = 0;

        if (!starts_with(de->d_name, prefix) || !ends_with(de->d_name, ".json"))
            continue;
        len = strlen(de->d_name) - strlen(prefix) - strlen(".json");
        if (len == 0 || len >= sizeof(id))
            continue;
        memcpy(id, de->d_name + strlen(prefix), len);
        id[len] = '\0';
        if (strcmp(id, "common") == 0)
            continue;
        cJSON_ArrayForEach(claim, claims) {
            const char *uid = dd_json_str(claim, "metadata", "uid", NULL);

            if (uid && strcmp(uid, id) == 0 && claim_results_for(d, claim, res, MAX_DEVICES) > 0 &&
                claim_reserved_here(claim, pods))
                want = 1;
        }
        if (want || fmt(path, sizeof(path), "%s/%s", dirpath, de->d_name))
            continue;
        if (unlink(path) == 0)
            say("driver %s: unprepared claim %s: removed CDI spec %s", d->dname, id, path);
    }
    if (dir)
        closedir(dir);
}

/* NodePrepareResources / NodeUnprepareResources for driver d. */
static void driver_prepare(struct driver *d, const cJSON *claims, const cJSON *pods)
{
    const cJSON *claim, *res[MAX_DEVICES];
    char path[PATH_MAX];
    size_t i;

    if (!d->host_dir[0])
        return;
    cdi_write_common(d);
    cJSON_ArrayForEach(claim, claims) {
        const char *uid = dd_json_str(claim, "metadata", "uid", NULL);
        int k, n = claim_results_for(d, claim, res, MAX_DEVICES);
        cJSON *devs;
        char *text;
        int r;

        if (!uid || n == 0 || !claim_reserved_here(claim, pods))
            continue;
        devs = cJSON_CreateArray();
        for (k = 0; k < n; k++) {
            const char *dev = dd_json_str(res[k], "device", NULL);
            long idx = gpu_index(dev);
            cJSON *cd = push_obj(devs), *env;
            char name[256], line[512];

            if (idx < 0)
                continue;
            snprintf(name, sizeof(name), "%s-%s", uid, dev);
            add_str(cd, "name", name);
            env = add_arr(add_obj(cd, "containerEdits"), "env");
            /* Order as in v0.2.0: the claim edit first, then the device's own edits
             * (applyConfig with the default TimeSlicing config). */
            snprintf(line, sizeof(line), "GPU_DEVICE_%ld_RESOURCE_CLAIM=%s", idx, uid);
            push_str(env, line);
            snprintf(line, sizeof(line), "GPU_DEVICE_%ld=%s", idx, dev);
            push_str(env, line);
            snprintf(line, sizeof(line), "GPU_DEVICE_%ld_SHARING_STRATEGY=TimeSlicing", idx);
            push_str(env, line);
            snprintf(line, sizeof(line), "GPU_DEVICE_%ld_TIMESLICE_INTERVAL=Default", idx);
            push_str(env, line);
        }
        text = cdi_spec_text(d, devs);
        if (!text || cdi_spec_path(d, uid, path, sizeof(path))) {
            cJSON_free(text);
            continue;
        }
        r = write_atomic(path, text);
        cJSON_free(text);
        if (r < 0)
            say("driver %s: prepare claim %s/%s: write CDI spec %s: %s", d->dname,
                dd_json_str(claim, "metadata", "namespace", NULL),
                dd_json_str(claim, "metadata", "name", NULL), path, strerror(errno));
        else if (r > 0)
            say("driver %s: prepared claim %s/%s (uid %s, %d device%s): wrote CDI spec %s (%s)",
                d->dname, dd_json_str(claim, "metadata", "namespace", NULL),
                dd_json_str(claim, "metadata", "name", NULL), uid, n, n == 1 ? "" : "s", path,
                d->host_desc);
    }
    /* Unprepare: claim specs no longer allocated here / reserved for a pod here,
     * wherever this driver wrote them (also a shared dir it used before a
     * CDI_ROOT change: it unprepares what it prepared). */
    unprepare_dir(d, d->host_dir, claims, pods);
    for (i = 0; i < 4; i++)
        if (d->old_dirs[i][0] && strcmp(d->old_dirs[i], d->host_dir))
            unprepare_dir(d, d->old_dirs[i], claims, pods);
}

/* Lists the DaemonSets, follows the driver ones, publishes slices. */
static void drivers_sync(const cJSON *pods, double now)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[256];
    cJSON *items = NULL;
    const cJSON *ds;
    size_t i;

    kube_path(path, sizeof(path), "apps", "v1", "daemonsets", NULL, NULL, NULL);
    if (kube_list(g.kc, path, NULL, 500, &items, NULL, &st, &err) != DD_OK) {
        api_fail("list daemonsets", fail_text(&st, &err));
        return;
    }
    api_ok("list daemonsets");
    for (i = 0; i < MAX_DRIVERS; i++)
        g.drv[i].seen = 0;
    cJSON_ArrayForEach(ds, items) {
        const char *ns = dd_json_str(ds, "metadata", "namespace", NULL);
        const char *nm = dd_json_str(ds, "metadata", "name", NULL);
        struct driver *d = NULL, *free_slot = NULL;

        if (!ns || !nm || !is_driver_ds(ds) || dd_json_path(ds, "metadata", "deletionTimestamp", NULL))
            continue;
        for (i = 0; i < MAX_DRIVERS; i++) {
            if (g.drv[i].used && !strcmp(g.drv[i].ns, ns) && !strcmp(g.drv[i].name, nm))
                d = &g.drv[i];
            else if (!g.drv[i].used && !free_slot)
                free_slot = &g.drv[i];
        }
        if (!d) {
            if (!free_slot)
                continue;
            d = free_slot;
            memset(d, 0, sizeof(*d));
            copy(d->ns, sizeof(d->ns), ns);
            copy(d->name, sizeof(d->name), nm);
        }
        driver_configure(d, ds);
        d->used = d->seen = 1;
    }
    cJSON_Delete(items);
    for (i = 0; i < MAX_DRIVERS; i++) {
        struct driver *d = &g.drv[i];

        if (!d->used)
            continue;
        if (!d->seen) {
            driver_remove(d);
            continue;
        }
        if (!g.node_uid[0] || now < d->next_try)
            continue;
        if (driver_token(d, pods, now)) {
            d->next_try = now + RETRY_S;
            continue;
        }
        driver_slices(d, now);
    }
}

/* ---- the container runtime: config and CDI registry ------------------------------ */

static void runtime_refresh(void)
{
    char path[PATH_MAX];
    struct stat sb;
    struct dd_err err = { 0 };
    struct cri_config c;
    char dirs[1024];
    size_t i, off = 0;

    if (fmt(path, sizeof(path), "%s/etc/containerd/config.toml", g.root))
        return;
    if (stat(path, &sb)) {
        if (g.cri_state == 2)
            return;
        cri_config_release(&g.cri);
        if (cri_config_infer(SIM_RUNTIME_VERSION, &g.cri) != DD_OK)
            return;
        g.cri_state = 2;
        say("containerd: no %s: containerd 1.7 defaults (enable_cdi = false)", path);
        return;
    }
    if (g.cri_state != 2 && g.cri_state != 0 && sb.st_mtim.tv_sec == g.cri_mtime.tv_sec &&
        sb.st_mtim.tv_nsec == g.cri_mtime.tv_nsec && sb.st_size == g.cri_size)
        return;
    g.cri_mtime = sb.st_mtim;
    g.cri_size = sb.st_size;
    if (cri_config_load(path, &c, &err) != DD_OK) {
        if (g.cri_state != 3 || strcmp(g.cri_err, err.msg))
            say("containerd: cannot load %s: %s: the runtime is down, no container starts", path,
                err.msg);
        copy(g.cri_err, sizeof(g.cri_err), err.msg);
        g.cri_state = 3;
        return;
    }
    cri_config_release(&g.cri);
    g.cri = c;
    g.cri_state = 1;
    dirs[0] = '\0';
    for (i = 0; i < g.cri.nspec_dirs && off < sizeof(dirs); i++) {
        int r = snprintf(dirs + off, sizeof(dirs) - off, "%s%s", i ? ", " : "", g.cri.spec_dirs[i]);

        if (r < 0)
            break;
        off += (size_t)r;
    }
    say("containerd: (re)started with %s: config version %d, enable_cdi = %s%s, cdi_spec_dirs = [%s]",
        path, g.cri.version, g.cri.enable_cdi ? "true" : "false",
        g.cri.enable_cdi_line ? "" : " (default)", dirs);
}

/* The CDI registry as containerd's CDI cache would see it: every *.json spec in
 * the spec dirs under $ROOT, in priority order (later dirs win). */
struct cdi_reg {
    cJSON *specs; /* array of spec objects, each with "_prio" */
    int loaded;
};

static void cdi_reg_load(struct cdi_reg *r)
{
    size_t i;

    if (r->loaded)
        return;
    r->loaded = 1;
    r->specs = cJSON_CreateArray();
    for (i = 0; i < g.cri.nspec_dirs; i++) {
        char dpath[PATH_MAX], fpath[PATH_MAX];
        DIR *dir;
        struct dirent *de;

        if (fmt(dpath, sizeof(dpath), "%s%s", g.root, g.cri.spec_dirs[i]) || !(dir = opendir(dpath)))
            continue;
        while ((de = readdir(dir)) != NULL) {
            char *text;
            cJSON *spec;

            if (!ends_with(de->d_name, ".json") ||
                fmt(fpath, sizeof(fpath), "%s/%s", dpath, de->d_name) ||
                !(text = read_small(fpath, SPEC_FILE_CAP)))
                continue;
            spec = cJSON_Parse(text);
            free(text);
            if (!cJSON_IsObject(spec) || !dd_json_str(spec, "kind", NULL)) {
                cJSON_Delete(spec);
                continue;
            }
            cJSON_AddNumberToObject(spec, "_prio", (double)i);
            if (!cJSON_AddItemToArray(r->specs, spec))
                cJSON_Delete(spec);
        }
        closedir(dir);
    }
}

/* Finds "vendor/class=name"; returns the device and its spec, or NULL. */
static const cJSON *cdi_lookup(struct cdi_reg *r, const char *qname, const cJSON **spec_out)
{
    const char *eq = strchr(qname, '=');
    const cJSON *spec, *dev, *best = NULL;
    int64_t prio, best_prio = -1;

    cdi_reg_load(r);
    if (!eq)
        return NULL;
    cJSON_ArrayForEach(spec, r->specs) {
        const char *kind = dd_json_str(spec, "kind", NULL);

        if (!kind || strlen(kind) != (size_t)(eq - qname) || strncmp(kind, qname, (size_t)(eq - qname)))
            continue;
        dd_json_int(spec, &prio, "_prio", NULL);
        cJSON_ArrayForEach(dev, dd_json_arr(spec, "devices", NULL)) {
            const char *n = dd_json_str(dev, "name", NULL);

            if (n && strcmp(n, eq + 1) == 0 && prio > best_prio) {
                best = dev;
                best_prio = prio;
                *spec_out = spec;
            }
        }
    }
    return best;
}

/* Applies "KEY=VALUE" env edits to env (an object, insertion-ordered). */
static void apply_env_edits(cJSON *env, const cJSON *edits)
{
    const cJSON *e;

    cJSON_ArrayForEach(e, dd_json_arr(edits, "env", NULL)) {
        const char *eq;
        char key[256];

        if (!cJSON_IsString(e) || !(eq = strchr(e->valuestring, '=')) ||
            (size_t)(eq - e->valuestring) >= sizeof(key))
            continue;
        memcpy(key, e->valuestring, (size_t)(eq - e->valuestring));
        key[eq - e->valuestring] = '\0';
        set_str(env, key, eq + 1);
    }
}

/* ---- the kubelet: pods -------------------------------------------------------- */

static struct podst *pod_state(const char *uid)
{
    size_t i;
    struct podst *free_slot = NULL;

    for (i = 0; i < MAX_PODS; i++) {
        if (g.pods[i].used && strcmp(g.pods[i].uid, uid) == 0)
            return &g.pods[i];
        if (!g.pods[i].used && !free_slot)
            free_slot = &g.pods[i];
    }
    if (!free_slot)
        return NULL;
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->used = 1;
    copy(free_slot->uid, sizeof(free_slot->uid), uid);
    return free_slot;
}

static int pod_path(char *buf, size_t n, const cJSON *pod, const char *sub)
{
    return kube_path(buf, n, "", "v1", "pods", dd_json_str(pod, "metadata", "namespace", NULL),
                     dd_json_str(pod, "metadata", "name", NULL), sub)
               ? 0
               : -1;
}

static int env_file_path(char *buf, size_t n, const cJSON *pod)
{
    return fmt(buf, n, "%s/pods/%s_%s.env", g.cluster_dir,
               dd_json_str(pod, "metadata", "namespace", NULL), dd_json_str(pod, "metadata", "name", NULL));
}

/* The kubelet's final delete of a terminating pod. */
static void pod_finish_delete(const cJSON *pod)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[768], body[256], ef[PATH_MAX];
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);
    const char *nm = dd_json_str(pod, "metadata", "name", NULL);
    const char *uid = dd_json_str(pod, "metadata", "uid", NULL);
    struct podst *ps;

    if (pod_path(path, sizeof(path), pod, NULL) ||
        fmt(body, sizeof(body),
            "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,"
            "\"preconditions\":{\"uid\":\"%s\"}}", uid ? uid : ""))
        return;
    if (kube_request(g.kc, "DELETE", path, NULL, body, strlen(body), NULL, &st, &err) != DD_OK &&
        st.http != 404 && st.http != 409) {
        api_fail("delete pod", fail_text(&st, &err));
        return;
    }
    api_ok("delete pod");
    say("pod %s/%s: containers stopped, deleted (gracePeriodSeconds=0)", ns, nm);
    if (!env_file_path(ef, sizeof(ef), pod))
        unlink(ef);
    if (uid && (ps = pod_state(uid)))
        ps->used = 0;
}

/* Value of a fieldRef the way the kubelet resolves downward-API env. */
static const char *field_ref(const cJSON *pod, const char *fp, char *buf, size_t n)
{
    if (!strcmp(fp, "metadata.name"))
        return dd_json_str(pod, "metadata", "name", NULL);
    if (!strcmp(fp, "metadata.namespace"))
        return dd_json_str(pod, "metadata", "namespace", NULL);
    if (!strcmp(fp, "metadata.uid"))
        return dd_json_str(pod, "metadata", "uid", NULL);
    if (!strcmp(fp, "spec.nodeName"))
        return g.node;
    if (!strcmp(fp, "spec.serviceAccountName"))
        return dd_json_str(pod, "spec", "serviceAccountName", NULL);
    if (!strcmp(fp, "status.hostIP") || !strcmp(fp, "status.podIP") || !strcmp(fp, "status.hostIPs") ||
        !strcmp(fp, "status.podIPs"))
        return "127.0.0.1";
    if (starts_with(fp, "metadata.labels['") || starts_with(fp, "metadata.annotations['")) {
        int labels = starts_with(fp, "metadata.labels['");
        const char *k = strchr(fp, '\'') + 1, *end = strrchr(fp, '\'');

        if (end > k && (size_t)(end - k) < n) {
            memcpy(buf, k, (size_t)(end - k));
            buf[end - k] = '\0';
            return dd_json_str(pod, "metadata", labels ? "labels" : "annotations", buf, NULL);
        }
    }
    return NULL;
}

static cJSON *container_env(const cJSON *pod, const cJSON *ctr)
{
    cJSON *env = cJSON_CreateObject();
    const cJSON *e;
    char key[256];

    cJSON_ArrayForEach(e, dd_json_arr(ctr, "env", NULL)) {
        const char *n = dd_json_str(e, "name", NULL), *v = dd_json_str(e, "value", NULL);
        const char *fp = dd_json_str(e, "valueFrom", "fieldRef", "fieldPath", NULL);

        if (!n)
            continue;
        if (!v && fp)
            v = field_ref(pod, fp, key, sizeof(key));
        if (!v && dd_json_path(e, "valueFrom", NULL))
            continue; /* secret/configMap/resource refs are not simulated */
        set_str(env, n, v ? v : "");
    }
    return env;
}

/* docker.io/library/ubuntu:22.04 for "ubuntu:22.04", as containerd reports it. */
static void image_ref(const char *img, char *buf, size_t n)
{
    const char *slash = strchr(img, '/');
    int has_domain = slash && (memchr(img, '.', (size_t)(slash - img)) ||
                               memchr(img, ':', (size_t)(slash - img)) ||
                               ((size_t)(slash - img) == 9 && !strncmp(img, "localhost", 9)));
    const char *last = strrchr(img, '/');
    int tagged = strchr(last ? last : img, ':') || strchr(img, '@');

    snprintf(buf, n, "%s%s%s%s", has_domain ? "" : "docker.io/", slash || has_domain ? "" : "library/",
             img, tagged ? "" : ":latest");
}

static void image_id(const char *ref, char *buf, size_t n)
{
    char repo[512];
    char *at, *colon, *slash;
    uint64_t a = fnv64(ref, 1469598103934665603ULL);

    copy(repo, sizeof(repo), ref);
    if ((at = strchr(repo, '@')))
        *at = '\0';
    slash = strrchr(repo, '/');
    if ((colon = strrchr(slash ? slash : repo, ':')))
        *colon = '\0';
    snprintf(buf, n, "%s@sha256:%016llx%016llx%016llx%016llx", repo, (unsigned long long)a,
             (unsigned long long)fnv64(ref, a), (unsigned long long)fnv64(ref, a ^ 1),
             (unsigned long long)fnv64(ref, a ^ 2));
}

/* One container's outcome. */
struct ctr_result {
    const cJSON *ctr;
    cJSON *env;           /* the env it runs with (owned) */
    char err[2048];       /* CreateContainerError message, "" when it runs */
    char cid[65];
    int ngpu_env;         /* injected GPU_* vars */
    int cdi_ignored;      /* CDI devices it had, ignored with enable_cdi = false */
    int ncdi;             /* CDI devices injected */
};

static cJSON *pod_condition(cJSON *arr, const char *type, int ok, const char *reason,
                            const char *msg, const char *now)
{
    cJSON *c = push_obj(arr);

    add_str(c, "type", type);
    add_str(c, "status", ok ? "True" : "False");
    cJSON_AddNullToObject(c, "lastProbeTime");
    add_str(c, "lastTransitionTime", now);
    if (reason)
        add_str(c, "reason", reason);
    if (msg)
        add_str(c, "message", msg);
    return c;
}

/*
 * Writes the pod's status.  mode: 0 ContainerCreating (sandbox not ready,
 * waiting for resources), 1 containers created (each running or failing).
 */
static enum dd_rc pod_write_status(const cJSON *pod, int mode, struct ctr_result *rs, int n,
                                   struct kube_status *st, struct dd_err *err)
{
    cJSON *patch = cJSON_CreateObject(), *s, *conds, *ips, *cs, *c, *state;
    const cJSON *sched = NULL, *x;
    const char *start = dd_json_str(pod, "status", "startTime", NULL);
    char now[40], path[768], unready[1024], ref[512], iid[700];
    int i, running = 0, waiting = 0;
    size_t off = 0;

    now_str(now, sizeof(now), 0);
    unready[0] = '\0';
    for (i = 0; i < n; i++) {
        if (mode == 1 && !rs[i].err[0]) {
            running++;
            continue;
        }
        waiting++;
        off += (size_t)snprintf(unready + off, off < sizeof(unready) ? sizeof(unready) - off : 0,
                                "%s%s", off ? " " : "", dd_json_str(rs[i].ctr, "name", NULL));
        if (off >= sizeof(unready))
            off = sizeof(unready) - 1;
    }
    s = add_obj(patch, "status");
    add_str(s, "phase", waiting ? "Pending" : "Running");
    conds = add_arr(s, "conditions");
    pod_condition(conds, "PodReadyToStartContainers", mode == 1, NULL, NULL, now);
    pod_condition(conds, "Initialized", 1, NULL, NULL, now);
    {
        char msg[1100];

        snprintf(msg, sizeof(msg), "containers with unready status: [%s]", unready);
        pod_condition(conds, "Ready", !waiting, waiting ? "ContainersNotReady" : NULL,
                      waiting ? msg : NULL, now);
        pod_condition(conds, "ContainersReady", !waiting, waiting ? "ContainersNotReady" : NULL,
                      waiting ? msg : NULL, now);
    }
    cJSON_ArrayForEach(x, dd_json_arr(pod, "status", "conditions", NULL)) {
        const char *t = dd_json_str(x, "type", NULL);

        if (t && !strcmp(t, "PodScheduled"))
            sched = x;
    }
    if (sched)
        cJSON_AddItemToArray(conds, cJSON_Duplicate(sched, 1));
    else
        pod_condition(conds, "PodScheduled", 1, NULL, NULL, now);
    add_str(s, "hostIP", "127.0.0.1");
    ips = add_arr(s, "hostIPs");
    add_str(push_obj(ips), "ip", "127.0.0.1");
    if (mode == 1) {
        add_str(s, "podIP", "127.0.0.1");
        ips = add_arr(s, "podIPs");
        add_str(push_obj(ips), "ip", "127.0.0.1");
    }
    add_str(s, "startTime", start ? start : now);
    cs = add_arr(s, "containerStatuses");
    for (i = 0; i < n; i++) {
        const char *img = dd_json_str(rs[i].ctr, "image", NULL);
        int run = mode == 1 && !rs[i].err[0];

        image_ref(img ? img : "", ref, sizeof(ref));
        c = push_obj(cs);
        add_str(c, "name", dd_json_str(rs[i].ctr, "name", NULL));
        state = add_obj(c, "state");
        if (run) {
            add_str(add_obj(state, "running"), "startedAt", now);
        } else {
            cJSON *w = add_obj(state, "waiting");

            add_str(w, "reason", mode == 0 ? "ContainerCreating" : "CreateContainerError");
            if (mode == 1)
                add_str(w, "message", rs[i].err);
        }
        add_obj(c, "lastState");
        cJSON_AddBoolToObject(c, "ready", run);
        cJSON_AddNumberToObject(c, "restartCount", 0);
        add_str(c, "image", ref);
        if (run) {
            char cid[80];

            image_id(ref, iid, sizeof(iid));
            add_str(c, "imageID", iid);
            snprintf(cid, sizeof(cid), "containerd://%s", rs[i].cid);
            add_str(c, "containerID", cid);
        } else {
            add_str(c, "imageID", "");
        }
        cJSON_AddBoolToObject(c, "started", run);
    }
    (void)running;
    if (pod_path(path, sizeof(path), pod, "status")) {
        cJSON_Delete(patch);
        return DD_EINVAL;
    }
    return merge_patch(g.kc, path, patch, st, err);
}

/* Warning event "Failed" from the kubelet, as kuberuntime records it. */
static void pod_event_failed(const cJSON *pod, const struct ctr_result *r)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[512], name[400], msg[2200], fieldpath[300], now[40];
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);
    struct timespec ts;
    cJSON *ev, *md, *io, *src;
    enum dd_rc rc;

    clock_gettime(CLOCK_REALTIME, &ts);
    now_str(now, sizeof(now), 0);
    snprintf(name, sizeof(name), "%s.%llx", dd_json_str(pod, "metadata", "name", NULL),
             (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
    snprintf(msg, sizeof(msg), "Error: %s", r->err);
    snprintf(fieldpath, sizeof(fieldpath), "spec.containers{%s}", dd_json_str(r->ctr, "name", NULL));
    ev = cJSON_CreateObject();
    add_str(ev, "apiVersion", "v1");
    add_str(ev, "kind", "Event");
    md = add_obj(ev, "metadata");
    add_str(md, "name", name);
    add_str(md, "namespace", ns);
    io = add_obj(ev, "involvedObject");
    add_str(io, "kind", "Pod");
    add_str(io, "namespace", ns);
    add_str(io, "name", dd_json_str(pod, "metadata", "name", NULL));
    add_str(io, "uid", dd_json_str(pod, "metadata", "uid", NULL));
    add_str(io, "apiVersion", "v1");
    add_str(io, "resourceVersion", dd_json_str(pod, "metadata", "resourceVersion", NULL));
    add_str(io, "fieldPath", fieldpath);
    add_str(ev, "reason", "Failed");
    add_str(ev, "message", msg);
    src = add_obj(ev, "source");
    add_str(src, "component", "kubelet");
    add_str(src, "host", g.node);
    add_str(ev, "firstTimestamp", now);
    add_str(ev, "lastTimestamp", now);
    cJSON_AddNumberToObject(ev, "count", 1);
    add_str(ev, "type", "Warning");
    add_str(ev, "reportingComponent", "kubelet");
    add_str(ev, "reportingInstance", g.node);
    if (!kube_path(path, sizeof(path), "", "v1", "events", ns, NULL, NULL)) {
        cJSON_Delete(ev);
        return;
    }
    rc = kube_create(g.kc, path, ev, NULL, &st, &err);
    cJSON_Delete(ev);
    if (rc != DD_OK)
        say("pod %s/%s: event: %s", ns, dd_json_str(pod, "metadata", "name", NULL), fail_text(&st, &err));
}

/* Records the env the first container runs with: annotation + env file. */
static void pod_record_env(const cJSON *pod, const cJSON *env)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[768], ef[PATH_MAX], dir[PATH_MAX];
    char *json = cJSON_PrintUnformatted(env), *text = NULL;
    size_t cap = 1, len = 0;
    const cJSON *e;
    cJSON *patch;

    if (!json)
        return;
    patch = cJSON_CreateObject();
    add_str(add_obj(add_obj(patch, "metadata"), "annotations"), SIM_ENV_ANNOTATION, json);
    cJSON_free(json);
    if (!pod_path(path, sizeof(path), pod, NULL) &&
        merge_patch(g.kc, path, patch, &st, &err) != DD_OK)
        say("pod %s/%s: annotate %s: %s", dd_json_str(pod, "metadata", "namespace", NULL),
            dd_json_str(pod, "metadata", "name", NULL), SIM_ENV_ANNOTATION, fail_text(&st, &err));
    cJSON_ArrayForEach(e, env)
        cap += strlen(e->string) + strlen(cJSON_IsString(e) ? e->valuestring : "") + 2;
    if (!(text = malloc(cap)))
        return;
    text[0] = '\0';
    cJSON_ArrayForEach(e, env) {
        int r = snprintf(text + len, cap - len, "%s=%s\n", e->string,
                         cJSON_IsString(e) ? e->valuestring : "");

        if (r > 0)
            len += (size_t)r;
    }
    if (!fmt(dir, sizeof(dir), "%s/pods", g.cluster_dir) && !mkdir_p(dir) &&
        !env_file_path(ef, sizeof(ef), pod) && write_atomic(ef, text) < 0)
        say("write %s: %s", ef, strerror(errno));
    free(text);
}

static const cJSON *find_claim(const cJSON *claims, const char *ns, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, claims) {
        const char *cns = dd_json_str(c, "metadata", "namespace", NULL);
        const char *cn = dd_json_str(c, "metadata", "name", NULL);

        if (cns && cn && !strcmp(cns, ns) && !strcmp(cn, name))
            return c;
    }
    return NULL;
}

/* The ResourceClaim name behind pod.spec.resourceClaims[] entry `prc`, or NULL. */
static const char *pod_claim_name(const cJSON *pod, const cJSON *prc)
{
    const char *direct = dd_json_str(prc, "resourceClaimName", NULL);
    const char *name = dd_json_str(prc, "name", NULL);
    const cJSON *s;

    if (direct)
        return direct;
    cJSON_ArrayForEach(s, dd_json_arr(pod, "status", "resourceClaimStatuses", NULL)) {
        const char *n = dd_json_str(s, "name", NULL);

        if (n && name && !strcmp(n, name))
            return dd_json_str(s, "resourceClaimName", NULL);
    }
    return NULL;
}

static struct driver *driver_named(const char *dname)
{
    size_t i;

    for (i = 0; i < MAX_DRIVERS; i++)
        if (g.drv[i].used && g.drv[i].host_dir[0] && !strcmp(g.drv[i].dname, dname))
            return &g.drv[i];
    return NULL;
}

/* Why the pod's claims are not ready for it yet ("" when they are). */
static void claims_ready(const cJSON *pod, const cJSON *claims, char *why, size_t n)
{
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);
    const char *uid = dd_json_str(pod, "metadata", "uid", NULL);
    const cJSON *prc, *claim, *r;

    why[0] = '\0';
    cJSON_ArrayForEach(prc, dd_json_arr(pod, "spec", "resourceClaims", NULL)) {
        const char *cn = pod_claim_name(pod, prc);
        int reserved = 0;

        if (!cn) {
            if (dd_json_str(prc, "resourceClaimTemplateName", NULL))
                snprintf(why, n, "claim %s: ResourceClaim not created yet",
                         dd_json_str(prc, "name", NULL));
            else
                continue;
            return;
        }
        if (!(claim = find_claim(claims, ns, cn))) {
            snprintf(why, n, "ResourceClaim %s/%s not found", ns, cn);
            return;
        }
        if (!dd_json_path(claim, "status", "allocation", NULL)) {
            snprintf(why, n, "ResourceClaim %s/%s is not allocated", ns, cn);
            return;
        }
        cJSON_ArrayForEach(r, dd_json_arr(claim, "status", "reservedFor", NULL)) {
            const char *u = dd_json_str(r, "uid", NULL);

            if (u && uid && !strcmp(u, uid))
                reserved = 1;
        }
        if (!reserved) {
            snprintf(why, n, "ResourceClaim %s/%s is not reserved for the pod", ns, cn);
            return;
        }
        cJSON_ArrayForEach(r, dd_json_arr(claim, "status", "allocation", "devices", "results", NULL)) {
            const char *drv = dd_json_str(r, "driver", NULL);

            if (!drv || !driver_named(drv)) {
                snprintf(why, n, "ResourceClaim %s/%s: DRA driver %s is not registered on the node",
                         ns, cn, drv ? drv : "?");
                return;
            }
        }
    }
}

/* CDI device IDs the kubelet passes for one container (the driver's CDIDeviceIDs). */
static cJSON *container_cdi_devices(const cJSON *pod, const cJSON *ctr, const cJSON *claims)
{
    cJSON *ids = cJSON_CreateArray();
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);
    const cJSON *cc, *prc, *r;

    cJSON_ArrayForEach(cc, dd_json_arr(ctr, "resources", "claims", NULL)) {
        const char *cname = dd_json_str(cc, "name", NULL), *req = dd_json_str(cc, "request", NULL);

        cJSON_ArrayForEach(prc, dd_json_arr(pod, "spec", "resourceClaims", NULL)) {
            const char *pn = dd_json_str(prc, "name", NULL), *cn, *uid;
            const cJSON *claim;

            if (!pn || !cname || strcmp(pn, cname) || !(cn = pod_claim_name(pod, prc)) ||
                !(claim = find_claim(claims, ns, cn)) ||
                !(uid = dd_json_str(claim, "metadata", "uid", NULL)))
                continue;
            cJSON_ArrayForEach(r, dd_json_arr(claim, "status", "allocation", "devices", "results", NULL)) {
                const char *drv = dd_json_str(r, "driver", NULL), *dev = dd_json_str(r, "device", NULL);
                const char *rq = dd_json_str(r, "request", NULL);
                char q[512];
                size_t rl = req ? strlen(req) : 0;

                if (!drv || !dev)
                    continue;
                if (req && (!rq || strncmp(rq, req, rl) || (rq[rl] && rq[rl] != '/')))
                    continue;
                snprintf(q, sizeof(q), "k8s.%s/%s=common", drv, SIM_CDI_CLASS);
                push_str(ids, q);
                snprintf(q, sizeof(q), "k8s.%s/%s=%s-%s", drv, SIM_CDI_CLASS, uid, dev);
                push_str(ids, q);
            }
        }
    }
    return ids;
}

/* CreateContainer in containerd 1.7 for one container. */
static void runtime_create(const cJSON *pod, struct ctr_result *r, const cJSON *claims,
                           struct cdi_reg *reg)
{
    cJSON *ids = container_cdi_devices(pod, r->ctr, claims);
    const cJSON *id, *spec, *dev;
    const cJSON *seen[64]; /* specs whose spec-level edits were applied */
    size_t nseen = 0;
    char unresolved[1536];
    size_t off = 0;

    r->env = container_env(pod, r->ctr);
    r->err[0] = '\0';
    rand_hex(r->cid, 64);
    if (cJSON_GetArraySize(ids) == 0)
        goto out;
    if (!g.cri.enable_cdi) {
        /* WithCDI is not added to the spec opts: CDI devices silently ignored. */
        r->cdi_ignored = cJSON_GetArraySize(ids);
        goto out;
    }
    unresolved[0] = '\0';
    cJSON_ArrayForEach(id, ids) {
        spec = NULL;
        if (!cdi_lookup(reg, id->valuestring, &spec)) {
            int w = snprintf(unresolved + off, off < sizeof(unresolved) ? sizeof(unresolved) - off : 0,
                             "%s%s", off ? ", " : "", id->valuestring);

            off += w > 0 ? (size_t)w : 0;
            if (off >= sizeof(unresolved))
                off = sizeof(unresolved) - 1;
        }
    }
    if (off) {
        char cid[sizeof(r->cid)];

        copy(cid, sizeof(cid), r->cid);
        snprintf(r->err, sizeof(r->err),
                 "failed to generate container \"%s\" spec: failed to generate spec: CDI device "
                 "injection failed: unresolvable CDI devices %s", cid, unresolved);
        goto out;
    }
    cJSON_ArrayForEach(id, ids) {
        size_t k;
        int dup = 0;

        spec = NULL;
        dev = cdi_lookup(reg, id->valuestring, &spec);
        /* InjectDevices applies each spec's own edits once, before its devices'. */
        for (k = 0; k < nseen; k++)
            if (seen[k] == spec)
                dup = 1;
        if (!dup) {
            apply_env_edits(r->env, dd_json_path(spec, "containerEdits", NULL));
            if (nseen < sizeof(seen) / sizeof(seen[0]))
                seen[nseen++] = spec;
        }
        apply_env_edits(r->env, dd_json_path(dev, "containerEdits", NULL));
    }
    r->ncdi = cJSON_GetArraySize(ids);
    {
        const cJSON *e;

        cJSON_ArrayForEach(e, r->env)
            if (starts_with(e->string, "GPU_"))
                r->ngpu_env++;
    }
out:
    cJSON_Delete(ids);
}

static void pod_sync(const cJSON *pod, const cJSON *claims, struct cdi_reg *reg)
{
    const char *ns = dd_json_str(pod, "metadata", "namespace", NULL);
    const char *nm = dd_json_str(pod, "metadata", "name", NULL);
    const char *uid = dd_json_str(pod, "metadata", "uid", NULL);
    const char *phase = dd_json_str(pod, "status", "phase", NULL);
    const cJSON *ctrs = dd_json_arr(pod, "spec", "containers", NULL), *c;
    struct ctr_result rs[32];
    struct kube_status st;
    struct dd_err err = { 0 };
    struct podst *ps;
    char why[1024], sig[4096];
    int n = 0, i, failing = 0;
    size_t off = 0;

    if (!ns || !nm || !uid)
        return;
    if (dd_json_path(pod, "metadata", "deletionTimestamp", NULL)) {
        pod_finish_delete(pod);
        return;
    }
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        return;
    if (!(ps = pod_state(uid)))
        return;
    ps->seen = 1;
    if (ps->state == POD_NEW && phase && !strcmp(phase, "Running")) {
        ps->state = POD_RUNNING; /* started before we (re)started */
        return;
    }
    if (ps->state == POD_RUNNING || g.cri_state == 3 || g.cri_state == 0)
        return;

    claims_ready(pod, claims, why, sizeof(why));
    if (why[0]) {
        if (ps->state != POD_CREATING || strcmp(ps->sig, why)) {
            cJSON_ArrayForEach(c, ctrs) {
                if (n >= (int)(sizeof(rs) / sizeof(rs[0])))
                    break;
                memset(&rs[n], 0, sizeof(rs[n]));
                rs[n++].ctr = c;
            }
            if (ps->state != POD_CREATING &&
                pod_write_status(pod, 0, rs, n, &st, &err) != DD_OK) {
                api_fail("update pod status", fail_text(&st, &err));
                return;
            }
            say("pod %s/%s: ContainerCreating: waiting for its claims: %s", ns, nm, why);
            ps->state = POD_CREATING;
            copy(ps->sig, sizeof(ps->sig), why);
        }
        return;
    }

    cJSON_ArrayForEach(c, ctrs) {
        if (n >= (int)(sizeof(rs) / sizeof(rs[0])))
            break;
        memset(&rs[n], 0, sizeof(rs[n]));
        rs[n].ctr = c;
        runtime_create(pod, &rs[n], claims, reg);
        if (rs[n].err[0]) {
            /* the signature leaves out the (per-attempt) container id */
            const char *tail = strstr(rs[n].err, "\" spec: ");
            int w = snprintf(sig + off, off < sizeof(sig) ? sizeof(sig) - off : 0, "%s:%s;",
                             dd_json_str(c, "name", NULL), tail ? tail : rs[n].err);

            off += w > 0 ? (size_t)w : 0;
            if (off >= sizeof(sig))
                off = sizeof(sig) - 1;
            failing++;
        }
        n++;
    }
    if (!failing) {
        if (pod_write_status(pod, 1, rs, n, &st, &err) != DD_OK) {
            api_fail("update pod status", fail_text(&st, &err));
            goto done;
        }
        api_ok("update pod status");
        if (n > 0)
            pod_record_env(pod, rs[0].env);
        ps->state = POD_RUNNING;
        for (i = 0; i < n; i++) {
            if (rs[i].cdi_ignored)
                say("pod %s/%s: container %s started without its %d CDI device(s): enable_cdi = false, "
                    "containerd ignores them", ns, nm, dd_json_str(rs[i].ctr, "name", NULL),
                    rs[i].cdi_ignored);
            else if (rs[i].ncdi)
                say("pod %s/%s: container %s running (containerd://%.12s..., %d CDI device%s, %d GPU_* "
                    "env var%s injected)", ns, nm, dd_json_str(rs[i].ctr, "name", NULL), rs[i].cid,
                    rs[i].ncdi, rs[i].ncdi == 1 ? "" : "s", rs[i].ngpu_env, rs[i].ngpu_env == 1 ? "" : "s");
            else
                say("pod %s/%s: container %s running (containerd://%.12s...)", ns, nm,
                    dd_json_str(rs[i].ctr, "name", NULL), rs[i].cid);
        }
        goto done;
    }
    sig[off] = '\0';
    if (ps->state == POD_FAILING && !strcmp(ps->sig, sig))
        goto done; /* same failure as last time: nothing new to report */
    if (pod_write_status(pod, 1, rs, n, &st, &err) != DD_OK) {
        api_fail("update pod status", fail_text(&st, &err));
        goto done;
    }
    api_ok("update pod status");
    ps->state = POD_FAILING;
    copy(ps->sig, sizeof(ps->sig), sig);
    for (i = 0; i < n; i++) {
        if (!rs[i].err[0])
            continue;
        say("pod %s/%s: container %s: CreateContainerError: %s", ns, nm,
            dd_json_str(rs[i].ctr, "name", NULL), rs[i].err);
        pod_event_failed(pod, &rs[i]);
    }
done:
    for (i = 0; i < n; i++)
        cJSON_Delete(rs[i].env);
}

/* ---- main loop ------------------------------------------------------------- */

static int list_all(const char *what, const char *group, const char *version, const char *resource,
                    const char *sel, cJSON **items)
{
    struct kube_status st;
    struct dd_err err = { 0 };
    char path[256];

    *items = NULL;
    if (!kube_path(path, sizeof(path), group, version, resource, NULL, NULL, NULL))
        return -1;
    if (kube_list(g.kc, path, sel, 500, items, NULL, &st, &err) != DD_OK) {
        api_fail(what, fail_text(&st, &err));
        return -1;
    }
    api_ok(what);
    return 0;
}

static void tick(void)
{
    double now = mono();
    cJSON *pods = NULL, *claims = NULL;
    const cJSON *p;
    struct cdi_reg reg = { NULL, 0 };
    char sel[400];
    size_t i;

    node_tick(now);
    if (fmt(sel, sizeof(sel), "fieldSelector=spec.nodeName%%3D%s", g.node) ||
        list_all("list pods", "", "v1", "pods", sel, &pods))
        return;
    if (now >= g.next_driver_sync) {
        drivers_sync(pods, now);
        g.next_driver_sync = now + DRIVER_SYNC_S;
    }
    if (list_all("list resourceclaims", "resource.k8s.io", "v1", "resourceclaims", NULL, &claims)) {
        cJSON_Delete(pods);
        return;
    }
    for (i = 0; i < MAX_DRIVERS; i++)
        if (g.drv[i].used)
            driver_prepare(&g.drv[i], claims, pods);
    runtime_refresh();
    for (i = 0; i < MAX_PODS; i++)
        g.pods[i].seen = 0;
    cJSON_ArrayForEach(p, pods)
        pod_sync(p, claims, &reg);
    for (i = 0; i < MAX_PODS; i++)
        if (g.pods[i].used && !g.pods[i].seen) {
            const cJSON *q;
            int listed = 0;

            cJSON_ArrayForEach(q, pods) {
                const char *u = dd_json_str(q, "metadata", "uid", NULL);

                if (u && !strcmp(u, g.pods[i].uid))
                    listed = 1;
            }
            if (!listed)
                g.pods[i].used = 0;
        }
    cJSON_Delete(reg.specs);
    cJSON_Delete(claims);
    cJSON_Delete(pods);
}

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nodesim [--node NAME] [--root DIR] [--interval-ms MS] [--cluster-dir DIR]\n"
               "  environment: KUBECONFIG (admin), DD_CLUSTER_DIR (cluster state dir)\n"
               "  --node         Node name (default node-1)\n"
               "  --root         simulated host filesystem (default $DD_CLUSTER_DIR/<node>/host)\n"
               "  --interval-ms  poll interval (default 200)\n"
               "  --cluster-dir  instead of $DD_CLUSTER_DIR\n");
}

/* "--name VALUE" or "--name=VALUE"; advances *i. */
static const char *flag_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(argv[*i], name, n))
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int main(int argc, char **argv)
{
    const char *node = "node-1", *root = NULL, *cdir = getenv("DD_CLUSTER_DIR"), *v;
    struct dd_err err = { 0 };
    struct kube_client_opts o = KUBE_CLIENT_OPTS_INIT;
    struct sigaction sa;
    char runlink[PATH_MAX], agent[128];
    int i;

    g.interval_ms = 200;
    for (i = 1; i < argc; i++) {
        if ((v = flag_value(argc, argv, &i, "--node")))
            node = v;
        else if ((v = flag_value(argc, argv, &i, "--root")))
            root = v;
        else if ((v = flag_value(argc, argv, &i, "--cluster-dir")))
            cdir = v;
        else if ((v = flag_value(argc, argv, &i, "--interval-ms"))) {
            char *end;

            errno = 0;
            g.interval_ms = strtol(v, &end, 10);
            if (errno || *end || g.interval_ms < 10 || g.interval_ms > 60000) {
                fprintf(stderr, "nodesim: --interval-ms: want 10..60000, got \"%s\"\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "nodesim: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    copy(g.node, sizeof(g.node), node);
    setvbuf(stderr, NULL, _IOLBF, 0);
    if (!cdir || !cdir[0]) {
        say("DD_CLUSTER_DIR is not set (or use --cluster-dir)");
        return 2;
    }
    copy(g.cluster_dir, sizeof(g.cluster_dir), cdir);
    if (root)
        copy(g.root, sizeof(g.root), root);
    else if (fmt(g.root, sizeof(g.root), "%s/%s/host", g.cluster_dir, g.node)) {
        say("root path too long");
        return 2;
    }
    trim_slashes(g.root);
    /* The host's /var/run is a symlink to /run, as on Debian. */
    if (mkdir_p(g.root) == 0 && !fmt(runlink, sizeof(runlink), "%s/run", g.root) &&
        mkdir_p(runlink) == 0 && !fmt(runlink, sizeof(runlink), "%s/var", g.root) &&
        mkdir_p(runlink) == 0 && !fmt(runlink, sizeof(runlink), "%s/var/run", g.root)) {
        struct stat sb;

        if (lstat(runlink, &sb) != 0 && symlink("../run", runlink) != 0)
            say("symlink %s: %s", runlink, strerror(errno));
    }
    if (kube_config_load(&g.cfg, NULL, NULL, &err) != DD_OK) {
        say("kubeconfig: %s", err.msg);
        return 1;
    }
    o.connect_timeout_ms = 2000;
    o.request_timeout_ms = 10000;
    o.max_retries = 1;
    o.backoff_max_ms = 1000;
    snprintf(agent, sizeof(agent), "kubelet/%s (linux/amd64) nodesim", kubelet_version());
    o.user_agent = agent;
    g.kc = kube_client_new(&g.cfg, &o, &err);
    if (!g.kc) {
        say("client: %s", err.msg);
        kube_config_release(&g.cfg);
        return 1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    now_str(g.since, sizeof(g.since), 0);
    say("starting: node %s, API server %s, host root %s, poll every %ld ms", g.node, g.cfg.server,
        g.root, g.interval_ms);

    while (!g_stop) {
        double until;

        tick();
        until = mono() + (double)g.interval_ms / 1000.0;
        while (!g_stop) {
            double left = until - mono();
            struct timespec ts;

            if (left <= 0)
                break;
            if (left > 0.05)
                left = 0.05;
            ts.tv_sec = 0;
            ts.tv_nsec = (long)(left * 1e9);
            nanosleep(&ts, NULL);
        }
    }
    say("stopping (objects are left as they are)");
    for (i = 0; i < MAX_DRIVERS; i++)
        driver_drop_token(&g.drv[i]);
    kube_client_free(g.kc);
    kube_config_release(&g.cfg);
    cri_config_release(&g.cri);
    kube_global_cleanup();
    return 0;
}
