/// The defines a state of the store knows (Docs/FileFormat.md, "Define records"): item types by
/// id and by name, and compression dictionaries by id with the one each type compresses with now.
///
/// A value type, part of every ``IndexState``: a snapshot sees the defines of its own version.
/// Built by replay (each define record, in log order) and from a checkpoint; grown by commits that
/// name a new type and by the recompression pass that trains a dictionary; shrunk by compaction
/// when nothing uses a define any more. Defines are immutable: an id never changes meaning while
/// anything in the log refers to it (``apply(_:record:location:)`` refuses a second define of an
/// id with another content as corruption).
package struct MetaTable: Sendable, Equatable {
    /// The tables, behind one immutable reference: every snapshot copies its state's meta table,
    /// and one retain is cheaper than one per table. A change builds a new box (defines are rare).
    private struct Tables: Sendable {
        /// Type names by id: `smallNames[id]` for ids below ``smallIDs`` (a read compares a
        /// record's type id with its type through one array access), `largeNames` above.
        var smallNames: [String?] = []
        var largeNames: [UInt32: String] = [:]
        var ids: [String: UInt32] = [:]
        /// Dictionaries by id.
        var dictionaries: [UInt32: DictionaryRef] = [:]
        /// Per type id: the dictionary new compression of the type uses.
        var current: [UInt32: UInt32] = [:]
        /// Key epochs by id (an encrypted store's).
        var epochs: [UInt32: KeyEpoch] = [:]
        /// The store's record keys (nil: a store in the clear).
        var cipher: RecordCipher? = nil
    }

    private final class Box: Sendable {
        let tables: Tables
        init(_ tables: Tables) { self.tables = tables }
    }

    private static let empty = Box(Tables())
    private var box = MetaTable.empty

    private var smallNames: [String?] {
        get { box.tables.smallNames }
        set { change { $0.smallNames = newValue } }
    }
    private var largeNames: [UInt32: String] {
        get { box.tables.largeNames }
        set { change { $0.largeNames = newValue } }
    }
    private var ids: [String: UInt32] {
        get { box.tables.ids }
        set { change { $0.ids = newValue } }
    }
    private var dictionaries: [UInt32: DictionaryRef] {
        get { box.tables.dictionaries }
        set { change { $0.dictionaries = newValue } }
    }
    private var current: [UInt32: UInt32] {
        get { box.tables.current }
        set { change { $0.current = newValue } }
    }
    private var epochs: [UInt32: KeyEpoch] {
        get { box.tables.epochs }
        set { change { $0.epochs = newValue } }
    }

    /// The store's record keys: nil for a store in the clear. Set once at open
    /// (``attach(_:)``); every copy of the table carries it, so that whatever reads or writes
    /// records with a view's defines can open and seal them.
    package var cipher: RecordCipher? { box.tables.cipher }

    /// Sets the store's record keys (recovery, at open, before it replays).
    package mutating func attach(_ cipher: RecordCipher?) { change { $0.cipher = cipher } }

    private mutating func change(_ body: (inout Tables) -> Void) {
        var t = box.tables
        body(&t)
        box = Box(t)
    }

    private static let smallIDs: UInt32 = 4096

    package init() {}

    /// The id of type `name`, if it has one.
    @inline(__always)
    package func typeID(named name: String) -> UInt32? { ids[name] }

    /// The name of type `id`, if it is defined.
    @inline(__always)
    package func typeName(_ id: UInt32) -> String? {
        if id < Self.smallIDs { return Int(id) < smallNames.count ? smallNames[Int(id)] : nil }
        return largeNames[id]
    }

    /// Every type id with its name, ascending by id.
    package var types: [(id: UInt32, name: String)] {
        ids.map { ($0.value, $0.key) }.sorted { $0.id < $1.id }
    }

    /// Every dictionary, ascending by id.
    package var allDictionaries: [DictionaryRef] { dictionaries.values.sorted { $0.id < $1.id } }

    /// The dictionary `id`, if it is defined.
    package func dictionary(_ id: UInt32) -> DictionaryRef? { dictionaries[id] }

    /// The dictionary type `id` compresses with now, if it has one.
    package func currentDictionary(ofType id: UInt32) -> DictionaryRef? { current[id].flatMap { dictionaries[$0] } }

    /// The id the next new type gets: one more than the largest defined.
    package var nextTypeID: UInt32 {
        let largest = max(UInt32(smallNames.count) &- 1, largeNames.keys.max() ?? 0)
        return smallNames.isEmpty && largeNames.isEmpty ? 1 : largest &+ 1
    }

    /// The id the next new dictionary gets: one more than the largest defined.
    package var nextDictionaryID: UInt32 { (dictionaries.keys.max() ?? 0) &+ 1 }

    /// Whether nothing is defined.
    package var isEmpty: Bool { ids.isEmpty && dictionaries.isEmpty && epochs.isEmpty }

    /// The key epoch `id`, if it is defined.
    package func epoch(_ id: UInt32) -> KeyEpoch? { epochs[id] }

    /// Every key epoch, ascending by id.
    package var allEpochs: [KeyEpoch] { epochs.values.sorted { $0.id < $1.id } }

    /// The id a new key epoch gets: one more than the largest defined.
    package var nextEpochID: UInt32 { (epochs.keys.max() ?? 0) &+ 1 }

    /// Defines key epoch `epoch` (its MAC checked by the caller). A later define of the same id
    /// replaces an earlier one: an epoch id is given again only after compaction dropped every
    /// record of the old epoch, and a record always follows its own epoch's define in the log.
    package mutating func defineEpoch(_ epoch: KeyEpoch) {
        if let known = epochs[epoch.id], known == epoch, epoch.location == nil { return }
        epochs[epoch.id] = epoch
    }

    /// Defines type `id` as `name`. Throws `.corruption` when either is defined otherwise already
    /// (a log that gives one id two meanings, or one type two ids).
    package mutating func defineType(_ id: UInt32, name: String) throws {
        if let known = typeName(id) {
            guard known == name else { throw LogStoreError(.corruption, "Type id \(id) is defined twice, with two different names.") }
            return
        }
        guard ids[name] == nil, id != 0 else {
            throw LogStoreError(.corruption, "An item type is defined twice, with ids \(ids[name] ?? 0) and \(id).")
        }
        ids[name] = id
        if id < Self.smallIDs {
            if Int(id) >= smallNames.count { smallNames.append(contentsOf: repeatElement(nil, count: Int(id) + 1 - smallNames.count)) }
            smallNames[Int(id)] = name
        } else {
            largeNames[id] = name
        }
    }

    /// Defines dictionary `dictionary` (and makes it its type's current one when `current`, or
    /// when it is the type's newest). Throws `.corruption` when its id is defined with other
    /// content, or its type is not defined.
    package mutating func defineDictionary(_ dictionary: DictionaryRef, current makeCurrent: Bool? = nil) throws {
        guard typeName(dictionary.typeID) != nil else {
            throw LogStoreError(.corruption, "Dictionary \(dictionary.id) belongs to type id \(dictionary.typeID), which is not defined.")
        }
        if let known = dictionaries[dictionary.id] {
            guard known.typeID == dictionary.typeID, known.bytes == dictionary.bytes else {
                throw LogStoreError(.corruption, "Dictionary id \(dictionary.id) is defined twice, with two different contents.")
            }
            // The same define seen again (compaction copied it): keep the newer location.
            dictionaries[dictionary.id] = dictionary
            return
        }
        dictionaries[dictionary.id] = dictionary
        if makeCurrent ?? (current[dictionary.typeID].map { dictionary.id > $0 } ?? true) {
            current[dictionary.typeID] = dictionary.id
        }
    }

    /// Applies the define record `fields` (parsed from `record`, the record's clear bytes: opened
    /// first when sealed) found at `location`. Throws `.corruption` as ``defineType(_:name:)``
    /// and ``defineDictionary(_:current:)`` do, and for a key epoch whose MAC is not the store
    /// key's or that a store in the clear holds.
    package mutating func apply(_ fields: RecordCodec.Fields, record: UnsafeRawBufferPointer, location: RecordLocation) throws {
        guard !fields.sealed else { throw LogStoreError(.corruption, "A sealed define read without opening it.") }
        let content = UnsafeRawBufferPointer(rebasing: record[fields.content])
        switch fields.defineKind {
        case .type?:
            try defineType(fields.defineID, name: String(decoding: content, as: UTF8.self))
        case .dictionary?:
            try defineDictionary(DictionaryRef(id: fields.defineID, typeID: fields.typeID, bytes: Array(content), location: location))
        case .keyEpoch?:
            guard let cipher else {
                throw LogStoreError(.corruption, "A key epoch define in a store that is not encrypted.")
            }
            let salt = Array(content[0..<StoreCrypto.saltByteCount])
            let mac = Array(content[StoreCrypto.saltByteCount...])
            guard try cipher.verify(epoch: fields.defineID, salt: salt, mac: mac) else {
                throw LogStoreError(.corruption, "Key epoch \(fields.defineID)'s define does not carry the store key's MAC.")
            }
            defineEpoch(KeyEpoch(id: fields.defineID, salt: salt, mac: mac, location: location))
        case nil:
            throw LogStoreError(.corruption, "A define of a kind this build does not read.")
        }
    }

    /// Records that dictionary `id`'s define record is now at `location` (compaction moved it).
    package mutating func relocate(dictionary id: UInt32, to location: RecordLocation) {
        if let d = dictionaries[id] { dictionaries[id] = d.moved(to: location) }
    }

    /// Forgets every define that `keep` does not name (compaction, once no record uses them).
    /// A type's current dictionary is dropped only with the dictionary.
    package mutating func retain(_ keep: DefineRefs) {
        for (name, id) in ids where !keep.types.contains(id) {
            ids[name] = nil
            if id < Self.smallIDs { smallNames[Int(id)] = nil } else { largeNames[id] = nil }
        }
        while let last = smallNames.last, last == nil { smallNames.removeLast() }
        for id in dictionaries.keys where !keep.dictionaries.contains(id) { dictionaries[id] = nil }
        for (type, id) in current where dictionaries[id] == nil || typeName(type) == nil { current[type] = nil }
        for id in epochs.keys where !keep.epochs.contains(id) { epochs[id] = nil }
    }

    /// Records that key epoch `id`'s define record is now at `location` (compaction moved it).
    package mutating func relocate(epoch id: UInt32, to location: RecordLocation) {
        if var e = epochs[id] {
            e.location = location
            epochs[id] = e
        }
    }

    /// Every define this table holds, as references.
    package var allRefs: DefineRefs {
        DefineRefs(types: Set(ids.values), dictionaries: Set(dictionaries.keys), epochs: Set(epochs.keys))
    }

    /// The ids of the current dictionaries.
    package var currentDictionaryIDs: Set<UInt32> { Set(current.values) }

    package static func == (a: MetaTable, b: MetaTable) -> Bool {
        a.ids == b.ids && a.current == b.current && a.dictionaries.keys == b.dictionaries.keys
            && a.dictionaries.allSatisfy { b.dictionaries[$0.key]?.bytes == $0.value.bytes } && a.epochs == b.epochs
    }
}

