/*
 * test_cel_lex.c - the CEL lexer (token types, lengths) and literal decoding.
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#include "cel/cel.h"
#include "cel/cel_int.h"

struct tok_case {
    const char *src;
    int type;
    size_t len;
};

static void test_token_table(void **state)
{
    static const struct tok_case cases[] = {
        {"device", CEL_TK_IDENT, 6},
        {"_x9 rest", CEL_TK_IDENT, 3},
        {"true", CEL_TK_TRUE, 4},
        {"false)", CEL_TK_FALSE, 5},
        {"null", CEL_TK_NUL, 4},
        {"nullx", CEL_TK_IDENT, 5},
        {"in ", CEL_TK_IN, 2},
        {"index", CEL_TK_IDENT, 5},
        {"while", CEL_TK_RESERVED, 5},
        {"namespace", CEL_TK_RESERVED, 9},
        {"123", CEL_TK_INT, 3},
        {"0x1F", CEL_TK_INT, 4},
        {"0XaBc", CEL_TK_INT, 5},
        {"42u", CEL_TK_UINT, 3},
        {"42U", CEL_TK_UINT, 3},
        {"0x10u", CEL_TK_UINT, 5},
        {"1.5", CEL_TK_DOUBLE, 3},
        {"1e10", CEL_TK_DOUBLE, 4},
        {"1.5E-3", CEL_TK_DOUBLE, 6},
        {"2e+2", CEL_TK_DOUBLE, 4},
        {".25", CEL_TK_DOUBLE, 3},
        {"1.size()", CEL_TK_INT, 1},
        {"1e", CEL_TK_INT, 1},
        {"'abc'", CEL_TK_STRING, 5},
        {"\"abc\" x", CEL_TK_STRING, 5},
        {"'a\\'b'", CEL_TK_STRING, 6},
        {"'''a'b''' x", CEL_TK_STRING, 9},
        {"\"\"\"multi\nline\"\"\"", CEL_TK_STRING, 16},
        {"r'\\d'", CEL_TK_STRING, 5},
        {"R\"x\"", CEL_TK_STRING, 4},
        {"b'ab'", CEL_TK_BYTES, 5},
        {"B\"\"", CEL_TK_BYTES, 3},
        {"rb'x'", CEL_TK_BYTES, 5},
        {"BR'x'", CEL_TK_BYTES, 5},
        {"'unterminated", CEL_TK_ILLEGAL, 13},
        {"'a\nb'", CEL_TK_ILLEGAL, 5},
        {"==", CEL_TK_EQ, 2},
        {"!=", CEL_TK_NE, 2},
        {"<=", CEL_TK_LE, 2},
        {">=", CEL_TK_GE, 2},
        {"<", CEL_TK_LT, 1},
        {">", CEL_TK_GT, 1},
        {"&&", CEL_TK_AND, 2},
        {"||", CEL_TK_OR, 2},
        {"!x", CEL_TK_NOT, 1},
        {"+", CEL_TK_PLUS, 1},
        {"-1", CEL_TK_MINUS, 1},
        {"*", CEL_TK_STAR, 1},
        {"/", CEL_TK_SLASH, 1},
        {"%", CEL_TK_PERCENT, 1},
        {"?", CEL_TK_QUESTION, 1},
        {":", CEL_TK_COLON, 1},
        {".x", CEL_TK_DOT, 1},
        {",", CEL_TK_COMMA, 1},
        {"[", CEL_TK_LBRACKET, 1},
        {"]", CEL_TK_RBRACKET, 1},
        {"(", CEL_TK_LPAREN, 1},
        {")", CEL_TK_RPAREN, 1},
        {"{", CEL_TK_LBRACE, 1},
        {"}", CEL_TK_RBRACE, 1},
        {" \t\r\n x", CEL_TK_SPACE, 5},
        {"// note\nx", CEL_TK_COMMENT, 7},
        {"=", CEL_TK_ILLEGAL, 1},
        {"&", CEL_TK_ILLEGAL, 1},
        {"#", CEL_TK_ILLEGAL, 1},
        {"\xc3\xa9", CEL_TK_ILLEGAL, 2},
        {"", CEL_TK_EOF, 0},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int type = -1;
        size_t len = cel__next_token(cases[i].src, strlen(cases[i].src), &type);
        if (type != cases[i].type || len != cases[i].len)
            fail_msg("case %zu \"%s\": got type %s len %zu, want %s len %zu", i, cases[i].src,
                     cel__tok_name(type), len, cel__tok_name(cases[i].type), cases[i].len);
    }
}

/* The lexer must not read past n even when the buffer continues. */
static void test_token_respects_length(void **state)
{
    int type;

    (void)state;
    assert_int_equal(cel__next_token("abcdef", 3, &type), 3);
    assert_int_equal(type, CEL_TK_IDENT);
    assert_int_equal(cel__next_token("'abc'", 4, &type), 4);
    assert_int_equal(type, CEL_TK_ILLEGAL);
    assert_int_equal(cel__next_token("==", 1, &type), 1);
    assert_int_equal(type, CEL_TK_ILLEGAL);
}

struct esc_case {
    const char *tok;
    int is_bytes;
    const char *want;
    size_t want_len;
};

