/*
 * yaml.h - the one seam to libyaml: a YAML (or JSON) stream becomes cJSON
 * trees, one per document, with the 1-based line/column of every node.
 *
 * Only lib/formats/yaml.c includes libyaml's <yaml.h>; the prefix is ydoc_ because libyaml
 * already owns yaml_.
 *
 * Scalar typing follows what Kubernetes does (sigs.k8s.io/yaml decodes with
 * go-yaml v2, i.e. YAML 1.1 resolution, then converts to JSON):
 *   - plain ~, null, Null, NULL and the empty scalar are null;
 *   - plain y/Y/yes/Yes/YES/true/True/TRUE/on/On/ON are true, and
 *     n/N/no/No/NO/false/False/FALSE/off/Off/OFF are false (so `value: yes`
 *     is a boolean, exactly as kubectl would send it);
 *   - plain integers (decimal, 0x hex, 0o or leading-0 octal, 0b binary,
 *     `_` separators allowed) and floats (including .inf/.nan) are numbers,
 *     held as doubles by cJSON (so `defaultMode: 0644` is 420);
 *   - everything else, every quoted scalar and every block scalar is a string;
 *   - !!str forces a string; !!int, !!float, !!bool and !!null require the
 *     text to resolve to that type (else an error); other tags are ignored.
 * Mapping keys are kept as their raw text (go-yaml would turn `yes:` into
 * "true"; manifests do not rely on that).  Merge keys (`<<`) are not expanded;
 * `<<` is an ordinary key.  An alias deep-copies its anchor's tree; the copies
 * carry the alias's position.  Anchors are per document and take effect when
 * their node is complete, so a node cannot contain an alias to itself.
 */
#ifndef DD_YAML_H
#define DD_YAML_H

#include <stddef.h>
#include <cjson/cJSON.h>

#include "err.h"

struct ydoc_limits {
    int max_depth;          /* mapping/sequence nesting, root = 1; must be > 0 */
    size_t max_documents;   /* per stream; must be > 0 */
    size_t max_alias_nodes; /* nodes created by alias expansion, per stream */
};

/* The position of one node of a document tree. */
struct ydoc_pos {
    const cJSON *node; /* borrowed: a node of the tree handed to sink->document */
    int line, col;     /* 1-based */
};

/*
 * Where documents and input errors go.  A callback returns DD_OK to go on;
 * any other code stops the stream and is returned by ydoc_parse_stream.
 */
struct ydoc_arena;

struct ydoc_sink {
    void *ctx; /* passed back unchanged */
    /*
     * One well-formed document.  root: a new tree, ownership passes to the
     * callee; NULL for an empty (or null) document.  pos[0..npos): borrowed,
     * valid during the call only; one entry for every node of root.
     * With an arena (below): root belongs to the arena, pos is NULL and npos
     * 0 (positions: ydoc_arena_pos), and the callee may give the document's
     * space back with ydoc_arena_drop during the call.
     */
    enum dd_rc (*document)(void *ctx, cJSON *root, const struct ydoc_pos *pos, size_t npos);
    /*
     * One input error (rc DD_EPARSE or DD_ETOOBIG, line/col 1-based or 0,
     * msg without position).  err: borrowed for the call.  The partial
     * document is dropped; parsing goes on with the next document when the
     * stream allows it.
     */
    enum dd_rc (*error)(void *ctx, const struct dd_err *err);
    /*
     * Optional (NULL: ignored): something the document is read in spite of, as kubectl reads
     * it — a key repeated in one mapping, of which the last value is kept.  err: borrowed.
     */
    enum dd_rc (*warning)(void *ctx, const struct dd_err *err);
    /*
     * Optional (NULL: every document is a tree of its own, freed with cJSON_Delete): where
     * documents are built instead.  Borrowed.
     */
    struct ydoc_arena *arena;
};

