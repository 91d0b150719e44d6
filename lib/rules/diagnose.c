/*
 * diagnose.c - from the engine's findings to one pod's root cause.
 *
 * The engine judges objects (a class, a claim, a driver, a node); a pod is
 * stuck on the first of them its path meets.  This file only selects and
 * orders findings for a pod and adds the per-pod evidence no rule can see
 * (container errors, scheduler and controller events).  It decides nothing
 * the rules decide.
 */
#include "rules/diagnose.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json.h"
#include "model/kubever.h"
#include "model/nodefit.h"
#include "model/quota.h"
#include "rules/rules.h"

#define STRIEQ(a, b) (strcmp((a), (b)) == 0)
#define MAX_NAMES 32

struct names {
    const char *v[MAX_NAMES];
    size_t n;
};

static int names_has(const struct names *s, const char *x)
{
    size_t i;

    for (i = 0; x && i < s->n; i++)
        if (STRIEQ(s->v[i], x))
            return 1;
    return 0;
}

static void names_add(struct names *s, const char *x)
{
    if (x && *x && !names_has(s, x) && s->n < MAX_NAMES)
        s->v[s->n++] = x;
}

/* One candidate cause: a finding of the engine, or per-pod evidence. */
struct cand {
    const char *code;          /* static */
    enum dd_step step;
    int first;                 /* per-pod evidence that comes before its step's findings */
    const struct dd_finding *f; /* NULL for per-pod evidence */
    char text[768];            /* message for per-pod evidence */
};

struct pod_view {
    const struct dra_model *m;
    const struct dra_podspec *p;
    struct names classes;      /* DeviceClasses its claims request */
    struct names drivers;      /* drivers those classes draw from (and their DaemonSets' others) */
    int all_allocated;         /* every claim exists and is allocated */
    int running, pending;
    const char *cdi_error;     /* CreateContainerError text about CDI, or NULL */
    const char *early_ctr;     /* a container started before CDI was on, or NULL */
    const char *early_at;      /* when it started */
    const char *cdi_on_at;     /* when the node agent saw CDI turned on */
    size_t nc;
    struct cand c[DIAG_MAX_CODES * 2]; /* last: diag_pod_indexed clears what precedes it */
};

/* Where the cause a code names stops a pod (the rule table says). */
static enum dd_step step_of(const char *code)
{
    const struct dd_rule *r = dd_rule_find(code);

    return r ? r->step : DD_STEP_NONE;
}

static void add_cand(struct pod_view *v, const char *code, const struct dd_finding *f,
                     const char *text)
{
    const struct dd_rule *r = dd_rule_find(code);
    size_t i;

    if (!r || v->nc == sizeof(v->c) / sizeof(v->c[0]))
        return;
    for (i = 0; i < v->nc; i++)
        if (STRIEQ(v->c[i].code, r->code))
            return; /* one entry per code: the first evidence is kept */
    v->c[v->nc].code = r->code;
    v->c[v->nc].step = step_of(r->code);
    v->c[v->nc].first = 0;
    v->c[v->nc].f = f;
    snprintf(v->c[v->nc].text, sizeof(v->c[v->nc].text), "%s", text ? text : "");
    v->nc++;
}

/* The Event reasons last_event is asked for (lib/model/keep.c's keep_event_reason keeps
 * Events of these reasons only). */
#define EV_CLAIM_CREATION "FailedResourceClaimCreation"
#define EV_SCHEDULING "FailedScheduling"
/* The kubelet's, when NodePrepareResources cannot be called (kubelet 1.36:
 * pkg/kubelet/cm/dra/manager.go, "prepare dynamic resources: DRA driver %s is not
 * registered"; the Event's message is "Failed to prepare dynamic resources: " + that). */
#define EV_PREPARE "FailedPrepareDynamicResources"
#define NOT_REGISTERED " is not registered"

static const struct dra_event *last_event(const struct dra_model *m, const struct dra_podspec *p,
                                          const char *reason, const char *needle)
{
    const struct dra_event *hit = NULL, *ev;
    size_t i, n;

    ev = dra_events_about(m, "Pod", p->o.ns, p->o.name, &n);
    for (i = 0; i < n; i++)
        if (STRIEQ(ev[i].reason, reason) && (!needle || strstr(ev[i].message, needle)))
            hit = &ev[i];
    return hit;
}

int diag_claim_assumed(const struct dra_claim *c)
{
    return dd_json_str(c->o.json, "metadata", "annotations", DIAG_ANN_ASSUMED, NULL) != NULL;
}

/* Is f about a stand-in claim (one the quota rejected)? */
static int assumed_object(const struct dra_model *m, const struct dd_finding *f)
{
    const struct dra_claim *c;

    return !strcmp(f->obj.kind, "ResourceClaim") &&
           (c = dra_find_claim(m, f->obj.namespace_, f->obj.name, 0)) && diag_claim_assumed(c);
}

/* ---- findings indexed by what they are about ------------------------------ */
/*
 * on_path accepts a finding only when it is about the pod or one of its claims (by
 * object), scoped to one of the pod's classes or drivers, or a CDIDisabled finding for
 * the pod's node (or for every node).  The index files each finding under those keys,
 * so a pod visits only the findings filed under its own: the same ones on_path would
 * accept out of all of them, in the same order.
 *
 * A class or driver collects findings about many objects (a finding per claim of the
 * class, per node of the driver), and a pod keeps only the first finding of each code it
 * accepts.  What on_path makes of a finding it reaches through a class or a driver only,
 * not through the pod's own objects, depends on its code, on whether it is about a
 * DeviceClass (class keys) or has a node (driver keys) and on the pod; findings of one
 * pod's own objects come through the object keys, a node's through the driver-and-node
 * key.  So a pod visits, under a class or driver key, only the first finding of each code
 * and kind (and each misspelled driver's first SelectorMatchesNoDriver, which collect_path
 * reads): the same first candidates, in constant time per pod instead of time growing with
 * the cluster.
 */
enum ix_kind { IX_OBJECT, IX_CLASS, IX_DRIVER, IX_NODE, IX_DRIVER_NODE };

/* Findings that may lie on one pod's path, in the findings' order. */
struct cands {
    const struct dd_finding **v;
    size_t n;
};

struct ix_slot {
    char *key;       /* kind letter, then the name(s) separated by '\x1f', in the index's
                        keys; NULL empty */
    size_t hash;     /* ix_hash(key) */
    size_t *v;       /* finding positions, ascending (class and driver keys: only the first
                        of each code and kind, see above): owned, or NULL while there is one
                        (most keys: a pod's own findings), in `one` (ix_pos) */
    size_t n, cap;
    size_t one;
};

static size_t *ix_pos(struct ix_slot *sl)
{
    return sl->v ? sl->v : &sl->one;
}

/* The keys' text, in blocks (a snapshot's index has a key per pod with a finding), shared by
 * the indexes patched from it (diag_index_patch): freed by the last (any thread). */
struct ix_block {
    atomic_size_t refs;
    size_t used, cap;
    char s[];
};

struct diag_index {
    struct ix_slot *slots; /* open addressing, at most half full (grown as keys come) */
    size_t nslots, used;
    struct ix_block **blocks; /* references */
    size_t nblocks, capblocks;
    struct ix_block *fill;    /* of blocks, the one of this index's own that keys go to */
    size_t *cdi_any, ncdi_any; /* CDIDisabled without a node: on every pod's path */
    size_t *cdi_all, ncdi_all; /* every CDIDisabled: an unscheduled pod's when one runtime */
    const struct dd_findings *fs; /* what the positions are of (borrowed) */
    const struct diag_index *under; /* a layer's (diag_index_layer), borrowed; else NULL */
    const uint64_t *gone;       /* of under's findings, those the layer dropped (borrowed) */
};

