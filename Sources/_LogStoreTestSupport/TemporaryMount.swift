import Foundation

/// A tmpfs mounted in a new temporary directory for one test: a small disk to fill, or a file
/// system to remount read-only. Needs root and mount(8); where they are missing ``tmpfs(size:)``
/// returns nil and the test skips itself. Use from one thread.
public struct TemporaryMount: Sendable {
    /// Where it is mounted.
    public let path: String

    /// Mounts a tmpfs of `size` (mount(8) syntax: "2m") in a new temporary directory; nil when
    /// this machine does not allow it (then nothing is left behind).
    public static func tmpfs(size: String) -> TemporaryMount? {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("logstore-mount-\(UUID().uuidString)").path
        guard (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)) != nil else { return nil }
        guard getuid() == 0, run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path]) == 0 else {
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
        return TemporaryMount(path: path)
    }

    /// Remounts read-only (or writable again); false if mount(8) refused.
    public func remount(readOnly: Bool) -> Bool {
        Self.run("/usr/bin/mount", ["-o", readOnly ? "remount,ro" : "remount,rw", path]) == 0
    }

    /// Unmounts and removes the directory.
    public func unmount() {
        _ = Self.run("/usr/bin/umount", [path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Runs `tool` and returns its exit status (-1 if it cannot run).
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        guard FileManager.default.isExecutableFile(atPath: tool) else { return -1 }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
