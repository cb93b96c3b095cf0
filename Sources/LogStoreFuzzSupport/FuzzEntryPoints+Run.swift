import Foundation
import LogStoreEncryption
import LogStoreEngine

extension FuzzEntryPoints {
    // MARK: Run files

    /// The run file reader (`MappedRun`, `RunCursor`) and validator (`RunValidator`), and the
    /// writer (`RunWriter`).
    ///
    /// Input: `mode:u8 bytes`. Mode bits 0-1:
    /// - 0: `bytes` is a run file as it is (padded with zeros to whole pages);
    /// - 1: the same, but its header's page count is set to its length and every page's CRC and
    ///   the header's CRC are recomputed, so the fuzzer gets past the checksums to the structure;
    /// - 2 and 3: `bytes` is a list of entries (`length:u8 key`), sorted and made unique, written
    ///   with `RunWriter` as the kind and layout bits 2-4 of the mode pick.
    ///
    /// Mode bit 5, sealed (an encrypted store's run): `bytes` starts with a 32-byte AES-256-GCM
    /// store key (zero-padded when short), and the run is opened with that key. Modes 0: the file
    /// as it is (its pages rarely authenticate: the tag check path); 1: the pages are taken as
    /// plaintext, their CRCs fixed over 4080 bytes and sealed under the key of the header's run
    /// number and salt (header cipher set to 1), so random plaintext reaches the checks after
    /// decryption; 2/3: written sealed by `RunWriter`, read back, and also opened with another
    /// key, which must fail as `.corruption` on the first page it reads.
    ///
    /// Checks: opening, lookups, ranks and cursors never trap (errors are `.corruption`); a run
    /// the validator accepts gives the same lookups, ranks and iteration (forward and backward)
    /// as a sorted model of the entries its cursor enumerates; a run the writer wrote validates
    /// and holds exactly the entries it was given. Throws ``FuzzPropertyViolation``.
    public static func run(_ data: UnsafeRawBufferPointer) throws {
        guard let mode = data.first else { return }
        var body = Array(data.dropFirst())
        var cipher: (any StoreCipher)? = nil
        if mode & 0x20 != 0 {
            let key = Array((body.prefix(StoreCrypto.keyByteCount) + [UInt8](repeating: 0, count: StoreCrypto.keyByteCount)).prefix(32))
            body = Array(body.dropFirst(StoreCrypto.keyByteCount))
            do { cipher = try AESGCMCipher(key: key) } catch { throw FuzzPropertyViolation("a 32-byte key was refused: \(error)") }
        }
        if mode & 2 != 0 {
            try runRoundTrip(body, mode: mode, cipher: cipher)
            return
        }
        var bytes = body
        let pages = max(1, (bytes.count + RunFile.pageSize - 1) / RunFile.pageSize)
        guard pages <= 256 else { return }
        bytes.append(contentsOf: repeatElement(0, count: pages * RunFile.pageSize - bytes.count))
        if mode & 1 != 0 {
            if let cipher { try sealRunPages(&bytes, cipher: cipher) } else { fixRunChecksums(&bytes) }
        }
        let run: MappedRun
        do {
            run = try MappedRun(data: RunBytes(copying: bytes), path: "/fuzz.run", cipher: cipher, storeId: fuzzRunStore)
        } catch {
            try expectCorruption(error, "MappedRun")
            return
        }
        // Everything a reader can ask, valid run or not: typed errors only.
        let probes: [[UInt8]] = [[], [0], [0xFF], [7, 7, 7, 7], Array(repeating: 0x41, count: 20)]
        for probe in probes {
            do {
                _ = try probe.withUnsafeBytes { try run.find($0) }
                _ = try probe.withUnsafeBytes { try run.rank(of: $0) }
                let c = try probe.withUnsafeBytes { try run.cursor(from: $0) }
                var steps = 0
                while c.isValid, steps < 64 {
                    try c.next()
                    steps += 1
                }
                let b = try probe.withUnsafeBytes { try run.cursor(below: $0) }
                steps = 0
                while b.isValid, steps < 64 {
                    try b.previous()
                    steps += 1
                }
                if !run.header.kind.isDelta { _ = try run.cursor(atOffset: run.entryCount / 2) }
            } catch {
                try expectCorruption(error, "run read")
            }
        }
        let valid: Bool
        do {
            _ = try RunValidator.validate(run)
            valid = true
        } catch {
            try expectCorruption(error, "RunValidator")
            valid = false
        }
        if valid { try checkAgainstModel(run) }
    }

