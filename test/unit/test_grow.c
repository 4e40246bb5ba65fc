/*
 * test_grow.c - rma_grow (src/mpid/rma/grow.h): capacities as the arrays that use it grow,
 * elements kept, and the overflows it refuses without touching the array.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpid/rma/grow.h"

static int failures;

static void expect(const char *name, int ok)
{
    if (!ok) {
        fprintf(stderr, "FAIL %s\n", name);
        failures++;
    }
}

int main(void)
{
    int *a = NULL, cap = 0, n;
    int ok = 1;

    /* appended one by one: 4, 8, 16, ... and every element kept */
    for (n = 0; n < 1000; n++) {
        if (rma_grow(&a, &cap, n, sizeof(*a), 4) != 0)
            break;
        a[n] = n;
        if (cap < n + 1 || (n < 4 && cap != 4) || (n >= 4 && (cap & (cap - 1)) != 0))
            ok = 0;
    }
    expect("1000 appends", n == 1000 && ok && cap == 1024);
    for (int i = 0; i < 1000; i++)
        ok &= a[i] == i;
    expect("elements kept", ok);

    /* room already there: nothing changes */
    expect("room", rma_grow(&a, &cap, 1023, sizeof(*a), 4) == 0 && cap == 1024);

    /* an index past twice the capacity: at least n + 1 */
    expect("far index", rma_grow(&a, &cap, 5000, sizeof(*a), 4) == 0 && cap == 5001);
    a[5000] = 1;
    free(a);

    /* overflows: refused, array and capacity untouched */
    {
        char c, *p = &c;
        int big = INT_MAX / 2 + 1, max = INT_MAX;

        errno = 0;
        expect("index INT_MAX", rma_grow(&p, &max, INT_MAX, 1, 4) == -1 && errno == ENOMEM &&
                                    p == &c && max == INT_MAX);
        errno = 0;
        expect("bytes past SIZE_MAX", rma_grow(&p, &big, big, SIZE_MAX / big, 4) == -1 &&
                                          errno == ENOMEM && p == &c && big == INT_MAX / 2 + 1);
        cap = 4;
        expect("element size past SIZE_MAX / 8",
               rma_grow(&p, &cap, 4, SIZE_MAX / 4, 4) == -1 && p == &c && cap == 4);
    }
    if (failures == 0)
        printf("test_grow: growth, kept elements and refused overflows as expected\n");
    return failures != 0;
}
