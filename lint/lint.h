/*
 * lint.h - `dra-doctor lint`: the rules over manifests in files, offline.
 *
 * lint_collect is the whole pipeline without printing (load -> model ->
 * rules), so tests and benchmarks drive exactly what the command runs.
 */
#ifndef DD_LINT_H
#define DD_LINT_H

#include <stddef.h>
#include <stdio.h>

#include "rules/finding.h"
#include "inventory.h"
#include "rules/rules.h"

/* Exit codes: scripts depend on them. */
#define LINT_EXIT_OK 0       /* nothing at or above --fail-on */
#define LINT_EXIT_FINDINGS 1 /* findings at or above --fail-on */
#define LINT_EXIT_USAGE 2    /* usage error, or input that could not be read */
#define LINT_EXIT_CLUSTER 3  /* --cluster-inventory: the live cluster's inventory could not be
                                read (kubeconfig, server unreachable, a LIST refused) */

struct lint_input {
    const char *const *paths;     /* files, directories or "-"; borrowed */
    size_t npaths;
    const char *containerd_config; /* path or NULL */
    const char *namespace_;       /* for namespaced objects without one, as kubectl applies
                                     them (--namespace); NULL: "default" */
    struct rule_options rules;
    const cJSON *cluster;         /* --cluster-inventory: the live cluster's objects
                                     (inventory_fetch), evidence beside the manifests (see
                                     inventory_evidence): findings on them are not reported;
                                     set rules.live_inventory too.  NULL: none.  Borrowed */
};

struct lint_result {
    struct dd_findings findings;  /* sorted */
    size_t objects;               /* Kubernetes objects read */
    size_t input_errors;          /* files or documents that could not be read */
    struct inventory_counts cluster; /* what of in->cluster stood beside the manifests */
};

/*
 * Loads every path, builds the model, runs the rules.  Input problems are
 * findings like any other, with file, line and column: InputUnreadable for
 * a malformed, oversized or unreadable file or document (and an unreadable
 * containerd config; these count in res->input_errors), InputNotKubernetes
 * for a document that is no Kubernetes object, HelmChartNotRendered once per
 * chart of template files, ObjectVariants for an object defined in several places.
 * Everything that could be read is still checked.  With in->cluster, its objects stand beside
 * the manifests' in every run (those the manifests replace left out) and only the findings on
 * the manifests' objects (those with a file) are kept.  Namespaced objects without a namespace
 * are in in->namespace_ ("default"), as kubectl puts them.  An object defined several times
 * (per-platform copies, overlays) is one object with variants: the rules run once per
 * variant (the k-th definition of every such object together, in input order, beside
 * everything defined once), so variants are never counted together, and a variant's
 * references find the variants beside it; a fault found in several runs is reported once.
 * Returns 0, or -1 when out of memory.  Free res with lint_result_release.
 */
int lint_collect(const struct lint_input *in, struct lint_result *res);

void lint_result_release(struct lint_result *res);

/* The subcommand: argv[0] is "lint".  Returns an exit code. */
int lint_main(int argc, char **argv);

#endif
