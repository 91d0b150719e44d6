/*
 * devices.c - which published devices a class or a request accepts, as the allocator decides
 * it: every selector of the class, then every selector of the request, true.  A selector that
 * fails to compile or errors on the device accepts nothing (its own rules report that).
 */
#include "rules_int.h"

static int selectors_accept(const struct dra_selector *sel, size_t n, const struct cel_device *dev)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!sel[i].prog || cel_eval_device(sel[i].prog, dev, NULL, NULL) != CEL_TRUE)
            return 0;
    return 1;
}

int rule__class_admits(const struct dra_class *cls, const struct cel_device *dev)
{
    return selectors_accept(cls->sel, cls->nsel, dev);
}

int rule__request_admits(const struct dra_class *cls, const struct dra_request *r,
                         const struct cel_device *dev)
{
    return rule__class_admits(cls, dev) && selectors_accept(r->sel, r->nsel, dev);
}