static size_t ix_hash(const char *s)
{
    size_t h = 1469598103934665603ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* The key for kind and up to three names into buf ("<kind>a\x1fb\x1fc"); NULL when it
 * does not fit.  (Built by hand: this runs a few times per pod per snapshot.) */
static const char *ix_key(char *buf, size_t size, enum ix_kind kind, const char *a,
                          const char *b, const char *c)
{
    const char *part[3] = { a, b, c };
    size_t len = 1, i, n;

    buf[0] = "ocdne"[kind];
    for (i = 0; i < 3; i++) {
        n = part[i] ? strlen(part[i]) : 0;
        if (len + n + 2 > size)
            return NULL;
        memcpy(buf + len, part[i] ? part[i] : "", n);
        len += n;
        if (i < 2)
            buf[len++] = '\x1f';
    }
    buf[len] = '\0';
    return buf;
}

static struct ix_slot *ix_find_hashed(const struct diag_index *ix, const char *key, size_t hash)
{
    size_t mask = ix->nslots - 1, h;

    for (h = hash & mask; ix->slots[h].key; h = (h + 1) & mask)
        if (ix->slots[h].hash == hash && STRIEQ(ix->slots[h].key, key))
            return &ix->slots[h];
    return &ix->slots[h]; /* the empty slot where it would go */
}

static struct ix_slot *ix_find(const struct diag_index *ix, const char *key)
{
    return ix_find_hashed(ix, key, ix_hash(key));
}

/* Twice the slots, the keys moved (by their hashes); -1 on ENOMEM. */
static int ix_grow(struct diag_index *ix)
{
    size_t n = 2 * ix->nslots, i, h;
    struct ix_slot *slots = calloc(n, sizeof(*slots));

    if (!slots)
        return -1;
    for (i = 0; i < ix->nslots; i++) {
        if (!ix->slots[i].key)
            continue;
        for (h = ix->slots[i].hash & (n - 1); slots[h].key; h = (h + 1) & (n - 1))
            ;
        slots[h] = ix->slots[i];
    }
    free(ix->slots);
    ix->slots = slots;
    ix->nslots = n;
    return 0;
}

/* Adds a reference to b to ix's blocks; -1 on ENOMEM (b is not referenced then). */
static int ix_hold(struct diag_index *ix, struct ix_block *b)
{
    if (ix->nblocks == ix->capblocks) {
        size_t cap = ix->capblocks ? 2 * ix->capblocks : 8;
        struct ix_block **v = realloc(ix->blocks, cap * sizeof(*v));
        if (!v)
            return -1;
        ix->blocks = v;
        ix->capblocks = cap;
    }
    atomic_fetch_add(&b->refs, 1);
    ix->blocks[ix->nblocks++] = b;
    return 0;
}

/* A copy of key in ix's own blocks; NULL on ENOMEM. */
static char *ix_keep(struct diag_index *ix, const char *key)
{
    size_t len = strlen(key) + 1;
    struct ix_block *b = ix->fill;
    char *out;

    if (!b || b->cap - b->used < len) {
        size_t cap = len > 65536 ? len : 65536;
        if (!(b = malloc(offsetof(struct ix_block, s) + cap)))
            return NULL;
        atomic_init(&b->refs, 0);
        b->used = 0;
        b->cap = cap;
        if (ix_hold(ix, b)) {
            free(b);
            return NULL;
        }
        ix->fill = b;
    }
    out = memcpy(b->s + b->used, key, len);
    b->used += len;
    return out;
}

/* Adds pos to v[0..n), ascending (at the end, unless a patch files it among earlier ones). */
static int push_pos(size_t **v, size_t *n, size_t *cap, size_t pos)
{
    size_t at = *n;

    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 4;
        size_t *nv = realloc(*v, ncap * sizeof(*nv));
        if (!nv)
            return -1;
        *v = nv;
        *cap = ncap;
    }
    while (at > 0 && (*v)[at - 1] > pos)
        at--;
    memmove(*v + at + 1, *v + at, (*n - at) * sizeof(**v));
    (*v)[at] = pos;
    (*n)++;
    return 0;
}

static int ix_file(struct diag_index *ix, enum ix_kind kind, const char *a, const char *b,
                   const char *c, size_t pos)
{
    char buf[1024];
    const char *key = ix_key(buf, sizeof(buf), kind, a, b, c);
    struct ix_slot *sl;
    size_t hash;

    if (!key)
        return -1; /* cannot happen with Kubernetes names; fail rather than miss one */
    hash = ix_hash(key);
    sl = ix_find_hashed(ix, key, hash);
    if (!sl->key) {
        if (2 * (ix->used + 1) > ix->nslots) {
            if (ix_grow(ix))
                return -1;
            sl = ix_find_hashed(ix, key, hash);
        }
        if (!(sl->key = ix_keep(ix, key)))
            return -1;
        ix->used++;
        sl->hash = hash;
        sl->one = pos;
        sl->n = sl->cap = 1;
        return 0;
    }
    if (!sl->v) {
        /* A second finding: the positions move to an array of their own. */
        size_t *v = malloc(4 * sizeof(*v));
        if (!v)
            return -1;
        v[0] = sl->one;
        sl->v = v;
        sl->n = sl->n ? 1 : 0; /* a patch may have emptied it */
        sl->cap = 4;
    }
    return push_pos(&sl->v, &sl->n, &sl->cap, pos);
}

/* 1 when s is lit: most strings differ at once. */
static int is(const char *s, const char *lit)
{
    return s[0] == lit[0] && STRIEQ(s, lit);
}

/* 1 when f and g, filed under a class key (kind 'c') or a driver key, are of one group: the
 * same code and kind (about a DeviceClass or not under a class, with a node or without under
 * a driver) and, for SelectorMatchesNoDriver, the same driver named. */
static int same_group(char kind, const struct dd_finding *f, const struct dd_finding *g)
{
    /* Codes are the rule table's strings: the pointers compare first (this runs for each of
     * a class's findings, one per Pending pod of it). */
    return (f->code == g->code || STRIEQ(f->code, g->code)) &&
           (kind == 'c' ? is(f->obj.kind, "DeviceClass") == is(g->obj.kind, "DeviceClass")
                        : !f->scope_node == !g->scope_node) &&
           (!is(f->code, "SelectorMatchesNoDriver") || (!f->scope_driver && !g->scope_driver) ||
            (f->scope_driver && g->scope_driver && STRIEQ(f->scope_driver, g->scope_driver)));
}

/* Of a group, a class or driver key keeps the first this many: the first alone is what a pod
 * reads, the others stand in when a layer drops it (diag_index_layer). */
#define IX_DEPTH 8

/* Keeps of a class or driver key's findings the first IX_DEPTH of each group (same_group).
 * Quadratic in the kept ones, which the rule table bounds. */
static void ix_firsts(struct ix_slot *sl, const struct dd_findings *fs)
{
    size_t i, j, k = 0, *v = ix_pos(sl);

    for (i = 0; i < sl->n; i++) {
        size_t seen = 0;
        for (j = 0; j < k && seen < IX_DEPTH; j++)
            seen += (size_t)same_group(sl->key[0], &fs->v[v[i]], &fs->v[v[j]]);
        if (seen < IX_DEPTH)
            v[k++] = v[i];
    }
    sl->n = k;
}

