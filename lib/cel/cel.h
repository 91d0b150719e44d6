/*
 * cel.h - Common Expression Language for DRA device selectors.
 *
 * A compiled program is an immutable AST (all nodes in one arena owned by the
 * program) plus the results of static analysis.  Compilation = lex + parse +
 * check against the DRA environment (the single variable `device`, see
 * dra-facts.md section 3).  Evaluation runs the AST against one device; it
 * is reentrant: any number of threads may evaluate one program concurrently.
 *
 * Errors are values, as in cel-spec: inside the evaluator an error is a
 * value that `&&` / `||` may absorb (false && error == false, true || error ==
 * true); only an error that reaches the top becomes CEL_ERROR.
 */
#ifndef DD_CEL_H
#define DD_CEL_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct cel_limits {
    size_t max_len;    /* source length in bytes; Kubernetes allows 10Ki */
    int max_depth;     /* parse nesting depth (parentheses, calls, operators) */
    uint64_t max_cost; /* evaluation steps per device; Kubernetes: 1,000,000 */
};

/* The limits Kubernetes applies to a DRA selector. */
#define CEL_LIMITS_DEFAULT { 10 * 1024, 250, 1000000 }

struct cel_program;

/*
 * The environment Kubernetes declares for DRA selectors (k8s.io/dynamic-resource-
 * allocation cel/compile.go on k8s.io/apiserver's base environment), version by
 * version.  kube_minor is the Kubernetes minor version (34 to 37); stored 0 is
 * kube-apiserver validating a new object (the NewExpressions environment: only the
 * libraries the minimum compatibility version, kube_minor - 1, knows), 1 an object
 * already stored or the scheduler (StoredExpressions: every library of that release).
 * features: CEL_FEATURE_* bits (the DRA feature gates that change the environment).
 */
#define CEL_FEATURE_CONSUMABLE_CAPACITY 1u /* DRAConsumableCapacity: allowMultipleAllocations */
#define CEL_FEATURE_LIST_ATTRIBUTES 2u     /* DRAListTypeAttributes: list values, includes() */

struct cel_env {
    int kube_minor;
    int stored;
    unsigned features;
};

/* Kubernetes v1.37's defaults: DRAConsumableCapacity on, DRAListTypeAttributes off.  1.37
 * changed the environment (k8s.io/dynamic-resource-allocation v0.37 cel/compile.go, k8s.io/
 * apiserver v0.37 environment/base.go): list-valued attributes reach every selector whatever
 * the gate (the gate only changes what a new selector may be checked against), the stored
 * environment declares attributes as dyn, and includes() is the lists library's (version 1,
 * stored expressions only unless the gate adds it), without the 48-value limit and with the
 * lists library's cost. */
#define CEL_KUBE_MINOR_DEFAULT 37
#define CEL_KUBE_MINOR_MIN 34
#define CEL_KUBE_MINOR_MAX 37
#define CEL_ENV_DEFAULT { CEL_KUBE_MINOR_DEFAULT, 0, CEL_FEATURE_CONSUMABLE_CAPACITY }

/*
 * The environment cel_compile uses: the process-wide default, set once at start-up by
 * a command's options (lint --kube-version, --feature-gates: kv_cel_env) before any compile, and
 * read-only afterwards.  Returns DD_EINVAL for a kube_minor outside 34..37.
 */
enum dd_rc cel_set_default_env(const struct cel_env *env);
const struct cel_env *cel_default_env(void);


/*
 * Compiles src[0..len) (need not be NUL-terminated).  lim may be NULL for
 * CEL_LIMITS_DEFAULT.  Returns a new program (free with cel_program_free) or
 * NULL with err filled:
 *   DD_ETOOBIG  longer than max_len, or nested deeper than max_depth;
 *   DD_EPARSE   syntax error;
 *   DD_ETYPE    the expression cannot be a bool, references an undeclared
 *               identifier (only `device` exists), an undefined field of
 *               device (driver, attributes, capacity, allowMultipleAllocations
 *               exist), or calls an unknown function.
 * err->line / err->col are the 1-based position of the fault and err->msg is
 * "LINE:COL: what\n | <source line>\n | <spaces>^".
 */
