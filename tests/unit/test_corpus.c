/*
 * test_corpus.c - the rules on real drivers' own manifests and charts (../shared/corpus/real:
 * public repositories' files, unmodified, with SOURCES.md; data, not project material, so it is
 * read where it lies and the test skips when it is absent).
 *
 * Golden: every error lint reports on the corpus is a real fault, listed with the reason in
 * tests/data/corpus/expected-errors; an error not listed there fails, and so does a listed one
 * that is no longer found.  Each unit is linted as a user would: every source repository and
 * every rendered chart on its own, all charts together, the whole corpus.
 *
 * Mutation: in every driver install the corpus holds (the units where a driver DaemonSet is
 * found), each of the seed's faults that applies is planted into copies of the objects, and
 * its finding is required: slice verbs cut to get/list/watch (DriverRBACDenied), the CDI root's
 * hostPath moved off the runtime's spec directories (CDISpecDirNotShared), a DeviceClass with
 * the driver's name misspelt (SelectorMatchesNoDriver with "did you mean"), more devices
 * claimed than a node publishes (DevicesDoNotFit), a quota smaller than the claims
 * (QuotaExceeded).  The same again with every image replaced by one no profile knows: the
 * generic detection must still find each driver DaemonSet and its RBAC fault.
 */
#include "harness.h"

#include <dirent.h>
#include <sys/stat.h>

#include "model/dra.h"
#include "lint.h"
#include "formats/manifest.h"
#include "model/rbac.h"
#include "rules/rules.h"

#define CORPUS "../shared/corpus/real"
#define EXPECTED "tests/data/corpus/expected-errors"
#define MAX_UNITS 64
#define MAX_EXPECTED 128

struct units {
    char *v[MAX_UNITS]; /* paths relative to CORPUS ("." for all of it) */
    size_t n;
};

static int have_corpus(void)
{
    struct stat st;

    if (stat(CORPUS "/SOURCES.md", &st) == 0)
        return 1;
    print_message("skipped: %s is not here (CI has it)\n", CORPUS);
    return 0;
}

static void units_add(struct units *u, const char *rel)
{
    assert_true(u->n < MAX_UNITS);
    u->v[u->n++] = strdup(rel);
}

/* Directories below rel (relative to CORPUS) that hold a rendered.yaml. */
static void find_rendered(struct units *u, const char *rel, int depth)
{
    char path[2048], sub[1024];
    struct dirent *e;
    struct stat st;
    DIR *d;

    snprintf(path, sizeof(path), CORPUS "/%s/rendered.yaml", rel);
    if (stat(path, &st) == 0)
        units_add(u, rel);
    snprintf(path, sizeof(path), CORPUS "/%s", rel);
    if (depth > 6 || !(d = opendir(path)))
        return;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (snprintf(sub, sizeof(sub), "%s/%.255s", rel, e->d_name) >= (int)sizeof(sub))
            continue;
        snprintf(path, sizeof(path), CORPUS "/%s", sub);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            find_rendered(u, sub, depth + 1);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every source repository, every rendered chart, all charts, everything. */
static void list_units(struct units *u)
{
    struct dirent *e;
    struct stat st;
    char path[1024];
    DIR *d = opendir(CORPUS);

    u->n = 0;
    assert_non_null(d);
    while ((e = readdir(d))) {
        snprintf(path, sizeof(path), CORPUS "/%s", e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) || !S_ISDIR(st.st_mode))
            continue;
        if (!strcmp(e->d_name, "helm-rendered"))
            find_rendered(u, "helm-rendered", 0);
        else
            units_add(u, e->d_name);
    }
    closedir(d);
    qsort(u->v, u->n, sizeof(*u->v), cmp_str);
    units_add(u, "helm-rendered");
    units_add(u, ".");
}

static void units_free(struct units *u)
{
    while (u->n)
        free(u->v[--u->n]);
}

/* ---- golden ------------------------------------------------------------------------------ */

struct expected {
    char *key[MAX_EXPECTED]; /* "CODE KIND NS/NAME FILE:LINE" */
    int seen[MAX_EXPECTED];
    size_t n;
};

static void load_expected(struct expected *x)
{
    char *text = test_read_file(EXPECTED), *line, *save = NULL;

    memset(x, 0, sizeof(*x));
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *bar = strstr(line, " | ");
        if (*line == '#' || !*line)
            continue;
        /* Every listed error says why it is a real fault. */
        if (!bar || strlen(bar + 3) < 20)
            fail_msg("%s: no reason given for: %s", EXPECTED, line);
        *bar = '\0';
        assert_true(x->n < MAX_EXPECTED);
        x->key[x->n++] = strdup(line);
    }
    free(text);
}