/*
 * An arena holds the documents of many streams compactly: nodes side by side
 * with their positions (8 bytes a node instead of a table entry), texts packed
 * without per-allocation headers, and everything freed at once.  Its trees are
 * read-only: no node of them may be freed (cJSON_Delete), detached, replaced
 * or given new children.  The same trees, positions, errors and return codes
 * as without an arena.
 */
struct ydoc_arena *ydoc_arena_new(void); /* NULL when out of memory */

/* Frees the arena and every tree in it (a may be NULL). */
void ydoc_arena_free(struct ydoc_arena *a);

/*
 * Position of a node of a tree built in a (a may be NULL): returns 1 and
 * fills line/col (either may be NULL), or 0 when the node is none of a's.
 */
int ydoc_arena_pos(const struct ydoc_arena *a, const cJSON *node, int *line, int *col);

/*
 * Only from sink->document: takes back the space of the document being
 * delivered (its tree must not be used after the call).
 */
void ydoc_arena_drop(struct ydoc_arena *a);

/*
 * Parses buf[0..len) (borrowed; need not be NUL-terminated) and feeds sink.
 * lim and sink: borrowed.  Returns DD_OK when every document was delivered,
 * else the code of the first input error (DD_EPARSE, DD_ETOOBIG), DD_ENOMEM,
 * or the first non-DD_OK code a callback returned.
 */
enum dd_rc ydoc_parse_stream(const char *buf, size_t len, const struct ydoc_limits *lim,
                             const struct ydoc_sink *sink);

/*
 * How a stream is read.  Documents in the subset manifests use (block
 * mappings and sequences, one-line plain and quoted scalars, block scalars,
 * flow collections and JSON) are read by a direct scanner; every other
 * document (anchors, tags, multi-line flow scalars, tabs, anything
 * malformed...) is re-read by libyaml from where it starts, so trees,
 * positions and errors are libyaml's in every case.  These flags and counters
 * exist for tests and benchmarks.
 */
#define YDOC_LIBYAML_ONLY 1u /* every document through libyaml */

struct ydoc_stats {
    size_t fast_docs; /* documents the direct scanner delivered (skimmed ones included) */
    size_t fallbacks; /* times libyaml took over (each re-reads one or more documents) */
    size_t skimmed;   /* documents reported through ydoc_skim.skipped */
};

/* ydoc_parse_stream with flags (YDOC_*) and, unless NULL, counters added to *stats. */
enum dd_rc ydoc_parse_stream_ex(const char *buf, size_t len, const struct ydoc_limits *lim,
                                const struct ydoc_sink *sink, unsigned flags,
                                struct ydoc_stats *stats);

/*
 * Skimming: documents the consumer would throw away need not be built.  When
 * the direct scanner reads a document whose root is a block mapping with
 * plain keys, whose top-level apiVersion and kind are one-line plain scalars
 * typed as strings (kind not ending in "List"), and skip(ctx, apiVersion,
 * kind) returns 1, it reads the rest of the document without making nodes
 * and, if that document has no mapping key equal to unless_key or unless_key2 (any
 * depth; NULL: no condition) and would have been delivered as a tree, calls
 * skipped(ctx) instead of sink->document.  Anything else (libyaml's
 * documents, errors, quoted keys, very wide mappings...) is built and
 * delivered as usual: skimming changes which documents reach
 * sink->document, never the trees, positions, errors or return code.
 */
struct ydoc_skim {
    void *ctx; /* passed back unchanged */
    int (*skip)(void *ctx, const char *api_version, const char *kind);
    const char *unless_key; /* borrowed */
    const char *unless_key2; /* a second such key, or NULL; borrowed */
    enum dd_rc (*skipped)(void *ctx); /* may be NULL; non-DD_OK stops the stream */
};

/* ydoc_parse_stream_ex with skimming (skim may be NULL: none). */
enum dd_rc ydoc_parse_stream_skim(const char *buf, size_t len, const struct ydoc_limits *lim,
                                  const struct ydoc_sink *sink, const struct ydoc_skim *skim,
                                  unsigned flags, struct ydoc_stats *stats);

#endif /* DD_YAML_H */

