/*
 * rbac.h - Kubernetes RBAC evaluation over the objects of a snapshot.
 *
 * Bindings -> roles -> rules, as the API server's RBAC authorizer does it:
 * apiGroups, resources and verbs match literally or through "*"; a rule with
 * resourceNames never grants create or a collection verb; a RoleBinding grants
 * only inside its own namespace, so it can never grant a cluster-scoped
 * resource; a ClusterRole with an aggregationRule holds the rules of every
 * ClusterRole its selectors match.  Subjects match a ServiceAccount directly,
 * as the user system:serviceaccount:NS:NAME, or through the groups
 * system:serviceaccounts, system:serviceaccounts:NS and system:authenticated.
 */
#ifndef DD_RBAC_H
#define DD_RBAC_H

#include <stddef.h>

#include "model/dra.h"

/* One binding that applies to a subject, and the role it points at. */
struct rbac_grant {
    const struct dra_obj *binding; /* borrowed from the model */
    const struct dra_obj *role;    /* the role, or NULL when it is not in the snapshot */
    const char *role_kind;         /* "ClusterRole" or "Role" */
    const char *role_name;
    int cluster_wide;              /* 1 for a ClusterRoleBinding */
};

/*
 * Lists up to max bindings of the snapshot that apply to ServiceAccount
 * ns/name, in snapshot order.  Returns how many apply (may exceed max).
 */
size_t rbac_sa_grants(const struct dra_model *m, const char *ns, const char *name,
                      struct rbac_grant *out, size_t max);

/*
 * 1 when role (a Role or ClusterRole object of m) has a rule allowing verb on
 * group/resource for a request without a resource name.
 */
int rbac_role_allows(const struct dra_model *m, const struct dra_obj *role, const char *verb,
                     const char *group, const char *resource);

/* The same for a request naming object name (a rule with resourceNames grants it when it
 * lists name). */
int rbac_role_allows_named(const struct dra_model *m, const struct dra_obj *role,
                           const char *verb, const char *group, const char *resource,
                           const char *name);

/* 1 when role has any rule naming resource (or "*") in group (or "*"). */
int rbac_role_mentions(const struct dra_model *m, const struct dra_obj *role, const char *group,
                       const char *resource);

/*
 * 1 when ServiceAccount ns/name may do verb on the cluster-scoped
 * group/resource through the snapshot's cluster-wide bindings.
 */
int rbac_sa_allows_cluster(const struct dra_model *m, const char *ns, const char *name,
                           const char *verb, const char *group, const char *resource);

#endif
