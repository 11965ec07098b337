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

    @Test("packing never changes the process umask, even for a moment", .slow)
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

/// A large entry's sealed batches are written behind the next batch's sealing (ChunkBuffers):
/// such entries must pack as they did, and a write that fails there must still fail the pack,
/// whole. (The full-disk test is what a user sees; that the background error itself is thrown,
/// not lost to a later write that fails too, is `aFailedBackgroundWriteIsThrown`.)
@Suite struct ContainerWriteBehindTests {
    /// Entries of several 8 MiB batches, each but the last written in the background while the
    /// next is cut (on every core), hashed and sealed: stored and compressed, they read back and
    /// their CRC and SHA-256 hold; after one byte of each changes, a re-pack copies all but the
    /// chunks around it (the reuse check's scratch) and reads back the new bytes.
    @Test(.slow) func entriesOfSeveralBatchesRoundTripAndRepack() throws {
        let scratch = Scratch()
        var random = noise((17 << 20) + 12_345, seed: 2026)
        var prose = text((19 << 20) + 777)
        let randomURL = URL(fileURLWithPath: scratch.write(random, name: "random.bin"))
        let proseURL = URL(fileURLWithPath: scratch.write(prose, name: "prose.txt"))
        var options = PackOptions.forTests
        options.format = .container
        options.credential = testKey
        let files = {
            [
                SourceFile(path: "prose.txt", url: proseURL, size: UInt64(prose.count)),
                SourceFile(path: "random.bin", url: randomURL, size: UInt64(random.count)),
            ]
        }
        let output = scratch.url.appendingPathComponent("p.apack").path
        let first = try ContainerPackWriter().write(files(), to: output, options: options)
        #expect(first.reusedChunks == 0 && first.chunks > 250, "\(first)")
        var reader = try ContainerPackReader(path: output, credential: testKey)
        #expect(try reader.read("random.bin") == random)
        #expect(try reader.read("prose.txt") == prose)
        #expect(reader.entry("prose.txt")?.compression == (Zstd.isAvailable ? .zstd : .deflate))
        var streamed: [UInt8] = []
        try reader.stream("random.bin") { streamed += $0 }
        #expect(streamed == random)

        random[random.count / 2] ^= 0xFF
        prose[prose.count / 3] = UInt8(ascii: "#")
        try Data(random).write(to: randomURL)
        try Data(prose).write(to: proseURL)
        let second = try ContainerPackWriter().write(files(), to: output, options: options)
        #expect(second.chunks - second.reusedChunks <= 4, "\(second)")
        #expect(second.reusedChunks >= first.chunks - 4, "\(second)")
        reader = try ContainerPackReader(path: output, credential: testKey)
        #expect(try reader.read("random.bin") == random)
        #expect(try reader.read("prose.txt") == prose)
    }

    @Test(
        "a disk that fills while a large entry is written behind: an .io error naming the cause, no pack, no temporary file",
        .enabled(if: SmallFileSystem.isAvailable, "needs root to mount a small tmpfs"), .slow)
    func aFullDiskMidEntryFailsThePack() throws {
        let disk = try SmallFileSystem(megabytes: 10)
        let scratch = Scratch()
        let block = noise(1 << 20, seed: 26)
        // Batches of 8, 8 and 2 MiB: the first two are written behind, the second fails at 10 MiB.
        let size = 18 << 20
        let source = scratch.write(Array((0..<18).map { _ in block }.joined()), name: "big.bin")
        var options = PackOptions.forTests
        options.format = .container
        options.credential = testKey
        options.compression = .store
        let output = disk.url.appendingPathComponent("out.apack").path
        let error = #expect(throws: AssetPackError.self) {
            try ContainerPackWriter().write(
                [SourceFile(path: "big.bin", url: URL(fileURLWithPath: source), size: UInt64(size))], to: output,
                options: options)
        }
        #expect(error?.code == .io)
        #expect(error?.message.contains("No space left on device") == true, "\(String(describing: error))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.url.path) == [])
    }
}

extension ContainerWriteBehindTests {
    @Test("a write that fails behind is thrown by the next wait for it, once; a good one is written")
    func aFailedBackgroundWriteIsThrown() throws {
        let scratch = Scratch()
        let path = scratch.write([], name: "target")
        let bytes: [UInt8] = Array(repeating: 7, count: 4096)
        let writer = WriteBehind()
        // Open for reading only: pwrite fails with EBADF.
        let readOnly = try FileDescriptor.open(path, .readOnly)
        defer { try? readOnly.close() }
        try bytes.withUnsafeBytes { raw in
            writer.start(raw, to: readOnly, at: 0)
            let error = #expect(throws: AssetPackError.self) { try writer.finish() }
            #expect(error?.code == .io, "\(String(describing: error))")
            try writer.finish()  // reported once
            let writable = try FileDescriptor.open(path, .readWrite)
            defer { try? writable.close() }
            writer.start(raw, to: writable, at: 0)
            try writer.finish()
        }
        #expect(AssetPackContainerTests.bytes(of: path) == bytes)
    }
}
