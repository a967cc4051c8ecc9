#pragma once

namespace tessera {

// Blocks SIGINT and SIGTERM in the calling thread and every thread it
// creates afterwards. Call first thing in main().
void BlockTerminationSignals();
// Waits for SIGINT or SIGTERM (blocked beforehand); returns the signal.
int WaitForTerminationSignal();

}  // namespace tessera
