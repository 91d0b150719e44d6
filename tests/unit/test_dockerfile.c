/*
 * test_dockerfile.c - the container image stays in step with the build and the
 * deploy manifests:
 *
 *   - the Dockerfile's build stage runs exactly the Makefile's steps: the `deps`
 *     recipe (scripts/deps.sh), then `make` with targets the Makefile's `all`
 *     builds, no variable overrides, and copies what that target produces;
 *   - every pkg-config module the Makefile links comes from a package deps.sh
 *     installs (dpkg -S on the module's .pc file);
 *   - the runtime stage installs, by name, the Debian package of every library
 *     the binary links (NEEDED), the packages of everything `ldd` lists are in
 *     the dependency closure of what it installs, and it installs nothing the
 *     binary does not load (dpkg -S on each library, dpkg's Depends for the
 *     closure); build and runtime stages use the same Debian release;
 *   - it runs as the non-root uid the manifests in deploy/ name (runAsUser);
 *   - the image tag of every kustomization in deploy/ is the content of VERSION;
 *   - .dockerignore keeps the host's build output out and the sources in.
 *
 * The library checks read build/release/dra-doctor (what `make dra-doctor` in
 * the image builds); they are skipped when dpkg is missing or the host is not
 * the image's Debian release, since package names differ between releases.
 */
#include "harness.h"

#include <ctype.h>
#include <dirent.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "formats/json.h"
#include "formats/manifest.h"

#define IMAGE "ghcr.io/dra-doctor/dra-doctor"
#define RELEASE_BIN "build/release/dra-doctor"
#define MAX_INSTR 256
#define MAX_STAGES 8

/* ---- small string sets ---------------------------------------------------- */

struct strs {
    char **v;
    size_t n, cap;
};

static int strs_has(const struct strs *s, const char *x)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], x))
            return 1;
    return 0;
}

/* Adds x (copied) unless present; returns 1 when added. */
static int strs_add(struct strs *s, const char *x)
{
    if (strs_has(s, x))
        return 0;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        assert_non_null(s->v);
    }
    s->v[s->n] = strdup(x);
    assert_non_null(s->v[s->n]);
    s->n++;
    return 1;
}

static void strs_free(struct strs *s)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* Splits s on whitespace into words (appended to w). */
static void split_words(struct strs *w, const char *s)
{
    char buf[4096], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, " \t\r\n", &save); tok; tok = strtok_r(NULL, " \t\r\n", &save)) {
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 16;
            w->v = realloc(w->v, w->cap * sizeof(*w->v));
            assert_non_null(w->v);
        }
        w->v[w->n++] = strdup(tok);
    }
}

static char *trim(char *s)
{
    size_t n;

    while (isspace((unsigned char)*s))
        s++;
    n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A shell command's stdout (malloc'd, NUL-terminated); its exit status in *status. */
