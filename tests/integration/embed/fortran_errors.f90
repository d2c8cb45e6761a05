! The Fortran module's error paths on 4 ranks (test_embedding.py), with
! examples/embed/jacobi_step.mlir: rank 1 alone passes a strided section (not
! contiguous): every rank gets the error, naming rank 1, and no rank waits;
! then a correct run works; then a runner with options (the fusion pass off,
! the profile, a trace file) runs and gives its profile and trace. Prints "ok <what>" on rank 0; stops with a
! non-zero code on a failure.
program fortran_errors
  use mpi
  use iso_c_binding
  use hlo_runtime
  implicit none
  real(c_double), target :: u(0:17, 0:5), big(0:35, 0:5), unew(16, 4), change
  type(hlo_program) :: prog
  type(hlo_runner) :: runner
  type(hlo_runner_options) :: opts
  integer :: ierr, rank
  character(len=4096) :: model, msg, trace
  character(kind=c_char), target :: trace_c(4097)
  character(len=:), allocatable :: text

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, model)
  call hlo_load(prog, model, ierr, msg)
  call expect(ierr == 0, 'the model loads')
  call hlo_create(runner, prog, MPI_COMM_WORLD, ierr, msg)
  call expect(ierr == 0, 'the runner is created')
  u = 1
  big = 1
  if (rank == 1) then
    call hlo_run(runner, [hlo_array_of(big(::2, :))], &
                 [hlo_array_of(unew), hlo_array_of(change)], ierr, msg)
  else
    call hlo_run(runner, [hlo_array_of(u)], [hlo_array_of(unew), hlo_array_of(change)], ierr, msg)
  end if
  call expect(ierr /= 0 .and. index(msg, 'rank 1 (replica 1, partition 0): argument 0') > 0, &
              'a non-contiguous array on one rank is an error on every rank, naming it')
  if (rank == 1) call expect(index(msg, 'not contiguous') > 0, 'the rank says why')
  call hlo_run(runner, [hlo_array_of(u)], [hlo_array_of(unew), hlo_array_of(change)], ierr, msg)
  call expect(ierr == 0 .and. all(unew == 1) .and. change == 0, 'a correct run works after it')
  call hlo_run(runner, [hlo_array_of(unew)], [hlo_array_of(unew), hlo_array_of(change)], ierr, msg)
  call expect(ierr /= 0 .and. index(msg, 'argument 0 is f64[16,4], but the program''s is ' // &
                                    'f64[18,6]') > 0, 'a wrong shape names both shapes')
  call hlo_free(runner)
  ! Options: the struct, field for field (struct_size set by hlo_create).
  call get_command_argument(2, trace)
  trace_c(1:len_trim(trace) + 1) = transfer(trim(trace) // c_null_char, trace_c, len_trim(trace) + 1)
  opts = hlo_options_default()
  opts%no_fusion_pass = 1
  opts%profile = 1
  opts%trace_path = c_loc(trace_c)
  call hlo_create(runner, prog, MPI_COMM_WORLD, ierr, msg, options=opts)
  call expect(ierr == 0, 'a runner with options is created')
  call hlo_run(runner, [hlo_array_of(u)], [hlo_array_of(unew), hlo_array_of(change)], ierr, msg)
  call expect(ierr == 0 .and. all(unew == 1) .and. change == 0, 'it runs unfused, profiled, traced')
  call hlo_profile_text(runner, 5, text, ierr, msg)
  call expect(ierr == 0 .and. (rank /= 0 .or. index(text, 'profile of rank 3') > 0) .and. &
              (rank == 0 .or. len(text) == 0), 'hlo_profile_text: every rank''s table on rank 0')
  call hlo_write_trace(runner, ierr, msg)
  call expect(ierr == 0, 'hlo_write_trace')
  call hlo_free(runner)
  call hlo_free(prog)
  call MPI_Finalize(ierr)

contains

  subroutine expect(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      write(0, '(a, i0, a, a, a, a)') 'fortran_errors: rank ', rank, ': FAILED ', what, ': ', &
                                      trim(msg)
      call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
    end if
    if (rank == 0) write(*, '(a, a)') 'ok ', what
  end subroutine
end program fortran_errors
