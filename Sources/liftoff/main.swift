import LiftoffCLI

// A synchronous entry point keeps the OS main thread running the program.
LiftoffCommand.prepareProcess()
LiftoffCommand.main()
