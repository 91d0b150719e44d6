/*
 * test_docs.c - docs/rules.md and the rule table stay in step: every rule has
 * a "## Code" section and a summary-table row with its severity and summary,
 * and the doc documents no code that the table lacks.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>

#include "rules/finding.h"
#include "rules/rules.h"

static void every_rule_documented(void **state)
{
    char *doc = test_read_file("docs/rules.md"), want[512];
    size_t n, i;
    const struct dd_rule *r = dd_rules(&n);

    (void)state;
    for (i = 0; i < n; i++) {
        snprintf(want, sizeof(want), "\n## %s\n", r[i].code);
        assert_contains(doc, want);
        snprintf(want, sizeof(want), "| `%s` | %s", r[i].code, dd_severity_name(r[i].severity));
        assert_contains(doc, want);
        snprintf(want, sizeof(want), "| %s |\n", r[i].summary);
        assert_contains(doc, want);
    }
    free(doc);
}

static void no_undocumented_headings(void **state)
{
    char *doc = test_read_file("docs/rules.md"), *p = doc, code[128];
    size_t headings = 0, n;

    (void)state;
    dd_rules(&n);
    while ((p = strstr(p, "\n## "))) {
        size_t len = strcspn(p + 4, "\n");
        assert_true(len < sizeof(code));
        memcpy(code, p + 4, len);
        code[len] = '\0';
        if (!dd_rule_find(code))
            fail_msg("docs/rules.md documents \"%s\", which is not in the rule table", code);
        headings++;
        p += 4;
    }
    assert_int_equal(headings, n);
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_rule_documented),
        cmocka_unit_test(no_undocumented_headings),
    };
    return cmocka_run_group_tests_name("docs", tests, NULL, NULL);
}
