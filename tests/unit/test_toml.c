/*
 * test_toml.c - the TOML reader: every value form with its decoded value,
 * every strictness error with its line, and real containerd configs.
 * Runs from the repository root (data under tests/data/containerd/).
 */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/toml.h"

#define DATA "tests/data/containerd/"

static struct toml_value *parse_ok(const char *src)
{
    struct dd_err err;
    struct toml_value *v = toml_parse(src, strlen(src), &err);

    if (!v)
        fail_msg("parse failed: %s\ninput:\n%s", err.msg, src);
    assert_int_equal(err.rc, DD_OK);
    return v;
}

static const struct toml_value *at(const struct toml_value *root, const char *k1, const char *k2,
                                   const char *k3)
{
    const char *keys[4] = {k1, k2, k3, NULL};
    const struct toml_value *v = toml_get_path(root, keys);

    if (!v)
        fail_msg("missing %s.%s.%s", k1, k2 ? k2 : "", k3 ? k3 : "");
    return v;
}

static void assert_str(const struct toml_value *v, const char *want)
{
    assert_non_null(v);
    assert_int_equal(v->type, TOML_STRING);
    assert_string_equal(v->u.s, want);
}

static void assert_int(const struct toml_value *v, int64_t want)
{
    assert_non_null(v);
    assert_int_equal(v->type, TOML_INT);
    if (v->u.i != want)
        fail_msg("got %lld, want %lld", (long long)v->u.i, (long long)want);
}

static void assert_float(const struct toml_value *v, double want)
{
    assert_non_null(v);
    assert_int_equal(v->type, TOML_FLOAT);
    if (v->u.f != want)
        fail_msg("got %.17g, want %.17g", v->u.f, want);
}