/* The file of a finding relative to CORPUS. */
static const char *corpus_rel(const char *file)
{
    const char *p = file ? strstr(file, CORPUS "/") : NULL;

    if (!p)
        return file ? file : "-";
    p += strlen(CORPUS "/");
    while (!strncmp(p, "./", 2))
        p += 2;
    return p;
}

static void lint_unit(const char *unit, struct lint_result *res)
{
    char path[1024];
    const char *paths[1] = { path };
    struct lint_input in;
    static const struct rule_options ropt = RULE_OPTIONS_INIT;

    snprintf(path, sizeof(path), CORPUS "/%s", unit);
    memset(&in, 0, sizeof(in));
    in.paths = paths;
    in.npaths = 1;
    in.rules = ropt;
    assert_int_equal(lint_collect(&in, res), 0);
}

static void golden(void **state)
{
    struct units u;
    struct expected x;
    size_t i, j, errors = 0, distinct = 0;
    int bad = 0;
    (void)state;

    if (!have_corpus())
        skip();
    load_expected(&x);
    list_units(&u);
    for (i = 0; i < u.n; i++) {
        struct lint_result res;
        lint_unit(u.v[i], &res);
        for (j = 0; j < res.findings.n; j++) {
            const struct dd_finding *f = &res.findings.v[j];
            char key[1024];
            size_t k;
            if (f->severity != DD_SEV_ERROR)
                continue;
            errors++;
            snprintf(key, sizeof(key), "%s %s %s/%s %s:%d", f->code, f->obj.kind,
                     *f->obj.namespace_ ? f->obj.namespace_ : "-", f->obj.name,
                     corpus_rel(f->file), f->line);
            for (k = 0; k < x.n && strcmp(x.key[k], key); k++)
                ;
            if (k == x.n) {
                print_error("unit %s: error not known to be a real fault:\n  %s\n  %s\n",
                            u.v[i], key, f->message);
                bad = 1;
            } else {
                distinct += !x.seen[k];
                x.seen[k] = 1;
            }
        }
        lint_result_release(&res);
    }
    for (i = 0; i < x.n; i++)
        if (!x.seen[i]) {
            print_error("listed real fault no longer found: %s\n", x.key[i]);
            bad = 1;
        }
    print_message("corpus: %zu units, %zu errors reported (%zu distinct), all listed real "
                  "faults: %s\n", u.n, errors, distinct, bad ? "no" : "yes");
    for (i = 0; i < x.n; i++)
        free(x.key[i]);
    units_free(&u);
    if (bad)
        fail();
}

/* ---- mutation ---------------------------------------------------------------------------- */

/* A unit's objects as deep copies, with their files and lines: what faults are planted into. */
struct copy {
    struct mf_set set;
    cJSON *objs;            /* array of copies, owned */
    const char **file;      /* per copy, borrowed from set */
    int *line;
    size_t n;
};

static void copy_load(struct copy *c, const char *unit)
{
    char path[1024];
    size_t i;

    memset(c, 0, sizeof(*c));
    mf_set_init(&c->set);
    snprintf(path, sizeof(path), CORPUS "/%s", unit);
    mf_load_path(&c->set, path, NULL);
    c->objs = cJSON_CreateArray();
    c->file = calloc(c->set.n + 16, sizeof(*c->file));
    c->line = calloc(c->set.n + 16, sizeof(*c->line));
    assert_true(c->objs && c->file && c->line);
    for (i = 0; i < c->set.n; i++) {
        cJSON_AddItemToArray(c->objs, cJSON_Duplicate(c->set.objs[i].json, 1));
        c->file[i] = c->set.objs[i].file;
        c->line[i] = c->set.objs[i].line;
    }
    c->n = c->set.n;
}

static void copy_free(struct copy *c)
{
    cJSON_Delete(c->objs);
    free(c->file);
    free(c->line);
    mf_set_release(&c->set);
}

/* Adds a planted object (JSON text), filed beside the unit's first file so that it belongs to
 * the same install. */
static void plant(struct copy *c, const char *json)
{
    cJSON *o = cJSON_Parse(json);

    if (!o)
        fail_msg("bad planted JSON: %s", json);
    cJSON_AddItemToArray(c->objs, o);
}

static void model_build(struct copy *c, struct dra_model *m)
{
    const cJSON *it;
    size_t i = 0;

    dra_model_init(m, NULL, NULL);
    cJSON_ArrayForEach(it, c->objs) {
        assert_int_equal(dra_model_add(m, it, i < c->n ? c->file[i] : c->file[0],
                                       i < c->n ? c->line[i] : 0), DD_OK);
        i++;
    }
    assert_int_equal(dra_model_finish(m), DD_OK);
}

