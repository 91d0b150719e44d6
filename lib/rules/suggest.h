/*
 * suggest.h - "did you mean": which known name a misspelled one most likely meant.
 *
 * A suggestion is only offered for a plausible typo, because it is also a fix: offering one
 * real name for another (qat.intel.com for gpu.intel.com) breaks what works.  Callers keep
 * real names out of the question (lib/model/drivers.h knows them); this module only measures.
 */
#ifndef DD_SUGGEST_H
#define DD_SUGGEST_H

#include <stddef.h>

/*
 * Optimal string alignment distance between a and b (an insertion, deletion, substitution
 * or swap of two neighbours costs one edit), or any value above max once it is sure to
 * exceed max.  Strings longer than 253 bytes are never close: (size_t)-1.
 */
size_t sug_distance(const char *a, const char *b, size_t max);

/* The most edits a misspelling of a name of length len plausibly has: one up to 11
 * characters ("gpu.exmaple" is one swap away), two from 12 on. */
size_t sug_budget(size_t len);

/* The closest of names[0..n) to s within sug_budget(strlen(s)), or NULL; the first of
 * equals wins; a name equal to s is no suggestion. */
const char *sug_nearest(const char *s, const char *const *names, size_t n);

#endif
