/*
 * cluster.h - what the live API server is, for the commands that watch or read a cluster
 * (controller, webhook, diagnose, explain): its release (GET /version), which resource.k8s.io
 * versions it serves (discovery: /apis/resource.k8s.io and each version's resource list),
 * its feature gates (the kubernetes_feature_enabled metric on /metrics, where the
 * ServiceAccount may read it), and --feature-gates on top.  Where the server does not say,
 * the release's defaults are assumed, and `says` states it: printed at start and served in
 * /readyz.
 */
#ifndef DD_CLUSTER_H
#define DD_CLUSTER_H

#include "client/kube.h"
#include "model/kubever.h"
#include "rules/rules.h"

struct cluster_info {
    char version[64];       /* /version's gitVersion, "" when it did not answer */
    int minor;              /* the release judged by: the server's, clamped to what
                               lib/model/kubever.c knows; KV_DEFAULT_MINOR when unknown */
    char served[96];        /* the resource.k8s.io versions discovery lists ("v1 v1beta2") */
    char taint_rules[16];   /* the version DeviceTaintRules are served in ("" none) */
    int supported;          /* 1: resource.k8s.io/v1 is served (Kubernetes 1.34 or later) */
    int gates_known;        /* 1: /metrics told the gates */
    struct kv_gates gates;  /* the release's defaults, the server's, then --feature-gates */
    char says[1024];        /* one line: what dra-doctor runs with and what it assumed, or,
                               when !supported, why it cannot work */
};

/*
 * Asks the API server and fills ci.  flags: --feature-gates (NULL none), applied last.
 * DD_OK unless flags are malformed (DD_EINVAL, err); an API server that does not answer
 * leaves the defaults with `says` telling so.
 */
enum dd_rc cluster_discover(struct kube_client *c, const char *flags, struct cluster_info *ci,
                            struct dd_err *err);

/*
 * What a long-running command does at start: a client of cfg, cluster_discover with flags,
 * the line "dra-doctor WHO: <says>" on stderr, and ro (and the CEL environment) set for the
 * release (cluster_rule_options with stored).  -1 after saying why (bad flags, no client).
 */
int cluster_start(const struct kube_config *cfg, const char *who, const char *flags, int stored,
                  struct cluster_info *ci, struct rule_options *ro);

/* The gates kubernetes_feature_enabled{name="X",stage="Y"} 0|1 lines of a Prometheus text
 * exposition set in g (KV_FROM_SERVER); returns how many DRA gates it set. */
int cluster_gates_from_metrics(const char *text, struct kv_gates *g);

/* A resource the controller watches (and `diagnose` lists). */
struct cluster_resource {
    const char *group;     /* "" for the core API */
    const char *version;
    const char *resource;  /* plural */
    const char *selector;  /* query fragment for LIST/WATCH, or NULL */
};

/* What a snapshot is made of on every cluster: pods (first: the controller relies on it),
 * nodes, namespaces, quotas, Events about pods, DeviceClasses, claims, templates, slices,
 * DaemonSets, cluster RBAC. */
extern const struct cluster_resource cluster_resources[];
extern const size_t cluster_nresources;

/* What the cluster has beyond cluster_resources that the rules read, into out (at most
 * max; returns how many): DeviceTaintRules in the version they are served in, workloads'
 * FailedCreate Events, mutating webhooks and (1.36+) policies.  The strings are ci's or
 * static. */
size_t cluster_extra_resources(const struct cluster_info *ci, struct cluster_resource *out,
                               size_t max);

/* Lists every cluster_resources entry and then extra[0..nextra) with c into one array (new;
 * cJSON_Delete it).  A resource the client may not list (403; or 404 for an extra one) is
 * skipped, with a note on stderr for the first ones; other errors fail (NULL, err). */
cJSON *cluster_list_all(struct kube_client *c, const struct cluster_resource *extra,
                        size_t nextra, struct dd_err *err);

/*
 * SubjectAccessReview answers for the snapshot (lib/rules/snapshot.h's snapshot_sars):
 * asked once per ServiceAccount and verb with client and remembered until
 * cluster_sars_forget.  Zero it, then set client (borrowed; one thread at a time).
 */
struct cluster_sars {
    struct kube_client *client;
    struct cluster_sar { char *ns, *sa; const char *verb; int allowed; } *v;
    size_t n, cap;
};

/* The snapshot_sars ask function over a struct cluster_sars (ctx). */
int cluster_sar_ask(void *ctx, const char *ns, const char *sa, const char *verb);
void cluster_sars_forget(struct cluster_sars *s);

/* Options for the rule engine: the release and gates of ci (borrowed); also sets the process's
 * CEL environment to theirs (cel_set_default_env: call before anything compiles), stored 1
 * for objects the API server accepted already (the controller), 0 for new ones (the
 * webhook). */
void cluster_rule_options(const struct cluster_info *ci, int stored, struct rule_options *opt);

#endif
