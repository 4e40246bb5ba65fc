/*
 * env.c - where librma reads its own environment variables (those of its UCX: nm_ucx.c).
 */
#define _GNU_SOURCE /* CPU_SETSIZE */
#include "mpid/rma/env.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

rma_env_t rma_env = {
    .netmod_only = 0,
    .create_remap = 1,
    .move_pinned = 0,
    .pin_devices = RMA_PIN_DEVICES,
    .pidfd = 1,
    .move_eager = 64 << 20,
    .verbose = 0,
    .spin_count = 200,
    .cma_batch = 512,
    .agent = RMA_AGENT_BLOCK,
    .agent_spin_us = 200,
    .agent_cpu = -2,
    .agent_copy = 64 << 10,
    .hx_piece = 2048,
    .hx_min = 8,
    .hx_node = 256,
    .hx_small = 8192,
    .node_ucx = 1,
    .hx_get_piece = 64 << 10,
    .hx_msg = 64 << 10,
    .aggregate = 4 << 10,
    .rndv = 64 << 10,
    .ucx_alloc = 1,
    .ordered = 1,
    .lock_lazy = 1,
};

static const char *const agent_names[] = {"block", "poll", "off"};

static int env_initialized;

/* name's value when it is a decimal integer in [lo, hi]; dflt when it is not set, or (said
 * once on stderr) not valid: not a number, anything after it, out of the range or of a
 * long's. Decimal alone: strtol's base 0 would read "010" as 8. *set (when not NULL) tells
 * whether the value was taken. */
static long env_long_set(const char *name, long dflt, long lo, long hi, int *set)
{
    const char *s = getenv(name);
    char *end;
    long v;

    if (set != NULL)
        *set = 0;
    if (s == NULL || *s == '\0')
        return dflt;
    errno = 0;
    v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "librma: ignoring %s=%s (expected an integer in [%ld, %ld])\n", name, s, lo,
                hi);
        return dflt;
    }
    if (set != NULL)
        *set = 1;
    return v;
}

static long env_long(const char *name, long dflt, long lo, long hi)
{
    return env_long_set(name, dflt, lo, hi, NULL);
}

static int env_given(const char *name)
{
    const char *s = getenv(name);

    return s != NULL && *s != '\0';
}

