/*
 * test_label_abort.c - li_abort ends every process with a non-zero status:
 * the last rank calls li_abort(3) while the others wait in a barrier that
 * only the abort can end. Listed with expect=fail; it prints a marker line
 * first so the runner can check it got that far.
 * Run: mpiexec -n 2|4 test_label_abort   (must exit non-zero)
 */
#include <stdio.h>
#include <unistd.h>

#include "rma_label.h"

int main(int argc, char **argv)
{
    int p, me;

    if (li_begin(&argc, &argv) != LI_OK)
        return 1;
    p = li_nprocs();
    me = li_pid();
    li_barrier();
    if (me == p - 1) {
        printf("abort-test: rank %d of %d calls the abort now\n", me, p);
        fflush(stdout);
        li_abort(3);
        printf("FAIL: li_abort returned\n");
        return 0;
    }
    li_barrier();                       /* never completes: the last rank aborted */
    printf("FAIL: rank %d passed a barrier the aborted rank never entered\n", me);
    li_end();
    return 0;
}
