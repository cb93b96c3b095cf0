/// Progress on stderr for one command. Runs on the command's thread; not thread-safe.
///
/// - redraw: one line rewritten in place with `\r` (at most 10 times a second), erased at the end;
/// - plain: a line per phase and per 10% step, never rewritten (logs, CI);
/// - none: nothing.
package final class ProgressLine {
    package enum Style { case redraw, plain, none }
    package enum Unit { case bytes, records }

    package let style: Style
    let console: any ConsoleSink
    private var drawn = false
    private var lastLabel = ""
    private var lastStep = -1
    private var lastDraw: ContinuousClock.Instant? = nil

    package init(_ mode: ProgressMode, console: any ConsoleSink = Console.current) {
        self.console = console
        switch mode {
        case .auto: style = console.errIsTerminal ? .redraw : .plain
        case .plain: style = .plain
        case .none: style = .none
        }
    }

    package func update(_ label: String, done: UInt64, total: UInt64, unit: Unit = .bytes) {
        let amount: String
        switch unit {
        case .bytes: amount = "\(Format.bytes(done)) / \(Format.bytes(total))"
        case .records: amount = "\(Format.count(done)) / \(Format.count(total)) records"
        }
        update(label, done: done, total: total, detail: amount)
    }

    /// Shows `label: <percent> (<detail>)`: like ``update(_:done:total:unit:)`` with the caller's
    /// own amount text (items, bytes, rate, time left).
    package func update(_ label: String, done: UInt64, total: UInt64, detail amount: String) {
        let percent = total == 0 ? 100 : Int(min(100, done * 100 / max(total, 1)))
        switch style {
        case .none:
            return
        case .plain:
            let step = percent / 10
            guard label != lastLabel || step > lastStep else { return }
            lastLabel = label
            lastStep = step
            console.writeErr("\(label): \(percent)% (\(amount))\n")
        case .redraw:
            let now = ContinuousClock.now
            if label == lastLabel, percent < 100, let last = lastDraw, now - last < .milliseconds(100) { return }
            lastLabel = label
            lastDraw = now
            drawn = true
            console.writeErr("\r\u{1B}[2K\(label): \(percent)% (\(amount))")
        }
    }

    /// Announces a step that has no measurable amount (e.g. "comparing index").
    package func phase(_ label: String) {
        switch style {
        case .none: return
        case .plain: console.writeErr("\(label)...\n")
        case .redraw:
            drawn = true
            lastDraw = ContinuousClock.now
            console.writeErr("\r\u{1B}[2K\(label)...")
        }
        lastLabel = label
        lastStep = -1
    }

    /// Erases a redrawn line so that the next output starts on a clean line.
    package func finish() {
        if style == .redraw && drawn {
            console.writeErr("\r\u{1B}[2K")
            drawn = false
        }
    }
}
