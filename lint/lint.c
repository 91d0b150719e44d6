#include "lint.h"

#include <ctype.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cel/cel.h"
#include "model/cri.h"
#include "model/dra.h"
#include "model/kubever.h"
#include "formats/manifest.h"
#include "report.h"

#define DOCS_URI "https://github.com/dra-doctor/dra-doctor/blob/main/docs/rules.md"
#define MAX_PATHS 4096
#define MAX_KNOWN 64
#define MAX_GATES 16

static int pos_adapter(void *ctx, const cJSON *node, int *line)
{
    return mf_pos(ctx, node, line, NULL);
}

static int keep_relevant(void *ctx, const cJSON *obj)
{
    (void)ctx;
    return dra_object_relevant(obj);
}

static int skim_irrelevant(void *ctx, const char *api_version, const char *kind)
{
    (void)ctx;
    return dra_kind_relevant(api_version, kind) != DRA_KIND_USED;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s && s[1] ? s + 1 : path;
}

/* An input finding: about a file (kind "Manifest") or a chart, at its position. */
static int input_finding(struct dd_findings *out, const char *code, enum dd_severity sev,
                         const char *kind, const char *name, const char *file, int line, int col,
                         const char *msg, const char *fix)
{
    struct dd_finding *f = dd_findings_add(out, dd_rule_find(code)->code, sev, "", kind, "",
                                           name, file, line, msg, fix);

    if (!f)
        return -1;
    f->col = col;
    return 0;
}

/* One HelmChartNotRendered per chart (and per template file outside a chart). */
static int template_findings(const struct mf_set *set, struct dd_findings *out)
{
    char msg[2048], fix[1024];
    size_t i, j;

    for (i = 0; i < set->ndiags; i++) {
        const struct mf_diag *d = &set->diags[i];
        size_t files = 0;
        int first = 1;
        if (d->kind != MF_DIAG_TEMPLATE)
            continue;
        /* Only the chart's first template speaks for it. */
        for (j = 0; j < i && d->chart; j++)
            if (set->diags[j].kind == MF_DIAG_TEMPLATE && set->diags[j].chart &&
                !strcmp(set->diags[j].chart, d->chart))
                first = 0;
        if (!first)
            continue;
        for (j = i; j < set->ndiags && d->chart; j++)
            files += set->diags[j].kind == MF_DIAG_TEMPLATE && set->diags[j].chart &&
                     !strcmp(set->diags[j].chart, d->chart);
        if (d->chart) {
            snprintf(msg, sizeof(msg),
                     "Helm chart %s: %zu template file(s) under %s/templates are Go templates, "
                     "not manifests, so none of the objects they make is checked.",
                     base_name(d->chart), files, d->chart);
            snprintf(fix, sizeof(fix),
                     "Render the chart with the values you install it with and lint the result: "
                     "helm template RELEASE %s [-f values.yaml] | dra-doctor lint -", d->chart);
            if (input_finding(out, "HelmChartNotRendered", DD_SEV_INFO, "HelmChart",
                              base_name(d->chart), d->file, d->line, d->col, msg, fix))
                return -1;
        } else {
            snprintf(msg, sizeof(msg), "%s is a Go/Helm template (\"{{\" where YAML starts a "
                     "value), not a manifest, so none of the objects it makes is checked.",
                     d->file);
            snprintf(fix, sizeof(fix), "Render it (helm template, or the tool that fills it in) "
                     "and lint the output: ... | dra-doctor lint -");
            if (input_finding(out, "HelmChartNotRendered", DD_SEV_INFO, "Manifest",
                              base_name(d->file), d->file, d->line, d->col, msg, fix))
                return -1;
        }
    }
    return 0;
}

