/*
 * cel_lex.c - the CEL lexical grammar (cel-spec "Syntax" section) as a pure,
 * table-driven scanner, plus decoding of string and bytes literals.
 */
#include <string.h>

#include "cel_int.h"

/* Character classes: the first byte of a token decides how it is scanned. */
enum {
    CC_ILLEGAL, CC_SPACE, CC_ALPHA, CC_DIGIT, CC_QUOTE, CC_DOT, CC_OP, CC_SLASH, CC_NUL
};

static const unsigned char cls[256] = {
    ['\t'] = CC_SPACE, ['\n'] = CC_SPACE, ['\f'] = CC_SPACE, ['\r'] = CC_SPACE,
    [' '] = CC_SPACE,
    ['_'] = CC_ALPHA,
#define R10(c) [c] = CC_DIGIT
    R10('0'), R10('1'), R10('2'), R10('3'), R10('4'), R10('5'), R10('6'), R10('7'), R10('8'),
    R10('9'),
#undef R10
    ['\''] = CC_QUOTE, ['"'] = CC_QUOTE,
    ['.'] = CC_DOT,
    ['='] = CC_OP, ['!'] = CC_OP, ['<'] = CC_OP, ['>'] = CC_OP, ['&'] = CC_OP, ['|'] = CC_OP,
    ['+'] = CC_OP, ['-'] = CC_OP, ['*'] = CC_OP, ['%'] = CC_OP, ['?'] = CC_OP, [':'] = CC_OP,
    [','] = CC_OP, ['['] = CC_OP, [']'] = CC_OP, ['('] = CC_OP, [')'] = CC_OP, ['{'] = CC_OP,
    ['}'] = CC_OP,
    ['/'] = CC_SLASH,
};

