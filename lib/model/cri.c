/*
 * cri.c - containerd's CDI settings, from a parsed config.toml.
 *
 * Defaults mirror containerd's own (pkg/cri/config/config_unix.go in 1.7,
 * internal/cri/config/config_unix.go in 2.0): the schema version picks both
 * the plugin table and the default of enable_cdi.
 */
#include "model/cri.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Same cap as the TOML reader: a real config.toml is a few KiB. */
#define CRI_MAX_FILE ((size_t)4 << 20)

struct layout {
    int version;
    const char *plugin; /* key under [plugins] */
    const char *table;  /* the same, as a TOML table name for messages */
    int cdi_default;
};

static const struct layout layouts[] = {
    {1, "cri", "plugins.cri", 0},
    {2, "io.containerd.grpc.v1.cri", "plugins.\"io.containerd.grpc.v1.cri\"", 0},
    {3, "io.containerd.cri.v1.runtime", "plugins.\"io.containerd.cri.v1.runtime\"", 1},
};

static const char *const default_dirs[] = {"/etc/cdi", "/var/run/cdi"};

/*
 * What containerd releases do with enable_cdi, from the oldest; a version takes the last
 * row at or below it.  Sources: containerd's RELEASES.md (deprecated in 2.2, removed in
 * 2.4: "CDI support will always be enabled") and its CRI config (1.7: pkg/cri/config,
 * default false; 2.x: internal/cri/config, default true); measured on 1.7.35 and 2.4.2
 * (2.4.2 logs "Ignoring unknown key in TOML ... key=enable_cdi" and injects anyway).
 */
static const struct runtime_cdi {
    int major, minor;
    int layout;     /* the config schema of its defaults */
    int key_read;   /* 0: enable_cdi is not read, CDI is always on */
} containerd_cdi[] = {
    {1, 0, 2, 1},
    {2, 0, 3, 1},
    {2, 4, 3, 0},
};

/* The row for "containerd://MAJOR.MINOR...", or NULL for another runtime. */
static const struct runtime_cdi *runtime_row(const char *runtime_version)
{
    static const char prefix[] = "containerd://";
    const struct runtime_cdi *row = NULL;
    unsigned major, minor;
    size_t i;

    if (!runtime_version || strncmp(runtime_version, prefix, sizeof(prefix) - 1) ||
        sscanf(runtime_version + sizeof(prefix) - 1, "%u.%u", &major, &minor) != 2)
        return NULL;
    for (i = 0; i < sizeof(containerd_cdi) / sizeof(containerd_cdi[0]); i++)
        if ((int)major > containerd_cdi[i].major ||
            ((int)major == containerd_cdi[i].major && (int)minor >= containerd_cdi[i].minor))
            row = &containerd_cdi[i];
    return row;
}

static enum dd_rc add_dir(struct cri_config *out, const char *dir, int line, struct dd_err *err)
{
    if (out->nspec_dirs == CRI_MAX_SPEC_DIRS)
        return dd_failf_at(err, DD_ETOOBIG, line, 0, "line %d: cdi_spec_dirs has more than %d entries",
                           line, CRI_MAX_SPEC_DIRS);
    out->spec_dirs[out->nspec_dirs] = strdup(dir);
    if (!out->spec_dirs[out->nspec_dirs])
        return dd_failf(err, DD_ENOMEM, "out of memory");
    out->nspec_dirs++;
    return DD_OK;
}

static enum dd_rc read_dirs(const struct toml_value *v, struct cri_config *out, struct dd_err *err)
{
    size_t i;
    enum dd_rc rc;

    if (v->type != TOML_ARRAY)
        goto type;
    for (i = 0; i < v->u.arr.n; i++)
        if (v->u.arr.items[i]->type != TOML_STRING)
            goto type;
    out->spec_dirs_line = v->line;
    for (i = 0; i < v->u.arr.n; i++)
        if ((rc = add_dir(out, v->u.arr.items[i]->u.s, v->line, err)))
            return rc;
    return DD_OK;
type:
    return dd_failf_at(err, DD_ETYPE, v->line, 0,
                       "line %d: cdi_spec_dirs must be an array of strings", v->line);
}

