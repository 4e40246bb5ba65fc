/*
 * ctl.c - the network half of sync/ctl.h: control words of off-node targets.
 */
#include "config.h"

#include <errno.h>

#include "sync/ctl.h"

#ifdef HAVE_UCX
#include "netmod/ucx/nm_ucx.h"
#endif

int rma_ctl_net_amo(rma_win_t *win, int t, size_t off, int op, unsigned size, uint64_t value,
                    uint64_t compare, uint64_t *fetched)
{
    rma_nm_tgt_t *nm = &win->targets[t].nm;

    if (nm->ops == NULL || nm->ctl_key == NULL)
        return -ENOTCONN;
    return nm->ops->amo(nm, nm->ctl_key, op, size, nm->ctl_raddr + off, value, compare, fetched);
}

void rma_ctl_progress(rma_win_t *win)
{
#ifdef HAVE_UCX
    if (win->net)
        rma_ucx_progress();
#else
    (void)win;
#endif
}
