import AssetPackCore
import AssetPackTestSupport
import Foundation
import Synchronization
import Testing

@testable import AssetPackContainer

/// The umask is process-wide: a writer that reads it with `umask(0); umask(mask)` leaves it at 0
/// for a moment, and a file another thread creates then is world-writable.
@Suite struct WriterFileModeTests {
    /// The process umask as the kernel reports it (`/proc/self/status`), read without changing it.
    /// `fd` is an open `/proc/self/status`; `pread` keeps each look short, so the poller sees brief changes.
    static func currentUmask(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0, let text = String(bytes: buffer[..<n], encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("Umask:") }
            .map { $0.dropFirst(6).trimmingCharacters(in: .whitespaces) }
    }

    static func currentUmask() -> String? {
        let fd = open("/proc/self/status", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return currentUmask(fd)
    }

    @Test("packing never changes the process umask, even for a moment", .tags(.slow))
    func packingLeavesTheUmaskAlone() throws {
        guard let before = Self.currentUmask() else { return }  // no /proc: nothing to observe
        let scratch = Scratch()
        let stop = Atomic<Bool>(false)
        let seen = Mutex<Set<String>>([])
        let watcher = Thread {
            let fd = open("/proc/self/status", O_RDONLY)
            defer { close(fd) }
            var masks = Set<String>()
            while !stop.load(ordering: .relaxed) {
                if let mask = Self.currentUmask(fd) { masks.insert(mask) }
            }
            seen.withLock { $0 = masks }
        }
        watcher.start()
        defer { stop.store(true, ordering: .relaxed) }
        for i in 0..<300 {
            _ = try scratch.pack([("a.txt", [UInt8(i & 0xFF)])], name: "p\(i).apack")
        }
        stop.store(true, ordering: .relaxed)
        while seen.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.001) }
        #expect(seen.withLock { $0 } == [before])
    }

    @Test("the pack gets the mode an ordinary new file gets (0666 less the umask)")
    func packModeFollowsTheUmask() throws {
        guard let mask = Self.currentUmask().flatMap({ mode_t($0, radix: 8) }) else { return }
        let scratch = Scratch()
        let path = try scratch.pack([("a.txt", [1, 2, 3])])
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_mode & 0o777 == 0o666 & ~mask)
    }
}
