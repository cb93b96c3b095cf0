import ArgumentParser

/// How long a crash-test driver runs and from which seed: the options `kill`, `group-commit` and
/// `powerloss` share.
struct RunLength: ParsableArguments {
    @Option(help: "Crash cycles to run (default: 100 for kill and group-commit, 1000 for powerloss, unless --seconds is given).")
    var cycles: Int?

    @Option(help: "Run for this many seconds (and at most --cycles cycles if both are given).")
    var seconds: Double?

    @Option(help: "The run's seed (default: random; printed).")
    var seed: UInt64?

    /// The cycle limit: `--cycles`, else `default` without `--seconds`, else unlimited.
    func cycleLimit(default n: Int = 100) -> Int { cycles ?? (seconds == nil ? n : Int.max) }
}