struct cel_program *cel_compile(const char *src, size_t len, const struct cel_limits *lim,
                                struct dd_err *err);

/* Frees p and everything it owns.  NULL is allowed. */
void cel_program_free(struct cel_program *p);

/* cel_compile in env (NULL: the default environment). */
struct cel_program *cel_compile_env(const char *src, size_t len, const struct cel_limits *lim,
                                    const struct cel_env *env, struct dd_err *err);

/* ---- Static analysis (results are computed by cel_compile) -------------- */

enum cel_drivers_kind {
    CEL_DRIVERS_ANY = 0, /* the expression does not pin device.driver */
    CEL_DRIVERS_SET = 1, /* device.driver must be one of the listed names */
    CEL_DRIVERS_NONE = 2 /* contradictory constraints: no driver can match */
};

struct cel_driver_ref {
    const char *name; /* the driver name literal; borrowed from the program */
    int line, col;    /* 1-based position of the literal in the source */
};

/*
 * The driver constraint of the expression: `device.driver == 'x'`,
 * `'x' == device.driver`, `device.driver in ['x', 'y']`, combined through
 * `&&` (intersection; either side alone suffices) and `||` (union, only when
 * both sides constrain).  Anything else (negation, `!=`, ternaries, string
 * functions on device.driver) leaves the driver unconstrained.
 * *out points into the program (valid until cel_program_free); *n names.
 */
enum cel_drivers_kind cel_program_drivers(const struct cel_program *p,
                                          const struct cel_driver_ref **out, size_t *n);

struct cel_attr_ref {
    const char *domain; /* map key after attributes/capacity; NULL when not a literal */
    const char *name;   /* attribute or capacity name; borrowed from the program */
    int capacity;       /* 1 for device.capacity[...], 0 for device.attributes[...] */
    int guarded;        /* 1 when this reference is the operand of has() or the
                           right-hand side of `"name" in device.attributes[d]`, so a
                           missing key yields false rather than an error */
    int line, col;      /* position of the name in the source */
};

/*
 * Every device.attributes[D].N / device.attributes[D]["N"] and capacity
 * reference, in source order, including guarded ones.  *out points into the
 * program.
 */
void cel_program_attrs(const struct cel_program *p, const struct cel_attr_ref **out, size_t *n);

/* ---- Evaluation --------------------------------------------------------- */

/*
 * The value kinds of resource.k8s.io/v1 DeviceAttribute.  The list kinds (ints,
 * bools, strings, versions) are values only with DRAListTypeAttributes; without
 * it, as for CEL_ATTR_NONE (no value the API knows), every selector fails on the
 * device with "attribute X: unsupported attribute value", as the scheduler does.
 */
enum cel_attr_kind {
    CEL_ATTR_INT, CEL_ATTR_BOOL, CEL_ATTR_STRING, CEL_ATTR_VERSION,
    CEL_ATTR_INTS, CEL_ATTR_BOOLS, CEL_ATTR_STRINGS, CEL_ATTR_VERSIONS, CEL_ATTR_NONE
};

/* One device attribute, already qualified: unprefixed names belong to the driver's domain.
 * kind says which value member is set: a live model holds tens of attributes per device
 * and 40,000 devices, so they share one word (32 bytes an attribute, not 80). */
struct cel_attr {
    const char *domain;
    const char *name;
    enum cel_attr_kind kind;
    unsigned nv;                /* the list kinds: number of values */
    union {
        int64_t i;              /* CEL_ATTR_INT */
        int b;                  /* CEL_ATTR_BOOL */
        const char *s;          /* CEL_ATTR_STRING, or the semver text of CEL_ATTR_VERSION */
        const int64_t *iv;      /* CEL_ATTR_INTS */
        const int *bv;          /* CEL_ATTR_BOOLS */
        const char *const *sv;  /* CEL_ATTR_STRINGS, CEL_ATTR_VERSIONS */
    };
};

struct cel_capacity {
    const char *domain;
    const char *name;
    const char *quantity; /* Kubernetes quantity text, e.g. "80Gi", "100", "500m" */
};

