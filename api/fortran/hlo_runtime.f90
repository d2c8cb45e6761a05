! Fortran module hlo_runtime: libhlo_runtime (api/hlo_runtime.h) for
! Fortran MPI codes, through ISO_C_BINDING. docs/EMBEDDING.md, "Fortran".
!
!   use hlo_runtime
!   type(hlo_program) :: prog
!   type(hlo_runner) :: run
!   real(c_double), target :: u(0:nx+1, 0:ny+1), unew(nx, ny), res
!   call hlo_load(prog, 'model.mlir', ierr, msg)
!   call hlo_create(run, prog, MPI_COMM_WORLD, ierr, msg)
!   call hlo_run(run, [hlo_array_of(u)], [hlo_array_of(unew), hlo_array_of(res)], ierr, msg)
!   call hlo_free(run)      ! collective over the communicator
!   call hlo_free(prog)
!
! Array order: a Fortran array is column-major. hlo_array_of describes it as
! such (HLO_COLUMN_MAJOR), with its dimensions in Fortran order, so element
! a(i, j) is the model's element [i-1, j-1]: a model exported from JAX for
! an array of shape (n1, n2) takes a Fortran array a(n1, n2). The runtime
! reorders the elements on the way in and out (a copy of each argument and
! result of rank 2 or more). Arrays must be contiguous and have the TARGET
! attribute (the runtime reads and writes them through their address).
! Results are always written into the arrays given (their type and shape
! are checked).
module hlo_runtime
  use iso_c_binding
  implicit none
  private

  public :: hlo_program, hlo_runner, hlo_array, hlo_runner_options
  public :: hlo_load, hlo_create, hlo_run, hlo_free, hlo_array_of, hlo_options_default
  public :: hlo_version_string, hlo_profile_text, hlo_write_trace
  public :: HLO_PRED, HLO_S32, HLO_S64, HLO_F32, HLO_F64
  public :: HLO_COLLECTIVES_AUTO, HLO_COLLECTIVES_MPI, HLO_COLLECTIVES_SHM

  integer(c_int), parameter :: HLO_PRED = 1, HLO_S32 = 4, HLO_S64 = 5, HLO_F32 = 11, &
                               HLO_F64 = 12
  integer(c_int), parameter :: HLO_ROW_MAJOR = 0, HLO_COLUMN_MAJOR = 1
  integer(c_int), parameter :: HLO_COLLECTIVES_AUTO = 0, HLO_COLLECTIVES_MPI = 1, &
                               HLO_COLLECTIVES_SHM = 2
  integer, parameter :: HLO_MAX_RANK = 16

  type :: hlo_program
    type(c_ptr) :: handle = c_null_ptr
  end type

  type :: hlo_runner
    type(c_ptr) :: handle = c_null_ptr
  end type

  ! hlo_runner_options_t, field for field, with its defaults (hlo_create
  ! sets struct_size). trace_path and debug_dir are C strings: c_loc of a
  ! character(kind=c_char) array with the TARGET attribute, ending in
  ! c_null_char, that lives until hlo_create returns.
  type, bind(c) :: hlo_runner_options
    integer(c_size_t) :: struct_size = 0
    integer(c_int64_t) :: replicas = 0, partitions = 0
    integer(c_int32_t) :: threads = 0
    integer(c_int) :: collectives = 0
    integer(c_int32_t) :: global_program = 0, no_collective_check = 0
    integer(c_int32_t) :: check_nans = 0, check_infs = 0
    real(c_double) :: stuck_seconds = 30.0d0
    integer(c_int32_t) :: no_fusion_pass = 0
    integer(c_int32_t) :: profile = 0, profile_first_apart = 0
    type(c_ptr) :: trace_path = c_null_ptr
    real(c_double) :: hang_timeout_seconds = 0.0d0
    type(c_ptr) :: debug_dir = c_null_ptr
  end type

  ! One Fortran array for hlo_run (made by hlo_array_of).
  type :: hlo_array
    type(c_ptr) :: data = c_null_ptr
    integer(c_int) :: dtype = 0
    integer(c_int32_t) :: rank = 0
    integer(c_int64_t) :: dims(HLO_MAX_RANK) = 0
  end type

  ! hlo_buffer_t, field for field.
  type, bind(c) :: c_buffer
    integer(c_int) :: dtype
    integer(c_int32_t) :: rank
    type(c_ptr) :: dims
    type(c_ptr) :: data
    integer(c_int) :: order
  end type

  interface hlo_array_of
    module procedure array_of_f32, array_of_f64, array_of_s32, array_of_s64
  end interface

  interface hlo_free
    module procedure free_program, free_runner
  end interface

  interface
    function c_status_message(status) bind(c, name='hlo_status_message') result(msg)
      import :: c_ptr
      type(c_ptr), value :: status
      type(c_ptr) :: msg
    end function
    subroutine c_status_free(status) bind(c, name='hlo_status_free')
      import :: c_ptr
      type(c_ptr), value :: status
    end subroutine
    function c_version() bind(c, name='hlo_version') result(v)
      import :: c_ptr
      type(c_ptr) :: v
    end function
    function c_program_load(path, program) bind(c, name='hlo_program_load') result(st)
      import :: c_ptr, c_char
      character(kind=c_char), intent(in) :: path(*)
      type(c_ptr), intent(out) :: program
      type(c_ptr) :: st
    end function
    subroutine c_program_free(program) bind(c, name='hlo_program_free')
      import :: c_ptr
      type(c_ptr), value :: program
    end subroutine
    function c_runner_create_f(program, comm, options, runner) &
        bind(c, name='hlo_runner_create_f') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: program
      integer(c_int), value :: comm
      type(c_ptr), value :: options
      type(c_ptr), intent(out) :: runner
      type(c_ptr) :: st
    end function
    subroutine c_runner_free(runner) bind(c, name='hlo_runner_free')
      import :: c_ptr
      type(c_ptr), value :: runner
    end subroutine
    function c_runner_run(runner, args, nargs, results, nresults) &
        bind(c, name='hlo_runner_run') result(st)
      import :: c_ptr, c_int32_t
      type(c_ptr), value :: runner, args, results
      integer(c_int32_t), value :: nargs, nresults
      type(c_ptr) :: st
    end function
    function c_profile_text(runner, top, text) bind(c, name='hlo_runner_profile_text') result(st)
      import :: c_ptr, c_int32_t
      type(c_ptr), value :: runner
      integer(c_int32_t), value :: top
      type(c_ptr), intent(out) :: text
      type(c_ptr) :: st
    end function
    function c_write_trace(runner) bind(c, name='hlo_runner_write_trace') result(st)
      import :: c_ptr
      type(c_ptr), value :: runner
      type(c_ptr) :: st
    end function
    subroutine c_text_free(text) bind(c, name='hlo_text_free')
      import :: c_ptr
      type(c_ptr), value :: text
    end subroutine
    function c_strlen(s) bind(c, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function
  end interface

contains

  ! A C string as a Fortran string.
  function from_c(s) result(text)
    type(c_ptr), intent(in) :: s
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    n = int(c_strlen(s))
    call c_f_pointer(s, chars, [n])
    allocate(character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function

  ! ierr = 0 on success, else the status code; errmsg (when given) gets the
  ! message. Frees the status.
  subroutine take_status(st, ierr, errmsg)
    type(c_ptr), intent(in) :: st
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    ierr = 0
    if (present(errmsg)) errmsg = ''
    if (.not. c_associated(st)) return
    ierr = 1
    if (present(errmsg)) errmsg = from_c(c_status_message(st))
    call c_status_free(st)
  end subroutine

  function hlo_version_string() result(v)
    character(len=:), allocatable :: v
    v = from_c(c_version())
  end function

  function hlo_options_default() result(o)
    type(hlo_runner_options) :: o
    o = hlo_runner_options()
  end function

  ! Collective: the per-instruction profile (options%profile) of every
  ! process on the communicator's process 0, "" on the others; top: the
  ! instructions per table (0: 20).
  subroutine hlo_profile_text(runner, top, text, ierr, errmsg)
    type(hlo_runner), intent(in) :: runner
    integer, intent(in) :: top
    character(len=:), allocatable, intent(out) :: text
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    type(c_ptr) :: t
    t = c_null_ptr
    call take_status(c_profile_text(runner%handle, int(top, c_int32_t), t), ierr, errmsg)
    if (ierr == 0) then
      text = from_c(t)
    else
      text = ''
    end if
    call c_text_free(t)
  end subroutine

  ! Collective: process 0 writes the trace (options%trace_path).
  subroutine hlo_write_trace(runner, ierr, errmsg)
    type(hlo_runner), intent(in) :: runner
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    call take_status(c_write_trace(runner%handle), ierr, errmsg)
  end subroutine

  subroutine hlo_load(program, path, ierr, errmsg)
    type(hlo_program), intent(out) :: program
    character(len=*), intent(in) :: path
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    call take_status(c_program_load(trim(path) // c_null_char, program%handle), ierr, errmsg)
  end subroutine

  ! Collective over comm (a Fortran MPI handle: MPI_COMM_WORLD, or a
  ! communicator from MPI_Comm_split).
  subroutine hlo_create(runner, program, comm, ierr, errmsg, options)
    type(hlo_runner), intent(out) :: runner
    type(hlo_program), intent(in) :: program
    integer, intent(in) :: comm
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    type(hlo_runner_options), intent(in), optional :: options
    type(hlo_runner_options), target :: o
    type(c_ptr) :: opts
    opts = c_null_ptr
    if (present(options)) then
      o = options
      o%struct_size = c_sizeof(o)
      opts = c_loc(o)
    end if
    call take_status(c_runner_create_f(program%handle, int(comm, c_int), opts, runner%handle), &
                     ierr, errmsg)
  end subroutine

  ! Collective: one run; results are written into the arrays given.
  subroutine hlo_run(runner, args, results, ierr, errmsg)
    type(hlo_runner), intent(in) :: runner
    type(hlo_array), intent(in) :: args(:), results(:)
    integer, intent(out) :: ierr
    character(len=*), intent(out), optional :: errmsg
    type(c_buffer), allocatable, target :: cargs(:), cresults(:)
    integer(c_int64_t), allocatable, target :: dims(:, :)
    integer :: i, n
    logical :: scattered
    ! A non-contiguous array is not refused here: that would be an error on
    ! this process alone while the others wait in the run. It goes to the
    ! runtime in a form it refuses (no data; a result also with no type, so
    ! nothing is allocated), which makes the run fail on every process.
    scattered = .false.
    n = size(args) + size(results)
    allocate(cargs(max(size(args), 1)), cresults(max(size(results), 1)))
    allocate(dims(HLO_MAX_RANK, max(n, 1)))
    do i = 1, size(args)
      dims(:, i) = args(i)%dims
      cargs(i) = c_buffer(args(i)%dtype, args(i)%rank, c_loc(dims(1, i)), args(i)%data, &
                          HLO_COLUMN_MAJOR)
      if (.not. c_associated(args(i)%data) .and. product(args(i)%dims(1:args(i)%rank)) > 0) &
        scattered = .true.
    end do
    do i = 1, size(results)
      dims(:, size(args) + i) = results(i)%dims
      cresults(i) = c_buffer(results(i)%dtype, results(i)%rank, c_loc(dims(1, size(args) + i)), &
                             results(i)%data, HLO_COLUMN_MAJOR)
      if (.not. c_associated(results(i)%data)) then
        ! Empty: any address (nothing is written), so the runtime does not
        ! allocate a result Fortran would never free. Not contiguous: also
        ! no type, which the runtime's check refuses.
        cresults(i)%data = c_loc(dims(1, size(args) + i))
        if (product(results(i)%dims(1:results(i)%rank)) > 0) then
          cresults(i)%dtype = 0
          scattered = .true.
        end if
      end if
    end do
    call take_status(c_runner_run(runner%handle, c_loc(cargs), int(size(args), c_int32_t), &
                                  c_loc(cresults), int(size(results), c_int32_t)), ierr, errmsg)
    if (ierr /= 0 .and. scattered .and. present(errmsg)) &
      errmsg = trim(errmsg) // ' (on this process an array given to hlo_run is not contiguous)'
  end subroutine

  subroutine free_program(program)
    type(hlo_program), intent(inout) :: program
    call c_program_free(program%handle)
    program%handle = c_null_ptr
  end subroutine

  subroutine free_runner(runner)
    type(hlo_runner), intent(inout) :: runner
    call c_runner_free(runner%handle)
    runner%handle = c_null_ptr
  end subroutine

  ! The descriptions of a contiguous array of any rank. A non-contiguous one
  ! (an array section with strides) gets no data, which hlo_run reports for
  ! results and hlo_runner_run for arguments. The dummy has no INTENT on
  ! purpose: with INTENT(IN), gfortran -O3 takes the array as unchanged by
  ! the later hlo_run that writes it through this address, and reads stale
  ! values (the embedding test builds the examples at -O3).
  function array_of_f32(a) result(d)
    real(c_float), dimension(..), target :: a
    type(hlo_array) :: d
    d%dtype = HLO_F32
    d%rank = int(rank(a), c_int32_t)
    d%dims(1:rank(a)) = shape(a, kind=c_int64_t)
    if (is_contiguous(a) .and. size(a) > 0) d%data = c_loc(a)
  end function

  function array_of_f64(a) result(d)
    real(c_double), dimension(..), target :: a
    type(hlo_array) :: d
    d%dtype = HLO_F64
    d%rank = int(rank(a), c_int32_t)
    d%dims(1:rank(a)) = shape(a, kind=c_int64_t)
    if (is_contiguous(a) .and. size(a) > 0) d%data = c_loc(a)
  end function

  function array_of_s32(a) result(d)
    integer(c_int32_t), dimension(..), target :: a
    type(hlo_array) :: d
    d%dtype = HLO_S32
    d%rank = int(rank(a), c_int32_t)
    d%dims(1:rank(a)) = shape(a, kind=c_int64_t)
    if (is_contiguous(a) .and. size(a) > 0) d%data = c_loc(a)
  end function

  function array_of_s64(a) result(d)
    integer(c_int64_t), dimension(..), target :: a
    type(hlo_array) :: d
    d%dtype = HLO_S64
    d%rank = int(rank(a), c_int32_t)
    d%dims(1:rank(a)) = shape(a, kind=c_int64_t)
    if (is_contiguous(a) .and. size(a) > 0) d%data = c_loc(a)
  end function
end module hlo_runtime
