/*
 * test_install.c - the ways users install and wire up dra-doctor, each run as its user
 * runs it: the shell completions (bash's compgen, zsh's completion system), the binary
 * as a kubectl plugin (kubectl-dra_doctor), `make install` and `make uninstall` with
 * PREFIX and DESTDIR, the krew archive and manifest (`make dist`'s script, installed as
 * krew would), the pre-commit hooks through pre-commit itself on a repository with a
 * broken manifest, and the CI action's steps (action.yml) on a git history.  The binary
 * is $DD_BIN (scripts/run-tests.sh).
 */
#include "harness.h"

#include "../e2e/e2e.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "formats/json.h"
#include "formats/manifest.h"
#include "formats/yaml.h"

static char dir[256];    /* scratch */
static char bin[1024];   /* $DD_BIN, absolute */
static char top[1024];   /* the repository */
static char version[64]; /* VERSION */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static enum dd_rc keep_doc(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos)
{
    (void)pos;
    (void)npos;
    cJSON_Delete(*(cJSON **)ctx);
    *(cJSON **)ctx = root;
    return DD_OK;
}

/* A YAML file's one document (not a Kubernetes object: action.yml, hook lists). */
static cJSON *yaml_file(const char *path)
{
    struct ydoc_limits lim = { 64, 1, 0 };
    struct ydoc_sink sink;
    cJSON *doc = NULL;
    char *text = test_read_file(path);

    memset(&sink, 0, sizeof(sink));
    sink.ctx = &doc;
    sink.document = keep_doc;
    if (ydoc_parse_stream(text, strlen(text), &lim, &sink) != DD_OK || !doc)
        fail_msg("%s: not YAML", path);
    free(text);
    return doc;
}

/* The commands `dra-doctor --help` lists, space-separated. */
static void help_commands(char *buf, size_t size)
{
    char *p, *line, *save = NULL;
    size_t n = 0;
    int in = 0;

    assert_int_equal(sh("%s --help", bin), 0);
    buf[0] = '\0';
    for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (!strcmp(line, "commands:")) {
            in = 1;
            continue;
        }
        if (in && line[0] == ' ' && line[1] == ' ' && line[2] != ' ') {
            p = line + 2;
            n += (size_t)snprintf(buf + n, size - n, "%s%.*s", n ? " " : "", (int)strcspn(p, " "), p);
        } else if (in) {
            in = 0;
        }
    }
    assert_true(n > 0);
}

/* Every long option COMMAND --help names, space-separated and sorted, as the scripts do. */
static void help_options(const char *cmd, char *buf, size_t size)
{
    if (sh("%s %s --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u | tr '\\n' ' '",
           bin, cmd))
        fail_msg("%s --help: %s", cmd, out);
    snprintf(buf, size, "%.*s", (int)size - 1, out);
}

/* bash's completion of "dra-doctor WORDS" (the last word being completed), space-separated:
 * the binary is the first word, as a user's PATH would find it. */
static const char *bash_complete(const char *words)
{
    if (sh("cd %s && bash -c 'source <(%s completion bash) && read -ra COMP_WORDS <<< \"$1\" && "
           "case $1 in *\" \") COMP_WORDS+=(\"\") ;; esac && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && "
           "_dra_doctor && echo \"${COMPREPLY[*]}\"' _ '%s %s' 2>&1", dir, bin, bin, words))
        fail_msg("bash completion of \"%s\": %s", words, out);
    out[strcspn(out, "\n")] = '\0';
    return out;
}

/* ---- completion ---------------------------------------------------------------------- */