    /// The store id the run target's sealed runs are keyed with.
    static let fuzzRunStore = StoreID(bytes: Array(repeating: 1, count: 16))

    /// Mode 2/3: a list of keys written with `RunWriter` (sealed with `cipher` when given), read
    /// back.
    static func runRoundTrip(_ body: [UInt8], mode: UInt8, cipher: (any StoreCipher)?) throws {
        let kinds: [(RunKind, RunLayout)] = [
            (.secondaryBase, .variable), (.primaryBase, .variable), (.primaryBase, .fixed8), (.primaryBase, .fixed16),
            (.secondaryDelta, .variable), (.primaryDelta, .fixed8), (.primaryDelta, .variable), (.secondaryBase, .variable),
        ]
        let (kind, layout) = kinds[Int(mode >> 2) & 7]
        var keys = Set<[UInt8]>()
        var i = 0
        while i < body.count, keys.count < 5000 {
            var length = Int(body[i])
            i += 1
            // Lengths above 200 stand for long keys (overflow pages).
            if length > 200 { length = (length - 200) * 97 }
            var key = Array(body[min(i, body.count)..<min(i + length, body.count)])
            i += length
            if let w = layout.keyWidth { key = Array((key + [UInt8](repeating: 0, count: w)).prefix(w)) }
            keys.insert(key)
        }
        let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
        let sink = RunMemorySink()
        let writer: RunWriter
        do {
            writer = try RunWriter(
                header: RunHeader(storeId: fuzzRunStore, runNumber: 1, kind: kind, layout: layout, sequence: 1), sink: sink, cipher: cipher)
        } catch {
            throw FuzzPropertyViolation("RunWriter refused a cipher: \(error)")
        }
        for (n, key) in sorted.enumerated() {
            var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: kind.payloadSize)
            if kind.isDelta { payload[0] = [RunChange.newKey, RunChange.tombstone, 0][kind.isPrimary ? n % 3 : n % 2] }
            do {
                try key.withUnsafeBytes { k in try payload.withUnsafeBytes { try writer.append(key: k, payload: $0) } }
            } catch {
                throw FuzzPropertyViolation("RunWriter refused a sorted, unique key: \(error)")
            }
        }
        let run: MappedRun
        do {
            _ = try writer.finish()
            run = try MappedRun(data: RunBytes(copying: sink.bytes), path: "/fuzz.run", cipher: cipher, storeId: fuzzRunStore)
            _ = try RunValidator.validate(run)
        } catch {
            throw FuzzPropertyViolation("a run RunWriter wrote does not read back: \(error)")
        }
        let read = try enumerate(run)
        guard read.map(\.key) == sorted else { throw FuzzPropertyViolation("a written run iterates other keys than it was given") }
        try checkAgainstModel(run)
        guard let cipher, run.header.levels > 0 else { return }
        // Another key, or the same key with another store's id, opens the header, never a page.
        let otherKey = [UInt8](repeating: 0xEE, count: StoreCrypto.keyByteCount)
        var others: [(any StoreCipher, StoreID)] = [(cipher, StoreID(bytes: Array(repeating: 2, count: 16)))]
        if let other = try? AESGCMCipher(key: otherKey), !sameKey(other, cipher) {
            others.append((other, fuzzRunStore))
        }
        for (other, store) in others {
            do {
                let wrong = try MappedRun(data: RunBytes(copying: sink.bytes), path: "/fuzz.run", cipher: other, storeId: store)
                _ = try wrong.cursor(from: nil)
            } catch {
                try expectCorruption(error, "a sealed run under another key")
                continue
            }
            throw FuzzPropertyViolation("a sealed run read a page under another key or store id")
        }
    }

    /// Whether two ciphers derive the same keys (the same store key).
    static func sameKey(_ a: any StoreCipher, _ b: any StoreCipher) -> Bool {
        let salt = [UInt8](repeating: 3, count: 16)
        return (try? a.mac(salt: salt, info: [1], message: [2])) == (try? b.mac(salt: salt, info: [1], message: [2]))
    }

    /// Mode 1, sealed: sets the header's cipher to 1 and its page count to the buffer's, then
    /// takes every page as plaintext, sets its CRC over its first 4080 bytes and seals it under
    /// the key of the header's run number and salt (the run target's store id), and fixes the
    /// header's CRC.
    static func sealRunPages(_ bytes: inout [UInt8], cipher: any StoreCipher) throws {
        let pages = bytes.count / RunFile.pageSize
        guard pages >= 1, bytes.count >= RunFile.headerBytes else { return }
        bytes[35] = cipher.algorithmID
        for (i, b) in withUnsafeBytes(of: UInt32(pages).littleEndian, Array.init).enumerated() { bytes[44 + i] = b }
        let runNumber = bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: 28, as: UInt32.self)) }
        let key = try StoreCrypto.runKey(cipher, storeID: fuzzRunStore, runNumber: runNumber, salt: Array(bytes[68..<84]))
        for p in 1..<max(1, pages) {
            let start = p * RunFile.pageSize
            var page = Array(bytes[start..<(start + RunFile.sealedPageSize)])
            let crc = page.withUnsafeBytes { CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4...]))) }
            page.withUnsafeMutableBytes { $0.storeBytes(of: crc.littleEndian, toByteOffset: 0, as: UInt32.self) }
            let sealed = try key.seal(
                page, nonce: StoreCrypto.pageNonce(page: UInt32(p)), aad: StoreCrypto.pageAAD(runNumber: runNumber, page: UInt32(p)))
            bytes.replaceSubrange(start..<(start + RunFile.pageSize), with: sealed)
        }
        bytes.withUnsafeMutableBytes { raw in
            let crc = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<(RunFile.headerBytes - 4)])))
            raw.storeBytes(of: crc.littleEndian, toByteOffset: RunFile.headerBytes - 4, as: UInt32.self)
        }
    }

    /// Every entry of a run, by its cursor.
    static func enumerate(_ run: MappedRun) throws -> [(key: [UInt8], payload: [UInt8])] {
        var out: [(key: [UInt8], payload: [UInt8])] = []
        do {
            let c = try run.cursor(from: nil)
            while c.isValid {
                out.append((Array(c.key), Array(UnsafeRawBufferPointer(start: c.payload, count: run.header.kind.payloadSize))))
                try c.next()
            }
        } catch {
            throw FuzzPropertyViolation("a validated run failed to iterate: \(error)")
        }
        return out
    }

    /// A validated run against a sorted model of its own entries.
    static func checkAgainstModel(_ run: MappedRun) throws {
        let model = try enumerate(run)
        guard model.count == run.entryCount else {
            throw FuzzPropertyViolation("a validated run iterates \(model.count) of \(run.entryCount)")
        }
        for i in 1..<max(1, model.count) where !model[i - 1].key.lexicographicallyPrecedes(model[i].key) {
            throw FuzzPropertyViolation("a validated run iterates keys out of order")
        }
        var probes = model.prefix(50).map(\.key)
        probes += probes.map { $0 + [0] }
        probes.append([])
        do {
            var backward: [[UInt8]] = []
            let b = try run.cursor(below: nil)
            while b.isValid {
                backward.append(Array(b.key))
                try b.previous()
            }
            guard backward == model.map(\.key).reversed() else { throw FuzzPropertyViolation("backward iteration differs from forward") }
            for probe in probes {
                let lower = model.firstIndex { !$0.key.lexicographicallyPrecedes(probe) } ?? model.count
                let found = try probe.withUnsafeBytes { try run.find($0) }
                let present = lower < model.count && model[lower].key == probe
                guard (found != nil) == present else { throw FuzzPropertyViolation("find disagrees with iteration") }
                var expected = lower
                if run.header.kind.isDelta {
                    expected = model.prefix(lower).reduce(0) { $0 + (RunChange.contribution($1.payload[0]) ?? 0) }
                }
                guard try probe.withUnsafeBytes({ try run.rank(of: $0) }) == expected else {
                    throw FuzzPropertyViolation("rank disagrees with iteration")
                }
                let from = try probe.withUnsafeBytes { try run.cursor(from: $0) }
                guard (from.isValid ? Array(from.key) : nil) == (lower < model.count ? model[lower].key : nil) else {
                    throw FuzzPropertyViolation("a cursor from a key starts elsewhere than iteration says")
                }
            }
        } catch let e as FuzzPropertyViolation {
            throw e
        } catch {
            throw FuzzPropertyViolation("a validated run failed a read: \(error)")
        }
    }

    /// Sets the header's page count to the buffer's and recomputes every page's and the header's
    /// CRC.
    static func fixRunChecksums(_ bytes: inout [UInt8]) {
        let pages = bytes.count / RunFile.pageSize
        guard pages >= 1, bytes.count >= RunFile.headerBytes else { return }
        for (i, b) in withUnsafeBytes(of: UInt32(pages).littleEndian, Array.init).enumerated() { bytes[44 + i] = b }
        bytes.withUnsafeMutableBytes { raw in
            for p in 1..<max(1, pages) {
                let start = p * RunFile.pageSize
                let crc = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[(start + 4)..<(start + RunFile.pageSize)])))
                raw.storeBytes(of: crc.littleEndian, toByteOffset: start, as: UInt32.self)
            }
            let crc = CRC32C.mask(CRC32C.checksum(UnsafeRawBufferPointer(rebasing: raw[0..<(RunFile.headerBytes - 4)])))
            raw.storeBytes(of: crc.littleEndian, toByteOffset: RunFile.headerBytes - 4, as: UInt32.self)
        }
    }
}

