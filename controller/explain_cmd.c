/*
 * explain_cmd.c - `dra-doctor explain`: for a pod, a claim or one request, every
 * device that could serve it, node by node and pool by pool, and what each
 * selector said of it - true, false or a runtime error - with the smallest
 * sub-expression that decided a false or an error and the values it saw; then
 * what else keeps a device that matches from being allocated (another claim
 * holds it, it is not on the pod's node).  The view no scheduler gives.
 *
 * Read-only, against a live cluster (the same listing as `diagnose`) or against
 * manifests (-f, read as `lint` reads them).  Selectors run as the scheduler's
 * allocator runs them: a class's selectors in order, each only on the devices the
 * ones before accepted, then the request's selectors on the devices the class
 * accepts.
 */
#include "controller.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cel/cel.h"
#include "formats/json.h"
#include "model/kubever.h"
#include "client/kube.h"
#include "formats/manifest.h"
#include "model/alloc.h"
#include "rules/snapshot.h"
#include "rules/cluster.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor explain pod|claim NAME [-n NAMESPACE] [--request NAME] [options]\n"
"\n"
"Shows, for every device that could serve the pod's claims (or the claim, or one of\n"
"its requests), each DeviceClass and request selector's result on it - true, false\n"
"or a CEL runtime error - and, for a false or an error, the smallest part of the\n"
"expression that decided it with the values it saw; then what else excludes a\n"
"matching device (allocated to another claim, not on the pod's node).  For an\n"
"unscheduled pod, then each node's verdict as kube-scheduler's allocator reaches it\n"
"(Kubernetes v1.37.2): the devices a fitting node would give, or why a node does not fit.\n"
"\n"
"Without -f, reads the cluster (read-only, like `diagnose`); with -f, manifests.\n"
"\n"
"options:\n"
"  -n, --namespace NS     the object's namespace (default: the context's, or\n"
"                         \"default\")\n"
"      --request NAME     only this request of the claim\n"
"  -f, --filename PATH    manifests (file, directory, '-'; repeatable) instead of a\n"
"                         cluster\n"
"      --kubeconfig FILE  default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
"      --context NAME     kubeconfig context (default: current-context)\n"
"      --kube-version V   the release whose CEL environment applies (1.34 to 1.37)\n"
"      --feature-gates L  the cluster's gates where they differ from the release's\n"
"                         defaults (DRAListTypeAttributes=true, ...)\n"
"  -o, --output FORMAT    text (default) or json\n"
"  -h, --help\n"
"\n"
"exit status: 0 some device can serve every request, 1 a request has no device it\n"
"can use, 2 usage, input or API error.\n");
}

#define MAX_PATHS 64
#define WHY 1024

struct opts {
    const char *kind, *name, *ns, *request;
    int json;
};

/* "claim ns/name, request r": which allocated claim, if any, holds a device. */
static const char *holder(const struct dra_model *m, const struct dra_claim *self,
                          const char *driver, const char *pool, const char *dev, char *buf,
                          size_t n)
{
    for (size_t i = 0; i < m->nclaims; i++) {
        const struct dra_claim *c = &m->claims[i];
        const cJSON *r;
        if (c == self || !c->allocated)
            continue;
        cJSON_ArrayForEach(r, dd_json_path(c->o.json, "status.allocation.devices.results", NULL)) {
            const char *d = dd_json_str(r, "driver", NULL), *p = dd_json_str(r, "pool", NULL),
                       *v = dd_json_str(r, "device", NULL);
            if (d && p && v && !strcmp(d, driver) && !strcmp(p, pool) && !strcmp(v, dev)) {
                snprintf(buf, n, "claim %s/%s", c->o.ns, c->o.name);
                return buf;
            }
        }
    }
    return NULL;
}

static const char *verdict_name(enum cel_verdict v)
{
    return v == CEL_TRUE ? "true" : v == CEL_FALSE ? "false" : "error";
}