static void bash_completion(void **state)
{
    char cmds[1024], want[4096], got[4096], script[512], *line, *save = NULL;
    static const char *const subs[] = { "lint", "diagnose", "explain", "controller", "node",
                                        "webhook", "certs", "delete" };
    size_t i, nchoices = 0;

    (void)state;
    if (sh("bash -c 'source <(%s completion bash) && complete -p dra-doctor kubectl-dra_doctor' 2>&1",
           bin))
        fail_msg("complete -p: %s", out);
    assert_contains(out, "-F _dra_doctor dra-doctor");
    assert_contains(out, "-F _dra_doctor kubectl-dra_doctor");

    /* The first word: every command --help lists. */
    help_commands(cmds, sizeof(cmds));
    snprintf(got, sizeof(got), " %s ", bash_complete(""));
    for (line = strtok_r(cmds, " ", &save); line; line = strtok_r(NULL, " ", &save)) {
        snprintf(want, sizeof(want), " %s ", line);
        if (!strstr(got, want))
            fail_msg("bash completes no command %s (offers:%s)", line, got);
    }
    assert_string_equal(bash_complete("di"), "diagnose");

    /* Options: exactly those each command's --help names. */
    for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char words[64];
        help_options(subs[i], want, sizeof(want));
        snprintf(words, sizeof(words), "%s --", subs[i]);
        snprintf(got, sizeof(got), "%s ", bash_complete(words));
        assert_string_equal(got, want);
    }
    assert_string_equal(bash_complete("lint --fail"), "--fail-on");

    /* Values: each one the script offers is accepted by the command, a wrong one refused. */
    snprintf(script, sizeof(script), "%s/completion.bash", dir);
    assert_int_equal(sh("%s completion bash > %s", bin, script), 0);
    assert_int_equal(sh("sed -n 's/^    \\(\"[^)]*\\)) echo .\\(.*\\). ;;$/\\1|\\2/p' %s", script), 0);
    snprintf(got, sizeof(got), "%.*s", (int)sizeof(got) - 1, out);
    save = NULL;
    for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* "lint -o"|"lint --output"|text json sarif github */
        char cmd[64], flag[64], vals[512], words[256], *v, *vs = NULL;
        const char *last = strrchr(line, '|');
        assert_non_null(last);
        assert_int_equal(sscanf(line, "\"%63s %63[^\"]\"", cmd, flag), 2);
        snprintf(vals, sizeof(vals), "%s", last + 1);
        snprintf(words, sizeof(words), "%s %s ", cmd, flag);
        assert_string_equal(bash_complete(words), vals);
        for (v = strtok_r(vals, " ", &vs); v; v = strtok_r(NULL, " ", &vs)) {
            if (sh("%s %s %s %s --help >/dev/null 2>&1", bin, cmd, flag, v))
                fail_msg("completion offers %s %s %s, which the command refuses", cmd, flag, v);
            nchoices++;
        }
        if (sh("%s %s %s no-such-value --help >/dev/null 2>&1", bin, cmd, flag) != 2)
            fail_msg("%s %s accepts any value: its completion's choices prove nothing", cmd, flag);
    }
    assert_true(nchoices >= 15);
    assert_string_equal(bash_complete("completion "), "bash zsh");
    /* Anything else: file names. */
    assert_int_equal(sh("mkdir -p %s/manifests && touch %s/manifests/a.yaml", dir, dir), 0);
    assert_string_equal(bash_complete("lint manifests/"), "manifests/a.yaml");
}

