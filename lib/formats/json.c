#include "formats/json.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* cJSON_GetObjectItemCaseSensitive, but most members are passed over on their first byte
 * instead of in a call to strcmp: the webhook looks up dozens of keys per request. */
static const cJSON *member(const cJSON *o, const char *k)
{
    const cJSON *c;

    if (!cJSON_IsObject(o))
        return NULL;
    for (c = o->child; c; c = c->next)
        if (c->string && c->string[0] == k[0] && !strcmp(c->string, k))
            return c;
    return NULL;
}

static const cJSON *vpath(const cJSON *o, va_list ap)
{
    const char *k;

    while (o && (k = va_arg(ap, const char *)))
        o = member(o, k);
    return o;
}

const cJSON *dd_json_path(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return o;
}

const char *dd_json_str(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsString(o) ? o->valuestring : NULL;
}

const cJSON *dd_json_arr(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsArray(o) ? o : NULL;
}

int dd_json_true(const cJSON *o, ...)
{
    va_list ap;

    va_start(ap, o);
    o = vpath(o, ap);
    va_end(ap);
    return cJSON_IsTrue(o);
}

int dd_json_int(const cJSON *o, int64_t *out, ...)
{
    va_list ap;
    double d;

    va_start(ap, out);
    o = vpath(o, ap);
    va_end(ap);
    if (cJSON_IsString(o))
        return dd_quantity_int(o->valuestring, out);
    if (!cJSON_IsNumber(o))
        return 0;
    d = o->valuedouble;
    /* 2^63 is exact in a double; anything at or above it does not fit. */
    if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return 0;
    *out = (int64_t)d;
    return 1;
}

int dd_quantity_int(const char *s, int64_t *out)
{
    static const struct { const char *suffix; int64_t mult; } suffixes[] = {
        { "Ki", 1LL << 10 }, { "Mi", 1LL << 20 }, { "Gi", 1LL << 30 },
        { "Ti", 1LL << 40 }, { "Pi", 1LL << 50 }, { "Ei", 1LL << 60 },
        { "k", 1000LL }, { "M", 1000000LL }, { "G", 1000000000LL },
        { "T", 1000000000000LL }, { "P", 1000000000000000LL },
        { "E", 1000000000000000000LL }, { "", 1 },
    };
    char *end;
    long long v;
    size_t i;

    if (!s || !*s || *s == ' ')
        return 0;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == 'e' || *end == 'E') {
        char *e2;
        long x = strtol(end + 1, &e2, 10);
        if (*e2 || x < 0 || x > 18)
            return 0;
        while (x-- > 0) {
            if (v > LLONG_MAX / 10 || v < LLONG_MIN / 10)
                return 0;
            v *= 10;
        }
        *out = v;
        return 1;
    }
    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        if (strcmp(end, suffixes[i].suffix))
            continue;
        if (v > LLONG_MAX / suffixes[i].mult || v < LLONG_MIN / suffixes[i].mult)
            return 0;
        *out = v * suffixes[i].mult;
        return 1;
    }
    return 0;
}

/* ---- Packed trees: a cached object in one allocation ---- */

/* A key or string of o's that o does not share (cJSON's flags: shared ones stay so). */
static const char *own_key(const cJSON *o)
{
    return o->string && !(o->type & cJSON_StringIsConst) ? o->string : NULL;
}

static const char *own_value(const cJSON *o)
{
    return o->valuestring && !(o->type & cJSON_IsReference) ? o->valuestring : NULL;
}

/* o's children, unless it shares them (dd_json_share; a string's flag is about its text, and
 * a string has no children). */
static const cJSON *own_children(const cJSON *o)
{
    return o->type & cJSON_IsReference ? NULL : o->child;
}

/* Members marked by dd_json_tail: a node that starts a run of last members many objects
 * have alike.  cJSON reads its types as type & 0xFF and its flags as single bits, so one
 * more bit is left alone by every cJSON call. */
#define TAIL_MARK (1 << 14)
#define TAILS_MAX 64 /* tails held once per packed tree; more keep their own */

/* The runs of last members a packed tree takes from the held ones: after node `after` (of
 * the tree being packed) comes `run` instead of the tree's own. */