/* The `device` variable.  Everything is borrowed by the evaluator for the call. */
struct cel_device {
    const char *driver;
    const struct cel_attr *attrs;
    size_t nattrs;
    const struct cel_capacity *caps;
    size_t ncaps;
    int allow_multiple_allocations;
};

enum cel_verdict { CEL_FALSE = 0, CEL_TRUE = 1, CEL_ERROR = -1 };

/*
 * Parses s[0..n) with resource.ParseQuantity's grammar ("80Gi", "1.5", "500m", "1e3") into
 * nano-units, rounded up away from zero below 1n as ParseQuantity rounds.  Returns 0, or -1
 * when s is no quantity or its magnitude reaches 10^27.  The allocator's capacities and
 * counters are quantities too (lib/model/alloc).
 */
int cel_quantity_parse(const char *s, size_t n, __int128 *nano);

/*
 * Evaluates p for dev.  Returns CEL_TRUE/CEL_FALSE, or CEL_ERROR with the
 * runtime error in err (DD_EPARSE-free messages as CEL-Go words them, e.g.
 * "no such key: model", "actual cost limit exceeded", "no such overload";
 * err->rc is DD_ETYPE or DD_ETOOBIG for the cost limit).  lim may be NULL.
 */
enum cel_verdict cel_eval_device(const struct cel_program *p, const struct cel_device *dev,
                                 const struct cel_limits *lim, struct dd_err *err);

/*
 * Like cel_eval_device, and *cost receives the runtime cost cel-go would count
 * (kube-scheduler aborts past CEL_LIMITS_DEFAULT's max_cost).  cost may be NULL.
 */
enum cel_verdict cel_eval_device_cost(const struct cel_program *p, const struct cel_device *dev,
                                      const struct cel_limits *lim, uint64_t *cost,
                                      struct dd_err *err);

/*
 * Devices built once for many evaluations: cel_eval_device builds its device's CEL value
 * anew each call, which is most of its cost for a simple selector.  A set holds the values
 * of many devices in one arena (freed together); a value borrows the strings of the
 * struct cel_device it was built from (they must outlive the set) and is read-only once
 * built, so any number of threads may evaluate programs against it at once.
 */
struct cel_device_set;
struct cel_device_value;

struct cel_device_set *cel_device_set_new(void);   /* NULL on ENOMEM */
void cel_device_set_free(struct cel_device_set *s); /* NULL is allowed */
/* Frees the values built into s (every one it returned goes); s takes new ones after. */
void cel_device_set_clear(struct cel_device_set *s);

/* dev's value, built into s; NULL on ENOMEM.  It serves programs of any feature set. */
const struct cel_device_value *cel_device_value(struct cel_device_set *s,
                                                const struct cel_device *dev);

/* cel_eval_device for a built value: the same verdict and error text. */
enum cel_verdict cel_eval_value(const struct cel_program *p, const struct cel_device_value *v,
                                const struct cel_limits *lim, struct dd_err *err);

/*
 * Evaluates p for dev like cel_eval_device and, when the result is not true, writes
 * to buf[0..cap) the smallest sub-expression that decided it with the values it saw:
 * `device.attributes["gpu.example.com"].model == "H100" is false:
 * device.attributes["gpu.example.com"].model is "LATEST-GPU-MODEL"`, or
 * `10 / device.attributes["x"].index fails: division by zero: ...`.  buf is "" for
 * true.  err as for cel_eval_device.
 */
enum cel_verdict cel_explain_device(const struct cel_program *p, const struct cel_device *dev,
                                    char *buf, size_t cap, struct dd_err *err);

/*
 * 1 when p is false, without error, on every device of driver: its driver tests
 * (cel_program_drivers) exclude the driver, and `false && x` is false in CEL whatever x does,
 * errors included.  Only when p's estimated cost is within lim's max_cost (NULL:
 * CEL_LIMITS_DEFAULT): past it cel-go may stop with "actual cost limit exceeded" before it
 * reaches the driver test.  Such devices need not be evaluated (cel_eval_value does not).
 */
int cel_program_excludes_driver(const struct cel_program *p, const char *driver,
                                const struct cel_limits *lim);

/* The estimated maximum cost kube-apiserver computes for p (CEL_ETOOBIG past 1,000,000). */
uint64_t cel_program_cost(const struct cel_program *p);

#endif
