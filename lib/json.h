/*
 * json.h - small read-only accessors over cJSON trees (the project's one
 * in-memory form of a Kubernetes object, whether it came from a file or the
 * API server).  All returned pointers are borrowed from the tree.
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
 * Parses one JSON value from untrusted buf[0..len) (need not be
 * NUL-terminated): a new tree (cJSON_Delete it), or NULL with err set:
 * DD_ETOOBIG when arrays/objects nest deeper than max_depth (checked before
 * any tree is built), DD_EPARSE with "line L, column C" for malformed JSON or
 * anything but whitespace after the value.
 */
cJSON *dd_json_parse(const char *buf, size_t len, int max_depth, struct dd_err *err);

#endif
