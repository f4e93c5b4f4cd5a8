/*
 * array — array_grow (common/array.h). Stateless; any thread, on arrays
 * the caller owns.
 */
#include "common/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int array_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t ncap = *cap ? *cap : (first ? first : 1);
	void *p, *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	/* no object may be larger than PTRDIFF_MAX (glibc's malloc refuses
	 * them too; a sanitizer build would abort instead) */
	if (elem && ncap > (size_t)PTRDIFF_MAX / elem)
		return -ENOMEM;
	/* *pp is a T *: copied, not read as a void *, whatever T is. */
	memcpy(&p, pp, sizeof(p));
	np = realloc(p, elem ? ncap * elem : 1);
	if (!np)
		return -ENOMEM;
	memcpy(pp, &np, sizeof(np));
	*cap = ncap;
	return 0;
}