void rma_env_init(void)
{
    if (env_initialized)
        return;
    env_initialized = 1;
    rma_env.netmod_only = (int)env_long("RMA_NETMOD_ONLY", rma_env.netmod_only, 0, 1);
    rma_env.create_remap = (int)env_long("RMA_CREATE_REMAP", rma_env.create_remap, 0, 1);
    rma_env.move_pinned = (int)env_long("RMA_MOVE_PINNED", rma_env.move_pinned, 0, 1);
    if (env_given("RMA_TEST_PIN_DEVICES"))
        rma_env.pin_devices = getenv("RMA_TEST_PIN_DEVICES");
    rma_env.ucx_rndv = env_given("UCX_RNDV_SCHEME") ? getenv("UCX_RNDV_SCHEME") : NULL;
    rma_env.ucx_proto = env_given("UCX_PROTO_ENABLE") ? getenv("UCX_PROTO_ENABLE") : NULL;
    rma_env.move_eager = (size_t)env_long("RMA_MOVE_EAGER", (long)rma_env.move_eager, 0, LONG_MAX);
    rma_env.verbose = (int)env_long("RMA_VERBOSE", rma_env.verbose, 0, 2);
    rma_env.spin_count = (int)env_long("RMA_SPIN_COUNT", rma_env.spin_count, 0, 1 << 24);
    rma_env.cma_batch = (size_t)env_long("RMA_CMA_IOV", (long)rma_env.cma_batch, 1, 1024);
    rma_env.pidfd = (int)env_long("RMA_PIDFD", rma_env.pidfd, 0, 1);
    rma_env.agent_spin_us = (int)env_long("RMA_AGENT_SPIN_US", rma_env.agent_spin_us, 0, 1000000);
    rma_env.agent_copy = (size_t)env_long("RMA_AGENT_COPY", (long)rma_env.agent_copy, 0, 1L << 40);
    /* a value given and taken also sets the one for peers reached over tcp alone (*_am) */
    int msg_set, piece_set, agg_set;
    rma_env.hx_msg =
        (size_t)env_long_set("RMA_HX_MSG", (long)rma_env.hx_msg, 4096, 4 << 20, &msg_set);
    rma_env.hx_piece =
        (size_t)env_long_set("RMA_HX_PIECE", (long)rma_env.hx_piece, 0, 4 << 20, &piece_set);
    if (rma_env.hx_piece > rma_env.hx_msg)
        rma_env.hx_piece = rma_env.hx_msg;
    rma_env.hx_min = (size_t)env_long("RMA_HX_MIN_PIECES", (long)rma_env.hx_min, 1, 1L << 30);
    rma_env.hx_node = (size_t)env_long("RMA_HX_PIECE_NODE", (long)rma_env.hx_node, 0, 4 << 20);
    if (rma_env.hx_node > rma_env.hx_msg)
        rma_env.hx_node = rma_env.hx_msg;
    rma_env.hx_small = (size_t)env_long("RMA_HX_SMALL_NODE", (long)rma_env.hx_small, 0, 64 << 10);
    if (rma_env.hx_small > rma_env.hx_msg)
        rma_env.hx_small = rma_env.hx_msg;
    rma_env.node_ucx = (int)env_long("RMA_NODE_UCX", rma_env.node_ucx, 0, 1);
    /* a get of many pieces gathers larger ones at the target's agent, not only what a put
     * scatters there; RMA_HX_PIECE=0 (never host-assisted) turns both off */
    rma_env.hx_get_piece =
        (size_t)env_long("RMA_HX_GET_PIECE", (long)rma_env.hx_get_piece, 0, 4 << 20);
    if (rma_env.hx_get_piece > rma_env.hx_msg)
        rma_env.hx_get_piece = rma_env.hx_msg;
    if (rma_env.hx_get_piece < rma_env.hx_piece || rma_env.hx_piece == 0)
        rma_env.hx_get_piece = rma_env.hx_piece;
    rma_env.aggregate =
        (size_t)env_long_set("RMA_AGGREGATE", (long)rma_env.aggregate, 0, 4 << 20, &agg_set);
    rma_env.hx_piece_am = piece_set ? rma_env.hx_piece : rma_env.hx_msg;
    rma_env.aggregate_am = agg_set ? rma_env.aggregate : RMA_AGGREGATE_AM;
    rma_env.hx_msg_am = msg_set ? rma_env.hx_msg : RMA_HX_MSG_AM;
    rma_env.rndv = (size_t)env_long("RMA_RNDV", (long)rma_env.rndv, 0, 1L << 40);
    if (rma_env.rndv > 0 && rma_env.rndv <= rma_env.hx_piece)
        rma_env.rndv = rma_env.hx_piece + 1;
    rma_env.ucx_alloc = (int)env_long("RMA_ALLOC_UCX", rma_env.ucx_alloc, 0, 1);
    rma_env.ordered = (int)env_long("RMA_ORDERED", rma_env.ordered, 0, 1);
    rma_env.lock_lazy = (int)env_long("RMA_LOCK_LAZY", rma_env.lock_lazy, 0, 1);
    rma_env.acc_gap_us = (int)env_long("RMA_TEST_ACC_GAP", 0, 0, 1000000);
    rma_env.test_way = (int)env_long("RMA_TEST_WAY", 0, 0, 2);
    const char *c = getenv("RMA_AGENT_CPU");
    if (c != NULL && *c != '\0') {
        if (strcmp(c, "auto") == 0)
            rma_env.agent_cpu = -2;
        else if (strcmp(c, "none") == 0)
            rma_env.agent_cpu = -1;
        else if ((rma_env.agent_cpu = (int)env_long("RMA_AGENT_CPU", -3, 0, CPU_SETSIZE - 1)) ==
                 -3) {
            fprintf(stderr, "librma: (RMA_AGENT_CPU takes auto, none or a CPU number)\n");
            rma_env.agent_cpu = -2;
        }
    }
    const char *a = getenv("RMA_AGENT");
    if (a != NULL && *a != '\0') {
        int found = 0;
        for (int i = 0; i < 3; i++)
            if (strcmp(a, agent_names[i]) == 0)
                rma_env.agent = i, found = 1;
        if (!found)
            fprintf(stderr, "librma: ignoring RMA_AGENT=%s (expected block, poll or off)\n", a);
    }
}

