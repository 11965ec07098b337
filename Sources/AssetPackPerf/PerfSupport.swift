import AssetPack
import Foundation

/// Order statistics used by the perf report.
public enum PerfStatistics {
    /// The `p`-quantile (0…1) of `samples` with linear interpolation between closest ranks
    /// (R type 7, NumPy's default). Monotone in `p`, so min ≤ median ≤ p90 ≤ max always holds.
    /// - Returns: `nan` for no samples.
    public static func quantile(_ samples: [Double], _ p: Double) -> Double {
        quantile(sorted: samples.sorted(), p)
    }

    /// `quantile(_:_:)` for samples already sorted ascending.
    public static func quantile(sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let h = Double(sorted.count - 1) * min(max(p, 0), 1)
        let lo = Int(h.rounded(.down))
        let hi = min(lo + 1, sorted.count - 1)
        return sorted[lo] + (h - Double(lo)) * (sorted[hi] - sorted[lo])
    }

    /// Geometric mean of positive values; `nan` when there are none.
    public static func geometricMean(_ values: [Double]) -> Double {
        let positive = values.filter { $0 > 0 && $0.isFinite }
        guard !positive.isEmpty else { return .nan }
        return exp(positive.reduce(0) { $0 + log($1) } / Double(positive.count))
    }
}

/// Resident-memory readings from `/proc/self/status` (Linux).
///
/// The high-water mark `VmHWM` is reset by writing `5` to `/proc/self/clear_refs`
/// (Linux ≥ 4.0), so a phase's peak can be read on its own. Elsewhere there is no reading
/// (`nil`) and no reset (`false`).
public enum MemoryProbe {
    /// Current resident set (`VmRSS`) and its high-water mark (`VmHWM`), in bytes.
    public static func read() -> (rss: UInt64, peak: UInt64)? {
        #if os(Linux)
        return parse(try? String(contentsOfFile: "/proc/self/status", encoding: .utf8))
        #else
        return nil
        #endif
    }

    /// `VmRSS` and `VmHWM` from the text of `/proc/self/status`.
    private static func parse(_ status: String?) -> (rss: UInt64, peak: UInt64)? {
        guard let text = status else { return nil }
        var rss: UInt64?
        var hwm: UInt64?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("VmRSS:") { rss = kib(line) }
            if line.hasPrefix("VmHWM:") { hwm = kib(line) }
        }
        guard let rss, let hwm else { return nil }
        return (rss, hwm)
    }

    /// Resets `VmHWM` to the current resident set.
    /// - Returns: Whether the kernel accepted the reset.
    @discardableResult
    public static func resetPeak() -> Bool {
        #if os(Linux)
        guard let fd = try? FileDescriptor.open("/proc/self/clear_refs", .writeOnly) else { return false }
        return fd.closeAfter { [UInt8(ascii: "5")].withUnsafeBytes { (try? fd.writeAll($0)) != nil } }
        #else
        return false
        #endif
    }

    private static func kib(_ line: Substring) -> UInt64? {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 2, let value = UInt64(fields[1]) else { return nil }
        return value * 1024
    }
}

extension PerfMachine {
    /// Describes this machine and this build.
    /// - Parameter probeToolchain: Also run `swift --version` (found on PATH) for the runtime toolchain.
    public static func current(probeToolchain: Bool = false) -> PerfMachine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        let osRelease = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let os =
            osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { String($0.dropFirst("PRETTY_NAME=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            ?? "unknown"
        var name = utsname()
        uname(&name)
        let kernel = withUnsafeBytes(of: &name.release) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return PerfMachine(
            cpuModel: model, cores: ProcessInfo.processInfo.activeProcessorCount,
            memoryBytes: ProcessInfo.processInfo.physicalMemory, os: os, kernel: kernel,
            swiftCompiler: compilerVersion, swiftVersion: probeToolchain ? runtimeSwiftVersion() : nil,
            buildConfiguration: buildConfiguration)
    }

    /// The compiler version this code was built with, from `#if compiler` checks.
    public static var compilerVersion: String {
        #if compiler(>=6.5)
        return ">=6.5"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3.2)
        return "6.3.2+"
        #elseif compiler(>=6.3.1)
        return "6.3.1"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "<6.1"
        #endif
    }

    /// `release` or `debug`.
    public static var buildConfiguration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    /// First line of `swift --version`, or `nil` when no toolchain answers.
    static func runtimeSwiftVersion() -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["swift", "--version"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }
}

/// Human-readable numbers for the renderers.
enum PerfFormat {
    /// `4.0 KiB`, `64 MiB`, `512 B`.
    static func bytes(_ n: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(n)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(n) B" }
        if value == value.rounded() { return String(format: "%.0f %@", value, units[unit]) }
        return String(format: value < 10 ? "%.2f %@" : "%.1f %@", value, units[unit])
    }

    /// Seconds with an adaptive unit: `812 ns`, `15.3 µs`, `1.25 ms`, `2.31 s`.
    static func seconds(_ s: Double) -> String {
        guard s.isFinite else { return "-" }
        let (value, unit): (Double, String) =
            s < 1e-6 ? (s * 1e9, "ns") : s < 1e-3 ? (s * 1e6, "µs") : s < 1 ? (s * 1e3, "ms") : (s, "s")
        return String(format: value < 10 ? "%.2f %@" : value < 100 ? "%.1f %@" : "%.0f %@", value, unit)
    }

    /// Throughput in MiB/s (2^20 B/s, the unit of every rate a person reads): `85.3`, `2310`.
    static func mibps(bytes: Double, seconds: Double) -> String {
        let v = bytes / seconds / 1_048_576
        guard v.isFinite else { return "-" }
        return String(format: v < 10 ? "%.2f" : v < 1000 ? "%.1f" : "%.0f", v)
    }

    /// The same from a report's `mbPerS` (10^6 B/s, the unit the JSON and CSV keep).
    static func mibps(mbPerS: Double) -> String { mibps(bytes: mbPerS * 1e6, seconds: 1) }

    /// `1 entry`, `3 entries`: a count and its noun in the right number.
    static func count(_ n: Int, _ singular: String, _ plural: String) -> String {
        "\(n) \(n == 1 ? singular : plural)"
    }

    /// A ratio: `12.3×`.
    static func ratio(_ r: Double) -> String {
        guard r.isFinite else { return "-" }
        return String(format: r < 10 ? "%.2f×" : "%.1f×", r)
    }
}
