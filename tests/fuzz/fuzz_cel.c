/*
 * fuzz_cel.c - libFuzzer entry for the CEL pipeline: compile the input as a
 * selector, query the static analyses, evaluate it against one fixed
 * example-driver device with a small cost limit, and free everything.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cel/cel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cel_attr attrs[] = {
    {"gpu.example.com", "model", CEL_ATTR_STRING, 0, {.s = "LATEST-GPU-MODEL"}},
    {"gpu.example.com", "index", CEL_ATTR_INT, 0, {.i = 0}},
    {"gpu.example.com", "uuid", CEL_ATTR_STRING, 0, {.s = "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"}},
    {"gpu.example.com", "driverVersion", CEL_ATTR_VERSION, 0, {.s = "1.0.0"}},
    {"gpu.example.com", "broken", CEL_ATTR_VERSION, 0, {.s = "1.x"}},
    {"other.io", "ok", CEL_ATTR_BOOL, 0, {.b = 1}},
};
static const struct cel_capacity caps[] = {
    {"gpu.example.com", "memory", "80Gi"},
    {"gpu.example.com", "compute", "100"},
};
static const struct cel_device dev = {"gpu.example.com", attrs, 6, caps, 2, 0};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits keep each run fast; the input is not NUL-terminated on
     * purpose, since cel_compile must respect len. */
    struct cel_limits lim = {4096, 64, 20000};
    struct dd_err err;
    struct cel_program *p = cel_compile((const char *)data, size, &lim, &err);
    const struct cel_driver_ref *drv;
    const struct cel_attr_ref *ar;
    size_t n, na;

    if (!p) {
        /* The message must always be NUL-terminated. */
        if (strlen(err.msg) >= sizeof(err.msg))
            __builtin_trap();
        return 0;
    }
    if (cel_program_drivers(p, &drv, &n) == CEL_DRIVERS_SET && n == 0)
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        if (!drv[i].name || drv[i].line < 1 || drv[i].col < 1)
            __builtin_trap();
    cel_program_attrs(p, &ar, &na);
    for (size_t i = 0; i < na; i++)
        if (!ar[i].name || ar[i].line < 1)
            __builtin_trap();
    (void)cel_eval_device(p, &dev, &lim, &err);
    {
        /* explain re-evaluates sub-expressions; its text must stay within the buffer. */
        char why[256];
        (void)cel_explain_device(p, &dev, why, sizeof(why), &err);
        if (strlen(why) >= sizeof(why))
            __builtin_trap();
    }
    cel_program_free(p);
    return 0;
}
