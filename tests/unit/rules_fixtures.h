/*
 * rules_fixtures.h - objects for the rule tests (test_rules*.c): JSON built in the test, the
 * seed's example driver and a two-device slice, and `only`, which runs the engine and checks
 * that exactly the expected findings came out.
 */
#ifndef DD_TEST_RULES_FIXTURES_H
#define DD_TEST_RULES_FIXTURES_H

#include "snap.h"

#include <stdio.h>

#define BUF 16384

static inline char *objs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *objs(const char *fmt, ...)
{
    static char buf[BUF];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

#define CLASS(name, expr)                                                                      \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":\"" \
    name "\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":\"" expr "\"}}]}}"
#define CLAIM(name, cls)                                                                       \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"" \
    name "\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","         \
    "\"exactly\":{\"deviceClassName\":\"" cls "\"}}]}}}"
#define CLAIM_SEL(name, cls, expr)                                                             \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"" \
    name "\",\"namespace\":\"t\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","         \
    "\"exactly\":{\"deviceClassName\":\"" cls "\",\"selectors\":[{\"cel\":{\"expression\":\""     \
    expr "\"}}]}}]}}}"
#define TEMPLATE(name, cls)                                                                    \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\",\"metadata\":"   \
    "{\"name\":\"" name "\",\"namespace\":\"t\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":"  \
    "[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"" cls "\"}}]}}}}"
#define POD(name, field, ref)                                                                  \
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":" \
    "\"t\"},\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"" field "\":\"" ref "\"}],"         \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\",\"resources\":{\"claims\":"       \
    "[{\"name\":\"gpu\"}]}}]}}"
#define DEPLOY(name, replicas, tmpl)                                                           \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"" name       \
    "\",\"namespace\":\"t\"},\"spec\":{\"replicas\":" replicas ",\"template\":{\"spec\":"        \
    "{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"" tmpl "\"}],"        \
    "\"containers\":[{\"name\":\"c\",\"image\":\"busybox:1\",\"resources\":{\"claims\":"       \
    "[{\"name\":\"gpu\"}]}}]}}}}"
#define QUOTA(key, value)                                                                      \
    "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"q\","          \
    "\"namespace\":\"t\"},\"spec\":{\"hard\":{\"" key "\":\"" value "\"}}}"
#define DEV(i)                                                                                 \
    "{\"name\":\"gpu-" #i "\",\"attributes\":{\"model\":{\"string\":\"LATEST-GPU-MODEL\"},"     \
    "\"index\":{\"int\":" #i "}},\"capacity\":{\"memory\":{\"value\":\"80Gi\"}}}"
#define SLICE2                                                                                 \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\",\"metadata\":{\"name\":" \
    "\"s\"},\"spec\":{\"driver\":\"gpu.example.com\",\"nodeName\":\"n1\",\"pool\":{\"name\":"    \
    "\"n1\",\"generation\":0,\"resourceSliceCount\":1},\"devices\":[" DEV(0) "," DEV(1) "]}}"
/* The example driver's kubelet plugin: env and volumes as its chart sets them. */
#define DS(env, mountpath)                                                                     \
    "{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"plugin\","    \
    "\"namespace\":\"drv\"},\"spec\":{\"template\":{\"spec\":{\"serviceAccountName\":\"sa\","   \
    "\"containers\":[{\"name\":\"plugin\",\"image\":\"registry.k8s.io/dra-example-driver/"       \
    "dra-example-driver:v0.2.0\",\"env\":[" env "],\"volumeMounts\":[{\"name\":\"cdi\","          \
    "\"mountPath\":\"" mountpath "\"},{\"name\":\"reg\",\"mountPath\":\"/reg\"}]}],"              \
    "\"volumes\":[{\"name\":\"cdi\",\"hostPath\":{\"path\":\"/var/run/cdi\"}},{\"name\":\"reg\"," \
    "\"hostPath\":{\"path\":\"/var/lib/kubelet/plugins_registry\"}}]}}}}"
#define ENV(n, v) "{\"name\":\"" n "\",\"value\":\"" v "\"}"
#define GOOD_ENV ENV("NUM_DEVICES", "8") "," ENV("CDI_ROOT", "/var/run/cdi")
#define ROLE(verbs)                                                                            \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":"   \
    "{\"name\":\"driver-role\"},\"rules\":[{\"apiGroups\":[\"resource.k8s.io\"],\"resources\":" \
    "[\"resourceslices\"],\"verbs\":" verbs "}]},"                                               \
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","         \
    "\"metadata\":{\"name\":\"driver-binding\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":" \
    "\"driver-role\"},\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"sa\","               \
    "\"namespace\":\"drv\"}]}"

static const struct rule_options defaults = RULE_OPTIONS_INIT;


/* Loads json, runs the rules, and checks that code fired `want` times and nothing else did. */
static inline const struct dd_finding *only(struct snap *s, const char *json, const char *code,
                                     size_t want)
{
    snap_load(s, json);
    if (snap_run(s, &defaults, NULL) != want || snap_run(s, &defaults, code) != want) {
        size_t i;
        for (i = 0; i < s->f.n; i++)
            fprintf(stderr, "  got %s: %s\n", s->f.v[i].code, s->f.v[i].message);
        fail_msg("expected %zu %s finding(s) and nothing else", want, code);
    }
    return want ? snap_get(s, code) : NULL;
}

/* How many findings rule code makes over m, given cache c (rule_options.cache; may be NULL). */
static inline size_t run_cached(const struct dra_model *m, const char *code,
                                const struct rule_cache *c)
{
    struct rule_options o = RULE_OPTIONS_INIT;
    struct dd_findings f = DD_FINDINGS_INIT;
    size_t n;

    o.only = &code;
    o.nonly = 1;
    o.cache = c;
    assert_int_equal(dd_rules_run(m, &o, &f), 0);
    n = f.n;
    dd_findings_release(&f);
    return n;
}

/* a patched as a snapshot's update patches its base (lib/rules/snapshot): its Pods replaced by
 * those of b, a model of the same objects in the same order but Pods.  Free .pods after. */
static inline struct dra_model patched_model(const struct dra_model *a, const struct dra_model *b)
{
    struct dra_model m = *a;
    size_t i;

    assert_int_equal(a->npods, b->npods);
    m.pods = malloc((a->npods + 1) * sizeof(*m.pods));
    assert_non_null(m.pods);
    for (i = 0; i < a->npods; i++)
        m.pods[i] = strcmp(a->pods[i]->o.kind, "Pod") ? a->pods[i] : b->pods[i];
    return m;
}

#endif