static void assert_bool(const struct toml_value *v, int want)
{
    assert_non_null(v);
    assert_int_equal(v->type, TOML_BOOL);
    assert_int_equal(v->u.b, want);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        fail_msg("cannot open %s (tests run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

/* ---- values ------------------------------------------------------------ */

static void test_basic_strings(void **state)
{
    struct toml_value *r = parse_ok(
        "esc = \"tab\\tnl\\nq\\\"bs\\\\b\\bf\\fr\\r.\"\n"
        "u4 = \"\\u00e9\\u20AC\"\n"
        "u8 = \"\\U0001F600\\U00000041\"\n"
        "empty = \"\"\n"
        "hash = \"# not a comment\" # a comment\n"
        "utf8 = \"ünïcödé ✓\"\n"
        "tab = \"a\tb\"\n");

    (void)state;
    assert_str(toml_get(r, "esc"), "tab\tnl\nq\"bs\\b\bf\fr\r.");
    assert_str(toml_get(r, "u4"), "\xc3\xa9\xe2\x82\xac");
    assert_str(toml_get(r, "u8"), "\xf0\x9f\x98\x80" "A");
    assert_str(toml_get(r, "empty"), "");
    assert_str(toml_get(r, "hash"), "# not a comment");
    assert_str(toml_get(r, "utf8"), "ünïcödé ✓");
    assert_str(toml_get(r, "tab"), "a\tb");
    assert_int_equal(toml_get(r, "u8")->line, 3);
    toml_free(r);
}

static void test_literal_strings(void **state)
{
    struct toml_value *r = parse_ok("winpath = 'C:\\Users\\nodejs\\templates'\n"
                                    "quoted = 'Tom \"Dubs\" Preston-Werner'\n"
                                    "regex = '<\\i\\c*\\s*>'\n"
                                    "empty = ''\n");

    (void)state;
    assert_str(toml_get(r, "winpath"), "C:\\Users\\nodejs\\templates");
    assert_str(toml_get(r, "quoted"), "Tom \"Dubs\" Preston-Werner");
    assert_str(toml_get(r, "regex"), "<\\i\\c*\\s*>");
    assert_str(toml_get(r, "empty"), "");
    toml_free(r);
}

static void test_multiline_strings(void **state)
{
    struct toml_value *r = parse_ok("a = \"\"\"\nRoses are red\nViolets are blue\"\"\"\n"
                                    "b = \"\"\"\\\n  The quick \\\n\n    brown fox.\\\n  \"\"\"\n"
                                    "c = \"\"\"Here are two quotation marks: \"\". Simple.\"\"\"\n"
                                    "d = \"\"\"\"This,\" she said, \"is just a pointless "
                                    "statement.\"\"\"\"\n"
                                    "e = \"\"\"x\"\"\"\"\"\n"
                                    "f = '''\nThe first newline is\ntrimmed in raw strings.\n"
                                    "   All other whitespace\n   is preserved.\n'''\n"
                                    "g = '''I [dw]on't need \\d{2} apples'''\n"
                                    "h = ''''That,' she said, 'is still pointless.''''\n"
                                    "i = \"\"\"esc \\t \\u0041 \\\"\"\"\"\n"
                                    "j = \"\"\"\"\"\"\n"
                                    "k = 1\n");

    (void)state;
    assert_str(toml_get(r, "a"), "Roses are red\nViolets are blue");
    assert_str(toml_get(r, "b"), "The quick brown fox.");
    assert_str(toml_get(r, "c"), "Here are two quotation marks: \"\". Simple.");
    assert_str(toml_get(r, "d"), "\"This,\" she said, \"is just a pointless statement.\"");
    assert_str(toml_get(r, "e"), "x\"\"");
    assert_str(toml_get(r, "f"),
               "The first newline is\ntrimmed in raw strings.\n   All other whitespace\n"
               "   is preserved.\n");
    assert_str(toml_get(r, "g"), "I [dw]on't need \\d{2} apples");
    assert_str(toml_get(r, "h"), "'That,' she said, 'is still pointless.'");
    assert_str(toml_get(r, "i"), "esc \t A \"");
    assert_str(toml_get(r, "j"), "");
    /* Lines: values start where their key is; newlines inside count. */
    assert_int_equal(toml_get(r, "a")->line, 1);
    assert_int_equal(toml_get(r, "b")->line, 4);
    assert_int_equal(toml_get(r, "c")->line, 9);
    assert_int_equal(toml_get(r, "f")->line, 12);
    assert_int_equal(toml_get(r, "g")->line, 18);
    assert_int_equal(toml_get(r, "k")->line, 22);
    toml_free(r);
}

static void test_integers(void **state)
{
    struct toml_value *r = parse_ok("a = 99\nb = +17\nc = -17\nd = 0\ne = -0\nf = +0\n"
                                    "g = 1_000\nh = 5_349_221\ni = 1_2_3_4_5\n"
                                    "j = 0xDEADBEEF\nk = 0xdead_beef\nl = 0o755\nm = 0o01234567\n"
                                    "n = 0b11010110\no = 0x00\n"
                                    "max = 9223372036854775807\nmin = -9223372036854775808\n"
                                    "hmax = 0x7FFFFFFFFFFFFFFF\nomax = 0o777777777777777777777\n"
                                    "bmax = 0b" "111111111111111111111111111111111111111111111111111111111111111"
                                    "\n");

    (void)state;
    assert_int(toml_get(r, "a"), 99);
    assert_int(toml_get(r, "b"), 17);
    assert_int(toml_get(r, "c"), -17);
    assert_int(toml_get(r, "d"), 0);
    assert_int(toml_get(r, "e"), 0);
    assert_int(toml_get(r, "f"), 0);
    assert_int(toml_get(r, "g"), 1000);
    assert_int(toml_get(r, "h"), 5349221);
    assert_int(toml_get(r, "i"), 12345);
    assert_int(toml_get(r, "j"), 0xDEADBEEF);
    assert_int(toml_get(r, "k"), 0xdeadbeef);
    assert_int(toml_get(r, "l"), 0755);
    assert_int(toml_get(r, "m"), 01234567);
    assert_int(toml_get(r, "n"), 214);
    assert_int(toml_get(r, "o"), 0);
    assert_int(toml_get(r, "max"), INT64_MAX);
    assert_int(toml_get(r, "min"), INT64_MIN);
    assert_int(toml_get(r, "hmax"), INT64_MAX);
    assert_int(toml_get(r, "omax"), INT64_MAX);
    assert_int(toml_get(r, "bmax"), INT64_MAX);
    assert_int_equal(toml_get(r, "min")->line, 17);
    toml_free(r);
}

static void test_floats(void **state)
{
    struct toml_value *r = parse_ok("a = +1.0\nb = 3.1415\nc = -0.01\nd = 5e+22\ne = 1e06\n"
                                    "f = -2E-2\ng = 6.626e-34\nh = 224_617.445_991_228\n"
                                    "i = 0.0\nj = -0.0\nk = 1e1_0\nl = 0e0\nm = 1.5E3\n"
                                    "pi = inf\npinf = +inf\nninf = -inf\n"
                                    "n1 = nan\nn2 = +nan\nn3 = -nan\ntiny = 1e-400\n");
    const struct toml_value *v;

    (void)state;
    assert_float(toml_get(r, "a"), 1.0);
    assert_float(toml_get(r, "b"), 3.1415);
    assert_float(toml_get(r, "c"), -0.01);
    assert_float(toml_get(r, "d"), 5e22);
    assert_float(toml_get(r, "e"), 1e6);
    assert_float(toml_get(r, "f"), -0.02);
    assert_float(toml_get(r, "g"), 6.626e-34);
    assert_float(toml_get(r, "h"), 224617.445991228);
    assert_float(toml_get(r, "i"), 0.0);
    assert_float(toml_get(r, "j"), 0.0);
    assert_true(signbit(toml_get(r, "j")->u.f));
    assert_float(toml_get(r, "k"), 1e10);
    assert_float(toml_get(r, "l"), 0.0);
    assert_float(toml_get(r, "m"), 1500.0);
    assert_float(toml_get(r, "pi"), HUGE_VAL);
    assert_float(toml_get(r, "pinf"), HUGE_VAL);
    assert_float(toml_get(r, "ninf"), -HUGE_VAL);
    v = toml_get(r, "n1");
    assert_int_equal(v->type, TOML_FLOAT);
    assert_true(isnan(v->u.f));
    assert_true(isnan(toml_get(r, "n2")->u.f));
    assert_true(isnan(toml_get(r, "n3")->u.f));
    assert_true(signbit(toml_get(r, "n3")->u.f));
    /* Underflow is not an error: it rounds towards zero. */
    assert_int_equal(toml_get(r, "tiny")->type, TOML_FLOAT);
    assert_true(toml_get(r, "tiny")->u.f < 1e-300);
    toml_free(r);
}

static void test_booleans_and_comments(void **state)
{
    struct toml_value *r = parse_ok("# full-line comment\n"
                                    "t = true # trailing comment\n"
                                    "\t f\t=\tfalse\t\n"
                                    "#last");

    (void)state;
    assert_bool(toml_get(r, "t"), 1);
    assert_bool(toml_get(r, "f"), 0);
    assert_int_equal(toml_get(r, "t")->line, 2);
    assert_int_equal(toml_get(r, "f")->line, 3);
    assert_int_equal(r->u.tab.n, 2);
    assert_int_equal(r->line, 1);
    toml_free(r);
}

static void test_arrays(void **state)
{
    struct toml_value *r = parse_ok("ints = [ 1, 2, 3 ]\n"
                                    "empty = []\n"
                                    "nested = [ [ 1, 2 ], [\"a\", 'b', \"\"\"c\"\"\"] ]\n"
                                    "mixed = [ 0.1, 1, \"x\", true, { k = 1 }, [] ]\n"
                                    "multi = [\n"
                                    "  \"/etc/cdi\", # first\n"
                                    "  # a comment line\n"
                                    "\n"
                                    "  \"/var/run/cdi\",\n"
                                    "]\n"
                                    "after = 1\n"
                                    "blank = [ # c\n ]\n");
    const struct toml_value *v;

    (void)state;
    v = toml_get(r, "ints");
    assert_int_equal(v->type, TOML_ARRAY);
    assert_int_equal(v->u.arr.n, 3);
    assert_int(v->u.arr.items[0], 1);
    assert_int(v->u.arr.items[2], 3);
    assert_int_equal(toml_get(r, "empty")->u.arr.n, 0);
    v = toml_get(r, "nested");
    assert_int_equal(v->u.arr.n, 2);
    assert_int(v->u.arr.items[0]->u.arr.items[1], 2);
    assert_str(v->u.arr.items[1]->u.arr.items[0], "a");
    assert_str(v->u.arr.items[1]->u.arr.items[1], "b");
    assert_str(v->u.arr.items[1]->u.arr.items[2], "c");
    v = toml_get(r, "mixed");
    assert_int_equal(v->u.arr.n, 6);
    assert_float(v->u.arr.items[0], 0.1);
    assert_bool(v->u.arr.items[3], 1);
    assert_int(toml_get(v->u.arr.items[4], "k"), 1);
    assert_int_equal(v->u.arr.items[5]->type, TOML_ARRAY);
    v = toml_get(r, "multi");
    assert_int_equal(v->line, 5);
    assert_int_equal(v->u.arr.n, 2);
    assert_str(v->u.arr.items[0], "/etc/cdi");
    assert_int_equal(v->u.arr.items[0]->line, 6);
    assert_str(v->u.arr.items[1], "/var/run/cdi");
    assert_int_equal(v->u.arr.items[1]->line, 9);
    assert_int_equal(toml_get(r, "after")->line, 11);
    assert_int_equal(toml_get(r, "blank")->u.arr.n, 0);
    toml_free(r);
}

static void test_inline_tables(void **state)
{
    struct toml_value *r = parse_ok("name = { first = \"Tom\", last = \"Preston-Werner\" }\n"
                                    "point = {x=1,y=2}\n"
                                    "animal = { type.name = \"pug\", type.size = 3 }\n"
                                    "empty = {}\n"
                                    "nest = { a = { b = [ 1, { c = true } ] } }\n"
                                    "ml = { list = [\n 1,\n 2 ] }\n");
    const struct toml_value *v;

    (void)state;
    assert_str(at(r, "name", "first", NULL), "Tom");
    assert_str(at(r, "name", "last", NULL), "Preston-Werner");
    assert_int(at(r, "point", "x", NULL), 1);
    assert_int(at(r, "point", "y", NULL), 2);
    assert_str(at(r, "animal", "type", "name"), "pug");
    assert_int(at(r, "animal", "type", "size"), 3);
    v = toml_get(r, "empty");
    assert_int_equal(v->type, TOML_TABLE);
    assert_int_equal(v->u.tab.n, 0);
    v = at(r, "nest", "a", "b");
    assert_bool(toml_get(v->u.arr.items[1], "c"), 1);
    assert_int_equal(at(r, "ml", "list", NULL)->u.arr.n, 2);
    assert_int_equal(toml_get(r, "ml")->line, 6);
    toml_free(r);
}

static void test_keys(void **state)
{
    struct toml_value *r = parse_ok("bare_key = 1\nbare-key = 2\n1234 = 3\n"
                                    "\"127.0.0.1\" = 4\n\"character encoding\" = 5\n"
                                    "\"ʎǝʞ\" = 6\n'key2' = 7\n'quoted \"value\"' = 8\n"
                                    "\"\" = 9\n\"esc\\u0041\" = 10\n"
                                    "physical.color = \"orange\"\nphysical.shape = \"round\"\n"
                                    "site.\"google.com\" = true\n"
                                    "fruit . flavor = \"banana\"\n"
                                    "3.14159 = \"pi\"\n");

    (void)state;
    assert_int(toml_get(r, "bare_key"), 1);
    assert_int(toml_get(r, "bare-key"), 2);
    assert_int(toml_get(r, "1234"), 3);
    assert_int(toml_get(r, "127.0.0.1"), 4);
    assert_int(toml_get(r, "character encoding"), 5);
    assert_int(toml_get(r, "ʎǝʞ"), 6);
    assert_int(toml_get(r, "key2"), 7);
    assert_int(toml_get(r, "quoted \"value\""), 8);
    assert_int(toml_get(r, ""), 9);
    assert_int(toml_get(r, "escA"), 10);
    assert_str(at(r, "physical", "color", NULL), "orange");
    assert_str(at(r, "physical", "shape", NULL), "round");
    assert_int_equal(toml_get(r, "physical")->type, TOML_TABLE);
    assert_int_equal(toml_get(r, "physical")->line, 11);
    assert_bool(at(r, "site", "google.com", NULL), 1);
    assert_str(at(r, "fruit", "flavor", NULL), "banana");
    assert_str(at(r, "3", "14159", NULL), "pi");
    /* Definition order is kept. */
    assert_string_equal(r->u.tab.kv[0].key, "bare_key");
    assert_string_equal(r->u.tab.kv[8].key, "");
    toml_free(r);
}

static void test_tables(void **state)
{
    struct toml_value *r = parse_ok("top = 0\n"
                                    "[a.\"b.c\".'d']\n"
                                    "x = 1\n"
                                    "[ j . \"ʞ\" . 'l' ]\n"
                                    "y = 2\n"
                                    "[x.y.z.w]\n"
                                    "[x]\n"
                                    "in_x = 3\n"
                                    "[fruit]\n"
                                    "apple.color = \"red\"\n"
                                    "apple.taste.sweet = true\n"
                                    "[fruit.apple.texture]\n"
                                    "smooth = true\n"
                                    "[dog.\"tater.man\"]\ntype.name = \"pug\"\n"
                                    "[empty]\n");
    const struct toml_value *v;

    (void)state;
    assert_int(toml_get(r, "top"), 0);
    v = at(r, "a", "b.c", "d");
    assert_int_equal(v->type, TOML_TABLE);
    assert_int_equal(v->line, 2);
    assert_int(toml_get(v, "x"), 1);
    assert_int_equal(toml_get(r, "a")->line, 2); /* implicit: line of the header */
    assert_int(at(r, "j", "ʞ", "l")->u.tab.kv[0].val, 2);
    assert_int_equal(at(r, "x", "y", "z")->type, TOML_TABLE);
    assert_int(at(r, "x", "in_x", NULL), 3);
    /* [x] defined after [x.y.z.w]: the table moves to its own header. */
    assert_int_equal(toml_get(r, "x")->line, 7);
    assert_str(at(r, "fruit", "apple", "color"), "red");
    assert_bool(at(r, "fruit", "apple", "taste")->u.tab.kv[0].val, 1);
    assert_bool(at(r, "fruit", "apple", "texture")->u.tab.kv[0].val, 1);
    assert_str(at(r, "dog", "tater.man", "type")->u.tab.kv[0].val, "pug");
    assert_int_equal(toml_get(r, "empty")->u.tab.n, 0);
    assert_int_equal(toml_get(r, "empty")->line, 16);
    toml_free(r);
}

static void test_array_of_tables(void **state)
{
    struct toml_value *r = parse_ok("[[products]]\nname = \"Hammer\"\nsku = 738594937\n\n"
                                    "[[products]]  # empty table within the array\n\n"
                                    "[[products]]\nname = \"Nail\"\ncolor = \"gray\"\n"
                                    "[[fruits]]\nname = \"apple\"\n"
                                    "[fruits.physical]\ncolor = \"red\"\n"
                                    "[[fruits.varieties]]\nname = \"red delicious\"\n"
                                    "[[fruits.varieties]]\nname = \"granny smith\"\n"
                                    "[[fruits]]\nname = \"banana\"\n"
                                    "[[fruits.varieties]]\nname = \"plantain\"\n");
    const struct toml_value *p, *f;

    (void)state;
    p = toml_get(r, "products");
    assert_int_equal(p->type, TOML_ARRAY);
    assert_int_equal(p->line, 1);
    assert_int_equal(p->u.arr.n, 3);
    assert_str(toml_get(p->u.arr.items[0], "name"), "Hammer");
    assert_int(toml_get(p->u.arr.items[0], "sku"), 738594937);
    assert_int_equal(p->u.arr.items[1]->type, TOML_TABLE);
    assert_int_equal(p->u.arr.items[1]->u.tab.n, 0);
    assert_int_equal(p->u.arr.items[1]->line, 5);
    assert_str(toml_get(p->u.arr.items[2], "color"), "gray");
    assert_int_equal(p->u.arr.items[2]->line, 7);
    f = toml_get(r, "fruits");
    assert_int_equal(f->u.arr.n, 2);
    assert_str(at(f->u.arr.items[0], "physical", "color", NULL), "red");
    assert_int_equal(at(f->u.arr.items[0], "varieties", NULL, NULL)->u.arr.n, 2);
    assert_str(toml_get(at(f->u.arr.items[0], "varieties", NULL, NULL)->u.arr.items[1], "name"),
               "granny smith");
    assert_str(toml_get(at(f->u.arr.items[1], "varieties", NULL, NULL)->u.arr.items[0], "name"),
               "plantain");
    toml_free(r);
}

static void test_edge_inputs(void **state)
{
    struct dd_err err;
    struct toml_value *r;
    const char bom[] = "\xef\xbb\xbf" "a = 1\n";
    const char nul_inside[] = "a = 1\n";
    char *big;
    size_t i, n, used = 0;

    (void)state;
    r = toml_parse("", 0, &err);
    assert_non_null(r);
    assert_int_equal(r->type, TOML_TABLE);
    assert_int_equal(r->u.tab.n, 0);
    toml_free(r);
    r = toml_parse(NULL, 0, NULL);
    assert_non_null(r);
    toml_free(r);
    r = parse_ok(bom);
    assert_int(toml_get(r, "a"), 1);
    toml_free(r);
    /* Not NUL-terminated: only len bytes are read. */
    r = toml_parse(nul_inside, 5, &err);
    assert_non_null(r);
    assert_int(toml_get(r, "a"), 1);
    toml_free(r);
    toml_free(NULL);
    assert_null(toml_get(NULL, "a"));
    assert_null(toml_get_path(NULL, NULL));
    /* A table with many keys (hash index) still finds duplicates. */
    n = 5000;
    big = malloc(n * 16 + 32);
    assert_non_null(big);
    for (i = 0; i < n; i++)
        used += (size_t)snprintf(big + used, 16, "k%zu = %zu\n", i, i);
    r = parse_ok(big);
    assert_int_equal(r->u.tab.n, n);
    assert_int(toml_get(r, "k4321"), 4321);
    assert_int_equal(toml_get(r, "k4999")->line, 5000);
    toml_free(r);
    snprintf(big + used, 32, "k1234 = 0\n");
    assert_null(toml_parse(big, strlen(big), &err));
    assert_int_equal(err.rc, DD_EPARSE);
    assert_int_equal(err.line, 5001);
    assert_contains(err.msg, "line 5001: duplicate key k1234 (first defined on line 1235)");
    free(big);
}

/* ---- errors ------------------------------------------------------------ */

struct bad {
    const char *src;
    int line;
    const char *msg; /* substring of err.msg, after "line N: " */
};

static void check_bad(const struct bad *b, size_t n, enum dd_rc rc)
{
    size_t i;

    for (i = 0; i < n; i++) {
        struct dd_err err;
        struct toml_value *v = toml_parse(b[i].src, strlen(b[i].src), &err);
        char want[64];

        if (v) {
            toml_free(v);
            fail_msg("case %zu parsed but should fail: %s", i, b[i].src);
        }
        if (err.rc != rc || err.line != b[i].line)
            fail_msg("case %zu: rc %d line %d (%s), want rc %d line %d\ninput: %s", i, err.rc,
                     err.line, err.msg, rc, b[i].line, b[i].src);
        snprintf(want, sizeof(want), "line %d: ", b[i].line);
        if (strncmp(err.msg, want, strlen(want)) != 0)
            fail_msg("case %zu: message \"%s\" does not start with \"%s\"", i, err.msg, want);
        assert_contains(err.msg, b[i].msg);
    }
}

#define CHECK_BAD(arr, rc) check_bad(arr, sizeof(arr) / sizeof(arr[0]), rc)

static void test_err_duplicates(void **state)
{
    static const struct bad cases[] = {
        {"a = 1\nb = 2\na = 3\n", 3, "duplicate key a (first defined on line 1)"},
        {"spelling = \"favorite\"\n\"spelling\" = \"favourite\"\n", 2, "duplicate key spelling"},
        {"[t]\nx = 1\n'x' = 2\n", 3, "duplicate key x"},
        {"[a]\nx = 1\n\n[a]\n", 4, "table [a] is defined twice (first on line 1)"},
        {"[a.b]\n[a.b]\n", 2, "table [a.b] is defined twice"},
        {"[a]\n[x.y]\n[a]\n", 3, "defined twice"},
        {"[a]\nb = 1\n[a.b]\n", 3, "key a.b is already an integer (line 2), not a table"},
        {"a = 1\n[a.b]\n", 2, "key a is already an integer (line 1)"},
        {"[a]\nb = 'x'\n[a.b.c]\n", 3, "key a.b is already a string"},
        {"a.b = 1\n[a]\n", 2, "table [a] is defined twice"},
        {"[fruit]\napple.color = 'red'\n\n[fruit.apple]\n", 4, "[fruit.apple] is defined twice"},
        {"[a.b]\n[a]\nb = 1\n", 3, "duplicate key b"},
        {"[product]\ntype.name = 'Nail'\ntype = { edible = false }\n", 3, "duplicate key type"},
        {"a.b = 1\na.b.c = 2\n", 2, "key a.b is already an integer"},
        {"a.b = 1\na.b = 2\n", 2, "duplicate key a.b"},
        {"[a.b.c]\nz = 9\n[a]\nb.c.t = 1\n", 4, "cannot add keys to table b.c defined on line 1"},
        {"[x]\n[x.y]\n[z]\n[x]\n", 4, "table [x] is defined twice"},
        {"[[a]]\n[a]\n", 2, "[a] is an array of tables (line 1), not a table"},
        {"a = [1]\n[[a]]\n", 2, "[[a]] cannot extend a static array defined on line 1"},
        {"a = []\n[a.b]\n", 2, "key a is already an array"},
        {"[a]\n[[a]]\n", 2, "[[a]] cannot extend a table defined on line 1"},
        {"x = { a = 1, a = 2 }\n", 1, "duplicate key a"},
        {"x = { a = { b = 1 }, a.c = 2 }\n", 1, "cannot add keys to inline table a"},
    };

    (void)state;
    CHECK_BAD(cases, DD_EPARSE);
}

static void test_err_inline_closed(void **state)
{
    static const struct bad cases[] = {
        {"a = { x = 1 }\n[a.b]\n", 2, "cannot add to inline table a defined on line 1"},
        {"a = { x = 1 }\n[a]\n", 2, "cannot add to inline table a defined on line 1"},
        {"a = { x = 1 }\na.y = 2\n", 2, "cannot add keys to inline table a (line 1)"},
        {"a = { b = { c = 1 } }\n[a.b.d]\n", 2, "cannot add to inline table a"},
        {"a = [ { b = 1 } ]\n[[a]]\n", 2, "cannot extend a static array"},
        {"[t]\np = { q = 1 }\n\n[t.p.r]\n", 4, "cannot add to inline table t.p"},
    };

    (void)state;
    CHECK_BAD(cases, DD_EPARSE);
}

static void test_err_syntax(void **state)
{
    static const struct bad cases[] = {
        {"a 1\n", 1, "expected '=' after key a"},
        {"\n\nkey\n", 3, "expected '=' after key key"},
        {"x.y \"z\"\n", 1, "expected '=' after key x.y"},
        {"= 1\n", 1, "expected a key before '='"},
        {"a. = 1\n", 1, "expected a key"},
        {"a..b = 1\n", 1, "expected a key, found '.'"},
        {"ké = 1\n", 1, "non-ASCII keys must be quoted"},
        {"\"\"\"k\"\"\" = 1\n", 1, "a multi-line string cannot be a key"},
        {"a = 1 2\n", 1, "unexpected text after value"},
        {"a = 1\nb = \"x\" y\n", 2, "unexpected text after value"},
        {"a = true false\n", 1, "unexpected text after value"},
        {"a = [1] ]\n", 1, "unexpected text after value"},
        {"[a] b = 1\n", 1, "unexpected text after table header"},
        {"[a]]\n", 1, "unexpected text after table header"},
        {"[]\n", 1, "expected a key, found ']'"},
        {"[a\n", 1, "expected ']' to close the table header"},
        {"[[a]\n", 1, "expected ']]' to close the table header"},
        {"[[a] ]\n", 1, "expected ']]'"},
        {"[ [a]]\n", 1, "expected a key, found '['"},
        {"a =\n", 1, "expected a value"},
        {"a = # nothing\n", 1, "expected a value"},
        {"a = yes\n", 1, "invalid value (strings must be quoted)"},
        {"a = True\n", 1, "strings must be quoted"},
        {"a = truex\n", 1, "invalid value"},
        {"a = [1,,2]\n", 1, "expected a value"},
        {"a = [,]\n", 1, "expected a value"},
        {"a = [1 2]\n", 1, "expected ',' or ']' after an array element"},
        {"x = 1\na = [\n1,\n2\n", 2, "unterminated array"},
        {"a = {x = 1,}\n", 1, "trailing comma in an inline table"},
        {"a = {x = 1\n}\n", 1, "inline tables must be on one line"},
        {"a = {\nx = 1}\n", 1, "inline tables must be on one line"},
        {"a = {x = 1, \ny = 2}\n", 1, "inline tables must be on one line"},
        {"a = {x = 1 y = 2}\n", 1, "expected ',' or '}'"},
        {"a = {x = 1 # c\n}\n", 1, "expected ',' or '}'"},
        {"a = {x}\n", 1, "expected '=' after key x"},
        {"a = 1\rb = 2\n", 1, "carriage return without a line feed"},
        {"a = 1\r\nb = 2\r\rc = 3\n", 2, "carriage return"},
        {"\r", 1, "carriage return"},
    };

    (void)state;
    CHECK_BAD(cases, DD_EPARSE);
}

static void test_err_strings(void **state)
{
    static const struct bad cases[] = {
        {"a = \"abc\nb = 1\n", 1, "unterminated string"},
        {"a = 'abc\n", 1, "unterminated string"},
        {"a = \"abc", 1, "unterminated string"},
        {"x = 1\na = '''abc\n\n", 2, "unterminated string"},
        {"a = \"\"\"abc\ndef\"\"", 1, "unterminated string"},
        {"a = \"\"\"x\\", 1, "unterminated string"},
        {"a = \"\"\"x\"\"\"\"\"\"\n", 1, "too many quotes"},
        {"a = \"\x01\"\n", 1, "control character U+0001 in string"},
        {"a = 1\nb = 'x\x1by'\n", 2, "control character U+001B in string"},
        {"a = \"x\x7f\"\n", 1, "control character U+007F"},
        {"a = '''\nx\x08y'''\n", 2, "control character U+0008"},
        {"a = \"a\rb\"\n", 1, "carriage return without a line feed in string"},
        {"a = \"\"\"a\rb\"\"\"\n", 1, "carriage return without a line feed in string"},
        {"a = \"\\q\"\n", 1, "invalid escape sequence \\q"},
        {"a = \"\\x41\"\n", 1, "invalid escape sequence \\x"},
        {"a = \"\\e\"\n", 1, "invalid escape sequence \\e"},
        {"a = \"\\ \"\n", 1, "invalid escape sequence \\ "},
        {"a = \"\"\"\\  x\"\"\"\n", 1, "text after a line-ending backslash"},
        {"a = \"\\u12\"\n", 1, "escape needs 4 hex digits"},
        {"a = \"\\u12G4\"\n", 1, "escape needs 4 hex digits"},
        {"a = \"\\U0001F60\"\n", 1, "escape needs 8 hex digits"},
        {"a = \"\\uD800\"\n", 1, "is not a Unicode scalar value"},
        {"a = \"\\U00110000\"\n", 1, "is not a Unicode scalar value"},
        {"a = \"\\u0000\"\n", 1, "NUL characters in strings are not supported"},
        {"# ok\n# bad \x01\n", 2, "control character U+0001 in comment"},
        {"a = 1 # \x7f\n", 1, "control character U+007F in comment"},
        {"a = 1\nb = \"\xff\"\n", 2, "invalid UTF-8"},
        {"a = \"\xc0\xaf\"\n", 1, "invalid UTF-8"},
        {"\n\n# \xed\xa0\x80 surrogate\n", 3, "invalid UTF-8"},
        {"a = '\xf4\x90\x80\x80'\n", 1, "invalid UTF-8"},
        {"a = '\xe2\x82'\n", 1, "invalid UTF-8"},
        {"k\xe9y = 1\n", 1, "invalid UTF-8"},
    };

    (void)state;
    CHECK_BAD(cases, DD_EPARSE);
}

static void test_err_numbers(void **state)
{
    static const struct bad cases[] = {
        {"a = 0123\n", 1, "leading zeros are not allowed"},
        {"a = -01\n", 1, "leading zeros"},
        {"a = 00\n", 1, "leading zeros"},
        {"a = 1__0\n", 1, "invalid integer"},
        {"a = _1\n", 1, "invalid value"},
        {"a = 1_\n", 1, "invalid integer"},
        {"a = +\n", 1, "invalid integer"},
        {"a = 9223372036854775808\n", 1, "integer does not fit in 64 bits"},
        {"a = -9223372036854775809\n", 1, "does not fit in 64 bits"},
        {"a = 0x8000000000000000\n", 1, "does not fit in 64 bits"},
        {"a = 0xFFFFFFFFFFFFFFFFF\n", 1, "does not fit"},
        {"a = +0x1\n", 1, "a sign is not allowed on hex"},
        {"a = -0b1\n", 1, "a sign is not allowed"},
        {"a = 0x\n", 1, "invalid integer"},
        {"a = 0x_1\n", 1, "invalid integer"},
        {"a = 0b102\n", 1, "invalid integer"},
        {"a = 0o8\n", 1, "invalid integer"},
        {"a = 0X1F\n", 1, "leading zeros"},
        {"a = 1.\n", 1, "invalid number"},
        {"a = .5\n", 1, "invalid value"},
        {"a = 1.e5\n", 1, "invalid number"},
        {"a = 01.5\n", 1, "invalid number"},
        {"a = 1e\n", 1, "invalid number"},
        {"a = 1e+\n", 1, "invalid number"},
        {"a = 1.5_\n", 1, "invalid number"},
        {"a = 1_.5\n", 1, "invalid number"},
        {"a = 1._5\n", 1, "invalid number"},
        {"a = 1.2.3\n", 1, "invalid number"},
        {"a = 1e400\n", 1, "float is out of range"},
        {"a = -1e400\n", 1, "float is out of range"},
        {"a = infinity\n", 1, "invalid value"},
        {"a = +-1\n", 1, "invalid integer"},
        {"x = 1\nd = 1979-05-27T07:32:00Z\n", 2, "dates and times are not supported"},
        {"d = 1979-05-27\n", 1, "dates and times are not supported"},
        {"t = 07:32:00\n", 1, "dates and times are not supported"},
        {"a = [ 1979-05-27 07:32:00 ]\n", 1, "dates and times are not supported"},
    };

    (void)state;
    CHECK_BAD(cases, DD_EPARSE);
}

static void test_err_limits(void **state)
{
    struct dd_err err;
    struct toml_value *r;
    char *buf;
    size_t i, n = (size_t)4 << 20;
    char deep[256];

    (void)state;
    /* 64 levels parse; 65 do not. */
    for (i = 0; i < 64; i++)
        deep[4 + i] = '[';
    memcpy(deep, "a = ", 4);
    for (i = 0; i < 64; i++)
        deep[68 + i] = ']';
    deep[132] = '\0';
    r = parse_ok(deep);
    toml_free(r);
    memcpy(deep, "\nb = [", 6);
    for (i = 0; i < 65; i++)
        deep[5 + i] = '[';
    deep[70] = '\0';
    assert_null(toml_parse(deep, strlen(deep), &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_int_equal(err.line, 2);
    assert_contains(err.msg, "line 2: arrays and inline tables nest deeper than 64");
    memcpy(deep, "a = ", 4);
    for (i = 0; i < 65; i++)
        memcpy(deep + 4 + 3 * i, "{b=", 3);
    deep[4 + 3 * 65] = '\0';
    assert_null(toml_parse(deep, strlen(deep), &err));
    assert_int_equal(err.rc, DD_ETOOBIG);

    /* Key parts. */
    for (i = 0; i < 65; i++)
        memcpy(deep + 2 * i, "a.", 2);
    memcpy(deep + 130, "b = 1\n", 7);
    assert_null(toml_parse(deep, strlen(deep), &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_contains(err.msg, "line 1: key has more than 64 parts");

    /* Size: exactly 4 MiB of blank lines parse, one byte more does not. */
    buf = malloc(n + 1);
    assert_non_null(buf);
    memset(buf, '\n', n + 1);
    r = toml_parse(buf, n, &err);
    assert_non_null(r);
    toml_free(r);
    assert_null(toml_parse(buf, n + 1, &err));
    assert_int_equal(err.rc, DD_ETOOBIG);
    assert_contains(err.msg, "4194304");
    free(buf);
}

/* ---- containerd configs ------------------------------------------------ */

static void check_containerd_17(const struct toml_value *r)
{
    const char *runc_opts[] = {"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes",
                               "runc", "options", NULL};
    const char *cgroup[] = {"plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes",
                            "runc", "options", "SystemdCgroup", NULL};
    const char *unpack[] = {"plugins", "io.containerd.transfer.v1.local", "unpack_config", NULL};
    const struct toml_value *v, *cri;

    assert_int(toml_get(r, "version"), 2);
    assert_int_equal(toml_get(r, "version")->line, 9);
    assert_str(toml_get(r, "root"), "/var/lib/containerd");
    assert_int(at(r, "grpc", "max_recv_message_size", NULL), 16777216);
    assert_int_equal(at(r, "grpc", "max_recv_message_size", NULL)->line, 24);
    assert_float(at(r, "plugins", "io.containerd.gc.v1.scheduler", "pause_threshold"), 0.02);
    cri = at(r, "plugins", "io.containerd.grpc.v1.cri", NULL);
    assert_int_equal(cri->line, 45);
    assert_bool(toml_get(cri, "enable_cdi"), 0);
    assert_int_equal(toml_get(cri, "enable_cdi")->line, 54);
    assert_str(toml_get(cri, "sandbox_image"), "registry.k8s.io/pause:3.8");
    v = toml_get(cri, "cdi_spec_dirs");
    assert_int_equal(v->u.arr.n, 2);
    assert_str(v->u.arr.items[1], "/var/run/cdi");
    v = toml_get_path(r, runc_opts);
    assert_non_null(v);
    assert_int_equal(v->type, TOML_TABLE);
    assert_int_equal(v->line, 127);
    assert_int_equal(v->u.tab.n, 11);
    v = toml_get_path(r, cgroup);
    assert_bool(v, 1);
    assert_int_equal(v->line, 138);
    v = toml_get_path(r, unpack);
    assert_non_null(v);
    assert_int_equal(v->type, TOML_ARRAY);
    assert_int_equal(v->line, 255);
    assert_int_equal(v->u.arr.n, 1);
    assert_str(toml_get(v->u.arr.items[0], "platform"), "linux/amd64");
    v = at(r, "timeouts", "io.containerd.timeout.shim.load", NULL);
    assert_str(v, "5s");
    assert_int_equal(v->line, 282);
    assert_int_equal(toml_get(r, "proxy_plugins")->u.tab.n, 0);
}

static void test_containerd_17_default(void **state)
{
    size_t len;
    char *src = slurp(DATA "config-1.7-default.toml", &len);
    struct dd_err err;
    struct toml_value *r = toml_parse(src, len, &err);

    (void)state;
    if (!r)
        fail_msg("%s", err.msg);
    check_containerd_17(r);
    toml_free(r);
    free(src);
}

static void test_containerd_17_crlf(void **state)
{
    size_t len, i, n = 0;
    char *src = slurp(DATA "config-1.7-default.toml", &len);
    char *crlf = malloc(2 * len + 1);
    struct dd_err err;
    struct toml_value *r;

    (void)state;
    assert_non_null(crlf);
    for (i = 0; i < len; i++) {
        if (src[i] == '\n')
            crlf[n++] = '\r';
        crlf[n++] = src[i];
    }
    r = toml_parse(crlf, n, &err);
    if (!r)
        fail_msg("%s", err.msg);
    check_containerd_17(r);
    toml_free(r);
    free(crlf);
    free(src);
}

static void test_crlf_values(void **state)
{
    struct toml_value *r = parse_ok("a = \"\"\"\r\nx\r\ny\"\"\"\r\n"
                                    "b = '''p\r\nq'''\r\n"
                                    "c = \"\"\"l \\\r\n   m\"\"\" # c\r\n"
                                    "d = [\r\n 1, # one\r\n 2,\r\n]\r\n"
                                    "[t]\r\ne = true\r\n");

    (void)state;
    assert_str(toml_get(r, "a"), "x\ny");
    assert_str(toml_get(r, "b"), "p\nq");
    assert_str(toml_get(r, "c"), "l m");
    assert_int_equal(toml_get(r, "c")->line, 6);
    assert_int_equal(toml_get(r, "d")->u.arr.n, 2);
    assert_int_equal(toml_get(r, "d")->u.arr.items[1]->line, 10);
    assert_int_equal(toml_get(r, "t")->line, 12);
    assert_bool(at(r, "t", "e", NULL), 1);
    assert_int_equal(at(r, "t", "e", NULL)->line, 13);
    toml_free(r);
}

static void test_containerd_20_default(void **state)
{
    const char *cgroup[] = {"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes",
                            "runc", "options", "SystemdCgroup", NULL};
    const char *opts[] = {"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes",
                          "runc", "options", NULL};
    size_t len;
    char *src = slurp(DATA "config-2.0-default.toml", &len);
    struct dd_err err;
    struct toml_value *r = toml_parse(src, len, &err);
    const struct toml_value *rt, *v;

    (void)state;
    if (!r)
        fail_msg("%s", err.msg);
    assert_int(toml_get(r, "version"), 3);
    assert_int_equal(toml_get(r, "version")->line, 1);
    rt = at(r, "plugins", "io.containerd.cri.v1.runtime", NULL);
    assert_int_equal(rt->line, 57);
    assert_bool(toml_get(rt, "enable_cdi"), 1);
    assert_int_equal(toml_get(rt, "enable_cdi")->line, 72);
    v = toml_get(rt, "cdi_spec_dirs");
    assert_int_equal(v->line, 73);
    assert_str(v->u.arr.items[0], "/etc/cdi");
    v = toml_get_path(r, opts);
    assert_non_null(v);
    assert_int_equal(v->line, 97);
    assert_bool(toml_get_path(r, cgroup), 1);
    assert_int_equal(toml_get_path(r, cgroup)->line, 106);
    assert_str(at(r, "plugins", "io.containerd.cri.v1.images", "pinned_images")->u.tab.kv[0].val,
               "registry.k8s.io/pause:3.10");
    assert_float(at(r, "plugins", "io.containerd.gc.v1.scheduler", "pause_threshold"), 0.02);
    assert_int_equal(at(r, "plugins", "io.containerd.gc.v1.scheduler", "pause_threshold")->line,
                     118);
    v = at(r, "plugins", "io.containerd.transfer.v1.local", "unpack_config");
    assert_int_equal(v->line, 219);
    assert_str(toml_get(v->u.arr.items[0], "snapshotter"), "overlayfs");
    assert_str(at(r, "timeouts", "io.containerd.timeout.shim.load", NULL), "5s");
    assert_int_equal(at(r, "timeouts", "io.containerd.timeout.shim.load", NULL)->line, 231);
    assert_int_equal(at(r, "plugins", "io.containerd.internal.v1.tracing", NULL)->u.tab.n, 0);
    toml_free(r);
    free(src);
}

static void test_all_sample_configs_parse(void **state)
{
    static const char *const files[] = {
        "config-1.4-v1.toml",      "config-1.7-cdi-off.toml", "config-1.7-cdi-on.toml",
        "config-1.7-default.toml", "config-2.0-cdi-off.toml", "config-2.0-default.toml",
        "config-2.0-minimal.toml",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[256];
        size_t len;
        char *src;
        struct dd_err err;
        struct toml_value *r;

        snprintf(path, sizeof(path), DATA "%s", files[i]);
        src = slurp(path, &len);
        r = toml_parse(src, len, &err);
        if (!r)
            fail_msg("%s: %s", path, err.msg);
        toml_free(r);
        free(src);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_strings),
        cmocka_unit_test(test_literal_strings),
        cmocka_unit_test(test_multiline_strings),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_booleans_and_comments),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_inline_tables),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_array_of_tables),
        cmocka_unit_test(test_edge_inputs),
        cmocka_unit_test(test_err_duplicates),
        cmocka_unit_test(test_err_inline_closed),
        cmocka_unit_test(test_err_syntax),
        cmocka_unit_test(test_err_strings),
        cmocka_unit_test(test_err_numbers),
        cmocka_unit_test(test_err_limits),
        cmocka_unit_test(test_containerd_17_default),
        cmocka_unit_test(test_containerd_17_crlf),
        cmocka_unit_test(test_crlf_values),
        cmocka_unit_test(test_containerd_20_default),
        cmocka_unit_test(test_all_sample_configs_parse),
    };

    return cmocka_run_group_tests_name("toml", tests, NULL, NULL);
}
