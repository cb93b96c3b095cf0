import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct IOError: Error, CustomStringConvertible {
    var call: String
    var path: String
    var code: Int32
    var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
}

/// The disk's own limits, measured with bare system calls in the same directory as the stores.
enum Physical {
    static func openFile(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { throw IOError(call: "open", path: path, code: errno) }
        return fd
    }

    static func pwriteAll(_ fd: Int32, _ buf: UnsafeRawBufferPointer, at offset: Int, path: String) throws {
        guard let base = buf.baseAddress else { return }
        var done = 0
        while done < buf.count {
            let n = pwrite(fd, base + done, buf.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                throw IOError(call: "pwrite", path: path, code: errno)
            }
            done += n
        }
    }

    /// A log of fixed-size records: each ``append()`` is one `pwrite` at the end, followed by
    /// `fdatasync` when `sync`: the least a durable single-record commit can cost.
    ///
    /// With `preallocate` bytes, the file's beginning is written and fsynced first, so appends
    /// overwrite allocated blocks and `fdatasync` has no file-size change to commit.
    final class Log {
        let fd: Int32
        let path: String
        let record: [UInt8]
        let sync: Bool
        var offset = 0

        init(path: String, recordSize: Int, sync: Bool, preallocate: Int = 0) throws {
            self.path = path
            self.sync = sync
            fd = try openFile(path)
            var r = [UInt8](repeating: 0, count: max(1, recordSize))
            for i in r.indices { r[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
            record = r
            if preallocate > 0 {
                let zeros = [UInt8](repeating: 0, count: 1 << 20)
                var at = 0
                try zeros.withUnsafeBytes { z in
                    while at < preallocate {
                        let n = min(z.count, preallocate - at)
                        try pwriteAll(fd, UnsafeRawBufferPointer(rebasing: z[0..<n]), at: at, path: path)
                        at += n
                    }
                }
                if fsync(fd) != 0 { throw IOError(call: "fsync", path: path, code: errno) }
            }
        }

        func append() throws {
            try record.withUnsafeBytes { try pwriteAll(fd, $0, at: offset, path: path) }
            offset += record.count
            if sync, fdatasync(fd) != 0 { throw IOError(call: "fdatasync", path: path, code: errno) }
        }

        func close() {
            _ = Glibc.close(fd)
            unlink(path)
        }
    }

    /// Writes `totalBytes` sequentially in 1 MiB `pwrite`s, then one `fsync`. One op = the whole
    /// write; `Run.seconds` is its duration (bandwidth = totalBytes / seconds).
    static func sequentialWrite(path: String, totalBytes: Int) throws -> Run {
        let fd = try openFile(path)
        defer {
            close(fd)
            unlink(path)
        }
        let chunk = 1 << 20
        var block = [UInt8](repeating: 0, count: chunk)
        var rng = SplitMix64(seed: 42)
        block.withUnsafeMutableBytes { raw in
            for i in stride(from: 0, to: chunk, by: 8) { raw.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self) }
        }
        return try block.withUnsafeBytes { buf in
            try timedLoop(maxOps: 1, maxSeconds: 1e9) { _ in
                var offset = 0
                while offset < totalBytes {
                    let n = min(chunk, totalBytes - offset)
                    try pwriteAll(fd, UnsafeRawBufferPointer(rebasing: buf[0..<n]), at: offset, path: path)
                    offset += n
                }
                if fsync(fd) != 0 { throw IOError(call: "fsync", path: path, code: errno) }
            }
        }
    }
}
