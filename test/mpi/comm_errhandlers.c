/*
 * comm_errhandlers - librma leaves the program's communicators' error handlers as the MPI
 * library has them. In MPICH a communicator without a handler of its own (MPI_COMM_SELF,
 * and those made from MPI_COMM_WORLD before the program set one) raises its errors on
 * MPI_COMM_WORLD's handler of the moment. librma's MPI_Init asked MPICH which accumulate
 * ops each type takes by swapping MPI_COMM_WORLD's and MPI_COMM_SELF's handlers for
 * MPI_ERRORS_RETURN and setting them back, and it asked whether a derived type is committed
 * so on MPI_COMM_SELF: set back, the handlers were MPI_ERRORS_ARE_FATAL of their own. A
 * program that then set MPI_ERRORS_RETURN on MPI_COMM_WORLD was aborted by an erroneous
 * call on MPI_COMM_SELF or on a communicator split off early, where MPICH alone returns
 * the error. Here, after an accumulate of a derived type: each such call must return
 * MPI_ERR_RANK. 1 to 4 ranks.
 */
#include "rmatest.h"

int main(int argc, char **argv)
{
    MPI_Comm early;
    MPI_Datatype vec;
    MPI_Win win;
    int *mem, nprocs, x = 1, ones[4] = {1, 1, 1, 1};

    rt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rt_rank, &early);

    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_OK(
        MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
    memset(mem, 0, 8 * sizeof(int));
    MPI_OK(MPI_Win_fence(0, win));
    MPI_OK(MPI_Accumulate(ones, 4, MPI_INT, (rt_rank + 1) % nprocs, 0, 1, vec, MPI_SUM, win));
    MPI_OK(MPI_Win_fence(0, win));
    for (int i = 0; i < 8; i++)
        CHECK(mem[i] == (i % 2 == 0), "int %d of the window is %d", i, mem[i]);
    MPI_OK(MPI_Win_free(&win));
    MPI_Type_free(&vec);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_ERRCLASS(MPI_Send(&x, 1, MPI_INT, 5, 0, MPI_COMM_SELF), MPI_ERR_RANK);
    MPI_ERRCLASS(MPI_Send(&x, 1, MPI_INT, nprocs + 5, 0, early), MPI_ERR_RANK);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&early);
    return rt_finish("comm_errhandlers");
}