static void zsh_completion(void **state)
{
    char path[512], script[16384];

    (void)state;
    snprintf(path, sizeof(path), "%s/complete.zsh", dir);
    snprintf(script, sizeof(script),
             "autoload -U compinit && compinit -u -D -d %s/zcompdump\n"
             "source <(%s completion zsh)\n"
             "print -r -- \"registered: $_comps[dra-doctor] $_comps[kubectl-dra_doctor]\"\n"
             /* Stand-ins for the completion system's builtins, printing the candidates. */
             "compadd() { [[ $1 == -- ]] && shift; print -r -- \"offered: $*\"; }\n"
             "_files() { print -r -- offered: FILES; }\n"
             "words=(%s ''); CURRENT=2; PREFIX=''; _dra_doctor\n"
             "words=(%s lint --fail-on ''); CURRENT=4; PREFIX=''; _dra_doctor\n"
             "words=(%s lint --kube-version ''); CURRENT=4; PREFIX=''; _dra_doctor\n"
             "words=(%s diagnose --con); CURRENT=3; PREFIX=--con; _dra_doctor\n"
             "words=(%s lint x); CURRENT=3; PREFIX=x; _dra_doctor\n"
             "words=(%s completion ''); CURRENT=3; PREFIX=''; _dra_doctor\n",
             dir, bin, bin, bin, bin, bin, bin, bin);
    write_file(path, script);
    if (sh("zsh -f %s 2>&1", path))
        fail_msg("zsh: %s", out);
    assert_contains(out, "registered: _dra_doctor _dra_doctor\n");
    assert_contains(out, "offered: lint diagnose explain controller node webhook certs delete "
                         "completion help version\n");
    assert_contains(out, "offered: error warning never\n");
    assert_contains(out, "offered: 1.34 1.35 1.36 1.37\n");
    assert_contains(out, "--context");
    assert_contains(out, "--kubeconfig");
    assert_contains(out, "offered: FILES\n");
    assert_contains(out, "offered: bash zsh\n");
    assert_int_equal(sh("%s completion fish 2>&1", bin), 2);
    assert_contains(out, "give one shell, bash or zsh");
}

/* ---- kubectl plugin ------------------------------------------------------------------ */

static void kubectl_plugin_name(void **state)
{
    char plugin[512];

    (void)state;
    snprintf(plugin, sizeof(plugin), "%s/kubectl-dra_doctor", dir);
    assert_int_equal(symlink(bin, plugin), 0);
    assert_int_equal(sh("%s 2>&1", plugin), 2);
    assert_contains(out, "usage: kubectl dra-doctor [--version]");
    assert_int_equal(sh("%s --help", plugin), 0);
    assert_contains(out, "'kubectl dra-doctor <command> --help' describes a command.");
    assert_int_equal(sh("%s bogus 2>&1", plugin), 2);
    assert_contains(out, "kubectl dra-doctor: 'bogus' is not a command; see 'kubectl dra-doctor --help'.");
    /* kubectl's conventions reach the command: --kubeconfig, --context, -n. */
    assert_int_equal(sh("env -u KUBECONFIG %s diagnose -n ns p --kubeconfig %s/none 2>&1", plugin, dir), 2);
    assert_contains(out, "/none");
    snprintf(plugin, sizeof(plugin), "%s/kubeconfig", dir);
    write_file(plugin, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                       "    server: https://127.0.0.1:1\ncontexts:\n- name: ctx\n  context:\n"
                       "    cluster: c\n    user: u\ncurrent-context: ctx\nusers:\n- name: u\n"
                       "  user:\n    token: t\n");
    assert_int_equal(sh("env -u KUBECONFIG %s/kubectl-dra_doctor diagnose --namespace=ns p "
                        "--kubeconfig=%s --context=other 2>&1", dir, plugin), 2);
    assert_contains(out, "other");
    /* The same binary by its own name says so. */
    assert_int_equal(sh("%s 2>&1", bin), 2);
    assert_contains(out, "usage: dra-doctor [--version]");
}

/* ---- make install ---------------------------------------------------------------------- */