static char *cmd_out(int *status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *cmd_out(int *status, const char *fmt, ...)
{
    char cmd[4096], *buf;
    size_t len = 0, cap = 1 << 16, n;
    va_list ap;
    FILE *p;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    p = popen(cmd, "r");
    assert_non_null(p);
    buf = malloc(cap);
    assert_non_null(buf);
    while ((n = fread(buf + len, 1, cap - 1 - len, p)) > 0) {
        len += n;
        if (len == cap - 1) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    buf[len] = '\0';
    st = pclose(p);
    if (status)
        *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

/* ---- the Dockerfile ---------------------------------------------------------- */

struct instr {
    char kw[16];  /* upper case */
    char *args;   /* continuation lines joined, trimmed */
    int stage;    /* index of the FROM it follows; -1 before the first */
};

struct dockerfile {
    struct instr in[MAX_INSTR];
    size_t n;
    int nstages;
    char from[MAX_STAGES][256]; /* each stage's image */
    char name[MAX_STAGES][64];  /* its AS name, or "" */
};

static void df_add(struct dockerfile *d, char *text)
{
    struct instr *in;
    char *s = trim(text), *rest;
    size_t k;

    if (!*s)
        return;
    assert_true(d->n < MAX_INSTR);
    in = &d->in[d->n++];
    rest = s + strcspn(s, " \t");
    for (k = 0; s + k < rest && k < sizeof(in->kw) - 1; k++)
        in->kw[k] = (char)toupper((unsigned char)s[k]);
    in->kw[k] = '\0';
    in->args = strdup(trim(rest));
    assert_non_null(in->args);
    if (!strcmp(in->kw, "FROM")) {
        struct strs w = { 0 };
        size_t i = 0;
        assert_true(d->nstages < MAX_STAGES);
        split_words(&w, in->args);
        while (i < w.n && !strncmp(w.v[i], "--", 2)) /* --platform=... */
            i++;
        assert_true(i < w.n);
        snprintf(d->from[d->nstages], sizeof(d->from[0]), "%s", w.v[i]);
        if (i + 2 < w.n && !strcasecmp(w.v[i + 1], "AS"))
            snprintf(d->name[d->nstages], sizeof(d->name[0]), "%s", w.v[i + 2]);
        strs_free(&w);
        d->nstages++;
    }
    in->stage = d->nstages - 1;
}

/* Instructions with backslash continuations joined; comment and blank lines dropped
 * (also inside a continuation, as Docker does). */
static void df_load(struct dockerfile *d, const char *path)
{
    char *text = test_read_file(path), *p = text, *cur = NULL;
    size_t curlen = 0;

    memset(d, 0, sizeof(*d));
    while (*p) {
        size_t len = strcspn(p, "\n"), n;
        char *line = strndup(p, len), *s;
        int cont = 0;

        assert_non_null(line);
        p += len + (p[len] == '\n');
        s = trim(line);
        if (*s == '#' || !*s) {
            free(line);
            continue;
        }
        n = strlen(s);
        if (s[n - 1] == '\\') {
            s[--n] = '\0';
            cont = 1;
        }
        cur = realloc(cur, curlen + n + 2);
        assert_non_null(cur);
        memcpy(cur + curlen, s, n);
        curlen += n;
        cur[curlen++] = ' ';
        cur[curlen] = '\0';
        free(line);
        if (!cont) {
            df_add(d, cur);
            free(cur);
            cur = NULL;
            curlen = 0;
        }
    }
    if (cur)
        df_add(d, cur);
    free(cur);
    free(text);
}

static void df_free(struct dockerfile *d)
{
    size_t i;

    for (i = 0; i < d->n; i++)
        free(d->in[i].args);
}

/* The Debian release of "debian:bookworm" / "debian:bookworm-slim", failing otherwise. */
static void debian_codename(const char *image, char *out, size_t size)
{
    const char *t;

    if (strncmp(image, "debian:", 7) && strncmp(image, "docker.io/library/debian:", 25))
        fail_msg("stage image %s is not a Debian image", image);
    t = strchr(image, ':') + 1;
    snprintf(out, size, "%.*s", (int)strcspn(t, "-@"), t);
}

/* The packages an `apt-get install` in the runtime stage names. */
static void runtime_packages(const struct dockerfile *d, struct strs *pkgs)
{
    size_t i, j;

    for (i = 0; i < d->n; i++) {
        struct strs w = { 0 };
        if (d->in[i].stage != d->nstages - 1 || strcmp(d->in[i].kw, "RUN"))
            continue;
        split_words(&w, d->in[i].args);
        for (j = 0; j + 1 < w.n; j++) {
            if (strcmp(w.v[j], "apt-get") || strcmp(w.v[j + 1], "install"))
                continue;
            for (j += 2; j < w.n; j++) {
                if (!strcmp(w.v[j], "&&") || !strcmp(w.v[j], ";") || !strcmp(w.v[j], "||") ||
                    !strcmp(w.v[j], "|"))
                    break;
                if (w.v[j][0] != '-')
                    strs_add(pkgs, w.v[j]);
            }
        }
        strs_free(&w);
    }
}

/* ---- the Makefile ------------------------------------------------------------ */

/* The value of "NAME := ..." (or "NAME = ...", "NAME ?= ...") into out. */
static void mk_var(const char *mk, const char *name, char *out, size_t size)
{
    const char *p = mk;
    size_t n = strlen(name);

    for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p + n;
        if (strncmp(p, name, n) || (*q != ' ' && *q != '\t' && *q != ':' && *q != '=' &&
                                    *q != '?'))
            continue;
        q += strspn(q, " \t");
        if (!strncmp(q, ":=", 2) || !strncmp(q, "?=", 2))
            q += 2;
        else if (*q == '=')
            q++;
        else
            continue;
        q += strspn(q, " \t");
        snprintf(out, size, "%.*s", (int)strcspn(q, "\n"), q);
        return;
    }
    fail_msg("the Makefile defines no %s", name);
}

/* The rule line "target: prerequisites" (start of line), or NULL. */
static const char *mk_rule(const char *mk, const char *target)
{
    const char *p = mk;
    size_t n = strlen(target);

    for (; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, target, n) && p[n] == ':' && p[n + 1] != '=')
            return p;
    return NULL;
}

/* The recipe lines (tab-indented) of target, each trimmed, into lines. */
static void mk_recipe(const char *mk, const char *target, struct strs *lines)
{
    const char *p = mk_rule(mk, target);

    if (!p)
        fail_msg("the Makefile has no rule for %s", target);
    for (p = strchr(p, '\n'); p && p[1] == '\t'; p = strchr(p + 1, '\n')) {
        char buf[1024];
        snprintf(buf, sizeof(buf), "%.*s", (int)strcspn(p + 2, "\n"), p + 2);
        strs_add(lines, trim(buf));
    }
}

/* ---- dpkg ---------------------------------------------------------------------- */

static int have_dpkg(void)
{
    int st;
    free(cmd_out(&st, "command -v dpkg-query >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1"));
    return st == 0;
}

/* Packages owning files that match the glob (dpkg -S), names without :arch. */
static void dpkg_owners(const char *glob, struct strs *pkgs)
{
    char *o = cmd_out(NULL, "dpkg -S '%s' 2>/dev/null", glob), *line, *save = NULL;

    for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *sep = strstr(line, ": "), *tok, *save2 = NULL;
        if (!sep || !strncmp(line, "diversion ", 10))
            continue;
        *sep = '\0';
        for (tok = strtok_r(line, ", ", &save2); tok; tok = strtok_r(NULL, ", ", &save2)) {
            tok[strcspn(tok, ":")] = '\0';
            strs_add(pkgs, tok);
        }
    }
    free(o);
}