void diag_index_free(struct diag_index *ix)
{
    size_t i;

    if (!ix)
        return;
    for (i = 0; i < ix->nslots; i++)
        free(ix->slots[i].v);
    for (i = 0; i < ix->nblocks; i++)
        if (atomic_fetch_sub(&ix->blocks[i]->refs, 1) == 1)
            free(ix->blocks[i]);
    free(ix->blocks);
    free(ix->slots);
    free(ix->cdi_any);
    free(ix->cdi_all);
    free(ix);
}

/* Files finding i of fs under its keys (and CDIDisabled without a node in cdi_any, whose
 * capacity is *ncdi); -1 on ENOMEM. */
static int ix_file_finding(struct diag_index *ix, const struct dd_findings *fs, size_t i,
                           size_t *ncdi)
{
    const struct dd_finding *f = &fs->v[i];
    int cdi_off = is(f->code, "CDIDisabled");

    if ((is(f->obj.kind, "Pod") || is(f->obj.kind, "ResourceClaim") ||
         is(f->obj.kind, "ResourceClaimTemplate")) &&
        ix_file(ix, IX_OBJECT, f->obj.kind, f->obj.namespace_, f->obj.name, i))
        return -1;
    if (f->scope_class && ix_file(ix, IX_CLASS, f->scope_class, NULL, NULL, i))
        return -1;
    if (f->scope_driver && ix_file(ix, IX_DRIVER, f->scope_driver, NULL, NULL, i))
        return -1;
    if (cdi_off && f->scope_node && ix_file(ix, IX_NODE, f->scope_node, NULL, NULL, i))
        return -1;
    if (f->scope_driver && f->scope_node &&
        ix_file(ix, IX_DRIVER_NODE, f->scope_driver, f->scope_node, NULL, i))
        return -1;
    if (cdi_off && !f->scope_node && push_pos(&ix->cdi_any, &ix->ncdi_any, ncdi, i))
        return -1;
    return 0;
}

static void ix_firsts_all(struct diag_index *ix, const struct dd_findings *fs)
{
    size_t i;

    for (i = 0; i < ix->nslots; i++)
        if (ix->slots[i].key && (ix->slots[i].key[0] == 'c' || ix->slots[i].key[0] == 'd'))
            ix_firsts(&ix->slots[i], fs);
}

struct diag_index *diag_index_new(const struct dd_findings *fs)
{
    struct diag_index *ix = calloc(1, sizeof(*ix));
    size_t i, cap = 16, ncdi = 0;

    if (!ix)
        return NULL;
    ix->fs = fs;
    /* Room for a key per finding at most half full (many share theirs; ix_file grows it). */
    while (cap < 2 * fs->n + 2)
        cap *= 2;
    if (!(ix->slots = calloc(cap, sizeof(*ix->slots))))
        goto oom;
    ix->nslots = cap;
    for (i = 0; i < fs->n; i++)
        if (ix_file_finding(ix, fs, i, &ncdi))
            goto oom;
    ix_firsts_all(ix, fs);
    ncdi = 0;
    for (i = 0; i < fs->n; i++)
        if (is(fs->v[i].code, "CDIDisabled") &&
            push_pos(&ix->cdi_all, &ix->ncdi_all, &ncdi, i))
            goto oom;
    return ix;
oom:
    diag_index_free(ix);
    return NULL;
}

#define IX_GONE SIZE_MAX

/* v[0..*n) mapped through map, the gone ones dropped, into a new array (*out; NULL when
 * empty).  1 when one went, 0, -1 on ENOMEM. */
static int ix_remap(const size_t *v, size_t *n, const size_t *map, size_t **out)
{
    size_t i, k = 0;
    int went = 0;

    *out = NULL;
    if (!*n)
        return 0;
    if (!(*out = malloc(*n * sizeof(**out))))
        return -1;
    for (i = 0; i < *n; i++) {
        if (map[v[i]] == IX_GONE)
            went = 1;
        else
            (*out)[k++] = map[v[i]];
    }
    *n = k;
    return went;
}

struct diag_index *diag_index_patch(const struct diag_index *prev,
                                    const struct dd_findings *pf, const struct dd_findings *fs)
{
    struct diag_index *ix = NULL;
    size_t *map = malloc((pf->n + 1) * sizeof(*map)), *added = NULL, nadded = 0, cap = 0;
    size_t i, j, k, ncdi;

    if (!map || prev->under) {
        free(map);
        return NULL;
    }
    /* Kept findings share their strings with prev's (the same block, in the same order).  One
     * that shares them with none of prev's (a copy from a layer over prev: own's) comes
     * before the prev's finding it is compared with, or after all; a new one's are its own. */
    for (i = j = 0; j < fs->n;) {
        if (i < pf->n && fs->v[j].obj.api_version == pf->v[i].obj.api_version) {
            map[i++] = j++;
        } else if (i < pf->n && dd_finding_shared(&fs->v[j]) &&
                   dd_finding_cmp(&fs->v[j], &pf->v[i]) >= 0) {
            map[i++] = IX_GONE;
        } else {
            if (push_pos(&added, &nadded, &cap, j))
                goto fail;
            j++;
        }
    }
    for (; i < pf->n; i++)
        map[i] = IX_GONE;
    /* A class's or driver's first finding of a kind that went leaves its next one first,
     * which prev's index does not hold: build anew. */
    for (k = 0; k < prev->nslots; k++) {
        const struct ix_slot *sl = &prev->slots[k];
        if (sl->key && (sl->key[0] == 'c' || sl->key[0] == 'd'))
            for (i = 0; i < sl->n; i++)
                if (map[sl->v ? sl->v[i] : sl->one] == IX_GONE)
                    goto fail;
    }
    if (!(ix = calloc(1, sizeof(*ix))) ||
        !(ix->slots = malloc(prev->nslots * sizeof(*ix->slots))))
        goto fail;
    ix->fs = fs;
    memcpy(ix->slots, prev->slots, prev->nslots * sizeof(*ix->slots));
    ix->nslots = prev->nslots;
    ix->used = prev->used;
    for (k = 0; k < prev->nslots; k++) /* none owned yet */
        if (ix->slots[k].v)
            ix->slots[k].v = NULL, ix->slots[k].n = 0;
    for (k = 0; k < prev->nblocks; k++)
        if (ix_hold(ix, prev->blocks[k]))
            goto fail;
    for (k = 0; k < prev->nslots; k++) {
        const struct ix_slot *was = &prev->slots[k];
        struct ix_slot *sl = &ix->slots[k];
        if (!was->key)
            continue;
        if (!was->v) {
            sl->n = was->n && map[was->one] != IX_GONE;
            sl->one = sl->n ? map[was->one] : 0;
            continue;
        }
        sl->n = was->n;
        if (ix_remap(was->v, &sl->n, map, &sl->v) < 0)
            goto fail;
        sl->cap = was->n;
        if (!sl->v) /* empty: a position filed later needs an array */
            sl->n = 0;
    }
    ix->ncdi_any = prev->ncdi_any;
    ix->ncdi_all = prev->ncdi_all;
    if (ix_remap(prev->cdi_any, &ix->ncdi_any, map, &ix->cdi_any) < 0 ||
        ix_remap(prev->cdi_all, &ix->ncdi_all, map, &ix->cdi_all) < 0)
        goto fail;
    ncdi = ix->ncdi_any;
    for (i = 0; i < nadded; i++)
        if (ix_file_finding(ix, fs, added[i], &ncdi))
            goto fail;
    ix_firsts_all(ix, fs);
    ncdi = ix->ncdi_all;
    for (i = 0; i < nadded; i++)
        if (is(fs->v[added[i]].code, "CDIDisabled") &&
            push_pos(&ix->cdi_all, &ix->ncdi_all, &ncdi, added[i]))
            goto fail;
    free(map);
    free(added);
    return ix;
fail:
    free(map);
    free(added);
    diag_index_free(ix);
    return NULL;
}

