/*
 * report.c - the lint output formats.  The contracts are in report.h.
 */
#include "report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ---------------------------------------------------- */

static const char *nz(const char *s)
{
    return s ? s : "";
}

/*
 * Flushes and reports any error on the stream, so a full disk or closed pipe
 * turns into a non-zero exit instead of silently truncated output.
 */
static int finish(FILE *out)
{
    if (fflush(out) != 0 || ferror(out))
        return -1;
    return 0;
}

static size_t count_sev(const struct dd_findings *fs, enum dd_severity sev)
{
    size_t i, n = 0;

    for (i = 0; fs && i < fs->n; i++)
        n += fs->v[i].severity == sev;
    return n;
}

int report_format_parse(const char *s)
{
    if (!s)
        return -1;
    if (!strcmp(s, "text"))
        return REPORT_TEXT;
    if (!strcmp(s, "json"))
        return REPORT_JSON;
    if (!strcmp(s, "sarif"))
        return REPORT_SARIF;
    if (!strcmp(s, "github"))
        return REPORT_GITHUB;
    return -1;
}

const char *report_format_names(void)
{
    return "text, json, sarif, github";
}

/*
 * Writes cJSON's rendering and a newline.  cJSON escapes quotes, backslashes
 * and control characters; it passes other bytes through, which is right
 * because the YAML reader only accepts valid UTF-8.
 */
static int emit_json(FILE *out, cJSON *root, int pretty)
{
    char *s;
    int rc = 0;

    if (!root) {
        errno = ENOMEM;
        return -1;
    }
    s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!s) {
        errno = ENOMEM;
        return -1;
    }
    if (fputs(s, out) == EOF || fputc('\n', out) == EOF)
        rc = -1;
    cJSON_free(s);
    if (finish(out) != 0)
        rc = -1;
    return rc;
}

/* ---- json -------------------------------------------------------------- */

