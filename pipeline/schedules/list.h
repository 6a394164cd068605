// The built-in schedules, one line each: SLOWPIPE_SCHEDULE(f) names the
// function `ScheduleEntry f()` defined in pipeline/schedules/<file>.cpp.
// Adding a schedule = one file in this folder (CMake picks it up) + one line here.
SLOWPIPE_SCHEDULE(gpipe_schedule)
SLOWPIPE_SCHEDULE(one_f_one_b_schedule)
SLOWPIPE_SCHEDULE(interleaved_1f1b_schedule)
SLOWPIPE_SCHEDULE(zb_h1_schedule)
