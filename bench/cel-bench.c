/*
 * cel-bench.c - selector evaluation as the scheduler runs it: one compiled
 * selector evaluated on N devices that differ in one attribute ("index"),
 * timed over the whole loop on one core.  bench/cel-bench.sh runs it beside
 * the Go oracle (e2e/peers/celoracle -bench) with the same selector and devices.
 *
 *   cel-bench N 'EXPRESSION'   prints {"devices": N, "matched": M, "ns_per_device": X}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cel/cel.h"

int main(int argc, char **argv)
{
    struct dd_err err;
    struct cel_program *p;
    struct cel_attr attrs[5] = {
        {.domain = "gpu.example.com", .name = "model", .kind = CEL_ATTR_STRING, .s = "LATEST-GPU-MODEL"},
        {.domain = "gpu.example.com", .name = "uuid", .kind = CEL_ATTR_STRING,
         .s = "gpu-18db0e85-99e9-c746-8531-ffeb86328b39"},
        {.domain = "gpu.example.com", .name = "driverVersion", .kind = CEL_ATTR_VERSION, .s = "1.0.0"},
        {.domain = "gpu.example.com", .name = "healthy", .kind = CEL_ATTR_BOOL, .b = 1},
        {.domain = "gpu.example.com", .name = "index", .kind = CEL_ATTR_INT},
    };
    struct cel_capacity caps[1] = {{"gpu.example.com", "memory", "80Gi"}};
    struct cel_device dev = {"gpu.example.com", attrs, 5, caps, 1, 0};
    struct timespec t0, t1;
    long n, matched = 0;

    if (argc != 3 || (n = atol(argv[1])) <= 0) {
        fprintf(stderr, "usage: cel-bench N EXPRESSION\n");
        return 2;
    }
    /* Compiled once, as the scheduler caches a class's compiled selectors. */
    if (!(p = cel_compile(argv[2], strlen(argv[2]), NULL, &err))) {
        fprintf(stderr, "cel-bench: %s\n", err.msg);
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        attrs[4].i = i;
        matched += cel_eval_device(p, &dev, NULL, &err) == CEL_TRUE;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("{\"devices\": %ld, \"matched\": %ld, \"ns_per_device\": %.1f}\n", n, matched,
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n);
    cel_program_free(p);
    return 0;
}