struct tails {
    size_t n;
    struct {
        const cJSON *after, *run;
    } v[TAILS_MAX];
};

static const cJSON *share_list(const cJSON *list);

/* The held run that follows `after` in the tree being packed, or NULL. */
static const cJSON *tail_after(const struct tails *t, const cJSON *after)
{
    size_t i;

    for (i = 0; t && i < t->n; i++)
        if (t->v[i].after == after)
            return t->v[i].run;
    return NULL;
}

/* Adds the nodes and string bytes of o and its siblings (and their children) to *nodes and
 * *bytes; recursion follows nesting only, which the parsers cap.  With t, a marked sibling
 * that is not the first ends the walk when the run from it is held (share_list): t then
 * says so for pack_copy, which must make the same choice. */
static void pack_size(const cJSON *o, size_t *nodes, size_t *bytes, struct tails *t)
{
    const cJSON *prev = NULL, *run;

    for (; o; prev = o, o = o->next) {
        if (t && prev && (o->type & TAIL_MARK) && t->n < TAILS_MAX && (run = share_list(o))) {
            t->v[t->n].after = prev;
            t->v[t->n++].run = run;
            return;
        }
        ++*nodes;
        if (own_key(o))
            *bytes += strlen(o->string) + 1;
        if (own_value(o))
            *bytes += strlen(o->valuestring) + 1;
        pack_size(own_children(o), nodes, bytes, t);
    }
}

static char *pack_str(const char *s, char **pool)
{
    size_t l = strlen(s) + 1;
    char *d = memcpy(*pool, s, l);

    *pool += l;
    return d;
}

/* Copies o and its siblings into *node (in order) and their strings into *pool; returns
 * the first copy, whose prev is the last of its own (cJSON's list invariant; a held run
 * after it is read through next only). */
static cJSON *pack_copy(const cJSON *o, cJSON **node, char **pool, const struct tails *t)
{
    cJSON *first = NULL, *last = NULL, *c;
    const cJSON *run = NULL;

    for (; o && !run; o = o->next) {
        c = (*node)++;
        *c = *o;
        c->type &= ~TAIL_MARK;
        c->prev = last;
        c->next = NULL;
        if (last)
            last->next = c;
        else
            first = c;
        last = c;
        /* The flags say "not mine to free": none of these nodes frees anything alone. */
        if (own_key(o)) {
            c->string = pack_str(o->string, pool);
            c->type |= cJSON_StringIsConst;
        }
        if (own_value(o)) {
            c->valuestring = pack_str(o->valuestring, pool);
            c->type |= cJSON_IsReference;
        }
        if (own_children(o))
            c->child = pack_copy(o->child, node, pool, t);
        if ((run = tail_after(t, o)))
            c->next = (cJSON *)run;
    }
    if (first)
        first->prev = last;
    return first;
}

cJSON *dd_json_pack(cJSON *obj)
{
    cJSON *next, *prev, *block, *node;
    size_t nodes = 0, bytes = 0;
    struct tails t = { 0 };
    char *pool;

    if (!obj)
        return NULL;
    next = obj->next;
    prev = obj->prev;
    obj->next = obj->prev = NULL;
    pack_size(obj, &nodes, &bytes, &t);
    if (nodes > (SIZE_MAX - bytes) / sizeof(cJSON) ||
        !(block = malloc(nodes * sizeof(cJSON) + bytes))) {
        obj->next = next;
        obj->prev = prev;
        return obj;
    }
    node = block;
    pool = (char *)(block + nodes);
    pack_copy(obj, &node, &pool, &t);
    block->prev = NULL;
    /* cJSON_Delete(block) then frees the block alone: the root is its first node. */
    block->type |= cJSON_IsReference;
    cJSON_Delete(obj);
    return block;
}

void dd_json_tail(cJSON *obj, const char *const *names)
{
    cJSON *it;
    size_t i;

    if (!cJSON_IsObject(obj) || !own_children(obj))
        return;
    for (i = 0; names[i]; i++)
        if ((it = cJSON_GetObjectItemCaseSensitive(obj, names[i]))) {
            cJSON_DetachItemViaPointer(obj, it);
            it->type |= TAIL_MARK;
            cJSON_AddItemToArray(obj, it); /* an object's member keeps its key */
        }
}

