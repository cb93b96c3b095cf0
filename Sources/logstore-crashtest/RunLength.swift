import ArgumentParser

/// How long a crash-test driver runs and from which seed: the options `kill` and `group-commit`
/// share.
struct RunLength: ParsableArguments {
    @Option(help: "Crash cycles to run (default 100 unless --seconds is given).")
    var cycles: Int?

    @Option(help: "Run for this many seconds (and at most --cycles cycles if both are given).")
    var seconds: Double?

    @Option(help: "The run's seed (default: random; printed).")
    var seed: UInt64?

    /// The cycle limit: `--cycles`, else 100 without `--seconds`, else unlimited.
    var cycleLimit: Int { cycles ?? (seconds == nil ? 100 : Int.max) }
}