static cJSON *json_finding(const struct dd_finding *f)
{
    cJSON *o = cJSON_CreateObject(), *obj;

    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "code", nz(f->code)) ||
        !cJSON_AddStringToObject(o, "severity", dd_severity_name(f->severity)) ||
        !(obj = cJSON_AddObjectToObject(o, "object")) ||
        !cJSON_AddStringToObject(obj, "apiVersion", nz(f->obj.api_version)) ||
        !cJSON_AddStringToObject(obj, "kind", nz(f->obj.kind)) ||
        !cJSON_AddStringToObject(obj, "namespace", nz(f->obj.namespace_)) ||
        !cJSON_AddStringToObject(obj, "name", nz(f->obj.name)) ||
        !(f->file ? cJSON_AddStringToObject(o, "file", f->file)
                  : cJSON_AddNullToObject(o, "file")) ||
        !(f->line > 0 ? cJSON_AddNumberToObject(o, "line", f->line)
                      : cJSON_AddNullToObject(o, "line")) ||
        !(f->line > 0 && f->col > 0 ? cJSON_AddNumberToObject(o, "column", f->col)
                                    : cJSON_AddNullToObject(o, "column")) ||
        !cJSON_AddStringToObject(o, "message", nz(f->message)) ||
        !cJSON_AddStringToObject(o, "fix", nz(f->fix))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *json_report(const struct report_input *in)
{
    const struct dd_findings *fs = in->findings;
    cJSON *root = cJSON_CreateObject(), *arr, *sum;
    size_t i;

    if (!root || !(arr = cJSON_AddArrayToObject(root, "findings")))
        goto fail;
    for (i = 0; fs && i < fs->n; i++) {
        cJSON *o = json_finding(&fs->v[i]);
        if (!o)
            goto fail;
        cJSON_AddItemToArray(arr, o);
    }
    if (!(sum = cJSON_AddObjectToObject(root, "summary")) ||
        !cJSON_AddNumberToObject(sum, "errors", (double)count_sev(fs, DD_SEV_ERROR)) ||
        !cJSON_AddNumberToObject(sum, "warnings", (double)count_sev(fs, DD_SEV_WARNING)) ||
        !cJSON_AddNumberToObject(sum, "infos", (double)count_sev(fs, DD_SEV_INFO)) ||
        !cJSON_AddNumberToObject(sum, "objects", (double)in->objects))
        goto fail;
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

/* ---- sarif ------------------------------------------------------------- */

static const char *sarif_level(enum dd_severity s)
{
    switch (s) {
    case DD_SEV_ERROR: return "error";
    case DD_SEV_WARNING: return "warning";
    case DD_SEV_INFO: return "note";
    }
    return "note";
}

/* Growable string for the few values assembled from parts. */
struct buf {
    char *s;
    size_t n, cap;
    int oom;
};

static void buf_putn(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        char *p;
        while (cap < b->n + n + 1)
            cap *= 2;
        p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void buf_puts(struct buf *b, const char *s)
{
    buf_putn(b, s, strlen(s));
}

static void buf_putc(struct buf *b, char c)
{
    buf_putn(b, &c, 1);
}

/* Takes the string out of b; NULL (and b released) when memory ran out. */
static char *buf_take(struct buf *b)
{
    char *s = b->s;

    if (b->oom || !s) {
        free(s);
        s = b->oom ? NULL : strdup("");
    }
    b->s = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
    return s;
}

/*
 * A file path as a URI reference.  Bytes outside RFC 3986's unreserved and
 * sub-delims sets are percent-encoded; ':' is too, because in the first
 * segment of a relative reference it would read as a scheme.  A leading "./"
 * is dropped since code-scanning matches paths against the repository tree.
 */
static void buf_put_uri_path(struct buf *b, const char *p)
{
    static const char hex[] = "0123456789ABCDEF";

    while (p[0] == '.' && p[1] == '/') {
        p += 2;
        while (*p == '/')
            p++;
    }
    for (; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~!$&'()*+,;=@/", c)) {
            buf_putc(b, (char)c);
        } else {
            buf_putc(b, '%');
            buf_putc(b, hex[c >> 4]);
            buf_putc(b, hex[c & 15]);
        }
    }
}

/* docs_uri#lowercasecode: the GitHub anchor of the "## Code" heading. */
static char *help_uri(const char *docs_uri, const char *code)
{
    struct buf b = { 0 };
    const char *c;

    buf_puts(&b, docs_uri);
    buf_putc(&b, '#');
    for (c = code; *c; c++)
        buf_putc(&b, (*c >= 'A' && *c <= 'Z') ? (char)(*c - 'A' + 'a') : *c);
    return buf_take(&b);
}

static cJSON *sarif_rule(const struct dd_rule *r, const char *docs_uri)
{
    cJSON *o = cJSON_CreateObject(), *t;
    char *uri = NULL, *text = NULL, *md = NULL;
    const char *code = nz(r->code), *summary = nz(r->summary);
    struct buf b = { 0 };

    if (!o)
        return NULL;
    if (docs_uri) {
        if (!(uri = help_uri(docs_uri, code)))
            goto fail;
        buf_puts(&b, summary);
        buf_puts(&b, ". Documentation: ");
        buf_puts(&b, uri);
        if (!(text = buf_take(&b)))
            goto fail;
        buf_puts(&b, "**");
        buf_puts(&b, code);
        buf_puts(&b, "**: ");
        buf_puts(&b, summary);
        buf_puts(&b, ". See [the documentation](");
        buf_puts(&b, uri);
        buf_puts(&b, ").");
        if (!(md = buf_take(&b)))
            goto fail;
    }
    if (!cJSON_AddStringToObject(o, "id", code) ||
        !cJSON_AddStringToObject(o, "name", code) ||
        !(t = cJSON_AddObjectToObject(o, "shortDescription")) ||
        !cJSON_AddStringToObject(t, "text", summary) ||
        !(t = cJSON_AddObjectToObject(o, "fullDescription")) ||
        !cJSON_AddStringToObject(t, "text", summary))
        goto fail;
    if (uri && !cJSON_AddStringToObject(o, "helpUri", uri))
        goto fail;
    if (!(t = cJSON_AddObjectToObject(o, "help")) ||
        !cJSON_AddStringToObject(t, "text", text ? text : summary) ||
        (md && !cJSON_AddStringToObject(t, "markdown", md)) ||
        !(t = cJSON_AddObjectToObject(o, "defaultConfiguration")) ||
        !cJSON_AddStringToObject(t, "level", sarif_level(r->severity)))
        goto fail;
    free(uri);
    free(text);
    free(md);
    return o;
fail:
    free(uri);
    free(text);
    free(md);
    cJSON_Delete(o);
    return NULL;
}

static long rule_index(const struct report_input *in, const char *code)
{
    size_t i;

    for (i = 0; in->rules && code && i < in->nrules; i++)
        if (in->rules[i].code && !strcmp(in->rules[i].code, code))
            return (long)i;
    return -1;
}

/*
 * One location per result: the file position when there is a file, and
 * always the object's name.  SARIF 2.1.0 only allows logicalLocations inside
 * a location, so a live finding (no file) gets a location without
 * physicalLocation rather than none: the object is still named.
 */
static int sarif_location(cJSON *loc, const struct dd_finding *f)
{
    struct buf b = { 0 };
    cJSON *phys, *art, *region, *arr, *ll;
    char *s;
    int ok;

    if (f->file && *f->file) {
        int absolute = f->file[0] == '/';

        if (absolute)
            buf_puts(&b, "file://");
        buf_put_uri_path(&b, f->file);
        if (!(s = buf_take(&b)))
            return -1;
        ok = (phys = cJSON_AddObjectToObject(loc, "physicalLocation")) &&
             (art = cJSON_AddObjectToObject(phys, "artifactLocation")) &&
             cJSON_AddStringToObject(art, "uri", s) &&
             (absolute || cJSON_AddStringToObject(art, "uriBaseId", "%SRCROOT%")) &&
             (f->line <= 0 || ((region = cJSON_AddObjectToObject(phys, "region")) &&
                               cJSON_AddNumberToObject(region, "startLine", f->line) &&
                               (f->col <= 0 ||
                                cJSON_AddNumberToObject(region, "startColumn", f->col))));
        free(s);
        if (!ok)
            return -1;
    }

    buf_puts(&b, nz(f->obj.kind));
    buf_putc(&b, '/');
    if (f->obj.namespace_ && *f->obj.namespace_) {
        buf_puts(&b, f->obj.namespace_);
        buf_putc(&b, '/');
    }
    buf_puts(&b, nz(f->obj.name));
    if (!(s = buf_take(&b)))
        return -1;
    ok = (arr = cJSON_AddArrayToObject(loc, "logicalLocations")) &&
         (ll = cJSON_CreateObject()) && cJSON_AddItemToArray(arr, ll) &&
         cJSON_AddStringToObject(ll, "name", nz(f->obj.name)) &&
         cJSON_AddStringToObject(ll, "fullyQualifiedName", s) &&
         cJSON_AddStringToObject(ll, "kind", "resource");
    free(s);
    return ok ? 0 : -1;
}

static cJSON *sarif_result(const struct report_input *in, const struct dd_finding *f)
{
    cJSON *o = cJSON_CreateObject(), *t, *arr, *loc;
    struct buf b = { 0 };
    char *s = NULL;
    long idx = rule_index(in, f->code);

    if (!o)
        return NULL;
    if (!cJSON_AddStringToObject(o, "ruleId", nz(f->code)) ||
        (idx >= 0 && !cJSON_AddNumberToObject(o, "ruleIndex", (double)idx)) ||
        !cJSON_AddStringToObject(o, "level", sarif_level(f->severity)))
        goto fail;

    buf_puts(&b, nz(f->message));
    if (f->fix && *f->fix) {
        buf_puts(&b, " Fix: ");
        buf_puts(&b, f->fix);
    }
    if (!(s = buf_take(&b)) || !(t = cJSON_AddObjectToObject(o, "message")) ||
        !cJSON_AddStringToObject(t, "text", s))
        goto fail;
    free(s);

    if (!(arr = cJSON_AddArrayToObject(o, "locations")) || !(loc = cJSON_CreateObject()))
        goto fail_nos;
    cJSON_AddItemToArray(arr, loc);
    if (sarif_location(loc, f) != 0)
        goto fail_nos;
    return o;
fail:
    free(s);
fail_nos:
    cJSON_Delete(o);
    return NULL;
}

static cJSON *sarif_report(const struct report_input *in)
{
    const struct dd_findings *fs = in->findings;
    cJSON *root = cJSON_CreateObject(), *runs, *run, *tool, *driver, *arr;
    size_t i;

    if (!root ||
        !cJSON_AddStringToObject(root, "$schema", "https://json.schemastore.org/sarif-2.1.0.json") ||
        !cJSON_AddStringToObject(root, "version", "2.1.0") ||
        !(runs = cJSON_AddArrayToObject(root, "runs")) || !(run = cJSON_CreateObject()))
        goto fail;
    cJSON_AddItemToArray(runs, run);
    if (!(tool = cJSON_AddObjectToObject(run, "tool")) ||
        !(driver = cJSON_AddObjectToObject(tool, "driver")) ||
        !cJSON_AddStringToObject(driver, "name", "dra-doctor") ||
        (in->tool_version && !cJSON_AddStringToObject(driver, "version", in->tool_version)) ||
        !cJSON_AddStringToObject(driver, "informationUri", REPORT_INFORMATION_URI) ||
        !(arr = cJSON_AddArrayToObject(driver, "rules")))
        goto fail;
    for (i = 0; in->rules && i < in->nrules; i++) {
        cJSON *r = sarif_rule(&in->rules[i], in->docs_uri);
        if (!r)
            goto fail;
        cJSON_AddItemToArray(arr, r);
    }
    if (!(arr = cJSON_AddArrayToObject(run, "results")))
        goto fail;
    for (i = 0; fs && i < fs->n; i++) {
        cJSON *r = sarif_result(in, &fs->v[i]);
        if (!r)
            goto fail;
        cJSON_AddItemToArray(arr, r);
    }
    return root;
fail:
    cJSON_Delete(root);
    return NULL;
}

/* ---- github ------------------------------------------------------------ */

/*
 * Workflow-command escaping, as in @actions/core: data escapes % CR LF;
 * property values also ':' and ',' since those delimit the properties.
 */
static void gh_escape(FILE *out, const char *s, int property)
{
    for (; *s; s++) {
        switch (*s) {
        case '%': fputs("%25", out); break;
        case '\r': fputs("%0D", out); break;
        case '\n': fputs("%0A", out); break;
        case ':':
            if (property) {
                fputs("%3A", out);
                break;
            }
            fputc(*s, out);
            break;
        case ',':
            if (property) {
                fputs("%2C", out);
                break;
            }
            fputc(*s, out);
            break;
        default: fputc(*s, out); break;
        }
    }
}

static int github_report(FILE *out, const struct report_input *in)
{
    const struct dd_findings *fs = in->findings;
    size_t i;

    for (i = 0; fs && i < fs->n; i++) {
        const struct dd_finding *f = &fs->v[i];
        const char *cmd = f->severity == DD_SEV_ERROR     ? "error"
                          : f->severity == DD_SEV_WARNING ? "warning"
                                                          : "notice";
        fprintf(out, "::%s ", cmd);
        if (f->file && *f->file) {
            fputs("file=", out);
            gh_escape(out, f->file, 1);
            if (f->line > 0)
                fprintf(out, ",line=%d", f->line);
            if (f->line > 0 && f->col > 0)
                fprintf(out, ",col=%d", f->col);
            fputc(',', out);
        }
        fputs("title=", out);
        gh_escape(out, nz(f->code), 1);
        fputs("::", out);
        gh_escape(out, nz(f->message), 0);
        if (f->fix && *f->fix) {
            fputs(" Fix: ", out);
            gh_escape(out, f->fix, 0);
        }
        fputc('\n', out);
    }
    return finish(out);
}

/* ---- text -------------------------------------------------------------- */

#define ANSI_RESET "\033[0m"

static const char *sev_color(enum dd_severity s)
{
    switch (s) {
    case DD_SEV_ERROR: return "\033[1;31m";
    case DD_SEV_WARNING: return "\033[33m";
    case DD_SEV_INFO: return "\033[36m";
    }
    return "";
}

/*
 * Writes s for a terminal: a newline continues at indent, other control
 * characters (except tab) become \xNN so input cannot send escape sequences.
 */
static void text_put(FILE *out, const char *s, const char *indent)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') {
            fputc('\n', out);
            fputs(indent, out);
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            fprintf(out, "\\x%02x", c);
        } else {
            fputc(c, out);
        }
    }
}