static void run_rules(const struct dra_model *m, struct dd_findings *f)
{
    memset(f, 0, sizeof(*f));
    assert_int_equal(dd_rules_run(m, NULL, f), 0);
}

/* The finding of code about kind/name (name NULL: any) at its rule's severity, or NULL. */
static const struct dd_finding *found(const struct dd_findings *f, const char *code,
                                      const char *kind, const char *name)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        if (!strcmp(f->v[i].code, code) && f->v[i].severity >= dd_rule_find(code)->severity &&
            (!kind || !strcmp(f->v[i].obj.kind, kind)) &&
            (!name || !strcmp(f->v[i].obj.name, name)))
            return &f->v[i];
    return NULL;
}

struct tally {
    size_t planted, found, installs, drivers;
    int bad;
};

static void expect(struct tally *t, const char *unit, const char *what, const struct dd_finding *f,
                   const struct dd_findings *all)
{
    size_t i;

    t->planted++;
    if (f) {
        t->found++;
        return;
    }
    print_error("install %s: planted %s, not found; findings were:\n", unit, what);
    for (i = 0; i < all->n; i++)
        print_error("  %s %s %s: %.160s\n", dd_severity_name(all->v[i].severity), all->v[i].code,
                    all->v[i].obj.name, all->v[i].message);
    t->bad = 1;
}

/* The DaemonSet copy (JSON) of a driver, found again by namespace and name. */
static cJSON *copy_of(struct copy *c, const struct dra_obj *o)
{
    cJSON *it;

    cJSON_ArrayForEach(it, c->objs) {
        const cJSON *md = cJSON_GetObjectItem(it, "metadata");
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(it, "kind"));
        const char *ns = cJSON_GetStringValue(cJSON_GetObjectItem(md, "namespace"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(md, "name"));
        if (kind && name && !strcmp(kind, o->kind) && !strcmp(name, o->name) &&
            !strcmp(ns ? ns : "", o->ns))
            return it;
    }
    return NULL;
}

/* Cuts the resourceslices verbs of every role bound to the driver's ServiceAccount. */
static int cut_verbs(struct copy *c, const struct dra_model *m, const struct dra_driver *d)
{
    struct rbac_grant g[16];
    size_t n = rbac_sa_grants(m, d->ds->o.ns, d->ds->service_account, g, 16), i;
    int cut = 0;

    for (i = 0; i < n && i < 16; i++) {
        cJSON *role, *rule;
        if (!g[i].role || !(role = copy_of(c, g[i].role)))
            continue;
        cJSON_ArrayForEach(rule, cJSON_GetObjectItem(role, "rules")) {
            const cJSON *res;
            int slices = 0;
            cJSON_ArrayForEach(res, cJSON_GetObjectItem(rule, "resources"))
                slices |= cJSON_IsString(res) && !strcmp(res->valuestring, "resourceslices");
            if (!slices)
                continue;
            cJSON_ReplaceItemInObject(rule, "verbs",
                                      cJSON_CreateStringArray((const char *const[]){
                                          "get", "list", "watch" }, 3));
            cut = 1;
        }
    }
    return cut;
}

/* Moves the hostPath under the driver's CDI root off every runtime spec directory. */
static int move_cdi(struct copy *c, const struct dra_driver *d)
{
    const char *vol = NULL;
    size_t i, best = 0;
    cJSON *ds, *v;

    if (d->writes_cdi != 1 || !d->cdi_root || !(ds = copy_of(c, &d->ds->o)))
        return 0;
    for (i = 0; i < d->ctr->nmounts; i++) {
        size_t n = strlen(d->ctr->mounts[i].path);
        if (n > best && !strncmp(d->cdi_root, d->ctr->mounts[i].path, n) &&
            (d->cdi_root[n] == '\0' || d->cdi_root[n] == '/')) {
            best = n;
            vol = d->ctr->mounts[i].volume;
        }
    }
    if (!vol)
        return 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
                           cJSON_GetObjectItem(ds, "spec"), "template"), "spec"), "volumes")) {
        cJSON *hp = cJSON_GetObjectItem(v, "hostPath");
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
        if (hp && name && !strcmp(name, vol)) {
            cJSON_ReplaceItemInObject(hp, "path", cJSON_CreateString("/var/lib/planted-cdi"));
            return 1;
        }
    }
    return 0;
}

