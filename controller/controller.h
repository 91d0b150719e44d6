/*
 * controller.h - the subcommands that work against a live cluster.
 *
 *   controller  the reconcile loop that annotates pods with their root cause
 *   diagnose    the same diagnosis, once, printed
 *   node        the node agent that publishes containerd's CDI settings
 *   delete      objects deleted in order, each gone before the next (Helm's uninstall hook)
 *
 * Each returns a process exit code.
 */
#ifndef DD_CONTROLLER_H
#define DD_CONTROLLER_H

int controller_main(int argc, char **argv);
int diagnose_main(int argc, char **argv);
int explain_main(int argc, char **argv);
int node_main(int argc, char **argv);
int delete_main(int argc, char **argv);

#endif