extension FuzzEntryPoints {
    /// Seeds of the run target (`fuzz-corpus-seed`): run files of every kind and layout as
    /// `RunWriter` writes them (modes 0 and 1), and key lists for the writer (modes 2 and 3).
    /// Each is `(name, mode, bytes)`.
    public static func runSeeds() throws -> [(name: String, mode: UInt8, bytes: [UInt8])] {
        var out: [(name: String, mode: UInt8, bytes: [UInt8])] = []
        let store = StoreID(bytes: Array(repeating: 1, count: 16))
        func build(_ kind: RunKind, _ layout: RunLayout, _ keys: [[UInt8]]) throws -> [UInt8] {
            let sink = RunMemorySink()
            let w = RunWriter(header: RunHeader(storeId: store, runNumber: 1, kind: kind, layout: layout, sequence: 1), sink: sink)
            for (n, k) in keys.enumerated() {
                var payload = [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: kind.payloadSize)
                if kind.isDelta { payload[0] = n % 2 == 0 ? RunChange.newKey : RunChange.tombstone }
                try k.withUnsafeBytes { kb in try payload.withUnsafeBytes { try w.append(key: kb, payload: $0) } }
            }
            _ = try w.finish()
            return sink.bytes
        }
        let ints = (0..<300).map { i in withUnsafeBytes(of: UInt64(i * 3).bigEndian, Array.init) }
        let uuids = (0..<200).map { i in [UInt8](repeating: 9, count: 12) + withUnsafeBytes(of: UInt32(i).bigEndian, Array.init) }
        let strings = (0..<400).map { i in Array("restaurant-\(i / 7)-dish-\(i)".utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
        let long = (0..<4).map { i in [UInt8](repeating: 0x61, count: 1500) + [UInt8(i)] }
        out.append(("primary-fixed8", 0, try build(.primaryBase, .fixed8, ints)))
        out.append(("primary-fixed16-fixcrc", 1, try build(.primaryBase, .fixed16, uuids)))
        out.append(("secondary-variable", 0, try build(.secondaryBase, .variable, strings)))
        out.append(("secondary-delta-fixcrc", 1, try build(.secondaryDelta, .variable, Array(strings.prefix(150)))))
        out.append(("primary-delta-fixed8", 0, try build(.primaryDelta, .fixed8, Array(ints.prefix(100)))))
        out.append(("overflow-fixcrc", 1, try build(.secondaryBase, .variable, long)))
        out.append(("empty", 0, try build(.secondaryBase, .variable, [])))
        let list = strings.prefix(60).flatMap { [UInt8($0.count)] + $0 }
        out.append(("writer-secondary", 2, list))
        out.append(("writer-primary-fixed8", 2 | (2 << 2), list))
        out.append(("writer-long-keys", 2, [203] + [UInt8](repeating: 0x62, count: 300) + [4, 1, 2, 3, 4]))
        // Sealed (mode bit 5): a key, then as above.
        let key = [UInt8](0..<32)
        out.append(("sealed-writer-secondary", 2 | 0x20, key + list))
        out.append(("sealed-writer-long-keys", 2 | 0x20, key + [203] + [UInt8](repeating: 0x62, count: 300) + [4, 1, 2, 3, 4]))
        out.append(("sealed-plain-fixcrc", 1 | 0x20, key + (try build(.primaryBase, .fixed8, ints))))
        return out
    }
}
