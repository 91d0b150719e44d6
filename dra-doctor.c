/*
 * dra-doctor.c - the one binary: a table of subcommands, as git's git.c, and the
 * shell completion that reads it.
 *
 * Installed as kubectl-dra_doctor it is a kubectl plugin: `kubectl dra-doctor
 * diagnose -n NS POD` runs it with the words after the plugin's name, and the
 * cluster commands take kubectl's --kubeconfig, --context and -n/--namespace.
 */
#include <stdio.h>
#include <string.h>

#include "certs.h"
#include "controller.h"
#include "model/kubever.h"
#include "lint.h"
#include "webhook.h"

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static int completion_main(int argc, char **argv);

static const struct command commands[] = {
    { "lint", lint_main, "check DRA manifests offline (files, directories, stdin)" },
    { "diagnose", diagnose_main, "diagnose the pods of a live cluster once, read-only" },
    { "explain", explain_main, "why each device does or does not serve a pod's or claim's request" },
    { "controller", controller_main, "annotate stuck DRA pods with their root cause (reconcile loop)" },
    { "node", node_main, "node agent: publish containerd's CDI settings on the Node" },
    { "webhook", webhook_main, "HTTPS admission webhook: refuse broken DRA objects at the door" },
    { "certs", certs_main, "create or rotate the webhook's CA and serving certificate" },
    { "delete", delete_main, "delete objects in order, each gone before the next (uninstall)" },
    { "completion", completion_main, "print a bash or zsh completion script" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* "dra-doctor", or "kubectl dra-doctor" when run as the plugin. */
static const char *prog = "dra-doctor";

static void usage(FILE *f)
{
    size_t i;

    fprintf(f,
            "usage: %s [--version] [--help] <command> [<args>]\n"
            "\n"
            "dra-doctor finds why Kubernetes Dynamic Resource Allocation (DRA) pods stay\n"
            "Pending or start without their devices, and says how to fix it.\n"
            "\n"
            "commands:\n", prog);
    for (i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'%s <command> --help' describes a command.\n", prog);
}

/* ---- completion ------------------------------------------------------------------
 *
 * The scripts know the commands from the table above, and ask `dra-doctor COMMAND
 * --help` for a command's options when they complete one, so they never offer an option
 * the binary they complete lacks.  The values of options that take one of a few words
 * are below (tests/unit/test_install.c checks each is accepted and a wrong one refused);
 * anything else completes as a file name.
 */

struct choice {
    const char *command, *flags, *values; /* flags and values: space-separated */
};

static const struct choice choices[] = {
    { "lint", "-o --output", "text json sarif github" },
    { "lint", "--fail-on", "error warning never" },
    { "lint", "--kube-version", NULL }, /* the releases lib/model/kubever knows */
    { "lint", "--color", "auto always never" },
    { "diagnose", "-o --output", "text json" },
    { "explain", "-o --output", "text json" },
    { "webhook", "--unknown-driver", "deny warn" },
    { "certs", "--key-type", "ecdsa rsa" },
};

static void print_commands(void)
{
    size_t i;

    for (i = 0; i < NCOMMANDS; i++)
        printf("%s%s", i ? " " : "", commands[i].name);
    printf(" help version");
}

/* A shell function, valid in bash and zsh: the words option $2 of command $1 takes. */
static void print_choices(void)
{
    size_t i;
    int m;

    printf("_dra_doctor_choices() {\n    case \"$1 $2\" in\n");
    for (i = 0; i < sizeof(choices) / sizeof(choices[0]); i++) {
        const char *f = choices[i].flags;
        printf("    ");
        while (*f) {
            size_t n = strcspn(f, " ");
            printf("%s\"%s %.*s\"", f == choices[i].flags ? "" : "|", choices[i].command,
                   (int)n, f);
            f += n + (f[n] == ' ');
        }
        printf(") echo '");
        if (choices[i].values)
            printf("%s", choices[i].values);
        else
            for (m = KV_MIN_MINOR; m <= KV_MAX_MINOR; m++)
                printf("%s1.%d", m > KV_MIN_MINOR ? " " : "", m);
        printf("' ;;\n");
    }
    printf("    esac\n}\n");
}

static void completion_bash(void)
{
    printf("# bash completion for dra-doctor (and kubectl-dra_doctor); load it with\n"
           "#   source <(dra-doctor completion bash)\n"
           "# or install it: dra-doctor completion bash > /etc/bash_completion.d/dra-doctor\n");
    print_choices();
    printf("_dra_doctor() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local cmds='");
    print_commands();
    printf("'\n"
           "    COMPREPLY=()\n"
           "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
           "        COMPREPLY=($(compgen -W \"$cmds --help --version\" -- \"$cur\"))\n"
           "        return 0\n"
           "    fi\n"
           "    local sub=${COMP_WORDS[1]} words\n"
           "    case $sub in\n"
           "    help) COMPREPLY=($(compgen -W \"$cmds\" -- \"$cur\")); return 0 ;;\n"
           "    completion) [ \"$COMP_CWORD\" -eq 2 ] && COMPREPLY=($(compgen -W 'bash zsh' -- \"$cur\")); return 0 ;;\n"
           "    esac\n"
           "    words=$(_dra_doctor_choices \"$sub\" \"$prev\")\n"
           "    if [ -n \"$words\" ]; then\n"
           "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
           "        return 0\n"
           "    fi\n"
           "    case $cur in\n"
           "    -*) words=$(\"${COMP_WORDS[0]}\" \"$sub\" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u)\n"
           "        COMPREPLY=($(compgen -W \"$words\" -- \"$cur\")) ;;\n"
           "    *) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
           "    esac\n"
           "    return 0\n"
           "}\n"
           "complete -o filenames -F _dra_doctor dra-doctor kubectl-dra_doctor\n");
}

static void completion_zsh(void)
{
    printf("#compdef dra-doctor kubectl-dra_doctor\n"
           "# zsh completion for dra-doctor; load it with\n"
           "#   source <(dra-doctor completion zsh)        (after compinit)\n"
           "# or install it: dra-doctor completion zsh > \"${fpath[1]}/_dra-doctor\"\n");
    print_choices();
    printf("_dra_doctor() {\n"
           "    local -a cmds vals\n"
           "    cmds=(");
    print_commands();
    printf(")\n"
           "    if (( CURRENT == 2 )); then\n"
           "        compadd -- $cmds\n"
           "        return\n"
           "    fi\n"
           "    case ${words[2]} in\n"
           "    help) compadd -- $cmds; return ;;\n"
           "    completion) (( CURRENT == 3 )) && compadd -- bash zsh; return ;;\n"
           "    esac\n"
           "    vals=(${=\"$(_dra_doctor_choices ${words[2]} ${words[CURRENT-1]})\"})\n"
           "    if (( ${#vals} )); then\n"
           "        compadd -- $vals\n"
           "        return\n"
           "    fi\n"
           "    if [[ $PREFIX == -* ]]; then\n"
           "        compadd -- ${(f)\"$(${words[1]} ${words[2]} --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u)\"}\n"
           "        return\n"
           "    fi\n"
           "    _files\n"
           "}\n"
           "if [[ $funcstack[1] == _dra_doctor ]]; then\n"
           "    _dra_doctor \"$@\"\n"
           "else\n"
           "    compdef _dra_doctor dra-doctor kubectl-dra_doctor\n"
           "fi\n");
}

static int completion_main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "bash")) {
        completion_bash();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "zsh")) {
        completion_zsh();
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: %s completion bash|zsh\n"
               "\n"
               "Prints a completion script for commands, options and their values:\n"
               "  source <(dra-doctor completion bash)       # in ~/.bashrc\n"
               "  source <(dra-doctor completion zsh)        # in ~/.zshrc, after compinit\n", prog);
        return 0;
    }
    fprintf(stderr, "%s completion: give one shell, bash or zsh\n", prog);
    return 2;
}

int main(int argc, char **argv)
{
    const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
    size_t i;

    base = base ? base + 1 : (argc > 0 && argv[0] ? argv[0] : "");
    /* kubectl runs plugins by file name: kubectl-dra_doctor for `kubectl dra-doctor`. */
    if (!strcmp(base, "kubectl-dra_doctor"))
        prog = "kubectl dra-doctor";
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
    fprintf(stderr, "%s: '%s' is not a command; see '%s --help'.\n", prog, argv[1], prog);
    return 2;
}
