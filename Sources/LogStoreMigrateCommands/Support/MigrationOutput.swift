import Foundation
import LogStore
import LogStoreCommandSupport

/// How `logstore-migrate` shows a migration: the progress line, the text summary and the JSON
/// documents (shapes in Docs/CLI.md).
enum MigrationOutput {
    /// A progress handler that draws `copying Restaurant: 42% (420,000 / 1,000,000 items,
    /// 120.0 MiB, 52,000 items/s, 11 s left)`.
    static func progressHandler(_ line: ProgressLine) -> @Sendable (BackendMigrationProgress) -> Void {
        let box = UncheckedBox(line)
        return { p in
            var detail =
                "\(Format.count(p.items)) / \(Format.count(p.totalItems)) items, \(Format.bytes(UInt64(p.bytes))), \(Format.count(Int(p.itemsPerSecond))) items/s"
            if let eta = p.estimatedRemaining { detail += ", \(seconds(eta)) left" }
            box.value.update("\(p.phase.rawValue) \(p.itemType)", done: UInt64(p.items), total: UInt64(p.totalItems), detail: detail)
        }
    }

    static func seconds(_ d: Duration) -> String {
        let s = Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
        return s < 100 ? "\(Format.fixed(s, 1)) s" : "\(Int(s / 60)) min \(Int(s) % 60) s"
    }

    static func secondsValue(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    static func json(_ copy: BackendMigrationCopyReport) -> JSON {
        .object([
            ("resumed", .bool(copy.resumed)),
            ("items", .integer(copy.items)),
            ("bytes", .integer(copy.bytes)),
            ("itemsThisRun", .integer(copy.itemsThisRun)),
            ("seconds", .double(secondsValue(copy.duration))),
            (
                "types",
                .array(
                    copy.types.map {
                        .object([("itemType", .string($0.itemType)), ("items", .integer($0.items)), ("bytes", .integer($0.bytes))])
                    })
            ),
        ])
    }

    static func json(_ v: BackendMigrationVerification) -> JSON {
        .object([
            ("equal", .bool(v.isEqual)),
            ("seconds", .double(secondsValue(v.duration))),
            (
                "types",
                .array(
                    v.types.map { t in
                        .object([
                            ("itemType", .string(t.itemType)), ("equal", .bool(t.isEqual)),
                            ("sourceCount", .integer(t.sourceCount)), ("destinationCount", .integer(t.destinationCount)),
                            ("sourceDigest", .string(t.sourceDigest)), ("destinationDigest", .string(t.destinationDigest)),
                            ("missingCount", .integer(t.missingCount)), ("missing", .array(t.missing.map { .string($0) })),
                            ("extraCount", .integer(t.extraCount)), ("extra", .array(t.extra.map { .string($0) })),
                            ("differingCount", .integer(t.differingCount)), ("differing", .array(t.differing.map { .string($0) })),
                        ])
                    })
            ),
        ])
    }

    /// The text lines of a verification: one per type, then the differences.
    static func lines(_ v: BackendMigrationVerification) -> [String] {
        var out: [String] = []
        for t in v.types {
            let verdict = t.isEqual ? "equal" : "DIFFERENT"
            out.append(
                "\(Format.pad(t.itemType, 24)) \(Format.padLeft(Format.count(t.sourceCount), 12)) -> \(Format.padLeft(Format.count(t.destinationCount), 12))  \(verdict)  digest \(t.destinationDigest)"
            )
            func list(_ what: String, _ ids: [String], _ count: Int) {
                guard count > 0 else { return }
                out.append("  \(what) (\(Format.count(count))): \(ids.joined(separator: ", "))\(count > ids.count ? ", ..." : "")")
            }
            list("missing in the destination", t.missing, t.missingCount)
            list("extra in the destination", t.extra, t.extraCount)
            list("different", t.differing, t.differingCount)
        }
        out.append(
            v.isEqual
                ? "verified: the destination equals the source" : "NOT EQUAL: the destination differs from the source (keep the source)")
        return out
    }
}

/// Holds a non-Sendable value for a closure that runs on the thread that made it (the progress
/// handler runs on the migrator's thread, which is the command's).
final class UncheckedBox<T>: @unchecked Sendable {
    // @unchecked: used only on the command's thread (see the type's comment).
    let value: T
    init(_ value: T) { self.value = value }
}