static void make_install(void **state)
{
    char b[1024], root[512], *slash;

    (void)state;
    snprintf(b, sizeof(b), "%s", bin);
    slash = strrchr(b, '/');
    assert_non_null(slash);
    *slash = '\0';
    snprintf(root, sizeof(root), "%s/destdir", dir);
    if (sh("make -s --no-print-directory install B=%s PREFIX=/opt/dd DESTDIR=%s 2>&1", b, root))
        fail_msg("make install: %s", out);
    assert_int_equal(sh("%s/opt/dd/bin/dra-doctor --version", root), 0);
    assert_int_equal(strncmp(out, "dra-doctor ", 11), 0);
    assert_int_equal(sh("readlink %s/opt/dd/bin/kubectl-dra_doctor", root), 0);
    assert_string_equal(out, "dra-doctor\n");
    assert_int_equal(sh("%s/opt/dd/bin/kubectl-dra_doctor --help", root), 0);
    assert_contains(out, "usage: kubectl dra-doctor");
    assert_int_equal(sh("%s completion bash | cmp - %s/opt/dd/share/bash-completion/completions/dra-doctor",
                        bin, root), 0);
    assert_int_equal(sh("readlink %s/opt/dd/share/bash-completion/completions/kubectl-dra_doctor", root), 0);
    assert_string_equal(out, "dra-doctor\n");
    assert_int_equal(sh("%s completion zsh | cmp - %s/opt/dd/share/zsh/site-functions/_dra-doctor",
                        bin, root), 0);
    /* Nothing outside DESTDIR/PREFIX. */
    assert_int_equal(sh("cd %s && find . \\( -type f -o -type l \\) | sort | tr '\\n' ' '", root), 0);
    assert_string_equal(out, "./opt/dd/bin/dra-doctor ./opt/dd/bin/kubectl-dra_doctor "
                             "./opt/dd/share/bash-completion/completions/dra-doctor "
                             "./opt/dd/share/bash-completion/completions/kubectl-dra_doctor "
                             "./opt/dd/share/zsh/site-functions/_dra-doctor ");
    if (sh("make -s --no-print-directory uninstall PREFIX=/opt/dd DESTDIR=%s 2>&1", root))
        fail_msg("make uninstall: %s", out);
    assert_int_equal(sh("cd %s && find . \\( -type f -o -type l \\) | wc -l", root), 0);
    assert_int_equal(atoi(out), 0);
}

/* ---- krew ---------------------------------------------------------------------------- */

static void krew_manifest(void **state)
{
    char d[512], want[1024], sum[128], *text;
    struct mf_set set;
    const cJSON *m, *p, *f;
    const char *name, *bin_path;

    (void)state;
    snprintf(d, sizeof(d), "%s/dist", dir);
    if (sh("scripts/krew-dist.sh %s %s https://example.org/dd/releases/download/v%s 2>&1", bin, d,
           version))
        fail_msg("krew-dist.sh: %s", out);
    snprintf(want, sizeof(want), "%s/dra-doctor.yaml", d);
    text = test_read_file(want);
    assert_null(strstr(text, "@")); /* every placeholder filled */
    mf_set_init(&set);
    assert_int_equal(mf_load_buffer(&set, want, text, strlen(text), NULL), DD_OK);
    free(text);
    assert_int_equal(set.n, 1);
    m = set.objs[0].json;
    assert_string_equal(set.objs[0].api_version, "krew.googlecontainertools.github.com/v1alpha2");
    assert_string_equal(set.objs[0].kind, "Plugin");
    name = dd_json_str(m, "metadata", "name", NULL);
    assert_string_equal(name, "dra-doctor");
    snprintf(want, sizeof(want), "v%s", version);
    assert_string_equal(dd_json_str(m, "spec", "version", NULL), want);
    assert_non_null(dd_json_str(m, "spec", "shortDescription", NULL));
    assert_int_equal(cJSON_GetArraySize(dd_json_arr(m, "spec", "platforms", NULL)), 1);
    p = cJSON_GetArrayItem(dd_json_arr(m, "spec", "platforms", NULL), 0);
    assert_string_equal(dd_json_str(p, "selector", "matchLabels", "os", NULL), "linux");
    assert_string_equal(dd_json_str(p, "selector", "matchLabels", "arch", NULL), "amd64");
    snprintf(want, sizeof(want), "https://example.org/dd/releases/download/v%s/dra-doctor-v%s-linux-amd64.tar.gz",
             version, version);
    assert_string_equal(dd_json_str(p, "uri", NULL), want);
    assert_int_equal(sh("sha256sum %s/dra-doctor-v%s-linux-amd64.tar.gz | cut -d' ' -f1", d, version), 0);
    snprintf(sum, sizeof(sum), "%.64s", out);
    assert_string_equal(dd_json_str(p, "sha256", NULL), sum);
    /* As krew installs it: unpack, copy files[], link kubectl-<name with _> to bin. */
    assert_int_equal(sh("mkdir -p %s/unpacked %s/krew/bin && tar -C %s/unpacked -xzf "
                        "%s/dra-doctor-v%s-linux-amd64.tar.gz", d, d, d, d, version), 0);
    cJSON_ArrayForEach(f, dd_json_arr(p, "files", NULL))
        assert_int_equal(sh("cp -r %s/unpacked/%s %s/krew/%s", d, dd_json_str(f, "from", NULL), d,
                            dd_json_str(f, "to", NULL)), 0);
    bin_path = dd_json_str(p, "bin", NULL);
    assert_non_null(bin_path);
    assert_int_equal(sh("ln -s ../%s %s/krew/bin/kubectl-dra_doctor && %s/krew/bin/kubectl-dra_doctor --help",
                        bin_path, d, d), 0);
    assert_contains(out, "usage: kubectl dra-doctor");
    /* The archive is reproducible: the same binary, the same sha256. */
    assert_int_equal(sh("scripts/krew-dist.sh %s %s/again https://example.org/x >/dev/null && "
                        "sha256sum %s/again/*.tar.gz | cut -d' ' -f1", bin, d, d), 0);
    assert_int_equal(strncmp(out, sum, 64), 0);
    mf_set_release(&set);
}

