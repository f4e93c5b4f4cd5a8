/*
 * array — growing a heap array by doubling, the one place that does the
 * realloc arithmetic (and its overflow check) for the whole tree.
 * Stateless; the caller owns the array and its locking.
 */
#ifndef TWINFS_ARRAY_H
#define TWINFS_ARRAY_H

#include <stddef.h>

/*
 * Makes room for at least NEED elements of ELEM bytes in the array whose
 * pointer is at PP (a `T **`) and whose capacity, in elements, is *CAP:
 * the capacity doubles (starting from FIRST when it is 0) until it holds
 * NEED. The new elements are not initialised. Returns 0, or -ENOMEM when
 * memory or size_t runs out, with *PP and *CAP unchanged.
 */
int array_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first);

/* array_grow for an array P of any element type, its capacity CAP. */
#define ARRAY_GROW(p, cap, need, first) \
	array_grow(&(p), &(cap), (need), sizeof(*(p)), (first))

#endif
