extension PrimaryDelta {
    /// See ``LayeredValue/writePayload(isDelta:to:)``: a base run's location, or a delta run's
    /// change byte and location.
    @inline(__always)
    package func writePayload(isDelta: Bool, to p: UnsafeMutableRawPointer) {
        if isDelta {
            p.storeBytes(of: change, as: UInt8.self)
            RunLocationCoding.write(location, to: p + 1)
        } else {
            RunLocationCoding.write(location, to: p)
        }
    }

    /// See ``LayeredValue/with(change:)``.
    package func with(change: UInt8) -> PrimaryDelta {
        var copy = self
        copy.change = change
        return copy
    }
}

extension SecondaryDelta {
    /// See ``LayeredValue/writePayload(isDelta:to:)``: nothing in a base run, the change byte in
    /// a delta run.
    @inline(__always)
    package func writePayload(isDelta: Bool, to p: UnsafeMutableRawPointer) {
        if isDelta { p.storeBytes(of: change, as: UInt8.self) }
    }

    /// See ``LayeredValue/with(change:)``.
    package func with(change: UInt8) -> SecondaryDelta { SecondaryDelta(change: change) }
}

extension LayeredIndex {
    /// Writes every visible entry, in key order, to `writer` (a base run of this index's kind).
    /// Reads every page of the runs. Throws the runs' `.corruption` and the writer's errors.
    func writeBase(to writer: RunWriter, kind: RunKind) throws {
        try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { buffer in
            guard let p = buffer.baseAddress else { return }
            try forEach(from: nil) { key, value in
                value.writePayload(isDelta: false, to: p)
                try writer.append(key: key, payload: UnsafeRawBufferPointer(start: p, count: kind.payloadSize))
                return true
            }
        }
    }

    /// Writes the delta run that replaces this index's delta run: the tree merged over it, each
    /// entry's change worked out against the base alone. Requires a base. Throws the runs'
    /// `.corruption` and the writer's errors.
    func writeDelta(to writer: RunWriter, kind: RunKind) throws {
        let t = DeltaCursor(tree)
        t.seek(atLeast: nil)
        let d = try deltaRun.map { try $0.cursor(from: nil) }
        let treeKey = ScratchBytes()
        try withUnsafeTemporaryAllocation(byteCount: 32, alignment: 8) { buffer in
            guard let p = buffer.baseAddress else { return }
            func emit(_ key: UnsafeRawBufferPointer, _ value: V) throws {
                value.writePayload(isDelta: true, to: p)
                try writer.append(key: key, payload: UnsafeRawBufferPointer(start: p, count: kind.payloadSize))
            }
            while t.isValid || (d?.isValid ?? false) {
                if t.isValid { t.key.withBytes { treeKey.set($0) } }
                let order: Int
                if let d, d.isValid {
                    order = t.isValid ? RunKeys.compare(treeKey.bytes, d.key) : 1
                } else {
                    order = -1
                }
                if order > 0, let d {
                    // Only the delta run has it: its change is already against the base.
                    try emit(d.key, V.run(payload: d.payload, isDelta: true))
                    try d.next()
                    continue
                }
                var value = t.value
                if order == 0, let d {
                    // Both: the tree's change is against the base and the delta run together.
                    let below = V.run(payload: d.payload, isDelta: true)
                    let inBase = below.change != RunChange.newKey
                    if value.isTombstone {
                        if inBase { try emit(treeKey.bytes, value) }
                    } else if !inBase || V.carriesPayload {
                        // Present again over a base entry: a replacement (a new location), or
                        // for an entry without payload simply the base's entry (nothing to write).
                        value = value.with(change: inBase ? 0 : RunChange.newKey)
                        try emit(treeKey.bytes, value)
                    }
                    try d.next()
                } else {
                    try emit(treeKey.bytes, value)
                }
                t.next()
            }
        }
    }

    /// The run layout for this index's keys: fixed when every layer's keys have one width.
    func runLayout(primary: Bool) -> RunLayout {
        guard primary else { return .variable }
        let layouts = [base?.header.layout, deltaRun?.header.layout].compactMap { $0 }
        if K.self == Key8.self, layouts.allSatisfy({ $0 == .fixed8 }), count > 0 { return .fixed8 }
        if K.self == ShortKey.self, layouts.allSatisfy({ $0 == .fixed16 }), count > 0 {
            var all16 = true
            tree.forEach { k, _ in
                all16 = k.withBytes { $0.count == 16 }
                return all16
            }
            if all16 { return .fixed16 }
        }
        return .variable
    }
}

extension TypeIndex {
    /// Writes this index as a run through `sink`: a base run of every entry, or with `delta` the
    /// delta run that replaces its delta run (its changes since the base; it must have a base).
    /// The run's pages are sealed with `cipher` when one is given (an encrypted store's; nil: a
    /// clear run). Returns the run's header. Reads the runs it merges (`.corruption` if damaged)
    /// and throws the sink's and the cipher's errors.
    package func writeRun(
        delta: Bool, storeId: StoreID, runNumber: UInt32, sequence: UInt64, cipher: (any StoreCipher)? = nil, sink: any RunSink
    ) throws -> RunHeader {
        func write<K>(_ l: LayeredIndex<K, PrimaryDelta>) throws -> RunHeader {
            let kind: RunKind = delta ? .primaryDelta : .primaryBase
            let w = try RunWriter(
                header: RunHeader(
                    storeId: storeId, runNumber: runNumber, kind: kind, layout: l.runLayout(primary: true), sequence: sequence),
                sink: sink, cipher: cipher)
            if delta { try l.writeDelta(to: w, kind: kind) } else { try l.writeBase(to: w, kind: kind) }
            return try w.finish()
        }
        switch storage {
        case .key8(let l): return try write(l)
        case .short(let l): return try write(l)
        case .long(let l): return try write(l)
        }
    }
}

extension SecondaryEntries {
    /// ``TypeIndex/writeRun(delta:storeId:runNumber:sequence:cipher:sink:)`` for secondary entries.
    package func writeRun(
        delta: Bool, storeId: StoreID, runNumber: UInt32, sequence: UInt64, cipher: (any StoreCipher)? = nil, sink: any RunSink
    ) throws -> RunHeader {
        func write<K>(_ l: LayeredIndex<K, SecondaryDelta>) throws -> RunHeader {
            let kind: RunKind = delta ? .secondaryDelta : .secondaryBase
            let w = try RunWriter(
                header: RunHeader(storeId: storeId, runNumber: runNumber, kind: kind, layout: .variable, sequence: sequence), sink: sink,
                cipher: cipher)
            if delta { try l.writeDelta(to: w, kind: kind) } else { try l.writeBase(to: w, kind: kind) }
            return try w.finish()
        }
        switch self {
        case .narrow(let l): return try write(l)
        case .wide(let l): return try write(l)
        case .long(let l): return try write(l)
        }
    }
}
