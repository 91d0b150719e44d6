/*
 * gated.c - checks of DRA features that come and go with feature gates, release by release
 * (lib/model/kubever.c has the gates):
 *
 *   DeviceTaintRuleEvictsAll       a NoExecute DeviceTaintRule whose selector matches every
 *                                  device: it evicts every DRA pod of the cluster
 */
#include "rules_int.h"

#include <stdlib.h>
#include <string.h>

#include "formats/json.h"

/* ---- DeviceTaintRuleEvictsAll -------------------------------------------------------- */

/* How many published devices the rule's deviceSelector matches; *all: of every device. */
static size_t taint_rule_matches(const struct dra_model *m, const cJSON *sel, size_t *total)
{
    const char *dr = dd_json_str(sel, "driver", NULL), *pool = dd_json_str(sel, "pool", NULL);
    const char *dev = dd_json_str(sel, "device", NULL);
    size_t i, j, n = 0;

    *total = 0;
    for (i = 0; i < m->nslices; i++) {
        const struct dra_slice *s = &m->slices[i];
        for (j = 0; j < s->ndev; j++) {
            (*total)++;
            n += (!dr || STRIEQ(dr, s->driver)) && (!pool || STRIEQ(pool, s->pool)) &&
                 (!dev || STRIEQ(dev, s->dev[j].name));
        }
    }
    return n;
}

void rule__check_taint_rule_scope(struct rule_ctx *ctx)
{
    const struct dra_model *m = ctx->m;
    char msg[MSG_MAX], fix[MSG_MAX], gate[128];
    size_t i, total, hit;

    for (i = 0; i < m->resource_other.n; i++) {
        const struct dra_obj *o = &m->resource_other.v[i];
        const cJSON *sel = dd_json_path(o->json, "spec", "deviceSelector", NULL);
        const char *effect = dd_json_str(o->json, "spec", "taint", "effect", NULL);
        const char *key = dd_json_str(o->json, "spec", "taint", "key", NULL);
        int empty = !dd_json_str(sel, "driver", NULL) && !dd_json_str(sel, "pool", NULL) &&
                    !dd_json_str(sel, "device", NULL);
        size_t len = 0;

        if (!STRIEQ(o->kind, "DeviceTaintRule") || !effect || !STRIEQ(effect, "NoExecute"))
            continue;
        /* Where the release ignores the rule, it evicts nothing (a live object's version is
         * served: its gate decides). */
        if (!(m->live ? rule__gate(ctx, kv_gate_exists(ctx->gates->minor,
                                                       KV_GATE_DEVICE_TAINT_RULES)
                                                ? KV_GATE_DEVICE_TAINT_RULES
                                                : KV_GATE_DEVICE_TAINTS)
                      : kv_taint_rules_effective(ctx->gates, rule__api_ver(o))))
            continue;
        hit = taint_rule_matches(m, sel, &total);
        if (!empty && (!total || hit < total))
            continue;
        cat(msg, sizeof(msg), &len, "DeviceTaintRule %s taints %s with effect NoExecute (key %s): "
            "the device taint eviction controller deletes every pod whose claim has one of them "
            "and does not tolerate the taint, so every DRA pod of the cluster goes, whatever its "
            "namespace or priority (kubernetes/kubernetes#141422).", o->name,
            empty ? "every device of every driver (its deviceSelector names no driver, pool or "
                    "device)" : "every published device",
            key ? key : "(none)");
        if (!empty)
            cat(msg, sizeof(msg), &len, " Its selector matches all %zu of them.", total);
        cat(msg, sizeof(msg), &len, " Kubernetes 1.%d honours it: %s.", ctx->gates->minor,
            kv_gate_says(ctx->gates, kv_gate_exists(ctx->gates->minor,
                                                    KV_GATE_DEVICE_TAINT_RULES)
                                         ? KV_GATE_DEVICE_TAINT_RULES
                                         : KV_GATE_DEVICE_TAINTS, gate, sizeof(gate)));
        snprintf(fix, sizeof(fix), "Narrow spec.deviceSelector to the driver, pool or device "
                 "meant (deviceSelector: {driver: ..., pool: ...}), or use effect NoSchedule to "
                 "stop new allocations without evicting.");
        emit(ctx, ctx->rule->severity, o, 0, msg, fix);
    }
}