/* One selector on one device; appends to the text line and the JSON array. */
static enum cel_verdict run_one(const struct dra_selector *sel, const char *source, size_t idx,
                                const struct cel_device *dev, cJSON *arr, int json)
{
    char why[WHY];
    struct dd_err err;
    enum cel_verdict v;

    if (!sel->prog) {
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "source", source);
            cJSON_AddNumberToObject(o, "index", (double)idx);
            cJSON_AddStringToObject(o, "expression", sel->expr ? sel->expr : "");
            cJSON_AddStringToObject(o, "result", "compile_error");
            cJSON_AddStringToObject(o, "why", sel->err.msg);
            cJSON_AddItemToArray(arr, o);
        } else {
            printf("        %s selector #%zu does not compile: %s\n", source, idx, sel->err.msg);
        }
        return CEL_ERROR;
    }
    v = cel_explain_device(sel->prog, dev, why, sizeof(why), &err);
    if (v == CEL_ERROR && !why[0])
        snprintf(why, sizeof(why), "%s", err.msg);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "source", source);
        cJSON_AddNumberToObject(o, "index", (double)idx);
        cJSON_AddStringToObject(o, "expression", sel->expr ? sel->expr : "");
        cJSON_AddStringToObject(o, "result", verdict_name(v));
        if (v != CEL_TRUE)
            cJSON_AddStringToObject(o, "why", why);
        if (v == CEL_ERROR)
            cJSON_AddStringToObject(o, "error", err.msg);
        cJSON_AddItemToArray(arr, o);
    } else if (v == CEL_TRUE) {
        printf("        %s selector #%zu: true\n", source, idx);
    } else {
        printf("        %s selector #%zu: %s: %s\n", source, idx,
               v == CEL_FALSE ? "false" : "ERROR (the scheduler aborts the allocation)", why);
    }
    return v;
}

/* One request against every published device; returns how many it can use. */
static size_t explain_request(const struct dra_model *m, const struct dra_claim *c,
                              const struct dra_request *r, const char *pod_node, cJSON *out,
                              int json)
{
    const struct dra_class *cls = r->class_name ? dra_find_class(m, r->class_name) : NULL;
    cJSON *devs = json ? cJSON_CreateArray() : NULL, *req = NULL;
    size_t usable = 0, seen = 0;
    const char *last_pool = NULL;

    if (json) {
        req = cJSON_CreateObject();
        cJSON_AddStringToObject(req, "name", r->name ? r->name : "");
        cJSON_AddStringToObject(req, "deviceClassName", r->class_name ? r->class_name : "");
    } else {
        printf("  request %s: DeviceClass %s, %s\n", r->name ? r->name : "?",
               r->class_name ? r->class_name : "(none)",
               r->all ? "all matching devices" : r->count == 1 ? "1 device" : "several devices");
    }
    if (!cls) {
        if (json)
            cJSON_AddStringToObject(req, "problem", "the DeviceClass does not exist");
        else
            printf("    DeviceClass %s does not exist: no device can be allocated\n",
                   r->class_name ? r->class_name : "");
    }
    for (size_t i = 0; cls && i < m->nslices; i++) {
        const struct dra_slice *sl = &m->slices[i];
        for (size_t j = 0; j < sl->ndev; j++) {
            const struct dra_device *d = &sl->dev[j];
            cJSON *sels = json ? cJSON_CreateArray() : NULL, *o = NULL;
            enum cel_verdict v = CEL_TRUE;
            char hb[300];
            const char *held, *excluded = NULL;
            seen++;
            if (!json && (!last_pool || strcmp(last_pool, sl->pool))) {
                printf("    node %s, pool %s (driver %s):\n", *sl->node ? sl->node : "(any)",
                       sl->pool, sl->driver);
                last_pool = sl->pool;
            }
            if (!json)
                printf("      %s\n", d->name);
            for (size_t k = 0; k < cls->nsel && v == CEL_TRUE; k++)
                v = run_one(&cls->sel[k], "class", k, &d->dev, sels, json);
            for (size_t k = 0; k < r->nsel && v == CEL_TRUE; k++)
                v = run_one(&r->sel[k], "request", k, &d->dev, sels, json);
            if (v == CEL_TRUE) {
                held = holder(m, c, sl->driver, sl->pool, d->name, hb, sizeof(hb));
                if (held)
                    excluded = held;
                else if (pod_node && *pod_node && *sl->node && strcmp(pod_node, sl->node))
                    excluded = "not on the pod's node";
                else
                    usable++;
            }
            if (json) {
                o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "node", sl->node);
                cJSON_AddStringToObject(o, "pool", sl->pool);
                cJSON_AddStringToObject(o, "driver", sl->driver);
                cJSON_AddStringToObject(o, "device", d->name);
                cJSON_AddItemToObject(o, "selectors", sels);
                cJSON_AddBoolToObject(o, "matches", v == CEL_TRUE);
                if (excluded)
                    cJSON_AddStringToObject(o, "excludedBy",
                                            strncmp(excluded, "claim ", 6) ? excluded : "allocated");
                if (excluded && !strncmp(excluded, "claim ", 6))
                    cJSON_AddStringToObject(o, "allocatedTo", excluded + 6);
                cJSON_AddItemToArray(devs, o);
            } else if (v == CEL_TRUE) {
                printf("        => %s\n", excluded ? excluded : "matches: can be allocated");
                if (excluded && !strncmp(excluded, "claim ", 6))
                    printf("           (allocated to %s)\n", excluded);
            }
        }
    }
    if (json) {
        cJSON_AddItemToObject(req, "devices", devs);
        cJSON_AddNumberToObject(req, "usable", (double)usable);
        cJSON_AddItemToArray(out, req);
    } else if (cls) {
        if (!seen)
            printf("    no device is published (no ResourceSlice in the input)\n");
        printf("    %zu of %zu device(s) can serve this request\n", usable, seen);
    }
    return usable;
}

