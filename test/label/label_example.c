/*
 * label_example.c - the example program of doc/labeled-windows.md: a ring
 * shift with the single-window form and a total exchange with the labeled
 * form. Build: mpicc -I$SRC/include label_example.c -L$BUILD/.libs -lrmalabel
 * Run: mpiexec -n 4 ./label_example
 */
#include <stdio.h>

#include "rma_label.h"

int main(int argc, char **argv)
{
    int ring[2] = { -1, -1 };       /* receives the left neighbour's pid, twice */
    int all[64];                    /* receives one int from every process */
    int p, me, right, mine, bad = 0;

    if (li_begin(&argc, &argv) != LI_OK)
        return 1;
    p = li_nprocs();
    me = li_pid();
    right = (me + 1) % p;
    mine = me;
    if (p > 64)
        li_abort(1);

    /* single-window form: one sync completes every transfer */
    li_register(ring, sizeof(ring));        /* 1. register (local) */
    li_init();                              /* 2. open the epoch */
    li_commit();                            /* 3. registration takes effect */
    li_put(right, &mine, ring, 0, sizeof(int));             /* 4. put to ring[0] */
    li_put(right, &mine, &ring[1], 0, sizeof(int));         /*    any inner address */
    li_sync();                              /* 5. the puts are complete here */
    li_barrier();                           /* 6. */
    li_deregister(ring);                    /* 7. */
    bad |= ring[0] != (me + p - 1) % p || ring[1] != ring[0];

    /* labeled form: the area owns its own window, synced on its own */
    int rc = lio_register(all, sizeof(int) * (size_t)p);
    if (rc == LI_OK)
        rc = lio_commit();
    if (rc == LI_OK)
        rc = lio_init(all);
    for (int q = 0; q < p && rc == LI_OK; q++)
        rc = lio_put(q, &mine, all, sizeof(int) * (size_t)me, sizeof(int));
    if (rc == LI_OK)
        rc = lio_sync(all);
    if (rc != LI_OK) {
        fprintf(stderr, "rank %d: %s\n", me, li_errstr(rc));
        li_abort(1);
    }
    for (int q = 0; q < p; q++)
        bad |= all[q] != q;
    lio_deregister(all);

    /* errors are codes, and nothing is written: the area is gone */
    rc = lio_put(right, &mine, all, 0, sizeof(int));
    if (me == 0)
        printf("put after deregister: %s (%d)\n", li_errstr(rc), rc);
    bad |= rc != LI_ERR_NOTREG;

    printf("rank %d: ring from %d, total exchange %s\n", me, ring[0], bad ? "WRONG" : "ok");
    li_end();
    return bad;
}