static const struct layout *layout_for(int version)
{
    size_t i;

    for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
        if (layouts[i].version == version)
            return &layouts[i];
    return NULL;
}

/* Defaults of a layout: what containerd does when the file says nothing. */
static enum dd_rc set_defaults(struct cri_config *out, const struct layout *l, struct dd_err *err)
{
    size_t i;
    enum dd_rc rc;

    out->version = l->version;
    out->plugin = l->plugin;
    out->table = l->table;
    out->enable_cdi = l->cdi_default;
    for (i = 0; i < sizeof(default_dirs) / sizeof(default_dirs[0]); i++)
        if ((rc = add_dir(out, default_dirs[i], 0, err)))
            return rc;
    return DD_OK;
}

/* An explicit list replaces the defaults. */
static void clear_dirs(struct cri_config *out)
{
    size_t i;

    for (i = 0; i < out->nspec_dirs; i++)
        free(out->spec_dirs[i]);
    out->nspec_dirs = 0;
}

static enum dd_rc from_toml(const struct toml_value *root, struct cri_config *out,
                            struct dd_err *err)
{
    const struct toml_value *v, *plugins, *plugin;
    const struct layout *lay = NULL;
    int64_t version = 1;
    enum dd_rc rc;

    if (!root || root->type != TOML_TABLE)
        return dd_failf(err, DD_EINVAL, "no configuration table");
    /* containerd reads a config without `version` as schema 1. */
    v = toml_get(root, "version");
    if (v && v->type != TOML_INT)
        return dd_failf_at(err, DD_ETYPE, v->line, 0, "line %d: version must be an integer",
                           v->line);
    if (v)
        version = v->u.i;
    if (!(lay = layout_for((int)version)) || version != (int)version)
        return dd_failf_at(err, DD_EINVAL, v->line, 0,
                           "line %d: unsupported containerd config version %lld "
                           "(known: 1, 2 and 3)",
                           v->line, (long long)version);
    if ((rc = set_defaults(out, lay, err)))
        return rc;

    plugins = toml_get(root, "plugins");
    if (plugins && plugins->type != TOML_TABLE)
        return dd_failf_at(err, DD_ETYPE, plugins->line, 0, "line %d: plugins must be a table",
                           plugins->line);
    plugin = toml_get(plugins, lay->plugin);
    if (plugin && plugin->type != TOML_TABLE)
        return dd_failf_at(err, DD_ETYPE, plugin->line, 0, "line %d: %s must be a table",
                           plugin->line, lay->table);

    v = toml_get(plugin, "enable_cdi");
    if (v) {
        if (v->type != TOML_BOOL)
            return dd_failf_at(err, DD_ETYPE, v->line, 0, "line %d: enable_cdi must be a boolean",
                               v->line);
        out->enable_cdi = v->u.b;
        out->enable_cdi_line = v->line;
    }
    v = toml_get(plugin, "cdi_spec_dirs");
    if (!v)
        return DD_OK;
    clear_dirs(out);
    return read_dirs(v, out, err);
}

enum dd_rc cri_config_from_toml(const struct toml_value *root, struct cri_config *out,
                                struct dd_err *err)
{
    enum dd_rc rc;

    if (!out)
        return dd_failf(err, DD_EINVAL, "no output configuration");
    memset(out, 0, sizeof(*out));
    dd_err_clear(err);
    rc = from_toml(root, out, err);
    if (rc)
        cri_config_release(out);
    return rc;
}

/* Reads at most CRI_MAX_FILE bytes of path into a new buffer. */
static enum dd_rc read_file(const char *path, char **buf, size_t *len, struct dd_err *err)
{
    size_t cap = 8192, n = 0;
    char *b = NULL, *nb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    enum dd_rc rc = DD_ENOMEM;

