// cel_re2.cc - the one C++ seam: RE2, the regular expression engine CEL
// specifies (cel-go uses Go's regexp, which implements RE2's syntax and
// leftmost-first semantics).  Everything crosses as C types; no exception
// escapes (RE2 reports errors by value).  A compiled pattern is kept per
// thread for the pattern last used, so a selector evaluated over many devices
// compiles its pattern once per thread.
#include <re2/re2.h>

#include <cstring>
#include <memory>
#include <string>

extern "C" {
int cel__re2_find(const char *pat, size_t pn, const char *s, size_t sn, size_t from, size_t *mo,
                  size_t *ml, const char **err);
int cel__re2_valid(const char *pat, size_t pn, const char **err);
}

namespace {

struct Cached {
    std::string pattern;
    std::unique_ptr<RE2> re;
    std::string error;
};

thread_local Cached cache;

const RE2 *compiled(const char *pat, size_t pn, const char **err)
{
    if (!cache.re || cache.pattern.size() != pn || std::memcmp(cache.pattern.data(), pat, pn) != 0) {
        RE2::Options opt;
        opt.set_log_errors(false);
        opt.set_encoding(RE2::Options::EncodingUTF8);
        cache.pattern.assign(pat, pn);
        cache.re.reset(new RE2(re2::StringPiece(pat, pn), opt));
        cache.error = cache.re->ok() ? "" : "error parsing regexp: " + cache.re->error();
    }
    if (!cache.re->ok()) {
        *err = cache.error.c_str();
        return nullptr;
    }
    return cache.re.get();
}

} // namespace

// 1 and the match at s[*mo, *mo + *ml) when pat matches s at or after byte from,
// 0 when it does not, -1 with *err (valid until the next call on this thread) when
// pat is not a valid RE2 pattern.
int cel__re2_find(const char *pat, size_t pn, const char *s, size_t sn, size_t from, size_t *mo,
                  size_t *ml, const char **err)
{
    const RE2 *re = compiled(pat, pn, err);
    re2::StringPiece text(s, sn), m;

    if (!re)
        return -1;
    if (from > sn)
        return 0;
    if (!re->Match(text, from, sn, RE2::UNANCHORED, &m, 1))
        return 0;
    *mo = static_cast<size_t>(m.data() - s);
    *ml = m.size();
    return 1;
}

int cel__re2_valid(const char *pat, size_t pn, const char **err)
{
    return compiled(pat, pn, err) ? 0 : -1;
}
