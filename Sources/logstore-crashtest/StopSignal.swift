import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// SIGINT and SIGTERM ask a long run to stop after its current cycle (or chunk) and print its
/// summary, instead of dying without one. A second signal ends the process at once.
/// Thread-safe: the flag and the dispatch sources (only kept alive) are behind mutexes.
enum StopSignal {
    static let flag = Mutex(false)
    static let sources = Mutex<[any DispatchSourceSignal]>([])

    /// Whether a stop was requested.
    static var requested: Bool { flag.withLock { $0 } }

    /// Installs the handlers (idempotent).
    static func install() {
        sources.withLock { list in
            guard list.isEmpty else { return }
            list = [SIGINT, SIGTERM].map { sig in
                signal(sig, SIG_IGN)
                let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
                s.setEventHandler {
                    let again = StopSignal.flag.withLock { f in
                        defer { f = true }
                        return f
                    }
                    if again { _exit(130) }
                }
                s.resume()
                return s
            }
        }
    }
}
