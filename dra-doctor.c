/*
 * dra-doctor.c - the one binary: a table of subcommands, as git's git.c.
 */
#include <stdio.h>
#include <string.h>

#include "certs.h"
#include "controller.h"
#include "lint.h"
#include "webhook.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    { "lint", lint_main, "check DRA manifests offline (files, directories, stdin)" },
    { "diagnose", diagnose_main, "diagnose the pods of a live cluster once, read-only" },
    { "explain", explain_main, "why each device does or does not serve a pod's or claim's request" },
    { "controller", controller_main, "annotate stuck DRA pods with their root cause (reconcile loop)" },
    { "node", node_main, "node agent: publish containerd's CDI settings on the Node" },
    { "webhook", webhook_main, "HTTPS admission webhook: refuse broken DRA objects at the door" },
    { "certs", certs_main, "create or rotate the webhook's CA and serving certificate" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    size_t i;

    fprintf(f,
            "usage: dra-doctor [--version] [--help] <command> [<args>]\n"
            "\n"
            "dra-doctor finds why Kubernetes Dynamic Resource Allocation (DRA) pods stay\n"
            "Pending or start without their devices, and says how to fix it.\n"
            "\n"
            "commands:\n");
    for (i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'dra-doctor <command> --help' describes a command.\n");
}

int main(int argc, char **argv)
{
    size_t i;

    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && strcmp(argv[1], "help") == 0)
            for (i = 0; i < NCOMMANDS; i++)
                if (!strcmp(argv[2], commands[i].name)) {
                    char help[] = "--help";
                    char *sub[] = { argv[2], help, NULL };
                    return commands[i].run(2, sub);
                }
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("dra-doctor %s\n", DD_VERSION);
        return 0;
    }
    for (i = 0; i < NCOMMANDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "dra-doctor: '%s' is not a command; see 'dra-doctor --help'.\n", argv[1]);
    return 2;
}