static int is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_xdigit(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int char_class(unsigned char c)
{
    return is_alpha(c) ? CC_ALPHA : cls[c];
}

/* Single- and double-character operators, longest first. */
static const struct {
    const char *text;
    int type;
} ops[] = {
    {"==", CEL_TK_EQ}, {"!=", CEL_TK_NE}, {"<=", CEL_TK_LE}, {">=", CEL_TK_GE},
    {"&&", CEL_TK_AND}, {"||", CEL_TK_OR}, {"<", CEL_TK_LT}, {">", CEL_TK_GT},
    {"!", CEL_TK_NOT}, {"+", CEL_TK_PLUS}, {"-", CEL_TK_MINUS}, {"*", CEL_TK_STAR},
    {"%", CEL_TK_PERCENT}, {"?", CEL_TK_QUESTION}, {":", CEL_TK_COLON}, {",", CEL_TK_COMMA},
    {"[", CEL_TK_LBRACKET}, {"]", CEL_TK_RBRACKET}, {"(", CEL_TK_LPAREN}, {")", CEL_TK_RPAREN},
    {"{", CEL_TK_LBRACE}, {"}", CEL_TK_RBRACE},
};

/* Keywords and the words cel-spec reserves for future use. */
static const struct {
    const char *word;
    int type;
} keywords[] = {
    {"true", CEL_TK_TRUE}, {"false", CEL_TK_FALSE}, {"null", CEL_TK_NUL}, {"in", CEL_TK_IN},
    {"as", CEL_TK_RESERVED}, {"break", CEL_TK_RESERVED}, {"const", CEL_TK_RESERVED},
    {"continue", CEL_TK_RESERVED}, {"else", CEL_TK_RESERVED}, {"for", CEL_TK_RESERVED},
    {"function", CEL_TK_RESERVED}, {"if", CEL_TK_RESERVED}, {"import", CEL_TK_RESERVED},
    {"let", CEL_TK_RESERVED}, {"loop", CEL_TK_RESERVED}, {"package", CEL_TK_RESERVED},
    {"namespace", CEL_TK_RESERVED}, {"return", CEL_TK_RESERVED}, {"var", CEL_TK_RESERVED},
    {"void", CEL_TK_RESERVED}, {"while", CEL_TK_RESERVED},
};

static const char *const tok_names[] = {
#define CEL__TOK_NAME(name, text) text,
    CEL_TOKENS(CEL__TOK_NAME)
#undef CEL__TOK_NAME
};

const char *cel__tok_name(int type)
{
    if (type < 0 || type >= CEL_TK__COUNT)
        return "?";
    return tok_names[type];
}

static size_t scan_ident(const char *z, size_t n, int *type)
{
    size_t i = 1;

    while (i < n && (is_alpha((unsigned char)z[i]) || is_digit((unsigned char)z[i])))
        i++;
    *type = CEL_TK_IDENT;
    for (size_t k = 0; k < sizeof(keywords) / sizeof(keywords[0]); k++) {
        if (strlen(keywords[k].word) == i && memcmp(keywords[k].word, z, i) == 0) {
            *type = keywords[k].type;
            break;
        }
    }
    return i;
}

static size_t scan_exponent(const char *z, size_t n, size_t i)
{
    size_t j = i + 1;

    if (i >= n || (z[i] != 'e' && z[i] != 'E'))
        return i;
    if (j < n && (z[j] == '+' || z[j] == '-'))
        j++;
    if (j >= n || !is_digit((unsigned char)z[j]))
        return i; /* "1e" is the int 1 followed by the identifier e */
    while (j < n && is_digit((unsigned char)z[j]))
        j++;
    return j;
}

/* INT, UINT or DOUBLE starting with a digit or with '.' followed by a digit. */
static size_t scan_number(const char *z, size_t n, int *type)
{
    size_t i = 0;

    if (z[0] == '0' && n > 2 && (z[1] == 'x' || z[1] == 'X') && is_xdigit((unsigned char)z[2])) {
        i = 2;
        while (i < n && is_xdigit((unsigned char)z[i]))
            i++;
        *type = CEL_TK_INT;
        if (i < n && (z[i] == 'u' || z[i] == 'U')) {
            *type = CEL_TK_UINT;
            i++;
        }
        return i;
    }
    while (i < n && is_digit((unsigned char)z[i]))
        i++;
    *type = CEL_TK_INT;
    if (i + 1 < n && z[i] == '.' && is_digit((unsigned char)z[i + 1])) {
        i++;
        while (i < n && is_digit((unsigned char)z[i]))
            i++;
        *type = CEL_TK_DOUBLE;
    }
    size_t e = scan_exponent(z, n, i);
    if (e != i) {
        *type = CEL_TK_DOUBLE;
        return e;
    }
    if (*type == CEL_TK_INT && i < n && (z[i] == 'u' || z[i] == 'U')) {
        *type = CEL_TK_UINT;
        i++;
    }
    return i;
}

/* A string/bytes literal from its opening quote at z[q]; returns total length
 * or 0 when unterminated (the caller reports ILLEGAL). */
static size_t scan_string(const char *z, size_t n, size_t q, int raw)
{
    char quote = z[q];
    int triple = q + 2 < n && z[q + 1] == quote && z[q + 2] == quote;
    size_t i = q + (triple ? 3 : 1);

    while (i < n) {
        if (z[i] == '\\' && !raw) {
            i += 2;
            continue;
        }
        if (triple) {
            if (z[i] == quote && i + 2 < n && z[i + 1] == quote && z[i + 2] == quote)
                return i + 3;
        } else {
            if (z[i] == '\n' || z[i] == '\r')
                return 0;
            if (z[i] == quote)
                return i + 1;
        }
        i++;
    }
    return 0;
}

/* Returns the prefix length (r, b, rb, br in any case) if z starts a literal. */
static size_t string_prefix(const char *z, size_t n, int *raw, int *bytes)
{
    size_t i = 0;

    *raw = *bytes = 0;
    while (i < 2 && i < n) {
        char c = z[i];
        if ((c == 'r' || c == 'R') && !*raw)
            *raw = 1;
        else if ((c == 'b' || c == 'B') && !*bytes)
            *bytes = 1;
        else
            break;
        i++;
    }
    if (i < n && (z[i] == '\'' || z[i] == '"'))
        return i;
    *raw = *bytes = 0;
    return SIZE_MAX;
}

size_t cel__next_token(const char *z, size_t n, int *type)
{
    size_t i;

    if (n == 0) {
        *type = CEL_TK_EOF;
        return 0;
    }
    switch (char_class((unsigned char)z[0])) {
    case CC_SPACE:
        for (i = 1; i < n && cls[(unsigned char)z[i]] == CC_SPACE; i++)
            ;
        *type = CEL_TK_SPACE;
        return i;
    case CC_ALPHA: {
        int raw, bytes;
        size_t pre = string_prefix(z, n, &raw, &bytes);
        if (pre != SIZE_MAX) {
            size_t len = scan_string(z, n, pre, raw);
            if (len) {
                *type = bytes ? CEL_TK_BYTES : CEL_TK_STRING;
                return len;
            }
            *type = CEL_TK_ILLEGAL;
            return n;
        }
        return scan_ident(z, n, type);
    }
    case CC_DIGIT:
        return scan_number(z, n, type);
    case CC_DOT:
        if (n > 1 && is_digit((unsigned char)z[1])) {
            i = 1;
            while (i < n && is_digit((unsigned char)z[i]))
                i++;
            *type = CEL_TK_DOUBLE;
            return scan_exponent(z, n, i);
        }
        *type = CEL_TK_DOT;
        return 1;
    case CC_QUOTE: {
        size_t len = scan_string(z, n, 0, 0);
        if (len) {
            *type = CEL_TK_STRING;
            return len;
        }
        *type = CEL_TK_ILLEGAL;
        return n;
    }
    case CC_SLASH:
        if (n > 1 && z[1] == '/') {
            for (i = 2; i < n && z[i] != '\n'; i++)
                ;
            *type = CEL_TK_COMMENT;
            return i;
        }
        *type = CEL_TK_SLASH;
        return 1;
    case CC_OP:
        for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
            size_t len = ops[k].text[1] ? 2 : 1;
            if (len <= n && memcmp(ops[k].text, z, len) == 0) {
                *type = ops[k].type;
                return len;
            }
        }
        break;
    default:
        break;
    }
    *type = CEL_TK_ILLEGAL;
    /* Swallow a whole UTF-8 sequence so the message shows a full character. */
    for (i = 1; i < n && ((unsigned char)z[i] & 0xC0) == 0x80; i++)
        ;
    return i;
}