/* A claim (or a template a pod's claim comes from): its requests; 1 when one has no device. */
static int explain_claim(const struct dra_model *m, const struct dra_claim *c, const char *pod_node,
                         const char *only, cJSON *out, int json)
{
    cJSON *o = NULL, *reqs = NULL;
    int short_of = 0, matched = 0;

    if (json) {
        o = cJSON_CreateObject();
        reqs = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "kind", c->is_template ? "ResourceClaimTemplate" : "ResourceClaim");
        cJSON_AddStringToObject(o, "namespace", c->o.ns);
        cJSON_AddStringToObject(o, "name", c->o.name);
    } else {
        printf("%s %s/%s%s\n", c->is_template ? "ResourceClaimTemplate" : "ResourceClaim",
               c->o.ns, c->o.name, c->allocated ? " (allocated)" : "");
    }
    for (size_t i = 0; i < c->spec.nreq; i++) {
        const struct dra_request *top = &c->spec.req[i];
        if (only && (!top->name || strcmp(top->name, only)))
            continue;
        matched = 1;
        if (top->nsub) {
            /* firstAvailable: the first alternative with a device is taken. */
            size_t any = 0;
            if (!json)
                printf("  request %s: first available of %zu alternatives\n", top->name,
                       top->nsub);
            for (size_t k = 0; k < top->nsub; k++)
                any += explain_request(m, c, &top->sub[k], pod_node, reqs, json);
            short_of |= any == 0;
        } else {
            short_of |= explain_request(m, c, top, pod_node, reqs, json) == 0;
        }
    }
    if (!matched && !json)
        printf("  no request named %s\n", only);
    if (json) {
        cJSON_AddItemToObject(o, "requests", reqs);
        cJSON_AddItemToArray(out, o);
    }
    return short_of || !matched;
}