/* ---- Shared lists: the children many cached objects have alike, held once ---- */

#define SHARE_MAX 32768       /* lists held, for the life of the process */
#define SHARE_BYTES_MAX 4096  /* a bigger list is not shared: objects alike are small */
#define SHARE_TOTAL_MAX ((size_t)8 << 20) /* bytes held in all */
#define SEEN_MAX 65536        /* hashes of lists seen once, direct-mapped (512 KiB) */

static pthread_mutex_t share_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uint64_t h; const cJSON *list; } share_tab[2 * SHARE_MAX];
static size_t nshared, share_bytes;
static uint64_t share_seen[SEEN_MAX];

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    while (n--)
        h = (h ^ *b++) * 1099511628211ULL;
    return h;
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
    return s ? fnv(h, s, strlen(s) + 1) : fnv(h, "\xff", 1);
}

/* What list_equal compares, hashed: the members in order, with keys, types and values (an
 * integer's digits are in valuestring: lib/formats/json's reader). */
static uint64_t list_hash(const cJSON *o, uint64_t h)
{
    for (; o; o = o->next) {
        int t = o->type & 0xFF;
        h = fnv(h, &t, sizeof(t));
        h = fnv_str(fnv_str(h, o->string), o->valuestring);
        h = fnv(fnv(h, &o->valuedouble, sizeof(o->valuedouble)), &o->valueint, sizeof(int));
        h = fnv(list_hash(o->child, fnv(h, "{", 1)), "}", 1);
    }
    return h;
}

