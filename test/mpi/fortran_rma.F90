! fortran_rma - an unmodified Fortran MPI RMA program, built twice: with `use mpi_f08`
! (-DF08: MPICH's Fortran 2008 bindings call PMPI_ names) and with `use mpi` (its older
! bindings call MPI_ names, and both reach window attributes through MPICH-internal calls).
! Every window flavor (allocate, create, dynamic, shared) under fence, PSCW, lock and
! lock_all + flush, with put, get, accumulate, get_accumulate, fetch_and_op and
! compare_and_swap, checked element by element (with use mpi_f08 also a put of a strided
! array section); the predefined attributes as Fortran
! values; a keyval with a Fortran delete callback; name, group, info; MPI_ERRORS_RETURN and
! a Fortran error handler. Run with librma preloaded (testlist preload=1) it must find
! librma and librma must own every window (RMAX_Win_path); run without (mpich=1) the same
! checks pass on MPICH's own RMA.
#ifdef F08
#define MPI_MODULE mpi_f08
#define CB_MODULE fortran_rma_cb_f08
#define WIN_T type(MPI_Win)
#define GROUP_T type(MPI_Group)
#define COMM_T type(MPI_Comm)
#define INFO_T type(MPI_Info)
#define ERRH_T type(MPI_Errhandler)
#define HANDLE(h) h%MPI_VAL
#else
#define MPI_MODULE mpi
#define CB_MODULE fortran_rma_cb_mpi
#define WIN_T integer
#define GROUP_T integer
#define COMM_T integer
#define INFO_T integer
#define ERRH_T integer
#define HANDLE(h) h
#endif

module CB_MODULE
  use MPI_MODULE
  implicit none
  integer :: deleted = 0, last_deleted = -1, errh_calls = 0, errh_code = -1
contains
  subroutine del_fn(win, keyval, attribute_val, extra_state, ierror)
    WIN_T :: win
    integer :: keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    deleted = deleted + 1
    last_deleted = int(attribute_val + 1000 * extra_state)
    ierror = MPI_SUCCESS
  end subroutine

  subroutine errh_fn(win, error_code)
    WIN_T :: win
    integer :: error_code
    errh_calls = errh_calls + 1
    errh_code = error_code
  end subroutine
end module

program fortran_rma
  use MPI_MODULE
  use CB_MODULE
  use, intrinsic :: iso_c_binding
  implicit none
  interface
    function dlsym(handle, name) bind(C, name="dlsym")
      import :: c_ptr, c_char
      type(c_ptr), value :: handle
      character(kind=c_char) :: name(*)
      type(c_ptr) :: dlsym
    end function
    function win_path_fn(win, target, disp, len, path) bind(C)
      import :: c_int, c_long
      integer(c_int), value :: win, target
      integer(c_long), value :: disp, len
      integer(c_int) :: path
      integer(c_int) :: win_path_fn
    end function
  end interface
  integer, parameter :: N = 64, NFLAVORS = 4
  integer :: ierr, rank, nprocs, right, left, fails, checks, total, f, i, path
  integer :: cls, len, keyval, nodesize, noderank
  logical :: want_librma, found, flag
  character(len=256) :: preload
  character(len=MPI_MAX_OBJECT_NAME) :: name
  character(len=MPI_MAX_ERROR_STRING) :: msg
  type(c_ptr) :: cpath
  procedure(win_path_fn), pointer :: win_path => null()
  WIN_T :: win
  GROUP_T :: wgroup, gleft, gright, world_group
  COMM_T :: comm, nodecomm
  INFO_T :: info
  ERRH_T :: errh
  integer, target :: cbuf(N)
  integer, pointer, volatile :: mem(:)
  integer, target, volatile :: dbuf(N)
  integer :: src(N), dst(N), res(N), one, old, cmp
  integer(kind=MPI_ADDRESS_KIND) :: sz, disp, aval, base_addr, mem_addr, qsize
  integer(kind=MPI_ADDRESS_KIND), allocatable :: addrs(:)
  integer :: qdisp
  type(c_ptr) :: base, qbase
#ifndef F08
  integer(kind=MPI_ADDRESS_KIND) :: baseint
