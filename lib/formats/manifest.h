/*
 * manifest.h - loading Kubernetes manifests (YAML or JSON) into cJSON trees.
 *
 * Input: files, directories (recursive; *.yaml, *.yml, *.json; sorted, so the
 * order is stable), or "-" for standard input.  Multi-document YAML streams
 * and `*List` kinds (an object with kind ending in "List" and an `items`
 * array) are flattened: each Kubernetes object becomes one struct mf_object
 * that remembers its file and the line/column where its mapping starts.
 *
 * JSON is parsed by the same YAML reader (JSON is YAML), so positions work
 * the same for both.  Every node of every tree has a recorded position; see
 * mf_pos().
 *
 * Hostile input is bounded: file size, nesting depth, number of documents,
 * and alias expansion (an alias copies its anchor's tree, and the total number
 * of nodes produced through aliases is capped, which makes "billion laughs"
 * fail fast with DD_ETOOBIG).
 *
 * cJSON ownership rule (stated once for the project): an item added to an
 * object or array belongs to that container; cJSON_Delete on the root frees it.
 */
#ifndef DD_MANIFEST_H
#define DD_MANIFEST_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "err.h"

struct mf_limits {
    size_t max_file_bytes;  /* per file or stdin; default 64 MiB */
    int max_depth;          /* mapping/sequence nesting; default 64 */
    size_t max_documents;   /* per file; default 100000 */
    size_t max_alias_nodes; /* nodes created by alias expansion, per file; default 10000 */
};

#define MF_LIMITS_DEFAULT { (size_t)64 << 20, 64, 100000, 10000 }

struct mf_object {
    cJSON *json;             /* the object's tree; owned by the set */
    const char *file;        /* source path as given ("-" shows as "<stdin>"); owned by the set */
    int line, col;           /* 1-based start of the object's mapping */
    const char *api_version; /* borrowed from json; never NULL ("" when absent) */
    const char *kind;        /* borrowed from json; never NULL */
    const char *namespace_;  /* metadata.namespace; "" when absent */
    const char *name;        /* metadata.name, or metadata.generateName; "" when absent */
};

/* What a diagnostic says about the input. */
enum mf_diag_kind {
    MF_DIAG_ERROR,    /* the file or a document cannot be read: malformed, oversized, I/O */
    MF_DIAG_NOT_K8S,  /* a document that is no Kubernetes object (a values file, a CI config) */
    MF_DIAG_K8S_LIKE, /* looks like a Kubernetes object (metadata, spec, a miscased
                         apiVersion or kind) but lacks a string apiVersion or kind */
    MF_DIAG_TEMPLATE, /* a Go/Helm template: read as text, never parsed */
    MF_DIAG_DUPLICATE /* a key repeated in one mapping: read as kubectl reads it (the last
                         value wins), the earlier value is silently lost */
};

/* A diagnostic about the input. */
struct mf_diag {
    int is_error;  /* kind == MF_DIAG_ERROR */
    enum mf_diag_kind kind;
    char *file;    /* owned by the set */
    int line, col; /* 0 when unknown */
    char *text;    /* owned; without the position prefix */
    char *chart;   /* MF_DIAG_TEMPLATE: the Helm chart directory (holding Chart.yaml) the
                      file belongs to, as a path; NULL outside a chart.  Owned */
};

struct mf_pos_map; /* private: node -> position index */

/*
 * Decides whether an object is kept (1) or only counted (0).  Dropping what a
 * consumer will never read as soon as it is parsed keeps memory flat on big
 * repositories.  List documents are always kept whole.
 */
typedef int (*mf_keep_fn)(void *ctx, const cJSON *obj);

/*
 * Optional, with keep: lets the reader skip building the trees of documents
 * keep would drop.  Called with the top-level apiVersion and kind of a
 * document (never a *List kind); returns 1 only when keep returns 0 for every
 * object of that apiVersion and kind that has no mapping key equal to
 * mf_set.skim_unless or skim_unless2 (at any depth; NULL: no such condition).  Such a
 * document is still read to its end (so errors are reported as before) and
 * counted in nfiltered, but no tree or positions are built for it.
 */
