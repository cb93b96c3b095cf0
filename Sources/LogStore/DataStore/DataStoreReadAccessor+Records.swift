public import LogStoreEngine

// Default implementations of record-level access for stores that do not offer it: every call
// throws `.unsupported`, so a backend written before these requirements existed still compiles,
// and a tool that needs them (BackendMigrator, DynamicItem) fails with a clear error instead.

extension DataStoreReadAccessor {
    /// Throws `.unsupported`: this store cannot list its item types.
    public func itemTypeNames() throws -> [String] {
        throw LogStoreError.unsupportedRecordAccess("list its item types")
    }

    /// Throws `.unsupported`: this store does not offer record-level access.
    public func forEachRecord(
        ofType itemType: String, after key: RecordKey?,
        _ body: (RecordKey, ArraySlice<UInt8>) throws -> Bool
    ) throws {
        throw LogStoreError.unsupportedRecordAccess("read records without their Swift types")
    }

    /// Counts the records ``forEachRecord(ofType:after:_:)`` hands out (a backend that can count
    /// faster implements this itself).
    public func recordCount(ofType itemType: String) throws -> Int {
        var n = 0
        try forEachRecord(ofType: itemType, after: nil) { _, _ in
            n += 1
            return true
        }
        return n
    }

    /// Throws `.unsupported`: this store does not offer record-level access.
    public func record(ofType itemType: String, key: RecordKey) throws -> [UInt8]? {
        throw LogStoreError.unsupportedRecordAccess("read records without their Swift types")
    }
}

extension DataStoreReadWriteAccessor {
    /// Throws `.unsupported`: this store does not offer record-level access.
    public func putRecord(ofType itemType: String, key: RecordKey, value: [UInt8]) throws {
        throw LogStoreError.unsupportedRecordAccess("write records without their Swift types")
    }

    /// Throws `.unsupported`: this store does not offer record-level access.
    @discardableResult
    public func deleteRecord(ofType itemType: String, key: RecordKey) throws -> Bool {
        throw LogStoreError.unsupportedRecordAccess("delete records without their Swift types")
    }

    /// Deletes the records of `itemType` one by one: pages of keys read with
    /// ``DataStoreReadAccessor/forEachRecord(ofType:after:_:)``, each deleted with
    /// ``deleteRecord(ofType:key:)`` after its page was read. Throws what they throw.
    @discardableResult
    public func deleteAllRecords(ofType itemType: String) throws -> Int {
        var deleted = 0
        while true {
            var keys: [RecordKey] = []
            try forEachRecord(ofType: itemType, after: nil) { key, _ in
                keys.append(key)
                return keys.count < 10_000
            }
            var progressed = false
            for key in keys where try deleteRecord(ofType: itemType, key: key) {
                deleted += 1
                progressed = true
            }
            // (A store that lists records it cannot delete would otherwise loop here.)
            if !progressed { return deleted }
        }
    }
}

extension LogStoreError {
    /// The error of the default record-level methods: the store's accessor cannot `what`.
    static func unsupportedRecordAccess(_ what: String) -> LogStoreError {
        LogStoreError(
            .unsupported,
            "This store's accessor cannot \(what): its DataStore implementation does not offer record-level access "
                + "(DataStoreReadAccessor.itemTypeNames/forEachRecord/record, DataStoreReadWriteAccessor.putRecord/deleteRecord). "
                + "Implement them in the backend, or give the item types to the tool explicitly.")
    }

    /// Checks that `value` is exactly one value of the attribute grammar, so that a record written
    /// with `putRecord` always reads back. Throws `.corruption` naming the offset otherwise.
    package static func checkRecordValue(_ value: [UInt8]) throws {
        let range = try value.withUnsafeBytes { try AttributeValue.valueRange(at: [], in: $0) }
        guard let range, range == 0..<value.count else {
            throw LogStoreError(
                .corruption,
                "The record value is not one attribute value (\(value.count) bytes, \(value.count - (range?.count ?? 0)) of them left over). Pass the bytes a store's forEachRecord handed out."
            )
        }
    }
}