/* The driver name with two neighbouring letters swapped: the seed's kind of typo. */
static void misspell(const char *name, char *out, size_t size)
{
    size_t i, n = strlen(name);

    snprintf(out, size, "%s", name);
    for (i = n / 2; i + 1 < n; i++)
        if (out[i] != out[i + 1] && out[i] != '.' && out[i + 1] != '.') {
            char t = out[i];
            out[i] = out[i + 1];
            out[i + 1] = t;
            return;
        }
}

/* One fault planted into a fresh copy of the install; fn plants it and returns 0 when it does
 * not apply. */
typedef int (*plant_fn)(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                        char *want_kind, char *want_name);

static int plant_rbac(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                      char *want_kind, char *want_name)
{
    strcpy(want_kind, "");
    strcpy(want_name, "");
    return cut_verbs(c, m, d);
}

static int plant_cdi(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                     char *want_kind, char *want_name)
{
    (void)m;
    strcpy(want_kind, "DaemonSet");
    snprintf(want_name, 256, "%s", d->ds->o.name);
    return move_cdi(c, d);
}

static int plant_typo(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                      char *want_kind, char *want_name)
{
    char typo[256], json[1024];

    (void)m;
    if (!*d->name)
        return 0;
    misspell(d->name, typo, sizeof(typo));
    snprintf(json, sizeof(json), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\","
             "\"metadata\":{\"name\":\"planted-typo\"},\"spec\":{\"selectors\":[{\"cel\":"
             "{\"expression\":\"device.driver == '%s'\"}}]}}", typo);
    plant(c, json);
    strcpy(want_kind, "DeviceClass");
    strcpy(want_name, "planted-typo");
    return 1;
}

/* Only the planted devices: the corpus may publish devices of the driver already. */
#define PLANTED_CLASS                                                                          \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"DeviceClass\",\"metadata\":{\"name\":"    \
    "\"planted-devices\"},\"spec\":{\"selectors\":[{\"cel\":{\"expression\":"                   \
    "\"device.driver == '%s' && has(device.attributes['%s'].planted)\"}}]}}"
#define PLANTED_CLAIM                                                                          \
    "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"  \
    "\"%s\",\"namespace\":\"planted\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\","     \
    "\"exactly\":{\"deviceClassName\":\"planted-devices\",\"count\":%d}}]}}}"

/* The planted class of the driver's planted devices; 0 when the driver has no name to use. */
static int plant_class(struct copy *c, const struct dra_driver *d)
{
    char json[2048];

    if (!*d->name)
        return 0;
    snprintf(json, sizeof(json), PLANTED_CLASS, d->name, d->name);
    plant(c, json);
    return 1;
}

static int plant_devices(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                         char *want_kind, char *want_name)
{
    char json[2048];

    (void)m;
    if (!plant_class(c, d))
        return 0;
    snprintf(json, sizeof(json), "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","
             "\"metadata\":{\"name\":\"planted-slice\"},\"spec\":{\"driver\":\"%s\",\"nodeName\":"
             "\"planted-node\",\"pool\":{\"name\":\"planted-node\",\"generation\":1,"
             "\"resourceSliceCount\":1},\"devices\":[{\"name\":\"d0\",\"attributes\":{\"planted\":"
             "{\"bool\":true}}},{\"name\":\"d1\",\"attributes\":{\"planted\":{\"bool\":true}}}]}}",
             d->name);
    plant(c, json);
    snprintf(json, sizeof(json), PLANTED_CLAIM, "planted-three", 3);
    plant(c, json);
    plant(c, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"planted-pod\","
             "\"namespace\":\"planted\"},\"spec\":{\"resourceClaims\":[{\"name\":\"r\","
             "\"resourceClaimName\":\"planted-three\"}],\"containers\":[{\"name\":\"c\","
             "\"image\":\"busybox\",\"resources\":{\"claims\":[{\"name\":\"r\"}]}}]}}");
    strcpy(want_kind, "Pod");
    strcpy(want_name, "planted-pod");
    return 1;
}

static int plant_quota(struct copy *c, const struct dra_model *m, const struct dra_driver *d,
                       char *want_kind, char *want_name)
{
    char json[2048];

    (void)m;
    if (!plant_class(c, d))
        return 0;
    plant(c, "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"planted\","
             "\"namespace\":\"planted\"},\"spec\":{\"hard\":{"
             "\"planted-devices.deviceclass.resource.k8s.io/devices\":\"1\"}}}");
    snprintf(json, sizeof(json), PLANTED_CLAIM, "planted-first", 1);
    plant(c, json);
    snprintf(json, sizeof(json), PLANTED_CLAIM, "planted-second", 1);
    plant(c, json);
    strcpy(want_kind, "ResourceClaim");
    strcpy(want_name, "planted-second");
    return 1;
}