/* ---- pre-commit ---------------------------------------------------------------------- */

/* A git repository at dir/NAME with a broken manifest (the seed's typo) and a clean one. */
static void git_repo(const char *name)
{
    if (sh("set -e; cd %s && rm -rf %s && git init -q %s && cd %s && "
           "git config user.email t@example.org && git config user.name t && "
           "cp %s/tests/data/lint/seed/fixed/deviceclass.yaml clean.yaml && "
           "git add clean.yaml && git commit -qm clean && "
           "cp %s/tests/data/lint/seed/fault-2-typo/deviceclass.yaml typo.yaml && "
           "echo '# notes' > README.md && git add typo.yaml README.md 2>&1",
           dir, name, name, name, top, top))
        fail_msg("git repository: %s", out);
}

static void pre_commit_hooks(void **state)
{
    cJSON *hooks = yaml_file(".pre-commit-hooks.yaml");
    const cJSON *h;
    int n = 0;

    (void)state;
    assert_int_equal(sh("mkdir -p %s/path && ln -sf %s %s/path/dra-doctor", dir, bin, dir), 0);
    git_repo("pc");
    cJSON_ArrayForEach(h, hooks) {
        const char *id = dd_json_str(h, "id", NULL);
        assert_non_null(id);
        assert_string_equal(dd_json_str(h, "language", NULL), "system");
        /* As pre-commit runs it, from the repository the hook lives in (this one). */
        if (sh("cd %s/pc && PATH=%s/path:$PATH PRE_COMMIT_HOME=%s/pc-home pre-commit try-repo "
               "%s %s --files typo.yaml clean.yaml README.md 2>&1", dir, dir, dir, top, id) != 1)
            fail_msg("pre-commit hook %s passed a broken manifest: %s", id, out);
        assert_contains(out, "- exit code: 1");
        assert_contains(out, "typo.yaml:8");
        assert_contains(out, "error[SelectorMatchesNoDriver]");
        assert_contains(out, "Did you mean 'gpu.example.com'?");
        n++;
    }
    assert_int_equal(n, 2);
    /* The per-file hook passes a commit of clean manifests only. */
    if (sh("cd %s/pc && PATH=%s/path:$PATH PRE_COMMIT_HOME=%s/pc-home pre-commit try-repo "
           "%s dra-doctor-lint --files clean.yaml README.md 2>&1", dir, dir, dir, top))
        fail_msg("pre-commit hook on a clean manifest: %s", out);
    assert_contains(out, "Passed");
    cJSON_Delete(hooks);
}

