/*
 * diagnose_cmd.c - `dra-doctor diagnose`: the controller's diagnosis, once,
 * read-only, for people who have not deployed the controller.
 */
#include "controller.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/diagnose.h"
#include "rules/snapshot.h"
#include "rules/cluster.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor diagnose [-n NAMESPACE | -A] [POD] [options]\n"
"\n"
"Lists what the cluster holds (pods, claims, classes, slices, quotas, driver\n"
"DaemonSets, nodes, events), runs the diagnosis rules, and prints for each pod\n"
"with DRA claims that is Pending or failing: the root cause, every fault on its\n"
"path, and the fix.  Read-only: it changes nothing in the cluster.\n"
"\n"
"options:\n"
"  -n, --namespace NS     pods of this namespace (default: the context's)\n"
"  -A, --all-namespaces   pods of every namespace\n"
"      --kubeconfig FILE  default: $KUBECONFIG, ~/.kube/config, in-cluster\n"
"      --context NAME     kubeconfig context (default: current-context)\n"
"  -o, --output FORMAT    text (default) or json\n"
"      --show-healthy     also list pods with nothing to fix\n"
"      --feature-gates L  the cluster's gates (A=true,B=false) over what the API\n"
"                         server's /metrics tells, or its release's defaults\n"
"  -h, --help\n"
"\n"
"exit status: 0 no pod has a DRA fault, 1 some pod has one, 2 usage or API error.\n");
}

static void print_json(cJSON *pods)
{
    char *s = cJSON_PrintUnformatted(pods);

    if (s)
        printf("%s\n", s);
    free(s);
}

int diagnose_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "namespace", required_argument, NULL, 'n' },
        { "all-namespaces", no_argument, NULL, 'A' },
        { "kubeconfig", required_argument, NULL, 'k' },
        { "context", required_argument, NULL, 'c' },
        { "output", required_argument, NULL, 'o' },
        { "show-healthy", no_argument, NULL, 's' },
        { "feature-gates", required_argument, NULL, 'G' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *ns = NULL, *kubeconfig = NULL, *context = NULL, *pod = NULL, *gates = NULL;
    struct rule_options ropt = RULE_OPTIONS_INIT;
    struct cluster_resource extra[4];
    struct cluster_sars sars = { NULL, NULL, 0, 0 };
    struct cluster_info ci;
    size_t nextra = 0;
    int all = 0, json = 0, show = 0, ch, bad = 0;
    struct kube_config cfg;
    struct kube_client *c = NULL;
    struct snapshot *s = NULL;
    struct dd_err err;
    cJSON *objs = NULL, *out = NULL;
    size_t i;

    optind = 1;
    while ((ch = getopt_long(argc, argv, "n:Ao:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'n': ns = optarg; break;
        case 'A': all = 1; break;
        case 'k': kubeconfig = optarg; break;
        case 'c': context = optarg; break;
        case 's': show = 1; break;
        case 'G': gates = optarg; break;
        case 'o':
            if (!strcmp(optarg, "json"))
                json = 1;
            else if (strcmp(optarg, "text")) {
                fprintf(stderr, "dra-doctor diagnose: -o wants text or json\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "Try 'dra-doctor diagnose --help'.\n");
            return 2;
        }
    }
    if (optind < argc)
        pod = argv[optind++];
    if (optind < argc || (all && (ns || pod))) {
        fprintf(stderr, "dra-doctor diagnose: give one POD, and -A only without -n or POD\n");
        return 2;
    }
    dd_err_clear(&err);
    memset(&cfg, 0, sizeof(cfg));
    if (kube_config_load(&cfg, kubeconfig, context, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor diagnose: %s\n", err.msg);
        return 2;
    }
    if (!ns && !all)
        ns = cfg.namespace_ ? cfg.namespace_ : "default";
    if ((c = kube_client_new(&cfg, NULL, &err)) &&
        cluster_discover(c, gates, &ci, &err) != DD_OK) {
        fprintf(stderr, "dra-doctor diagnose: --feature-gates: %s\n", err.msg);
        kube_client_free(c);
        kube_config_release(&cfg);
        return 2;
    }
    if (c && !json)
        printf("Cluster: %s%s\n\n", ci.supported ? "" : "unsupported: ", ci.says);
    if (c) {
        /* Live objects were accepted already: the scheduler's environment. */
        cluster_rule_options(&ci, 1, &ropt);
        nextra = cluster_extra_resources(&ci, extra, 4);
    }
    if (c)
        objs = cluster_list_all(c, extra, nextra, &err);
    sars.client = c;
    /* snapshot_build takes objs, also when it fails. */
    if (!c || !objs ||
        !(s = snapshot_build(objs, NULL, 0, &(struct snapshot_sars){ cluster_sar_ask, &sars },
                             NULL, &ropt, &err))) {
        fprintf(stderr, "dra-doctor diagnose: %s\n", err.msg);
        cluster_sars_forget(&sars);
        kube_client_free(c);
        kube_config_release(&cfg);
        return 2;
    }
    if (json)
        out = cJSON_CreateArray();
    for (i = 0; i < s->m.npods; i++) {
        const struct dra_podspec *p = s->m.pods[i];
        struct diag_result r;
        size_t k;

        if (strcmp(p->o.kind, "Pod") || (!all && strcmp(p->o.ns, ns)) ||
            (pod && strcmp(p->o.name, pod)))
            continue;
        diag_pod(&s->m, &s->f, p, &r);
        bad |= !r.healthy;
        if (json) {
            cJSON *o = cJSON_CreateObject(), *codes = cJSON_CreateArray();
            cJSON_AddStringToObject(o, "namespace", p->o.ns);
            cJSON_AddStringToObject(o, "name", p->o.name);
            cJSON_AddBoolToObject(o, "healthy", r.healthy);
            cJSON_AddStringToObject(o, "rootCause", r.ncodes ? r.codes[0] : "");
            for (k = 0; k < r.ncodes; k++)
                cJSON_AddItemToArray(codes, cJSON_CreateString(r.codes[k]));
            cJSON_AddItemToObject(o, "findings", codes);
            cJSON_AddStringToObject(o, "message", r.message);
            cJSON_AddItemToArray(out, o);
            continue;
        }
        if (r.healthy) {
            if (show)
                printf("Pod %s/%s: no DRA fault\n\n", p->o.ns, p->o.name);
            continue;
        }
        printf("Pod %s/%s\n  root cause: %s\n  findings:   %s\n  %s\n\n", p->o.ns, p->o.name,
               r.codes[0], r.list, r.message);
    }
    /* Causes no pod carries: objects whose pods are refused, rules that evict every pod. */
    for (i = 0; !json && !pod && i < s->f.n; i++) {
        const struct dd_finding *f = &s->f.v[i];
        if (strcmp(f->code, "PodClaimFieldsRemoved") && strcmp(f->code, "DeviceTaintRuleEvictsAll"))
            continue;
        if (!all && *f->obj.namespace_ && strcmp(f->obj.namespace_, ns))
            continue;
        printf("%s %s%s%s\n  %s: %s\n  fix: %s\n\n", f->obj.kind, f->obj.namespace_,
               *f->obj.namespace_ ? "/" : "", f->obj.name, f->code, f->message, f->fix);
    }
    if (json)
        print_json(out);
    else if (pod && !bad && !show)
        printf("Pod %s: no DRA fault found\n", pod);
    cJSON_Delete(out);
    snapshot_free(s);
    cluster_sars_forget(&sars);
    kube_client_free(c);
    kube_config_release(&cfg);
    return bad ? 1 : 0;
}
