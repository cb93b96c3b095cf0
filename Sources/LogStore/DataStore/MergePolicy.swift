/// How ``DataStore/merge(_:policy:)`` resolves an item changed both in the child and, after the
/// child's base snapshot, in the parent.
public enum MergePolicy: Sendable, Hashable {
    /// The child's version (or deletion) wins. The default.
    case childWins
    /// The parent's current version (or deletion) is kept; the child's change to that item is dropped.
    case parentWins
    /// The merge throws `LogStoreError/Code/mergeConflict` listing the conflicting items, and
    /// changes nothing.
    case failOnConflict
}
