public import ArgumentParser

/// How progress is shown on stderr.
public enum ProgressMode: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// A line redrawn in place (`\r`) when stderr is a terminal, plain lines otherwise.
    case auto
    /// One line per 10% step (for logs and CI).
    case plain
    /// No progress output.
    case none
}

/// Options every command takes.
public struct CommonOptions: ParsableArguments, Sendable {
    /// Print one JSON document (dump: JSON lines) on stdout instead of text.
    @Flag(name: .long, help: "Print machine-readable JSON on stdout (errors too, as {\"error\": ...}).")
    public var json = false

    /// Progress display on stderr.
    @Option(name: .long, help: "Progress on stderr: auto (redrawn line on a terminal, plain lines otherwise), plain, none.")
    public var progress: ProgressMode = .auto

    /// Creates the defaults (text output, automatic progress).
    public init() {}
}
