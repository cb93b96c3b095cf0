import Foundation
import LogStoreEngine
import LogStoreSQL

extension FuzzEntryPoints {
    // MARK: LogStore JSON

    /// The SQL backends' row format, ``LogStoreJSON`` (a decoder of text read from a database).
    ///
    /// Input: `mode:u8 bytes`. Mode bit 0 clear: `bytes` is JSON text; decoding either throws
    /// `.corruption` or gives canonical attribute bytes that `AttributeValue.decode` reads, whose
    /// JSON decodes back to the same bytes (a fixed point after one round). Bit 0 set: `bytes` is
    /// a value recipe (as for `fuzz-value`); its canonical encoding must transcode to JSON and
    /// back to the same bytes, exactly. Bit 1 chooses the dialect of the JSON written: clear,
    /// SQLite's; set, PostgreSQL's (positional reals, `$utf8` strings). Throws
    /// ``FuzzPropertyViolation``.
    public static func logStoreJSON(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        let bytes = Array(data.dropFirst())
        let dialect: SQLDialect = mode & 2 != 0 ? .postgres : .sqlite
        if mode & 1 != 0 {
            var recipe = Recipe(bytes: bytes)
            let v = buildValue(&recipe, depth: 1)
            guard nesting(v) <= AttributeValue.maxDepth else { return }
            let encoded = v.encoded()
            let back: [UInt8]
            do {
                back = try LogStoreJSON.decode(try LogStoreJSON.encode(encoded, dialect: dialect))
            } catch {
                throw FuzzPropertyViolation("a value's JSON does not transcode back: \(v): \(error)")
            }
            guard back == encoded else { throw FuzzPropertyViolation("JSON round trip changed the bytes of \(v)") }
            return
        }
        let canonical: [UInt8]
        do {
            canonical = try LogStoreJSON.decode(bytes)
        } catch {
            try expectCorruption(error, "LogStoreJSON.decode")
            return
        }
        let v: AttributeValue
        do {
            v = try AttributeValue.decode(canonical)
        } catch {
            throw FuzzPropertyViolation("decoded JSON gave bytes the value decoder refuses: \(error)")
        }
        let again: [UInt8]
        do {
            again = try LogStoreJSON.decode(try LogStoreJSON.encode(canonical, dialect: dialect))
        } catch {
            throw FuzzPropertyViolation("canonical bytes from JSON do not transcode back: \(v): \(error)")
        }
        guard again == canonical else { throw FuzzPropertyViolation("JSON -> bytes -> JSON -> bytes is not a fixed point for \(v)") }
    }
}
