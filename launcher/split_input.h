// hlo-launch --split-input-file FILE.mlir: runs each `// -----` case of a
// StableHLO file as its own job (each case may ask for its own grid), as
// upstream's stablehlo-translate --interpret -split-input-file does.
#ifndef HL_LAUNCHER_SPLIT_INPUT_H_
#define HL_LAUNCHER_SPLIT_INPUT_H_

#include "launcher/options.h"

// Returns the exit status: 0 when every case passed, 1 otherwise (2 when
// the file cannot be read).
int hl_split_input_main(const hl_launch_options_t *options, int argc, char **argv);

#endif  // HL_LAUNCHER_SPLIT_INPUT_H_