void rma_env_print(FILE *out)
{
    fprintf(out,
            "RMA_NETMOD_ONLY=%d      treat every peer as off-node (1) or map same-node "
            "peers (0)\n",
            rma_env.netmod_only);
    fprintf(out,
            "RMA_CREATE_REMAP=%d     MPI_Win_create / attached memory that peers reach "
            "through CMA: the owner's agent moves it onto shared memory once their traffic "
            "pays for the copy (1), or never (0)\n",
            rma_env.create_remap);
    fprintf(out,
            "RMA_MOVE_PINNED=%d      ... also on a machine with an RDMA device (%s), which "
            "may hold pages pinned that the MPI library registered for its own transfers from "
            "window memory: moved, those would go on using the old pages (1); or not there "
            "(0)\n",
            rma_env.move_pinned, rma_env.pin_devices);
    fprintf(out,
            "RMA_MOVE_EAGER=%zu  a process alone on its node, whose off-node peers UCX "
            "reaches through shared memory: its agent moves MPI_Win_create memory and attached "
            "regions of up to this many bytes onto UCX's shared memory right after creation "
            "or attach (larger: once "
            "peers' traffic pays for the copy; 0: only then)\n",
            rma_env.move_eager);
    fprintf(out,
            "RMA_VERBOSE=%d          1: print errors that MPI_ERRORS_RETURN returns; 2: "
            "also window set-up decisions\n",
            rma_env.verbose);
    fprintf(out,
            "RMA_SPIN_COUNT=%d     busy polls before a waiting rank starts to "
            "sched_yield\n",
            rma_env.spin_count);
    fprintf(out,
            "RMA_PIDFD=%d            same-node peers' shared segments and agents reached "
            "with pidfd_getfd, else /proc/<pid>/fd (1), or through /proc/<pid>/fd alone (0)\n",
            rma_env.pidfd);
    fprintf(out, "RMA_CMA_IOV=%zu        iovec entries per process_vm_readv/writev call\n",
            rma_env.cma_batch);
    fprintf(out,
            "RMA_AGENT=%s          progress agent for off-node peers: block (sleeps on the "
            "network's event descriptor when idle), poll (polls all the time), off (peers' "
            "operations progress only inside this process's librma calls)\n",
            agent_names[rma_env.agent]);
    fprintf(out,
            "RMA_AGENT_SPIN_US=%d  block mode: the agent polls this long after activity "
            "before it sleeps\n",
            rma_env.agent_spin_us);
    fprintf(out, "RMA_AGENT_CPU=");
    if (rma_env.agent_cpu >= 0)
        fprintf(out, "%d", rma_env.agent_cpu);
    else
        fprintf(out, "%s", rma_env.agent_cpu == -1 ? "none" : "auto");
    fprintf(out, "       where the progress agent runs: auto (a core no rank of this node is "
                 "bound to, found with hwloc; unbound when there is none), none (unbound), or a "
                 "CPU number\n");
    fprintf(
        out,
        "RMA_AGENT_COPY=%zu  MPI_Rput/MPI_Rget to off-node memory UCX maps here: copies of "
        "at least this many bytes are made by the progress agent while the caller goes on "
        "(the request completes when it is done; a wait that comes first makes the copy "
        "itself); only with the agent bound to a core (RMA_AGENT_CPU) and not RMA_AGENT=off; 0: "
        "the caller always copies\n",
        rma_env.agent_copy);
    fprintf(out,
            "RMA_HX_PIECE=%zu      off-node put/get: pieces of at most this many bytes are "
            "sent to the target's agent, which scatters or gathers them (host-assisted); "
            "larger pieces are one RDMA each; 0: never host-assisted (to a peer reached over "
            "tcp alone, where UCX emulates RMA: %zu)\n",
            rma_env.hx_piece, rma_env.hx_piece_am);
    fprintf(out,
            "RMA_HX_MIN_PIECES=%zu    ... when one operation has at least this many such "
            "pieces (fewer go by RDMA)\n",
            rma_env.hx_min);
    fprintf(out,
            "RMA_HX_PIECE_NODE=%zu   a put to a same-node rank whose window memory is reached "
            "by cross-memory attach (not shared: malloc'd create or attached memory), in a "
            "window whose UCX runs (off-node ranks, or RMA_NODE_UCX): its pieces of at most this "
            "many bytes, when it has RMA_HX_MIN_PIECES of them, go to the target's agent in UCX "
            "messages rather than one cross-memory-attach iovec each; 0: never\n",
            rma_env.hx_node);
    fprintf(out,
            "RMA_HX_SMALL_NODE=%zu  ... and a lone put, get or accumulate of at most this many "
            "bytes to such a rank goes to its agent, held to the flush with the others, while "
            "that answers faster than a cross-memory-attach call (each flush weighs the two as "
            "measured lately; not with RMA_AGENT=off); 0: never\n",
            rma_env.hx_small);
    fprintf(out,
            "RMA_NODE_UCX=%d         a window of one node whose memory cannot move here (see "
            "RMA_MOVE_PINNED) starts UCX on every rank, so that RMA_HX_PIECE_NODE applies to "
            "its create and dynamic windows (1); or keeps cross-memory attach alone there (0)\n",
            rma_env.node_ucx);
    fprintf(out,
            "RMA_HX_GET_PIECE=%zu  ... for a get: its pieces of at most this many bytes, when it "
            "has RMA_HX_MIN_PIECES of them, are gathered by the target's agent into one "
            "reply\n",
            rma_env.hx_get_piece);
    fprintf(out,
            "RMA_HX_MSG=%zu       data bytes in one host-assisted request or reply (to a peer "
            "reached over tcp alone: %zu)\n",
            rma_env.hx_msg, rma_env.hx_msg_am);
    fprintf(out,
            "RMA_AGGREGATE=%zu    off-node puts of at most RMA_HX_PIECE bytes and accumulates "
            "of at most this many bytes to one target are gathered into one host-assisted "
            "request of up to this many bytes, sent at a flush, an epoch's end, another kind of "
            "operation or when full (the first after a flush goes on its own); 0: off (to a "
            "peer reached over tcp alone: %zu)\n",
            rma_env.aggregate, rma_env.aggregate_am);
    fprintf(out,
            "RMA_RNDV=%zu        off-node put/get: contiguous pieces of at least this many bytes "
            "are a rendezvous message to the target's agent, which moves them with one copy "
            "(one RDMA read on a NIC) between the origin's buffer and window memory; smaller "
            "ones are UCX RMA, and so are all to a target whose endpoint has a network device's "
            "RDMA lane; 0: never\n",
            rma_env.rndv);
    fprintf(out,
            "RMA_ALLOC_UCX=%d        a rank with no other rank of its node in a window lets UCX "
            "allocate its control words and MPI_Win_allocate memory, and a process alone on its "
            "node its MPI_Alloc_mem blocks (which create and dynamic windows then expose), "
            "memory UCX's transports reach without this process's CPU (1), or allocates them "
            "itself (0)\n",
            rma_env.ucx_alloc);
    fprintf(out,
            "RMA_ORDERED=%d          an unlock, fence or MPI_Win_complete to an off-node target "
            "whose transport applies operations in issue order (UCX over tcp) sends its "
            "notification right behind the operations and flushes once (1), or flushes before "
            "it too (0)\n",
            rma_env.ordered);
    fprintf(out,
            "RMA_LOCK_LAZY=%d        MPI_Win_lock(MPI_LOCK_SHARED) on an off-node target whose "
            "puts and gets need its worker anyway (tcp alone, or memory UCX emulates RDMA on) "
            "leaves the lock to MPI_Win_unlock, which sends the epoch's puts or gets as one "
            "request that the target's agent serves under the lock: one round trip for the "
            "epoch (1); or takes the lock at once (0)\n",
            rma_env.lock_lazy);
    if (rma_env.acc_gap_us > 0)
        fprintf(out,
                "RMA_TEST_ACC_GAP=%d     (tests only) a one-element atomic on the slow path "
                "sleeps this many microseconds between seeing its stripe free and updating, an "
                "off-node read + compare-and-swap (1/2-byte elements, ops UCX lacks) between "
                "reading its word and swapping it\n",
                rma_env.acc_gap_us);
    if (rma_env.test_way > 0)
        fprintf(out,
                "RMA_TEST_WAY=%d         (tests only) the small operations of RMA_HX_SMALL_NODE "
                "go %s\n",
                rma_env.test_way,
                rma_env.test_way == 1 ? "to the agent always" : "the other way at every round");
}