static int gone_at(const uint64_t *gone, size_t pos)
{
    return gone && (gone[pos / 64] >> (pos % 64) & 1);
}

/* 1 when position pos of ix's findings is among what a class or driver key kept of its group
 * (ix_firsts), and gone drops every one of them while more may follow: the next one is not
 * in ix. */
static int ix_group_lost(const struct diag_index *ix, size_t pos, const uint64_t *gone)
{
    const struct dd_finding *f = &ix->fs->v[pos];
    const char *name[2] = { f->scope_class, f->scope_driver };
    char buf[1024];
    size_t k, i, in, left, all;

    for (k = 0; k < 2; k++) {
        const char *key = name[k] ? ix_key(buf, sizeof(buf), k ? IX_DRIVER : IX_CLASS, name[k],
                                           NULL, NULL) : NULL;
        struct ix_slot *sl = key ? ix_find(ix, key) : NULL;
        const size_t *v = sl && sl->key ? ix_pos(sl) : NULL;
        for (i = in = left = all = 0; v && i < sl->n; i++) {
            int same = same_group(sl->key[0], f, &ix->fs->v[v[i]]);
            in |= v[i] == pos;
            all += (size_t)same;
            left += same && !gone_at(gone, v[i]);
        }
        /* A group ix_firsts cut short may have more after it; a shorter one has not. */
        if (in && !left && all == IX_DEPTH)
            return 1;
    }
    return 0;
}

struct diag_index *diag_index_layer(const struct diag_index *under, const uint64_t *gone,
                                    const uint64_t *was, const struct dd_findings *own)
{
    struct diag_index *ix;
    size_t w, nw = (under->fs->n + 63) / 64;

    if (under->under)
        return NULL;
    /* A bit per finding: the words are a small pass (a word per 64 findings); the bits set
     * since was are what changed (a group lost by was's is lost in was's layer already). */
    for (w = 0; w < nw; w++) {
        uint64_t bits = gone[w] & ~(was ? was[w] : 0);
        for (; bits; bits &= bits - 1)
            if (ix_group_lost(under, w * 64 + (size_t)__builtin_ctzll(bits), gone))
                return NULL;
    }
    if (!(ix = diag_index_new(own)))
        return NULL;
    ix->under = under;
    ix->gone = gone;
    return ix;
}

const size_t *diag_index_about(const struct diag_index *ix, const char *kind, const char *ns,
                               const char *name, size_t *n)
{
    char buf[1024];
    const char *key = ix_key(buf, sizeof(buf), IX_OBJECT, kind, ns, name);
    struct ix_slot *sl = key ? ix_find(ix, key) : NULL;

    *n = sl && sl->key ? sl->n : 0;
    return *n ? ix_pos(sl) : NULL;
}

static int cmp_pos(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return (x > y) - (x < y);
}

static int ix_add(const struct diag_index *ix, size_t **v, size_t *n, size_t *cap,
                  enum ix_kind kind, const char *a, const char *b, const char *c)
{
    char buf[1024];
    const char *key = ix_key(buf, sizeof(buf), kind, a, b, c);
    const struct ix_slot *sl;
    size_t i;

    if (!key)
        return 0; /* filed under no such key either */
    sl = ix_find(ix, key);
    for (i = 0; sl->key && i < sl->n; i++)
        if (push_pos(v, n, cap, sl->v ? sl->v[i] : sl->one))
            return -1;
    return 0;
}

/*
 * The positions filed under v's keys in ix itself (not in what it lies over), ascending and
 * without repeats, into *out[0..*nout): with main == 0 only those scoped to v's classes
 * (collect_path), else everything on_path may accept.  0, or -1 on ENOMEM.
 */
static int ix_gather_pos(const struct diag_index *ix, const struct pod_view *v, int main,
                         size_t **out, size_t *nout)
{
    const struct dra_podspec *p = v->p;
    size_t *r = NULL, n = 0, cap = 0, i, k;
    int rc = 0;

    for (i = 0; i < v->classes.n && !rc; i++)
        rc = ix_add(ix, &r, &n, &cap, IX_CLASS, v->classes.v[i], NULL, NULL);
    if (main) {
        rc = rc || ix_add(ix, &r, &n, &cap, IX_OBJECT, "Pod", p->o.ns, p->o.name);
        for (i = 0; i < p->nclaims && !rc; i++) {
            const struct dra_claim *c = dra_pod_claim_resolve(v->m, p, &p->claims[i]);
            if (c)
                rc = ix_add(ix, &r, &n, &cap, IX_OBJECT, "ResourceClaim", c->o.ns, c->o.name);
            if (!rc && p->claims[i].tmpl)
                rc = ix_add(ix, &r, &n, &cap, IX_OBJECT, "ResourceClaimTemplate", p->o.ns,
                            p->claims[i].tmpl);
        }
        for (i = 0; i < v->drivers.n && !rc; i++) {
            rc = ix_add(ix, &r, &n, &cap, IX_DRIVER, v->drivers.v[i], NULL, NULL);
            if (!rc && *p->node)
                rc = ix_add(ix, &r, &n, &cap, IX_DRIVER_NODE, v->drivers.v[i], p->node, NULL);
        }
        if (*p->node)
            rc = rc || ix_add(ix, &r, &n, &cap, IX_NODE, p->node, NULL, NULL);
        for (i = 0; i < ix->ncdi_any && !rc; i++)
            rc = push_pos(&r, &n, &cap, ix->cdi_any[i]);
        for (i = 0; !*p->node && v->m->nruntimes == 1 && i < ix->ncdi_all && !rc; i++)
            rc = push_pos(&r, &n, &cap, ix->cdi_all[i]);
    }
    if (rc) {
        free(r);
        return -1;
    }
    if (n > 1)
        qsort(r, n, sizeof(*r), cmp_pos);
    for (i = k = 0; i < n; i++)
        if (!k || r[k - 1] != r[i])
            r[k++] = r[i];
    *out = r;
    *nout = k;
    return 0;
}

/* The findings ix_gather_pos gives in ix and, for a layer, in what it lies over but not
 * dropped, merged in the findings' order (both lists are sorted).  0, -1 on ENOMEM. */
static int ix_gather(const struct diag_index *ix, const struct pod_view *v, int main,
                     struct cands *out)
{
    const struct diag_index *u = ix->under;
    const struct dd_finding **r;
    size_t *a = NULL, *b = NULL, na = 0, nb = 0, i = 0, j = 0, k = 0;

    if (ix_gather_pos(ix, v, main, &a, &na) || (u && ix_gather_pos(u, v, main, &b, &nb)) ||
        !(r = malloc((na + nb + 1) * sizeof(*r)))) {
        free(a);
        free(b);
        return -1;
    }
    while (i < na || j < nb) {
        if (j < nb && gone_at(ix->gone, b[j]))
            j++;
        else if (j < nb && (i == na || dd_finding_cmp(&u->fs->v[b[j]], &ix->fs->v[a[i]]) <= 0))
            r[k++] = &u->fs->v[b[j++]];
        else
            r[k++] = &ix->fs->v[a[i++]];
    }
    free(a);
    free(b);
    out->v = r;
    out->n = k;
    return 0;
}

/* Classes and drivers the pod's claims lead to.  ix: the snapshot's index of findings, or
 * NULL to look at every finding. */