/* The one package that owns a library (path as ldd prints it); fails otherwise. */
static void lib_package(const char *path, char *pkg, size_t size)
{
    struct strs owners = { 0 };
    char glob[1024], dir[512];
    const char *base = strrchr(path, '/'), *d;

    assert_non_null(base);
    /* "*" + "/x86_64-linux-gnu/libc.so.6": the library's own multiarch directory, whether
     * ldd found it through /lib or /usr/lib (and not /lib32's copy). */
    snprintf(dir, sizeof(dir), "%.*s", (int)(base - path), path);
    d = strrchr(dir, '/');
    snprintf(glob, sizeof(glob), "*%s%s", d ? d : "", base);
    dpkg_owners(glob, &owners);
    if (owners.n != 1)
        fail_msg("%s: expected one Debian package to own it (dpkg -S '%s'), found %zu", path,
                 glob, owners.n);
    snprintf(pkg, size, "%s", owners.v[0]);
    strs_free(&owners);
}

/* What dpkg knows of the installed packages. */
struct pkg {
    char *name, *deps, *provides, *priority; /* deps: Pre-Depends and Depends */
};

struct pkgdb {
    struct pkg *v;
    size_t n;
};

static void pkgdb_load(struct pkgdb *db)
{
    char *o = cmd_out(NULL, "dpkg-query -W -f='${db:Status-Abbrev}\\t${Package}\\t${Priority}"
                            "\\t${Pre-Depends}, ${Depends}\\t${Provides}\\n' 2>/dev/null"),
         *line, *save = NULL;
    size_t cap = 0;

    memset(db, 0, sizeof(*db));
    for (line = strtok_r(o, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[5] = { 0 }, *p = line;
        int i;
        for (i = 0; i < 5 && p; i++) {
            f[i] = p;
            p = strchr(p, '\t');
            if (p)
                *p++ = '\0';
        }
        if (i < 5 || strncmp(f[0], "ii", 2))
            continue;
        if (db->n == cap) {
            cap = cap ? 2 * cap : 256;
            db->v = realloc(db->v, cap * sizeof(*db->v));
            assert_non_null(db->v);
        }
        db->v[db->n].name = strdup(f[1]);
        db->v[db->n].priority = strdup(f[2]);
        db->v[db->n].deps = strdup(f[3]);
        db->v[db->n].provides = strdup(f[4]);
        db->n++;
    }
    free(o);
}

static void pkgdb_free(struct pkgdb *db)
{
    size_t i;

    for (i = 0; i < db->n; i++) {
        free(db->v[i].name);
        free(db->v[i].deps);
        free(db->v[i].provides);
        free(db->v[i].priority);
    }
    free(db->v);
}

/* The entry of an installed package (the first architecture's), or NULL. */
static const struct pkg *pkgdb_find(const struct pkgdb *db, const char *name)
{
    size_t i;

    for (i = 0; i < db->n; i++)
        if (!strcmp(db->v[i].name, name))
            return &db->v[i];
    return NULL;
}

/* Every package name in a Depends-style field ("a (>= 1) | b, c:any"), into out. */
static void dep_names(const char *field, struct strs *out)
{
    char buf[8192], *tok, *save = NULL;

    snprintf(buf, sizeof(buf), "%s", field);
    for (tok = strtok_r(buf, ",|", &save); tok; tok = strtok_r(NULL, ",|", &save)) {
        char *t = trim(tok);
        t[strcspn(t, " (:")] = '\0';
        if (*t)
            strs_add(out, t);
    }
}

/* The installed packages apt would bring with start (Depends and Pre-Depends, every
 * alternative, virtual packages through Provides), start included. */
static void pkg_closure(const struct pkgdb *db, const struct strs *start, struct strs *out)
{
    size_t i, j;

    for (i = 0; i < start->n; i++)
        strs_add(out, start->v[i]);
    for (i = 0; i < out->n; i++) {
        struct strs deps = { 0 };
        const struct pkg *k = pkgdb_find(db, out->v[i]);
        if (!k)
            continue;
        dep_names(k->deps, &deps);
        for (j = 0; j < deps.n; j++) {
            size_t m;
            if (pkgdb_find(db, deps.v[j])) {
                strs_add(out, deps.v[j]);
                continue;
            }
            for (m = 0; m < db->n; m++) { /* a virtual package: its providers */
                struct strs prov = { 0 };
                dep_names(db->v[m].provides, &prov);
                if (strs_has(&prov, deps.v[j]))
                    strs_add(out, db->v[m].name);
                strs_free(&prov);
            }
        }
        strs_free(&deps);
    }
}

/* 1 when the host runs the Debian release the image is built on (else the names differ). */
static int host_is(const char *codename)
{
    char *os = test_read_file("/etc/os-release"), want[128];
    int yes;

    snprintf(want, sizeof(want), "\nVERSION_CODENAME=%s\n", codename);
    yes = strstr(os, want) != NULL;
    free(os);
    return yes;
}

/* ---- tests ----------------------------------------------------------------------- */

static void build_stage_runs_the_makefile_steps(void **state)
{
    struct dockerfile d;
    struct strs deps_recipe = { 0 }, runs = { 0 }, words = { 0 }, all = { 0 };
    char *mk = test_read_file("Makefile"), all_line[512], target[256] = "", workdir[512] = "",
         codename[64], codename2[64];
    const char *rule;
    size_t i, j;
    int copied_deps = 0, copies = 0;

    (void)state;
    df_load(&d, "Dockerfile");
    assert_true(d.nstages >= 2);
    debian_codename(d.from[0], codename, sizeof(codename));
    debian_codename(d.from[d.nstages - 1], codename2, sizeof(codename2));
    if (strcmp(codename, codename2))
        fail_msg("build stage on Debian %s, runtime stage on %s: the runtime's libraries must "
                 "be the ones the binary was linked against", codename, codename2);
    if (!d.name[0][0])
        fail_msg("the build stage (FROM %s) has no AS name for COPY --from", d.from[0]);

    /* The Makefile's steps: `make deps` runs exactly one command, and `make` builds `all`. */
    mk_recipe(mk, "deps", &deps_recipe);
    if (deps_recipe.n != 1 || strcmp(deps_recipe.v[0], "scripts/deps.sh"))
        fail_msg("the Makefile's deps recipe is no longer just scripts/deps.sh (%s): the "
                 "Dockerfile's build stage copies and runs that script; update both",
                 deps_recipe.n ? deps_recipe.v[0] : "empty");

    for (i = 0; i < d.n; i++) {
        const struct instr *in = &d.in[i];
        if (in->stage != 0)
            continue;
        if (!strcmp(in->kw, "RUN")) {
            strs_add(&runs, in->args);
        } else if (!strcmp(in->kw, "WORKDIR")) {
            snprintf(workdir, sizeof(workdir), "%s", in->args);
        } else if (!strcmp(in->kw, "COPY") || !strcmp(in->kw, "ADD")) {
            struct strs w = { 0 };
            split_words(&w, in->args);
            assert_true(w.n >= 2);
            for (j = 0; j + 1 < w.n; j++)
                if (!strcmp(w.v[j], "scripts/deps.sh") || !strcmp(w.v[j], ".") ||
                    !strcmp(w.v[j], "scripts") || !strcmp(w.v[j], "scripts/"))
                    copied_deps |= runs.n == 0; /* before the first RUN */
            copies++;
            strs_free(&w);
        } else if (strcmp(in->kw, "FROM") && strcmp(in->kw, "ENV") && strcmp(in->kw, "ARG") &&
                   strcmp(in->kw, "LABEL")) {
            fail_msg("unexpected %s %s in the build stage", in->kw, in->args);
        }
    }
    if (!copied_deps)
        fail_msg("the build stage runs scripts/deps.sh without copying it in first");
    assert_true(copies >= 2);
    /* Exactly two commands: the deps recipe, then make. */
    if (runs.n != 2)
        fail_msg("the build stage should RUN exactly `%s` and `make TARGET`, it runs %zu "
                 "commands", deps_recipe.v[0], runs.n);
    if (strcmp(runs.v[0], deps_recipe.v[0]) &&
        !(runs.v[0][0] == '.' && runs.v[0][1] == '/' && !strcmp(runs.v[0] + 2, deps_recipe.v[0])))
        fail_msg("the build stage's first RUN is \"%s\", the Makefile's deps recipe \"%s\"",
                 runs.v[0], deps_recipe.v[0]);

    split_words(&words, runs.v[1]);
    assert_true(words.n >= 2);
    assert_string_equal(words.v[0], "make");
    rule = mk_rule(mk, "all");
    assert_non_null(rule);
    snprintf(all_line, sizeof(all_line), "%.*s", (int)strcspn(rule + 4, "\n"), rule + 4);
    split_words(&all, all_line);
    for (j = 1; j < words.n; j++) {
        if (strchr(words.v[j], '=') || words.v[j][0] == '-')
            fail_msg("`%s` overrides the Makefile (%s): the image must build with its flags",
                     runs.v[1], words.v[j]);
        if (!mk_rule(mk, words.v[j]))
            fail_msg("`%s`: the Makefile has no target %s", runs.v[1], words.v[j]);
        if (!strs_has(&all, words.v[j]))
            fail_msg("`%s`: %s is not one of what `make` (all: %s) builds", runs.v[1],
                     words.v[j], all_line);
        if (!strcmp(words.v[j], "dra-doctor"))
            snprintf(target, sizeof(target), "%s", words.v[j]);
    }
    if (!target[0])
        fail_msg("`%s` does not build the dra-doctor target", runs.v[1]);

    /* The runtime copies what that target made: ./dra-doctor in the build's WORKDIR. */
    {
        char from[128], want[1024];
        int found = 0;
        snprintf(from, sizeof(from), "--from=%s", d.name[0]);
        snprintf(want, sizeof(want), "%s/%s", workdir, target);
        for (i = 0; i < d.n; i++) {
            struct strs w = { 0 };
            if (d.in[i].stage != d.nstages - 1 || strcmp(d.in[i].kw, "COPY"))
                continue;
            split_words(&w, d.in[i].args);
            if (w.n == 3 && !strcmp(w.v[0], from)) {
                if (strcmp(w.v[1], want))
                    fail_msg("the runtime copies %s from the build stage, `make %s` in %s "
                             "makes %s", w.v[1], target, workdir, want);
                found = 1;
            }
            strs_free(&w);
        }
        if (!found)
            fail_msg("the runtime stage copies nothing from the build stage (COPY %s ...)", from);
    }
    strs_free(&deps_recipe);
    strs_free(&runs);
    strs_free(&words);
    strs_free(&all);
    df_free(&d);
    free(mk);
}

static void makefile_libraries_come_from_deps_sh(void **state)
{
    char *mk = test_read_file("Makefile"), *deps = test_read_file("scripts/deps.sh"), pkgs[512],
         *q, *end, list[2048];
    struct strs mods = { 0 }, installed = { 0 };
    size_t i, j;

    (void)state;
    if (!have_dpkg())
        skip();
    /* deps.sh: PKGS="..." (may span lines). */
    q = strstr(deps, "PKGS=\"");
    assert_non_null(q);
    q += 6;
    end = strchr(q, '"');
    assert_non_null(end);
    snprintf(list, sizeof(list), "%.*s", (int)(end - q), q);
    split_words(&installed, list);

    mk_var(mk, "PKGS", pkgs, sizeof(pkgs));
    split_words(&mods, pkgs);
    assert_true(mods.n > 0);
    for (i = 0; i < mods.n; i++) {
        struct strs owners = { 0 };
        char glob[256];
        int ok = 0;
        snprintf(glob, sizeof(glob), "*/pkgconfig/%s.pc", mods.v[i]);
        dpkg_owners(glob, &owners);
        if (!owners.n)
            fail_msg("no installed package provides pkg-config module %s (Makefile PKGS); "
                     "add its -dev package to scripts/deps.sh and run make deps", mods.v[i]);
        for (j = 0; j < owners.n; j++)
            ok |= strs_has(&installed, owners.v[j]);
        if (!ok)
            fail_msg("pkg-config module %s (Makefile PKGS) comes from %s, which scripts/deps.sh "
                     "does not install", mods.v[i], owners.v[0]);
        strs_free(&owners);
    }
    strs_free(&mods);
    strs_free(&installed);
    free(mk);
    free(deps);
}

/* Libraries of a sanitizer runtime: the image's binary is never built with one. */
static int sanitizer_lib(const char *soname)
{
    return !strncmp(soname, "libasan.", 8) || !strncmp(soname, "libubsan.", 9) ||
           !strncmp(soname, "liblsan.", 8) || !strncmp(soname, "libtsan.", 8);
}

static void runtime_installs_every_library_the_binary_loads(void **state)
{
    struct dockerfile d;
    struct strs explicit = { 0 }, base = { 0 }, closure = { 0 }, closure_start = { 0 },
                needed = { 0 }, lib_pkgs = { 0 }, needed_pkgs = { 0 };
    struct pkgdb db;
    char codename[64], *ldd, *obj, *line, *save = NULL;
    struct stat st;
    size_t i;
    int rc;

    (void)state;
    df_load(&d, "Dockerfile");
    debian_codename(d.from[d.nstages - 1], codename, sizeof(codename));
    if (!have_dpkg() || !host_is(codename) || stat(RELEASE_BIN, &st)) {
        fprintf(stderr, "  (skipped: needs dpkg, Debian %s and %s)\n", codename, RELEASE_BIN);
        df_free(&d);
        skip();
    }
    runtime_packages(&d, &explicit);
    if (!explicit.n)
        fail_msg("the runtime stage installs no packages (apt-get install ...)");

    pkgdb_load(&db);
    /* What every Debian image has (debootstrap's minbase): the required packages and
     * what they depend on (libc6 itself is "optional" since bookworm). */
    for (i = 0; i < db.n; i++)
        if (!strcmp(db.v[i].priority, "required"))
            strs_add(&closure_start, db.v[i].name);
    pkg_closure(&db, &closure_start, &base);
    strs_free(&closure_start);
    for (i = 0; i < explicit.n; i++) {
        if (!pkgdb_find(&db, explicit.v[i]))
            fail_msg("the runtime stage installs %s, which is not a package of this Debian "
                     "(%s) or not installed here", explicit.v[i], codename);
        strs_add(&closure_start, explicit.v[i]);
    }
    for (i = 0; i < base.n; i++)
        strs_add(&closure_start, base.v[i]);
    pkg_closure(&db, &closure_start, &closure);

    /* What the binary links directly: each one's package installed by name. */
    obj = cmd_out(&rc, "objdump -p %s", RELEASE_BIN);
    assert_int_equal(rc, 0);
    for (line = strtok_r(obj, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char so[256];
        if (sscanf(line, " NEEDED %255s", so) == 1)
            strs_add(&needed, so);
    }
    free(obj);
    assert_true(needed.n > 0);

    /* Everything the loader maps: each one's package brought by what is installed. */
    ldd = cmd_out(&rc, "ldd %s", RELEASE_BIN);
    assert_int_equal(rc, 0);
    save = NULL;
    for (line = strtok_r(ldd, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char so[256], path[1024], pkg[256];
        if (strstr(line, "not found"))
            fail_msg("ldd %s: %s", RELEASE_BIN, trim(line));
        if (sscanf(line, " %255s => %1023s", so, path) != 2 || path[0] != '/')
            continue; /* linux-vdso, the dynamic loader itself (libc6) */
        if (sanitizer_lib(so))
            fail_msg("%s links a sanitizer runtime (%s): not the release build", RELEASE_BIN, so);
        lib_package(path, pkg, sizeof(pkg));
        strs_add(&lib_pkgs, pkg);
        if (strs_has(&needed, so)) {
            if (!strs_has(&explicit, pkg) && !strs_has(&base, pkg))
                fail_msg("dra-doctor links %s (package %s); the Dockerfile's runtime stage "
                         "does not install %s", so, pkg, pkg);
            strs_add(&needed_pkgs, pkg);
        }
        if (!strs_has(&closure, pkg))
            fail_msg("dra-doctor loads %s (package %s), which nothing the runtime stage "
                     "installs depends on", so, pkg);
    }
    free(ldd);
    /* Every NEEDED library was among what ldd resolved (else it failed as "not found"). */
    assert_true(needed_pkgs.n > 0);
    /* And nothing more: every package installed by name provides a library it loads. */
    for (i = 0; i < explicit.n; i++)
        if (!strs_has(&lib_pkgs, explicit.v[i]))
            fail_msg("the runtime stage installs %s, which provides none of the libraries "
                     "`ldd %s` lists", explicit.v[i], RELEASE_BIN);

    strs_free(&explicit);
    strs_free(&base);
    strs_free(&closure);
    strs_free(&closure_start);
    strs_free(&needed);
    strs_free(&lib_pkgs);
    strs_free(&needed_pkgs);
    pkgdb_free(&db);
    df_free(&d);
}

/* Calls fn(path, ctx) for every regular file under dir whose name ends with suffix. */
static void walk(const char *dir, const char *suffix, void (*fn)(const char *, void *), void *ctx)
{
    DIR *dp = opendir(dir);
    struct dirent *e;

    if (!dp)
        fail_msg("cannot open %s", dir);
    while ((e = readdir(dp))) {
        char path[1024];
        struct stat st;
        size_t n = strlen(e->d_name), m = strlen(suffix);
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            walk(path, suffix, fn, ctx);
        else if (n >= m && !strcmp(e->d_name + n - m, suffix))
            fn(path, ctx);
    }
    closedir(dp);
}

struct ids {
    long uid, gid;
    int nuid;
};

/* Every runAsUser / runAsGroup in a manifest is the image's USER. */
static void check_ids(const char *path, void *ctx)
{
    struct ids *ids = ctx;
    char *text = test_read_file(path);
    const char *p;
    static const char *const keys[] = { "runAsUser:", "runAsGroup:" };
    size_t k;

    for (k = 0; k < 2; k++)
        for (p = text; (p = strstr(p, keys[k])); p++) {
            long v = strtol(p + strlen(keys[k]), NULL, 10), want = k ? ids->gid : ids->uid;
            int line = 1;
            const char *q;
            for (q = text; q < p; q++)
                line += *q == '\n';
            if (v != want)
                fail_msg("%s:%d: %s %ld, the image's USER is %ld:%ld", path, line, keys[k], v,
                         ids->uid, ids->gid);
            ids->nuid += !k;
        }
    free(text);
}

static void runs_as_non_root(void **state)
{
    struct dockerfile d;
    const char *user = NULL, *entry = NULL;
    struct ids ids = { -1, -1, 0 };
    char *end;
    size_t i;
    int copied = 0;

    (void)state;
    df_load(&d, "Dockerfile");
    for (i = 0; i < d.n; i++) {
        if (d.in[i].stage != d.nstages - 1)
            continue;
        if (!strcmp(d.in[i].kw, "USER"))
            user = d.in[i].args;
        else if (!strcmp(d.in[i].kw, "ENTRYPOINT"))
            entry = d.in[i].args;
        else if (!strcmp(d.in[i].kw, "COPY") && strstr(d.in[i].args, "--from=") &&
                 strstr(d.in[i].args, " /usr/local/bin/dra-doctor"))
            copied = 1;
        else if (user && !strcmp(d.in[i].kw, "RUN"))
            fail_msg("RUN after USER in the runtime stage: %s", d.in[i].args);
    }
    if (!user)
        fail_msg("the runtime stage has no USER: it would run as root");
    /* Numeric uid:gid: Kubernetes can verify runAsNonRoot only for a numeric USER. */
    ids.uid = strtol(user, &end, 10);
    if (end == user || *end != ':')
        fail_msg("USER %s: want a numeric uid:gid", user);
    ids.gid = strtol(end + 1, &end, 10);
    if (*end)
        fail_msg("USER %s: want a numeric uid:gid", user);
    assert_true(ids.uid > 0);
    assert_true(ids.gid > 0);
    assert_non_null(entry);
    assert_string_equal(entry, "[\"/usr/local/bin/dra-doctor\"]");
    assert_true(copied);

    walk("deploy", ".yaml", check_ids, &ids);
    assert_true(ids.nuid > 0);
    df_free(&d);
}

struct tags {
    char version[64];
    int base_has;  /* deploy/base/kustomization.yaml names the image */
    int images;    /* image: lines seen */
};

static void check_kustomization(const char *path, void *ctx)
{
    struct tags *t = ctx;
    struct mf_set set;
    const cJSON *imgs, *e;
    size_t n;

    n = strlen(path);
    if (n < 18 || strcmp(path + n - 18, "kustomization.yaml"))
        return;
    mf_set_init(&set);
    if (mf_load_path(&set, path, NULL) != DD_OK || set.n != 1)
        fail_msg("%s: not one readable Kustomization", path);
    imgs = dd_json_arr(set.objs[0].json, "images", NULL);
    cJSON_ArrayForEach(e, imgs) {
        const char *name = dd_json_str(e, "name", NULL), *tag = dd_json_str(e, "newTag", NULL);
        if (!name || strcmp(name, IMAGE))
            continue;
        if (!tag)
            fail_msg("%s: images entry %s has no string newTag (quote it)", path, IMAGE);
        if (strcmp(tag, t->version))
            fail_msg("%s: image tag %s, VERSION says %s", path, tag, t->version);
        if (!strcmp(path, "deploy/base/kustomization.yaml"))
            t->base_has = 1;
    }
    mf_set_release(&set);
}

/* Images are named untagged in the manifests: the kustomizations set the tag. */
static void check_images(const char *path, void *ctx)
{
    struct tags *t = ctx;
    char *text = test_read_file(path), *p;

    for (p = text; (p = strstr(p, "image: ")); p++) {
        char img[256];
        snprintf(img, sizeof(img), "%.*s", (int)strcspn(p + 7, " \r\n#"), p + 7);
        if (strcmp(img, IMAGE))
            fail_msg("%s: image %s: name it %s without a tag (kustomize images: sets the tag)",
                     path, img, IMAGE);
        t->images++;
    }
    free(text);
}

static void image_tag_is_version(void **state)
{
    struct tags t = { "", 0, 0 };
    char *v = test_read_file("VERSION");

    (void)state;
    snprintf(t.version, sizeof(t.version), "%s", trim(v));
    free(v);
    assert_true(t.version[0] != '\0');
    walk("deploy", ".yaml", check_kustomization, &t);
    if (!t.base_has)
        fail_msg("deploy/base/kustomization.yaml sets no tag for %s (images:)", IMAGE);
    walk("deploy", ".yaml", check_images, &t);
    assert_true(t.images >= 4); /* webhook, controller, node agent, certs */
}

/* Docker's .dockerignore semantics, enough for ours: a path is excluded when the last
 * pattern matching it or one of its parent directories is not a "!" exception. */
static int ignored(const struct strs *pats, const char *path)
{
    int ex = 0;
    size_t i;

    for (i = 0; i < pats->n; i++) {
        const char *p = pats->v[i];
        int neg = *p == '!', hit = 0;
        char pat[512], pre[512];
        size_t n, k;

        snprintf(pat, sizeof(pat), "%s", p + neg + (p[neg] == '/'));
        n = strlen(pat);
        while (n > 1 && pat[n - 1] == '/')
            pat[--n] = '\0';
        for (k = 0; path[k] && !hit; k++) { /* the path and each parent directory */
            if (path[k + 1] != '/' && path[k + 1] != '\0')
                continue;
            snprintf(pre, sizeof(pre), "%.*s", (int)(k + 1), path);
            hit = !fnmatch(pat, pre, FNM_PATHNAME) ||
                  (!strncmp(pat, "**/", 3) &&
                   (!fnmatch(pat + 3, pre, FNM_PATHNAME) ||
                    (strrchr(pre, '/') && !fnmatch(pat + 3, strrchr(pre, '/') + 1, 0))));
        }
        if (hit)
            ex = !neg;
    }
    return ex;
}

static void dockerignore_keeps_sources_not_builds(void **state)
{
    char *ign = test_read_file(".dockerignore"), *mk = test_read_file("Makefile"), *line,
         *save = NULL, flags[1024], srcs[1024];
    struct strs pats = { 0 }, w = { 0 }, need = { 0 };
    size_t i;

    (void)state;
    for (line = strtok_r(ign, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *s = trim(line);
        if (*s && *s != '#')
            strs_add(&pats, s);
    }
    /* What `make dra-doctor` reads: the Makefile, VERSION, deps.sh, the main source and
     * every directory of LIB_SRC / APP_SRC / the -I flags. */
    strs_add(&need, "Makefile");
    strs_add(&need, "VERSION");
    strs_add(&need, "scripts/deps.sh");
    strs_add(&need, "dra-doctor.c");
    mk_var(mk, "BASECFLAGS", flags, sizeof(flags));
    split_words(&w, flags);
    for (i = 0; i < w.n; i++)
        if (!strncmp(w.v[i], "-I", 2) && w.v[i][2]) {
            char p[512];
            snprintf(p, sizeof(p), "%s/x.c", w.v[i] + 2);
            strs_add(&need, p);
        }
    strs_free(&w);
    /* LIB_SRC and APP_SRC are wildcards of DIR/ globs: each DIR. */
    mk_var(mk, "LIB_SRC", srcs, sizeof(srcs));
    split_words(&w, srcs);
    mk_var(mk, "APP_SRC", srcs, sizeof(srcs));
    split_words(&w, srcs);
    for (i = 0; i < w.n; i++) {
        char p[512], *slash = strchr(w.v[i], '/');
        if (!slash || w.v[i][0] == '$')
            continue;
        snprintf(p, sizeof(p), "%.*s/x.c", (int)(slash - w.v[i]), w.v[i]);
        strs_add(&need, p);
    }
    for (i = 0; i < need.n; i++)
        if (ignored(&pats, need.v[i]))
            fail_msg(".dockerignore excludes %s, which `make dra-doctor` needs", need.v[i]);
    /* The host's build output stays out: stale objects would be linked instead of built. */
    if (!ignored(&pats, "build/release/lib/formats/json.o") || !ignored(&pats, "dra-doctor"))
        fail_msg(".dockerignore must exclude build/ and the top-level dra-doctor binary");
    strs_free(&pats);
    strs_free(&w);
    strs_free(&need);
    free(ign);
    free(mk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(build_stage_runs_the_makefile_steps),
        cmocka_unit_test(makefile_libraries_come_from_deps_sh),
        cmocka_unit_test(runtime_installs_every_library_the_binary_loads),
        cmocka_unit_test(runs_as_non_root),
        cmocka_unit_test(image_tag_is_version),
        cmocka_unit_test(dockerignore_keeps_sources_not_builds),
    };
    return cmocka_run_group_tests_name("dockerfile", tests, NULL, NULL);
}