static int str_same(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Stricter than cJSON_Compare: members in the same order (readers iterate them). */
static int list_equal(const cJSON *a, const cJSON *b)
{
    for (; a && b; a = a->next, b = b->next)
        if ((a->type & 0xFF) != (b->type & 0xFF) || !str_same(a->string, b->string) ||
            !str_same(a->valuestring, b->valuestring) ||
            memcmp(&a->valuedouble, &b->valuedouble, sizeof(a->valuedouble)) ||
            a->valueint != b->valueint || !list_equal(a->child, b->child))
            return 0;
    return !a && !b;
}

/* The run of nodes held once that equals list (list and its siblings, with their
 * children), found or made (on list's second sighting); NULL when list keeps its own: seen
 * once, too big, or the table full.  Nothing in list is changed. */
static const cJSON *share_list(const cJSON *list)
{
    size_t nodes = 0, bytes = 0, slot, mask = 2 * SHARE_MAX - 1;
    const cJSON *held = NULL;
    cJSON *block, *node;
    char *pool;
    uint64_t h;

    pack_size(list, &nodes, &bytes, NULL);
    if (nodes * sizeof(cJSON) + bytes > SHARE_BYTES_MAX)
        return NULL;
    h = list_hash(list, 1469598103934665603ULL);
    pthread_mutex_lock(&share_mu);
    for (slot = h & mask; share_tab[slot].list && !held; slot = (slot + 1) & mask)
        if (share_tab[slot].h == h && list_equal(share_tab[slot].list, list))
            held = share_tab[slot].list;
    /* Held from the second sighting: a list of one object's own (a claim's name) would
     * fill the table with lists no other object has. */
    if (!held && nshared < SHARE_MAX && share_seen[h % SEEN_MAX] == h &&
        share_bytes + nodes * sizeof(cJSON) + bytes <= SHARE_TOTAL_MAX &&
        (block = malloc(nodes * sizeof(cJSON) + bytes))) {
        node = block;
        pool = (char *)(block + nodes);
        held = pack_copy(list, &node, &pool, NULL);
        share_tab[slot].h = h;
        share_tab[slot].list = held;
        nshared++;
        share_bytes += nodes * sizeof(cJSON) + bytes;
    } else if (!held) {
        share_seen[h % SEEN_MAX] = h;
    }
    pthread_mutex_unlock(&share_mu);
    return held;
}

void dd_json_share(cJSON *arr)
{
    const cJSON *list;

    if (!(cJSON_IsArray(arr) || cJSON_IsObject(arr)) || !own_children(arr) || !arr->child ||
        !(list = share_list(arr->child)))
        return;
    cJSON_Delete(arr->child);
    arr->child = (cJSON *)list;
    arr->type |= cJSON_IsReference;
}

/* ---- Arena trees: one bump allocator per thread, no malloc/free per request ---- */

#define CHUNK_MIN ((size_t)64 * 1024)

struct chunk {
    struct chunk *prev;
    size_t size; /* usable bytes after this header */
};
_Static_assert(sizeof(struct chunk) % 16 == 0, "allocations stay 16-byte aligned");

struct dd_json_arena {
    struct chunk *first, *cur;
    unsigned char *ptr, *end;
    size_t used, max; /* bytes handed out since the last reset, and their cap */
    enum dd_rc why;   /* why the last allocation failed: DD_ETOOBIG or DD_ENOMEM */
};

struct mark {
    struct chunk *cur;
    unsigned char *ptr;
    size_t used;
};

static struct chunk *chunk_new(struct chunk *prev, size_t size)
{
    struct chunk *c = aligned_alloc(16, sizeof(*c) + size);

    if (c) {
        c->prev = prev;
        c->size = size;
    }
    return c;
}

static void use_chunk(struct dd_json_arena *a, struct chunk *c)
{
    a->cur = c;
    a->ptr = (unsigned char *)(c + 1);
    a->end = a->ptr + c->size;
}

static struct mark arena_mark(const struct dd_json_arena *a)
{
    return (struct mark){ a->cur, a->ptr, a->used };
}

/* Drops everything allocated since m; chunks added since are freed, not kept, so that the
 * memory of a huge (or skipped) value goes back at once. */
static void arena_rewind(struct dd_json_arena *a, struct mark m)
{
    while (a->cur != m.cur) {
        struct chunk *c = a->cur;
        use_chunk(a, c->prev);
        free(c);
    }
    a->ptr = m.ptr;
    a->used = m.used;
}

/* A new chunk for n bytes: doubling, but never past what the cap still allows, so memory
 * stays near max. */
static __attribute__((noinline)) int arena_grow(struct dd_json_arena *a, size_t n)
{
    size_t room = (a->max - a->used) & ~(size_t)15, size = a->cur->size * 2;
    struct chunk *c;

    if (size > room)
        size = room;
    if (!(c = chunk_new(a->cur, size < n ? n : size))) {
        a->why = DD_ENOMEM;
        return 0;
    }
    use_chunk(a, c);
    return 1;
}

static inline void *arena_alloc(struct dd_json_arena *a, size_t n)
{
    void *p;

    n = (n + 15) & ~(size_t)15;
    if (n > a->max - a->used) {
        a->why = DD_ETOOBIG;
        return NULL;
    }
    if (n > (size_t)(a->end - a->ptr) && !arena_grow(a, n))
        return NULL;
    p = a->ptr;
    a->ptr += n;
    a->used += n;
    return p;
}

static cJSON *arena_node(struct dd_json_arena *a)
{
    cJSON *n = arena_alloc(a, sizeof(*n));

    if (n)
        memset(n, 0, sizeof(*n));
    return n;
}

struct dd_json_arena *dd_json_arena_new(size_t max_bytes)
{
    struct dd_json_arena *a = calloc(1, sizeof(*a));

    if (!a || !(a->first = chunk_new(NULL, CHUNK_MIN))) {
        free(a);
        return NULL;
    }
    use_chunk(a, a->first);
    a->max = max_bytes;
    return a;
}

void dd_json_arena_reset(struct dd_json_arena *a)
{
    arena_rewind(a, (struct mark){ a->first, (unsigned char *)(a->first + 1), 0 });
}

void dd_json_arena_free(struct dd_json_arena *a)
{
    if (!a)
        return;
    dd_json_arena_reset(a);
    free(a->first);
    free(a);
}

/* Keeps child->prev at the last element and the last next at NULL, as cJSON appends. */
static void append(cJSON *parent, cJSON *n)
{
    cJSON *first = parent->child;

    if (!first) {
        parent->child = n;
        n->prev = n;
        return;
    }
    n->prev = first->prev;
    first->prev->next = n;
    first->prev = n;
}

static cJSON *add(struct dd_json_arena *a, cJSON *obj, const char *key, const char *value, int type)
{
    struct mark m = arena_mark(a);
    size_t kl = key ? strlen(key) + 1 : 0, vl = value ? strlen(value) + 1 : 0;
    cJSON *n;

    if (!cJSON_IsObject(obj) || !key || (type == cJSON_String && !value))
        return NULL;
    if (!(n = arena_node(a)) || !(n->string = arena_alloc(a, kl)) ||
        (value && !(n->valuestring = arena_alloc(a, vl)))) {
        arena_rewind(a, m);
        return NULL;
    }
    memcpy(n->string, key, kl);
    if (value)
        memcpy(n->valuestring, value, vl);
    n->type = type;
    append(obj, n);
    return n;
}

cJSON *dd_json_arena_add_string(struct dd_json_arena *a, cJSON *obj, const char *key,
                                const char *value)
{
    return add(a, obj, key, value, cJSON_String);
}

cJSON *dd_json_arena_add_object(struct dd_json_arena *a, cJSON *obj, const char *key)
{
    return add(a, obj, key, NULL, cJSON_Object);
}

/* The parser.  Helpers return the byte after what they read, or NULL with ps->at set to the
 * first byte that cannot continue a valid text (NULL: the arena refused, see a->why). */
struct parser {
    struct dd_json_arena *a;
    const unsigned char *end, *at;
};

static const unsigned char *bad(struct parser *ps, const unsigned char *at)
{
    ps->at = at;
    return NULL;
}

static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end)
{
    /* Compact JSON (what the API server sends) has none: one comparison says so. */
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* Bytes of w that are a quote, a backslash or (ctl) a control character: their high bits.
 * The lowest one is exact (a borrow only runs upwards from a flagged byte). */
static inline uint64_t special(uint64_t w, int ctl)
{
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t m = ((q - ones) & ~q) | ((b - ones) & ~b) | (ctl ? (w - ones * 0x20) & ~w : 0);

    return m & ones << 7;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FIRST(m) ((size_t)__builtin_ctzll(m) >> 3)
#else
#define FIRST(m) ((size_t)0) /* not exact there: the byte loop finds it */
#endif

#ifdef __SSE2__
/* Bit i set: byte i of v is a quote, a backslash or (ctl) a control character.  Sixteen
 * bytes in six instructions, against eight in about fifteen for special(). */
static inline unsigned special16(__m128i v, int ctl)
{
    __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')));

    if (ctl) /* v <= 0x1F, unsigned */
        m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8(0x1F)),
                                           _mm_set1_epi8(0x1F)));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first quote or backslash in [p, end), eight bytes at a time. */
