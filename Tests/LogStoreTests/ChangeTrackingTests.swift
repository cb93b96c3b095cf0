import Foundation
import LogStore
import LogStoreEngine
import Testing
import _LogStoreTestSupport

/// `changes(since:)` and change tokens: written ids from the index, deleted ids
/// from the tombstones, `.historyTruncated` whenever the store cannot answer exactly.
@Suite struct ChangeTrackingTests {
    struct Order: DataStoreItem, Equatable {
        var id: UUID
        var total: Int
    }
    struct Tag: DataStoreItem, Equatable {
        var id: String
    }
    struct Seat: DataStoreItem, Equatable {
        var id: UInt64
    }
    struct Blob: DataStoreItem, Equatable {
        var id: Int
        var body: String
    }

    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("logstore-changes-\(UUID().uuidString)")
    }

    static func expectTruncated(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("expected .historyTruncated", sourceLocation: sourceLocation)
        } catch let e as LogStoreError {
            #expect(e.code == .historyTruncated, "\(e)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func insertsUpdatesDeletesAndDeleteAllsSinceAToken() throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        defer { try? store.tearDown() }
        let a = UUID()
        let b = UUID()
        let c = UUID()
        try store.writeSync { w in
            try w.insert(Order(id: a, total: 1))
            try w.insert(Order(id: b, total: 2))
            try w.insert(Tag(id: "x"))
            try w.insert(Tag(id: "y"))
        }
        let token = try store.changeToken()
        #expect(try store.changes(since: token).isEmpty)
        try store.writeSync { w in
            try w.insert(Order(id: b, total: 20))
            try w.insert(Order(id: c, total: 3))
            try w.deleteItem(ofType: Order.self, id: a)
        }
        try store.writeSync { w in _ = try w.deleteAllItems(ofType: Tag.self) }
        try store.writeSync { w in try w.insert(Tag(id: "y")) }
        let changes = try store.changes(since: token)
        #expect(changes.itemTypes == ["Order", "Tag"])
        let orders = try changes.changes(of: Order.self)
        #expect(Set(orders.insertedOrUpdated) == [b, c])
        #expect(orders.deleted == [a])
        let tags = try changes.changes(of: Tag.self)
        #expect(tags.insertedOrUpdated == ["y"])
        #expect(tags.deleted == ["x"])
        #expect(changes.token == (try store.changeToken()))
        // From the new token: nothing.
        #expect(try store.changes(since: changes.token).isEmpty)
        // nuke() deletes every id of every type.
        try store.nuke()
        let nuked = try store.changes(since: changes.token)
        #expect(Set(try nuked.changes(of: Order.self).deleted) == [b, c])
        #expect(try nuked.changes(of: Tag.self).deleted == ["y"])
    }

    @Test func anIdDeletedAndInsertedAgainIsReportedAsWrittenOnly() throws {
        let store = LogDataStore.inMemory()
        try store.setup()
        defer { try? store.tearDown() }
        try store.writeSync { try $0.insert(Seat(id: UInt64.max)) }
        let token = try store.changeToken()
        try store.writeSync { _ = try $0.deleteItem(ofType: Seat.self, id: UInt64.max) }
        try store.writeSync { try $0.insert(Seat(id: UInt64.max)) }
        try store.writeSync { try $0.insert(Seat(id: 7)) }
        try store.writeSync { _ = try $0.deleteItem(ofType: Seat.self, id: 7) }
        let seats = try store.changes(since: token).changes(of: Seat.self)
        #expect(seats.insertedOrUpdated == [UInt64.max])
        // Inserted and deleted after the token: reported deleted (the caller may never have seen it).
        #expect(seats.deleted == [7])
    }

    @Test func tokensAreCodableAndSurviveAReopenOnlyWhenNothingWasCommittedSince() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var store = LogDataStore(directory: dir)
        try store.setup()
        try store.writeSync { try $0.insert(Tag(id: "a")) }
        let data = try JSONEncoder().encode(try store.changeToken())
        try store.tearDown()

        store = LogDataStore(directory: dir)
        try store.setup()
        let saved = try JSONDecoder().decode(DataStoreChangeToken.self, from: data)
        // The store was opened at the saved state: the history since is complete.
        try store.writeSync { try $0.insert(Tag(id: "b")) }
        #expect(try store.changes(since: saved).changes(of: Tag.self).insertedOrUpdated == ["b"])
        let before = try store.changeToken()
        try store.tearDown()

        store = LogDataStore(directory: dir)
        try store.setup()
        defer { try? store.tearDown() }
        try store.writeSync { try $0.insert(Tag(id: "c")) }
        // A token of the previous opening older than this opening's start: deletes in between are unknown.
        Self.expectTruncated { _ = try store.changes(since: saved) }
        #expect(try store.changes(since: before).changes(of: Tag.self).insertedOrUpdated == ["c"])
    }

    @Test func aTokenOfAnotherStoreOrALostFutureIsRefused() throws {
        let one = LogDataStore.inMemory()
        let two = LogDataStore.inMemory()
        try one.setup()
        try two.setup()
        defer {
            try? one.tearDown()
            try? two.tearDown()
        }
        try one.writeSync { try $0.insert(Tag(id: "a")) }
        Self.expectTruncated { _ = try two.changes(since: try one.changeToken()) }

        // A token newer than the state a later opening starts from: a crash took those commits
        // back, and this opening reuses their sequence numbers for other commits.
        let fs = FaultInjectingFileSystem()
        var o = LogStoreOptions()
        o.durability = .none
        o.checkpointOnClose = false
        let s = LogDataStore(path: "/s", fileSystem: fs, options: o)
        try s.setup()
        try s.writeSync { try $0.insert(Tag(id: "a")) }
        try s.flush()
        for i in 0..<3 { try s.writeSync { try $0.insert(Tag(id: "lost\(i)")) } }
        let late = try s.changeToken()
        var found = false
        for seed in UInt64(0)..<64 {
            let image = fs.powerLossImage(seed: seed)
            let r = LogDataStore(path: "/s", fileSystem: image, options: o)
            try r.setup()
            defer { try? r.tearDown() }
            guard try r.changeToken().sequence < late.sequence else { continue }
            found = true
            while try r.changeToken().sequence <= late.sequence { try r.writeSync { try $0.insert(Tag(id: "new")) } }
            Self.expectTruncated { _ = try r.changes(since: late) }
            break
        }
        #expect(found, "no power-loss image dropped an unsynced commit")
        try? s.tearDown()
    }

    @Test func retentionDropsTheOldestTombstonesAndTruncatesOlderTokens() throws {
        var o = LogStoreOptions()
        o.changeHistory = ChangeHistoryRetention(maxAge: nil, maxTombstones: 3)
        let store = LogDataStore.inMemory(options: o)
        try store.setup()
        defer { try? store.tearDown() }
        try store.writeSync { w in for i in 0..<10 { try w.insert(Tag(id: "t\(i)")) } }
        let t0 = try store.changeToken()
        try store.writeSync { w in for i in 0..<2 { _ = try w.deleteItem(ofType: Tag.self, id: "t\(i)") } }
        let t1 = try store.changeToken()
        try store.writeSync { w in for i in 2..<4 { _ = try w.deleteItem(ofType: Tag.self, id: "t\(i)") } }
        #expect(try store.changeFeed()._historyCount == 2)
        Self.expectTruncated { _ = try store.changes(since: t0) }
        #expect(try store.changes(since: t1).changes(of: Tag.self).deleted == ["t2", "t3"])
        // Writes need no tombstones: an old token stays good while nothing more is deleted.
        let t2 = try store.changeToken()
        for i in 10..<20 { try store.writeSync { try $0.insert(Tag(id: "t\(i)")) } }
        #expect(try store.changes(since: t2).changes(of: Tag.self).insertedOrUpdated.count == 10)
    }

    @Test func compactionKeepsWrittenSequencesExact() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var o = LogStoreOptions()
        o.segmentSize = 64 << 10
        o.autoCompaction = false
        let store = LogDataStore(directory: dir, options: o)
        try store.setup()
        defer { try? store.tearDown() }
        let filler = String(repeating: "x", count: 2000)
        for round in 0..<3 {
            try store.writeSync { w in for i in 0..<40 { try w.insert(Blob(id: round * 100 + i, body: filler)) } }
        }
        try store.writeSync { w in for i in 0..<40 { _ = try w.deleteItem(ofType: Blob.self, id: i) } }
        let token = try store.changeToken()
        try store.writeSync { try $0.insert(Blob(id: 1000, body: "after")) }
        let report = try store.engineForTesting().compact()
        #expect(report.recordsCopied > 0)
        let blobs = try store.changes(since: token).changes(of: Blob.self)
        #expect(blobs.insertedOrUpdated == [1000])
        #expect(blobs.deleted.isEmpty)
    }

    @Test func aChildStoreTracksItsOwnWritesAndStartsOverAtEachMerge() throws {
        let parent = LogDataStore.inMemory()
        try parent.setup()
        defer { try? parent.tearDown() }
        try parent.writeSync { try $0.insert(Tag(id: "p")) }
        let child = try parent.makeChildDataStore()
        let t0 = try child.changeToken()
        try child.writeSync { w in
            try w.insert(Tag(id: "c"))
            _ = try w.deleteItem(ofType: Tag.self, id: "p")
        }
        let tags = try child.changes(since: t0).changes(of: Tag.self)
        #expect(tags.insertedOrUpdated == ["c"])
        #expect(tags.deleted == ["p"])
        try parent.merge(child)
        Self.expectTruncated { _ = try child.changes(since: t0) }
        let t1 = try child.changeToken()
        try child.writeSync { w in _ = try w.deleteAllItems(ofType: Tag.self) }
        #expect(try child.changes(since: t1).changes(of: Tag.self).deleted == ["c"])
        // A token of the child means nothing to its parent.
        Self.expectTruncated { _ = try parent.changes(since: t1) }
    }
}
