import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs a command and returns its standard output (trimmed), or nil if it cannot run.
func commandOutput(_ args: [String], in dir: String? = nil) -> String? {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = args
    if let dir { p.currentDirectoryURL = URL(fileURLWithPath: dir) }
    let pipe = Pipe()
    p.standardOutput = pipe
    p.standardError = FileHandle.nullDevice
    do { try p.run() } catch { return nil }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    guard p.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

func readText(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

/// The machine the run is on, and the file system of the directory the stores live in.
/// Records no paths.
func machineInfo(benchDir: String) -> MachineInfo {
    let cpuModel =
        readText("/proc/cpuinfo").split(separator: "\n")
        .first { $0.hasPrefix("model name") }
        .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces) } ?? "unknown"
    var mem: UInt64 = 0
    if let line = readText("/proc/meminfo").split(separator: "\n").first(where: { $0.hasPrefix("MemTotal:") }) {
        mem = (UInt64(line.split(separator: " ").dropFirst().first ?? "") ?? 0) * 1024
    }
    let kernel = readText("/proc/sys/kernel/osrelease").trimmingCharacters(in: .whitespacesAndNewlines)
    var os = "unknown"
    if let line = readText("/etc/os-release").split(separator: "\n").first(where: { $0.hasPrefix("PRETTY_NAME=") }) {
        os = String(line.dropFirst("PRETTY_NAME=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }
    // The mount with the longest mount point that is a prefix of the bench directory.
    let real = URL(fileURLWithPath: benchDir).resolvingSymlinksInPath().path
    var best = (point: "", fs: "unknown", dev: "unknown")
    for line in readText("/proc/mounts").split(separator: "\n") {
        let f = line.split(separator: " ")
        guard f.count >= 3 else { continue }
        let point = String(f[1])
        let under = point == "/" || real == point || real.hasPrefix(point + "/")
        if under && point.count >= best.point.count { best = (point, String(f[2]), String(f[0])) }
    }
    let swift = commandOutput(["swift", "--version"])?.split(separator: "\n").first.map(String.init) ?? "unknown"
    return MachineInfo(
        cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), cpuModel: cpuModel, memoryBytes: mem, kernel: kernel, os: os,
        benchFilesystem: best.fs, benchDevice: best.dev, swiftVersion: swift, loadAverageStart: loadAverage(),
        nice: Int(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)))
}

/// The 1, 5 and 15 minute load averages.
func loadAverage() -> String {
    readText("/proc/loadavg").split(separator: " ").prefix(3).joined(separator: " ")
}