static const unsigned char *scan(const unsigned char *p, const unsigned char *end)
{
    uint64_t w, m;

#ifdef __SSE2__
    for (; end - p >= 16; p += 16) {
        unsigned v = special16(_mm_loadu_si128((const __m128i *)(const void *)p), 0);
        if (v)
            return p + __builtin_ctz(v);
    }
#endif
    for (; end - p >= 8; p += 8) {
        memcpy(&w, p, 8);
        if ((m = special(w, 0))) {
            p += FIRST(m);
            break;
        }
    }
    while (p < end && *p != '"' && *p != '\\')
        p++;
    return p;
}

static long hex4(struct parser *ps, const unsigned char *p, const unsigned char *lim)
{
    long v = 0;
    int i, c;

    for (i = 0; i < 4; i++, p++) {
        c = p < lim ? *p : -1;
        if (c >= '0' && c <= '9')
            v = v << 4 | (c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') /* folding 0x13 too would make '3' */
            v = v << 4 | ((c | 0x20) - 'a' + 10);
        else
            return bad(ps, p), -1;
    }
    return v;
}

/* \uXXXX (or a surrogate pair) at p, below lim, as UTF-8 at *o.  A wrong escape is reported
 * at its backslash, a missing low surrogate where it should begin.  U+0000 ends the C string
 * there, as it does in cJSON. */
static const unsigned char *unicode(struct parser *ps, const unsigned char *p,
                                    const unsigned char *lim, unsigned char **o)
{
    long cp = hex4(ps, p + 2, lim), lo;
    unsigned char *out = *o;

    if (cp < 0)
        return NULL;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return bad(ps, p);
    p += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p == lim || p[0] != '\\')
            return bad(ps, p);
        if (p + 1 == lim || p[1] != 'u')
            return bad(ps, p + 1);
        if ((lo = hex4(ps, p + 2, lim)) < 0)
            return NULL;
        if (lo < 0xDC00 || lo > 0xDFFF)
            return bad(ps, p);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        p += 6;
    }
    if (cp < 0x80) {
        *out++ = (unsigned char)cp;
    } else {
        int k = cp < 0x800 ? 1 : cp < 0x10000 ? 2 : 3; /* continuation bytes */
        *out++ = (unsigned char)((0xFF << (7 - k) & 0xFF) | cp >> 6 * k);
        while (k--)
            *out++ = (unsigned char)(0x80 | (cp >> 6 * k & 0x3F));
    }
    *o = out;
    return p;
}

