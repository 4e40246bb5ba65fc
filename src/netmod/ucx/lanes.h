/*
 * lanes.h - what an endpoint's lanes promise, read from the lane table UCX prints for it.
 *
 * UCX 1.13 has no query for an endpoint's lanes; ucp_ep_print_info prints one line per lane,
 * "lane[i]: <rsc>:<tl>/<dev>.<path> md[..] -> ... <uses>", whose uses name the lane's roles
 * ("rma#0", "rma_bw#1", "amo#0", "am", "am_bw#0", "rkey_ptr", "wireup{...}"). nm_ucx.c
 * prints it into memory and decides from this file's reading, which has no UCX call so that
 * a unit test (test/unit/test_lanes.c) can feed it the tables of devices this machine lacks.
 */
#ifndef RMA_NM_UCX_LANES_H
#define RMA_NM_UCX_LANES_H

typedef struct rma_ucx_lanes {
    int lanes;   /* lines that describe a lane */
    int dev_amo; /* an atomic lane is a network device's: its atomics on registered memory
                    complete without the target's CPU */
    int dev_rma; /* an RMA lane is a network device's: puts and gets of registered memory
                    complete without the target's CPU */
    int ordered; /* every lane is tcp: UCX emulates RMA and atomics with active messages on
                    one byte stream, applied in issue order */
    int maps;    /* a lane is a shared-memory transport (sysv, posix): UCX maps memory it
                    allocated into the peer, both ways (xpmem maps any memory already) */
} rma_ucx_lanes_t;

/* Reads the lane table in text (what ucp_ep_print_info printed) into *out. The transports
 * between processes of one machine (sysv, posix, xpmem, knem, cma, self) and tcp are not
 * network devices: their atomic and RMA lanes reach only memory UCX allocated, or are
 * emulated with active messages. */
void rma_ucx_lanes_read(const char *text, rma_ucx_lanes_t *out);

/* 1 when the resource table in text (what ucp_context_print_info printed, "resource i : md
 * m dev d flags -- <tl>/<dev>") names a network device, or has no resource line this
 * reads: registering memory may then pin its pages for a NIC, so registered pages must
 * never be moved. */
int rma_ucx_context_has_device(const char *text);

#endif