/* ---- the CI action ------------------------------------------------------------------- */

/* text with every ${{ EXPR }} replaced: inputs.X (the value in with, else its default),
 * github.action_path, steps.lint.outputs.X (from the step's output file).  Fails on
 * anything else: the test would not know what GitHub does with it. */
static void expand(const cJSON *action, const cJSON *with, const char *outputs, const char *text,
                   char *buf, size_t size)
{
    size_t n = 0;

    buf[0] = '\0';
    while (*text && n < size - 1) {
        const char *s = strstr(text, "${{"), *e;
        char expr[256], val[1024] = "";
        if (!s) {
            n += (size_t)snprintf(buf + n, size - n, "%s", text);
            break;
        }
        n += (size_t)snprintf(buf + n, size - n, "%.*s", (int)(s - text), text);
        e = strstr(s, "}}");
        assert_non_null(e);
        snprintf(expr, sizeof(expr), "%.*s", (int)(e - s - 3), s + 3);
        {
            char *x = expr;
            while (*x == ' ')
                x++;
            memmove(expr, x, strlen(x) + 1);
            x = expr + strlen(expr);
            while (x > expr && x[-1] == ' ')
                *--x = '\0';
        }
        if (!strncmp(expr, "inputs.", 7)) {
            const char *v = dd_json_str(with, expr + 7, NULL);
            if (!v)
                v = dd_json_str(action, "inputs", expr + 7, "default", NULL);
            if (!v)
                fail_msg("action.yml uses ${{ %s }}, which is no input with a default", expr);
            snprintf(val, sizeof(val), "%s", v);
        } else if (!strcmp(expr, "github.action_path")) {
            snprintf(val, sizeof(val), "%s", top);
        } else if (!strncmp(expr, "steps.lint.outputs.", 19)) {
            char key[300];
            const char *p;
            snprintf(key, sizeof(key), "\n%s=", expr + 19);
            if ((p = strstr(outputs, key)))
                snprintf(val, sizeof(val), "%.*s", (int)strcspn(p + strlen(key), "\n"), p + strlen(key));
        } else {
            fail_msg("action.yml: ${{ %s }}: not an expression this test can evaluate", expr);
        }
        n += (size_t)snprintf(buf + n, size - n, "%s", val);
        text = e + 2;
    }
}

/* Runs the action's steps as GitHub would in the repository dir/repo; returns the job's
 * exit status (the last step's), with the lint step's outputs in outputs. */