    if (fd < 0)
        return dd_failf(err, DD_EIO, "%s: cannot open: %s", path, strerror(errno));
    for (;;) {
        ssize_t r;

        if (n == cap || !b) {
            if (b)
                cap *= 2;
            nb = realloc(b, cap);
            if (!nb) {
                dd_failf(err, DD_ENOMEM, "%s: out of memory", path);
                goto out;
            }
            b = nb;
        }
        r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = dd_failf(err, DD_EIO, "%s: cannot read: %s", path, strerror(errno));
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        /* One byte past the cap is enough to know the file is too big. */
        if (n > CRI_MAX_FILE) {
            rc = dd_failf(err, DD_ETOOBIG, "%s: larger than %zu bytes", path, CRI_MAX_FILE);
            goto out;
        }
    }
    *buf = b;
    *len = n;
    b = NULL;
    rc = DD_OK;
out:
    free(b);
    close(fd);
    return rc;
}

/* Turns "line N: text" into "path:N: text", and anything else into
 * "path: text". */
static void prefix_path(struct dd_err *err, const char *path)
{
    char msg[DD_ERR_MSG_MAX];
    int n = 0;

    memcpy(msg, err->msg, sizeof(msg));
    if (err->line > 0 && sscanf(msg, "line %*d: %n", &n) == 0 && n > 0)
        dd_failf(err, err->rc, "%s:%d: %s", path, err->line, msg + n);
    else
        dd_failf(err, err->rc, "%s: %s", path, msg);
}

enum dd_rc cri_config_load(const char *path, struct cri_config *out, struct dd_err *err)
{
    struct dd_err local;
    struct toml_value *root;
    char *buf = NULL;
    size_t len = 0;
    enum dd_rc rc;

    if (!err)
        err = &local;
    dd_err_clear(err);
    if (!out)
        return dd_failf(err, DD_EINVAL, "no output configuration");
    memset(out, 0, sizeof(*out));
    if (!path)
        return dd_failf(err, DD_EINVAL, "no path");
    if ((rc = read_file(path, &buf, &len, err)))
        return rc;
    root = toml_parse(buf, len, err);
    free(buf);
    if (!root) {
        prefix_path(err, path);
        return err->rc;
    }
    rc = cri_config_from_toml(root, out, err);
    toml_free(root);
    if (rc) {
        prefix_path(err, path);
        return rc;
    }
    out->file = strdup(path);
    if (!out->file) {
        cri_config_release(out);
        return dd_failf(err, DD_ENOMEM, "%s: out of memory", path);
    }
    return DD_OK;
}