static void collect_path(struct pod_view *v, const struct dd_findings *fs,
                         const struct diag_index *ix)
{
    const struct dra_model *m = v->m;
    size_t i, j, k;

    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, &v->p->claims[i]);
        const cJSON *res;
        if (!c)
            continue;
        for (j = 0; j < c->spec.nreq; j++) {
            names_add(&v->classes, c->spec.req[j].class_name);
            for (k = 0; k < c->spec.req[j].nsub; k++)
                names_add(&v->classes, c->spec.req[j].sub[k].class_name);
        }
        cJSON_ArrayForEach(res, dd_json_arr(c->o.json, "status", "allocation", "devices",
                                            "results", NULL))
            names_add(&v->drivers, dd_json_str(res, "driver", NULL));
    }
    for (i = 0; i < v->classes.n; i++) {
        const struct dra_class *cls = dra_find_class(m, v->classes.v[i]);
        for (j = 0; cls && j < cls->nsel; j++) {
            const struct cel_driver_ref *refs;
            size_t n;
            if (cls->sel[j].prog &&
                cel_program_drivers(cls->sel[j].prog, &refs, &n) == CEL_DRIVERS_SET)
                for (k = 0; k < n; k++)
                    names_add(&v->drivers, refs[k].name);
        }
    }
    /* A misspelled driver name stands for the driver it was meant to be. */
    if (ix) {
        struct cands c;
        if (!ix_gather(ix, v, 0, &c)) {
            for (i = 0; i < c.n; i++)
                if (STRIEQ(c.v[i]->code, "SelectorMatchesNoDriver") &&
                    names_has(&v->classes, c.v[i]->scope_class))
                    names_add(&v->drivers, c.v[i]->scope_driver);
            free(c.v);
        } else if (!ix->under) {
            ix = NULL; /* out of memory: look at every finding */
        }
    }
    for (i = 0; !ix && i < fs->n; i++)
        if (STRIEQ(fs->v[i].code, "SelectorMatchesNoDriver") &&
            names_has(&v->classes, fs->v[i].scope_class))
            names_add(&v->drivers, fs->v[i].scope_driver);
    /* A DaemonSet serving one of them serves the pod: its other names count too. */
    for (i = 0; i < m->ndrivers; i++)
        if (names_has(&v->drivers, m->drivers[i].name))
            for (j = 0; j < m->ndrivers; j++)
                if (m->drivers[j].ds == m->drivers[i].ds)
                    names_add(&v->drivers, m->drivers[j].name);
}

/* Is f about the pod itself, one of its claims, or a template one of them comes from? */
static int about_pod_or_claim(const struct pod_view *v, const struct dd_finding *f)
{
    const struct dra_model *m = v->m;
    size_t i;

    if (STRIEQ(f->obj.kind, "Pod"))
        return STRIEQ(f->obj.namespace_, v->p->o.ns) && STRIEQ(f->obj.name, v->p->o.name);
    if (STRIEQ(f->obj.kind, "ResourceClaimTemplate")) {
        for (i = 0; i < v->p->nclaims; i++)
            if (v->p->claims[i].tmpl && STRIEQ(v->p->o.ns, f->obj.namespace_) &&
                STRIEQ(v->p->claims[i].tmpl, f->obj.name))
                return 1;
        return 0;
    }
    if (!STRIEQ(f->obj.kind, "ResourceClaim"))
        return 0;
    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, &v->p->claims[i]);
        if (c && STRIEQ(c->o.ns, f->obj.namespace_) && STRIEQ(c->o.name, f->obj.name))
            return 1;
    }
    return 0;
}

/* The CDI findings apply to the node the pod runs on, or will run on. */
static int about_node(const struct pod_view *v, const struct dd_finding *f)
{
    if (!f->scope_node)
        return 1; /* lint's --containerd-config speaks for every node */
    if (*v->p->node)
        return STRIEQ(f->scope_node, v->p->node);
    return v->m->nruntimes == 1;
}

/* Does finding f lie on the pod's path at a step the pod still has ahead of it? */
static int on_path(const struct pod_view *v, const struct dd_finding *f)
{
    enum dd_step st = step_of(f->code);

    if (st == DD_STEP_NONE)
        return 0;
    /* Another pod's finding is about that pod, whatever class, driver or node it shares with
     * this one (DevicesDoNotFit names the class of the request that failed). */
    if (STRIEQ(f->obj.kind, "Pod") && !about_pod_or_claim(v, f))
        return 0;
    /* From the node on: what the pod's node, drivers, classes or claims have wrong. */
    if (st >= DD_STEP_PREPARE) {
        if (STRIEQ(f->code, "CDIDisabled"))
            return about_node(v, f);
        if (about_pod_or_claim(v, f) || (f->scope_class && names_has(&v->classes, f->scope_class)))
            return 1;
        return f->scope_driver && names_has(&v->drivers, f->scope_driver) &&
               (!f->scope_node || !*v->p->node || STRIEQ(f->scope_node, v->p->node));
    }
    /* Once every claim is allocated, nothing before allocation blocks the pod; an allocation
     * (a shared claim's, on another node) still may. */
    if (v->all_allocated && st < DD_STEP_ALLOCATED)
        return 0;
    if (about_pod_or_claim(v, f))
        return 1;
    if (st == DD_STEP_DRIVER)
        return names_has(&v->drivers, f->scope_driver);
    return f->scope_class && names_has(&v->classes, f->scope_class) &&
           (STRIEQ(f->obj.kind, "DeviceClass") || st == DD_STEP_DEVICES);
}

/* Kept beside on_path: which pods on_path may let f through for, whatever their view. */
enum diag_reach diag_finding_reach(const struct dd_finding *f)
{
    enum dd_step st = step_of(f->code);

    if (st == DD_STEP_NONE)
        return DIAG_REACH_NONE;
    if (STRIEQ(f->obj.kind, "Pod"))
        return DIAG_REACH_POD; /* only about_pod_or_claim lets it through */
    /* About a claim or template: about_pod_or_claim (the pod's own namespace), unless a class
     * or driver scope lets it onto other pods' paths at its step. */
    if ((STRIEQ(f->obj.kind, "ResourceClaim") || STRIEQ(f->obj.kind, "ResourceClaimTemplate")) &&
        !f->scope_driver && (!f->scope_class || (st < DD_STEP_PREPARE && st != DD_STEP_DEVICES)))
        return DIAG_REACH_NAMESPACE;
    return DIAG_REACH_ALL;
}

static void pod_state(struct pod_view *v)
{
    const cJSON *st = v->p->status, *cs;
    const char *phase = dd_json_str(st, "phase", NULL);

    v->running = phase && STRIEQ(phase, "Running");
    v->pending = !phase || STRIEQ(phase, "Pending");
    cJSON_ArrayForEach(cs, dd_json_arr(st, "containerStatuses", NULL)) {
        const char *reason = dd_json_str(cs, "state", "waiting", "reason", NULL);
        const char *msg = dd_json_str(cs, "state", "waiting", "message", NULL);
        if (reason && STRIEQ(reason, "CreateContainerError") && msg && strstr(msg, "CDI"))
            v->cdi_error = msg;
    }
}

/*
 * A running container that started before the node agent saw CDI turned on on its
 * node: containerd skipped its CDI devices then, and nothing injects them later (the
 * kubelet does not prepare a running pod's claims again).  Both times are RFC 3339 UTC
 * with seconds ("2026-12-01T21:10:15Z", as the kubelet and the agent write them), so
 * they compare as strings; a container started in the same second is not named.
 */
