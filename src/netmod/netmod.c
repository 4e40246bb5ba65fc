/*
 * netmod.c - which transport reaches other nodes (netmod.h).
 */
#include "config.h"

#include "netmod/netmod.h"

#include <stdlib.h>

#ifdef HAVE_UCX
extern const rma_netmod_t rma_nm_ucx;
const rma_netmod_t *const rma_net = &rma_nm_ucx;
#else
const rma_netmod_t *const rma_net = NULL;
#endif

int rma_net_unserved;

void rma_net_mem_free(void *m)
{
    if (m != NULL)
        rma_net->unexpose(m);
    free(m);
}
