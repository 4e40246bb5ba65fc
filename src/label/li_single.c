/*
 * li_single.c - the single-window form (li_register ... li_deregister).
 *
 * All areas registered with li_register belong to one MPI window created with
 * MPI_Win_create_dynamic at the first li_commit; each area is attached to it
 * and the areas' addresses on all ranks are exchanged at commit. So one fence,
 * li_sync(), completes every transfer of a superstep, whatever areas it used.
 * Mapping: li_init = MPI_Win_fence (opens the epoch), li_commit = attach +
 * MPI_Allgather of addresses, li_put/li_get = MPI_Put/MPI_Get, li_sync =
 * MPI_Win_fence, li_barrier = MPI_Barrier, li_deregister = MPI_Win_detach.
 */
#include "li_internal.h"

#include <stdlib.h>

int li_register(void *addr, size_t len)
{
    return rma_li_register(RMA_LI_SINGLE, addr, len, "li_register");
}

static int single_fence(const char *fn)
{
    int rc = MPI_Win_fence(0, rma_li_state.swin);

    return rc == MPI_SUCCESS ? LI_OK : rma_li_mpi_error(fn, "MPI_Win_fence", rc);
}

int li_init(void)
{
    rma_li_state_t *s = &rma_li_state;
    int rc = rma_li_check_begun("li_init");

    if (rc != LI_OK)
        return rc;
    if (!s->swin_created) {
        s->s_init_pending = 1; /* takes effect at the first li_commit */
        return LI_OK;
    }
    if (s->s_epoch_open)
        return LI_OK;
    rc = single_fence("li_init");
    if (rc == LI_OK)
        s->s_epoch_open = 1;
    return rc;
}

int li_commit(void)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_pending_t *p = &s->pending[RMA_LI_SINGLE];
    MPI_Aint *mine = NULL, *all = NULL;
    rma_li_area_t *a;
    int rc = rma_li_check_begun("li_commit"), n, i, mrc, arc;

    if (rc != LI_OK)
        return rc;
    rc = rma_li_commit_check(RMA_LI_SINGLE, "li_commit");
    if (rc != LI_OK)
        return rc;
    n = p->count;
    if (!s->swin_created) {
        mrc = MPI_Win_create_dynamic(MPI_INFO_NULL, s->comm, &s->swin);
        if (mrc != MPI_SUCCESS)
            return rma_li_mpi_error("li_commit", "MPI_Win_create_dynamic", mrc);
        MPI_Win_set_errhandler(s->swin, MPI_ERRORS_RETURN);
        s->swin_created = 1;
    }
    if (n > 0) {
        mine = malloc((size_t)n * sizeof(*mine));
        all = malloc((size_t)n * (size_t)s->nprocs * sizeof(*all));
        for (a = p->head; a != NULL && mine != NULL && all != NULL; a = a->next)
            a->bases = malloc((size_t)s->nprocs * sizeof(*a->bases));
        for (a = p->head; a != NULL && mine != NULL && all != NULL; a = a->next)
            if (a->bases == NULL)
                break;
        /* all ranks must take the same path below, so agree on memory first */
        mrc = rma_li_agree(mine != NULL && all != NULL && a == NULL, "li_commit");
        if (mrc != 1) {
            free(mine);
            free(all);
            for (a = p->head; a != NULL; a = a->next) {
                free(a->bases);
                a->bases = NULL;
            }
            return mrc < 0 ? mrc
                           : rma_li_error(LI_ERR_NOMEM, "li_commit",
                                          "no memory (here or on another rank)");
        }
        for (i = 0, a = p->head; a != NULL; a = a->next, i++) {
            mrc = MPI_Win_attach(s->swin, (void *)a->start, (MPI_Aint)a->len);
            if (mrc != MPI_SUCCESS)
                break;
            MPI_Get_address((void *)a->start, &mine[i]);
        }
        /* an attach may fail on one rank alone: all agree before the gather, which the
         * others would otherwise wait in for ever */
        arc = rma_li_agree(mrc == MPI_SUCCESS, "li_commit");
        if (arc == 1 && mrc == MPI_SUCCESS)
            mrc = MPI_Allgather(mine, n, MPI_AINT, all, n, MPI_AINT, s->comm);
        if (arc != 1 || mrc != MPI_SUCCESS) {
            int attached = i; /* the areas before the failed attach, or all */
            for (i = 0, a = p->head; a != NULL; a = a->next, i++) {
                if (i < attached)
                    MPI_Win_detach(s->swin, (void *)a->start);
                free(a->bases);
                a->bases = NULL;
            }
            free(mine);
            free(all);
            if (arc < 0)
                return arc;
            return mrc != MPI_SUCCESS
                       ? rma_li_mpi_error("li_commit", "MPI_Win_attach/MPI_Allgather", mrc)
                       : rma_li_error(LI_ERR_MPI, "li_commit",
                                      "MPI_Win_attach failed on another rank; nothing committed");
        }
        for (i = 0, a = p->head; a != NULL; a = a->next, i++)
            for (int r = 0; r < s->nprocs; r++)
                a->bases[r] = all[(size_t)r * (size_t)n + (size_t)i];
        free(mine);
        free(all);
    }
    while (p->head != NULL) {
        a = p->head;
        p->head = a->next;
        a->next = NULL;
        a->committed = 1;
    }
    p->tail = NULL;
    p->count = 0;
    if (s->s_init_pending && !s->s_epoch_open) {
        s->s_init_pending = 0;
        rc = single_fence("li_commit");
        if (rc != LI_OK)
            return rc;
        s->s_epoch_open = 1;
    }
    return LI_OK;
}

int li_put(int pid, const void *src, void *desaddr, size_t off, size_t len)
{
    return rma_li_xfer(RMA_LI_SINGLE, 1, pid, (void *)src, desaddr, off, len, "li_put");
}

int li_get(int pid, const void *srcaddr, size_t off, void *dst, size_t len)
{
    return rma_li_xfer(RMA_LI_SINGLE, 0, pid, dst, srcaddr, off, len, "li_get");
}

int li_sync(void)
{
    rma_li_state_t *s = &rma_li_state;
    int rc = rma_li_check_begun("li_sync");

    if (rc != LI_OK)
        return rc;
    if (!s->s_epoch_open)
        return rma_li_error(LI_ERR_NOTINIT, "li_sync", "li_init and li_commit have not both run");
    return single_fence("li_sync");
}

int li_deregister(void *addr)
{
    rma_li_area_t *a = NULL;
    int rc = rma_li_deregister_check(RMA_LI_SINGLE, addr, "li_deregister", &a), mrc;

    if (rc != LI_OK)
        return rc;
    mrc = MPI_Win_detach(rma_li_state.swin, (void *)a->start);
    rma_li_area_free(a);
    return mrc == MPI_SUCCESS ? LI_OK : rma_li_mpi_error("li_deregister", "MPI_Win_detach", mrc);
}