/* The string after the opening quote at p, read below lim, decoded into s (which has room for
 * lim - p + 1 bytes: text never grows when decoded); *o at its terminating NUL. */
static inline __attribute__((always_inline)) const unsigned char *
decode(struct parser *ps, const unsigned char *p, const unsigned char *lim, unsigned char *s,
       unsigned char **o)
{
    uint64_t w, m;

    for (;;) {
        /* Copy and scan in one go, whole words: the output never grows faster than the
         * input is read, so a word stored while lim - p >= 8 (or 16) stays inside s. */
#ifdef __SSE2__
        for (; lim - p >= 16; p += 16, s += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            unsigned k;
            _mm_storeu_si128((__m128i *)(void *)s, v);
            if ((k = special16(v, 1))) {
                p += __builtin_ctz(k);
                s += __builtin_ctz(k);
                goto special;
            }
        }
#endif
        for (; lim - p >= 8; p += 8, s += 8) {
            memcpy(&w, p, 8);
            memcpy(s, &w, 8);
            if ((m = special(w, 1))) {
                p += FIRST(m);
                s += FIRST(m);
                break;
            }
        }
        while (p < lim && *p != '"' && *p != '\\' && *p >= 0x20)
            *s++ = *p++;
#ifdef __SSE2__
    special:
#endif
        if (p == lim || *p != '\\')
            break;
        if (p + 1 == lim)
            return bad(ps, lim);
        switch (p[1]) {
        case '"': case '\\': case '/': *s++ = p[1]; break;
        case 'b': *s++ = '\b'; break;
        case 'f': *s++ = '\f'; break;
        case 'n': *s++ = '\n'; break;
        case 'r': *s++ = '\r'; break;
        case 't': *s++ = '\t'; break;
        case 'u':
            if (!(p = unicode(ps, p, lim, &s)))
                return NULL;
            continue;
        default:
            return bad(ps, p + 1);
        }
        p += 2;
    }
    if (p == lim || *p != '"')
        return bad(ps, p);
    *s = '\0';
    *o = s;
    return p + 1;
}

/* A string that runs past the current chunk's end: measured first (skipping escapes), then
 * decoded into memory of its size. */
static __attribute__((noinline)) const unsigned char *
string_elsewhere(struct parser *ps, const unsigned char *p, char **out)
{
    const unsigned char *end = ps->end, *lim, *q;
    unsigned char *s, *o;

    for (lim = p; (lim = scan(lim, end)) < end && *lim == '\\';)
        lim += end - lim > 1 ? 2 : 1;
    lim += lim < end; /* the closing quote */
    if (!(s = arena_alloc(ps->a, (size_t)(lim - p) + 1)) || !(q = decode(ps, p, lim, s, &o)))
        return NULL;
    *out = (char *)s;
    return q;
}

