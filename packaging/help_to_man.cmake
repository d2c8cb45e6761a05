# Writes a man page (roff) from a tool's --help text, so the page says what
# the binary says. cmake -DTOOL=<binary> -DNAME=hlo-launch -DSUMMARY="..."
#   -DVERSION=0.1.0 -DOUT=<file> [-DEMULATOR=<program|arg|...>] -P help_to_man.cmake
# -DEMULATOR=<program|arg|...>: what runs TOOL when it was cross-compiled.
string(REPLACE "|" ";" emulator "${EMULATOR}")
execute_process(COMMAND ${emulator} ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
if(NOT help)
  message(FATAL_ERROR "${TOOL} --help printed nothing (exit ${rc})")
endif()
# roff: a leading '.' or '\'' starts a request, '\' escapes.
string(REPLACE "\\" "\\e" help "${help}")
string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" help "${help}")
string(TOUPPER "${NAME}" upper)
file(WRITE ${OUT} ".TH ${upper} 1 \"\" \"${NAME} ${VERSION}\" \"User Commands\"
.SH NAME
${NAME} \\- ${SUMMARY}
.SH DESCRIPTION
The text of \\fB${NAME} \\-\\-help\\fR:
.PP
.nf
${help}.fi
.SH SEE ALSO
hlo-launch(1), hlo-convert(1); the project's README.md and docs/ (docs/EMBEDDING.md for
libhlo_runtime, the C and Fortran API).
")
