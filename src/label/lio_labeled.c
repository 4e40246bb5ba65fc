/*
 * lio_labeled.c - the labeled form (lio_register ... lio_deregister): every
 * registered area owns its own MPI window, found through the labeled window
 * table from any address inside the area, so transfers to different areas
 * are synchronized independently.
 * Mapping (the paper's Fig. 4): lio_commit = MPI_Win_create per pending area,
 * lio_init(addr) = MPI_Win_fence on that window (opens its epoch),
 * lio_put/lio_get = MPI_Put/MPI_Get, lio_sync(addr) = MPI_Win_fence,
 * lio_barrier = MPI_Barrier, lio_deregister = MPI_Win_free.
 */
#include "li_internal.h"

int lio_register(void *addr, size_t len)
{
    return rma_li_register(RMA_LI_LABELED, addr, len, "lio_register");
}

static int area_fence(rma_li_area_t *a, const char *fn)
{
    int rc = MPI_Win_fence(0, a->win);

    if (rc != MPI_SUCCESS)
        return rma_li_mpi_error(fn, "MPI_Win_fence", rc);
    a->epoch_open = 1;
    return LI_OK;
}

int lio_init(void *addr)
{
    rma_li_area_t *a = NULL;
    int lrc = rma_li_check_begun("lio_init"), ok;

    if (lrc != LI_OK)
        return lrc;
    lrc = rma_li_lookup(RMA_LI_LABELED, addr, "lio_init", &a);
    /* the fence is collective: make sure every rank names the same area first */
    ok = rma_li_agree(lrc == LI_OK ? a->seq + 1 : 0, "lio_init");
    if (ok < 0)
        return ok;
    if (lrc != LI_OK)
        return lrc;
    if (!ok)
        return rma_li_error(LI_ERR_MISMATCH, "lio_init",
                            "ranks named different areas "
                            "(this rank: registration #%lld)",
                            (long long)a->seq);
    if (!a->committed) {
        a->init_pending = 1; /* lio_commit opens the epoch */
        return LI_OK;
    }
    if (a->epoch_open)
        return LI_OK;
    return area_fence(a, "lio_init");
}

int lio_commit(void)
{
    rma_li_state_t *s = &rma_li_state;
    rma_li_pending_t *p = &s->pending[RMA_LI_LABELED];
    int rc = rma_li_check_begun("lio_commit"), mrc;

    if (rc != LI_OK)
        return rc;
    rc = rma_li_commit_check(RMA_LI_LABELED, "lio_commit");
    if (rc != LI_OK)
        return rc;
    while (p->head != NULL) {
        rma_li_area_t *a = p->head;
        mrc =
            MPI_Win_create((void *)a->start, (MPI_Aint)a->len, 1, MPI_INFO_NULL, s->comm, &a->win);
        if (mrc != MPI_SUCCESS)
            return rma_li_mpi_error("lio_commit", "MPI_Win_create", mrc);
        MPI_Win_set_errhandler(a->win, MPI_ERRORS_RETURN);
        p->head = a->next;
        p->count--;
        a->next = NULL;
        a->committed = 1;
        if (a->init_pending) {
            a->init_pending = 0;
            rc = area_fence(a, "lio_commit");
            if (rc != LI_OK)
                return rc;
        }
    }
    p->tail = NULL;
    return LI_OK;
}

int lio_put(int pid, const void *src, void *desaddr, size_t off, size_t len)
{
    return rma_li_xfer(RMA_LI_LABELED, 1, pid, (void *)src, desaddr, off, len, "lio_put");
}

int lio_get(int pid, const void *srcaddr, size_t off, void *dst, size_t len)
{
    return rma_li_xfer(RMA_LI_LABELED, 0, pid, dst, srcaddr, off, len, "lio_get");
}

int lio_sync(void *addr)
{
    rma_li_area_t *a = NULL;
    int rc = rma_li_check_begun("lio_sync");

    if (rc != LI_OK)
        return rc;
    rc = rma_li_lookup(RMA_LI_LABELED, addr, "lio_sync", &a);
    if (rc != LI_OK)
        return rc;
    if (!a->committed || !a->epoch_open)
        return rma_li_error(LI_ERR_NOTINIT, "lio_sync",
                            "area at %p is not committed and "
                            "initialized",
                            addr);
    return area_fence(a, "lio_sync");
}

int lio_deregister(void *addr)
{
    rma_li_area_t *a = NULL;
    int rc = rma_li_deregister_check(RMA_LI_LABELED, addr, "lio_deregister", &a), mrc;

    if (rc != LI_OK)
        return rc;
    mrc = MPI_Win_free(&a->win);
    rma_li_area_free(a);
    return mrc == MPI_SUCCESS ? LI_OK : rma_li_mpi_error("lio_deregister", "MPI_Win_free", mrc);
}