/* The allocator's verdict on every node for pod p (what DevicesDoNotFit reads). */
static void explain_alloc(const struct dra_model *m, const struct dra_podspec *p, int manifests,
                          cJSON *out, int json)
{
    struct alloc_options opt;
    struct alloc_inventory *inv;
    struct alloc_result r;
    struct dd_err err;
    cJSON *arr = NULL;
    char why[2048];
    size_t i, j;

    alloc_options_default(&opt);
    opt.templates_as_claims = manifests; /* the pod's claims are not created yet */
    if (!(inv = alloc_inventory_new(m, &opt, &err)) || alloc_pod(inv, p, 1, &r, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor explain: %s\n", err.msg);
        alloc_inventory_free(inv);
        return;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "allocation", "kube-scheduler v1.37.2 structured allocator");
        if (r.reason)
            cJSON_AddStringToObject(o, "reason", r.reason);
        arr = cJSON_AddArrayToObject(o, "nodes");
        cJSON_AddItemToArray(out, o);
    } else {
        printf("Allocation, node by node, as kube-scheduler's allocator does it (Kubernetes "
               "v1.37.2): fits on %zu of %zu node(s)%s%s\n", r.nfit, r.nnodes,
               r.reason ? ": " : "", r.reason ? r.reason : "");
        if (!r.nnodes)
            printf("  (no Node objects: nothing to allocate on)\n");
    }
    for (i = 0; i < r.nnodes; i++) {
        const struct alloc_node *n = &r.nodes[i];
        int fits = n->verdict == ALLOC_FIT && !n->pod_filter;
        alloc_why_text(&r, n, why, sizeof(why));
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "node", n->node->name);
            cJSON_AddBoolToObject(o, "fits", fits);
            if (!fits)
                cJSON_AddStringToObject(o, "why", why);
            cJSON_AddItemToArray(arr, o);
            continue;
        }
        printf("  %s: %s%s\n", n->node->name, fits ? "fits" : "does not fit: ", fits ? "" : why);
        for (j = 0; fits && j < n->npicks; j++)
            printf("      %s/%s -> %s/%s/%s\n", r.claims[n->picks[j].claim]->o.name,
                   n->picks[j].request, n->picks[j].driver, n->picks[j].pool, n->picks[j].device);
    }
    alloc_result_release(&r);
    alloc_inventory_free(inv);
}

static struct snapshot *from_files(const char *const *paths, size_t n, struct dd_err *err)
{
    struct mf_set set = MF_SET_INIT;
    cJSON *objs = cJSON_CreateArray();
    struct snapshot *s;

