import Foundation

/// The one family of units a person reads in the CLI's output: binary (B, KiB, MiB, GiB; rates
/// in MiB/s), as `cat --timing` and the perf report print them. Exact byte counts stay exact
/// (`520300 bytes`); JSON and CSV keep raw numbers.
enum Units {
    static let kiB = 1024.0
    static let miB = 1024.0 * 1024
    static let giB = 1024.0 * 1024 * 1024

    /// The unit sizes near `n` read best in: KiB below 1 MiB, MiB below 1 GiB, else GiB.
    static func scale(for n: UInt64) -> (divisor: Double, name: String) {
        Double(n) < miB ? (kiB, "KiB") : Double(n) < giB ? (miB, "MiB") : (giB, "GiB")
    }

    /// `512 B`, `4.0 KiB`, `92.2 KiB`, `1.5 MiB`, `2.31 GiB`.
    static func bytes(_ n: UInt64) -> String {
        if n < 1024 { return "\(n) B" }
        let (divisor, name) = scale(for: n)
        let value = Double(n) / divisor
        return String(format: value < 10 && name == "GiB" ? "%.2f %@" : "%.1f %@", value, name)
    }

    /// A rate: `210 MiB/s`, `3.4 MiB/s`, `0.05 MiB/s`.
    static func rate(bytes: Double, seconds: Double) -> String {
        guard seconds > 0 else { return "- MiB/s" }
        let value = bytes / seconds / miB
        return String(format: value >= 10 ? "%.0f MiB/s" : value >= 0.1 ? "%.1f MiB/s" : "%.2f MiB/s", value)
    }
}

/// `1 entry`, `2 entries`, `0 files`: a count and its noun in the right number.
func plural(_ count: Int, _ singular: String, _ pluralForm: String? = nil) -> String {
    "\(count) " + (count == 1 ? singular : pluralForm ?? singular + "s")
}

/// The text of the progress line, without terminal control:
/// `[#####...................] 12/40 files  3.1/9.8 MiB  210 MiB/s  ETA 0:03  path`.
enum ProgressBarText {
    /// Renders one line. The bar follows bytes when they are known, else the count (`unit`
    /// `nil`: no count, the bytes are the count); rate and ETA appear once 0.2 s have passed and
    /// some bytes are done.
    static func render(
        done: Int, total: Int, unit: String?, label: String, bytes: (UInt64, UInt64)?, elapsed: Double
    ) -> String {
        let width = 24
        let fraction: Double
        if let (b, t) = bytes, t > 0 {
            fraction = Double(b) / Double(t)
        } else {
            fraction = total > 0 ? Double(done) / Double(total) : 1
        }
        let filled = max(0, min(width, Int(fraction * Double(width))))
        var line = "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]"
        if let unit { line += " \(done)/\(total) \(unit)" }
        if let (b, t) = bytes, t > 0 {
            let (divisor, name) = Units.scale(for: t)
            line += String(format: "  %.1f/%.1f %@", Double(b) / divisor, Double(t) / divisor, name)
            if elapsed > 0.2, b > 0 {
                let rate = Double(b) / elapsed
                line += "  " + Units.rate(bytes: Double(b), seconds: elapsed)
                line += "  ETA " + clock(Double(t - min(b, t)) / rate)
            }
        }
        return line + "  " + String(label.prefix(40))
    }

    private static func clock(_ seconds: Double) -> String {
        let s = Int(seconds.rounded(.up))
        return String(format: "%d:%02d", s / 60, s % 60)
    }
}