static void started_without_cdi(struct pod_view *v)
{
    const struct dra_model *m = v->m;
    const char *on = NULL;
    const cJSON *cs;
    size_t i;

    if (!v->running || !*v->p->node)
        return;
    for (i = dra_node_first(m, v->p->node); i != SIZE_MAX; i = dra_node_next(m, i)) {
        const struct dra_runtime *r = dra_node_runtime(m, i);
        if (r && r->cfg.enable_cdi && r->cfg.cdi_enabled_at[0])
            on = r->cfg.cdi_enabled_at;
    }
    if (!on)
        return;
    cJSON_ArrayForEach(cs, dd_json_arr(v->p->status, "containerStatuses", NULL)) {
        const char *at = dd_json_str(cs, "state", "running", "startedAt", NULL);
        /* The kubelet reports startedAt to the second.  The same second as the agent's
         * reading counts as before: containerd applies its config only once restarted, after
         * the agent saw the file, and must then create the container anew (the message
         * says so). */
        if (at && strlen(at) == strlen(on) && strcmp(at, on) <= 0) {
            v->early_ctr = dd_json_str(cs, "name", NULL);
            if (!v->early_ctr)
                v->early_ctr = "(unnamed)";
            v->early_at = at;
            v->cdi_on_at = on;
            return;
        }
    }
}

/* The node object named name, or NULL. */
static const cJSON *node_json(const struct dra_model *m, const char *name)
{
    const struct dra_obj *n = name ? dra_find_node(m, name) : NULL;

    return n ? n->json : NULL;
}

/* 1 while the kubelet still holds every container of the pod in ContainerCreating (it keeps a
 * pod whose claims it cannot prepare there, without a sandbox); anything else means a later
 * attempt got further. */
static int still_creating(const struct pod_view *v)
{
    const cJSON *cs;

    cJSON_ArrayForEach(cs, dd_json_arr(v->p->status, "containerStatuses", NULL)) {
        const char *reason = dd_json_str(cs, "state", "waiting", "reason", NULL);
        if (!reason || !STRIEQ(reason, "ContainerCreating"))
            return 0;
    }
    return 1;
}

/*
 * Where driver drv's kubelet plugin stands on node: its DaemonSet's pod there is missing (and
 * why the DaemonSet may not run there), not ready (and why), or ready.  Into state (a clause)
 * and fix (what to do).
 */
static void plugin_state(const struct pod_view *v, const char *drv, const char *node,
                         char *state, size_t ssize, char *fix, size_t fsize)
{
    const struct dra_model *m = v->m;
    const struct dra_driver *d = NULL;
    const cJSON *pod, *cs, *nj = node_json(m, node);
    char why[300];
    size_t i;

    for (i = 0; i < m->ndrivers && !d; i++)
        if (STRIEQ(m->drivers[i].name, drv))
            d = &m->drivers[i];
    if (!d) {
        snprintf(state, ssize, "no DaemonSet of driver %s is installed (was it uninstalled?)",
                 drv);
        snprintf(fix, fsize, "reinstall the driver; once its plugin is ready on node %s, "
                 "recreate pod %s", node, v->p->o.name);
        return;
    }
    if (!(pod = dra_plugin_pod(m, d->ds, node))) {
        if (nj && fit_pod_excluded(d->ds->spec, nj, 1, why, sizeof(why)))
            snprintf(state, ssize, "DaemonSet %s/%s has no pod on node %s: it may not run "
                     "there (%s)", d->ds->o.ns, d->ds->o.name, node, why);
        else
            snprintf(state, ssize, "DaemonSet %s/%s has no pod on node %s", d->ds->o.ns,
                     d->ds->o.name, node);
        snprintf(fix, fsize, "let DaemonSet %s/%s run on node %s (its nodeSelector, affinity, "
                 "tolerations), then recreate pod %s", d->ds->o.ns, d->ds->o.name, node,
                 v->p->o.name);
        return;
    }
    if (!dra_pod_ready(pod)) {
        const char *reason = NULL;
        double restarts = 0;
        cJSON_ArrayForEach(cs, dd_json_arr(pod, "status", "containerStatuses", NULL)) {
            const cJSON *rc = cJSON_GetObjectItemCaseSensitive(cs, "restartCount");
            if (!reason)
                reason = dd_json_str(cs, "state", "waiting", "reason", NULL);
            if (cJSON_IsNumber(rc) && rc->valuedouble > restarts)
                restarts = rc->valuedouble;
        }
        snprintf(state, ssize, "its plugin pod %s/%s on node %s is not ready (%s%s, %.0f "
                 "restart(s))", d->ds->o.ns, dd_json_str(pod, "metadata", "name", NULL),
                 node, reason ? reason : "phase ",
                 reason ? "" : (dd_json_str(pod, "status", "phase", NULL)
                                    ? dd_json_str(pod, "status", "phase", NULL) : "unknown"),
                 restarts);
        snprintf(fix, fsize, "get the plugin pod ready (kubectl logs -n %s %s), then recreate "
                 "pod %s", d->ds->o.ns, dd_json_str(pod, "metadata", "name", NULL),
                 v->p->o.name);
        return;
    }
    snprintf(state, ssize, "its plugin pod %s/%s on node %s is ready now: it registered after "
             "the pod arrived, and the kubelet retries with a growing delay, about a minute "
             "after a few failures", d->ds->o.ns, dd_json_str(pod, "metadata", "name", NULL),
             node);
    snprintf(fix, fsize, "recreate pod %s to start it without waiting for the kubelet's next "
             "retry", v->p->o.name);
}

/*
 * The kubelet could not have a claim prepared: the claim's driver is not registered with
 * the kubelet on the pod's node.  This is the pod's own evidence, so it comes first in its
 * step: StaleResourceSlices, if any, says how the pod got there.
 */
static void plugin_not_registered(struct pod_view *v)
{
    const struct dra_event *e = last_event(v->m, v->p, EV_PREPARE, NOT_REGISTERED);
    const char *d, *end, *node = *v->p->node ? v->p->node : "(unknown)", *bug;
    char text[768], drv[128] = "", state[400], fix[300], kubelet[400] = "";

    if (!e || !(d = strstr(e->message, "DRA driver ")) || !(end = strstr(d, NOT_REGISTERED)) ||
        !still_creating(v))
        return;
    d += strlen("DRA driver ");
    snprintf(drv, sizeof(drv), "%.*s", (int)(end - d < 127 ? end - d : 127), d);
    plugin_state(v, drv, node, state, sizeof(state), fix, sizeof(fix));
    bug = kv_kubelet_plugin_bug(dd_json_str(node_json(v->m, node), "status", "nodeInfo",
                                            "kubeletVersion", NULL));
    if (bug)
        snprintf(kubelet, sizeof(kubelet), " Also, %s.", bug);
    /* A long kubelet message is cut rather than the evidence dropped. */
    if (snprintf(text, sizeof(text), "The kubelet on node %s cannot prepare the claims of pod "
                 "%s: DRA driver %s is not registered there (kubelet: \"%s\"); %s.%s Fix: %s.",
                 node, v->p->o.name, drv, e->message, state, kubelet, fix) < 0)
        return;
    add_cand(v, "KubeletPluginNotRegistered", NULL, text);
    if (v->nc && STRIEQ(v->c[v->nc - 1].code, "KubeletPluginNotRegistered"))
        v->c[v->nc - 1].first = 1;
}

/*
 * The driver itself refused to prepare a claim (its NodePrepareResources returned an error):
 * kubelet 1.36 pkg/kubelet/cm/dra/manager.go, "NodePrepareResources failed for ResourceClaim
 * %s: %s" (per claim) or "NodePrepareResources: %w" (the call), after "prepare dynamic
 * resources: ".  The driver's own text says why; a claim's spec cannot change, so the fix
 * is a new claim.
 */
