/// Applying a committed transaction to the index as one batch.
extension IndexState {
    /// Applies `ops` in order, `placements[i]` the location of put `i`: per run of operations on
    /// one type, its tree is taken out of the dictionary once (so it is uniquely held and updated
    /// in place) and put back once, instead of a dictionary access per record. A commit's
    /// operations come per type, sorted by key, so a transaction's records touch neighbouring
    /// leaves. Does not change ``sequence``; secondary entries other than a delete-all's are the
    /// caller's (``secondaryChanges(for:readOld:)``). Throws `.corruption` when a run it must
    /// consult (is the key below the tree?) is damaged; the state is then partly changed. The
    /// locations it replaces or removes are counted in `dead`.
    mutating func apply(_ ops: [RecordOperation], placements: [RecordLocation], dead: inout DeadBytes) throws {
        var i = 0
        while i < ops.count {
            let type = ops[i].type
            var tree = types.removeValue(forKey: type)
            while i < ops.count && ops[i].type == type {
                switch ops[i] {
                case .put(_, let k, _):
                    if tree == nil { tree = .init() }
                    dead.add(try tree?.updateValue(placements[i], forKey: k), type: type, key: k)
                case .delete(_, let k):
                    dead.add(try tree?.removeValue(forKey: k), type: type, key: k)
                case .deleteAll:
                    // (Also empties the type's secondary indexes.)
                    if tree != nil { dead.unknown = true }
                    deleteAll(type, dead: &dead)
                    tree = nil
                }
                i += 1
            }
            if let tree, !tree.isEmpty { types[type] = tree }
        }
    }
}
