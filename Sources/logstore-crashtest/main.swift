// logstore-crashtest: crash-recovery testing for LogStore (Docs/Testing.md, "Crash recovery").
LogStoreCrashTest.main()