cJSON *cri_config_to_json(const struct cri_config *c)
{
    cJSON *o = cJSON_CreateObject(), *dirs;
    size_t i;

    if (!o)
        return NULL;
    if ((c->file && !cJSON_AddStringToObject(o, "source", c->file)) ||
        !cJSON_AddNumberToObject(o, "version", c->version) ||
        !cJSON_AddBoolToObject(o, "enableCDI", c->enable_cdi) ||
        !cJSON_AddNumberToObject(o, "enableCDILine", c->enable_cdi_line) ||
        (c->runtime && !cJSON_AddStringToObject(o, "runtime", c->runtime)) ||
        (c->enable_cdi_ignored && !cJSON_AddBoolToObject(o, "enableCDIIgnored", 1)) ||
        (c->cdi_enabled_at[0] && !cJSON_AddStringToObject(o, "cdiEnabledAt", c->cdi_enabled_at)) ||
        !(dirs = cJSON_AddArrayToObject(o, "specDirs")))
        goto oom;
    for (i = 0; i < c->nspec_dirs; i++) {
        cJSON *d = cJSON_CreateString(c->spec_dirs[i]);
        if (!d || !cJSON_AddItemToArray(dirs, d)) {
            cJSON_Delete(d);
            goto oom;
        }
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

enum dd_rc cri_config_from_json(const cJSON *facts, struct cri_config *out, struct dd_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(facts, "version");
    const cJSON *cdi = cJSON_GetObjectItemCaseSensitive(facts, "enableCDI");
    const cJSON *dirs = cJSON_GetObjectItemCaseSensitive(facts, "specDirs");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(facts, "source");
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(facts, "enableCDILine");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(facts, "runtime");
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(facts, "cdiEnabledAt");
    const struct layout *l;
    const cJSON *d;
    enum dd_rc rc;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsNumber(v) || !(l = layout_for(v->valueint)) || !cJSON_IsBool(cdi) ||
        (dirs && !cJSON_IsArray(dirs)))
        return dd_failf(err, DD_ETYPE, "node CDI facts need a known version, a boolean "
                        "enableCDI and an array specDirs");
    if ((rc = set_defaults(out, l, err)))
        goto fail;
    out->enable_cdi = cJSON_IsTrue(cdi);
    if (cJSON_IsNumber(line) && line->valueint > 0)
        out->enable_cdi_line = line->valueint;
    if (dirs) {
        clear_dirs(out);
        cJSON_ArrayForEach(d, dirs) {
            if (!cJSON_IsString(d)) {
                rc = dd_failf(err, DD_ETYPE, "node CDI facts: specDirs must hold strings");
                goto fail;
            }
            if ((rc = add_dir(out, d->valuestring, 0, err)))
                goto fail;
        }
    }
    if (cJSON_IsString(src) && !(out->file = strdup(src->valuestring))) {
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
        goto fail;
    }
    out->enable_cdi_ignored = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(facts, "enableCDIIgnored"));
    /* Only a well-formed UTC timestamp: the diagnosis compares it with containers' start. */
    if (cJSON_IsString(at) && strlen(at->valuestring) == 20 && at->valuestring[19] == 'Z')
        memcpy(out->cdi_enabled_at, at->valuestring, 21);
    if (cJSON_IsString(rt) && !(out->runtime = strdup(rt->valuestring))) {
        rc = dd_failf(err, DD_ENOMEM, "out of memory");
        goto fail;
    }
    return DD_OK;
fail:
    cri_config_release(out);
    return rc;
}

enum dd_rc cri_config_infer(const char *runtime_version, struct cri_config *out)
{
    const struct runtime_cdi *row = runtime_row(runtime_version);
    enum dd_rc rc;

    memset(out, 0, sizeof(*out));
    if (!row)
        return DD_ENOTFOUND;
    rc = set_defaults(out, layout_for(row->layout), NULL);
    if (rc == DD_OK && !(out->file = strdup(runtime_version)))
        rc = DD_ENOMEM;
    if (rc == DD_OK)
        rc = cri_config_apply_runtime(out, runtime_version);
    if (rc)
        cri_config_release(out);
    return rc;
}

enum dd_rc cri_config_apply_runtime(struct cri_config *c, const char *runtime_version)
{
    const struct runtime_cdi *row = runtime_row(runtime_version);

    if (!runtime_version)
        return DD_OK;
    if (!c->runtime || strcmp(c->runtime, runtime_version)) {
        char *v = strdup(runtime_version);
        if (!v)
            return DD_ENOMEM;
        free(c->runtime);
        c->runtime = v;
    }
    if (row && !row->key_read && !c->enable_cdi) {
        c->enable_cdi = 1;
        c->enable_cdi_ignored = 1;
    }
    return DD_OK;
}

/* Length of s without trailing slashes, keeping "/" itself. */
static size_t trimmed_len(const char *s)
{
    size_t n = strlen(s);

    while (n > 1 && s[n - 1] == '/')
        n--;
    return n;
}

int cri_config_has_spec_dir(const struct cri_config *c, const char *dir)
{
    size_t i, n;

    if (!c || !dir)
        return 0;
    n = trimmed_len(dir);
    for (i = 0; i < c->nspec_dirs; i++)
        if (trimmed_len(c->spec_dirs[i]) == n && memcmp(c->spec_dirs[i], dir, n) == 0)
            return 1;
    return 0;
}

void cri_config_release(struct cri_config *c)
{
    size_t i;

    if (!c)
        return;
    free(c->file);
    free(c->runtime);
    for (i = 0; i < c->nspec_dirs; i++)
        free(c->spec_dirs[i]);
    memset(c, 0, sizeof(*c));
}
