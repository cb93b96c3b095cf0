import Foundation
import LogStoreEngine
import Synchronization

/// Finds where a key path's value is stored in an item's encoded form: `\MenuItem.restaurantId`
/// -> `["restaurantId"]`, or `["rid"]` when the type's `CodingKeys` rename it.
///
/// Swift has no reflection from a key path to a coding key, so the resolver asks the type itself:
/// it decodes ``ProbeDecoder/probeCount`` probe instances in which every stored value is a
/// distinct marker, encodes them with ``AttributeEncoder``, reads the key path on each instance,
/// and looks for the one place in the encoded trees that holds that value in every probe. One
/// place: that coding path. None or several (a computed property, a value the type transforms on
/// the way to its encoding, a type that rejects probe values): nil, and whoever asked falls back
/// to the decoded item, so an unresolved key path is slower, never wrong.
///
/// Results are cached per type and key path for the life of the process. Thread-safe.
package enum KeyPathResolver {
    /// A type's probe instances and their encodings (nil when the type cannot be probed).
    struct Probes: @unchecked Sendable {
        // @unchecked: written once under the cache's mutex, then only read; the instances are
        // values of a `Sendable` item type, held as `Any`.
        var instances: [Any]
        var encoded: [AttributeValue]
        var paths: [AnyKeyPath: [String]?] = [:]
    }

    static let cache = Mutex<[ObjectIdentifier: Probes?]>([:])

    /// The coding path of `keyPath` in `Item`'s encoded form, or nil if it cannot be told.
    /// Runs the type's probes on first use (microseconds); any thread.
    package static func codingPath<Item: Codable>(of keyPath: AnyKeyPath, in type: Item.Type) -> [String]? {
        let id = ObjectIdentifier(Item.self)
        return cache.withLock { cache -> [String]? in
            if cache[id] == nil { cache[id] = .some(makeProbes(Item.self)) }
            guard var probes = cache[id] ?? nil else { return nil }
            if let known = probes.paths[keyPath] { return known }
            let found = resolve(keyPath, probes)
            probes.paths[keyPath] = .some(found)
            cache[id] = probes
            return found
        }
    }

    static func makeProbes<Item: Codable>(_ type: Item.Type) -> Probes? {
        var instances: [Any] = []
        var encoded: [AttributeValue] = []
        for p in 0..<ProbeDecoder.probeCount {
            guard let item = try? ProbeDecoder.instance(of: Item.self, probe: p),
                let tree = try? AttributeEncoder().encode(item)
            else { return nil }
            instances.append(item)
            encoded.append(tree)
        }
        return Probes(instances: instances, encoded: encoded)
    }

    static func resolve(_ keyPath: AnyKeyPath, _ probes: Probes) -> [String]? {
        var candidates: [[String]]? = nil
        for (instance, tree) in zip(probes.instances, probes.encoded) {
            guard let value = instance[keyPath: keyPath] as? any Encodable,
                let wanted = try? AttributeEncoder().encode(value)
            else { return nil }
            var here: [[String]] = []
            if let candidates {
                for path in candidates where lookup(path, in: tree) == wanted { here.append(path) }
            } else {
                collect(tree, [], wanted, &here)
            }
            if here.isEmpty { return nil }
            candidates = here
        }
        guard let candidates, candidates.count == 1 else { return nil }
        return candidates[0]
    }

    /// Every path of map keys in `tree` whose value equals `wanted` (not descending into arrays:
    /// a key path does not index into one).
    static func collect(_ tree: AttributeValue, _ path: [String], _ wanted: AttributeValue, _ out: inout [[String]]) {
        guard path.count <= 32 else { return }
        if !path.isEmpty && tree == wanted { out.append(path) }
        if case .map(let m) = tree {
            for (k, v) in m { collect(v, path + [k], wanted, &out) }
        }
    }

    static func lookup(_ path: [String], in tree: AttributeValue) -> AttributeValue? {
        var node = tree
        for k in path {
            guard case .map(let m) = node, let next = m[k] else { return nil }
            node = next
        }
        return node
    }
}