/// The defines some records use: the ids of their types and dictionaries. Kept per segment
/// (``SegmentInfo``), so that compaction knows which defines the segments it keeps still need.
package struct DefineRefs: Sendable, Equatable {
    package var types: Set<UInt32> = []
    package var dictionaries: Set<UInt32> = []
    /// Key epochs (sealed records of an encrypted store).
    package var epochs: Set<UInt32> = []

    package init(types: Set<UInt32> = [], dictionaries: Set<UInt32> = [], epochs: Set<UInt32> = []) {
        self.types = types
        self.dictionaries = dictionaries
        self.epochs = epochs
    }

    /// Adds what a record with these fields uses.
    @inline(__always)
    package mutating func note(_ fields: RecordCodec.Fields) {
        if fields.sealed { epochs.insert(fields.epoch) }
        switch fields.op {
        case .put:
            types.insert(fields.typeID)
            if fields.codec == .lz4Dictionary { dictionaries.insert(fields.dictionaryID) }
        case .delete, .deleteAll:
            types.insert(fields.typeID)
        case .define:
            if fields.defineKind == .dictionary { types.insert(fields.typeID) }
        }
    }

    /// Both sets together.
    package mutating func formUnion(_ other: DefineRefs) {
        types.formUnion(other.types)
        dictionaries.formUnion(other.dictionaries)
        epochs.formUnion(other.epochs)
    }

    /// Both sets together.
    package func union(_ other: DefineRefs) -> DefineRefs {
        var u = self
        u.formUnion(other)
        return u
    }

    /// Whether every id of `other` is here.
    package func contains(_ other: DefineRefs) -> Bool {
        other.types.isSubset(of: types) && other.dictionaries.isSubset(of: dictionaries) && other.epochs.isSubset(of: epochs)
    }
}

/// One compression dictionary: its id, its type and its bytes (at most 64 KiB, held in memory
/// while a define names it), with the LZ4 states that compress with it built on first use.
/// Immutable apart from those states, which it guards itself; shared by every view that knows it.
package final class DictionaryRef: Sendable {
    package let id: UInt32
    package let typeID: UInt32
    package let bytes: [UInt8]
    /// Where its define record is (nil: not written yet).
    package let location: RecordLocation?
    /// The LZ4 state that compresses against it (built on first use).
    package let compressor: LZ4.DictionaryCompressor

    package init(id: UInt32, typeID: UInt32, bytes: [UInt8], location: RecordLocation?) {
        self.id = id
        self.typeID = typeID
        self.bytes = bytes
        self.location = location
        compressor = LZ4.DictionaryCompressor(dictionary: bytes)
    }

    /// The same dictionary, its define record at `location`.
    package func moved(to location: RecordLocation) -> DictionaryRef {
        DictionaryRef(id: id, typeID: typeID, bytes: bytes, location: location)
    }
}
