import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A worker process started with `posix_spawn`, its stdout read line by line through a pipe
/// (stderr goes to a file). The driver owns it: ``kill()`` sends SIGKILL and ``wait()`` reaps it,
/// so a killed worker never stays a zombie.
///
/// Use from one thread (the driver's).
final class ChildProcess {
    /// How the process ended.
    enum Exit: Equatable, CustomStringConvertible {
        case exited(Int32)
        case signaled(Int32)

        var description: String {
            switch self {
            case .exited(let c): return "exit status \(c)"
            case .signaled(let s): return "signal \(s)\(s == SIGKILL ? " (SIGKILL)" : "")"
            }
        }
    }

    let pid: pid_t
    let readFD: Int32
    var buffer: [UInt8] = []
    var eof = false
    var exit: Exit?
    /// When the process was started.
    let started = Date()

    /// Starts `executable` with `arguments` (argv[1...]). stdout is a pipe read by ``readLine(timeout:)``;
    /// stderr is written to `stderrPath`. Throws a `CrashTestError` if the spawn fails.
    init(executable: String, arguments: [String], stderrPath: String) throws {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw CrashTestError("pipe failed: errno \(errno)") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // dup2 clears close-on-exec for fd 1; every other descriptor of ours stays closed in the child.
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let argv = ([executable] + arguments).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        let env = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") }
        defer { env.forEach { free($0) } }
        var pid: pid_t = 0
        var argvNil = argv + [nil], envNil = env + [nil]
        let rc = argvNil.withUnsafeMutableBufferPointer { a in
            envNil.withUnsafeMutableBufferPointer { e -> Int32 in
                guard let ab = a.baseAddress, let eb = e.baseAddress else { return EINVAL }
                return posix_spawn(&pid, executable, &actions, nil, ab, eb)
            }
        }
        close(fds[1])
        guard rc == 0 else {
            close(fds[0])
            throw CrashTestError("posix_spawn of \(executable) failed: \(String(cString: strerror(rc)))")
        }
        self.pid = pid
        readFD = fds[0]
    }

    deinit {
        if exit == nil {
            sendSignal(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        close(readFD)
    }

    /// The next complete line of stdout (without the newline), waiting at most `timeout` seconds.
    /// Returns nil on timeout or at end of file (check ``eof``). A partial last line (the worker
    /// was killed while writing it) is dropped.
    func readLine(timeout: TimeInterval) -> String? {
        let deadline = Date().addingTimeInterval(max(0, timeout))
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            if eof { return nil }
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return nil }
            var p = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
            let r = poll(&p, 1, Int32(min(remaining * 1000, 1000).rounded(.up)))
            if r < 0 && errno != EINTR { eof = true; return nil }
            if r <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = chunk.withUnsafeMutableBytes { read(readFD, $0.baseAddress, 4096) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                eof = true
                return nil
            }
            if n == 0 { eof = true; continue }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Sends SIGKILL (no-op once reaped).
    func kill() {
        if exit == nil { sendSignal(pid, SIGKILL) }
    }

    /// Reaps the process, waiting at most `timeout` seconds (then SIGKILL and wait). Returns how it ended.
    @discardableResult
    func wait(timeout: TimeInterval = 30) -> Exit {
        if let exit { return exit }
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WNOHANG)
            if r == pid { break }
            if r < 0 && errno != EINTR {
                exit = .exited(-1)
                return .exited(-1)
            }
            if Date() >= deadline { sendSignal(pid, SIGKILL) }
            usleep(200)
        }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (the C macros are not imported).
        let e: Exit = (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
        exit = e
        return e
    }
}

/// `kill(2)` (the methods named `kill` shadow it inside the class).
func sendSignal(_ pid: pid_t, _ signal: Int32) {
    _ = kill(pid, signal)
}

/// A failure of the crash test harness itself, or a broken promise it found.
struct CrashTestError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