    if (!objs) {
        dd_failf(err, DD_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        mf_load_path(&set, paths[i], NULL);
    for (size_t i = 0; i < set.ndiags; i++) {
        char buf[512];
        fprintf(stderr, "dra-doctor explain: %s\n", mf_diag_format(&set.diags[i], buf, sizeof(buf)));
    }
    for (size_t i = 0; i < set.n; i++)
        cJSON_AddItemToArray(objs, cJSON_Duplicate(set.objs[i].json, 1));
    mf_set_release(&set);
    s = snapshot_build(objs, NULL, 0, NULL, NULL, NULL, err);
    return s;
}

int explain_main(int argc, char **argv)
{
    static const struct option lopts[] = {
        { "namespace", required_argument, NULL, 'n' },
        { "request", required_argument, NULL, 'r' },
        { "filename", required_argument, NULL, 'f' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "kube-version", required_argument, NULL, 'V' },
        { "feature-gates", required_argument, NULL, 'G' },
        { "output", required_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    struct opts o = { 0 };
    const char *paths[MAX_PATHS], *kubeconfig = NULL, *context = NULL;
    size_t npaths = 0;
    struct cel_env env = *cel_default_env();
    struct kube_config cfg;
    struct cluster_sars sars = { NULL, NULL, 0, 0 };
    struct kube_client *c = NULL;
    struct snapshot *s = NULL;
    struct dd_err err;
    cJSON *out = NULL;
    int ch, rc = 0, minor = 0;
    const char *gate_text = NULL;
    struct kv_gates gates;

    optind = 1;
    dd_err_clear(&err);
    while ((ch = getopt_long(argc, argv, "n:f:o:h", lopts, NULL)) != -1) {
        switch (ch) {
        case 'n': o.ns = optarg; break;
        case 'r': o.request = optarg; break;
        case 'f':
            if (npaths == MAX_PATHS) {
                fprintf(stderr, "dra-doctor explain: too many paths (limit %d)\n", MAX_PATHS);
                return 2;
            }
            paths[npaths++] = optarg;
            break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 'V':
            if (kv_parse(optarg, &minor, &err) != DD_OK) {
                fprintf(stderr, "dra-doctor explain: --kube-version: %s\n", err.msg);
                return 2;
            }
            break;
        case 'G': gate_text = optarg; break;
        case 'o':
            if (!strcmp(optarg, "json"))
                o.json = 1;
            else if (strcmp(optarg, "text")) {
                fprintf(stderr, "dra-doctor explain: -o wants text or json\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "Try 'dra-doctor explain --help'.\n");
            return 2;
        }
    }
    if (argc - optind != 2 || (strcmp(argv[optind], "pod") && strcmp(argv[optind], "claim"))) {
        fprintf(stderr, "dra-doctor explain: want `pod NAME` or `claim NAME`\n"
                        "Try 'dra-doctor explain --help'.\n");
        return 2;
    }
    o.kind = argv[optind];
    o.name = argv[optind + 1];
    kv_gates_init(&gates, minor ? minor : KV_DEFAULT_MINOR);
    if (gate_text && kv_gates_set(&gates, gate_text, KV_FROM_FLAG, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor explain: --feature-gates: %s\n", err.msg);
        return 2;
    }
    /* Objects in a cluster were accepted already: the scheduler's environment. */
    kv_cel_env(&gates, npaths == 0, &env);
    cel_set_default_env(&env);
    memset(&cfg, 0, sizeof(cfg));
    if (npaths) {
        s = from_files(paths, npaths, &err);
        if (!o.ns)
            o.ns = "default";
    } else {
        cJSON *objs;
        if (kube_config_load(&cfg, kubeconfig, context, &err) != DD_OK) {
            fprintf(stderr, "dra-doctor explain: %s\n", err.msg);
            return 2;
        }
        if (!o.ns)
            o.ns = cfg.namespace_ ? cfg.namespace_ : "default";
        if ((c = kube_client_new(&cfg, NULL, &err)) &&
            (objs = cluster_list_all(c, NULL, 0, &err))) {
            sars.client = c;
            s = snapshot_build(objs, NULL, 0, &(struct snapshot_sars){ cluster_sar_ask, &sars },
                               NULL, NULL, &err);
        }
    }
    if (!s) {
        fprintf(stderr, "dra-doctor explain: %s\n", err.msg);
        rc = 2;
        goto done;
    }
    out = o.json ? cJSON_CreateArray() : NULL;
    if (!strcmp(o.kind, "claim")) {
        const struct dra_claim *cl = dra_find_claim(&s->m, o.ns, o.name, 0);
        if (!cl) {
            fprintf(stderr, "dra-doctor explain: ResourceClaim %s/%s not found\n", o.ns, o.name);
            rc = 2;
            goto done;
        }
        rc = explain_claim(&s->m, cl, NULL, o.request, out, o.json);
    } else {
        const struct dra_podspec *p = NULL;
        for (size_t i = 0; i < s->m.npods && !p; i++)
            if (!strcmp(s->m.pods[i]->o.ns, o.ns) && !strcmp(s->m.pods[i]->o.name, o.name))
                p = s->m.pods[i];
        if (!p) {
            fprintf(stderr, "dra-doctor explain: %s %s/%s not found (or it uses no "
                            "ResourceClaim)\n", "Pod", o.ns, o.name);
            rc = 2;
            goto done;
        }
        if (!o.json)
            printf("Pod %s/%s%s%s\n\n", p->o.ns, p->o.name, *p->node ? " on node " : "",
                   p->node);
        for (size_t k = 0; k < p->nclaims; k++) {
            const struct dra_claim *cl = dra_pod_claim_resolve(&s->m, p, &p->claims[k]);
            if (!cl && p->claims[k].tmpl)
                cl = dra_find_claim(&s->m, p->o.ns, p->claims[k].tmpl, 1);
            if (!cl) {
                if (!o.json)
                    printf("claim %s of the pod: its ResourceClaim is not in the input\n\n",
                           p->claims[k].name);
                rc = 1;
                continue;
            }
            rc |= explain_claim(&s->m, cl, p->node, o.request, out, o.json);
            if (!o.json)
                printf("\n");
        }
        if (!*p->node && !o.request)
            explain_alloc(&s->m, p, npaths > 0, out, o.json);
    }
    if (o.json) {
        char *txt = cJSON_PrintUnformatted(out);
        if (txt)
            printf("%s\n", txt);
        free(txt);
    }
done:
    cJSON_Delete(out);
    snapshot_free(s);
    cluster_sars_forget(&sars);
    kube_client_free(c);
    if (!npaths)
        kube_config_release(&cfg);
    return rc;
}