static const struct {
    const char *code, *what;
    plant_fn fn;
} faults[] = {
    { "DriverRBACDenied", "slice verbs cut to get/list/watch", plant_rbac },
    { "CDISpecDirNotShared", "CDI root's hostPath moved off the spec directories", plant_cdi },
    { "SelectorMatchesNoDriver", "a DeviceClass with the driver's name misspelt", plant_typo },
    { "DevicesDoNotFit", "a pod's claim for 3 devices, 2 published on the only node", plant_devices },
    { "QuotaExceeded", "a quota of 1 device for 2 claims", plant_quota },
};

/* Replaces every container image by one that no profile knows. */
static void anonymise(struct copy *c)
{
    cJSON *o, *ctr;

    cJSON_ArrayForEach(o, c->objs) {
        cJSON *spec = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"),
                                                              "template"), "spec");
        const char *lists[2] = { "containers", "initContainers" };
        for (int k = 0; k < 2; k++)
            cJSON_ArrayForEach(ctr, cJSON_GetObjectItem(spec, lists[k]))
                if (cJSON_GetObjectItem(ctr, "image"))
                    cJSON_ReplaceItemInObject(ctr, "image",
                                              cJSON_CreateString("unknown.example/plugin:1"));
    }
}

/* Plants each fault into each driver of unit; anon: with images no profile knows. */
static void mutate_unit(const char *unit, int anon, struct tally *t)
{
    struct copy base;
    struct dra_model m;
    size_t i, k, ndrivers;

    copy_load(&base, unit);
    if (anon)
        anonymise(&base);
    model_build(&base, &m);
    ndrivers = m.ndrivers;
    dra_model_release(&m);
    copy_free(&base);
    if (!ndrivers)
        return;
    t->installs++;
    for (i = 0; i < ndrivers; i++)
        for (k = 0; k < sizeof(faults) / sizeof(faults[0]); k++) {
            struct copy c;
            struct dra_model m0, m1;
            struct dd_findings f;
            char kind[256], name[256], what[512];
            const struct dra_driver *d;
            const struct dd_finding *hit;
            /* One plant per DaemonSet for what a DaemonSet shares (its account). */
            copy_load(&c, unit);
            if (anon)
                anonymise(&c);
            model_build(&c, &m0);
            d = &m0.drivers[i];
            if (k == 0 && i && m0.drivers[i - 1].ds == d->ds) {
                dra_model_release(&m0);
                copy_free(&c);
                continue;
            }
            if (k == 0)
                t->drivers++;
            if (!faults[k].fn(&c, &m0, d, kind, name)) {
                dra_model_release(&m0);
                copy_free(&c);
                continue;
            }
            snprintf(what, sizeof(what), "%s (driver %s of DaemonSet %s%s)", faults[k].what,
                     *d->name ? d->name : "of unknown name", d->ds->o.name,
                     anon ? ", images no profile knows" : "");
            dra_model_release(&m0);
            model_build(&c, &m1);
            run_rules(&m1, &f);
            hit = found(&f, faults[k].code, *kind ? kind : NULL, *name ? name : NULL);
            if (hit && k == 2 && !strstr(hit->message, "Did you mean"))
                hit = NULL;
            expect(t, unit, what, hit, &f);
            dd_findings_release(&f);
            dra_model_release(&m1);
            copy_free(&c);
        }
}

static void mutation(void **state)
{
    struct units u;
    struct tally t = { 0 }, anon = { 0 };
    size_t i;
    (void)state;

    if (!have_corpus())
        skip();
    list_units(&u);
    /* The whole corpus and all charts at once are the same installs again. */
    for (i = 0; i + 2 < u.n; i++) {
        mutate_unit(u.v[i], 0, &t);
        mutate_unit(u.v[i], 1, &anon);
    }
    print_message("corpus: %zu installs, %zu driver DaemonSets; planted %zu faults, found %zu\n",
                  t.installs, t.drivers, t.planted, t.found);
    print_message("corpus, images no profile knows: %zu installs, %zu driver DaemonSets; planted "
                  "%zu faults, found %zu\n", anon.installs, anon.drivers, anon.planted,
                  anon.found);
    /* Generic detection finds every DaemonSet the profiles find. */
    assert_int_equal(anon.drivers, t.drivers);
    assert_true(t.installs >= 15);
    units_free(&u);
    if (t.bad || anon.bad)
        fail();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden),
        cmocka_unit_test(mutation),
    };
    return cmocka_run_group_tests_name("corpus", tests, NULL, NULL);
}