/* The string after the opening quote at p, into *out: decoded straight into the free part
 * of the current chunk, in one pass.  Inlined, as is decode(): it runs for every key and
 * string value, and most are a few bytes long. */
static inline __attribute__((always_inline)) const unsigned char *
parse_string(struct parser *ps, const unsigned char *p, char **out)
{
    struct dd_json_arena *a = ps->a;
    const unsigned char *end = ps->end, *lim, *q;
    size_t room = (size_t)(a->end - a->ptr), n;
    unsigned char *s = a->ptr, *o;

    if (room > 16) {
        lim = (size_t)(end - p) < room ? end : p + room - 1;
        if ((q = decode(ps, p, lim, s, &o))) {
            n = ((size_t)(o - s) + 16) & ~(size_t)15;
            if (n > a->max - a->used) {
                a->why = DD_ETOOBIG;
                return NULL;
            }
            a->ptr += n;
            a->used += n;
            *out = (char *)s;
            return q;
        }
        if (ps->at < lim || lim == end)
            return NULL;
        ps->at = NULL;
    }
    return string_elsewhere(ps, p, out);
}

#define IS_DIGIT(c) ((unsigned)((c) - '0') < 10)

static const unsigned char *parse_number(struct parser *ps, const unsigned char *p, cJSON *n)
{
    const unsigned char *s = p, *end = ps->end;
    uint64_t v = 0;
    int digits = 0, whole = 1;
    double d;

    if (*p == '-')
        p++;
    if (p == end || !IS_DIGIT(*p))
        return bad(ps, p);
    if (*p == '0')
        p++, digits = 1;
    else
        for (; p < end && IS_DIGIT(*p); p++, digits++)
            v = v * 10 + (uint64_t)(*p - '0');
    if (p < end && *p == '.') {
        whole = 0;
        if (++p == end || !IS_DIGIT(*p))
            return bad(ps, p);
        while (p < end && IS_DIGIT(*p))
            p++;
    }
    if (p < end && (*p | 0x20) == 'e') {
        whole = 0;
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !IS_DIGIT(*p))
            return bad(ps, p);
        while (p < end && IS_DIGIT(*p))
            p++;
    }
    if (whole && digits <= 15) {
        /* Exact in a double, and what strtod would give (including -0). */
        d = *s == '-' ? -(double)v : (double)v;
    } else {
        /* strtod reads the same C-locale text cJSON hands it (dra-doctor never calls
         * setlocale); a long number borrows arena room instead of being cut. */
        char small[64], *t = small;
        size_t len = (size_t)(p - s);
        if (len >= sizeof(small) && !(t = arena_alloc(ps->a, len + 1)))
            return NULL;
        memcpy(t, s, len);
        t[len] = '\0';
        d = strtod(t, NULL);
    }
    n->valuedouble = d;
    n->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    return p;
}

static const unsigned char *literal(struct parser *ps, const unsigned char *p, const char *word)
{
    for (; *word; word++, p++)
        if (p == ps->end || *p != (unsigned char)*word)
            return bad(ps, p);
    return p;
}

/* Unlinks the last member of obj: the one skip_key named. */
static void drop_last(cJSON *obj)
{
    cJSON *last = obj->child->prev;

    if (last == obj->child) {
        obj->child = NULL;
    } else {
        last->prev->next = NULL;
        obj->child->prev = last->prev;
    }
}

static void position(const unsigned char *buf, const unsigned char *at, int *line, int *col)
{
    const unsigned char *p = buf, *nl;
    size_t l = 1;

    while ((nl = memchr(p, '\n', (size_t)(at - p)))) {
        l++;
        p = nl + 1;
    }
    *line = l > INT_MAX ? INT_MAX : (int)l;
    *col = (size_t)(at - p) >= INT_MAX ? INT_MAX : (int)(at - p) + 1;
}

/*
 * One pass without recursion: an open container keeps its parent in valuestring (unused by
 * arrays and objects) until it closes, so the depth limit costs no stack.  A member named
 * skip_key is parsed like any other, then unlinked and the memory of its value rewound.
 * cJSON also takes any byte up to 0x20 between tokens, raw control characters in strings,
 * a leading byte order mark, \u with non-hex digits (as U+0000) and what strtod reads as a
 * number ("01", "1.", "-.5"), and it refuses numbers longer than 63 bytes;
 * tests/fuzz/fuzz_json.c checks that these are the only differences.
 */
