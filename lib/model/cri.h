/*
 * cri.h - what a node's container runtime does with CDI, read from
 * containerd's config.toml.  This is the only place that knows containerd's
 * layouts:
 *   version 1 (containerd 1.x legacy)  [plugins.cri]                          CDI default off
 *   version 2 (containerd 1.7)         [plugins."io.containerd.grpc.v1.cri"]  CDI default off
 *   version 3 (containerd 2.x)         [plugins."io.containerd.cri.v1.runtime"] CDI default on
 * In every layout `enable_cdi` (bool) and `cdi_spec_dirs` (array of strings,
 * default ["/etc/cdi", "/var/run/cdi"]) sit directly in that plugin table.
 * What the file says is not always what the runtime does: containerd 2.4 removed
 * enable_cdi (CDI is always on), so the runtime's version, when known, has the last
 * word (cri_config_apply_runtime).
 */
#ifndef DD_CRI_H
#define DD_CRI_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "err.h"
#include "formats/toml.h"

#define CRI_MAX_SPEC_DIRS 16

struct cri_config {
    char *file;              /* path read, owned; NULL when built from a tree */
    int version;             /* config schema version: 1, 2 or 3 */
    const char *plugin;      /* the CRI plugin table name used for this version (static) */
    int enable_cdi;          /* effective value after defaults */
    int enable_cdi_line;     /* line of the explicit setting; 0 when defaulted */
    char *spec_dirs[CRI_MAX_SPEC_DIRS]; /* effective cdi_spec_dirs, owned */
    size_t nspec_dirs;
    int spec_dirs_line;      /* line of the explicit setting; 0 when defaulted */
    const char *table;       /* that plugin table as written in TOML, for messages, e.g.
                                plugins."io.containerd.grpc.v1.cri" (static) */
    char *runtime;           /* the runtime's version, "containerd://1.7.35", owned; NULL
                                when unknown (a file given to lint) */
    int enable_cdi_ignored;  /* the file sets enable_cdi = false, which this runtime
                                version ignores: CDI is on all the same */
    char cdi_enabled_at[24]; /* when the node agent saw CDI turned on after it had been
                                off ("2026-12-01T21:10:15Z", UTC), or "": containers
                                started before then run without their CDI devices */
};

/* Fills out from a parsed config (borrowed).  `plugin` is the key under
 * [plugins] ("cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime").
 * Error messages start "line N: " with err->line set when a line is known.
 * DD_EINVAL for a version other than 1, 2 or 3; DD_ETYPE also for a
 * non-integer version or a plugins / plugin entry that is not a table.
 * On failure out is left zeroed (nothing to release).  DD_ETYPE with a message when a
 * known key has the wrong type (e.g. enable_cdi = "yes"); DD_ETOOBIG for too
 * many spec dirs. */
enum dd_rc cri_config_from_toml(const struct toml_value *root, struct cri_config *out,
                                struct dd_err *err);

/* Reads and parses path (size-capped), then cri_config_from_toml.  Errors carry
 * "path:line: ..." in err->msg. */
/* The cap is 4 MiB (DD_ETOOBIG beyond); DD_EIO when the file cannot be read.
 * Messages without a line read "path: ...".  path is borrowed (copied into
 * out->file). */
enum dd_rc cri_config_load(const char *path, struct cri_config *out, struct dd_err *err);

/*
 * What the runtime at runtime_version ("containerd://2.4.2", a Node's
 * status.nodeInfo.containerRuntimeVersion) makes of c: its version is recorded, and a
 * runtime that has no enable_cdi any more (containerd 2.4 and later) has CDI on whatever
 * the file says (enable_cdi_ignored tells when the file said false).  Other runtimes and
 * NULL leave c as it is, but for the version.  DD_ENOMEM, else DD_OK.
 */
enum dd_rc cri_config_apply_runtime(struct cri_config *c, const char *runtime_version);

/*
 * The facts the node agent publishes on its Node (annotation dra-doctor.io/cdi):
 *   {"source":"/etc/containerd/config.toml","version":2,"enableCDI":false,
 *    "enableCDILine":56,"specDirs":["/etc/cdi","/var/run/cdi"],
 *    "runtime":"containerd://1.7.35"}
 * plus "enableCDIIgnored":true and "cdiEnabledAt":"<RFC 3339 UTC>" when they apply.
 * cri_config_to_json returns a new tree (cJSON_Delete it) or NULL on ENOMEM;
 * cri_config_from_json fills out (DD_ETYPE for a malformed annotation).
 */
cJSON *cri_config_to_json(const struct cri_config *c);
enum dd_rc cri_config_from_json(const cJSON *facts, struct cri_config *out, struct dd_err *err);

/*
 * What a runtime does by default, inferred from a Node's
 * status.nodeInfo.containerRuntimeVersion: "containerd://1.x" -> the version 2
 * layout's defaults (CDI off), "containerd://2.x" -> version 3 (CDI on).
 * DD_ENOTFOUND for other runtimes (nothing inferred).  out->file and out->runtime
 * are set to the runtime version string.
 */
enum dd_rc cri_config_infer(const char *runtime_version, struct cri_config *out);

/* 1 when dir (after removing trailing slashes) is one of the spec dirs. */
int cri_config_has_spec_dir(const struct cri_config *c, const char *dir);

/* Frees what out owns; leaves it zeroed. */
void cri_config_release(struct cri_config *c);

#endif
