/*
 * finding.h - what a diagnosis produces: findings, and a list of them.
 *
 * A finding is self-contained: it owns copies of every string, so it outlives
 * the snapshot it was computed from (the controller keeps findings between
 * reconciles; the linter prints them after freeing nothing).  The copies are
 * reference-counted and never changed in place: dd_findings_copy shares them
 * (a snapshot's update keeps most of the previous one's findings).  Set the
 * strings only through this module.
 */
#ifndef DD_FINDING_H
#define DD_FINDING_H

#include <stddef.h>

enum dd_severity { DD_SEV_INFO = 0, DD_SEV_WARNING = 1, DD_SEV_ERROR = 2 };

/* "error", "warning", "info". */
const char *dd_severity_name(enum dd_severity s);

/* Parses "error"/"warning"/"info"; returns -1 when unknown. */
int dd_severity_parse(const char *s);

/* A reference to a Kubernetes object (or a node-local file such as the containerd config). */
struct dd_objref {
    char *api_version; /* "" for non-API objects */
    char *kind;
    char *namespace_;  /* "" for cluster-scoped objects */
    char *name;
};

struct dd_finding {
    const char *code;       /* stable rule code, static storage (the rule table) */
    enum dd_severity severity;
    struct dd_objref obj;   /* owned */
    char *file;             /* owned; NULL when the object has no source file (live objects) */
    int line;               /* 1-based, 0 when unknown */
    int col;                /* 1-based column within line, 0 when unknown (set by the caller
                               after dd_findings_add: only input findings know one) */
    char *message;          /* owned: what is wrong, with the evidence */
    char *fix;              /* owned: the concrete change that removes the finding */
    /* What the finding is about beyond its object, so a pod's diagnosis can pick the
     * findings on its path (its claim's class, that class's drivers, its node).  Owned;
     * NULL when not applicable. */
    char *scope_class;      /* a DeviceClass name */
    char *scope_driver;     /* a DRA driver name */
    char *scope_node;       /* a Node name */
};

struct dd_findings {
    struct dd_finding *v;   /* v[0..n) */
    size_t n, cap;
    int oom;                /* set when an append failed: the list is incomplete */
};

#define DD_FINDINGS_INIT { NULL, 0, 0, 0 }

/*
 * Appends a finding; copies every string (file may be NULL).  Returns the new
 * finding, or NULL when out of memory (then list->oom is set).
 */
struct dd_finding *dd_findings_add(struct dd_findings *list, const char *code,
                                   enum dd_severity sev, const char *api_version,
                                   const char *kind, const char *ns, const char *name,
                                   const char *file, int line, const char *message,
                                   const char *fix);

/* Sets f's scope fields (copies; each may be NULL).  0, or -1 when out of memory. */
int dd_finding_scope(struct dd_finding *f, const char *cls, const char *driver, const char *node);

/* Sorts by file, line, code, then object and message (then every other field: the order is
 * total): a stable order for output and tests. */
void dd_findings_sort(struct dd_findings *list);

/* dd_findings_sort where list->v[0..k) is sorted already (the findings an update kept): the
 * rest sorted and merged in, linear in the kept ones. */
void dd_findings_sort_tail(struct dd_findings *list, size_t k);
/* Removes from list, for each finding of gone, one equal to it (dd_finding_cmp) if there is
 * one, keeping the others in order.  Sets list->oom when out of memory (then nothing goes). */
void dd_findings_remove(struct dd_findings *list, const struct dd_findings *gone);
/* That order: <0, 0 (equal in every field), >0. */
int dd_finding_cmp(const struct dd_finding *a, const struct dd_finding *b);

/* 1 when f's strings are shared with another finding (a copy, or the one it copies). */
int dd_finding_shared(const struct dd_finding *f);
/* Appends a copy of f (its strings shared); NULL when out of memory (list->oom is set). */
struct dd_finding *dd_findings_copy(struct dd_findings *list, const struct dd_finding *f);


/* Moves into `into` the findings of `from` whose code, object and place (file, line) `into`
 * has none of, frees the others, and leaves `from` empty: the findings of one more run over
 * variants of the input, each fault of a definition reported once (the first run's words).
 * Sort afterwards. */
void dd_findings_merge(struct dd_findings *into, struct dd_findings *from);

/* Frees the findings without a file (about live objects) and keeps the others in order: lint
 * --cluster-inventory reports only on the manifests. */
void dd_findings_drop_live(struct dd_findings *list);

/* Counts findings at or above sev. */
size_t dd_findings_count(const struct dd_findings *list, enum dd_severity sev);

/* Frees every finding and leaves the list empty. */
void dd_findings_release(struct dd_findings *list);

#endif
