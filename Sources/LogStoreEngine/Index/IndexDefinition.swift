/// A secondary index of one item type: which stored attributes it orders the type's records by,
/// and whether two records may share the same values.
///
/// Attributes are paths of map keys into each record's value (its ``AttributeValue`` tree), so the
/// engine extracts index entries from stored bytes with no Swift type at hand: at commit, in
/// recovery, in child stores and in `logstore-compact verify`. An entry is the attributes' values,
/// encoded so that their bytes order as the values do (``IndexKeyEncoding``), followed by the
/// record's key; entries are kept in an ``OrderedTree``, so equal values come in key order.
///
/// A value type; compare two with `==`, or by ``definitionHash`` (which is what checkpoints
/// store to know whether the entries they hold were built by this definition).
public struct IndexDefinition: Hashable, Sendable, CustomStringConvertible {
    /// The index's name, unique among its type's indexes.
    public var name: String
    /// The attributes, most significant first; each a path of map keys (`["address", "city"]`).
    public var attributes: [[String]]
    /// Whether two records of the type may not have equal values in every attribute. Records
    /// whose attributes include a missing or `nil` value never conflict (as in SQL).
    public var unique: Bool

    /// A definition. `name` defaults to the attribute paths joined (`"restaurantId,category"`).
    public init(name: String? = nil, attributes: [[String]], unique: Bool = false) {
        self.name = name ?? attributes.map { $0.joined(separator: ".") }.joined(separator: ",")
        self.attributes = attributes
        self.unique = unique
    }

    /// A stable 64-bit hash of the definition (FNV-1a over its canonical bytes): equal for equal
    /// definitions in every process and build, so a checkpoint can tell whether its entries were
    /// built by the definition an app declares now.
    public var definitionHash: UInt64 {
        var w = _ByteWriter(capacity: 64)
        encode(into: &w)
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in w.bytes {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }

    /// `name unique attrCount (pathLength key*)*` (Docs/FileFormat.md, CHECKPOINT section 0x04).
    ///
    ///     definition := name:string unique:u8 attributeCount:uvarint (keyCount:uvarint key:string*)*
    func encode(into w: inout _ByteWriter) {
        w.string(name)
        w.u8(unique ? 1 : 0)
        w.uvarint(UInt64(attributes.count))
        for path in attributes {
            w.uvarint(UInt64(path.count))
            for k in path { w.string(k) }
        }
    }

    /// The most attributes an index may have, and keys per attribute path.
    public static let maxAttributes = 16

    static func decode(from r: inout _ByteReader) throws(_DecodeError) -> IndexDefinition {
        let at = r.offset
        let name = try r.string()
        let unique = try r.u8()
        guard unique <= 1 else { throw _DecodeError("unique flag \(unique) is not 0 or 1", at: at) }
        let count = try r.uvarint()
        guard count >= 1, count <= UInt64(maxAttributes) else { throw _DecodeError("index \(name) has \(count) attributes", at: at) }
        var attributes: [[String]] = []
        for _ in 0..<Int(count) {
            let n = try r.uvarint()
            guard n >= 1, n <= UInt64(maxAttributes) else { throw _DecodeError("attribute path of \(n) keys in index \(name)", at: at) }
            var path: [String] = []
            for _ in 0..<Int(n) { path.append(try r.string()) }
            attributes.append(path)
        }
        guard !name.isEmpty else { throw _DecodeError("index with an empty name", at: at) }
        return IndexDefinition(name: name, attributes: attributes, unique: unique == 1)
    }

    /// Checks a definition an app declares: a name, 1 to ``maxAttributes`` attributes, each a
    /// path of 1 to ``maxAttributes`` non-empty keys. Throws `.invalidArgument` naming what is wrong.
    public func validated(forType type: String) throws -> IndexDefinition {
        func fail(_ why: String) -> LogStoreError {
            LogStoreError(.invalidArgument, "The index \"\(name)\" of \(type) is not valid: \(why).")
        }
        guard !name.isEmpty else { throw fail("its name is empty") }
        guard !attributes.isEmpty, attributes.count <= Self.maxAttributes else {
            throw fail("it needs 1 to \(Self.maxAttributes) attributes")
        }
        for path in attributes {
            guard !path.isEmpty, path.count <= Self.maxAttributes, !path.contains(where: \.isEmpty) else {
                throw fail("the attribute path \(path) must have 1 to \(Self.maxAttributes) non-empty keys")
            }
        }
        return self
    }

    /// `name(attr, attr)`, with `UNIQUE` when unique.
    public var description: String {
        "\(unique ? "UNIQUE " : "")\(name)(\(attributes.map { $0.joined(separator: ".") }.joined(separator: ", ")))"
    }
}