static int str_cmp(const char *a, const char *b)
{
    return strcmp(nz(a), nz(b));
}

/* Same object: the header identifies an object by kind, scope, name and file. */
static int obj_cmp(const struct dd_finding *a, const struct dd_finding *b)
{
    int c;

    if ((c = str_cmp(a->obj.kind, b->obj.kind)) || (c = str_cmp(a->obj.namespace_, b->obj.namespace_)) ||
        (c = str_cmp(a->obj.name, b->obj.name)) ||
        (c = str_cmp(a->obj.api_version, b->obj.api_version)))
        return c;
    if (!a->file != !b->file)
        return a->file ? 1 : -1;
    return str_cmp(a->file, b->file);
}

struct text_slot {
    const struct dd_finding *f;
    size_t idx;   /* position in the caller's order */
    size_t group; /* idx of the group's first finding */
};

static int slot_by_object(const void *pa, const void *pb)
{
    const struct text_slot *a = pa, *b = pb;
    int c = obj_cmp(a->f, b->f);

    if (c)
        return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int slot_by_group(const void *pa, const void *pb)
{
    const struct text_slot *a = pa, *b = pb;

    if (a->group != b->group)
        return (a->group > b->group) - (a->group < b->group);
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static void text_header(FILE *out, const struct dd_finding *f, int line, int col)
{
    if (f->obj.kind && *f->obj.kind) {
        text_put(out, f->obj.kind, "");
        fputc(' ', out);
    }
    if (f->obj.namespace_ && *f->obj.namespace_) {
        text_put(out, f->obj.namespace_, "");
        fputc('/', out);
    }
    text_put(out, nz(f->obj.name), "");
    if (f->file && *f->file) {
        fputs(" (", out);
        text_put(out, f->file, "");
        if (line > 0)
            fprintf(out, ":%d", line);
        if (line > 0 && col > 0)
            fprintf(out, ":%d", col);
        fputc(')', out);
    }
    fputc('\n', out);
}

static void text_finding(FILE *out, const struct dd_finding *f, int color)
{
    fputs("  ", out);
    if (color)
        fputs(sev_color(f->severity), out);
    fprintf(out, "%s[", dd_severity_name(f->severity));
    text_put(out, nz(f->code), "");
    fputc(']', out);
    if (color)
        fputs(ANSI_RESET, out);
    fputs(": ", out);
    text_put(out, nz(f->message), "    ");
    fputc('\n', out);
    if (f->fix && *f->fix) {
        fputs("    ", out);
        if (color)
            fputs("\033[2m", out);
        fputs("fix: ", out);
        text_put(out, f->fix, "         ");
        if (color)
            fputs(ANSI_RESET, out);
        fputc('\n', out);
    }
}

static void text_count(FILE *out, int *first, size_t n, const char *one, const char *many)
{
    if (!n)
        return;
    fprintf(out, "%s%zu %s", *first ? "" : ", ", n, n == 1 ? one : many);
    *first = 0;
}

static int text_report(FILE *out, const struct report_input *in)
{
    const struct dd_findings *fs = in->findings;
    size_t n = fs ? fs->n : 0, i, j;
    struct text_slot *slot = NULL;
    int first = 1;

    if (n) {
        /* Grouping by sorting keeps big inputs at n log n. */
        if (!(slot = calloc(n, sizeof(*slot)))) {
            errno = ENOMEM;
            return -1;
        }
        for (i = 0; i < n; i++) {
            slot[i].f = &fs->v[i];
            slot[i].idx = i;
        }
        qsort(slot, n, sizeof(*slot), slot_by_object);
        for (i = 0; i < n; i++)
            slot[i].group = (i && !obj_cmp(slot[i - 1].f, slot[i].f)) ? slot[i - 1].group
                                                                       : slot[i].idx;
        qsort(slot, n, sizeof(*slot), slot_by_group);
    }
    for (i = 0; i < n; i = j) {
        int line = 0, col = 0;
        enum dd_severity top = DD_SEV_INFO;

        /* The earliest known line of its most severe findings stands for the object's
         * position: where the fault is, not an info about the object as a whole. */
        for (j = i; j < n && slot[j].group == slot[i].group; j++)
            if (slot[j].f->line > 0 && slot[j].f->severity > top)
                top = slot[j].f->severity;
        for (j = i; j < n && slot[j].group == slot[i].group; j++)
            if (slot[j].f->line > 0 && slot[j].f->severity == top &&
                (!line || slot[j].f->line < line)) {
                line = slot[j].f->line;
                col = slot[j].f->col;
            }
        text_header(out, slot[i].f, line, col);
        for (j = i; j < n && slot[j].group == slot[i].group; j++)
            text_finding(out, slot[j].f, in->color);
        fputc('\n', out);
    }
    free(slot);

    if (!n)
        fputs("no findings", out);
    text_count(out, &first, count_sev(fs, DD_SEV_ERROR), "error", "errors");
    text_count(out, &first, count_sev(fs, DD_SEV_WARNING), "warning", "warnings");
    text_count(out, &first, count_sev(fs, DD_SEV_INFO), "info", "infos");
    fprintf(out, " in %zu %s\n", in->objects, in->objects == 1 ? "object" : "objects");
    return finish(out);
}

/* ---- entry ------------------------------------------------------------- */

int report_write(FILE *out, enum report_format f, const struct report_input *in)
{
    switch (f) {
    case REPORT_TEXT: return text_report(out, in);
    case REPORT_JSON: return emit_json(out, json_report(in), 0);
    case REPORT_SARIF: return emit_json(out, sarif_report(in), 1);
    case REPORT_GITHUB: return github_report(out, in);
    }
    errno = EINVAL;
    return -1;
}
