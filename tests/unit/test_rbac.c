/* test_rbac.c - RBAC evaluation: bindings -> roles -> rules, wildcards, scope. */
#include "snap.h"

#include "model/rbac.h"

#define SA_NS "drv"
#define SA "driver-sa"

static const char *crb(const char *role, const char *subject)
{
    static char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
             "\"metadata\":{\"name\":\"b-%s\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"%s\"},"
             "\"subjects\":[%s]}", role, role, subject);
    return buf;
}

static int allows(const char *objs, const char *verb)
{
    struct snap s;
    int r;

    snap_load(&s, objs);
    r = rbac_sa_allows_cluster(&s.m, SA_NS, SA, verb, "resource.k8s.io", "resourceslices");
    snap_free(&s);
    return r;
}

#define ROLE(name, groups, resources, verbs, extra)                                           \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","              \
    "\"metadata\":{\"name\":\"" name "\"},\"rules\":[{\"apiGroups\":" groups                  \
    ",\"resources\":" resources ",\"verbs\":" verbs extra "}]}"
#define SA_SUBJ "{\"kind\":\"ServiceAccount\",\"name\":\"" SA "\",\"namespace\":\"" SA_NS "\"}"

static void exact_verbs(void **state)
{
    char buf[4096];
    (void)state;
    snprintf(buf, sizeof(buf), "[%s,%s]",
             ROLE("r", "[\"resource.k8s.io\"]", "[\"resourceslices\"]",
                  "[\"get\",\"list\",\"watch\"]", ""),
             crb("r", SA_SUBJ));
    assert_false(allows(buf, "create"));
    assert_true(allows(buf, "list"));
    snprintf(buf, sizeof(buf), "[%s,%s]",
             ROLE("r", "[\"resource.k8s.io\"]", "[\"resourceslices\"]",
                  "[\"get\",\"create\",\"update\",\"delete\"]", ""),
             crb("r", SA_SUBJ));
    assert_true(allows(buf, "create"));
    assert_true(allows(buf, "delete"));
    assert_false(allows(buf, "patch"));
}

static void wildcards(void **state)
{
    char buf[4096];
    (void)state;
    snprintf(buf, sizeof(buf), "[%s,%s]", ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""),
             crb("r", SA_SUBJ));
    assert_true(allows(buf, "create"));
    /* The wrong group grants nothing. */
    snprintf(buf, sizeof(buf), "[%s,%s]",
             ROLE("r", "[\"resource.k8s.io.evil\"]", "[\"resourceslices\"]", "[\"*\"]", ""),
             crb("r", SA_SUBJ));
    assert_false(allows(buf, "create"));
    snprintf(buf, sizeof(buf), "[%s,%s]",
             ROLE("r", "[\"resource.k8s.io\"]", "[\"resourceclaims\"]", "[\"*\"]", ""),
             crb("r", SA_SUBJ));
    assert_false(allows(buf, "create"));
}

static void resource_names_never_grant_create(void **state)
{
    char buf[4096];
    (void)state;
    snprintf(buf, sizeof(buf), "[%s,%s]",
             ROLE("r", "[\"resource.k8s.io\"]", "[\"resourceslices\"]", "[\"create\"]",
                  ",\"resourceNames\":[\"x\"]"),
             crb("r", SA_SUBJ));
    assert_false(allows(buf, "create"));
}

static void subjects(void **state)
{
    char buf[4096];
    (void)state;
    snprintf(buf, sizeof(buf), "[%s,%s]", ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""),
             crb("r", "{\"kind\":\"User\",\"name\":\"system:serviceaccount:drv:driver-sa\"}"));
    assert_true(allows(buf, "create"));
    snprintf(buf, sizeof(buf), "[%s,%s]", ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""),
             crb("r", "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:drv\"}"));
    assert_true(allows(buf, "create"));
    snprintf(buf, sizeof(buf), "[%s,%s]", ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""),
             crb("r", "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:other\"}"));
    assert_false(allows(buf, "create"));
    /* Same name, other namespace. */
    snprintf(buf, sizeof(buf), "[%s,%s]", ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""),
             crb("r", "{\"kind\":\"ServiceAccount\",\"name\":\"driver-sa\",\"namespace\":\"x\"}"));
    assert_false(allows(buf, "create"));
}

static void rolebinding_cannot_grant_cluster_scope(void **state)
{
    char buf[4096];
    struct snap s;
    struct rbac_grant g[4];
    (void)state;
    snprintf(buf, sizeof(buf),
             "[%s,{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
             "\"metadata\":{\"name\":\"rb\",\"namespace\":\"drv\"},\"roleRef\":{\"kind\":"
             "\"ClusterRole\",\"name\":\"r\"},\"subjects\":[{\"kind\":\"ServiceAccount\","
             "\"name\":\"driver-sa\"}]}]",
             ROLE("r", "[\"*\"]", "[\"*\"]", "[\"*\"]", ""));
    assert_false(allows(buf, "create"));
    snap_load(&s, buf);
    /* The subject's namespace defaults to the RoleBinding's, so the grant applies... */
    assert_int_equal(rbac_sa_grants(&s.m, SA_NS, SA, g, 4), 1);
    assert_false(g[0].cluster_wide);
    assert_non_null(g[0].role);
    snap_free(&s);
}

static void aggregation(void **state)
{
    char buf[4096];
    (void)state;
    snprintf(buf, sizeof(buf),
             "[{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
             "\"metadata\":{\"name\":\"agg\"},\"aggregationRule\":{\"clusterRoleSelectors\":"
             "[{\"matchLabels\":{\"dra/agg\":\"true\"}}]},\"rules\":[]},"
             "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
             "\"metadata\":{\"name\":\"part\",\"labels\":{\"dra/agg\":\"true\"}},\"rules\":"
             "[{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":[\"resourceslices\"],"
             "\"verbs\":[\"create\"]}]},%s]",
             crb("agg", SA_SUBJ));
    assert_true(allows(buf, "create"));
    assert_false(allows(buf, "delete"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_verbs),
        cmocka_unit_test(wildcards),
        cmocka_unit_test(resource_names_never_grant_create),
        cmocka_unit_test(subjects),
        cmocka_unit_test(rolebinding_cannot_grant_cluster_scope),
        cmocka_unit_test(aggregation),
    };
    return cmocka_run_group_tests_name("rbac", tests, NULL, NULL);
}