cJSON *dd_json_arena_parse(struct dd_json_arena *a, const char *buf, size_t len, int max_depth,
                           const char *skip_key, struct dd_err *err)
{
    const unsigned char *start = (const unsigned char *)(buf ? buf : ""), *p = start;
    struct parser ps = { a, start + (buf ? len : 0), NULL };
    struct mark begin = arena_mark(a), skip_mark = begin;
    cJSON *root = NULL, *cur = NULL, *skip_in = NULL, *n;
    char *key = NULL;
    const char *extra = "";
    int depth = 0, line, col;

value:
    p = skip_ws(p, ps.end);
    if (p == ps.end)
        goto stop;
    if (!(n = arena_node(a)))
        goto fail;
    n->string = key;
    key = NULL;
    if (cur)
        append(cur, n);
    else
        root = n;
    switch (*p) {
    case '{':
    case '[':
        if (++depth > max_depth) {
            arena_rewind(a, begin);
            dd_failf(err, DD_ETOOBIG, "JSON nests deeper than %d levels", max_depth);
            return NULL;
        }
        n->type = *p == '{' ? cJSON_Object : cJSON_Array;
        n->valuestring = (char *)cur;
        cur = n;
        p = skip_ws(p + 1, ps.end);
        if (p < ps.end && *p == (n->type == cJSON_Object ? '}' : ']')) {
            p++;
            goto close;
        }
        if (n->type == cJSON_Object)
            goto key;
        goto value;
    case '"':
        n->type = cJSON_String;
        p = parse_string(&ps, p + 1, &n->valuestring);
        break;
    case 't':
        n->type = cJSON_True;
        n->valueint = 1; /* as cJSON sets it */
        p = literal(&ps, p, "true");
        break;
    case 'f':
        n->type = cJSON_False;
        p = literal(&ps, p, "false");
        break;
    case 'n':
        n->type = cJSON_NULL;
        p = literal(&ps, p, "null");
        break;
    default:
        n->type = cJSON_Number;
        p = parse_number(&ps, p, n);
        break;
    }
    if (!p)
        goto fail;
after:
    if (!cur)
        goto done;
    if (cur == skip_in) {
        drop_last(cur);
        arena_rewind(a, skip_mark);
        skip_in = NULL;
    }
    p = skip_ws(p, ps.end);
    if (p < ps.end && *p == ',') {
        p++;
        if (cur->type == cJSON_Object)
            goto key;
        goto value;
    }
    if (p == ps.end || *p != (cur->type == cJSON_Object ? '}' : ']'))
        goto stop;
    p++;
close:
    n = cur;
    cur = (cJSON *)n->valuestring;
    n->valuestring = NULL;
    depth--;
    goto after;
key:
    p = skip_ws(p, ps.end);
    if (p == ps.end || *p != '"')
        goto stop;
    if (!(p = parse_string(&ps, p + 1, &key)))
        goto fail;
    p = skip_ws(p, ps.end);
    if (p == ps.end || *p != ':')
        goto stop;
    p++;
    if (skip_key && !skip_in && *key == *skip_key && !strcmp(key, skip_key)) {
        skip_in = cur;
        skip_mark = arena_mark(a);
    }
    goto value;
done:
    p = skip_ws(p, ps.end);
    if (p == ps.end)
        return root;
    extra = ": unexpected data after the value";
stop:
    ps.at = p;
fail:
    arena_rewind(a, begin);
    if (!ps.at) {
        if (a->why == DD_ENOMEM)
            dd_failf(err, DD_ENOMEM, "out of memory parsing JSON");
        else
            dd_failf(err, DD_ETOOBIG, "JSON tree would take more than %zu bytes", a->max);
        return NULL;
    }
    position(start, ps.at, &line, &col);
    dd_failf_at(err, DD_EPARSE, line, col, "malformed JSON at line %d, column %d%s", line, col,
                extra);
    return NULL;
}
