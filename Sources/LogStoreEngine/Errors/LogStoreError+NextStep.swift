extension LogStoreError {
    /// What to run after a `.corruption` refusal, appended to every such message from opening or
    /// reading a store (Docs/CLI.md): look first, then copy what is intact.
    static let corruptionNextStep =
        "Run `logstore-compact verify STORE` for a full report, then `logstore-compact salvage STORE NEW-STORE` to copy every intact transaction into a new store."

    /// This error, with ``corruptionNextStep`` appended to its message if it is a `.corruption`
    /// error whose message does not name `salvage` yet.
    func withCorruptionNextStep() -> LogStoreError {
        guard code == .corruption, !message.contains("salvage") else { return self }
        var e = self
        e.message += (e.message.hasSuffix(".") ? " " : ". ") + Self.corruptionNextStep
        return e
    }
}