typedef int (*mf_skim_fn)(void *ctx, const char *api_version, const char *kind);

struct mf_set {
    struct mf_object *objs; /* objs[0..n) in input order */
    size_t n, cap;
    struct mf_diag *diags;  /* errors and notes, in input order */
    size_t ndiags, capdiags;
    size_t nerrors;         /* how many diags are errors */
    cJSON **roots;          /* private: document trees (one per document) */
    size_t nroots, caproots;
    char **files;           /* private: interned file names */
    size_t nfiles, capfiles;
    struct mf_pos_map *pos; /* private */
    mf_keep_fn keep;        /* optional filter, set before loading; NULL keeps everything */
    mf_skim_fn skim;        /* optional, only with keep; see mf_skim_fn */
    const char *skim_unless; /* borrowed; see mf_skim_fn */
    const char *skim_unless2; /* the same */
    void *keep_ctx;         /* passed to keep and skim */
    size_t nfiltered;       /* objects read but dropped by keep (not in objs) */
    /*
     * Optional, set before loading: 1 keeps the trees compactly, with their
     * positions, in one arena (struct ydoc_arena), about half the memory and
     * less time.  The trees are then read-only: no node may be freed,
     * detached, replaced or given new children.
     */
    int compact;
    struct ydoc_arena *arena; /* private: the trees when compact */
    cJSON **added;            /* private: nodes mf_set_add_string gave arena trees */
    size_t nadded, capadded;
};

#define MF_SET_INIT { 0 }

/*
 * Adds the member key: value (a string) to obj, a node of one of set's trees,
 * compact or not: the set owns the new node and frees it with the tree.
 * Returns the new node, or NULL when out of memory.
 */
cJSON *mf_set_add_string(struct mf_set *set, cJSON *obj, const char *key, const char *value);

/* Initialises an empty set (same as MF_SET_INIT). */
void mf_set_init(struct mf_set *set);

/* Frees everything the set owns and leaves it empty (reusable). */
void mf_set_release(struct mf_set *set);

/*
 * Loads path into set.  A directory is walked recursively.  Malformed or
 * oversized input does not stop the walk: each failure is recorded as an error
 * diag ("expected ..., found ..." with file:line:col) and loading goes on with
 * the next document that can be found, or the next file.  Documents that are
 * not Kubernetes objects (no string apiVersion and kind) become a NOT_K8S or
 * K8S_LIKE diag, except in the root directory of a Helm chart (Chart.yaml,
 * values.yaml are the chart's, not manifests); empty documents are ignored.
 * A template is not parsed but becomes one TEMPLATE diag at its first action:
 * any file below a chart's templates/ directory, and any other file that
 * does not parse as YAML and has a template action (`{{`) where YAML would
 * start a value (a line's start, after `: ` or `- `).  A template action
 * inside a string (a PrometheusRule's `{{ $value }}`) is text, not a template.
 * Returns DD_OK when everything was read, DD_EPARSE / DD_ETOOBIG / DD_EIO for
 * the first failure (details in set->diags), DD_ENOMEM.  lim may be NULL.
 */
enum dd_rc mf_load_path(struct mf_set *set, const char *path, const struct mf_limits *lim);

/* Same for an in-memory buffer; name is used as the file name in positions. */
enum dd_rc mf_load_buffer(struct mf_set *set, const char *name, const char *buf, size_t len,
                          const struct mf_limits *lim);

/*
 * Position of any node of any tree in the set (the object itself, a field
 * value, an array item).  Returns 1 and fills line/col (either may be NULL),
 * or 0 when the node is unknown (e.g. created after loading).
 */
int mf_pos(const struct mf_set *set, const cJSON *node, int *line, int *col);

/* Formats a diag as "file:line:col: error: text" into buf; returns buf. */
const char *mf_diag_format(const struct mf_diag *d, char *buf, size_t size);

#endif