#endif

  fails = 0
  checks = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  call get_environment_variable("LD_PRELOAD", preload)
  want_librma = index(preload, "librma") > 0
  cpath = dlsym(c_null_ptr, "RMAX_Win_path" // c_null_char)
  found = c_associated(cpath)
  call check(found .eqv. want_librma, "librma found exactly when preloaded")
  if (found) call c_f_procpointer(transfer(cpath, c_null_funptr), win_path)
  if (rank == 0 .and. found) print '(a)', "librma preloaded"
  if (rank == 0 .and. .not. found) print '(a)', "MPICH's own RMA"
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, nodecomm, &
                           ierr)
  call MPI_Comm_size(nodecomm, nodesize, ierr)
  call MPI_Comm_rank(nodecomm, noderank, ierr)
  call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
  call MPI_Group_incl(world_group, 1, [left], gleft, ierr)
  call MPI_Group_incl(world_group, 1, [right], gright, ierr)
  allocate(addrs(nprocs))

  do f = 1, NFLAVORS
    sz = N * 4
    comm = MPI_COMM_WORLD
    select case (f)
    case (1)
#ifdef F08
      call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, comm, base, win, ierr)
#else
      ! `use mpi`: baseptr is an address-sized integer
      call MPI_Win_allocate(sz, 4, MPI_INFO_NULL, comm, baseint, win, ierr)
      base = transfer(baseint, base)
#endif
      call c_f_pointer(base, mem, [N])
    case (2)
      call MPI_Win_create(cbuf, sz, 4, MPI_INFO_NULL, comm, win, ierr)
      base = c_loc(cbuf)
      call c_f_pointer(base, mem, [N])
    case (3)
      call MPI_Win_create_dynamic(MPI_INFO_NULL, comm, win, ierr)
      call MPI_Win_attach(win, dbuf, sz, ierr)
      base = c_loc(dbuf)
      call c_f_pointer(base, mem, [N])
    case (4)
      comm = nodecomm
#ifdef F08
      call MPI_Win_allocate_shared(sz, 4, MPI_INFO_NULL, comm, base, win, ierr)
#else
      call MPI_Win_allocate_shared(sz, 4, MPI_INFO_NULL, comm, baseint, win, ierr)
      base = transfer(baseint, base)
#endif
      call c_f_pointer(base, mem, [N])
    end select
    call check(ierr == MPI_SUCCESS, "window created")
    call flavor_round()
  end do

  call MPI_Group_free(gleft, ierr)
  call MPI_Group_free(gright, ierr)
  call MPI_Group_free(world_group, ierr)
  call MPI_Comm_free(nodecomm, ierr)
  call MPI_Allreduce(fails, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,i0,a,i0,a)', "fortran_rma: ", checks, " checks on rank 0, ", total, &
                                        " failed in all"
  call MPI_Finalize(ierr)
  if (total /= 0) error stop 1

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    checks = checks + 1
    if (.not. cond) then
      fails = fails + 1
      print '(a,i0,a,i0,a,a)', "[", rank, "] FAIL flavor ", f, ": ", what
    end if
  end subroutine

  ! The peers of this round: right and left in MPI_COMM_WORLD, or in the node's
  ! communicator for the shared window (its ranks are those of `comm`).
  subroutine peers(r, l, np)
    integer, intent(out) :: r, l, np
    integer :: me
    call MPI_Comm_size(comm, np, ierr)
    call MPI_Comm_rank(comm, me, ierr)
    r = mod(me + 1, np)
    l = mod(me + np - 1, np)
  end subroutine

  subroutine flavor_round()
    integer :: r, l, np, me, expect
    integer, parameter :: flavors(NFLAVORS) = [MPI_WIN_FLAVOR_ALLOCATE, MPI_WIN_FLAVOR_CREATE, &
                                               MPI_WIN_FLAVOR_DYNAMIC, MPI_WIN_FLAVOR_SHARED]
    GROUP_T :: gl, gr, cg

    call peers(r, l, np)
    call MPI_Comm_rank(comm, me, ierr)
    ! the target address of each rank's memory: displacements for the dynamic window
    disp = 0
    if (f == 3) then
      call MPI_Get_address(dbuf, mem_addr, ierr)
      call MPI_Allgather(mem_addr, 1, MPI_AINT, addrs, 1, MPI_AINT, comm, ierr)
      disp = addrs(r + 1)
    end if
    if (associated(win_path)) then
      path = -1
      ierr = win_path(HANDLE(win), r, int(disp, c_long), 4_c_long, path)
      call check(ierr == MPI_SUCCESS .and. path >= 1 .and. path <= 4, "librma owns the window")
    end if
    mem(:) = -1
    do i = 1, N
      src(i) = me * 1000 + i
    end do

    ! attributes, as Fortran values
    if (f /= 3) then
      call MPI_Win_get_attr(win, MPI_WIN_BASE, aval, flag, ierr)
      call MPI_Get_address(mem, base_addr, ierr)
      call check(ierr == MPI_SUCCESS .and. flag .and. aval == base_addr, "MPI_WIN_BASE")
      call MPI_Win_get_attr(win, MPI_WIN_SIZE, aval, flag, ierr)
      call check(flag .and. aval == N * 4, "MPI_WIN_SIZE")
      call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, aval, flag, ierr)
      call check(flag .and. aval == 4, "MPI_WIN_DISP_UNIT")
    end if
    call MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, aval, flag, ierr)
    expect = flavors(f)
    call check(ierr == MPI_SUCCESS .and. flag .and. aval == expect, "MPI_WIN_CREATE_FLAVOR")
    call MPI_Win_get_attr(win, MPI_WIN_MODEL, aval, flag, ierr)
    call check(flag .and. aval == MPI_WIN_UNIFIED, "MPI_WIN_MODEL")

    ! a user attribute whose Fortran delete callback sees the value set
    call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, del_fn, keyval, int(7, MPI_ADDRESS_KIND), &
                               ierr)
    call check(ierr == MPI_SUCCESS, "MPI_Win_create_keyval")
    aval = 40 + f
    call MPI_Win_set_attr(win, keyval, aval, ierr)
    aval = 0
    call MPI_Win_get_attr(win, keyval, aval, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. flag .and. aval == 40 + f, "user attribute")
    deleted = 0
    call MPI_Win_delete_attr(win, keyval, ierr)
    call check(deleted == 1 .and. last_deleted == 40 + f + 7000, "delete callback on delete_attr")
    call MPI_Win_get_attr(win, keyval, aval, flag, ierr)
    call check(ierr == MPI_SUCCESS .and. .not. flag, "deleted attribute is gone")
    aval = 50 + f
    call MPI_Win_set_attr(win, keyval, aval, ierr)

    ! name, group, info
    call MPI_Win_set_name(win, "fortran window", ierr)
    name = ""
    call MPI_Win_get_name(win, name, len, ierr)
    call check(name == "fortran window" .and. len == 14, "window name")
    call MPI_Win_get_group(win, cg, ierr)
    call MPI_Group_size(cg, i, ierr)
    call check(ierr == MPI_SUCCESS .and. i == np, "window group")
    call MPI_Group_free(cg, ierr)
    call MPI_Win_get_info(win, info, ierr)
    call check(ierr == MPI_SUCCESS, "MPI_Win_get_info")
    call MPI_Info_free(info, ierr)

    ! fence: put to the right
    call MPI_Win_fence(0, win, ierr)
    if (f == 3) disp = addrs(r + 1)