/* Every input problem as a finding, so that -o json, sarif and github show it too. */
static int input_findings(const struct mf_set *set, struct dd_findings *out)
{
    char msg[2048], fix[1024];
    size_t i;

    for (i = 0; i < set->ndiags; i++) {
        const struct mf_diag *d = &set->diags[i];
        switch (d->kind) {
        case MF_DIAG_ERROR:
            snprintf(msg, sizeof(msg), "%s: %s. kubectl apply fails on it too, and nothing in it "
                     "is checked.", d->line ? "This document cannot be read" :
                     "This file cannot be read", d->text);
            if (d->line)
                snprintf(fix, sizeof(fix), "Correct the YAML at %s:%d:%d.", d->file, d->line,
                         d->col);
            else
                snprintf(fix, sizeof(fix), "Make %s a readable manifest file.", d->file);
            if (input_finding(out, "InputUnreadable", DD_SEV_ERROR, "Manifest",
                              base_name(d->file), d->file, d->line, d->col, msg, fix))
                return -1;
            break;
        case MF_DIAG_NOT_K8S:
        case MF_DIAG_K8S_LIKE:
            snprintf(msg, sizeof(msg), "%c%s.", toupper((unsigned char)d->text[0]), d->text + 1);
            snprintf(fix, sizeof(fix), d->kind == MF_DIAG_K8S_LIKE
                     ? "Spell the fields apiVersion and kind exactly so, with string values."
                     : "Nothing, if the file is not meant for kubectl; otherwise give it an "
                       "apiVersion and a kind.");
            if (input_finding(out, "InputNotKubernetes",
                              d->kind == MF_DIAG_K8S_LIKE ? DD_SEV_WARNING : DD_SEV_INFO,
                              "Manifest", base_name(d->file), d->file, d->line, d->col, msg, fix))
                return -1;
            break;
        case MF_DIAG_DUPLICATE:
            snprintf(msg, sizeof(msg), "%c%s.", toupper((unsigned char)d->text[0]), d->text + 1);
            snprintf(fix, sizeof(fix), "Keep one of the two at %s:%d:%d (the other was probably "
                     "meant to be another key).", d->file, d->line, d->col);
            if (input_finding(out, "InputDuplicateKey", DD_SEV_WARNING, "Manifest",
                              base_name(d->file), d->file, d->line, d->col, msg, fix))
                return -1;
            break;
        case MF_DIAG_TEMPLATE:
            break;
        }
    }
    return template_findings(set, out);
}

/* Kinds the rules read that live in a namespace: kubectl puts one without a namespace in
 * the current one ("default", or --namespace).  Drivers' objects that make claims are
 * namespaced (the claims they make are). */
static int namespaced(const char *api_version, const char *kind)
{
    static const char *const kinds[] = { "ResourceClaim", "ResourceClaimTemplate", "Pod",
                                         "Deployment", "StatefulSet", "ReplicaSet", "DaemonSet",
                                         "Job", "CronJob", "ResourceQuota", "ServiceAccount",
                                         "Role", "RoleBinding", "Event", NULL };
    size_t i;

    for (i = 0; kinds[i]; i++)
        if (!strcmp(kinds[i], kind))
            return 1;
    return drv_creates_for(api_version, kind) != NULL;
}

static void default_namespace(struct mf_set *set, const char *ns)
{
    size_t i;

    for (i = 0; i < set->n; i++) {
        struct mf_object *o = &set->objs[i];
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(o->json, "metadata"), *v;
        if (*o->namespace_ || !namespaced(o->api_version, o->kind) || !cJSON_IsObject(meta) ||
            cJSON_GetObjectItemCaseSensitive(meta, "namespace"))
            continue;
        if (!(v = mf_set_add_string(set, meta, "namespace", ns)))
            continue;
        o->namespace_ = v->valuestring;
    }
}

/* An object's identity: API group, kind, namespace, name. */
static int same_identity(const struct mf_object *a, const struct mf_object *b)
{
    size_t ga = strcspn(a->api_version, "/"), gb = strcspn(b->api_version, "/");

    /* "v1" is the core group: no slash, and no group. */
    if (!strchr(a->api_version, '/'))
        ga = 0;
    if (!strchr(b->api_version, '/'))
        gb = 0;
    return ga == gb && !strncmp(a->api_version, b->api_version, ga) &&
           !strcmp(a->kind, b->kind) && !strcmp(a->namespace_, b->namespace_) &&
           !strcmp(a->name, b->name);
}

