#include "rules/suggest.h"

#include <string.h>

size_t sug_distance(const char *a, const char *b, size_t max)
{
    size_t la = strlen(a), lb = strlen(b), i, j, low, prev_low = 0;
    size_t rows[3][254], *pp, *p, *c;

    if (la > 253 || lb > 253)
        return (size_t)-1;
    for (j = 0; j <= lb; j++)
        rows[0][j] = j;
    /* Three rows suffice: the swap looks two back.  A row is never below the smaller of the
     * previous row's minimum and the one before's plus one, so two rows over max end it. */
    for (i = 1; i <= la; i++) {
        pp = rows[(i + 1) % 3]; /* row i - 2 */
        p = rows[(i + 2) % 3];  /* row i - 1 */
        c = rows[i % 3];
        low = c[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1], best = p[j] + 1;
            if (c[j - 1] + 1 < best)
                best = c[j - 1] + 1;
            if (p[j - 1] + cost < best)
                best = p[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            if ((c[j] = best) < low)
                low = best;
        }
        if (low > max && prev_low > max)
            return max + 1;
        prev_low = low;
    }
    return rows[la % 3][lb];
}

size_t sug_budget(size_t len)
{
    return len >= 12 ? 2 : len >= 3 ? 1 : 0;
}

const char *sug_nearest(const char *s, const char *const *names, size_t n)
{
    size_t i, ls = strlen(s), best = (size_t)-1, limit = sug_budget(ls);
    const char *r = NULL;

    for (i = 0; i < n && best > 1; i++) {
        size_t ln = strlen(names[i]), floor = ln > ls ? ln - ls : ls - ln, dist;
        size_t max = best <= limit ? best - 1 : limit;
        /* The length difference is a lower bound: skip what cannot win. */
        if (floor > max || !strcmp(s, names[i]))
            continue;
        if ((dist = sug_distance(s, names[i], max)) <= max) {
            best = dist;
            r = names[i];
        }
    }
    return r;
}
