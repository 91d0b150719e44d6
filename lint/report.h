/*
 * report.h - how `dra-doctor lint` prints its findings: text for people, JSON
 * for scripts, SARIF for code-scanning upload, GitHub Actions workflow
 * commands for inline annotations.
 *
 * Reporters only format: they never sort, filter or decide on colour.  The
 * caller sorts the findings (dd_findings_sort) and decides colour (isatty,
 * NO_COLOR), so the same input always prints the same bytes.
 *
 * The rule table is a parameter rather than a call to dd_rules() so that
 * reporters can be tested with a hand-made table and do not pull in the rule
 * engine.
 *
 * Output contracts (scripts depend on them; change only compatibly):
 *
 *   json    One line, one object, then "\n":
 *           {"findings":[{"code","severity","object":{"apiVersion","kind",
 *             "namespace","name"},"file","line","column","message","fix"}...],
 *            "summary":{"errors","warnings","infos","objects"}}
 *           Every key is always present.  "file" is null when the finding has
 *           no source file (live objects) and "line" ("column") is null when unknown, so
 *           a consumer never mistakes 0 for a position.  Object fields are
 *           always strings, "" where Kubernetes leaves them empty (namespace
 *           of a cluster-scoped object, apiVersion of a non-API file); "fix"
 *           is "" when there is none.
 *
 *   sarif   SARIF 2.1.0, pretty-printed.  driver.rules[] is the whole rule
 *           table in table order; result.ruleIndex indexes it and is omitted
 *           when the code is not in the table.  Levels: error->error,
 *           warning->warning, info->note.  Relative paths are relative to
 *           uriBaseId "%SRCROOT%"; absolute ones become file:// URIs.  Each
 *           result has one location: physicalLocation when there is a file
 *           (region omitted when the line is unknown) and always
 *           logicalLocations naming the object "Kind/namespace/name"
 *           ("Kind/name" when cluster-scoped).  The schema only allows
 *           logicalLocations inside a location, so a finding without a file
 *           still gets a location, one without physicalLocation.
 *
 *   github  One workflow command per finding and nothing else:
 *             ::error file=F,line=L,title=CODE::MESSAGE Fix: FIX
 *           (::warning, ::notice for info); file and line are omitted when
 *           unknown, " Fix: FIX" when there is no fix.
 *
 *   text    Findings grouped per object in order of first appearance, a
 *           blank line between groups, then one summary line such as
 *           "3 errors, 1 warning in 42 objects" or "no findings in 1 object".
 *           Control characters from the input are shown as \xNN so a crafted
 *           object name cannot drive the terminal.
 */
#ifndef DD_REPORT_H
#define DD_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "rules/finding.h"
#include "rules/rules.h"

/* Where SARIF's driver.informationUri points. */
#define REPORT_INFORMATION_URI "https://github.com/dra-doctor/dra-doctor"

enum report_format { REPORT_TEXT, REPORT_JSON, REPORT_SARIF, REPORT_GITHUB };

/* "text", "json", "sarif", "github" (exact, lower case); -1 when unknown. */
int report_format_parse(const char *s);

/* The accepted names, for usage messages: "text, json, sarif, github". */
const char *report_format_names(void);

/* Everything a reporter reads; all of it is borrowed for the call only. */
struct report_input {
    const struct dd_findings *findings; /* sorted by the caller; NULL means none */
    const struct dd_rule *rules;        /* the rule table, for SARIF's rules[] and help; may be NULL */
    size_t nrules;                      /* entries in rules */
    size_t objects;                     /* number of objects read */
    const char *tool_version;           /* e.g. "0.1.0"; NULL omits it */
    const char *docs_uri;               /* base of rule help, e.g. ".../docs/rules.md"; the
                                           anchor is "#" + lower-case code; NULL omits help links */
    int color;                          /* text only: nonzero for ANSI colour */
};

/*
 * Writes the report for in to out and flushes out.  Returns 0, or -1 when
 * writing failed (errno from the stream) or memory ran out (errno ENOMEM);
 * the output may then be partial.  Does not close out.
 */
int report_write(FILE *out, enum report_format f, const struct report_input *in);

#endif