static int cmp_identity(const void *pa, const void *pb, void *ctx)
{
    const struct mf_set *set = ctx;
    const struct mf_object *a = &set->objs[*(const size_t *)pa],
                           *b = &set->objs[*(const size_t *)pb];
    int c;

    if ((c = strcmp(a->kind, b->kind)) || (c = strcmp(a->namespace_, b->namespace_)) ||
        (c = strcmp(a->name, b->name)) || (c = strcmp(a->api_version, b->api_version)))
        return c;
    return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

/*
 * Numbers the definitions of each object: var[i] is how many definitions of objs[i]'s
 * identity come before it, nvar[i] how many there are.  ObjectVariants for each object
 * defined more than once.  Returns the most definitions of one object (1: none repeated),
 * or 0 when out of memory.
 */
static size_t number_variants(const struct mf_set *set, size_t *var, size_t *nvar,
                              struct dd_findings *out)
{
    size_t *ord = malloc((set->n + 1) * sizeof(*ord)), i, j, k, most = 1;

    if (!ord)
        return 0;
    for (i = 0; i < set->n; i++)
        ord[i] = i;
    qsort_r(ord, set->n, sizeof(*ord), cmp_identity, (void *)set);
    for (i = 0; i < set->n; i = j) {
        const struct mf_object *first = &set->objs[ord[i]];
        for (j = i + 1; j < set->n && same_identity(first, &set->objs[ord[j]]); j++)
            ;
        for (k = i; k < j; k++) {
            var[ord[k]] = k - i;
            nvar[ord[k]] = !*first->name ? 1 : j - i;
        }
        if (!*first->name) {
            for (k = i; k < j; k++)
                var[ord[k]] = 0;
            continue;
        }
        if (j - i > most)
            most = j - i;
        if (j - i > 1) {
            char msg[1024], fix[256];
            size_t len = 0;
            len += (size_t)snprintf(msg, sizeof(msg), "%s %s%s%s is defined %zu times (", first->kind,
                                    first->namespace_, *first->namespace_ ? "/" : "",
                                    first->name, j - i);
            for (k = i; k < j && len < sizeof(msg); k++)
                len += (size_t)snprintf(msg + len, sizeof(msg) - len, "%s%s:%d", k > i ? ", " : "",
                                        set->objs[ord[k]].file, set->objs[ord[k]].line);
            if (len < sizeof(msg))
                snprintf(msg + len, sizeof(msg) - len, "): variants of one object (per-platform "
                         "copies, kustomize bases and overlays). Each is checked with the "
                         "variants beside it; their devices and claims are never counted "
                         "together.");
            snprintf(fix, sizeof(fix), "Nothing, if only one of them is applied to a cluster; "
                     "lint the directory that is applied to check it alone.");
            /* On the second definition: where the object starts to vary. */
            const struct mf_object *second = &set->objs[ord[i + 1]];
            if (!dd_findings_add(out, dd_rule_find("ObjectVariants")->code, DD_SEV_INFO,
                                 second->api_version, second->kind, second->namespace_,
                                 second->name, second->file, second->line, msg, fix)) {
                most = 0;
                break;
            }
        }
    }
    free(ord);
    return most;
}

/* One run of the rules over the objects of variant pass (see number_variants). */
static int run_pass(const struct lint_input *in, const struct mf_set *set,
                    const struct cri_config *cri, const size_t *var, const size_t *nvar,
                    size_t pass, const cJSON *const *evidence, size_t nevidence,
                    struct dd_findings *out)
{
    struct dra_model m;
    int rc = -1;
    size_t i;

    dra_model_init(&m, pos_adapter, (void *)set);
    m.cri = cri;
    for (i = 0; i < set->n; i++)
        if (var[i] == (pass < nvar[i] ? pass : nvar[i] - 1) &&
            dra_model_add(&m, set->objs[i].json, set->objs[i].file, set->objs[i].line) != DD_OK)
            goto out;
    /* The live cluster's objects: no file, so their findings can be told apart. */
    for (i = 0; i < nevidence; i++)
        if (dra_model_add(&m, evidence[i], NULL, 0) != DD_OK)
            goto out;
    if (dra_model_finish(&m) == DD_OK && dd_rules_run(&m, &in->rules, out) == 0)
        rc = 0;
out:
    dra_model_release(&m);
    return rc;
}

int lint_collect(const struct lint_input *in, struct lint_result *res)
{
    struct mf_set set = MF_SET_INIT;
    struct cri_config cri;
    struct dd_err err;
    int have_cri = 0, rc = -1;
    size_t i, *var = NULL, *nvar = NULL, passes, nevidence = 0;
    const cJSON **evidence = NULL;

    memset(res, 0, sizeof(*res));
    memset(&cri, 0, sizeof(cri));
    mf_set_init(&set);
    set.keep = keep_relevant;
    set.skim = skim_irrelevant;
    set.skim_unless = DRA_CLAIMS_KEY;
    set.compact = 1;
    set.skim_unless2 = DRA_CONTAINER_CLAIMS_KEY;
    for (i = 0; i < in->npaths; i++)
        if (mf_load_path(&set, in->paths[i], NULL) == DD_ENOMEM)
            goto out_set;
    if (input_findings(&set, &res->findings))
        goto out_set;
    res->input_errors = set.nerrors;
    if (in->containerd_config) {
        dd_err_clear(&err);
        if (cri_config_load(in->containerd_config, &cri, &err) == DD_OK) {
            have_cri = 1;
        } else {
            char msg[DD_ERR_MSG_MAX + 128];
            snprintf(msg, sizeof(msg), "The containerd config cannot be read: %s. The CDI "
                     "rules are not checked.", err.msg);
            if (input_finding(&res->findings, "InputUnreadable", DD_SEV_ERROR,
                              "ContainerdConfig", base_name(in->containerd_config),
                              in->containerd_config, err.line, err.col, msg,
                              "Pass the node's /etc/containerd/config.toml (TOML) to "
                              "--containerd-config."))
                goto out_set;
            res->input_errors++;
        }
    }
    default_namespace(&set, in->namespace_ ? in->namespace_ : "default");
    res->objects = set.n + set.nfiltered;
    if (in->cluster && inventory_evidence(in->cluster, &set, &evidence, &nevidence,
                                          &res->cluster))
        goto out_model;
    if (!(var = calloc(set.n + 1, sizeof(*var))) || !(nvar = calloc(set.n + 1, sizeof(*nvar))) ||
        !(passes = number_variants(&set, var, nvar, &res->findings)))
        goto out_model;
    for (i = 0; i < passes; i++) {
        struct dd_findings more = DD_FINDINGS_INIT;
        if (run_pass(in, &set, have_cri ? &cri : NULL, var, nvar, i, evidence, nevidence,
                     i ? &more : &res->findings)) {
            dd_findings_release(&more);
            goto out_model;
        }
        dd_findings_merge(&res->findings, &more);
    }
    if (in->cluster)
        dd_findings_drop_live(&res->findings);
    dd_findings_sort(&res->findings);
    rc = res->findings.oom ? -1 : 0;
out_model:
    free(evidence);
    free(var);
    free(nvar);
    if (have_cri)
        cri_config_release(&cri);
out_set:
    mf_set_release(&set);
    if (rc)
        dd_findings_release(&res->findings);
    return rc;
}

void lint_result_release(struct lint_result *res)
{
    dd_findings_release(&res->findings);
    memset(res, 0, sizeof(*res));
}

static void usage(FILE *f)
{
    fprintf(f,
"usage: dra-doctor lint [PATH...] [-f PATH]... [options]\n"
"\n"
"Checks Kubernetes manifests for Dynamic Resource Allocation faults before they\n"
"are applied: RBAC that stops a driver publishing devices, selectors naming a\n"
"driver that does not exist, quotas that reject claims, too few devices, and a\n"
"container runtime that will not inject them (CDI).\n"
"\n"
"PATH is a file, a directory (searched recursively for *.yaml, *.yml, *.json) or\n"
"'-' for standard input.  Without PATH the current directory is linted.\n"
"\n"
"options:\n"
"  -f, --filename PATH        add PATH (same as a positional PATH; repeatable)\n"
"      --containerd-config F  the node's containerd config.toml, to check CDI\n"
"      --known-driver NAME    a DRA driver installed outside these manifests\n"
"                             (repeatable)\n"
"      --nodes N              nodes to assume for per-node device counts when the\n"
"                             input has no Node objects (default 1)\n"
"      --feature-gates LIST   the cluster's feature gates where they differ from the\n"
"                             release's defaults, as kube-apiserver takes them, e.g.\n"
"                             DRADeviceTaintRules=true,DRAListTypeAttributes=true\n"
"                             (repeatable; gates outside DRA are ignored; docs/rules.md\n"
"                             #releases lists each release's defaults)\n"
"      --complete             the input is the whole cluster: references to objects\n"
"                             that are not in it are errors, not warnings\n"
"      --cluster-inventory    also read, read-only, the live cluster's Nodes,\n"
"                             ResourceSlices, DeviceClasses, ResourceClaims and\n"
"                             templates (all namespaces), DeviceTaintRules, and who\n"
"                             owns which claim (Pods, ReplicaSets, Jobs), and judge\n"
"                             the manifests against them as if applied: an object of\n"
"                             the manifests replaces the cluster's of that name, and\n"
"                             the claims of pods they replace free their devices.\n"
"                             Findings are on the manifests only; a pod that fits on\n"
"                             no node of the cluster today is an error.  The\n"
"                             release and gates are the server's unless\n"
"                             --kube-version says otherwise\n"
"      --kubeconfig FILE      with --cluster-inventory (default: $KUBECONFIG,\n"
"                             ~/.kube/config, in-cluster)\n"
"      --context NAME         the kubeconfig's context (default: current-context)\n"
"  -n, --namespace NS         the namespace of objects that name none, as kubectl\n"
"                             apply -n NS puts them (default \"default\")\n"
"      --kube-version V       the Kubernetes release the manifests are for (1.34 to\n"
"                             1.37; default 1.37): API versions it does not serve\n"
"                             and pod fields it removed are errors; selectors are\n"
"                             checked in that release's CEL environment, and every\n"
"                             rule asks that release's feature gates\n"
"  -o, --output FORMAT        text (default), json, sarif or github\n"
"      --fail-on LEVEL        exit 1 on findings at or above error (default),\n"
"                             warning, or never\n"
"      --color WHEN           auto (default), always or never; NO_COLOR is honoured\n"
"  -h, --help                 show this help\n"
"\n"
"exit status: 0 no findings at the --fail-on level, 1 findings at that level,\n"
"2 usage error or unreadable input (what could be read is still checked),\n"
"3 --cluster-inventory could not read the cluster (kubeconfig, API server\n"
"unreachable, a LIST refused: the message names the resource, server and HTTP\n"
"status); nothing is judged then.\n"
"\n"
"Rules and their fixes: docs/rules.md.\n");
}

static int parse_long(const char *s, long *out)
{
    char *end;
    long v;

    if (!*s)
        return -1;
    v = strtol(s, &end, 10);
    if (*end || v < 0 || v > 1000000)
        return -1;
    *out = v;
    return 0;
}

int lint_main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "filename", required_argument, NULL, 'f' },
        { "containerd-config", required_argument, NULL, 'c' },
        { "known-driver", required_argument, NULL, 'k' },
        { "nodes", required_argument, NULL, 'D' },
        { "complete", no_argument, NULL, 'C' },
        { "namespace", required_argument, NULL, 'N' },
        { "kube-version", required_argument, NULL, 'V' },
        { "feature-gates", required_argument, NULL, 'G' },
        { "output", required_argument, NULL, 'o' },
        { "fail-on", required_argument, NULL, 'F' },
        { "color", required_argument, NULL, 'K' },
        { "cluster-inventory", no_argument, NULL, 'I' },
        { "kubeconfig", required_argument, NULL, 'U' },
        { "context", required_argument, NULL, 'X' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    static const struct rule_options rdefaults = RULE_OPTIONS_INIT;
    const char *paths[MAX_PATHS], *known[MAX_KNOWN];
    struct lint_input in;
    struct lint_result res;
    struct report_input rep;
    enum report_format fmt = REPORT_TEXT;
    int fail_on = DD_SEV_ERROR, color = -1, ch, code;
    size_t npaths = 0, nknown = 0;
    struct cel_env env = *cel_default_env();
    static struct kv_gates gates; /* in.rules borrows it */
    const char *gate_text[MAX_GATES];
    size_t ngates = 0, g;
    struct dd_err err;
    struct inventory inv; /* in.cluster and in.rules borrow it */
    const char *kubeconfig = NULL, *context = NULL;
    int live = 0;

#ifdef M_MXFAST
    /* Lint frees its model at the end, hundreds of thousands of small blocks: glibc would
     * consolidate its fast bins again and again (the input's trees are one arena). */
    mallopt(M_MXFAST, 0);
#endif
    memset(&in, 0, sizeof(in));
    memset(&inv, 0, sizeof(inv));
    in.rules = rdefaults;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "f:o:n:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'f':
            if (npaths == MAX_PATHS) {
                fprintf(stderr, "dra-doctor lint: too many paths (limit %d)\n", MAX_PATHS);
                return LINT_EXIT_USAGE;
            }
            paths[npaths++] = optarg;
            break;
        case 'c':
            in.containerd_config = optarg;
            break;
        case 'k':
            if (nknown == MAX_KNOWN) {
                fprintf(stderr, "dra-doctor lint: too many --known-driver (limit %d)\n",
                        MAX_KNOWN);
                return LINT_EXIT_USAGE;
            }
            known[nknown++] = optarg;
            break;
        case 'D':
            if (parse_long(optarg, &in.rules.nodes) || in.rules.nodes < 1) {
                fprintf(stderr, "dra-doctor lint: --nodes wants a whole number from 1 to "
                        "1000000, not '%s'\n", optarg);
                return LINT_EXIT_USAGE;
            }
            break;
        case 'C':
            in.rules.complete = 1;
            break;
        case 'n':
        case 'N':
            if (!*optarg) {
                fprintf(stderr, "dra-doctor lint: --namespace wants a name\n");
                return LINT_EXIT_USAGE;
            }
            in.namespace_ = optarg;
            break;
        case 'V': {
            dd_err_clear(&err);
            if (kv_parse(optarg, &in.rules.kube_minor, &err) != DD_OK) {
                fprintf(stderr, "dra-doctor lint: --kube-version: %s\n", err.msg);
                return LINT_EXIT_USAGE;
            }
            break;
        }
        case 'G':
            if (ngates == MAX_GATES) {
                fprintf(stderr, "dra-doctor lint: too many --feature-gates (limit %d)\n",
                        MAX_GATES);
                return LINT_EXIT_USAGE;
            }
            gate_text[ngates++] = optarg;
            break;
        case 'o':
            if ((int)(fmt = (enum report_format)report_format_parse(optarg)) < 0) {
                fprintf(stderr, "dra-doctor lint: unknown output format '%s' (want %s)\n", optarg,
                        report_format_names());
                return LINT_EXIT_USAGE;
            }
            break;
        case 'F':
            if (!strcmp(optarg, "never"))
                fail_on = DD_SEV_ERROR + 1;
            else if ((fail_on = dd_severity_parse(optarg)) < DD_SEV_WARNING) {
                fprintf(stderr, "dra-doctor lint: --fail-on wants error, warning or never, "
                        "not '%s'\n", optarg);
                return LINT_EXIT_USAGE;
            }
            break;
        case 'K':
            if (!strcmp(optarg, "always"))
                color = 1;
            else if (!strcmp(optarg, "never"))
                color = 0;
            else if (!strcmp(optarg, "auto"))
                color = -1;
            else {
                fprintf(stderr, "dra-doctor lint: --color wants auto, always or never\n");
                return LINT_EXIT_USAGE;
            }
            break;
        case 'I':
            live = 1;
            break;
        case 'U':
            kubeconfig = optarg;
            break;
        case 'X':
            context = optarg;
            break;
        case 'h':
            usage(stdout);
            return LINT_EXIT_OK;
        default:
            fprintf(stderr, "Try 'dra-doctor lint --help'.\n");
            return LINT_EXIT_USAGE;
        }
    }
    if ((kubeconfig || context) && !live) {
        fprintf(stderr, "dra-doctor lint: --kubeconfig and --context go with "
                "--cluster-inventory\n");
        return LINT_EXIT_USAGE;
    }
    if (live) {
        char msg[2048];
        if (inventory_fetch(kubeconfig, context, &inv, msg, sizeof(msg))) {
            fprintf(stderr, "dra-doctor lint: --cluster-inventory: %s\n", msg);
            inventory_release(&inv);
            return LINT_EXIT_CLUSTER;
        }
        in.cluster = inv.objects;
        in.rules.live_inventory = inv.from;
    }
    /* The release's gates (the live server's own, when it is read and --kube-version does
     * not say otherwise), then --feature-gates in order; the CEL environment follows them
     * (k8s.io/apiserver's base environment, DRA's declarations). */
    if (live && !in.rules.kube_minor) {
        gates = inv.ci.gates;
        in.rules.kube_minor = inv.ci.minor;
    } else
        kv_gates_init(&gates, in.rules.kube_minor ? in.rules.kube_minor : KV_DEFAULT_MINOR);
    for (g = 0; g < ngates; g++) {
        dd_err_clear(&err);
        if (kv_gates_set(&gates, gate_text[g], KV_FROM_FLAG, &err) != DD_OK) {
            fprintf(stderr, "dra-doctor lint: --feature-gates: %s\n", err.msg);
            inventory_release(&inv);
            return LINT_EXIT_USAGE;
        }
    }
    in.rules.gates = &gates;
    kv_cel_env(&gates, env.stored, &env);
    cel_set_default_env(&env);
    for (; optind < argc; optind++) {
        if (npaths == MAX_PATHS) {
            fprintf(stderr, "dra-doctor lint: too many paths (limit %d)\n", MAX_PATHS);
            inventory_release(&inv);
            return LINT_EXIT_USAGE;
        }
        paths[npaths++] = argv[optind];
    }
    if (!npaths)
        paths[npaths++] = ".";
    in.paths = paths;
    in.npaths = npaths;
    in.rules.known_drivers = known;
    in.rules.nknown_drivers = nknown;
    if (color < 0) {
        const char *term = getenv("TERM");
        color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(term && !strcmp(term, "dumb"));
    }
    if (lint_collect(&in, &res)) {
        fprintf(stderr, "dra-doctor lint: out of memory\n");
        inventory_release(&inv);
        return LINT_EXIT_USAGE;
    }
    inventory_release(&inv);
    if (live)
        fprintf(stderr, "dra-doctor lint: judged with the live cluster's inventory (%s): %zu "
                "Node(s), %zu ResourceSlice(s), %zu DeviceClass(es), %zu ResourceClaim(s), %zu "
                "ResourceClaimTemplate(s), %zu DeviceTaintRule(s); %zu object(s) replaced by the "
                "manifests, %zu claim(s) of pods they replace set aside\n", in.rules.live_inventory,
                res.cluster.nodes, res.cluster.slices, res.cluster.classes, res.cluster.claims,
                res.cluster.templates, res.cluster.taint_rules, res.cluster.replaced,
                res.cluster.set_aside);
    memset(&rep, 0, sizeof(rep));
    rep.findings = &res.findings;
    rep.rules = dd_rules(&rep.nrules);
    rep.objects = res.objects;
    rep.tool_version = DD_VERSION;
    rep.docs_uri = DOCS_URI;
    rep.color = color;
    if (report_write(stdout, fmt, &rep)) {
        perror("dra-doctor lint: writing the report");
        lint_result_release(&res);
        return LINT_EXIT_USAGE;
    }
    if (res.input_errors)
        code = LINT_EXIT_USAGE;
    else if (fail_on <= DD_SEV_ERROR && dd_findings_count(&res.findings, fail_on))
        code = LINT_EXIT_FINDINGS;
    else
        code = LINT_EXIT_OK;
    lint_result_release(&res);
    return code;
}