static int run_action(const cJSON *action, const char *with_json, char *outputs, size_t osize,
                      int *uploaded, char *lint_out, size_t lsize)
{
    cJSON *with = cJSON_Parse(with_json);
    const cJSON *step;
    char outfile[512], cmd[8192], env[4096], val[2048];
    int rc = 0;

    assert_non_null(with);
    snprintf(outfile, sizeof(outfile), "%s/github_output", dir);
    write_file(outfile, "");
    snprintf(outputs, osize, "\n");
    *uploaded = 0;
    assert_string_equal(dd_json_str(action, "runs", "using", NULL), "composite");
    cJSON_ArrayForEach(step, dd_json_arr(action, "runs", "steps", NULL)) {
        const char *run = dd_json_str(step, "run", NULL), *uses = dd_json_str(step, "uses", NULL);
        const cJSON *e;
        size_t n = 0;
        if (uses) {
            /* The upload: not run here; its condition and its file are checked. */
            assert_contains(uses, "github/codeql-action/upload-sarif");
            expand(action, with, outputs, dd_json_str(step, "with", "sarif_file", NULL), val, sizeof(val));
            assert_contains(dd_json_str(step, "if", NULL), "always()");
            assert_contains(dd_json_str(step, "if", NULL), "steps.lint.outputs.sarif != ''");
            if (val[0]) {
                char path[4096];
                struct stat st;
                snprintf(path, sizeof(path), "%s/repo/%s", dir, val);
                assert_int_equal(stat(path, &st), 0);
                *uploaded = 1;
            }
            continue;
        }
        assert_non_null(run);
        assert_string_equal(dd_json_str(step, "shell", NULL), "bash");
        env[0] = '\0';
        cJSON_ArrayForEach(e, dd_json_path(step, "env", NULL)) {
            char q[2048];
            size_t i, k = 0;
            expand(action, with, outputs, e->valuestring, val, sizeof(val));
            for (i = 0; val[i] && k < sizeof(q) - 5; i++) /* single-quoted for the shell */
                k += (size_t)snprintf(q + k, sizeof(q) - k, val[i] == '\'' ? "'\\''" : "%c", val[i]);
            q[k] = '\0';
            n += (size_t)snprintf(env + n, sizeof(env) - n, "%s='%s' ", e->string, q);
        }
        expand(action, with, outputs, run, val, sizeof(val));
        snprintf(cmd, sizeof(cmd), "cd %s/repo && env PATH=%s/path:$PATH GITHUB_OUTPUT=%s %s bash -e -c '%s' 2>&1",
                 dir, dir, outfile, env, val);
        rc = sh("%s", cmd);
        fprintf(stderr, "    step %s: exit %d\n", dd_json_str(step, "id", NULL) ? dd_json_str(step, "id", NULL) : "-", rc);
        if (dd_json_str(step, "id", NULL)) {
            char *o = test_read_file(outfile);
            snprintf(outputs, osize, "\n%s", o);
            free(o);
            snprintf(lint_out, lsize, "%.*s", (int)lsize - 1, out);
        }
        if (rc)
            break;
    }
    cJSON_Delete(with);
    return rc;
}