static void test_unescape(void **state)
{
    static const struct esc_case cases[] = {
        {"'plain'", 0, "plain", 5},
        {"\"dq\"", 0, "dq", 2},
        {"'\\\\'", 0, "\\", 1},
        {"'\\\"'", 0, "\"", 1},
        {"'\\''", 0, "'", 1},
        {"'\\`'", 0, "`", 1},
        {"'\\?'", 0, "?", 1},
        {"'\\a\\b\\f\\n\\r\\t\\v'", 0, "\a\b\f\n\r\t\v", 7},
        {"'\\x41'", 0, "A", 1},
        {"'\\X4a'", 0, "J", 1},
        {"'\\u00e9'", 0, "\xc3\xa9", 2},
        {"'\\U0001F600'", 0, "\xf0\x9f\x98\x80", 4},
        {"'\\101'", 0, "A", 1},
        {"'\\377'", 0, "\xc3\xbf", 2}, /* in a string, octal is a code point */
        {"b'\\377'", 1, "\xff", 1},     /* in bytes, one raw byte */
        {"b'\\xff\\x00'", 1, "\xff\x00", 2},
        {"'\\xff'", 0, "\xc3\xbf", 2},
        {"r'\\n\\d'", 0, "\\n\\d", 4},
        {"R\"\\x41\"", 0, "\\x41", 4},
        {"'''it's'''", 0, "it's", 4},
        {"\"\"\"a\nb\"\"\"", 0, "a\nb", 3},
        {"'''a\r\nb'''", 0, "a\nb", 3},
        {"''", 0, "", 0},
        {"''''''", 0, "", 0},
        {"b''", 1, "", 0},
        {"rb'\\x'", 1, "\\x", 2},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cel__arena a = {0};
        char *out = NULL;
        size_t len = 0, bad = 0;
        int rc = cel__unescape(&a, cases[i].tok, strlen(cases[i].tok), cases[i].is_bytes, &out,
                               &len, &bad);
        if (rc != 0)
            fail_msg("case %zu %s: rc %d at %zu", i, cases[i].tok, rc, bad);
        if (len != cases[i].want_len || memcmp(out, cases[i].want, len) != 0)
            fail_msg("case %zu %s: decoded %zu bytes, want %zu", i, cases[i].tok, len,
                     cases[i].want_len);
        assert_int_equal(out[len], '\0');
        cel__arena_free(&a);
    }
}

static void test_unescape_errors(void **state)
{
    static const struct {
        const char *tok;
        int is_bytes;
        size_t bad;
    } cases[] = {
        {"'\\q'", 0, 1},         {"'ab\\x4'", 0, 3},      {"'\\u12'", 0, 1},
        {"'\\uD800'", 0, 1},     {"'\\U00110000'", 0, 1}, {"'\\400'", 0, 1},
        {"'\\18'", 0, 1},        {"b'\\u0041'", 1, 2},    {"b'\\U00000041'", 1, 2},
        {"'x\\'", 0, 2},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cel__arena a = {0};
        char *out = NULL;
        size_t len = 0, bad = 99;
        int rc = cel__unescape(&a, cases[i].tok, strlen(cases[i].tok), cases[i].is_bytes, &out,
                               &len, &bad);
        if (rc != -1 || bad != cases[i].bad)
            fail_msg("case %zu %s: rc %d bad %zu, want -1 at %zu", i, cases[i].tok, rc, bad,
                     cases[i].bad);
        cel__arena_free(&a);
    }
}

/* Escapes compared end to end through the evaluator. */
static void test_literals_evaluate(void **state)
{
    static const char *const exprs[] = {
        "'\\x41\\u0042\\U00000043\\103' == 'ABCC'",
        "b'\\x41' == b'A'",
        "r'\\d+' == '\\\\d+'",
        "'''multi\nline''' == 'multi\\nline'",
        "\"\\\"q\\\"\" == '\"q\"'",
        "0x10 == 16",
        "0xFFu == 255u",
        "1e3 == 1000.0",
        ".5 == 0.5",
        "-9223372036854775808 == -9223372036854775807 - 1",
        "18446744073709551615u > 0u",
        "null == null",
        "true != false",
        "b'\\xff'.size() == 1 && '\\xff'.size() == 1",
        "'\\u00e9t\\u00e9'.size() == 3",
    };
    struct cel_device dev = {"d", NULL, 0, NULL, 0, 0};

    (void)state;
    for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
        struct dd_err err;
        struct cel_program *p = cel_compile(exprs[i], strlen(exprs[i]), NULL, &err);
        if (!p)
            fail_msg("compile %s: %s", exprs[i], err.msg);
        if (cel_eval_device(p, &dev, NULL, &err) != CEL_TRUE)
            fail_msg("eval %s: not true (%s)", exprs[i], err.msg);
        cel_program_free(p);
    }
}

/* Every token's position: the fault position of an error after N lines. */
static void test_positions(void **state)
{
    static const struct {
        const char *src;
        int line, col;
    } cases[] = {
        {"true &&\n  false &&\n    #", 3, 5},
        {"// comment\n  = ", 2, 3},
        {"'\xc3\xa9\xc3\xa9' == #", 1, 9},
        {"'''a\nb''' == @", 2, 9},
        {"\ttrue $", 1, 7},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct dd_err err;
        struct cel_program *p = cel_compile(cases[i].src, strlen(cases[i].src), NULL, &err);
        assert_null(p);
        assert_int_equal(err.rc, DD_EPARSE);
        if (err.line != cases[i].line || err.col != cases[i].col)
            fail_msg("case %zu: at %d:%d, want %d:%d (%s)", i, err.line, err.col,
                     cases[i].line, cases[i].col, err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_table),
        cmocka_unit_test(test_token_respects_length),
        cmocka_unit_test(test_unescape),
        cmocka_unit_test(test_unescape_errors),
        cmocka_unit_test(test_literals_evaluate),
        cmocka_unit_test(test_positions),
    };
    return cmocka_run_group_tests_name("cel_lex", tests, NULL, NULL);
}