#ifdef F08
    if (MPI_SUBARRAYS_SUPPORTED) then
      ! a strided section: the binding describes it with a derived datatype
      call MPI_Put(src(1:N:2), N / 2, MPI_INTEGER, r, disp, N / 2, MPI_INTEGER, win, ierr)
      call MPI_Win_fence(0, win, ierr)
      call check(all(mem(1:N/2) == [(l * 1000 + 2 * i - 1, i = 1, N / 2)]) .and. &
                 all(mem(N/2+1:) == -1), "put of a strided section")
      call MPI_Win_fence(0, win, ierr) ! nobody puts again before every rank has looked
    end if
#endif
    call MPI_Put(src, N, MPI_INTEGER, r, disp, N, MPI_INTEGER, win, ierr)
    call MPI_Win_fence(0, win, ierr)
    call check(all(mem == [(l * 1000 + i, i = 1, N)]), "put under fence")

    ! PSCW: get from the left
    call MPI_Comm_group(comm, cg, ierr)
    if (comm == MPI_COMM_WORLD) then
      gl = gleft
      gr = gright
    else
      call MPI_Group_incl(cg, 1, [l], gl, ierr)
      call MPI_Group_incl(cg, 1, [r], gr, ierr)
    end if
    ! exposure to the right (it gets from us), access to the left
    call MPI_Win_post(gr, 0, win, ierr)
    call MPI_Win_start(gl, 0, win, ierr)
    if (f == 3) disp = addrs(l + 1)
    dst(:) = -2
    call MPI_Get(dst, N, MPI_INTEGER, l, disp, N, MPI_INTEGER, win, ierr)
    call MPI_Win_complete(win, ierr)
    call MPI_Win_wait(win, ierr)
    ! the left's memory holds what its left put there
    call check(all(dst == [(mod(l + np - 1, np) * 1000 + i, i = 1, N)]), "get under PSCW")
    if (comm /= MPI_COMM_WORLD) then
      call MPI_Group_free(gl, ierr)
      call MPI_Group_free(gr, ierr)
    end if
    call MPI_Group_free(cg, ierr)

    ! lock: accumulate SUM to the right, exclusively
    call MPI_Barrier(comm, ierr)
    if (f == 3) disp = addrs(r + 1)
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, r, 0, win, ierr)
    call MPI_Accumulate(src, N, MPI_INTEGER, r, disp, N, MPI_INTEGER, MPI_SUM, win, ierr)
    call MPI_Win_unlock(r, win, ierr)
    call check(ierr == MPI_SUCCESS, "accumulate under lock")
    call MPI_Barrier(comm, ierr)
    call MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win, ierr)
    call check(all(mem == [(2 * (l * 1000 + i), i = 1, N)]), "accumulate result")
    call MPI_Win_unlock(me, win, ierr)
    call MPI_Barrier(comm, ierr)

    ! lock_all + flush: get_accumulate, fetch_and_op, compare_and_swap on the right
    call MPI_Win_lock_all(0, win, ierr)
    res(:) = -3
    call MPI_Get_accumulate(src, N, MPI_INTEGER, res, N, MPI_INTEGER, r, disp, N, MPI_INTEGER, &
                            MPI_REPLACE, win, ierr)
    call MPI_Win_flush(r, win, ierr)
    call check(all(res == [(2 * (me * 1000 + i), i = 1, N)]), "get_accumulate fetched")
    one = 5
    call MPI_Fetch_and_op(one, old, MPI_INTEGER, r, disp, MPI_SUM, win, ierr)
    call MPI_Win_flush(r, win, ierr)
    call check(old == me * 1000 + 1, "fetch_and_op fetched")
    cmp = me * 1000 + 6
    one = -9
    call MPI_Compare_and_swap(one, cmp, old, MPI_INTEGER, r, disp, win, ierr)
    call MPI_Win_flush_all(win, ierr)
    call check(old == me * 1000 + 6, "compare_and_swap fetched")
    call MPI_Win_unlock_all(win, ierr)
    call MPI_Barrier(comm, ierr)
    call MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win, ierr)
    call check(mem(1) == -9 .and. all(mem(2:) == [(l * 1000 + i, i = 2, N)]), &
               "memory after the atomics")
    call MPI_Win_unlock(me, win, ierr)

    ! errors: MPI_ERRORS_RETURN gives the class; a Fortran handler is called
    call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN, ierr)
    call MPI_Win_lock_all(0, win, ierr)
    call MPI_Put(src, 1, MPI_INTEGER, np, disp, 1, MPI_INTEGER, win, ierr)
    cls = -1
    if (ierr /= MPI_SUCCESS) call MPI_Error_class(ierr, cls, i)
    call check(cls == MPI_ERR_RANK, "a put to rank np is MPI_ERR_RANK")
    call MPI_Error_string(ierr, msg, len, i)
    call check(i == MPI_SUCCESS .and. len > 0, "MPI_Error_string")
    call MPI_Win_unlock_all(win, ierr)
    call MPI_Win_create_errhandler(errh_fn, errh, ierr)
    call check(ierr == MPI_SUCCESS, "MPI_Win_create_errhandler")
    call MPI_Win_set_errhandler(win, errh, ierr)
    call check(ierr == MPI_SUCCESS, "MPI_Win_set_errhandler")
    call MPI_Errhandler_free(errh, ierr)
    errh_calls = 0
    call MPI_Win_call_errhandler(win, MPI_ERR_OTHER, ierr)
    call check(errh_calls == 1 .and. errh_code == MPI_ERR_OTHER, "Fortran error handler called")
    call MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL, ierr)

    ! shared: the neighbour's segment through MPI_Win_shared_query
    if (f == 4) then
#ifdef F08
      call MPI_Win_shared_query(win, r, qsize, qdisp, qbase, ierr)
#else
      call MPI_Win_shared_query(win, r, qsize, qdisp, baseint, ierr)
      qbase = transfer(baseint, qbase)
#endif
      call check(ierr == MPI_SUCCESS .and. qsize == N * 4 .and. qdisp == 4, "shared_query")
    end if

    if (f == 3) call MPI_Win_detach(win, dbuf, ierr)
    deleted = 0
    call MPI_Win_free(win, ierr)
    call check(ierr == MPI_SUCCESS .and. deleted == 1 .and. last_deleted == 50 + f + 7000, &
               "MPI_Win_free calls the delete callback")
    call MPI_Win_free_keyval(keyval, ierr)
    call check(ierr == MPI_SUCCESS, "MPI_Win_free_keyval")
  end subroutine
end program