/* ---- Literal decoding -------------------------------------------------------- */

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex_val(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

/* Decodes one escape at s[0] == '\\'; returns bytes consumed or 0 if invalid. */
static size_t unescape_one(const char *s, size_t n, int is_bytes, char *o, size_t *olen)
{
    static const char simple_in[] = "\\\"'`?abfnrtv";
    static const char simple_out[] = "\\\"'`?\a\b\f\n\r\t\v";
    const char *p;
    uint32_t v = 0;
    size_t digits, i;

    if (n < 2)
        return 0;
    p = strchr(simple_in, s[1]);
    if (p && s[1]) {
        o[0] = simple_out[p - simple_in];
        *olen = 1;
        return 2;
    }
    switch (s[1]) {
    case 'x': case 'X': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    case '0': case '1': case '2': case '3':
        if (n < 4)
            return 0;
        for (i = 1; i < 4; i++) {
            if (s[i] < '0' || s[i] > '7')
                return 0;
            v = v * 8 + (uint32_t)(s[i] - '0');
        }
        goto emit_byte;
    default:
        return 0;
    }
    if (is_bytes && digits != 2)
        return 0; /* cel-spec: \u and \U are not allowed in bytes literals */
    if (n < 2 + digits)
        return 0;
    for (i = 2; i < 2 + digits; i++) {
        if (!is_xdigit((unsigned char)s[i]))
            return 0;
        v = v * 16 + (uint32_t)hex_val((unsigned char)s[i]);
    }
    if (digits == 2) {
        i = 4;
        goto emit_byte_len;
    }
    if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *olen = put_utf8(o, v);
    return 2 + digits;
emit_byte:
    i = 4;
emit_byte_len:
    /* In bytes a \x or octal escape is one raw byte; in strings a code point. */
    if (is_bytes) {
        o[0] = (char)v;
        *olen = 1;
    } else {
        *olen = put_utf8(o, v);
    }
    return i;
}

int cel__unescape(struct cel__arena *a, const char *tok, size_t n, int is_bytes, char **out,
                  size_t *outlen, size_t *bad_off)
{
    size_t i = 0, q, end, o = 0;
    int raw = 0;
    char *buf;

    while (i < n && tok[i] != '\'' && tok[i] != '"') {
        if (tok[i] == 'r' || tok[i] == 'R')
            raw = 1;
        i++;
    }
    if (i >= n)
        return -1;
    q = (i + 2 < n && tok[i + 1] == tok[i] && tok[i + 2] == tok[i] && n - i >= 6) ? 3 : 1;
    i += q;
    end = n - q;
    /* Decoded text is never longer than the source text (the longest
     * expansion, \x80 → two UTF-8 bytes, uses four source bytes). */
    buf = cel__alloc(a, n + 1);
    if (!buf)
        return -2;
    while (i < end) {
        if (tok[i] == '\\' && !raw) {
            size_t olen = 0, used = unescape_one(tok + i, end - i, is_bytes, buf + o, &olen);
            if (!used) {
                *bad_off = i;
                return -1;
            }
            o += olen;
            i += used;
        } else if (tok[i] == '\r' && !raw) {
            /* cel-spec: a CR LF or lone CR inside a triple-quoted string is LF. */
            buf[o++] = '\n';
            i += (i + 1 < end && tok[i + 1] == '\n') ? 2 : 1;
        } else {
            buf[o++] = tok[i++];
        }
    }
    buf[o] = '\0';
    *out = buf;
    *outlen = o;
    return 0;
}
