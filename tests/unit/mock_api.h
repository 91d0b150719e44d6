/*
 * mock_api.h - a mock API server for tests that run the binary against one: routes served by
 * lib/client/httpd on loopback, a kubeconfig naming it (context "x", a bearer token) in a
 * temporary directory, and a runner of $DD_BIN that captures stdout and stderr together.
 * Included by one test file each (static definitions).
 */
#ifndef DD_TEST_MOCK_API_H
#define DD_TEST_MOCK_API_H

#include "harness.h"

#include "client/httpd.h"

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

struct mock_api {
    struct httpd *srv;
    char server[64];      /* "http://127.0.0.1:PORT" */
    char dir[64];         /* the temporary directory */
    char kubeconfig[256]; /* dir/kubeconfig */
};

/* Serves routes (borrowed: they must outlive the server) and writes the kubeconfig; name
 * tells the directory apart.  0, or -1 after saying why on stderr. */
static int mock_api_start(struct mock_api *m, const char *name, const struct httpd_route *routes,
                          size_t n)
{
    struct httpd_opts o = { "127.0.0.1", 0, 0, 4, NULL, NULL, 0, 0 };
    struct dd_err err = { 0 };
    FILE *f;

    if (!(m->srv = httpd_start(&o, routes, n, &err))) {
        fprintf(stderr, "mock API server: %s\n", err.msg);
        return -1;
    }
    snprintf(m->server, sizeof(m->server), "http://127.0.0.1:%u", (unsigned)httpd_port(m->srv));
    snprintf(m->dir, sizeof(m->dir), "/tmp/dd-test-%s-XXXXXX", name);
    if (!mkdtemp(m->dir))
        return -1;
    snprintf(m->kubeconfig, sizeof(m->kubeconfig), "%s/kubeconfig", m->dir);
    if (!(f = fopen(m->kubeconfig, "w")))
        return -1;
    fprintf(f, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\n"
               "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
               "current-context: x\nusers:\n- name: u\n  user:\n    token: t\n", m->server);
    fclose(f);
    return 0;
}

/* Stops the server and removes the kubeconfig and the directory (empty it first). */
static void mock_api_stop(struct mock_api *m)
{
    httpd_stop(m->srv);
    unlink(m->kubeconfig);
    rmdir(m->dir);
}

struct mock_run {
    int status;       /* exit status; -1 when killed */
    char out[32768];  /* stdout and stderr together */
};

/* Runs $DD_BIN with the first n of pre[] and then the NULL-terminated arguments of ap, outside
 * any cluster (KUBERNETES_SERVICE_HOST unset). */
static void mock_vrun(struct mock_run *r, const char *const *pre, int n, va_list ap)
{
    const char *bin = getenv("DD_BIN"), *args[40];
    int p[2], st, k = 0, i;
    size_t len = 0;
    ssize_t got;
    pid_t pid;

    assert_non_null(bin);
    args[k++] = bin;
    for (i = 0; i < n; i++)
        args[k++] = pre[i];
    while (k < 39 && (args[k] = va_arg(ap, const char *)))
        k++;
    args[k] = NULL;
    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[0]);
        unsetenv("KUBERNETES_SERVICE_HOST");
        execv(bin, (char *const *)args);
        _exit(127);
    }
    close(p[1]);
    while ((got = read(p[0], r->out + len, sizeof(r->out) - 1 - len)) > 0)
        len += (size_t)got;
    r->out[len] = '\0';
    close(p[0]);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