static void prepare_failed(struct pod_view *v)
{
    const struct dra_event *e = last_event(v->m, v->p, EV_PREPARE, "NodePrepareResources");
    const char *node = *v->p->node ? v->p->node : "(unknown)";
    char text[768];

    if (!e || !still_creating(v))
        return;
    if (snprintf(text, sizeof(text), "The DRA driver on node %s refuses to prepare a claim of "
                 "pod %s, which stays in ContainerCreating (kubelet: \"%s\"). Fix: correct what "
                 "the driver's error names (usually the claim's opaque config, or a feature "
                 "gate of the driver), then recreate the claim: a claim's spec cannot change "
                 "(for a claim from a template, fix the template and recreate pod %s).",
                 node, v->p->o.name, e->message, v->p->o.name) < 0)
        return;
    add_cand(v, "NodePrepareFailed", NULL, text);
    if (v->nc && STRIEQ(v->c[v->nc - 1].code, "NodePrepareFailed"))
        v->c[v->nc - 1].first = 1;
}

/* Evidence only the pod shows: missing claims, failed claim creation, runtime errors. */
static void pod_evidence(struct pod_view *v)
{
    const struct dra_model *m = v->m;
    char text[768];
    size_t i;

    v->all_allocated = v->p->nclaims > 0;
    for (i = 0; i < v->p->nclaims; i++) {
        const struct dra_pod_claim *pc = &v->p->claims[i];
        const struct dra_claim *c = dra_pod_claim_resolve(m, v->p, pc);
        const struct dra_event *e;

        if (!c || !c->allocated || diag_claim_assumed(c))
            v->all_allocated = 0;
        if (c && diag_claim_assumed(c)) {
            snprintf(text, sizeof(text), "ResourceClaim %s/%s, used by pod %s, does not exist.",
                     c->o.ns, c->o.name, v->p->o.name);
            add_cand(v, "ClaimNotFound", NULL, text);
        }
        if (c || !pc->tmpl)
            continue;
        /* kube-controller-manager could not create the claim from the template. */
        if ((e = last_event(m, v->p, EV_CLAIM_CREATION, "exceeded quota"))) {
            snprintf(text, sizeof(text), "The claim for pod claim \"%s\" (template %s) was not "
                     "created: %s. Fix: raise the ResourceQuota of namespace %s.",
                     pc->name, pc->tmpl, e->message, v->p->o.ns);
            add_cand(v, "QuotaExceeded", NULL, text);
        }
    }
    if (v->cdi_error) {
        snprintf(text, sizeof(text), "A container of pod %s cannot start: %s. No CDI "
                 "misconfiguration explains it now; if one was fixed after the pod's claims "
                 "were prepared, their CDI specs were never written where the runtime reads "
                 "them. Fix: delete and recreate pod %s (the kubelet prepares an already "
                 "prepared claim only for a new pod), and if it fails again check the driver "
                 "plugin's log on node %s.", v->p->o.name, v->cdi_error, v->p->o.name,
                 *v->p->node ? v->p->node : "(unknown)");
        add_cand(v, "CDIInjectionFailed", NULL, text);
    }
    started_without_cdi(v);
    if (v->early_ctr) {
        int same = !strcmp(v->early_at, v->cdi_on_at);
        snprintf(text, sizeof(text), "Pod %s runs without its DRA devices: its container %s "
                 "started at %s, before containerd on node %s had CDI enabled (the dra-doctor "
                 "node agent saw it turned on at %s%s), and a running container gets no devices "
                 "later. Fix: delete and recreate pod %s.", v->p->o.name,
                 v->early_ctr, v->early_at, v->p->node, v->cdi_on_at,
                 same ? "; the same second, assumed before: the kubelet reports start times to "
                        "the second, and containerd applies a new config only after a restart"
                      : "",
                 v->p->o.name);
        add_cand(v, "CDIInjectionFailed", NULL, text);
        if (v->nc && STRIEQ(v->c[v->nc - 1].code, "CDIInjectionFailed"))
            v->c[v->nc - 1].first = 1;
    }
    if (v->pending && v->all_allocated && !v->cdi_error) {
        plugin_not_registered(v);
        prepare_failed(v);
    }
}

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    size_t ix = 0, iy = 0, n, i;
    const struct dd_rule *r = dd_rules(&n);

    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    if (x->first != y->first)
        return x->first ? -1 : 1;
    /* Within a step, the rule table's order (per-pod evidence of a step after its rules). */
    for (i = 0; i < n; i++) {
        if (r[i].code == x->code)
            ix = i;
        if (r[i].code == y->code)
            iy = i;
    }
    if ((x->f == NULL) != (y->f == NULL))
        return x->f ? -1 : 1;
    return ix < iy ? -1 : ix > iy;
}

/* A finding of the engine explains the per-pod evidence of the same step better. */
static void drop_explained(struct pod_view *v)
{
    size_t i, j, k = 0;

    for (i = 0; i < v->nc; i++) {
        int explained = 0;
        if (!v->c[i].f && !v->c[i].first)
            for (j = 0; j < v->nc; j++)
                explained |= v->c[j].f && v->c[j].step == v->c[i].step &&
                             (STRIEQ(v->c[i].code, "CDIInjectionFailed") ||
                              STRIEQ(v->c[i].code, "ClaimNotFound"));
        if (!explained)
            v->c[k++] = v->c[i];
    }
    v->nc = k;
}

void diag_pod_indexed(const struct dra_model *m, const struct dd_findings *findings,
                      const struct diag_index *ix, const struct dra_podspec *pod,
                      struct diag_result *out)
{
    /* The candidates' texts are written only when used: no need to clear them. */
    struct pod_view *v = malloc(sizeof(*v));
    const struct dra_event *e;
    struct cands c = { NULL, 0 };
    size_t i, len = 0;

    memset(out, 0, sizeof(*out));
    out->healthy = 1;
    if (!v)
        return; /* no diagnosis is better than a wrong one */
    memset(v, 0, offsetof(struct pod_view, c));
    v->m = m;
    v->p = pod;
    pod_state(v);
    if (!v->running && !v->pending)
        goto out; /* Succeeded or Failed: DRA no longer matters */
    collect_path(v, findings, ix);
    pod_evidence(v);
    if (ix && ix_gather(ix, v, 1, &c)) {
        if (ix->under)
            goto out; /* out of memory, and findings are not all of them */
        ix = NULL; /* out of memory: look at every finding */
    }
    for (i = 0; i < (ix ? c.n : findings->n); i++) {
        const struct dd_finding *f = ix ? c.v[i] : &findings->v[i];
        if (on_path(v, f))
            add_cand(v, f->code, f, NULL);
    }
    free(c.v);
    /* A running pod is at risk only from what stops injection (CDI off, or having started
     * while it was) and from what it runs with: devices no container gets, configuration
     * the driver ignores, a device gone bad. */
    if (v->running && !v->cdi_error) {
        int cdi_off = v->early_ctr != NULL;
        size_t k = 0;
        for (i = 0; i < v->nc; i++)
            cdi_off |= STRIEQ(v->c[i].code, "CDIDisabled");
        for (i = 0; !cdi_off && i < v->nc; i++)
            if (v->c[i].step == DD_STEP_RUNNING)
                v->c[k++] = v->c[i];
        if (!cdi_off)
            v->nc = k;
    }
    if (v->pending && !v->nc && !v->all_allocated &&
        (e = last_event(m, pod, EV_SCHEDULING, NULL))) {
        char text[768];
        snprintf(text, sizeof(text), "The scheduler cannot place pod %s: %s (`dra-doctor "
                 "explain pod %s -n %s` shows what each device's selectors say)", pod->o.name,
                 e->message, pod->o.name, pod->o.ns);
        add_cand(v, "ClaimNotAllocated", NULL, text);
    }
    drop_explained(v);
    if (!v->nc)
        goto out;
    qsort(v->c, v->nc, sizeof(v->c[0]), cmp_cand);
    out->healthy = 0;
    for (i = 0; i < v->nc && out->ncodes < DIAG_MAX_CODES; i++) {
        out->codes[out->ncodes++] = v->c[i].code;
        len += (size_t)snprintf(out->list + len, len < sizeof(out->list) ? sizeof(out->list) - len : 0,
                                "%s%s", i ? "," : "", v->c[i].code);
    }
    if (v->c[0].f && assumed_object(m, v->c[0].f))
        snprintf(out->message, sizeof(out->message),
                 "ResourceClaim %s/%s does not exist: creating it is refused by the quota "
                 "(dra-doctor assumes it asks for one device of the class the quota is full "
                 "for). %s Fix: %s", v->c[0].f->obj.namespace_, v->c[0].f->obj.name,
                 v->c[0].f->message, v->c[0].f->fix);
    else if (v->c[0].f)
        snprintf(out->message, sizeof(out->message), "%s Fix: %s", v->c[0].f->message,
                 v->c[0].f->fix);
    else
        snprintf(out->message, sizeof(out->message), "%s", v->c[0].text);
out:
    free(v);
}

