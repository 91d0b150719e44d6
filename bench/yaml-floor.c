/*
 * yaml-floor.c - the cost of libyaml's event parser alone on the benchmark
 * repository: a floor under any linter built on libyaml, which must at least
 * read every event.  Not part of the build or of `make bench`; run by hand
 * (see docs/benchmarks.md):
 *
 *   cc -O2 -o /tmp/yaml-floor bench/yaml-floor.c -lyaml
 *   find REPO -type f | sort | /usr/bin/time -v taskset -c 0 /tmp/yaml-floor
 *
 * Reads file names from standard input, one a line; reads each file into
 * memory and pulls every event with yaml_parser_parse, discarding it.
 * Prints the number of documents, events and bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static int parse_file(const char *path, long *docs, long *events, long *bytes)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    yaml_parser_t p;
    int ok = 1;

    if (!f) {
        perror(path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(path);
        fclose(f);
        return -1;
    }
    buf = malloc(n ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    *bytes += n;
    if (!yaml_parser_initialize(&p)) {
        free(buf);
        return -1;
    }
    yaml_parser_set_input_string(&p, buf, (size_t)n);
    for (;;) {
        yaml_event_t e;
        yaml_event_type_t t;

        if (!yaml_parser_parse(&p, &e)) {
            fprintf(stderr, "%s: %s\n", path, p.problem ? p.problem : "parse error");
            ok = 0;
            break;
        }
        t = e.type;
        (*events)++;
        if (t == YAML_DOCUMENT_START_EVENT)
            (*docs)++;
        yaml_event_delete(&e);
        if (t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    free(buf);
    return ok ? 0 : -1;
}

int main(void)
{
    char line[4096];
    long docs = 0, events = 0, bytes = 0, failed = 0;

    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] && parse_file(line, &docs, &events, &bytes) != 0)
            failed++;
    }
    printf("%ld documents, %ld events, %ld bytes, %ld files failed\n", docs, events, bytes, failed);
    return failed ? 1 : 0;
}
