/*
 * test_lanes.c - reading UCX's endpoint lane tables (src/netmod/ucx/lanes.h): what librma
 * concludes for the transports of this machine and for network devices it does not have.
 * The tables are written in the formats UCX 1.13's ucp_ep_print_info and
 * ucp_context_print_info use.
 */
#include <stdio.h>

#include "netmod/ucx/lanes.h"

static int failures;

static void expect(const char *name, const char *table, int lanes, int dev_amo, int dev_rma,
                   int ordered, int maps)
{
    rma_ucx_lanes_t got;

    rma_ucx_lanes_read(table, &got);
    if (got.lanes != lanes || got.dev_amo != dev_amo || got.dev_rma != dev_rma ||
        got.ordered != ordered || got.maps != maps) {
        fprintf(stderr,
                "FAIL %s: lanes %d dev_amo %d dev_rma %d ordered %d maps %d, expected %d %d %d %d "
                "%d\n",
                name, got.lanes, got.dev_amo, got.dev_rma, got.ordered, got.maps, lanes, dev_amo,
                dev_rma, ordered, maps);
        failures++;
    }
}

static void expect_dev(const char *name, const char *table, int dev)
{
    if (rma_ucx_context_has_device(table) != dev) {
        fprintf(stderr, "FAIL %s: has_device %d, expected %d\n", name, !dev, dev);
        failures++;
    }
}

int main(void)
{
    /* Debian's UCX 1.13 between two processes of this machine (rma_info) */
    expect("shared memory",
           "# UCP endpoint \n"
           "#               peer: <no debug data>\n"
           "#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] "
           "amo#0 am am_bw#0\n"
           "#                 lane[1]:  4:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255] "
           "amo#1\n"
           "#                 lane[2]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] "
           "rma_bw#0\n"
           "#                 am_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)\n"
           "#                  put[0]: 0..<short>..4294967296..<bcopy>..(inf)\n"
           "#                  rma_bw: mds rndv_rkey_size 9\n",
           3, 0, 0, 0, 1);
    expect("tcp alone",
           "#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] "
           "am am_bw#0 wireup\n",
           1, 0, 0, 1, 0);
    expect("tcp and cma",
           "#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] "
           "am am_bw#0 wireup\n"
           "#                 lane[1]:  2:cma/memory.0 md[1]            -> md[1]/cma/sysdev[255] "
           "rma_bw#0",
           2, 0, 0, 0, 0);
    /* an InfiniBand endpoint: RDMA and atomics on the device */
    expect("rc_mlx5",
           "#                 lane[0]:  6:rc_mlx5/mlx5_0:1.0 md[4]      -> md[4]/ib/sysdev[255] "
           "rma#0 amo#0 am am_bw#0 wireup{ud_mlx5/mlx5_0:1}\n"
           "#                 lane[1]:  6:rc_mlx5/mlx5_0:1.1 md[4]      -> md[4]/ib/sysdev[255] "
           "rma_bw#0\n",
           2, 1, 1, 0, 0);
    /* bandwidth lanes on a device, atomics left to shared memory (another process of the
     * node reached through UCX) */
    expect("dc_mlx5 bandwidth, xpmem",
           "#                 lane[0]:  2:self/memory.0 md[2]           -> md[2]/self am am_bw#0\n"
           "#                 lane[1]: 32:xpmem/memory.0 md[12]          -> md[12]/xpmem rkey_ptr\n"
           "#                 lane[2]: 31:knem/memory.0 md[11]           -> md[11]/knem rma_bw#0\n"
           "#                 lane[3]: 10:dc_mlx5/mlx5_2:1.0 md[5]      -> md[5]/ib rma_bw#1\n",
           4, 0, 1, 0, 0);
    /* a role's name inside another's (am_bw, rma_bw) is not that role */
    expect("roles by name",
           "lane[0]:  7:ud_mlx5/mlx5_0:1.0 md[3] -> md[3]/ib am am_bw#0 xrma#0 amox#1\n", 1, 0, 0,
           0, 0);
    expect("empty", "", 0, 0, 0, 0, 0);
    /* resource tables (ucp_context_print_info): a NIC may pin registered pages */
    expect_dev("this machine",
               "#            md 4  :  component 6  cma \n"
               "#      resource 0  :  md 0  dev 0  flags -- self/memory0\n"
               "#      resource 1  :  md 1  dev 1  flags -- tcp/lo\n"
               "#      resource 2  :  md 1  dev 2  flags -- tcp/eth0\n"
               "#      resource 3  :  md 2  dev 3  flags -- sysv/memory\n"
               "#      resource 4  :  md 3  dev 3  flags -- posix/memory\n"
               "#      resource 5  :  md 4  dev 3  flags -- cma/memory  \n",
               0);
    expect_dev("InfiniBand",
               "#      resource 0  :  md 0  dev 0  flags -- posix/memory\n"
               "#      resource 1  :  md 1  dev 1  flags -- rc_mlx5/mlx5_0:1\n"
               "#      resource 2  :  md 1  dev 1  flags -- ud_verbs/mlx5_0:1",
               1);
    expect_dev("no table", "", 1);
    if (failures == 0)
        printf("test_lanes: 7 lane tables and 3 resource tables read as expected\n");
    return failures != 0;
}
