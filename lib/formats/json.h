/*
 * json.h - small read-only accessors over cJSON trees (the project's one
 * in-memory form of a Kubernetes object, whether it came from a file or the
 * API server), and parsers into them.  All pointers the accessors return are
 * borrowed from the tree.
 */
#ifndef DD_JSON_H
#define DD_JSON_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include <stddef.h>

#include "err.h"

/* Follows object keys (a NULL-terminated list) from o; NULL when any step is missing. */
const cJSON *dd_json_path(const cJSON *o, ...) __attribute__((sentinel));

/* The string at the path, or NULL when missing or not a string. */
const char *dd_json_str(const cJSON *o, ...) __attribute__((sentinel));

/* The array at the path, or NULL when missing or not an array. */
const cJSON *dd_json_arr(const cJSON *o, ...) __attribute__((sentinel));

/*
 * The integer at the path: a JSON number, or a string holding a decimal
 * integer (Kubernetes env values and quantities are strings).  Returns 1 and
 * sets *out, or 0 when missing or not an integer.
 */
int dd_json_int(const cJSON *o, int64_t *out, ...) __attribute__((sentinel));

/* 1 when the bool at the path is true. */
int dd_json_true(const cJSON *o, ...) __attribute__((sentinel));

/*
 * Parses a Kubernetes quantity that denotes a whole number ("2", "1k", "3Ki",
 * "1e3").  Returns 1 and sets *out, or 0 when s is not a whole quantity that
 * fits in int64 (e.g. "500m", "abc").
 */
int dd_quantity_int(const char *s, int64_t *out);

/*
 * obj (a tree of its own: its next and prev are ignored) moved into one allocation: its
 * nodes, then their keys and strings.  Returns the copy and frees obj, or obj itself,
 * untouched, on ENOMEM; cJSON_Delete frees either (the copy's root carries cJSON_IsReference,
 * so cJSON_Delete frees its one block and nothing under it).  The copy must not change: no
 * node of it can be freed, detached or added to.  Keys and strings that obj shares
 * (cJSON_StringIsConst, cJSON_IsReference) stay shared and must outlive it.  For caches:
 * 100,000 objects as a node and string per malloc spend a quarter of their memory on the
 * allocator's headers and rounding.  Where dd_json_tail marked members, the copy takes the
 * run of last members held once (dd_json_share's table) for every tree that ends alike,
 * rather than a copy of its own: then the copy's nodes are not all in its block, and its
 * first member's prev is the last of its own, not the last.
 */
cJSON *dd_json_pack(cJSON *obj);

/*
 * Moves the members of obj named in names (NULL-terminated; those present, in that order)
 * after the others, each marked as where a run of last members many objects have alike may
 * begin: apiVersion and kind in every object of a kind, a namespace, a node's name and a
 * pool in a claim's results.  dd_json_pack, not this, holds the runs: from the first marked
 * member (not obj's first) whose run is held (or seen before), the packed tree shares it.
 * Readers that look members up by name see no difference; the order printed changes.  A
 * no-op for a list obj shares (dd_json_share).
 */
void dd_json_tail(cJSON *obj, const char *const *names);

/*
 * Gives arr (an array or object of a malloc'd tree) the list of children held once for
 * every tree that has the same (members in the same order, with the same keys, types and
 * values) instead of its own, which it frees: every Pod's default tolerations, the
 * containers of a workload's replicas, the requests of a template's claims.  arr then
 * carries cJSON_IsReference: cJSON_Delete and dd_json_pack leave the list alone,
 * cJSON_Duplicate copies it, and nothing may change it.  A list is held from the second
 * time it is seen, for the life of the process: at most 32,768 lists of at most 4 KiB each,
 * 8 MiB in all (a node selector per node, an attribute value per model); past that, or
 * for a bigger list, arr keeps its own.  Any thread.
 */
void dd_json_share(cJSON *arr);

/*
 * Arena-allocated trees: the webhook parses every request into a per-thread arena so
 * that building and dropping a tree costs no malloc/free.  The arena owns every node
 * and string of the trees it returned and of the nodes added to them; they live until
 * dd_json_arena_reset or dd_json_arena_free.  Never cJSON_Delete them, nor a tree they
 * are part of (cJSON_Duplicate copies one out to the heap; the copy is the caller's).
 * Heap nodes added with cJSON's own functions stay the caller's to free.
 * One arena per thread: it is not thread-safe.
 */
struct dd_json_arena;

/*
 * A new empty arena (free it with dd_json_arena_free), or NULL on ENOMEM.  max_bytes
 * caps what it may hold between two resets (nodes and strings of a parse and what is
 * added to it), so a 4 MiB body of "[0,0,0,..." cannot take 30 times its size.
 */
struct dd_json_arena *dd_json_arena_new(size_t max_bytes);

/* Forgets every tree; keeps the first chunk for the next parse and frees the others,
 * so a huge body's memory is returned. */
void dd_json_arena_reset(struct dd_json_arena *a);

/* Frees a and everything in it; a may be NULL. */
void dd_json_arena_free(struct dd_json_arena *a);

/*
 * Parses one JSON value (RFC 8259, strictly) from untrusted buf[0..len) (need not be
 * NUL-terminated; borrowed for the call only) into a.  Members of objects whose key
 * equals skip_key (NULL: none; borrowed for the call) are checked but left out of the
 * tree, at any depth.  Returns the root, which a owns, or NULL with err set (and a as
 * it was before the call): DD_ETOOBIG when arrays/objects nest deeper than max_depth or
 * the tree would exceed the arena's max_bytes; DD_EPARSE with "malformed JSON at line
 * L, column C" (also in err->line, err->col: the first byte that cannot continue a
 * valid JSON text, or the end of the input) for malformed JSON, or with ": unexpected
 * data after the value" appended for anything but whitespace after the value;
 * DD_ENOMEM.  What both accept reads exactly as cJSON_ParseWithLength's tree would (a
 * string holding \u0000 ends there in both); cJSON is laxer (see lib/formats/json.c).
 */
cJSON *dd_json_arena_parse(struct dd_json_arena *a, const char *buf, size_t len, int max_depth,
                           const char *skip_key, struct dd_err *err);

/* Appends key: value (a string node) / key: {} (an empty object) to object obj; key and
 * value are copied into a.  The new node, which a owns, or NULL when obj is not an
 * object, on ENOMEM or past max_bytes. */
cJSON *dd_json_arena_add_string(struct dd_json_arena *a, cJSON *obj, const char *key,
                                const char *value);
cJSON *dd_json_arena_add_object(struct dd_json_arena *a, cJSON *obj, const char *key);

#endif
