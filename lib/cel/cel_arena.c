/*
 * cel_arena.c - bump allocator used for a program's AST and for the scratch
 * values of one evaluation.  Freed as a whole, never piecemeal.
 */
#include <stdlib.h>
#include <string.h>

#include "cel_int.h"

struct cel__chunk {
    struct cel__chunk *next;
    size_t size, off;
    _Alignas(16) unsigned char data[];
};

/* 16 KiB keeps a typical selector (a few hundred nodes) in one or two chunks. */
#define CHUNK_MIN (16u * 1024u)

void *cel__alloc(struct cel__arena *a, size_t n)
{
    struct cel__chunk *c = a->head;
    size_t need = (n + 15u) & ~(size_t)15u;

    if (need < n)
        return NULL;
    if (a->cap && (need > a->cap || a->used > a->cap - need))
        return NULL;
    if (!c || c->size - c->off < need) {
        size_t size = need > CHUNK_MIN ? need : CHUNK_MIN;

        if (size > SIZE_MAX - sizeof(*c))
            return NULL;
        c = malloc(sizeof(*c) + size);
        if (!c)
            return NULL;
        c->size = size;
        c->off = 0;
        /* A large one-off allocation goes behind the current chunk so the
         * remainder of that chunk stays usable. */
        if (a->head && need > CHUNK_MIN) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->off;
    c->off += need;
    a->used += need;
    memset(p, 0, n);
    return p;
}

char *cel__strndup(struct cel__arena *a, const char *s, size_t n)
{
    char *p;

    if (n == SIZE_MAX)
        return NULL;
    p = cel__alloc(a, n + 1);
    if (!p)
        return NULL;
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void cel__arena_free(struct cel__arena *a)
{
    struct cel__chunk *c = a->head;

    while (c) {
        struct cel__chunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used = 0;
}
