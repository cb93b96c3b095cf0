/// One check of the DataStore contract: a name, the rule it checks (the numbered rules of the
/// Concurrency, Requests and Child Stores articles), what the backend must offer for it to apply,
/// and its body.
///
/// Values; run one with ``run(on:report:)`` (or all with ``DataStoreConformance/run(_:on:report:)``).
/// Usable as the arguments of a parameterized swift-testing test, so each case is reported on its
/// own (see ``DataStoreConformance``).
public struct ConformanceCase: Sendable, CustomStringConvertible {
    /// How the body runs: synchronous bodies get a thread of their own (they block on
    /// semaphores and call the blocking API); asynchronous ones run on the caller's task.
    enum Body: Sendable {
        case sync(@Sendable (ConformanceContext) throws -> Void)
        case async(@Sendable (ConformanceContext) async throws -> Void)
    }

    /// A unique name, `area.what`: `concurrency.readSeesOneSnapshot`.
    public let name: String
    /// The rule it checks, in words (with the article and rule number when there is one).
    public let rule: String
    /// What the backend must offer; the case is skipped on backends that do not.
    public let requires: DataStoreCapabilities
    let body: Body

    init(
        _ name: String, _ rule: String, requires: DataStoreCapabilities = [],
        _ body: @escaping @Sendable (ConformanceContext) throws -> Void
    ) {
        self.name = name
        self.rule = rule
        self.requires = requires
        self.body = .sync(body)
    }

    init(
        async name: String, _ rule: String, requires: DataStoreCapabilities = [],
        _ body: @escaping @Sendable (ConformanceContext) async throws -> Void
    ) {
        self.name = name
        self.rule = rule
        self.requires = requires
        self.body = .async(body)
    }

    /// The name.
    public var description: String { name }
}
