! A small Fortran MPI stencil code that calls a model for every sweep
! through the Fortran module hlo_runtime (examples/embed/README.md):
!
!   mpiexec -n 4 jacobi MODEL STEPS OUT
!
! A 16 x 16 Laplace problem, u = 1 on the edge i = 0 and 0 on the other
! edges, split along j over 4 processes (4 columns each). Every step the
! code exchanges its halo columns with MPI, then the model (jacobi_step.mlir)
! computes the new block and the global squared change. Rank r writes
! OUT.<r>.txt: the change of every step, then its block u(1:16, 1:4) in
! Fortran order.
program jacobi
  use mpi
  use iso_c_binding
  use hlo_runtime
  implicit none
  integer, parameter :: nx = 16, nyl = 4
  real(c_double), target :: u(0:nx+1, 0:nyl+1), unew(nx, nyl), change
  type(hlo_program) :: prog
  type(hlo_runner) :: runner
  integer :: ierr, rank, size, step, steps, i, j, left, right, unit
  character(len=4096) :: model, out, arg, msg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, model)
  call get_command_argument(2, arg)
  read(arg, *) steps
  call get_command_argument(3, out)

  ! Interior values to start from; boundary: 1 on i = 0, 0 elsewhere.
  u = 0
  do j = 1, nyl
    do i = 1, nx
      u(i, j) = 0.01d0 * (i + 2 * (rank * nyl + j))
    end do
  end do
  u(0, :) = 1
  left = rank - 1
  right = rank + 1
  if (left < 0) left = MPI_PROC_NULL
  if (right >= size) right = MPI_PROC_NULL

  call hlo_load(prog, model, ierr, msg)
  if (ierr /= 0) call fail('loading the model')
  call hlo_create(runner, prog, MPI_COMM_WORLD, ierr, msg)
  if (ierr /= 0) call fail('binding the model to MPI_COMM_WORLD')

  write(arg, '(a, a, i0, a)') trim(out), '.', rank, '.txt'
  open(newunit=unit, file=trim(arg), status='replace', action='write')
  do step = 1, steps
    ! Halo columns: j = 0 from the left neighbour, j = nyl + 1 from the right.
    call MPI_Sendrecv(u(0, nyl), nx + 2, MPI_DOUBLE_PRECISION, right, 0, &
                      u(0, 0), nx + 2, MPI_DOUBLE_PRECISION, left, 0, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Sendrecv(u(0, 1), nx + 2, MPI_DOUBLE_PRECISION, left, 1, &
                      u(0, nyl + 1), nx + 2, MPI_DOUBLE_PRECISION, right, 1, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call hlo_run(runner, [hlo_array_of(u)], [hlo_array_of(unew), hlo_array_of(change)], &
                 ierr, msg)
    if (ierr /= 0) call fail('running a sweep')
    u(1:nx, 1:nyl) = unew
    write(unit, '(es25.17)') change
  end do
  do j = 1, nyl
    write(unit, '(16es25.17)') u(1:nx, j)
  end do
  close(unit)

  call hlo_free(runner)
  call hlo_free(prog)
  call MPI_Finalize(ierr)

contains

  subroutine fail(what)
    character(len=*), intent(in) :: what
    write(0, '(a, a, a, a)') 'jacobi: ', what, ': ', trim(msg)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine
end program jacobi
