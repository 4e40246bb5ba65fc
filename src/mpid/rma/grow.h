/*
 * grow.h - arrays librma appends to one element at a time (error handlers, attributes, held
 * locks, peers' descriptors, mapped segments, host-assisted runs): the capacity doubled when
 * full, with no int or size_t overflow on the way.
 */
#ifndef RMA_GROW_H
#define RMA_GROW_H

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for element n of the array *arr_p (elements of elem bytes, *cap_p of them
 * allocated): when n is past the end, the array is reallocated to twice its capacity (first
 * elements when it has none), and to at least n + 1. arr_p is the address of the caller's
 * T *, read and written by memcpy, so that callers pass it with no cast. *arr_p and *cap_p
 * change only on success. 0, or -1 with errno ENOMEM: out of memory, or the array would
 * have more than INT_MAX elements or SIZE_MAX bytes. */
static inline int rma_grow(void *arr_p, int *cap_p, int n, size_t elem, int first)
{
    int cap = *cap_p;
    void *arr;

    if (n < cap)
        return 0;
    cap = cap == 0 ? first : cap > INT_MAX / 2 ? INT_MAX : 2 * cap;
    if (cap <= n && n < INT_MAX)
        cap = n + 1;
    if (cap <= n || (size_t)cap > SIZE_MAX / elem) {
        errno = ENOMEM;
        return -1;
    }
    memcpy(&arr, arr_p, sizeof(arr));
    arr = realloc(arr, (size_t)cap * elem);
    if (arr == NULL)
        return -1;
    memcpy(arr_p, &arr, sizeof(arr));
    *cap_p = cap;
    return 0;
}

#endif