void diag_pod(const struct dra_model *m, const struct dd_findings *findings,
              const struct dra_podspec *pod, struct diag_result *out)
{
    diag_pod_indexed(m, findings, NULL, pod, out);
}

/* ---- stand-ins for claims the quota rejected ----------------------------- */

/* Quotas by namespace, so that each missing claim looks at its own namespace's. */
struct quota_ns {
    const char *ns;
    const struct dra_quota *q;
};

static int cmp_quota_ns(const void *a, const void *b)
{
    const struct quota_ns *x = a, *y = b;
    int c = strcmp(x->ns, y->ns);

    /* Then model order, as a scan of m->quotas would meet them. */
    return c ? c : (x->q > y->q) - (x->q < y->q);
}

/* A class whose device quota in ns is used up, or NULL.  by_ns: m's quotas sorted by
 * namespace (n of them). */
static const char *exhausted_class(const struct quota_ns *by_ns, size_t n, const char *ns,
                                   char *buf, size_t size)
{
    size_t lo = 0, hi = n, i, j;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(by_ns[mid].ns, ns) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (i = lo; i < n && STRIEQ(by_ns[i].ns, ns); i++) {
        const struct dra_quota *q = by_ns[i].q;
        for (j = 0; j < q->nhard; j++) {
            const char *sfx = strstr(q->hard[j].key, QUOTA_CLASS_SUFFIX);
            int64_t used;
            if (!sfx || sfx[strlen(QUOTA_CLASS_SUFFIX)] ||
                !dd_json_int(q->o.json, &used, "status", "used", q->hard[j].key, NULL) ||
                used < q->hard[j].hard || (size_t)(sfx - q->hard[j].key) >= size)
                continue;
            memcpy(buf, q->hard[j].key, (size_t)(sfx - q->hard[j].key));
            buf[sfx - q->hard[j].key] = '\0';
            return buf;
        }
    }
    return NULL;
}

static cJSON *stand_in(const char *ns, const char *name, const char *cls)
{
    cJSON *o = cJSON_CreateObject(), *meta, *ann, *reqs, *req = NULL, *ex;
    int ok = o && cJSON_AddStringToObject(o, "apiVersion", "resource.k8s.io/v1") &&
             cJSON_AddStringToObject(o, "kind", "ResourceClaim") &&
             (meta = cJSON_AddObjectToObject(o, "metadata")) &&
             cJSON_AddStringToObject(meta, "name", name) &&
             cJSON_AddStringToObject(meta, "namespace", ns) &&
             (ann = cJSON_AddObjectToObject(meta, "annotations")) &&
             cJSON_AddStringToObject(ann, DIAG_ANN_ASSUMED, "rejected by ResourceQuota") &&
             (reqs = cJSON_AddArrayToObject(
                  cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "spec"), "devices"),
                  "requests")) &&
             (req = cJSON_CreateObject()) && cJSON_AddItemToArray(reqs, req) &&
             cJSON_AddStringToObject(req, "name", "assumed") &&
             (ex = cJSON_AddObjectToObject(req, "exactly")) &&
             cJSON_AddStringToObject(ex, "deviceClassName", cls);

    if (!ok) {
        /* req belongs to reqs once added; before that it is ours to free. */
        if (req && !cJSON_GetArraySize(dd_json_arr(o, "spec", "devices", "requests", NULL)))
            cJSON_Delete(req);
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* The claims (ns/name, borrowed) that have a stand-in already: open addressing. */
struct seen_claims {
    const char **ns, **name; /* parallel arrays of cap; ns NULL: empty */
    size_t cap, n;
};

static size_t claim_key_hash(const char *ns, const char *name)
{
    size_t h = 1469598103934665603ULL;

    for (; *ns; ns++)
        h = (h ^ (unsigned char)*ns) * 1099511628211ULL;
    h = (h ^ '/') * 1099511628211ULL;
    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    return h;
}

/* 1 when ns/name was in the set, 0 when added now, -1 on ENOMEM. */
static int seen_add(struct seen_claims *s, const char *ns, const char *name)
{
    size_t h, i;

    if (2 * (s->n + 1) > s->cap) {
        struct seen_claims g = { NULL, NULL, s->cap ? 2 * s->cap : 64, 0 };
        if (!(g.ns = calloc(g.cap, sizeof(*g.ns))) || !(g.name = calloc(g.cap, sizeof(*g.name)))) {
            free(g.ns);
            return -1;
        }
        for (i = 0; i < s->cap; i++)
            if (s->ns[i])
                seen_add(&g, s->ns[i], s->name[i]);
        free(s->ns);
        free(s->name);
        *s = g;
    }
    for (h = claim_key_hash(ns, name) & (s->cap - 1); s->ns[h]; h = (h + 1) & (s->cap - 1))
        if (STRIEQ(s->ns[h], ns) && STRIEQ(s->name[h], name))
            return 1;
    s->ns[h] = ns;
    s->name[h] = name;
    s->n++;
    return 0;
}

cJSON *diag_assume_rejected_claims(const struct dra_model *m)
{
    struct seen_claims seen = { NULL, NULL, 0, 0 };
    struct quota_ns *by_ns;
    cJSON *out = NULL;
    char cls[256];
    size_t i, j;

    if (!m->nquotas)
        return NULL; /* nothing is exhausted */
    if (!(by_ns = malloc(m->nquotas * sizeof(*by_ns))))
        return NULL;
    for (i = 0; i < m->nquotas; i++) {
        by_ns[i].ns = m->quotas[i].o.ns;
        by_ns[i].q = &m->quotas[i];
    }
    qsort(by_ns, m->nquotas, sizeof(*by_ns), cmp_quota_ns);
    for (i = 0; i < m->npods; i++) {
        const struct dra_podspec *p = m->pods[i];
        if (!p->status)
            continue;
        for (j = 0; j < p->nclaims; j++) {
            const char *name = p->claims[j].claim;
            cJSON *c;
            int dup;
            if (!name || dra_find_claim(m, p->o.ns, name, 0) ||
                !exhausted_class(by_ns, m->nquotas, p->o.ns, cls, sizeof(cls)))
                continue;
            if ((dup = seen_add(&seen, p->o.ns, name)) > 0)
                continue;
            if (dup < 0 || (!out && !(out = cJSON_CreateArray())) ||
                !(c = stand_in(p->o.ns, name, cls))) {
                cJSON_Delete(out);
                out = NULL;
                goto done;
            }
            cJSON_AddItemToArray(out, c);
        }
    }
done:
    free(seen.ns);
    free(seen.name);
    free(by_ns);
    return out;
}
