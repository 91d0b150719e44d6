/*
 * peer.h - a peer of e2e/peers (Kubernetes' own code built as an oracle) as a child process
 * that answers one JSON line with one JSON line: what the differential harnesses
 * (fuzz_cel_diff, fuzz_alloc_diff) talk to.
 */
#ifndef DD_FUZZ_PEER_H
#define DD_FUZZ_PEER_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct peer {
    const char *env;   /* the variable naming the peer's binary */
    int tried;
    FILE *to, *from;
    char *line;
    size_t cap;
};

/* Starts the peer the first time; 1 when there is one. */
static int peer_ready(struct peer *p)
{
    const char *path;
    int in[2], out[2];
    pid_t pid;

    if (p->tried)
        return p->to != NULL;
    p->tried = 1;
    path = getenv(p->env);
    if (!path || !*path || pipe(in) || pipe(out))
        return 0;
    signal(SIGPIPE, SIG_IGN);
    if ((pid = fork()) == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    p->to = fdopen(in[1], "w");
    p->from = fdopen(out[0], "r");
    return p->to && p->from;
}

/* Sends what the caller wrote to p->to (one line) and returns the answer line (valid until the
 * next call); aborts when the peer stops answering. */
static const char *peer_answer(struct peer *p)
{
    /* libFuzzer's -timeout alarm may interrupt the write or the read (EINTR): that is no
     * answer yet, only a signal; stdio keeps what is unwritten. */
    while (fflush(p->to) == EOF && errno == EINTR)
        clearerr(p->to);
    errno = 0;
    while (getline(&p->line, &p->cap, p->from) < 0 && errno == EINTR) {
        clearerr(p->from);
        errno = 0;
    }
    if (!p->line || ferror(p->from) || feof(p->from)) {
        fprintf(stderr, "%s: the oracle stopped answering\n", p->env);
        abort();
    }
    return p->line;
}

#endif
