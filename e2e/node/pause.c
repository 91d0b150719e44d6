/*
 * pause.c - the pod sandbox's process (the role of registry.k8s.io/pause): holds
 * the pod's namespaces open, reaps the zombies of a shared PID namespace, and
 * exits on SIGINT or SIGTERM.  Built static (e2e/node/images.sh) so that its
 * image is this one file.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int sig)
{
    (void)sig;
    _exit(0);
}

static void reap(int sig)
{
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

int main(int argc, char **argv)
{
    struct sigaction sa;

    if (argc > 1 && !strcmp(argv[1], "-v")) {
        puts("pause (dra-doctor e2e)");
        return 0;
    }
    if (getpid() != 1)
        fprintf(stderr, "pause: warning: not PID 1\n");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = quit;
    if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
        return 1;
    sa.sa_handler = reap;
    sa.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, NULL))
        return 2;
    for (;;)
        pause();
}