static void ci_action(void **state)
{
    cJSON *action = yaml_file("action.yml");
    char outputs[4096], sarif_path[512], lint_out[65536];
    cJSON *sarif;
    const cJSON *r;
    char *text;
    int uploaded, found = 0;

    (void)state;
    assert_string_equal(dd_json_str(action, "inputs", "version", "default", NULL), version);
    assert_int_equal(sh("mkdir -p %s/path && ln -sf %s %s/path/dra-doctor", dir, bin, dir), 0);
    git_repo("repo");
    assert_int_equal(sh("cd %s/repo && git commit -qm 'typo and notes'", dir), 0);

    /* A push that adds the typo: the job fails, the SARIF names it, the lines are annotated. */
    assert_int_equal(run_action(action, "{}", outputs, sizeof(outputs), &uploaded, lint_out,
                                sizeof(lint_out)), 1);
    assert_contains(outputs, "\nstatus=1\n");
    assert_contains(outputs, "\nfiles=1\n"); /* the changed manifest only, not README.md */
    assert_true(uploaded);
    snprintf(sarif_path, sizeof(sarif_path), "%s/repo/dra-doctor.sarif", dir);
    text = test_read_file(sarif_path);
    assert_non_null(sarif = cJSON_Parse(text));
    free(text);
    assert_string_equal(dd_json_str(sarif, "version", NULL), "2.1.0");
    cJSON_ArrayForEach(r, dd_json_arr(cJSON_GetArrayItem(dd_json_arr(sarif, "runs", NULL), 0), "results", NULL)) {
        const cJSON *loc = cJSON_GetArrayItem(dd_json_arr(r, "locations", NULL), 0);
        if (!strcmp(dd_json_str(r, "ruleId", NULL), "SelectorMatchesNoDriver")) {
            assert_string_equal(dd_json_str(loc, "physicalLocation", "artifactLocation", "uri", NULL),
                                "typo.yaml");
            found = 1;
        }
        assert_string_not_equal(dd_json_str(loc, "physicalLocation", "artifactLocation", "uri", NULL),
                                "clean.yaml");
    }
    assert_true(found);
    cJSON_Delete(sarif);
    assert_contains(lint_out, "::error file=typo.yaml,line=8");

    /* A push that changes no manifest: nothing to lint, nothing to upload, the job passes. */
    assert_int_equal(sh("cd %s/repo && echo more >> README.md && git commit -qam notes", dir), 0);
    assert_int_equal(run_action(action, "{}", outputs, sizeof(outputs), &uploaded, lint_out, sizeof(lint_out)), 0);
    assert_contains(outputs, "\nstatus=0\n");
    assert_contains(outputs, "\nsarif=\n");
    assert_false(uploaded);

    /* All of paths, warnings failing too: the clean class alone names a driver these
     * manifests do not install (a warning), until args say it is installed elsewhere. */
    assert_int_equal(run_action(action, "{\"changed-only\":\"false\",\"paths\":\"clean.yaml\","
                                        "\"fail-on\":\"warning\"}", outputs, sizeof(outputs),
                                &uploaded, lint_out, sizeof(lint_out)), 1);
    assert_contains(lint_out, "::warning file=clean.yaml,line=8");
    assert_int_equal(run_action(action, "{\"changed-only\":\"false\",\"paths\":\"clean.yaml\","
                                        "\"fail-on\":\"warning\",\"args\":\"--known-driver "
                                        "gpu.example.com\"}", outputs, sizeof(outputs), &uploaded,
                                lint_out, sizeof(lint_out)), 0);
    assert_contains(outputs, "\nstatus=0\n");
    assert_int_equal(run_action(action, "{\"changed-only\":\"false\",\"paths\":\"typo.yaml clean.yaml\","
                                        "\"sarif-file\":\"out.sarif\"}", outputs, sizeof(outputs), &uploaded, lint_out, sizeof(lint_out)), 1);
    assert_contains(outputs, "\nsarif=out.sarif\n");
    assert_true(uploaded);
    cJSON_Delete(action);
}

/* ---- versions -------------------------------------------------------------------------- */

static void versions_agree(void **state)
{
    cJSON *chart = yaml_file("deploy/helm/dra-doctor/Chart.yaml");
    char *krew = test_read_file("deploy/krew/dra-doctor.yaml");

    (void)state;
    assert_string_equal(dd_json_str(chart, "version", NULL), version);
    assert_string_equal(dd_json_str(chart, "appVersion", NULL), version);
    assert_contains(krew, "version: \"v@VERSION@\""); /* filled in from VERSION by make dist */
    free(krew);
    cJSON_Delete(chart);
}

/* ---- setup ----------------------------------------------------------------------------- */

static int setup(void **state)
{
    const char *b = getenv("DD_BIN");
    char *v;

    (void)state;
    if (!b || !realpath(b, bin) || !getcwd(top, sizeof(top))) {
        fprintf(stderr, "test_install: set DD_BIN (scripts/run-tests.sh does)\n");
        return -1;
    }
    v = test_read_file("VERSION");
    snprintf(version, sizeof(version), "%.*s", (int)strcspn(v, " \r\n"), v);
    free(v);
    snprintf(dir, sizeof(dir), "/tmp/dd-test-install-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bash_completion),
        cmocka_unit_test(zsh_completion),
        cmocka_unit_test(kubectl_plugin_name),
        cmocka_unit_test(make_install),
        cmocka_unit_test(krew_manifest),
        cmocka_unit_test(pre_commit_hooks),
        cmocka_unit_test(ci_action),
        cmocka_unit_test(versions_agree),
    };
    return cmocka_run_group_tests_name("install", tests, setup, teardown);
}
